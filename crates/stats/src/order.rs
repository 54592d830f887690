//! Orderings of samples: the median and percentiles, with the sorting and selecting helpers
//! every summary, bootstrap and outlier test shares (so each computes "the middle" alike).

use std::cmp::Ordering;

/// Median of unsorted samples (mean of the two middle values for even
/// counts); `NaN` for an empty slice so that callers cannot mistake it for a
/// measurement.
pub fn median(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut buf = samples.to_vec();
    median_in_place(&mut buf)
}

/// Percentile `p` (0–100) of already sorted data, interpolating linearly
/// between the closest ranks (R type 7, numpy's default) so that figures match
/// what users get from their own tools.
///
/// `p` outside 0–100 is clamped; `NaN` for an empty slice or a `NaN` `p`.
/// Sorting is the caller's job because summaries ask for several percentiles
/// of the same data.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() || p.is_nan() {
        return f64::NAN;
    }
    let rank = (sorted.len() - 1) as f64 * (p.clamp(0.0, 100.0) / 100.0);
    let lo = rank.floor() as usize;
    let frac = rank - lo as f64;
    if frac == 0.0 || lo + 1 >= sorted.len() {
        return sorted[lo.min(sorted.len() - 1)];
    }
    sorted[lo] + frac * (sorted[lo + 1] - sorted[lo])
}

/// A distribution-free 95 % interval of percentile `p` (0–100) of sorted data: the order
/// statistics whose ranks bracket `n·p` by 1.96 binomial standard deviations (the normal
/// approximation of the binomial law of how many samples fall below the true percentile).
/// `None` when the samples are too few for both ends to exist (a p99.9 of 250 samples).
pub fn percentile_ci95(sorted: &[f64], p: f64) -> Option<[f64; 2]> {
    let n = sorted.len() as f64;
    let q = p.clamp(0.0, 100.0) / 100.0;
    let half = 1.96 * (n * q * (1.0 - q)).sqrt();
    let lo = (n * q - half).floor();
    let hi = (n * q + half).ceil();
    if n == 0.0 || half == 0.0 || lo < 0.0 || hi >= n {
        return None;
    }
    Some([sorted[lo as usize], sorted[hi as usize]])
}

/// Total order on floats so that sorting never panics; callers that need
/// meaningful answers reject non-finite input first.
pub(crate) fn cmp_f64(a: &f64, b: &f64) -> Ordering {
    a.total_cmp(b)
}

pub(crate) fn sorted_copy(samples: &[f64]) -> Vec<f64> {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable_by(cmp_f64);
    sorted
}

/// The one formula for "between the two middle values", shared by the
/// sorting and selecting paths so they agree to the last bit. Halving each
/// term first cannot overflow for finite input.
fn middle(lower: f64, upper: f64) -> f64 {
    0.5 * lower + 0.5 * upper
}

pub(crate) fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        middle(sorted[n / 2 - 1], sorted[n / 2])
    }
}

/// Median by selection, O(n) instead of a full sort, because the bootstrap
/// takes thousands of medians. Reorders `buf`. The result depends only on
/// the multiset of values, never on how the selection algorithm permutes
/// them, which keeps it deterministic across std versions.
pub(crate) fn median_in_place(buf: &mut [f64]) -> f64 {
    let n = buf.len();
    if n == 0 {
        return f64::NAN;
    }
    let k = n / 2;
    let (below, &mut upper, _) = buf.select_nth_unstable_by(k, cmp_f64);
    if n % 2 == 1 {
        upper
    } else {
        // After selection the lower middle value is the largest of those
        // placed before position k.
        let lower = below
            .iter()
            .copied()
            .max_by(cmp_f64)
            .expect("even n >= 2 leaves at least one value below the middle");
        middle(lower, upper)
    }
}

#[cfg(test)]
mod ci_tests {
    use super::*;

    #[test]
    fn a_percentile_interval_brackets_it_and_needs_samples_beyond_it() {
        let v: Vec<f64> = (0..1000).map(f64::from).collect();
        let [lo, hi] = percentile_ci95(&v, 50.0).unwrap();
        // n·q = 500 ± 1.96·15.8 = 31.
        assert_eq!((lo, hi), (469.0, 531.0));
        let [lo, hi] = percentile_ci95(&v, 99.0).unwrap();
        assert!(lo < 990.0 && hi > 990.0 && hi <= 999.0);
        assert_eq!(percentile_ci95(&v, 99.9), None);
        assert_eq!(percentile_ci95(&[], 50.0), None);
    }
}
