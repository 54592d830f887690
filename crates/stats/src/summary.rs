//! Point summaries of one sample set.

use crate::bootstrap::bootstrap_median_ci;
use crate::order::{median, percentile};
use crate::order::{median_in_place, median_of_sorted, sorted_copy};
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
