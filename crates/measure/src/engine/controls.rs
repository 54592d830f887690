//! The no-switch controls that `switch`, `ring`, `lockring` and `tick-forms` subtract, timed
//! as the `primitives` experiment times them: wherever a [`Link`] fits, exactly that link's
//! `post` + `wait` in one task pinned to one CPU, and a verification batch counted with
//! `getrusage(RUSAGE_THREAD)` that proves no switch happened while it ran.

use crate::context::Context;
use crate::sampler::measure_fallible;
use anyhow::Context as _;
use oscost_model::case::{Check, Samples};
use oscost_sys::ipc::{self, Link, PthreadMutex, Via, WithOps};
use oscost_sys::{self as os, Switches};

/// One no-switch measurement: the samples and what the verification batch counted.
#[derive(Debug, Clone, PartialEq)]
pub struct Control {
    /// The timed samples.
    pub samples: Samples,
    /// What the sampler met: warnings and notes.
    pub said: oscost_model::Messages,
    /// Switches of the measuring thread during the verification batch.
    pub switches: Switches,
    /// Ops in the verification batch.
    pub verification_ops: u64,
    /// Threads of the measuring process while it was measured (the most seen), if readable.
    pub threads_in_process: Option<u64>,
}

impl Control {
    /// Context switches (voluntary + involuntary) per op in the verification batch.
    pub fn switches_per_op(&self) -> f64 {
        self.switches.total() as f64 / self.verification_ops.max(1) as f64
    }

    /// The check every no-switch control must pass: ~0 switches per op.
    pub fn no_switch_check(&self) -> Check {
        Check::near(
            "switches_per_op",
            0.0,
            self.switches_per_op(),
            0.05,
            &format!(
                "getrusage(RUSAGE_THREAD) nvcsw + nivcsw over a verification batch of {} ops \
                 run right after the samples ({} voluntary, {} involuntary); a one-task \
                 control must not switch (bound: 0.05 per op)",
                self.verification_ops, self.switches.voluntary, self.switches.involuntary
            ),
        )
    }
}

/// The no-switch control of `via`: its post + wait in one thread, pinned to `ctx.first_cpu()`
/// (for [`Via::Yield`], one `sched_yield` with nothing else runnable). This is the figure the
/// `switch` and `ring` experiments subtract from a ping-pong or ring hop.
///
/// Runs on the calling thread; its affinity and signal mask are restored afterwards.
pub fn link_control(via: Via, ctx: &Context) -> anyhow::Result<(Samples, oscost_model::Messages)> {
    let c = link_control_on(via, ctx, ctx.first_cpu())?;
    Ok((c.samples, c.said))
}

/// [`link_control`] on a chosen CPU, with the switch count of the verification batch (use
/// [`Control::no_switch_check`] to attach it to a case).
pub fn link_control_on(via: Via, ctx: &Context, cpu: usize) -> anyhow::Result<Control> {
    on_cpu(cpu, || {
        if via == Via::Yield {
            return timed(ctx, ipc::sched_yield);
        }
        let link = Link::new(via).with_context(|| format!("creating a {via} link"))?;
        // A signal link delivers to a named thread that has the signal blocked; here that is
        // this thread, posting to itself. The guard restores the mask when it goes.
        let _block = if via == Via::Signal {
            Some(ipc::block_link_signal_scoped()?)
        } else {
            None
        };
        link.set_waiter(os::gettid());
        link.with_ops(Timed(ctx))
            .with_context(|| format!("measuring {via} post + wait"))
    })
}

/// Times a link's post + wait, compiled for the link's kind (see `Link::with_ops`).
struct Timed<'c, 'a>(&'c Context<'a>);

impl WithOps<anyhow::Result<Control>> for Timed<'_, '_> {
    fn call<P, W>(self, mut post: P, mut wait: W) -> anyhow::Result<Control>
    where
        P: FnMut() -> std::io::Result<()>,
        W: FnMut() -> std::io::Result<()>,
    {
        timed(self.0, || {
            post()?;
            wait()
        })
    }
}

/// Runs `f` on the calling thread pinned to `cpu`, then gives the thread its previous CPU set
/// back. No thread is created: a one-task figure must be taken in a single-threaded process (a
/// second thread makes every file-descriptor call and glibc's locks dearer).
pub(crate) fn on_cpu<T>(cpu: usize, f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    let _restore = crate::cpuset::AffinityRestore::pin(&[cpu])?;
    f()
}

/// Samples `op`, then runs a verification batch of it between two reads of the thread's
/// switch counters. The batch is separate from the timed samples so that counting costs
/// nothing inside them.
pub(crate) fn timed<E>(
    ctx: &Context,
    mut op: impl FnMut() -> Result<(), E>,
) -> anyhow::Result<Control>
where
    E: Into<anyhow::Error>,
{
    let (measured, threads) = crate::sampler::counting_threads(|| measure_fallible(ctx, &mut op));
    let (samples, said) = measured?;
    // Four sample batches' worth (4-16 ms at the standard settings), at least 1000 ops: long
    // enough that one stray preemption stays far below the 0.05-per-op bound, short enough
    // to cost little next to the samples.
    let ops = (samples.iterations_per_sample.saturating_mul(4)).max(1000);
    ctx.check_cancel()?;
    let before = os::thread_switches();
    for _ in 0..ops {
        op().map_err(Into::into)?;
    }
    let switches = os::thread_switches().since(before);
    Ok(Control {
        samples,
        said,
        switches,
        verification_ops: ops,
        threads_in_process: threads,
    })
}

/// A default pthread mutex's uncontended lock + unlock in one thread pinned to `cpu`, timed
/// as this experiment times it (the case `primitives.pthread-mutex`): the figure the
/// `lockring` experiment subtracts from a lock hand-over.
pub fn pthread_mutex_control_on(ctx: &Context, cpu: usize) -> anyhow::Result<Control> {
    on_cpu(cpu, || pthread_mutex_timed(ctx))
}

/// A default pthread mutex's uncontended lock + unlock, timed on the calling thread.
pub(crate) fn pthread_mutex_timed(ctx: &Context) -> anyhow::Result<Control> {
    let m = PthreadMutex::new();
    timed(ctx, || m.lock_unlock())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::testing;
    use crate::sampler::SamplerConfig;

    fn with_ctx<T>(f: impl FnOnce(&Context) -> T) -> T {
        // The first CPU this test may run on (CPU 0 may be outside a restricted cpuset).
        let cpu = os::affinity().unwrap()[0];
        testing::with_ctx(SamplerConfig::quick(), vec![cpu], false, f)
    }

    fn median(v: &[f64]) -> f64 {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    #[test]
    fn link_control_covers_every_via_and_leaves_the_caller_alone() {
        with_ctx(|ctx| {
            let before = os::affinity().unwrap();
            for via in Via::ALL.iter() {
                match link_control(*via, ctx) {
                    Ok((s, _)) => assert!(median(&s.per_op_ns) > 0.0, "{via}"),
                    // Only message queues may be missing (a kernel without them), and only
                    // with the reason.
                    Err(e) => assert!(
                        *via == Via::Mqueue && format!("{e:#}").contains("mq_open"),
                        "{via}: {e:#}"
                    ),
                }
            }
            assert_eq!(os::affinity().unwrap(), before);
        });
    }
}
