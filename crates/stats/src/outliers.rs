//! Tukey fence classification.

use crate::order::{percentile, sorted_copy};

/// Tukey fence counts (1.5 IQR mild, 3 IQR severe); outliers are counted and
/// kept, never removed, because on a busy system the tail is part of the cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outliers {
    /// Below Q1 − 3·IQR.
    pub low_severe: usize,
    /// Between Q1 − 3·IQR and Q1 − 1.5·IQR.
    pub low_mild: usize,
    /// Between Q3 + 1.5·IQR and Q3 + 3·IQR.
    pub high_mild: usize,
    /// Above Q3 + 3·IQR.
    pub high_severe: usize,
}

impl Outliers {
    /// All four classes together, for a one-line "n outliers" remark.
    pub fn total(&self) -> usize {
        self.low_severe + self.low_mild + self.high_mild + self.high_severe
    }
}

/// Counts samples beyond Tukey's fences, with quartiles computed like
/// [`percentile`] so that the fences agree with the reported percentiles.
///
/// A value exactly on a fence is not an outlier. Empty input gives zero counts.
pub fn tukey_outliers(samples: &[f64]) -> Outliers {
    tukey_outliers_sorted(&sorted_copy(samples))
}

pub(crate) fn tukey_outliers_sorted(sorted: &[f64]) -> Outliers {
    let mut counts = Outliers::default();
    if sorted.is_empty() {
        return counts;
    }
    let q1 = percentile(sorted, 25.0);
    let q3 = percentile(sorted, 75.0);
    let iqr = q3 - q1;
    let (low_severe, low_mild) = (q1 - 3.0 * iqr, q1 - 1.5 * iqr);
    let (high_mild, high_severe) = (q3 + 1.5 * iqr, q3 + 3.0 * iqr);
    for &x in sorted {
        if x < low_severe {
            counts.low_severe += 1;
        } else if x < low_mild {
            counts.low_mild += 1;
        } else if x > high_severe {
            counts.high_severe += 1;
        } else if x > high_mild {
            counts.high_mild += 1;
        }
    }
    counts
}
