//! A row's verdict from its statistics, apart from how any renderer shows it.

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

/// What the statistics of one row say about it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Evidence {
    /// other / baseline.
    pub ratio: f64,
    /// The ratio's 95 % interval.
    pub ci: [f64; 2],
    /// The rank test's p-value; `None` for a figure without samples (a derived one), judged
    /// by its interval alone. With few samples it cannot come out below the bar at all (3
    /// against 3 never gets below 0.08): such a change then reads "too few samples to tell"
    /// because its interval reaches past the threshold.
    pub test: Option<f64>,
}

/// The verdict of a row against a noise threshold in percent.
///
/// Faster or slower needs the interval to exclude 1, the test to reject (when there is one)
/// and the change to exceed the threshold. "No difference" needs the data to say so: the whole
/// interval within the threshold. An interval that reaches past the threshold on either side,
/// without a change the test and the interval both confirm, reads "too few samples to tell":
/// a ×1.5 with an interval from 0.3 to 7 is never "no difference", however the test came out.
pub(crate) fn verdict(e: Evidence, threshold_pct: f64) -> Verdict {
    let t = threshold_pct / 100.0;
    let [lo, hi] = e.ci;
    let excludes_one = lo > 1.0 || hi < 1.0;
    let beyond_threshold = (e.ratio - 1.0).abs() > t;
    let significant = e.test.is_none_or(|p| p < P_SIGNIFICANT);
    let within_band = lo >= 1.0 - t && hi <= 1.0 + t;
    if excludes_one && beyond_threshold && significant {
        if e.ratio > 1.0 {
            Verdict::Slower
        } else {
            Verdict::Faster
        }
    } else if within_band {
        Verdict::NoDifference
    } else {
        Verdict::TooFewSamples
    }
}

/// The verdict of a row judged again on another interval (net of a control, widened by the
/// spread between runs): a measured case needs its adjusted rank test, and one whose test
/// could not run is never confirmed; a derived figure has no test and goes by its interval.
pub(crate) fn rejudged(
    ratio: f64,
    ci: [f64; 2],
    q: Option<f64>,
    measured_case: bool,
    threshold_pct: f64,
) -> Verdict {
    let test = measured_case.then(|| q.unwrap_or(1.0));
    verdict(Evidence { ratio, ci, test }, threshold_pct)
}

/// A figure's verdict net of the machine's control, held to its raw one: a change is called
/// only where both call it, in one direction. A control that moved is a few samples taken
/// beside the figures, not with them: a machine caught in a passing mode by the control alone
/// must not make a change of a figure that did not move, and a figure that moved with its
/// machine is not called. Where they disagree the call is dropped for the other's verdict
/// (opposite calls: too few samples to tell).
pub(crate) fn held_to_raw(raw: Verdict, net: Verdict) -> Verdict {
    let call = |v: Verdict| matches!(v, Verdict::Slower | Verdict::Faster);
    match (call(raw), call(net)) {
        (true, true) if raw == net => net,
        (true, true) => Verdict::TooFewSamples,
        (true, false) => net,
        (false, true) => raw,
        (false, false) => net,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oscost_stats::mann_whitney_p;

    fn case(ratio: f64, ci: [f64; 2], p: f64) -> Verdict {
        verdict(
            Evidence {
                ratio,
                ci,
                test: Some(p),
            },
            10.0,
        )
    }

    #[test]
    fn a_large_change_with_three_rounds_is_too_few_samples_never_no_difference() {
        // timeline.processes.n1 as reported: 2.35x, ratio CI 2.17-2.54, 3 rounds a side.
        let a = [1.00, 1.02, 0.98];
        let b = [2.35, 2.30, 2.40];
        let p = mann_whitney_p(&a, &b).unwrap();
        assert!(p >= P_SIGNIFICANT);
        assert_eq!(case(2.35, [2.17, 2.54], p), Verdict::TooFewSamples);
    }

    #[test]
    fn a_net_call_stands_only_where_the_raw_figure_makes_it_too() {
        use Verdict::*;
        assert_eq!(held_to_raw(Slower, Slower), Slower);
        assert_eq!(held_to_raw(Faster, Faster), Faster);
        // A figure that moved with its machine: the net verdict.
        assert_eq!(held_to_raw(Slower, NoDifference), NoDifference);
        assert_eq!(held_to_raw(Faster, TooFewSamples), TooFewSamples);
        // A control that moved alone: the raw verdict.
        assert_eq!(held_to_raw(TooFewSamples, Slower), TooFewSamples);
        assert_eq!(held_to_raw(NoDifference, Faster), NoDifference);
        assert_eq!(held_to_raw(Slower, Faster), TooFewSamples);
        assert_eq!(held_to_raw(NoDifference, TooFewSamples), TooFewSamples);
    }

    #[test]
    fn clear_changes_are_slower_or_faster() {
        assert_eq!(case(1.5, [1.4, 1.6], 0.001), Verdict::Slower);
        assert_eq!(case(0.5, [0.45, 0.55], 0.001), Verdict::Faster);
    }

    #[test]
    fn a_change_within_the_threshold_is_no_difference_even_when_significant() {
        assert_eq!(case(1.05, [1.04, 1.06], 0.001), Verdict::NoDifference);
        // Too few samples for the test, but the whole interval is within the threshold.
        assert_eq!(case(1.02, [0.97, 1.06], 0.2), Verdict::NoDifference);
    }

    #[test]
    fn an_interval_beyond_the_threshold_that_the_test_does_not_confirm_cannot_tell() {
        assert_eq!(case(1.5, [1.3, 1.7], 0.2), Verdict::TooFewSamples);
    }

    #[test]
    fn an_interval_reaching_past_the_threshold_is_never_no_difference() {
        // Enough samples for the test, which does not reject: the interval still says a
        // change of up to 20 % may be there.
        assert_eq!(case(1.04, [0.95, 1.2], 0.5), Verdict::TooFewSamples);
        // Every sample of one side scaled by exactly 1.5, few and spread samples: the
        // interval reaches past the threshold on both sides.
        assert_eq!(case(1.5, [0.31, 7.45], 0.3), Verdict::TooFewSamples);
        // A significant change smaller than the threshold, whose interval reaches past it.
        assert_eq!(case(1.05, [1.01, 1.2], 0.01), Verdict::TooFewSamples);
        // Within the threshold on one side only.
        assert_eq!(case(0.97, [0.85, 1.05], 0.4), Verdict::TooFewSamples);
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
        assert_eq!(d(1.3, [0.9, 1.8]), Verdict::TooFewSamples);
        assert_eq!(d(1.02, [0.93, 1.08]), Verdict::NoDifference);
    }
}
