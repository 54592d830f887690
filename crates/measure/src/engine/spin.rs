//! A busy loop that reads the counter and stores every gap above a threshold: what interrupts
//! a spinning CPU (the `noise` experiment) and the kernel's own tick as such a loop sees it
//! (beside `tick`'s cost per event).

use crate::context::Cancelled;
use oscost_stats::periodic::{dominant_period, PeriodSearch, Periodic};
use oscost_sys::clock::Clock;
use oscost_sys::spin::{gap_buffer, record_gaps, Gap, Spin};
use std::sync::atomic::AtomicBool;

/// Gaps the period search looks at at most (the first of the run).
pub(crate) const PERIOD_EVENTS: usize = 20_000;
/// Periods looked for: 10 µs to 100 ms (the tick is 1 to 10 ms), in ns.
pub(crate) const SEARCH: PeriodSearch = PeriodSearch {
    min: 10_000.0,
    max: 100_000_000.0,
    neighbours: 64,
};
/// How long the loop's own iteration is timed before the run.
pub(crate) const CALIBRATION_NS: u64 = 20_000_000;
/// The default threshold: this many loop iterations, and at least `MIN_THRESHOLD_NS`.
pub(crate) const THRESHOLD_ITERATIONS: f64 = 10.0;
pub(crate) const MIN_THRESHOLD_NS: f64 = 1_000.0;

pub(crate) fn ticks(clock: &Clock, ns: f64) -> u64 {
    clock.ns_to_ticks(ns).round() as u64
}

/// Ticks one iteration of the loop takes on the calling thread's CPU: a spin of 20 ms that
/// stores nothing, its length over its iterations.
pub(crate) fn iteration_ticks(clock: &Clock, cancel: &AtomicBool) -> Result<f64, Cancelled> {
    let until = clock.now() + ticks(clock, CALIBRATION_NS as f64);
    let spin = record_gaps(|| clock.now(), until, u64::MAX, &mut [], cancel);
    if spin.stopped {
        return Err(Cancelled);
    }
    Ok(spin.end.wrapping_sub(spin.start) as f64 / spin.iterations.max(1) as f64)
}

/// One CPU's spin: what the loop saw, and the gaps it stored.
pub(crate) struct CpuSpin {
    pub(crate) cpu: usize,
    /// The spinning thread's kernel id (0 where unknown).
    pub(crate) tid: i32,
    pub(crate) spin: Spin,
    pub(crate) gaps: Vec<Gap>,
}

/// The figures of one CPU's spin.
pub(crate) struct CpuNoise {
    pub(crate) cpu: usize,
    pub(crate) span_ns: f64,
    pub(crate) iterations: u64,
    pub(crate) gaps_seen: u64,
    /// Start of each stored gap, ns from the start of the spin.
    pub(crate) starts_ns: Vec<f64>,
    /// Each stored interruption: its gap less one loop iteration, ns and ticks.
    pub(crate) lens_ns: Vec<f64>,
    pub(crate) lens_ticks: Vec<f64>,
    /// The periodic component among the first [`PERIOD_EVENTS`] gaps, and the span they cover.
    pub(crate) periodic: Option<Periodic>,
    pub(crate) period_span_ns: f64,
}

impl CpuNoise {
    pub(crate) fn span_s(&self) -> f64 {
        self.span_ns / 1e9
    }

    pub(crate) fn gaps_per_s(&self) -> f64 {
        self.gaps_seen as f64 / self.span_s()
    }

    /// Lengths of the periodic gaps, ns and ticks.
    pub(crate) fn periodic_lens(&self) -> (Vec<f64>, Vec<f64>) {
        match &self.periodic {
            Some(p) => p
                .members
                .iter()
                .map(|&i| (self.lens_ns[i], self.lens_ticks[i]))
                .unzip(),
            None => (Vec::new(), Vec::new()),
        }
    }

    /// The gaps at one phase of a known period (the kernel's tick), one a cycle, among those
    /// the period search looked at: how many, and how many a second over their span.
    pub(crate) fn at_period(&self, period_ns: f64) -> (usize, f64) {
        let looked = self.starts_ns.partition_point(|&t| t < self.period_span_ns);
        let n = oscost_stats::periodic::at_period(&self.starts_ns[..looked], period_ns).len();
        let per_s = if self.period_span_ns > 0.0 {
            n as f64 / (self.period_span_ns / 1e9)
        } else {
            0.0
        };
        (n, per_s)
    }

    /// Periodic gaps per second over the span the period search looked at.
    pub(crate) fn periodic_per_s(&self) -> f64 {
        match &self.periodic {
            Some(p) if self.period_span_ns > 0.0 => {
                p.members.len() as f64 / (self.period_span_ns / 1e9)
            }
            _ => 0.0,
        }
    }
}

pub(crate) fn analyse(clock: &Clock, s: &CpuSpin, iteration: f64) -> CpuNoise {
    let start = s.spin.start;
    let starts_ns: Vec<f64> = s
        .gaps
        .iter()
        .map(|g| clock.ticks_to_ns(g.at.wrapping_sub(start) as f64))
        .collect();
    let lens_ticks: Vec<f64> = s
        .gaps
        .iter()
        .map(|g| (g.len as f64 - iteration).max(0.0))
        .collect();
    let lens_ns = lens_ticks.iter().map(|&t| clock.ticks_to_ns(t)).collect();
    let span_ns = clock.ticks_to_ns(s.spin.end.wrapping_sub(start) as f64);
    let looked = starts_ns.len().min(PERIOD_EVENTS);
    let periodic = dominant_period(&starts_ns[..looked], SEARCH);
    let period_span_ns = if looked < starts_ns.len() {
        starts_ns[looked]
    } else {
        span_ns
    };
    CpuNoise {
        cpu: s.cpu,
        span_ns,
        iterations: s.spin.iterations,
        gaps_seen: s.spin.gaps(),
        starts_ns,
        lens_ns,
        lens_ticks,
        periodic,
        period_span_ns,
    }
}

/// The kernel's own tick as a spinning loop on the calling thread's CPU sees it: what `tick`
/// sets beside its cost per event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NaturalTick {
    /// The dominant period of the loop's interruptions, ns.
    pub period_ns: f64,
    /// Median length of the periodic interruptions, ns and ticks.
    pub median_ns: f64,
    pub median_ticks: f64,
    /// Periodic interruptions seen.
    pub count: usize,
    /// How long the loop spun, ns.
    pub span_ns: f64,
}

/// Spins `duration_ns` on the calling thread (which the caller has pinned) and returns the
/// periodic interruption it found, if one.
pub(crate) fn natural_tick(
    clock: &Clock,
    cpu: usize,
    duration_ns: u64,
    cancel: &AtomicBool,
) -> Result<Option<NaturalTick>, Cancelled> {
    let iteration = iteration_ticks(clock, cancel)?;
    let threshold = default_threshold(clock, iteration);
    let mut buf = gap_buffer(100_000);
    let until = clock.now() + ticks(clock, duration_ns as f64);
    let spin = record_gaps(|| clock.now(), until, threshold, &mut buf, cancel);
    if spin.stopped {
        return Err(Cancelled);
    }
    buf.truncate(spin.stored);
    let n = analyse(
        clock,
        &CpuSpin {
            cpu,
            tid: 0,
            spin,
            gaps: buf,
        },
        iteration,
    );
    let (ns, ts) = n.periodic_lens();
    Ok(n.periodic.as_ref().map(|p| NaturalTick {
        period_ns: p.period,
        median_ns: oscost_stats::median(&ns),
        median_ticks: oscost_stats::median(&ts),
        count: ns.len(),
        span_ns: n.span_ns,
    }))
}

pub(crate) fn default_threshold(clock: &Clock, iteration_ticks: f64) -> u64 {
    let floor = clock.ns_to_ticks(MIN_THRESHOLD_NS);
    (THRESHOLD_ITERATIONS * iteration_ticks).max(floor).round() as u64
}
