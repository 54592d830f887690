//! Fixed amounts of busy work and who does them: `split`'s work units (one flow, threads or
//! processes, and their rate on this CPU) and `tick`'s chain of multiply-adds.

use oscost_sys::clock::Clock;
use std::hint::black_box;

/// Who does the work.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
pub enum Form {
    /// one flow, the measuring thread, does all of W in N pieces, one after another
    Single,
    /// N threads of the measuring process
    Threads,
    /// N forked processes
    Processes,
}

/// Work units per nanosecond on the calling thread's CPU: the median of several timed
/// stretches of the work loop, after a warm-up.
pub(crate) fn calibrate(clock: &Clock) -> f64 {
    const UNITS: u64 = 5_000_000;
    oscost_sys::work::work(4 * UNITS);
    let mut rates: Vec<f64> = (0..7)
        .map(|_| {
            let t0 = clock.now();
            std::hint::black_box(oscost_sys::work::work(std::hint::black_box(UNITS)));
            let ns = clock.ticks_to_ns((clock.now() - t0) as f64).max(1.0);
            UNITS as f64 / ns
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// The fixed work: a chain of dependent multiply-adds that no compiler can shorten, in a
/// function of its own so that every run executes the same code.
#[inline(never)]
pub(crate) fn work(iterations: u64) -> u64 {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..iterations {
        x = black_box(
            x.wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407),
        );
    }
    x
}
