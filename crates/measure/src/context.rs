//! What every experiment is given: the clock, the sampling rules, the CPUs it may use, a
//! progress sink and a way to notice Ctrl-C.

use crate::timesource::TimeSource;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How cases are sampled.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SamplerConfig {
    /// Samples per case.
    pub samples: usize,
    /// Minimum warm-up time.
    pub warmup: Duration,
    /// Minimum duration of one sample.
    pub min_sample: Duration,
    /// Time budget per case; sampling stops early (with at least `min_runs` samples) when
    /// spent.
    pub budget: Duration,
    /// Fewest samples per case before the budget may stop sampling (`--min-runs`).
    #[serde(default = "default_min_runs")]
    pub min_runs: usize,
}

/// Fewest samples kept when the budget runs out, unless `--min-runs` says otherwise.
pub const MIN_SAMPLES: usize = 5;

fn default_min_runs() -> usize {
    MIN_SAMPLES
}

impl SamplerConfig {
    /// The default: 81 samples of at least 4 ms.
    pub fn standard() -> SamplerConfig {
        SamplerConfig {
            samples: 81,
            warmup: Duration::from_millis(40),
            min_sample: Duration::from_millis(4),
            budget: Duration::from_secs(2),
            min_runs: MIN_SAMPLES,
        }
    }

    /// This sampling cut to an experiment's share of a suite: at most `samples` samples of at
    /// most 1 ms each, at most `warmup` of warm-up and `budget` per case (`min_runs` kept).
    pub fn for_suite(self, samples: usize, warmup: Duration, budget: Duration) -> SamplerConfig {
        SamplerConfig {
            samples: self.samples.min(samples),
            warmup: self.warmup.min(warmup),
            min_sample: self.min_sample.min(Duration::from_millis(1)),
            budget: self.budget.min(budget),
            min_runs: self.min_runs,
        }
    }

    /// `--quick`: 10 samples of at least 1 ms, after 4 ms of warm-up.
    pub fn quick() -> SamplerConfig {
        SamplerConfig {
            samples: 10,
            warmup: Duration::from_millis(4),
            min_sample: Duration::from_millis(1),
            budget: Duration::from_millis(300),
            min_runs: MIN_SAMPLES,
        }
    }
}

/// Progress reporting, implemented by the CLI (a progress bar) or by nothing in tests.
pub trait Progress: Sync {
    /// Starts a phase of `len` steps described by `what`.
    fn start(&self, len: u64, what: &str);
    /// Advances by `n` steps.
    fn inc(&self, n: u64);
    /// Names the step in progress.
    fn message(&self, msg: &str);
    /// Ends the phase.
    fn finish(&self);
}

/// A progress sink that shows nothing.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _: u64, _: &str) {}
    fn inc(&self, _: u64) {}
    fn message(&self, _: &str) {}
    fn finish(&self) {}
}

/// The run was interrupted (Ctrl-C, SIGTERM, SIGHUP): the experiment stops at its next sample.
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub struct Cancelled;

/// Everything an experiment needs from the layers above it.
pub struct Context<'a> {
    /// The calibrated clock (or a scripted one in tests).
    pub clock: &'a dyn TimeSource,
    /// How to sample each case.
    pub sampler: SamplerConfig,
    /// Smaller sizes and fewer samples (`--quick`).
    pub quick: bool,
    /// CPUs the experiment may use (the `--cpus` set, or all online CPUs), ascending.
    pub cpus: Vec<usize>,
    /// Progress sink.
    pub progress: &'a dyn Progress,
    /// Set by the Ctrl-C handler.
    pub cancel: &'a AtomicBool,
    /// Where the sampler keeps the machine's controls it times between rounds.
    pub controls: &'a crate::control_log::ControlLog,
}

impl<'a> Context<'a> {
    /// The same context, sampling as `sampler` says.
    pub fn with_sampler(&self, sampler: SamplerConfig) -> Context<'a> {
        Context {
            clock: self.clock,
            sampler,
            quick: self.quick,
            cpus: self.cpus.clone(),
            progress: self.progress,
            cancel: self.cancel,
            controls: self.controls,
        }
    }

    /// Returns `Err(Cancelled)` once Ctrl-C was pressed; call it between samples.
    pub fn check_cancel(&self) -> Result<(), Cancelled> {
        if self.cancel.load(Ordering::Relaxed) {
            Err(Cancelled)
        } else {
            Ok(())
        }
    }

    /// The first CPU of the allowed set: where single-CPU cases run.
    pub fn first_cpu(&self) -> usize {
        self.cpus.first().copied().unwrap_or(0)
    }

    /// Pins the calling thread (and what it creates after) to the first CPU of the set, where
    /// one-task cases run; returns that CPU. An empty set is refused.
    pub fn pin_first_cpu(&self) -> anyhow::Result<usize> {
        let Some(&cpu) = self.cpus.first() else {
            anyhow::bail!("--cpus: the CPU set is empty");
        };
        oscost_sys::set_affinity(&[cpu])
            .map_err(|e| anyhow::anyhow!("pinning to CPU {cpu}: {e}"))?;
        Ok(cpu)
    }
}

/// Contexts for tests: the OS clock (no calibration wait) and no progress output.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Context, NoProgress, SamplerConfig};
    use oscost_sys::clock::Clock;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    /// A handful of short samples: enough to exercise every code path, not to measure.
    pub fn tiny_sampler() -> SamplerConfig {
        SamplerConfig {
            samples: 5,
            warmup: Duration::from_millis(2),
            min_sample: Duration::from_micros(500),
            budget: Duration::from_millis(100),
            min_runs: super::MIN_SAMPLES,
        }
    }

    /// Runs `f` with the tiny sampler on every CPU this process may use, not cancelled.
    pub fn with_tiny_ctx<T>(f: impl FnOnce(&Context) -> T) -> T {
        with_ctx(tiny_sampler(), oscost_sys::affinity().unwrap(), false, f)
    }

    /// Runs `f` with a context on `cpus`; `cancelled` presets the Ctrl-C flag.
    pub fn with_ctx<T>(
        sampler: SamplerConfig,
        cpus: Vec<usize>,
        cancelled: bool,
        f: impl FnOnce(&Context) -> T,
    ) -> T {
        let clock = Clock::monotonic("test".into());
        let cancel = AtomicBool::new(cancelled);
        let controls = crate::control_log::ControlLog::default();
        let ctx = Context {
            clock: &clock,
            sampler,
            quick: true,
            cpus,
            progress: &NoProgress,
            cancel: &cancel,
            controls: &controls,
        };
        f(&ctx)
    }
}

#[cfg(test)]
mod suite_tests {
    use super::*;

    #[test]
    fn a_suite_share_only_ever_shortens_the_sampling() {
        let s = SamplerConfig::standard().for_suite(
            15,
            Duration::from_millis(5),
            Duration::from_millis(60),
        );
        assert_eq!(s.samples, 15);
        assert_eq!(s.warmup, Duration::from_millis(5));
        assert_eq!(s.min_sample, Duration::from_millis(1));
        assert_eq!(s.budget, Duration::from_millis(60));
        assert_eq!(s.min_runs, MIN_SAMPLES);
        // Already smaller (--quick): kept as it is.
        let q = SamplerConfig::quick();
        let s = q.for_suite(41, Duration::from_millis(10), Duration::from_secs(5));
        assert_eq!(
            (s.samples, s.warmup, s.budget),
            (q.samples, q.warmup, q.budget)
        );
    }
}
