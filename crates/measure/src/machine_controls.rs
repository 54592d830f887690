//! The machine's own controls, timed just before and just after each experiment in its
//! measuring process, and once between each of its sampling rounds: the system-call floor
//! (`syscall(-1)`, ENOSYS) and a fixed user-space loop. Two runs of one build differ in their
//! controls only when the machine changed (a virtual machine's host slower at entering the
//! kernel, a lower clock); a comparison holds every figure against the control it moves with
//! before it blames the figure. The samples between rounds share the figures' period, so a
//! machine that changed in the middle of an experiment moves both alike.

use crate::context::Context;
use crate::control_log::one_of_each;
pub use crate::control_log::ControlLog;
use oscost_model::{ExperimentOutput, MachineControls};

/// Samples of each control per burst; a burst is taken before and after the experiment.
const SAMPLES_PER_BURST: usize = 12;

/// One burst of both controls, alternating sample by sample, pinned to the experiment's
/// first CPU (the affinity put back after). `None` where the clock is fictional (the
/// scripted machine) or the thread cannot be pinned.
pub fn burst(ctx: &Context) -> Option<MachineControls> {
    if ctx.clock.scripted().is_some() {
        return None;
    }
    let before = oscost_sys::affinity().ok()?;
    oscost_sys::set_affinity(&[ctx.first_cpu()]).ok()?;
    // One untimed pass of each first: the code and the kernel's path warm.
    one_of_each(ctx.clock, 7);
    let mut m = MachineControls::default();
    for i in 0..SAMPLES_PER_BURST {
        let (kernel, user) = one_of_each(ctx.clock, i as u64);
        m.kernel_entry_ns.push(kernel);
        m.user_loop_ns.push(user);
    }
    let _ = oscost_sys::set_affinity(&before);
    Some(m)
}

/// Runs `experiment` between two bursts of the controls and keeps both in its output, with
/// the samples the sampler took between its rounds.
pub fn around(
    ctx: &Context,
    experiment: impl FnOnce() -> anyhow::Result<ExperimentOutput>,
) -> anyhow::Result<ExperimentOutput> {
    let first = burst(ctx);
    ctx.controls.take();
    let mut out = experiment()?;
    let during = ctx.controls.take();
    out.controls = match (first, burst(ctx)) {
        (Some(mut a), Some(b)) => {
            a.extend(b);
            a.extend(during);
            Some(a)
        }
        _ => None,
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::testing::with_tiny_ctx;

    #[test]
    fn a_burst_gives_every_sample_of_both_controls_and_leaves_the_affinity() {
        with_tiny_ctx(|ctx| {
            let before = oscost_sys::affinity().unwrap();
            let m = burst(ctx).unwrap();
            assert_eq!(oscost_sys::affinity().unwrap(), before);
            assert_eq!(m.kernel_entry_ns.len(), SAMPLES_PER_BURST);
            assert_eq!(m.user_loop_ns.len(), SAMPLES_PER_BURST);
            // Every sample a real, positive time; a system call costs more than nothing.
            assert!(m.kernel_entry_ns.iter().all(|&v| v > 0.0 && v.is_finite()));
            assert!(m.user_loop_ns.iter().all(|&v| v > 0.0 && v.is_finite()));
        });
    }

    #[test]
    fn around_keeps_both_bursts_and_the_experiments_output() {
        with_tiny_ctx(|ctx| {
            let out = around(ctx, || {
                Ok(ExperimentOutput {
                    warnings: vec!["kept".into()],
                    ..Default::default()
                })
            })
            .unwrap();
            assert_eq!(out.warnings.len(), 1);
            let c = out.controls.unwrap();
            assert_eq!(c.kernel_entry_ns.len(), 2 * SAMPLES_PER_BURST);
            assert_eq!(c.user_loop_ns.len(), 2 * SAMPLES_PER_BURST);
        });
    }

    #[test]
    fn the_sampler_leaves_one_sample_of_each_control_per_round_in_the_output() {
        with_tiny_ctx(|ctx| {
            let mut rounds = 0;
            let out = around(ctx, || {
                let cut = crate::sampler::rounds(ctx, 2, |_| Ok(()), || rounds += 1)?;
                assert!(cut.is_none());
                Ok(ExperimentOutput::default())
            })
            .unwrap();
            let c = out.controls.unwrap();
            assert!(rounds >= crate::sampler::MIN_SAMPLES);
            assert_eq!(c.kernel_entry_during_ns.len(), rounds);
            assert_eq!(c.user_loop_during_ns.len(), rounds);
            assert!(c
                .kernel_entry_during_ns
                .iter()
                .all(|&v| v > 0.0 && v.is_finite()));
            // Bursts and samples between rounds stay apart.
            assert_eq!(c.kernel_entry_ns.len(), 2 * SAMPLES_PER_BURST);
            // The log is left empty for the next experiment.
            assert_eq!(ctx.controls.take(), MachineControls::default());
        });
    }

    #[test]
    fn a_failed_experiment_is_returned_as_it_failed() {
        with_tiny_ctx(|ctx| {
            let e = around(ctx, || anyhow::bail!("refused")).unwrap_err();
            assert_eq!(e.to_string(), "refused");
        });
    }
}
