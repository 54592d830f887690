//! What repeats among the interruptions of a busy loop: the dominant period of a list of event
//! times (the kernel's tick shows up as one), which events belong to it, and a histogram of
//! event lengths.
//!
//! Event times come with other, irregular events mixed in (some of them in bursts), and with
//! some periodic ones missing (an interruption shorter than the detection threshold is not
//! seen), so the period is not read from successive intervals alone. Every event is paired with
//! its next few neighbours and the intervals are binned on a logarithmic scale; the peaks that
//! stand above their surroundings are the candidates, each refined to the median of the
//! intervals near it and then measured over the longest chain of events a whole number of
//! periods apart. The candidate whose period keeps the phases of all events most in step
//! (the Rayleigh statistic of `t mod period`) wins: a burst of events a few microseconds apart
//! makes a tall interval peak but no phase that lasts over the whole run, and a multiple of the
//! true period splits the periodic events over several phases.

use crate::order::percentile;
use crate::summary::mad;

/// Relative width of an interval bin: 0.25 %.
const BIN: f64 = 0.0025;
/// A peak is a bin with its two neighbours.
const PEAK_HALF_WIDTH: usize = 1;
/// The surroundings a peak is compared with: ±140 bins (about ±40 %), without the peak's own
/// ±4 bins.
const SURROUNDINGS: usize = 140;
const PEAK_CORE: usize = 4;
/// How many times its surroundings' average a peak must be to be a candidate.
const MIN_CONTRAST: f64 = 1.5;
/// Candidates tried at most, the highest above their surroundings first.
const MAX_CANDIDATES: usize = 64;
/// Intervals within this relative distance of a candidate are used to refine it.
const TOLERANCE: f64 = 0.03;
/// The events of the periodic component are those one period apart within five times the
/// intervals' own spread (scaled MAD), at least 0.1 % of the period and at most [`TOLERANCE`]:
/// a fixed ±3 % would let irregular events join it by chance.
const SPREADS: f64 = 5.0;
const MIN_TOLERANCE: f64 = 0.001;
/// Events unrelated to a period give a Rayleigh statistic of about 1 (exponentially
/// distributed); above this, with at most 64 candidates tried, chance is ruled out.
const MIN_COHERENCE: f64 = 12.0;
/// When at least this share of the events at the best candidate's phase fall on every m-th
/// of its cycles, m times the candidate is the period.
const SUBCYCLE_SHARE: f64 = 0.8;
/// A period must fit this many times into the events' span: over fewer cycles, events that
/// merely bunch in time (a busy stretch) line up in phase by chance.
const MIN_CYCLES: f64 = 16.0;
/// Fewest events a periodic component must have.
const MIN_MEMBERS: usize = 4;

/// Limits of the period search, in the unit of the event times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeriodSearch {
    /// Shortest period looked for.
    pub min: f64,
    /// Longest period looked for.
    pub max: f64,
    /// Each event is paired with at most this many following events.
    pub neighbours: usize,
}

/// A periodic component found among event times.
#[derive(Debug, Clone, PartialEq)]
pub struct Periodic {
    /// The period, measured over the longest chain of events one or a few periods apart.
    pub period: f64,
    /// Indices (ascending) of the events at the period's most common phase, the closest one in
    /// each cycle (within five times the spread of the intervals near the period, 0.1–3 % of
    /// it): the periodic component, at most one event a period. Events of another train at
    /// the same period but another phase are not in it.
    pub members: Vec<usize>,
    /// Pairs of events one period apart, at any phase.
    pub intervals: usize,
    /// How well the period keeps every event's phase in step: the Rayleigh statistic
    /// `|Σ e^(2πi t/period)|² / n`; about 1 for events unrelated to it, about k²/n for k
    /// events that keep it among n (at least 12 to be reported).
    pub coherence: f64,
}

impl Periodic {
    /// Whether event `i` belongs to the periodic component.
    pub fn is_member(&self, i: usize) -> bool {
        self.members.binary_search(&i).is_ok()
    }
}

/// The dominant period among `times` (ascending), or `None` when nothing repeats: no candidate
/// period keeps the events' phases in step beyond what chance gives, or fewer than four
/// events share its phase. Periods longer than a sixteenth of the events' span are not looked
/// for.
pub fn dominant_period(times: &[f64], search: PeriodSearch) -> Option<Periodic> {
    if times.len() < MIN_MEMBERS
        || !(search.min > 0.0 && search.max > search.min)
        || times.iter().any(|t| !t.is_finite())
    {
        return None;
    }
    let max = search
        .max
        .min((times[times.len() - 1] - times[0]) / MIN_CYCLES);
    if max <= search.min {
        return None;
    }
    let search = PeriodSearch { max, ..search };
    let lnb = (1.0 + BIN).ln();
    let nbins = ((search.max / search.min).ln() / lnb).ceil() as usize + 1;
    let bin = |d: f64| (((d / search.min).ln() / lnb).floor() as usize).min(nbins - 1);
    let center = |b: usize| search.min * (1.0 + BIN).powf(b as f64 + 0.5);
    let mut intervals = Vec::new();
    pairs(times, search, |d| intervals.push(d));
    intervals.sort_unstable_by(f64::total_cmp);
    let mut counts = vec![0u64; nbins];
    for &d in &intervals {
        counts[bin(d)] += 1;
    }
    let score = |b: usize| -> u64 {
        counts[b.saturating_sub(PEAK_HALF_WIDTH)..=(b + PEAK_HALF_WIDTH).min(nbins - 1)]
            .iter()
            .sum()
    };
    let scores: Vec<u64> = (0..nbins).map(score).collect();
    // Prefix sums, so each bin's surroundings cost two lookups.
    let mut prefix = vec![0u64; nbins + 1];
    for b in 0..nbins {
        prefix[b + 1] = prefix[b] + scores[b];
    }
    let sum = |lo: usize, hi: usize| prefix[hi + 1] - prefix[lo];
    let background = |b: usize| -> f64 {
        let lo = b.saturating_sub(SURROUNDINGS);
        let hi = (b + SURROUNDINGS).min(nbins - 1);
        let core_lo = b.saturating_sub(PEAK_CORE).max(lo);
        let core_hi = (b + PEAK_CORE).min(hi);
        let n = (hi - lo + 1) - (core_hi - core_lo + 1);
        (sum(lo, hi) - sum(core_lo, core_hi)) as f64 / n.max(1) as f64
    };
    let mut candidates: Vec<(f64, usize)> = (0..nbins)
        .filter(|&b| {
            let s = scores[b];
            s >= MIN_MEMBERS as u64 - 1
                && (b == 0 || s >= scores[b - 1])
                && (b + 1 == nbins || s > scores[b + 1])
                && s as f64 >= MIN_CONTRAST * background(b).max(1.0)
        })
        .map(|b| (scores[b] as f64 - background(b), b))
        .collect();
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    candidates.truncate(MAX_CANDIDATES);
    let tried: Vec<(f64, f64, f64)> = candidates
        .iter()
        .filter_map(|&(_, b)| refine(&intervals, center(b)))
        .map(|(p, tol)| {
            let p = chained(times, p, tol, search.neighbours);
            (p, tol, rayleigh(times, p))
        })
        .collect();
    let &(mut period, tol, mut coherence) = tried.iter().max_by(|a, b| a.2.total_cmp(&b.2))?;
    if coherence < MIN_COHERENCE {
        return None;
    }
    let mut members = phase_cluster(times, period, tol);
    // A submultiple of the period keeps the same events in step (every tick is also at phase
    // 0 of half the tick): when nearly all the events at the winner's phase come every m-th
    // cycle, m times the winner is the period. Events spread over the m cycles (every third
    // tick preempting the loop among ticks at every one) keep the winner.
    if let Some(&first) = members.first() {
        for m in (2..=8usize).rev() {
            let p = period * m as f64;
            if p > max {
                continue;
            }
            let mut per_cycle = vec![0usize; m];
            for &i in &members {
                let k = ((times[i] - times[first]) / period).round() as usize;
                per_cycle[k % m] += 1;
            }
            let top = per_cycle.iter().copied().max().unwrap_or(0);
            if top as f64 >= SUBCYCLE_SHARE * members.len() as f64 {
                period = p;
                coherence = rayleigh(times, p);
                members = phase_cluster(times, p, tol);
                break;
            }
        }
    }
    let matched = one_period_apart(times, period, tol, search.neighbours);
    (members.len() >= MIN_MEMBERS).then_some(Periodic {
        period,
        members,
        intervals: matched,
        coherence,
    })
}

/// The events at the most common phase of a known `period` (a kernel's tick): in each cycle
/// the one closest to that phase, within [`TOLERANCE`] of the period. Where the period is
/// known, counting at it needs no search: a search over few cycles among many other events can
/// lock onto half the period, or measure it a little off and lose the phase over the run.
pub fn at_period(times: &[f64], period: f64) -> Vec<usize> {
    if times.is_empty() || period.is_nan() || period <= 0.0 || times.iter().any(|t| !t.is_finite())
    {
        return Vec::new();
    }
    phase_cluster(times, period, period * TOLERANCE)
}

/// The events at the period's most common phase: the phases (`t mod period`) are binned at
/// about `tol`, the fullest three adjacent bins give the phase, and in each cycle the event
/// closest to it, within `tol`, belongs. Other trains at the same period but another phase
/// (what a tick sets off a little later, every tick) are left out, so the members are one
/// source's events, at most one a period.
fn phase_cluster(times: &[f64], period: f64, tol: f64) -> Vec<usize> {
    let t0 = times[0];
    let phases: Vec<f64> = times.iter().map(|t| (t - t0).rem_euclid(period)).collect();
    let nb = ((period / tol).floor() as usize).clamp(1, 100_000);
    let width = period / nb as f64;
    let mut counts = vec![0u64; nb];
    for &p in &phases {
        counts[((p / width) as usize).min(nb - 1)] += 1;
    }
    let around = |b: usize| counts[(b + nb - 1) % nb] + counts[b] + counts[(b + 1) % nb];
    let Some(peak) = (0..nb).max_by_key(|&b| (around(b), std::cmp::Reverse(b))) else {
        return Vec::new();
    };
    // Signed distance from `c` to phase `p`, wrapped to half a period either side.
    let off = |p: f64, c: f64| {
        let d = (p - c).rem_euclid(period);
        if d > period / 2.0 {
            d - period
        } else {
            d
        }
    };
    let rough = (peak as f64 + 0.5) * width;
    let near: Vec<f64> = phases
        .iter()
        .map(|&p| off(p, rough))
        .filter(|d| d.abs() <= 1.5 * width)
        .collect();
    let center = rough + near.iter().sum::<f64>() / near.len().max(1) as f64;
    // One event per cycle, the closest to the phase: a source that fires once a period
    // (the tick) is counted once a period, whatever else happens near it.
    let mut best: std::collections::BTreeMap<i64, (f64, usize)> = Default::default();
    for i in 0..times.len() {
        let d = off(phases[i], center);
        if d.abs() > tol {
            continue;
        }
        let cycle = ((times[i] - t0 - center) / period).round() as i64;
        let e = best.entry(cycle).or_insert((f64::INFINITY, i));
        if d.abs() < e.0 {
            *e = (d.abs(), i);
        }
    }
    let mut members: Vec<usize> = best.into_values().map(|(_, i)| i).collect();
    members.sort_unstable();
    members
}

/// How many pairs of events are `period` (± `tol`) apart.
fn one_period_apart(times: &[f64], period: f64, tol: f64, neighbours: usize) -> usize {
    let mut matched = 0;
    for i in 0..times.len() {
        for j in i + 1..times.len().min(i + 1 + neighbours) {
            let d = times[j] - times[i];
            if d > period + tol {
                break;
            }
            if (d - period).abs() <= tol {
                matched += 1;
            }
        }
    }
    matched
}

/// A candidate period refined on the (sorted) intervals near it: their median, three times,
/// each time keeping only intervals within the tolerance the last spread gave (irregular
/// intervals within ±3 % widen the first spread). Returns the period and its tolerance.
fn refine(sorted: &[f64], rough: f64) -> Option<(f64, f64)> {
    let mut period = rough;
    let mut tol = TOLERANCE * rough;
    for _ in 0..3 {
        let lo = sorted.partition_point(|&d| d < period - tol);
        let hi = sorted.partition_point(|&d| d <= period + tol);
        let near = &sorted[lo..hi];
        if near.is_empty() {
            return None;
        }
        period = percentile(near, 50.0);
        let spread = 1.4826 * mad(near);
        tol = (SPREADS * spread).clamp(MIN_TOLERANCE * period, TOLERANCE * period);
    }
    period.is_finite().then_some((period, tol))
}

/// A chain step may span up to this many periods (periodic events hidden in a longer
/// interruption, or too short to be seen, leave such holes).
const MAX_STEP: f64 = 8.0;

/// The period measured over the longest chain of events each a whole number of periods (1 to
/// 8, within `tol` each) after the one before: its span over the periods it counts. The median
/// of single intervals is only good to its jitter over the square root of their number; a
/// span of thousands of periods is good to the jitter over thousands, which the phase test
/// over a whole run needs.
fn chained(times: &[f64], period: f64, tol: f64, neighbours: usize) -> f64 {
    let n = times.len();
    // Walking backwards, each event's chain: the periods it counts and where it ends.
    let mut cycles = vec![0u64; n];
    let mut end = (0..n).collect::<Vec<_>>();
    for i in (0..n).rev() {
        for j in i + 1..n.min(i + 1 + neighbours) {
            let d = times[j] - times[i];
            let m = (d / period).round();
            if m > MAX_STEP {
                break;
            }
            if m >= 1.0 && (d - m * period).abs() <= tol {
                cycles[i] = m as u64 + cycles[j];
                end[i] = end[j];
                break;
            }
        }
    }
    match (0..n).max_by_key(|&i| cycles[i]) {
        Some(i) if cycles[i] > 0 => (times[end[i]] - times[i]) / cycles[i] as f64,
        _ => period,
    }
}

/// The Rayleigh statistic of the events' phases at `period`: `|Σ e^(2πi t/period)|² / n`.
/// Unrelated events give about 1 (exponentially distributed); `k` events that keep the period
/// give about k²/n, and bursts of events at random times only their own sizes squared.
fn rayleigh(times: &[f64], period: f64) -> f64 {
    let t0 = times[0];
    let (mut c, mut s) = (0.0, 0.0);
    for &t in times {
        let phase = ((t - t0) % period) / period * std::f64::consts::TAU;
        c += phase.cos();
        s += phase.sin();
    }
    (c * c + s * s) / times.len() as f64
}

/// Calls `f` with the interval from each event to each of its next `search.neighbours`
/// events, within the search's limits.
fn pairs(times: &[f64], search: PeriodSearch, mut f: impl FnMut(f64)) {
    for i in 0..times.len() {
        for j in i + 1..times.len().min(i + 1 + search.neighbours) {
            let d = times[j] - times[i];
            if d > search.max {
                break;
            }
            if d >= search.min {
                f(d);
            }
        }
    }
}

/// One bin of a histogram: values in `[from, to)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bin {
    /// Lower edge, included.
    pub from: f64,
    /// Upper edge, excluded.
    pub to: f64,
    /// Values in the bin.
    pub count: u64,
}

/// A histogram of positive `values` in power-of-two bins (`[2^k, 2^(k+1))`, values below 1
/// in `[0, 1)`), from the lowest occupied bin to the highest, empty bins between included.
/// Lengths of interruptions span four orders of magnitude; equal-width bins would hide the
/// short ones or the long ones.
pub fn log2_histogram(values: &[f64]) -> Vec<Bin> {
    let key = |v: f64| -> i32 {
        if v < 1.0 {
            -1
        } else {
            v.log2().floor() as i32
        }
    };
    let keys: Vec<i32> = values
        .iter()
        .filter(|v| v.is_finite() && **v >= 0.0)
        .map(|&v| key(v))
        .collect();
    let (Some(&lo), Some(&hi)) = (keys.iter().min(), keys.iter().max()) else {
        return Vec::new();
    };
    let mut counts = vec![0u64; (hi - lo + 1) as usize];
    for k in keys {
        counts[(k - lo) as usize] += 1;
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, count)| {
            let k = lo + i as i32;
            let (from, to) = if k < 0 {
                (0.0, 1.0)
            } else {
                (2f64.powi(k), 2f64.powi(k + 1))
            };
            Bin { from, to, count }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEARCH: PeriodSearch = PeriodSearch {
        min: 10_000.0,
        max: 100_000_000.0,
        neighbours: 64,
    };

    /// A deterministic generator (xorshift64*), so every run plants the same series.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// Ticks every `period` ns (±0.025 % of it of jitter: ±1 µs at 4 ms) over `span` ns, `skip_every`-th one missing,
    /// and `random` irregular events uniformly over the span; returns the sorted times and the
    /// tick times.
    fn plant(
        period: f64,
        span: f64,
        skip_every: usize,
        random: usize,
        seed: u64,
    ) -> (Vec<f64>, Vec<f64>) {
        let mut rng = Rng(seed);
        let mut ticks = Vec::new();
        let mut t = 1234.0;
        let mut k = 0;
        while t < span {
            k += 1;
            if skip_every == 0 || k % skip_every != 0 {
                ticks.push(t + (rng.unit() - 0.5) * 0.0005 * period);
            }
            t += period;
        }
        let mut all = ticks.clone();
        all.extend((0..random).map(|_| rng.unit() * span));
        all.sort_by(f64::total_cmp);
        (all, ticks)
    }

    #[test]
    fn counts_at_a_known_period_one_event_a_cycle() {
        // 40 ticks every 4 ms at phase 1 ms, two of them missing, each with a follower 400 µs
        // later, and irregular events between.
        let mut t: Vec<f64> = (0..40)
            .filter(|i| *i != 7 && *i != 21)
            .flat_map(|i| {
                let tick = 1e6 + 4e6 * i as f64;
                [tick, tick + 4e5]
            })
            .collect();
        t.extend((0..40).map(|i| 2.5e6 + 4e6 * i as f64 + 1e5 * (i % 5) as f64));
        t.sort_by(f64::total_cmp);
        let m = at_period(&t, 4e6);
        assert_eq!(m.len(), 38, "{m:?}");
        assert!(m.iter().all(|&i| ((t[i] - 1e6) / 4e6).fract() < 1e-9));
        assert!(at_period(&[], 4e6).is_empty());
        assert!(at_period(&t, 0.0).is_empty());
    }

    #[test]
    fn finds_a_planted_period_among_irregular_events() {
        // A 4 ms tick over 8 s (2000 ticks) with 3000 irregular events among them.
        let (all, ticks) = plant(4e6, 8e9, 0, 3000, 1);
        let p = dominant_period(&all, SEARCH).expect("period found");
        assert!((p.period - 4e6).abs() < 4e6 * 0.001, "{p:?}");
        // One event a period: the planted ticks, except where an irregular event happened to
        // land closer to the tick's phase than the (jittered) tick itself.
        let members: Vec<f64> = p.members.iter().map(|&i| all[i]).collect();
        assert!(members.len() <= ticks.len(), "{}", members.len());
        let found = ticks.iter().filter(|t| members.contains(t)).count();
        assert!(found >= ticks.len() - 5, "{found} of {} ticks", ticks.len());
    }

    #[test]
    fn bursts_do_not_hide_the_tick() {
        // 250 ticks of a 4 ms period, and 20 bursts of 10 events 67 µs apart at random times:
        // the bursts make the tallest interval peak, the ticks the only lasting phase.
        let (mut all, ticks) = plant(4e6, 1e9, 0, 300, 5);
        let mut rng = Rng(6);
        for _ in 0..20 {
            let at = rng.unit() * 1e9;
            all.extend((0..10).map(|k| at + k as f64 * 67_000.0));
        }
        all.sort_by(f64::total_cmp);
        let p = dominant_period(&all, SEARCH).expect("period found");
        assert!((p.period - 4e6).abs() < 4e6 * 0.001, "{p:?}");
        assert!(p.members.len() >= ticks.len() - 5, "{}", p.members.len());
        assert!(p.members.len() <= ticks.len(), "{}", p.members.len());
    }

    #[test]
    fn a_missing_tick_does_not_double_the_period() {
        // Every third 1 ms tick missing: intervals of 1 ms and 2 ms are equally common.
        let (all, _) = plant(1e6, 2e9, 3, 500, 2);
        let p = dominant_period(&all, SEARCH).expect("period found");
        assert!((p.period - 1e6).abs() < 1e6 * 0.002, "{p:?}");
    }

    #[test]
    fn other_periods_are_found_too() {
        for period in [3.333_333e6, 10e6, 250e3, 61e3] {
            let (all, _) = plant(period, 1e9, 0, 200, 3);
            let p = dominant_period(&all, SEARCH).unwrap_or_else(|| panic!("{period}: none"));
            assert!(
                (p.period - period).abs() < period * 0.001,
                "{period}: {p:?}"
            );
        }
    }

    #[test]
    fn irregular_events_have_no_period() {
        let mut rng = Rng(4);
        let mut t: Vec<f64> = (0..5000).map(|_| rng.unit() * 5e9).collect();
        t.sort_by(f64::total_cmp);
        assert_eq!(dominant_period(&t, SEARCH), None);
        assert_eq!(dominant_period(&t[..3], SEARCH), None);
        assert_eq!(dominant_period(&[], SEARCH), None);
    }

    #[test]
    fn histogram_bins_are_powers_of_two() {
        let h = log2_histogram(&[0.5, 1.0, 3.0, 3.9, 17.0]);
        let got: Vec<(f64, f64, u64)> = h.iter().map(|b| (b.from, b.to, b.count)).collect();
        assert_eq!(
            got,
            vec![
                (0.0, 1.0, 1),
                (1.0, 2.0, 1),
                (2.0, 4.0, 2),
                (4.0, 8.0, 0),
                (8.0, 16.0, 0),
                (16.0, 32.0, 1)
            ]
        );
        assert!(log2_histogram(&[]).is_empty());
        assert_eq!(h.iter().map(|b| b.count).sum::<u64>(), 5);
    }
}
