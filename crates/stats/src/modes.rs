//! Whether the processes a figure was drawn from fell into two modes: on some machines a
//! process keeps, for its whole life, one of two costs for the same operation (a page fault
//! of ~620 ns or of ~790 ns, by where its memory landed), so a figure from one process is one
//! draw of two and a figure from several is a mixture that must be said, not averaged away.

use crate::order::{median, percentile_ci95};

/// One process's samples summed up: its median and that median's distribution-free 95 %
/// interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessMedian {
    /// The median of its samples.
    pub median: f64,
    /// The 95 % interval of that median (its own samples' order statistics).
    pub ci95: [f64; 2],
}

impl ProcessMedian {
    /// From one process's samples; `None` when they are too few for an interval.
    pub fn of(samples: &[f64]) -> Option<ProcessMedian> {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| v.is_finite()).collect();
        sorted.sort_by(f64::total_cmp);
        let ci95 = percentile_ci95(&sorted, 50.0)?;
        Some(ProcessMedian {
            median: median(&sorted),
            ci95,
        })
    }
}

/// Two modes: which processes fell in each and each mode's median.
#[derive(Debug, Clone, PartialEq)]
pub struct TwoModes {
    /// Indexes (into the input) of the processes of the lower mode.
    pub low: Vec<usize>,
    /// Indexes of the processes of the upper mode.
    pub high: Vec<usize>,
    /// The median of the lower mode's processes' medians.
    pub low_median: f64,
    /// The median of the upper mode's.
    pub high_median: f64,
}

/// Processes in each mode, at least: one process unlike the others is an outlier, not a mode.
pub const MIN_PER_MODE: usize = 2;

/// The two modes of `processes`, if they fall into two. Sorted by median, they are cut at the
/// widest gap between neighbours; it is two modes when each side holds at least
/// [`MIN_PER_MODE`] processes, no interval of the lower side reaches one of the upper (the
/// processes differ beyond their own sampling), and the gap is at least twice the wider
/// side's spread of medians (two tight groups, not processes spread along a range).
pub fn two_modes(processes: &[ProcessMedian]) -> Option<TwoModes> {
    if processes.len() < 2 * MIN_PER_MODE {
        return None;
    }
    let mut order: Vec<usize> = (0..processes.len()).collect();
    order.sort_by(|&a, &b| processes[a].median.total_cmp(&processes[b].median));
    let m = |i: usize| processes[order[i]].median;
    let cut = (MIN_PER_MODE..=processes.len() - MIN_PER_MODE)
        .max_by(|&a, &b| (m(a) - m(a - 1)).total_cmp(&(m(b) - m(b - 1))))?;
    let (low, high) = order.split_at(cut);
    let gap = m(cut) - m(cut - 1);
    let spread = |side: &[usize]| {
        let meds: Vec<f64> = side.iter().map(|&i| processes[i].median).collect();
        meds.iter().cloned().fold(f64::MIN, f64::max)
            - meds.iter().cloned().fold(f64::MAX, f64::min)
    };
    let low_top = low
        .iter()
        .map(|&i| processes[i].ci95[1])
        .fold(f64::MIN, f64::max);
    let high_bottom = high
        .iter()
        .map(|&i| processes[i].ci95[0])
        .fold(f64::MAX, f64::min);
    let separated = low_top < high_bottom;
    let tight = gap >= 2.0 * spread(low).max(spread(high));
    if !(separated && tight && gap > 0.0) {
        return None;
    }
    let mode_median = |side: &[usize]| {
        let v: Vec<f64> = side.iter().map(|&i| processes[i].median).collect();
        median(&v)
    };
    Some(TwoModes {
        low_median: mode_median(low),
        high_median: mode_median(high),
        low: low.to_vec(),
        high: high.to_vec(),
    })
}

/// Two modes among one case's samples: what each holds and its median.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleModes {
    /// Samples in the lower mode.
    pub low: usize,
    /// Samples in the upper mode.
    pub high: usize,
    /// The lower mode's median.
    pub low_median: f64,
    /// The upper mode's median.
    pub high_median: f64,
}

/// Fewest samples the test reads: fewer leave a density with bumps of chance.
pub const MIN_SAMPLES_FOR_MODES: usize = 30;
/// Least share of the samples each mode holds: a tail of a few slow samples is not a mode.
const MIN_MODE_SHARE: f64 = 0.15;
/// Highest the valley between two modes may reach, as a share of the lower peak's density.
const MAX_VALLEY: f64 = 0.5;
/// Least distance between the modes' medians, relative to the lower: a split of 1 % means
/// nothing to a reader of the figure.
const MIN_SEPARATION: f64 = 0.05;

/// The two modes of one case's samples, if they fall into two: a cost that switches between
/// two levels within a process's life (on a virtual machine, from one sample to the next)
/// leaves both in one process's samples, which no test of per-process medians sees.
/// The samples' density is estimated with a Gaussian kernel of Silverman's bandwidth (0.9 ×
/// min(sd, IQR / 1.34) × n^-1/5, which smooths a normal law's samples into one peak); two
/// modes when a second peak stands beside the highest with a valley between them no higher
/// than half the lower peak, each side of the valley holds at least 15 % of the samples, and
/// the two sides' medians differ by at least 5 %.
pub fn sample_modes(samples: &[f64]) -> Option<SampleModes> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    let n = v.len();
    if n < MIN_SAMPLES_FOR_MODES {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / n as f64;
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    let q = |p: f64| crate::order::percentile(&v, p);
    let iqr = q(75.0) - q(25.0);
    let spread = if iqr > 0.0 { sd.min(iqr / 1.34) } else { sd };
    let h = 0.9 * spread * (n as f64).powf(-0.2);
    if h <= 0.0 || !h.is_finite() {
        return None;
    }
    const GRID: usize = 256;
    let (lo, hi) = (v[0], v[n - 1]);
    let at = |i: usize| lo + (hi - lo) * i as f64 / (GRID - 1) as f64;
    let density: Vec<f64> = (0..GRID)
        .map(|i| {
            let x = at(i);
            v.iter()
                .map(|xi| (-0.5 * ((x - xi) / h).powi(2)).exp())
                .sum()
        })
        .collect();
    let top = (0..GRID).max_by(|&a, &b| density[a].total_cmp(&density[b]))?;
    let peaks = (1..GRID - 1)
        .filter(|&i| density[i] > density[i - 1] && density[i] >= density[i + 1])
        .chain([0, GRID - 1].into_iter().filter(|&i| {
            let next = if i == 0 { 1 } else { GRID - 2 };
            density[i] > density[next]
        }));
    // Each other peak with a low enough valley between it and the highest, the lowest
    // first: the first whose sides each hold a mode's share and differ enough.
    let mut valleys: Vec<(usize, f64)> = peaks
        .filter(|&p| p != top)
        .filter_map(|p| {
            let (a, b) = (p.min(top), p.max(top));
            let dip = (a..=b).min_by(|&x, &y| density[x].total_cmp(&density[y]))?;
            let depth = density[dip] / density[p];
            (depth <= MAX_VALLEY).then_some((dip, depth))
        })
        .collect();
    valleys.sort_by(|a, b| a.1.total_cmp(&b.1));
    let least = (MIN_MODE_SHARE * n as f64).ceil() as usize;
    valleys.into_iter().find_map(|(valley, _)| {
        let (low, high) = v.split_at(v.partition_point(|&x| x < at(valley)));
        if low.len() < least || high.len() < least {
            return None;
        }
        let (low_median, high_median) = (crate::order::median(low), crate::order::median(high));
        (high_median >= low_median * (1.0 + MIN_SEPARATION)).then_some(SampleModes {
            low: low.len(),
            high: high.len(),
            low_median,
            high_median,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(median: f64, half: f64) -> ProcessMedian {
        ProcessMedian {
            median,
            ci95: [median - half, median + half],
        }
    }

    #[test]
    fn three_processes_at_620_and_two_at_790_are_two_modes() {
        let procs = [
            p(621.0, 8.0),
            p(788.0, 9.0),
            p(615.0, 7.0),
            p(792.0, 8.0),
            p(624.0, 9.0),
        ];
        let m = two_modes(&procs).unwrap();
        assert_eq!(m.low, [2, 0, 4]);
        assert_eq!(m.high, [1, 3]);
        assert_eq!((m.low_median, m.high_median), (621.0, 790.0));
    }

    #[test]
    fn one_mode_a_spread_an_outlier_and_overlapping_intervals_are_not() {
        // All alike.
        assert!(two_modes(&[p(620.0, 8.0); 5]).is_none());
        // Spread evenly along a range: the widest gap is no wider than each side's spread.
        let even = [
            p(600.0, 5.0),
            p(640.0, 5.0),
            p(680.0, 5.0),
            p(720.0, 5.0),
            p(760.0, 5.0),
        ];
        assert!(two_modes(&even).is_none());
        // One process unlike four: an outlier.
        let one = [
            p(620.0, 5.0),
            p(622.0, 5.0),
            p(618.0, 5.0),
            p(621.0, 5.0),
            p(790.0, 5.0),
        ];
        assert!(two_modes(&one).is_none());
        // Two groups whose processes' own intervals overlap: sampling can explain them.
        let wide = [
            p(620.0, 90.0),
            p(625.0, 90.0),
            p(700.0, 90.0),
            p(705.0, 90.0),
        ];
        assert!(two_modes(&wide).is_none());
        // Too few processes to tell.
        assert!(two_modes(&[p(620.0, 1.0), p(790.0, 1.0), p(791.0, 1.0)]).is_none());
    }

    /// `n` values of a normal law of mean `m` and sd `sd`, at evenly spread quantiles (no
    /// randomness: a fixed fixture), by the logistic approximation of its inverse.
    fn normal(n: usize, m: f64, sd: f64) -> Vec<f64> {
        (0..n)
            .map(|i| {
                let p = (i as f64 + 0.5) / n as f64;
                m + sd * (p / (1.0 - p)).ln() * 3f64.sqrt() / std::f64::consts::PI
            })
            .collect()
    }

    #[test]
    fn samples_switching_between_625_and_775_ns_are_two_modes() {
        // As fault.anon-read read on a virtual machine: most samples at one of two levels, a
        // few between (a switch inside a sample).
        let mut v = normal(40, 625.0, 4.0);
        v.extend(normal(30, 775.0, 8.0));
        v.extend([660.0, 690.0, 705.0, 720.0, 740.0, 1100.0]);
        let m = sample_modes(&v).unwrap();
        assert!((m.low_median - 625.0).abs() < 10.0, "{m:?}");
        assert!((m.high_median - 775.0).abs() < 15.0, "{m:?}");
        assert_eq!(m.low + m.high, v.len());
        assert!(m.low >= 40 && m.high >= 30, "{m:?}");
    }

    #[test]
    fn one_level_a_spread_a_tail_and_a_small_split_are_not_two_modes() {
        assert!(sample_modes(&normal(88, 700.0, 30.0)).is_none());
        assert!(sample_modes(&normal(500, 700.0, 30.0)).is_none());
        let even: Vec<f64> = (0..88).map(|i| 600.0 + 2.0 * f64::from(i)).collect();
        assert!(sample_modes(&even).is_none());
        // A long right tail (a log-normal-like law): one mode.
        let skewed: Vec<f64> = normal(88, 0.0, 0.4)
            .iter()
            .map(|x| 600.0 * x.exp())
            .collect();
        assert!(sample_modes(&skewed).is_none());
        // A few slow samples far out: a tail, not a mode.
        let mut tail = normal(80, 625.0, 4.0);
        tail.extend([900.0; 8]);
        assert!(sample_modes(&tail).is_none());
        // Two tight levels 2 % apart: real, but no figure's reader needs them told apart.
        let mut close = normal(40, 625.0, 1.0);
        close.extend(normal(40, 637.0, 1.0));
        assert!(sample_modes(&close).is_none());
        // Too few samples.
        assert!(sample_modes(&[625.0, 775.0, 626.0, 776.0]).is_none());
    }

    #[test]
    fn a_process_median_carries_its_interval() {
        let samples: Vec<f64> = (1..=21).map(f64::from).collect();
        let pm = ProcessMedian::of(&samples).unwrap();
        assert_eq!(pm.median, 11.0);
        assert!(pm.ci95[0] < 11.0 && pm.ci95[1] > 11.0, "{pm:?}");
        assert!(ProcessMedian::of(&[1.0]).is_none());
    }
}
