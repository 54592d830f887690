//! The machine's clock as experiments that spin or wait on it need it: the real counter (never
//! the scripted one) and the kernel's tick.

use crate::context::Context;
use crate::env::parse::hz_from_tick_ns;
use oscost_sys::clock::Clock;

/// The machine's counter, as the measuring process was told it: the scripted clock of the
/// test fixtures never moves, and a loop waiting on it would never end.
pub(crate) fn real_clock(ctx: &Context, what: &str) -> anyhow::Result<Clock> {
    if ctx.clock.scripted().is_some() {
        anyhow::bail!("{what} needs the machine's counter and cannot run on the scripted clock");
    }
    Ok(Clock::from_info(ctx.clock.info()))
}

/// HZ and the length of one tick, from `clock_getres(CLOCK_MONOTONIC_COARSE)`.
pub(crate) fn kernel_hz() -> Option<(u32, u64)> {
    let ns = oscost_sys::sysinfo::coarse_clock_resolution_ns()?;
    hz_from_tick_ns(ns).map(|hz| (hz, ns))
}

/// The median cost of two back-to-back counter reads, ticks: what a single operation timed
/// between two reads carries besides itself, subtracted from it.
pub(crate) fn clock_overhead(ctx: &Context) -> f64 {
    let mut v: Vec<u64> = (0..31)
        .map(|_| {
            let t0 = ctx.clock.now();
            ctx.clock.now().wrapping_sub(t0)
        })
        .collect();
    v.sort_unstable();
    v[v.len() / 2] as f64
}
