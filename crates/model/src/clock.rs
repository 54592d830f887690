//! What is known about the clock a result was timed with.

use serde::{Deserialize, Serialize};

/// Which counter timed a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterKind {
    /// x86-64 time-stamp counter (constant reference rate).
    Tsc,
    /// aarch64 virtual counter CNTVCT_EL0 (a fixed-rate timer, not a cycle counter).
    Cntvct,
    /// `clock_gettime(CLOCK_MONOTONIC_RAW)`; ticks are nanoseconds.
    MonotonicRaw,
}

/// What is known about the clock, stored with every result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockInfo {
    /// The counter read.
    pub counter: CounterKind,
    /// Name of the tick unit in tables (`ref-cycles` for the TSC, `ns` for the OS clock).
    pub tick_unit: String,
    /// Counter frequency in Hz.
    pub frequency_hz: f64,
    /// How the frequency was found.
    pub frequency_source: String,
    /// Relative disagreement between the two calibration windows, in parts per million.
    pub calibration_spread_ppm: f64,
    /// The frequency the kernel states, where visible (`tsc_freq_khz`, `cpu MHz`), in Hz.
    pub kernel_stated_hz: Option<f64>,
    /// Whether the counter is invariant (constant and non-stop) and the kernel's clock source.
    pub invariant: bool,
    /// Why the hardware counter was not used, when it was not.
    pub fallback_reason: Option<String>,
}
