//! Turns "do this operation" into honest per-operation samples.
//!
//! Each sample times a batch of operations between two counter reads, so the counter's own
//! cost and resolution vanish in the batch. The batch size is calibrated so a sample lasts at
//! least `min_sample`; the same loop with an empty body is timed at the same batch size and its
//! per-iteration cost subtracted. Warm-up runs until three consecutive batches agree within 2 %
//! (or the warm-up budget is spent, which is recorded as a warning).

pub use crate::context::{SamplerConfig, MIN_SAMPLES};

use crate::context::Context;
use crate::timesource::TimeSource;
use oscost_model::case::{Check, Samples};
use oscost_model::{Message, MessageKind, Messages};
use std::hint::black_box;
use std::time::Duration;

/// Threads of this process now (`Threads:` in `/proc/self/status`), if readable.
pub fn threads_in_process() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Runs `f` and returns its result with the most threads its process had before and after it
/// (threads are started only by the experiment itself, never in the middle of a sampling).
pub fn counting_threads<R>(f: impl FnOnce() -> R) -> (R, Option<u64>) {
    let before = threads_in_process();
    let r = f();
    (r, threads_in_process().max(before))
}

/// The check every one-task case carries: its process had exactly one thread while it was
/// measured. A second thread, even an idle one, makes the kernel take a file reference on every
/// file-descriptor call and ends glibc's single-thread lock path, so the figure would not be
/// the one-task cost. `None` (the count could not be read) gives no check.
pub fn single_task_check(threads: Option<u64>) -> Option<Check> {
    thread_check(threads, 1)
}

/// The thread-count check of a case measured in a process of `expected` threads: 1 for every
/// one-task figure, 2 for the multi-threaded variants (one idle extra thread).
pub fn thread_check(threads: Option<u64>, expected: u64) -> Option<Check> {
    let n = threads?;
    let why = if expected == 1 {
        "a one-task figure must come from a single-threaded process".to_owned()
    } else {
        format!("this variant is measured with one idle extra thread, {expected} in all")
    };
    Some(Check::near(
        oscost_model::case::SINGLE_THREAD_CHECK,
        expected as f64,
        n as f64,
        0.0,
        &format!(
            "Threads: in /proc/self/status before and after the samples (most seen: {n}); {why}"
        ),
    ))
}

/// One idle extra thread in this process, blocked until dropped: what makes a process
/// multi-threaded without adding any work. Dropping it wakes and joins it.
pub struct IdleThread {
    wake: Option<std::sync::mpsc::Sender<()>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl IdleThread {
    /// Starts the thread; it blocks in a channel receive.
    pub fn start() -> std::io::Result<IdleThread> {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("oscost-idle".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let _ = rx.recv();
            })?;
        oscost_sys::count_started_tasks(1);
        Ok(IdleThread {
            wake: Some(tx),
            handle: Some(handle),
        })
    }
}

impl Drop for IdleThread {
    fn drop(&mut self) {
        drop(self.wake.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Below this per-operation time the empty-loop subtraction is the figure's main error: side
/// by side with C loops, operations of 3–13 ns read up to ±1 ns apart.
const SHORT_OP_NS: f64 = 10.0;

/// Times `n` calls of `op` and returns the elapsed counter ticks. Not inlined, so the timed
/// loop and the empty reference loop have the same shape and placement rules.
#[inline(never)]
fn timed_batch<R, E>(
    clock: &dyn TimeSource,
    n: u64,
    op: &mut impl FnMut() -> Result<R, E>,
) -> Result<u64, E> {
    let t0 = clock.now();
    for _ in 0..n {
        black_box(op()?);
    }
    Ok(clock.now().wrapping_sub(t0))
}

type BatchFn<'a> = Box<dyn FnMut(u64) -> anyhow::Result<u64> + 'a>;
type EmptyFn<'a> = Box<dyn FnMut(u64) -> anyhow::Result<u64> + 'a>;

/// One operation being sampled: its timed loop, the empty loop of the same shape, and the
/// samples so far. The dynamic call happens once per batch, never inside the timed loop.
pub struct Job<'a> {
    run: BatchFn<'a>,
    empty: EmptyFn<'a>,
    n: u64,
    overhead_ticks: f64,
    per_op_ticks: Vec<f64>,
    said: Messages,
    /// The warm-up's length when its batches never agreed within 2 %, ms: judged in
    /// [`Job::finish`] against the samples taken after it.
    unsettled_ms: Option<u128>,
}

impl<'a> Job<'a> {
    /// Wraps a fallible operation; its first error stops sampling and is returned.
    pub fn new<R, E>(ctx: &Context<'a>, mut op: impl FnMut() -> Result<R, E> + 'a) -> Job<'a>
    where
        E: Into<anyhow::Error> + 'a,
        R: 'a,
    {
        let clock: &'a dyn TimeSource = ctx.clock;
        Job {
            run: Box::new(move |n| timed_batch(clock, n, &mut op).map_err(Into::into)),
            empty: Box::new(move |n| {
                Ok(timed_batch(clock, n, &mut || Ok::<(), E>(())).unwrap_or_default())
            }),
            n: 1,
            overhead_ticks: 0.0,
            per_op_ticks: Vec::new(),
            said: Messages::default(),
            unsettled_ms: None,
        }
    }

    /// An operation timed elsewhere, by a task that reads the counter itself (a child
    /// process that cannot share the parent's loop): `run(n)` has `n` operations timed and
    /// returns their ticks, `empty(n)` the same loop with nothing in it. Sampled like any
    /// other job.
    pub fn from_batches(
        run: impl FnMut(u64) -> anyhow::Result<u64> + 'a,
        empty: impl FnMut(u64) -> anyhow::Result<u64> + 'a,
    ) -> Job<'a> {
        Job {
            run: Box::new(run),
            empty: Box::new(empty),
            n: 1,
            overhead_ticks: 0.0,
            per_op_ticks: Vec::new(),
            said: Messages::default(),
            unsettled_ms: None,
        }
    }

    /// Adds the operations of every batch run from now on (calibration, warm-up and samples,
    /// never the empty loop) to `ops`, outside the timed loop: what a case holds against a
    /// count taken elsewhere (requests a server answered) to check each operation happened.
    pub fn counting_ops(mut self, ops: &'a std::cell::Cell<u64>) -> Job<'a> {
        let mut run = self.run;
        self.run = Box::new(move |n| {
            let r = run(n);
            ops.set(ops.get() + n);
            r
        });
        self
    }

    /// Calibrates the batch size, warms up and measures the empty loop.
    fn prepare(&mut self, ctx: &Context) -> anyhow::Result<()> {
        let cfg = ctx.sampler;
        let ns = |ticks: u64| ctx.clock.ticks_to_ns(ticks as f64);

        // Calibrate the batch size: double until one batch lasts min_sample.
        let min_ns = cfg.min_sample.as_nanos() as f64;
        let mut n: u64 = 1;
        loop {
            ctx.check_cancel()?;
            let mut t = ns((self.run)(n)?);
            if n >= 1 << 40 {
                break;
            }
            if t >= min_ns {
                // One slow batch may be a preemption rather than the operation: settle only
                // when a second batch of the same size is long too, else every sample would
                // be far shorter than min_sample.
                let again = ns((self.run)(n)?);
                if again >= min_ns / 2.0 {
                    break;
                }
                t = again;
            }
            // Jump close to the target once the timing is meaningful, else double.
            n = if t > 50_000.0 {
                ((n as f64 * min_ns / t).ceil() as u64).max(n + 1)
            } else {
                n * 2
            };
        }
        self.n = n;

        // Warm-up: until three consecutive batches agree within 2 %, at least cfg.warmup.
        let warm_start = ctx.clock.now();
        let mut recent: Vec<f64> = Vec::new();
        let settled = loop {
            ctx.check_cancel()?;
            recent.push(ns((self.run)(n)?));
            if recent.len() > 3 {
                recent.remove(0);
            }
            let elapsed = Duration::from_nanos(ns(ctx.clock.now().wrapping_sub(warm_start)) as u64);
            let agree = recent.len() == 3 && {
                let lo = recent.iter().cloned().fold(f64::INFINITY, f64::min);
                let hi = recent.iter().cloned().fold(0.0, f64::max);
                hi <= lo * 1.02
            };
            if elapsed >= cfg.warmup && agree {
                break true;
            }
            if elapsed >= cfg.warmup * 4 {
                break false;
            }
        };
        if !settled {
            self.unsettled_ms = Some((cfg.warmup * 4).as_millis());
        }

        // The loop's own cost, same shape, same batch size.
        let mut overhead: Vec<u64> = (0..7)
            .map(|_| (self.empty)(n))
            .collect::<anyhow::Result<_>>()?;
        overhead.sort_unstable();
        self.overhead_ticks = overhead[overhead.len() / 2] as f64 / n as f64;
        Ok(())
    }

    /// Takes one sample.
    fn sample(&mut self) -> anyhow::Result<()> {
        let t = (self.run)(self.n)?;
        self.per_op_ticks
            .push(t as f64 / self.n as f64 - self.overhead_ticks);
        Ok(())
    }

    fn finish(mut self, clock: &dyn TimeSource) -> (Samples, Messages) {
        if let Some(ms) = self.unsettled_ms {
            self.said.push(unsettled(ms, &self.per_op_ticks));
        }
        let mut sorted = self.per_op_ticks.clone();
        sorted.sort_by(f64::total_cmp);
        if let Some(&mid) = sorted.get(sorted.len() / 2) {
            let median_ns = clock.ticks_to_ns(mid);
            if median_ns < SHORT_OP_NS {
                self.said.notes.push(Message::new(
                    MessageKind::ShortOperation,
                    format!(
                        "{median_ns:.1} ns overlaps the loop around it in the CPU's pipeline, so \
                         subtracting the separately timed empty loop is exact only to about ±1 ns"
                    ),
                ));
            }
        }
        let samples = Samples {
            per_op_ns: self
                .per_op_ticks
                .iter()
                .map(|&t| clock.ticks_to_ns(t))
                .collect(),
            per_op_ticks: self.per_op_ticks,
            iterations_per_sample: self.n,
            loop_overhead_ns: clock.ticks_to_ns(self.overhead_ticks),
        };
        (samples, self.said)
    }
}

/// What a warm-up that never settled (`ms` long) means for the `samples` taken after it, in
/// the order taken. An operation whose batches vary by more than 2 % of themselves (a file
/// created and removed) never settles by that test, yet its samples may hold steady: when the
/// medians of their first and second halves are within 2 % it is context, not a warning.
fn unsettled(ms: u128, samples: &[f64]) -> Message {
    let warning = format!(": the last three batches differed by more than 2 % after {ms} ms");
    if samples.len() < 6 {
        return Message::new(MessageKind::WarmUpUnsettled, warning);
    }
    let (a, b) = oscost_stats::half_medians(samples);
    if (a - b).abs() > 0.02 * a.abs().min(b.abs()) {
        return Message::new(
            MessageKind::WarmUpUnsettled,
            format!(
                "{warning}, and the samples after it drifted {:+.1} % from their first half to \
                 their second",
                (b / a - 1.0) * 100.0
            ),
        );
    }
    Message::new(
        MessageKind::BatchesVaried,
        format!(
            " by more than 2 % after {ms} ms of warm-up, but the samples held steady (the \
             medians of their two halves within 2 %)"
        ),
    )
}

/// Samples an operation that cannot fail.
pub fn measure<R>(ctx: &Context, mut op: impl FnMut() -> R) -> anyhow::Result<(Samples, Messages)> {
    measure_fallible(ctx, || Ok::<R, std::convert::Infallible>(op()))
}

/// Samples a fallible operation; the first error stops sampling and is returned.
///
/// Returns the samples and what sampling met: warnings (warm-up did not settle, budget cut the
/// sample count) and notes (an operation under 10 ns).
pub fn measure_fallible<R, E>(
    ctx: &Context,
    op: impl FnMut() -> Result<R, E>,
) -> anyhow::Result<(Samples, Messages)>
where
    E: Into<anyhow::Error>,
{
    let mut results = measure_interleaved(ctx, vec![Job::new(ctx, op)], &|| {})?;
    Ok(results.remove(0))
}

/// Samples several operations in rounds: one sample of each, in an order rotated every round,
/// until every job has its samples. A machine whose speed drifts over seconds (a VM whose host
/// is busy) then touches every case alike, instead of slowing whichever case ran at the time
/// . `on_round` is called after each preparation and each round.
pub fn measure_interleaved(
    ctx: &Context,
    mut jobs: Vec<Job<'_>>,
    on_step: &dyn Fn(),
) -> anyhow::Result<Vec<(Samples, Messages)>> {
    for job in &mut jobs {
        crate::pace::turn()?;
        job.prepare(ctx)?;
        on_step();
    }
    let count = jobs.len();
    if let Some(cut) = rounds(ctx, count, |k| jobs[k].sample(), on_step)? {
        for job in &mut jobs {
            job.said.push(cut.clone());
        }
    }
    Ok(jobs.into_iter().map(|j| j.finish(ctx.clock)).collect())
}

/// Takes the samples of `count` jobs in rounds: `sample(k)` takes one sample of job `k`, every
/// job once a round in an order rotated every round, and `on_round` follows each round. Stops
/// early, after at least `min_runs` rounds ([`MIN_SAMPLES`] by default), once the time budget (the configured one per
/// job) is spent, and then returns the warning every job carries. The one sampling loop: the
/// batched jobs above and experiments that time one operation per sample with hooks of their
/// own around it (spawn's usage counts) both take their rounds here.
pub(crate) fn rounds(
    ctx: &Context,
    count: usize,
    mut sample: impl FnMut(usize) -> anyhow::Result<()>,
    mut on_round: impl FnMut(),
) -> anyhow::Result<Option<Message>> {
    let cfg = ctx.sampler;
    let started = ctx.clock.now();
    let elapsed = || {
        Duration::from_nanos(
            ctx.clock
                .ticks_to_ns(ctx.clock.now().wrapping_sub(started) as f64) as u64,
        )
    };
    let budget = cfg.budget * count.max(1) as u32;
    for round in 0..cfg.samples {
        for k in 0..count {
            ctx.check_cancel()?;
            // Under the side-by-side harness's alternation, each sample waits its turn.
            crate::pace::turn()?;
            sample((round + k) % count)?;
        }
        on_round();
        // The machine's controls in the figures' own period, outside every timed batch.
        ctx.controls.between_rounds(ctx.clock);
        if round + 1 >= cfg.min_runs && round + 1 < cfg.samples && elapsed() > budget {
            return Ok(Some(Message::new(
                MessageKind::TimeBudget,
                format!(
                    "{} ms reached: {} of {} samples taken",
                    budget.as_millis(),
                    round + 1,
                    cfg.samples
                ),
            )));
        }
    }
    Ok(None)
}

/// What experiments that time whole batches with hooks of their own do (fault, mmap,
/// shootdown): `sample(k, false)` once for each of `count` jobs, untimed (first-time costs),
/// then their [`rounds`] of `sample(k, true)`, the progress advanced a round at a time. Returns
/// the budget's warning when it cut the rounds short, and the most threads the process had.
pub(crate) fn warm_then_rounds(
    ctx: &Context,
    count: usize,
    mut sample: impl FnMut(usize, bool) -> anyhow::Result<()>,
) -> anyhow::Result<(Option<Message>, Option<u64>)> {
    for k in 0..count {
        ctx.check_cancel()?;
        sample(k, false)?;
    }
    let (cut, threads) = counting_threads(|| {
        rounds(
            ctx,
            count,
            |k| sample(k, true),
            || ctx.progress.inc(count as u64),
        )
    });
    Ok((cut?, threads))
}

/// Samples of whole runs timed in counter ticks: one operation per sample, nothing to
/// subtract (split's and tick's runs, each a fixed amount of work).
pub(crate) fn whole_runs(
    clock: &oscost_sys::clock::Clock,
    ticks: impl IntoIterator<Item = u64>,
) -> Samples {
    let ticks: Vec<f64> = ticks.into_iter().map(|t| t as f64).collect();
    Samples {
        per_op_ns: ticks.iter().map(|&t| clock.ticks_to_ns(t)).collect(),
        per_op_ticks: ticks,
        iterations_per_sample: 1,
        loop_overhead_ns: 0.0,
    }
}

/// The median of `values` (`NaN` when there are none).
pub(crate) fn median_of(values: impl IntoIterator<Item = f64>) -> f64 {
    let v: Vec<f64> = values.into_iter().collect();
    oscost_stats::median(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unsettled_warm_up_is_a_warning_only_when_the_samples_drift() {
        // Spread ±5 % around 100 but no drift: context.
        let steady: Vec<f64> = (0..20)
            .map(|i| 100.0 + if i % 2 == 0 { 5.0 } else { -5.0 })
            .collect();
        let note = unsettled(160, &steady);
        assert_eq!(note.kind(), MessageKind::BatchesVaried);
        assert!(note.kind().is_note());
        assert_eq!(
            note,
            "batches still varied by more than 2 % after 160 ms of warm-up, but the samples held \
             steady (the medians of their two halves within 2 %)"
        );
        // From 100 to 110 halfway: the warning.
        let drift: Vec<f64> = (0..20)
            .map(|i| if i < 10 { 100.0 } else { 110.0 })
            .collect();
        let w = unsettled(160, &drift);
        assert_eq!(w.kind(), MessageKind::WarmUpUnsettled);
        assert!(
            w.starts_with(
                "warm-up did not settle: the last three batches differed by more than 2 % after \
                 160 ms, and"
            ),
            "{w}"
        );
        assert!(
            w.ends_with("drifted +10.0 % from their first half to their second"),
            "{w}"
        );
        // Too few samples to tell: the warning.
        let few = unsettled(160, &steady[..4]);
        assert_eq!(few.kind(), MessageKind::WarmUpUnsettled);
        assert_eq!(
            few,
            "warm-up did not settle: the last three batches differed by more than 2 % after 160 ms"
        );
    }
    use crate::context::testing;

    fn with_ctx<T>(f: impl FnOnce(&Context) -> T) -> T {
        testing::with_ctx(SamplerConfig::quick(), vec![0], false, f)
    }

    /// Runs `f` with a context on the scripted clock, which moves only when told to.
    fn with_scripted<T>(f: impl FnOnce(&Context, &crate::timesource::Scripted) -> T) -> T {
        let clock = crate::timesource::Scripted::new();
        let cancel = std::sync::atomic::AtomicBool::new(false);
        let ctx = Context {
            clock: &clock,
            sampler: SamplerConfig::quick(),
            quick: true,
            cpus: vec![0],
            progress: &crate::context::NoProgress,
            cancel: &cancel,
            controls: &Default::default(),
        };
        f(&ctx, &clock)
    }

    #[test]
    fn takes_the_configured_samples() {
        with_ctx(|ctx| {
            let (s, _) = measure(ctx, || black_box(3u64).wrapping_mul(7)).unwrap();
            assert!(s.per_op_ns.len() >= MIN_SAMPLES && s.per_op_ns.len() <= ctx.sampler.samples);
            assert_eq!(s.per_op_ns.len(), s.per_op_ticks.len());
            assert!(s.iterations_per_sample > 1);
            // The empty loop ran its iterations between two clock reads: it took time.
            assert!(s.loop_overhead_ns > 0.0, "{}", s.loop_overhead_ns);
        });
    }

    #[test]
    fn slower_work_measures_slower() {
        // On the scripted clock, so the test reads what the sampler does with the ticks an
        // operation costs, not how fast this machine happens to be.
        with_scripted(|ctx, clock| {
            let (fast, _) = measure(ctx, || clock.spend(10)).unwrap();
            let (slow, _) = measure(ctx, || clock.spend(1000)).unwrap();
            let med = |v: &[f64]| {
                let mut v = v.to_vec();
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            let ratio = med(&slow.per_op_ticks) / med(&fast.per_op_ticks);
            assert!((ratio - 100.0).abs() < 1.0, "{ratio}");
        });
    }

    #[test]
    fn a_short_operation_is_a_note_and_nothing_else() {
        with_scripted(|ctx, clock| {
            let (_, said) = measure(ctx, || clock.spend(3)).unwrap();
            assert!(said.warnings.is_empty(), "{said:?}");
            assert_eq!(said.notes.len(), 1, "{said:?}");
            assert_eq!(said.notes[0].kind(), MessageKind::ShortOperation);
            assert!(said.notes[0].starts_with("an operation of 3.0 ns overlaps"));
            let (_, said) = measure(ctx, || clock.spend(100)).unwrap();
            assert_eq!(said, Messages::default());
        });
    }

    #[test]
    fn errors_stop_sampling() {
        with_ctx(|ctx| {
            let mut calls = 0;
            let r = measure_fallible(ctx, || {
                calls += 1;
                if calls > 100 {
                    Err(anyhow::anyhow!("partner died"))
                } else {
                    Ok(())
                }
            });
            assert_eq!(r.unwrap_err().to_string(), "partner died");
        });
    }

    #[test]
    fn the_single_task_check_wants_exactly_one_thread() {
        assert!(single_task_check(Some(1)).unwrap().passed);
        let two = single_task_check(Some(2)).unwrap();
        assert!(!two.passed);
        assert_eq!(two.counted, 2.0);
        assert!(single_task_check(None).is_none());
        // The test harness itself has more than one thread.
        assert!(threads_in_process().unwrap() >= 1);
    }

    #[test]
    fn one_slow_batch_does_not_end_the_calibration() {
        with_scripted(|ctx, clock| {
            // The very first operation is held up for 5 ms (a preemption); every other one costs
            // 100 ticks. A 1 ms sample needs about 10 000 of them per batch.
            let mut first = true;
            let (s, _) = measure(ctx, || {
                clock.spend(if first { 5_000_000 } else { 100 });
                first = false;
            })
            .unwrap();
            assert!(
                s.iterations_per_sample >= 5_000,
                "{}",
                s.iterations_per_sample
            );
        });
    }

    #[test]
    fn a_spent_budget_stops_sampling_only_after_min_runs() {
        // Every sample spends 10 ms of the scripted clock, far beyond a 1 ms budget: sampling
        // stops at the first round the budget allows, which --min-runs sets.
        for (min_runs, samples, taken) in [(3, 20, 3), (7, 20, 7), (3, 3, 3), (5, 4, 4)] {
            let clock = crate::timesource::Scripted::new();
            let cancel = std::sync::atomic::AtomicBool::new(false);
            let ctx = Context {
                clock: &clock,
                sampler: SamplerConfig {
                    samples,
                    min_runs,
                    budget: Duration::from_millis(1),
                    ..SamplerConfig::quick()
                },
                quick: true,
                cpus: vec![0],
                progress: &crate::context::NoProgress,
                cancel: &cancel,
                controls: &Default::default(),
            };
            let mut n = 0;
            let cut = rounds(
                &ctx,
                1,
                |_| {
                    clock.spend(10_000_000);
                    n += 1;
                    Ok(())
                },
                || {},
            )
            .unwrap();
            assert_eq!(n, taken, "min_runs {min_runs}, samples {samples}");
            // Cut short only when fewer than the samples asked for were taken.
            assert_eq!(cut.is_some(), taken < samples, "{cut:?}");
            if let Some(cut) = cut {
                assert_eq!(cut.kind(), MessageKind::TimeBudget);
                assert_eq!(
                    cut,
                    format!("time budget of 1 ms reached: {taken} of {samples} samples taken")
                        .as_str()
                );
            }
        }
    }

    #[test]
    fn cancel_is_noticed() {
        testing::with_ctx(SamplerConfig::quick(), vec![0], true, |ctx| {
            let err = measure(ctx, || 1).unwrap_err();
            assert!(err.downcast_ref::<crate::context::Cancelled>().is_some());
        });
    }
}
