//! A row's verdict from its statistics, apart from how any renderer shows it.

use oscost_stats::mann_whitney_p;
use serde::Serialize;

/// Below this Mann-Whitney p-value the two sides' samples differ.
pub(crate) const P_SIGNIFICANT: f64 = 0.05;

/// What a row's statistics say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Slower than the baseline beyond noise.
    Slower,
    /// Faster than the baseline beyond noise.
    Faster,
    /// No difference beyond noise.
    NoDifference,
    /// The samples cannot decide: the rank test cannot reach significance with this many
    /// samples, or the ratio's interval and the test disagree. Never "no difference".
    TooFewSamples,
    /// The two figures cannot be set against each other (no ratio).
    NotComparable,
    /// One side is a published figure, not measured here: a ratio, no verdict.
    NotMeasuredHere,
}

impl Verdict {
    /// The verdict in words, as every renderer shows it.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Slower => "slower",
            Verdict::Faster => "faster",
            Verdict::NoDifference => "no difference",
            Verdict::TooFewSamples => "too few samples to tell",
            Verdict::NotComparable => "not comparable",
            Verdict::NotMeasuredHere => "not measured here",
        }
    }
}

/// Whether the rank test can reach p < [`P_SIGNIFICANT`] at all with `a` and `b` samples: the
/// p-value of two samples that do not overlap at all is the smallest it can give (3 against 3
/// never gets below 0.08).
pub(crate) fn test_can_decide(a: usize, b: usize) -> bool {
    let low: Vec<f64> = (0..a).map(|i| i as f64).collect();
    let high: Vec<f64> = (a..a + b).map(|i| i as f64).collect();
    mann_whitney_p(&low, &high).is_some_and(|p| p < P_SIGNIFICANT)
}

/// What the statistics of one row say about it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Evidence {
    /// other / baseline.
    pub ratio: f64,
    /// The ratio's 95 % interval.
    pub ci: [f64; 2],
    /// The rank test's p-value and whether it could have come out below the bar at these
    /// sample sizes; `None` for a figure without samples (a derived one), judged by its
    /// interval alone.
    pub test: Option<(f64, bool)>,
}

/// The verdict of a row against a noise threshold in percent.
///
/// Faster or slower needs the interval to exclude 1, the test to reject (when there is one)
/// and the change to exceed the threshold. "No difference" needs the data to be able to say
/// so: a test that could not have decided, or an interval that lies beyond the threshold,
/// reads "too few samples to tell", unless the whole interval lies within the threshold.
pub(crate) fn verdict(e: Evidence, threshold_pct: f64) -> Verdict {
    let t = threshold_pct / 100.0;
    let [lo, hi] = e.ci;
    let excludes_one = lo > 1.0 || hi < 1.0;
    let beyond_threshold = (e.ratio - 1.0).abs() > t;
    let significant = e.test.is_none_or(|(p, _)| p < P_SIGNIFICANT);
    let could_decide = e.test.is_none_or(|(_, can)| can);
    let within_band = lo >= 1.0 - t && hi <= 1.0 + t;
    let beyond_band = lo > 1.0 + t || hi < 1.0 - t;
    if excludes_one && beyond_threshold && significant {
        if e.ratio > 1.0 {
            Verdict::Slower
        } else {
            Verdict::Faster
        }
    } else if beyond_band || (!could_decide && !within_band) {
        Verdict::TooFewSamples
    } else {
        Verdict::NoDifference
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(ratio: f64, ci: [f64; 2], p: f64, can: bool) -> Verdict {
        verdict(
            Evidence {
                ratio,
                ci,
                test: Some((p, can)),
            },
            10.0,
        )
    }

    #[test]
    fn three_rounds_a_side_cannot_reach_significance_four_can() {
        assert!(!test_can_decide(3, 3));
        assert!(test_can_decide(4, 4));
        assert!(test_can_decide(30, 30));
        assert!(!test_can_decide(0, 30));
    }

    #[test]
    fn a_large_change_with_three_rounds_is_too_few_samples_never_no_difference() {
        // timeline.processes.n1 as reported: 2.35x, ratio CI 2.17-2.54, 3 rounds a side.
        let a = [1.00, 1.02, 0.98];
        let b = [2.35, 2.30, 2.40];
        let p = mann_whitney_p(&a, &b).unwrap();
        assert!(p >= P_SIGNIFICANT);
        assert_eq!(
            case(2.35, [2.17, 2.54], p, test_can_decide(3, 3)),
            Verdict::TooFewSamples
        );
    }

    #[test]
    fn clear_changes_are_slower_or_faster() {
        assert_eq!(case(1.5, [1.4, 1.6], 0.001, true), Verdict::Slower);
        assert_eq!(case(0.5, [0.45, 0.55], 0.001, true), Verdict::Faster);
    }

    #[test]
    fn a_change_within_the_threshold_is_no_difference_even_when_significant() {
        assert_eq!(case(1.05, [1.04, 1.06], 0.001, true), Verdict::NoDifference);
        // Too few samples for the test, but the whole interval is within the threshold.
        assert_eq!(case(1.02, [0.97, 1.06], 0.2, false), Verdict::NoDifference);
    }

    #[test]
    fn an_interval_beyond_the_threshold_that_the_test_does_not_confirm_cannot_tell() {
        assert_eq!(case(1.5, [1.3, 1.7], 0.2, true), Verdict::TooFewSamples);
    }

    #[test]
    fn too_few_samples_and_an_interval_reaching_past_the_threshold_cannot_tell() {
        assert_eq!(case(1.04, [0.95, 1.2], 0.5, false), Verdict::TooFewSamples);
    }

    #[test]
    fn an_undecided_test_with_enough_samples_is_no_difference() {
        assert_eq!(case(1.04, [0.95, 1.2], 0.5, true), Verdict::NoDifference);
    }

    #[test]
    fn a_derived_figure_is_judged_by_its_interval() {
        let d = |ratio, ci| {
            verdict(
                Evidence {
                    ratio,
                    ci,
                    test: None,
                },
                10.0,
            )
        };
        assert_eq!(d(1.3, [1.2, 1.4]), Verdict::Slower);
        assert_eq!(d(1.0, [0.95, 1.05]), Verdict::NoDifference);
        assert_eq!(d(1.3, [0.9, 1.8]), Verdict::NoDifference);
    }
}
