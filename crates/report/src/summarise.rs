//! Turns an experiment's raw output into summarised results.

use oscost_model::schema::{AtRate, CaseResult, DerivedResult, ExperimentResult, UnavailableCase};
use oscost_model::RunLoad;
use oscost_model::{Case, ExperimentOutput};
use oscost_stats::{combine_medians, summarize, DEFAULT_RESAMPLES, DEFAULT_SEED};

/// Summarises one experiment. `ns_per_tick` converts ns figures to counter ticks.
pub fn experiment(
    name: &str,
    out: ExperimentOutput,
    ns_per_tick: f64,
    load: Option<RunLoad>,
) -> ExperimentResult {
    let rate = out.params.get("rate_per_s").and_then(|v| v.as_f64());
    let cases: Vec<CaseResult> = out
        .cases
        .iter()
        .filter_map(|c| case(c, ns_per_tick, rate))
        .collect();
    let mut warnings = out.warnings;
    for c in &out.cases {
        if c.samples.per_op_ns.is_empty() {
            warnings.push(format!("{}: no samples were taken", c.id));
        }
    }
    let derived = out
        .derived
        .iter()
        .filter_map(|d| {
            let terms: Option<Vec<(&[f64], f64)>> = d
                .terms
                .iter()
                .map(|(id, coef)| {
                    out.cases
                        .iter()
                        .find(|c| &c.id == id)
                        .map(|c| (c.samples.per_op_ns.as_slice(), *coef))
                })
                .collect();
            let Some(terms) = terms else {
                warnings.push(format!("{}: a term's case is missing, not derived", d.id));
                return None;
            };
            let Some(comb) = combine_medians(&terms, DEFAULT_RESAMPLES, DEFAULT_SEED) else {
                warnings.push(format!(
                    "{}: a term has no usable samples, not derived",
                    d.id
                ));
                return None;
            };
            // A figure is only as good as its worst term: any term whose mechanism check
            // failed flags it, whatever the experiment said.
            let failed: Vec<&str> = d
                .terms
                .iter()
                .filter_map(|(id, _)| out.cases.iter().find(|c| &c.id == id))
                .filter(|c| c.checks.iter().any(|k| !k.passed))
                .map(|c| c.id.as_str())
                .collect();
            let flagged = d.flagged.clone().or_else(|| {
                (!failed.is_empty())
                    .then(|| format!("failed its mechanism check: {}", failed.join(", ")))
            });
            Some(DerivedResult {
                id: d.id.clone(),
                description: d.description.clone(),
                terms: d.terms.clone(),
                estimate_ns: comb.estimate,
                ci95_ns: comb.ci95,
                estimate_cycles: comb.estimate / ns_per_tick,
                flagged,
            })
        })
        .collect();
    if let Some(load) = &load {
        warnings.extend(load.warnings.iter().cloned());
    }
    ExperimentResult {
        name: name.into(),
        params: out.params,
        cases,
        unavailable: out
            .unavailable
            .into_iter()
            .map(|u| UnavailableCase {
                id: u.id,
                description: u.description,
                reason: u.reason,
            })
            .collect(),
        derived,
        warnings,
        load,
    }
}

/// Summarises one case; `None` when it has no usable samples.
pub fn case(c: &Case, ns_per_tick: f64, rate: Option<f64>) -> Option<CaseResult> {
    let s = summarize(&c.samples.per_op_ns)?;
    let to_ticks = |ns: f64| ns / ns_per_tick;
    let at_rate = rate.map(|r| AtRate {
        ops_per_s: r,
        ns_per_s: s.median * r,
        share_pct: s.median * r / 1e9 * 100.0,
    });
    let mut warnings = c.warnings.clone();
    if let Some(a) = at_rate.as_ref().filter(|a| a.share_pct > 100.0) {
        warnings.push(rate_warning(a.ops_per_s, s.median));
    }
    Some(CaseResult {
        id: c.id.clone(),
        description: c.description.clone(),
        unit: c.unit.clone(),
        params: c.params.clone(),
        samples: s.n,
        iterations_per_sample: c.samples.iterations_per_sample,
        loop_overhead_ns: c.samples.loop_overhead_ns,
        median_ns: s.median,
        mad_ns: s.mad,
        min_ns: s.min,
        max_ns: s.max,
        mean_ns: s.mean,
        stddev_ns: s.stddev,
        p5_ns: s.p5,
        p95_ns: s.p95,
        ci95_ns: s.ci95,
        median_cycles: to_ticks(s.median),
        ci95_cycles: [to_ticks(s.ci95[0]), to_ticks(s.ci95[1])],
        outliers: oscost_model::schema::Outliers {
            low_severe: s.outliers.low_severe,
            low_mild: s.outliers.low_mild,
            high_mild: s.outliers.high_mild,
            high_severe: s.outliers.high_severe,
        },
        noisy: s.noisy,
        checks_passed: c.checks.iter().all(|k| k.passed),
        checks: c.checks.clone(),
        counters: c.counters.clone(),
        at_rate,
        warnings,
        series: c.series.clone(),
        raw_ns: c.samples.per_op_ns.clone(),
    })
}

/// Why a share at `rate` above 100 % of a second cannot be true: back to back, a call of
/// `median_ns` fits only so many times into a second.
fn rate_warning(rate: f64, median_ns: f64) -> String {
    format!(
        "the call cannot run {} times a second here: at most {}, one after another (its share \
         at that rate, {:.0} % of a second, is not a real figure)",
        whole(rate),
        whole((1e9 / median_ns).floor()),
        median_ns * rate / 1e9 * 100.0
    )
}

/// A count as a whole number when it is one (`10000`, not `1e4`).
fn whole(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e18 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oscost_model::{Check, DerivedSpec, Samples};

    fn case(id: &str, ns: &[f64], passed: bool) -> Case {
        let mut c = Case::new(
            id,
            "test",
            "op",
            Samples {
                per_op_ns: ns.to_vec(),
                per_op_ticks: ns.to_vec(),
                iterations_per_sample: 1,
                loop_overhead_ns: 0.0,
            },
        );
        c.checks.push(Check::near(
            "switches",
            2.0,
            if passed { 2.0 } else { 0.5 },
            0.1,
            "",
        ));
        c
    }

    fn output(control_passes: bool) -> ExperimentOutput {
        ExperimentOutput {
            cases: vec![
                case("rt", &[10.0, 11.0, 12.0], true),
                case("control", &[1.0, 1.0, 1.0], control_passes),
            ],
            derived: vec![DerivedSpec {
                id: "cost".into(),
                description: "half a round trip minus the control".into(),
                terms: vec![("rt".into(), 0.5), ("control".into(), -1.0)],
                flagged: None,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_share_over_a_whole_second_is_flagged() {
        let out = ExperimentOutput {
            cases: vec![
                case("slow", &[85.56, 85.56, 85.56], true),
                case("fast", &[0.5, 0.5, 0.5], true),
            ],
            params: [("rate_per_s".to_owned(), serde_json::json!(1e9))]
                .into_iter()
                .collect(),
            ..Default::default()
        };
        let r = experiment("syscall", out, 1.0, None);
        let slow = &r.cases[0];
        assert!(slow.at_rate.as_ref().unwrap().share_pct > 8555.0);
        assert_eq!(
            slow.warnings,
            [
                "the call cannot run 1000000000 times a second here: at most 11687704, one after \
              another (its share at that rate, 8556 % of a second, is not a real figure)"
            ]
        );
        // Half a second's share is possible: no warning.
        assert_eq!(r.cases[1].at_rate.as_ref().unwrap().share_pct, 50.0);
        assert!(r.cases[1].warnings.is_empty());
        // The terminal table notes it and says it under the table.
        let text =
            crate::render::terminal_with(&r, "ref-cycles", None, crate::render::Warnings::Summary);
        assert!(
            text.contains("the call cannot run 1000000000 times a second here"),
            "{text}"
        );
    }

    #[test]
    fn derived_figure_combines_medians() {
        let r = experiment("t", output(true), 1.0, None);
        let d = &r.derived[0];
        assert!((d.estimate_ns - (0.5 * 11.0 - 1.0)).abs() < 1e-9);
        assert!(d.ci95_ns[0] <= d.estimate_ns && d.estimate_ns <= d.ci95_ns[1]);
        assert_eq!(d.flagged, None);
    }

    #[test]
    fn a_failed_term_flags_the_derived_figure() {
        let r = experiment("t", output(false), 1.0, None);
        let flag = r.derived[0].flagged.as_deref().unwrap();
        assert!(flag.contains("control"), "{flag}");
        assert!(!r.cases[1].checks_passed);
    }

    #[test]
    fn cycles_follow_the_tick_length() {
        let r = experiment("t", output(true), 0.5, None);
        assert!((r.cases[0].median_cycles - 22.0).abs() < 1e-9);
    }
}
