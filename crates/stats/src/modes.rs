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

    #[test]
    fn a_process_median_carries_its_interval() {
        let samples: Vec<f64> = (1..=21).map(f64::from).collect();
        let pm = ProcessMedian::of(&samples).unwrap();
        assert_eq!(pm.median, 11.0);
        assert!(pm.ci95[0] < 11.0 && pm.ci95[1] > 11.0, "{pm:?}");
        assert!(ProcessMedian::of(&[1.0]).is_none());
    }
}
