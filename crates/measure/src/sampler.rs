//! Turns "do this operation" into honest per-operation samples.
//!
//! Each sample times a batch of operations between two counter reads, so the counter's own
//! cost and resolution vanish in the batch. The batch size is calibrated so a sample lasts at
//! least `min_sample`; the same loop with an empty body is timed at the same batch size and its
//! per-iteration cost subtracted. Warm-up runs until three consecutive batches agree within 2 %
//! (or the warm-up budget is spent, which is recorded as a warning).

use crate::case::Samples;
use crate::context::Context;
use std::hint::black_box;
use std::time::Duration;

/// How cases are sampled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplerConfig {
    /// Samples per case.
    pub samples: usize,
    /// Minimum warm-up time.
    pub warmup: Duration,
    /// Minimum duration of one sample.
    pub min_sample: Duration,
    /// Time budget per case; sampling stops early (with at least 5 samples) when spent.
    pub budget: Duration,
}

impl SamplerConfig {
    /// The default: 41 samples of at least 4 ms.
    pub fn standard() -> SamplerConfig {
        SamplerConfig {
            samples: 41,
            warmup: Duration::from_millis(40),
            min_sample: Duration::from_millis(4),
            budget: Duration::from_secs(2),
        }
    }

    /// `--quick`: 15 samples of at least 1 ms.
    pub fn quick() -> SamplerConfig {
        SamplerConfig {
            samples: 15,
            warmup: Duration::from_millis(8),
            min_sample: Duration::from_millis(1),
            budget: Duration::from_millis(300),
        }
    }
}

/// Fewest samples kept when the budget runs out.
const MIN_SAMPLES: usize = 5;

/// Times `n` calls of `op` and returns the elapsed counter ticks. Not inlined, so the timed
/// loop and the empty reference loop have the same shape and placement rules.
#[inline(never)]
fn timed_batch<R, E>(
    ctx: &Context,
    n: u64,
    op: &mut impl FnMut() -> Result<R, E>,
) -> Result<u64, E> {
    let t0 = ctx.clock.now();
    for _ in 0..n {
        black_box(op()?);
    }
    Ok(ctx.clock.now().wrapping_sub(t0))
}

/// Samples an operation that cannot fail.
pub fn measure<R>(
    ctx: &Context,
    mut op: impl FnMut() -> R,
) -> anyhow::Result<(Samples, Vec<String>)> {
    measure_fallible(ctx, || Ok::<R, std::convert::Infallible>(op()))
}

/// Samples a fallible operation; the first error stops sampling and is returned.
///
/// Returns the samples and any warnings (warm-up did not settle, budget cut the sample count).
pub fn measure_fallible<R, E>(
    ctx: &Context,
    mut op: impl FnMut() -> Result<R, E>,
) -> anyhow::Result<(Samples, Vec<String>)>
where
    E: Into<anyhow::Error>,
{
    let cfg = ctx.sampler;
    let clock = ctx.clock;
    let ns = |ticks: u64| clock.ticks_to_ns(ticks as f64);
    let mut warnings = Vec::new();
    let started = std::time::Instant::now();

    // Calibrate the batch size: double until one batch lasts min_sample.
    let min_ns = cfg.min_sample.as_nanos() as f64;
    let mut n: u64 = 1;
    loop {
        ctx.check_cancel()?;
        let t = ns(timed_batch(ctx, n, &mut op).map_err(Into::into)?);
        if t >= min_ns || n >= 1 << 40 {
            break;
        }
        // Jump close to the target once the timing is meaningful, else double.
        n = if t > 50_000.0 {
            ((n as f64 * min_ns / t).ceil() as u64).max(n + 1)
        } else {
            n * 2
        };
    }

    // Warm-up: until three consecutive batches agree within 2 %, at least cfg.warmup.
    let warm_start = std::time::Instant::now();
    let mut recent: Vec<f64> = Vec::new();
    let settled = loop {
        ctx.check_cancel()?;
        recent.push(ns(timed_batch(ctx, n, &mut op).map_err(Into::into)?));
        if recent.len() > 3 {
            recent.remove(0);
        }
        let elapsed = warm_start.elapsed();
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
        warnings.push(format!(
            "warm-up did not settle: the last three batches differed by more than 2 % after {} ms",
            (cfg.warmup * 4).as_millis()
        ));
    }

    // The loop's own cost, same shape, same batch size.
    let mut empty = || Ok::<(), E>(());
    let mut overhead: Vec<u64> = (0..7)
        .map(|_| timed_batch(ctx, n, &mut empty).map_err(Into::into))
        .collect::<Result<_, _>>()?;
    overhead.sort_unstable();
    let overhead_ticks = overhead[overhead.len() / 2] as f64 / n as f64;

    let mut per_op_ticks = Vec::with_capacity(cfg.samples);
    for i in 0..cfg.samples {
        ctx.check_cancel()?;
        let t = timed_batch(ctx, n, &mut op).map_err(Into::into)?;
        per_op_ticks.push(t as f64 / n as f64 - overhead_ticks);
        if i + 1 >= MIN_SAMPLES && started.elapsed() > cfg.budget {
            warnings.push(format!(
                "time budget of {} ms reached: {} of {} samples taken",
                cfg.budget.as_millis(),
                i + 1,
                cfg.samples
            ));
            break;
        }
    }
    let samples = Samples {
        per_op_ns: per_op_ticks.iter().map(|&t| clock.ticks_to_ns(t)).collect(),
        per_op_ticks,
        iterations_per_sample: n,
        loop_overhead_ns: clock.ticks_to_ns(overhead_ticks),
    };
    Ok((samples, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::context::NoProgress;
    use std::sync::atomic::AtomicBool;

    fn with_ctx<T>(f: impl FnOnce(&Context) -> T) -> T {
        let clock = Clock::detect_with(Duration::from_millis(10));
        let cancel = AtomicBool::new(false);
        let ctx = Context {
            clock: &clock,
            sampler: SamplerConfig::quick(),
            quick: true,
            cpus: vec![0],
            progress: &NoProgress,
            cancel: &cancel,
        };
        f(&ctx)
    }

    #[test]
    fn takes_the_configured_samples() {
        with_ctx(|ctx| {
            let (s, _) = measure(ctx, || black_box(3u64).wrapping_mul(7)).unwrap();
            assert!(s.per_op_ns.len() >= MIN_SAMPLES && s.per_op_ns.len() <= ctx.sampler.samples);
            assert_eq!(s.per_op_ns.len(), s.per_op_ticks.len());
            assert!(s.iterations_per_sample > 1);
            assert!(s.loop_overhead_ns >= 0.0);
        });
    }

    #[test]
    fn slower_work_measures_slower() {
        with_ctx(|ctx| {
            let spin = |k: u64| {
                let mut x = 0u64;
                for i in 0..k {
                    x = black_box(x.wrapping_add(i));
                }
                x
            };
            let (fast, _) = measure(ctx, || spin(10)).unwrap();
            let (slow, _) = measure(ctx, || spin(1000)).unwrap();
            let med = |v: &[f64]| {
                let mut v = v.to_vec();
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            assert!(med(&slow.per_op_ns) > med(&fast.per_op_ns) * 5.0);
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
    fn cancel_is_noticed() {
        let clock = Clock::monotonic("test".into());
        let cancel = AtomicBool::new(true);
        let ctx = Context {
            clock: &clock,
            sampler: SamplerConfig::quick(),
            quick: true,
            cpus: vec![0],
            progress: &NoProgress,
            cancel: &cancel,
        };
        let err = measure(&ctx, || 1).unwrap_err();
        assert!(err.downcast_ref::<crate::context::Cancelled>().is_some());
    }
}
