//! The clock every oscost figure is timed with.
//!
//! A hardware counter (x86-64 TSC, aarch64 CNTVCT_EL0) is used when the CPU says it runs at a
//! constant rate and the kernel trusts it; otherwise `CLOCK_MONOTONIC_RAW`. The counter's
//! frequency is calibrated against `CLOCK_MONOTONIC_RAW` twice and the two windows must agree,
//! so a figure converted to nanoseconds never rests on a guessed frequency. The ticks are
//! *reference* ticks: the TSC runs at a constant rate, not at the core clock.

use oscost_model::clock::{ClockInfo, CounterKind};
use std::time::Duration;

/// A calibrated time source; `now()` costs a few nanoseconds.
#[derive(Debug, Clone)]
pub struct Clock {
    kind: CounterKind,
    ns_per_tick: f64,
    info: ClockInfo,
}

/// Calibration windows above this disagreement make the counter untrusted.
const MAX_CALIBRATION_PPM: f64 = 50.0;

impl Clock {
    /// Detects and calibrates the best trustworthy counter (takes about 0.2 s once).
    pub fn detect() -> Clock {
        Self::detect_with(Duration::from_millis(100))
    }

    /// Like [`Clock::detect`] with a chosen calibration window (tests use short ones).
    pub fn detect_with(window: Duration) -> Clock {
        match hardware_counter_status() {
            Ok(kind) => {
                let a = calibrate(kind, window);
                let b = calibrate(kind, window);
                let hz = (a + b) / 2.0;
                let ppm = ((a - b) / hz).abs() * 1e6;
                if hz.is_finite() && hz > 1e6 && ppm <= MAX_CALIBRATION_PPM {
                    let tick_unit = match kind {
                        CounterKind::Tsc => "ref-cycles",
                        _ => "ticks",
                    };
                    return Clock {
                        kind,
                        ns_per_tick: 1e9 / hz,
                        info: ClockInfo {
                            counter: kind,
                            tick_unit: tick_unit.into(),
                            frequency_hz: hz,
                            frequency_source: format!(
                                "calibrated against CLOCK_MONOTONIC_RAW, 2 x {} ms",
                                window.as_millis()
                            ),
                            calibration_spread_ppm: ppm,
                            kernel_stated_hz: kernel_stated_hz(),
                            invariant: true,
                            fallback_reason: None,
                        },
                    };
                }
                Self::monotonic(format!(
                    "counter calibration unstable: {a:.0} Hz vs {b:.0} Hz ({ppm:.1} ppm)"
                ))
            }
            Err(reason) => Self::monotonic(reason),
        }
    }

    /// The clock another oscost process calibrated and described in `info`, so every
    /// measuring process of one run converts ticks with the same frequency.
    pub fn from_info(info: &ClockInfo) -> Clock {
        Clock {
            kind: info.counter,
            ns_per_tick: 1e9 / info.frequency_hz,
            info: info.clone(),
        }
    }

    /// The OS clock, used when no hardware counter can be trusted.
    pub fn monotonic(reason: String) -> Clock {
        Clock {
            kind: CounterKind::MonotonicRaw,
            ns_per_tick: 1.0,
            info: ClockInfo {
                counter: CounterKind::MonotonicRaw,
                tick_unit: "ns".into(),
                frequency_hz: 1e9,
                frequency_source: "CLOCK_MONOTONIC_RAW (nanoseconds)".into(),
                calibration_spread_ppm: 0.0,
                kernel_stated_hz: None,
                invariant: false,
                fallback_reason: Some(reason),
            },
        }
    }

    /// Reads the counter. Batch-timing only: not fenced against surrounding instructions.
    #[inline(always)]
    pub fn now(&self) -> u64 {
        read_counter(self.kind)
    }

    /// Converts a tick count to nanoseconds.
    pub fn ticks_to_ns(&self, ticks: f64) -> f64 {
        ticks * self.ns_per_tick
    }

    /// Converts nanoseconds to ticks.
    pub fn ns_to_ticks(&self, ns: f64) -> f64 {
        ns / self.ns_per_tick
    }

    /// What is known about this clock.
    pub fn info(&self) -> &ClockInfo {
        &self.info
    }
}

#[inline(always)]
fn read_counter(kind: CounterKind) -> u64 {
    match kind {
        CounterKind::Tsc | CounterKind::Cntvct => read_hw(),
        CounterKind::MonotonicRaw => monotonic_raw_ns(),
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read_hw() -> u64 {
    // SAFETY: rdtscp exists on every CPU that passed `hardware_counter_status` (flag checked);
    // it waits for earlier instructions, which is the ordering batch timing needs.
    unsafe {
        let mut aux = 0u32;
        core::arch::x86_64::__rdtscp(&mut aux)
    }
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn read_hw() -> u64 {
    let v: u64;
    // SAFETY: CNTVCT_EL0 is readable from EL0 on Linux; `isb` orders the read after earlier
    // instructions as the kernel's own accessor does.
    unsafe {
        core::arch::asm!("isb", "mrs {v}, cntvct_el0", v = out(reg) v, options(nomem, nostack))
    };
    v
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
fn read_hw() -> u64 {
    monotonic_raw_ns()
}

/// The clock `id` in nanoseconds (0 for a clock this kernel lacks).
pub fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec; an unknown clock is an error, not UB.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC_RAW` in nanoseconds.
pub fn monotonic_raw_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec; CLOCK_MONOTONIC_RAW exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn cpu_flags() -> Vec<String> {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("flags"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// The current kernel clock source (`tsc`, `kvm-clock`, `arch_sys_counter`, ...).
pub fn current_clocksource() -> Option<String> {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .ok()
        .map(|s| s.trim().to_owned())
}

#[cfg(target_arch = "x86_64")]
fn hardware_counter_status() -> Result<CounterKind, String> {
    let flags = cpu_flags();
    let has = |f: &str| flags.iter().any(|x| x == f);
    for needed in ["constant_tsc", "nonstop_tsc", "rdtscp"] {
        if !has(needed) {
            return Err(format!("CPU lacks the `{needed}` flag: TSC not invariant"));
        }
    }
    match current_clocksource() {
        Some(cs) if cs == "tsc" => Ok(CounterKind::Tsc),
        Some(cs) => Err(format!(
            "kernel clock source is `{cs}`, not `tsc`: the kernel does not trust the TSC"
        )),
        None => Err("clock source unknown (no sysfs)".into()),
    }
}

#[cfg(target_arch = "aarch64")]
fn hardware_counter_status() -> Result<CounterKind, String> {
    Ok(CounterKind::Cntvct)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn hardware_counter_status() -> Result<CounterKind, String> {
    Err("no supported hardware counter on this architecture".into())
}

/// A counter reading paired with the reference clock read just before and after it. Pairs
/// whose two clock reads are far apart were interrupted (preempted, a VM exit) and are retried,
/// so a busy machine cannot skew the calibration by a whole time slice.
fn paired_reading(kind: CounterKind) -> (f64, u64) {
    let mut best = (0.0, 0, u64::MAX);
    for _ in 0..100 {
        let a = monotonic_raw_ns();
        let c = read_counter(kind);
        let b = monotonic_raw_ns();
        let gap = b.saturating_sub(a);
        if gap < best.2 {
            best = ((a as f64 + b as f64) / 2.0, c, gap);
        }
        if gap < 1_000 {
            break;
        }
    }
    (best.0, best.1)
}

fn calibrate(kind: CounterKind, window: Duration) -> f64 {
    let (t0, c0) = paired_reading(kind);
    // Sleep rather than spin between the two readings: only the endpoints matter.
    std::thread::sleep(window);
    let (t1, c1) = paired_reading(kind);
    c1.wrapping_sub(c0) as f64 * 1e9 / (t1 - t0)
}

fn kernel_stated_hz() -> Option<f64> {
    if let Ok(s) = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/tsc_freq_khz") {
        if let Ok(khz) = s.trim().parse::<f64>() {
            return Some(khz * 1e3);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_advances_and_converts() {
        let c = Clock::detect_with(Duration::from_millis(20));
        let a = c.now();
        std::thread::sleep(Duration::from_millis(5));
        let b = c.now();
        assert!(b > a);
        let ns = c.ticks_to_ns((b - a) as f64);
        assert!(ns >= 5e6, "5 ms sleep measured as {ns} ns");
        assert!((c.ns_to_ticks(c.ticks_to_ns(1000.0)) - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn fallback_is_labelled() {
        let c = Clock::monotonic("test".into());
        assert_eq!(c.info().tick_unit, "ns");
        assert_eq!(c.info().fallback_reason.as_deref(), Some("test"));
    }
}
