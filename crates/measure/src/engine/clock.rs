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
