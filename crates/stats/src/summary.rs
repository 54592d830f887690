//! Point summaries of one sample set.

use std::cmp::Ordering;

use crate::bootstrap::bootstrap_median_ci;
use crate::outliers::{tukey_outliers_sorted, Outliers};
use crate::{CONFIDENCE_95, DEFAULT_RESAMPLES, DEFAULT_SEED, NOISY_REL_HALF_WIDTH};

/// Everything a report needs about one sample set, computed in one place so
/// that every output format shows the same numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Number of samples, so readers can judge how much the rest is worth.
    pub n: usize,
    /// The headline figure: robust to the long right tail of timings.
    pub median: f64,
    /// Unscaled median absolute deviation from the median: a spread measure
    /// that outliers cannot inflate (multiply by 1.4826 to compare with σ).
    pub mad: f64,
    /// Smallest sample: the best the system managed.
    pub min: f64,
    /// Largest sample: shows how bad the tail got.
    pub max: f64,
    /// Arithmetic mean, kept for comparison with tools that report it.
    pub mean: f64,
    /// Sample standard deviation (n − 1 denominator), 0 when `n == 1`.
    pub stddev: f64,
    /// 5th percentile (linear interpolation, R type 7).
    pub p5: f64,
    /// 95th percentile (linear interpolation, R type 7).
    pub p95: f64,
    /// Bootstrap 95% confidence interval of the median (percentile method);
    /// always contains `median`.
    pub ci95: [f64; 2],
    /// Tukey fence counts; outliers are reported, never removed.
    pub outliers: Outliers,
    /// Whether the CI half-width exceeds [`NOISY_REL_HALF_WIDTH`] of |median|,
    /// so reports can warn instead of presenting an unstable figure as fact.
    pub noisy: bool,
}

/// Summarises with the default seed and resample count, so that repeated
/// runs on the same data report identical intervals.
///
/// Returns `None` for an empty slice or any non-finite value.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    summarize_with(samples, DEFAULT_RESAMPLES, DEFAULT_SEED)
}

/// Like [`summarize`] with an explicit bootstrap budget and seed, for tests
/// and for callers that trade precision of the CI against time.
///
/// Returns `None` for an empty slice or any non-finite value. With
/// `resamples == 0` the CI degenerates to `[median, median]`.
pub fn summarize_with(samples: &[f64], resamples: usize, seed: u64) -> Option<Summary> {
    if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let sorted = sorted_copy(samples);
    let n = sorted.len();
    let median = median_of_sorted(&sorted);
    // Summing in sorted order makes the mean independent of sample order.
    let mean = sorted.iter().sum::<f64>() / n as f64;
    let stddev = if n > 1 {
        let ss: f64 = sorted.iter().map(|x| (x - mean) * (x - mean)).sum();
        (ss / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let ci95 = bootstrap_median_ci(&sorted, resamples, CONFIDENCE_95, seed);
    let half_width = (ci95[1] - ci95[0]) / 2.0;
    Some(Summary {
        n,
        median,
        mad: mad(&sorted),
        min: sorted[0],
        max: sorted[n - 1],
        mean,
        stddev,
        p5: percentile(&sorted, 5.0),
        p95: percentile(&sorted, 95.0),
        ci95,
        outliers: tukey_outliers_sorted(&sorted),
        // Multiplying instead of dividing keeps a zero median well defined:
        // any spread around 0 is noisy, none is not.
        noisy: half_width > NOISY_REL_HALF_WIDTH * median.abs(),
    })
}

/// The medians of the first and of the second half of `samples`, in the order taken (the
/// middle one of an odd count goes to the second): whether a run drifted.
pub fn half_medians(samples: &[f64]) -> (f64, f64) {
    let half = samples.len() / 2;
    (median(&samples[..half]), median(&samples[half..]))
}

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

/// Unscaled median absolute deviation from the median: the spread measure
/// that matches the median, since a few wild samples cannot move it.
///
/// `NaN` for an empty slice.
pub fn mad(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let center = median(samples);
    let mut deviations: Vec<f64> = samples.iter().map(|x| (x - center).abs()).collect();
    median_in_place(&mut deviations)
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
