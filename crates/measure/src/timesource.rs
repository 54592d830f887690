//! Where the sampler's time comes from: the calibrated hardware counter when measuring, or a
//! scripted clock that tests (and `--scripted` runs) advance by chosen amounts, so the whole
//! path from sampler to rendered table can be checked without timing the real machine.

use oscost_model::ClockInfo;
use oscost_sys::clock::Clock;
use std::sync::atomic::{AtomicU64, Ordering};

/// A source of ticks. The sampler reads it twice per batch and for its warm-up and budget, so
/// a scripted source makes every sampling decision deterministic.
pub trait TimeSource: Sync {
    /// The current tick count.
    fn now(&self) -> u64;
    /// Converts ticks to nanoseconds.
    fn ticks_to_ns(&self, ticks: f64) -> f64;
    /// What is known about the clock, stored with the result.
    fn info(&self) -> &ClockInfo;
    /// The scripted clock, when this is one.
    fn scripted(&self) -> Option<&Scripted> {
        None
    }
}

impl TimeSource for Clock {
    #[inline]
    fn now(&self) -> u64 {
        Clock::now(self)
    }
    fn ticks_to_ns(&self, ticks: f64) -> f64 {
        Clock::ticks_to_ns(self, ticks)
    }
    fn info(&self) -> &ClockInfo {
        Clock::info(self)
    }
}

/// A clock that stands still until told to move: one tick is one nanosecond, and only
/// [`Scripted::spend`] advances it. Reading it costs nothing, so an empty loop measures 0.
#[derive(Debug)]
pub struct Scripted {
    ticks: AtomicU64,
    info: ClockInfo,
}

impl Scripted {
    /// A scripted clock at tick 0, described as the fictional 1 GHz example counter.
    pub fn new() -> Scripted {
        Scripted {
            ticks: AtomicU64::new(0),
            info: oscost_model::example::clock(),
        }
    }

    /// Moves the clock forward by `ticks`: what a scripted operation "costs".
    pub fn spend(&self, ticks: u64) {
        self.ticks.fetch_add(ticks, Ordering::Relaxed);
    }
}

impl Default for Scripted {
    fn default() -> Self {
        Scripted::new()
    }
}

impl TimeSource for Scripted {
    fn now(&self) -> u64 {
        self.ticks.load(Ordering::Relaxed)
    }
    fn ticks_to_ns(&self, ticks: f64) -> f64 {
        ticks
    }
    fn info(&self) -> &ClockInfo {
        &self.info
    }
    fn scripted(&self) -> Option<&Scripted> {
        Some(self)
    }
}
