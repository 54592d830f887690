//! Turns an experiment's raw output into summarised results.

use crate::format::fmt_ns;
use oscost_model::schema::{AtRate, CaseResult, DerivedResult, ExperimentResult, UnavailableCase};
use oscost_model::RunLoad;
use oscost_model::{Case, ExperimentOutput, Message, MessageKind};
use oscost_stats::{combine_medians, summarize, DEFAULT_RESAMPLES, DEFAULT_SEED};

/// The warning a figure whose 95 % interval is wider than ±5 % of its median carries: the
/// half-width and what its samples showed (see [`oscost_stats::cause::wide_ci_cause`]).
pub fn wide_ci_warning(samples: &[f64], median: f64, ci95: [f64; 2]) -> Option<Message> {
    let cause = oscost_stats::cause::wide_ci_cause(samples)?;
    let half = (ci95[1] - ci95[0]) / 2.0 / median.abs().max(f64::MIN_POSITIVE) * 100.0;
    Some(wide_ci(half, cause))
}

/// A wide-interval warning: the interval's half-width, % of the figure, and its cause.
fn wide_ci(half_pct: f64, cause: impl std::fmt::Display) -> Message {
    Message::new(
        MessageKind::WideInterval,
        format!(": CI ±{half_pct:.1} %: {cause}"),
    )
}

/// The warning a derived figure whose 95 % interval is wider than ±5 % of its estimate
/// carries, with the cause read from its terms: a difference much smaller than the figures it
/// is taken from magnifies their own spread (a 1 % difference of two figures each known to
/// ±0.2 % is known only to about ±30 %); otherwise the term whose own interval is widest.
fn wide_derived_warning(
    terms: &[(String, f64)],
    cases: &[CaseResult],
    estimate: f64,
    ci95: [f64; 2],
) -> Option<Message> {
    let half = (ci95[1] - ci95[0]) / 2.0 / estimate.abs().max(f64::MIN_POSITIVE) * 100.0;
    // Not finite (an estimate of zero, say) counts as not wide: there is no share to name.
    if !half.is_finite() || half <= oscost_stats::NOISY_REL_HALF_WIDTH * 100.0 {
        return None;
    }
    let found: Vec<(&CaseResult, f64)> = terms
        .iter()
        .filter_map(|(id, coef)| cases.iter().find(|c| &c.id == id).map(|c| (c, *coef)))
        .collect();
    let own = |c: &CaseResult| (c.ci95_ns[1] - c.ci95_ns[0]) / 2.0 / c.median_ns.abs() * 100.0;
    let largest = found.iter().max_by(|a, b| {
        (a.0.median_ns * a.1)
            .abs()
            .total_cmp(&(b.0.median_ns * b.1).abs())
    })?;
    let size = (largest.0.median_ns * largest.1).abs();
    let share = estimate.abs() / size * 100.0;
    let cause = if found.len() > 1 && share < 25.0 {
        format!(
            "terms nearly cancel: what is left is {share:.1} % of {} ({} ±{:.1} %)",
            largest.0.id,
            crate::format::fmt_ns(largest.0.median_ns),
            own(largest.0)
        )
    } else {
        let widest = found.iter().max_by(|a, b| own(a.0).total_cmp(&own(b.0)))?;
        format!("a term is wide: {} (±{:.1} %)", widest.0.id, own(widest.0))
    };
    Some(wide_ci(half, cause))
}

/// Summarises one experiment. `ns_per_tick` converts ns figures to counter ticks.
pub fn experiment(
    name: &str,
    out: ExperimentOutput,
    ns_per_tick: f64,
    load: Option<RunLoad>,
) -> ExperimentResult {
    let rate = out.params.get("rate_per_s").and_then(|v| v.as_f64());
    let mut cases: Vec<CaseResult> = out
        .cases
        .iter()
        .filter_map(|c| case(c, ns_per_tick, rate))
        .collect();
    let (mut warnings, mut notes) = (out.warnings, out.notes);
    for c in &out.cases {
        if c.samples.per_op_ns.is_empty() {
            warnings.push(format!("{}: no samples were taken", c.id).into());
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
                warnings.push(format!("{}: a term's case is missing, not derived", d.id).into());
                return None;
            };
            let Some(comb) = combine_medians(&terms, DEFAULT_RESAMPLES, DEFAULT_SEED) else {
                warnings
                    .push(format!("{}: a term has no usable samples, not derived", d.id).into());
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
                warnings: wide_derived_warning(&d.terms, &cases, comb.estimate, comb.ci95)
                    .into_iter()
                    .collect(),
            })
        })
        .collect();
    if let Some(load) = &load {
        warnings.extend(load.warnings.iter().map(|w| Message::from(w.as_str())));
        // The machine's load is what a wide interval is most often traced to: say it beside
        // each wide figure, since the experiment's own line may be far from the table.
        if let Some(seen) = load_seen(load) {
            for c in cases.iter_mut().filter(|c| c.noisy) {
                let mut wide = c.warnings.iter_mut();
                if let Some(w) = wide.find(|w| w.kind() == MessageKind::WideInterval) {
                    w.push_str(&format!("; {seen}"));
                }
            }
        }
    }
    notes.dedup();
    if let Some(w) = out.controls.as_ref().and_then(machine_changed) {
        warnings.push(w.into());
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
        notes,
        load,
        controls: out.controls,
    }
}

/// Above this change of a control's median between the burst before an experiment and the
/// burst after it, the machine changed while the experiment ran ...
const CONTROL_CHANGE: f64 = 0.10;
/// ... when the rank test agrees this strongly that the two bursts differ.
const CONTROL_P: f64 = 0.001;

/// The warning that the machine itself changed while the experiment ran: one of its controls
/// read differently before it and after it.
fn machine_changed(c: &oscost_model::MachineControls) -> Option<String> {
    let seen: Vec<String> = oscost_model::ControlKind::ALL
        .iter()
        .filter_map(|&k| {
            let v = c.samples(k);
            let (before, after) = v.split_at(v.len() / 2);
            let (b, a) = (oscost_stats::median(before), oscost_stats::median(after));
            let p = oscost_stats::mann_whitney_p(before, after)?;
            ((a / b - 1.0).abs() > CONTROL_CHANGE && p < CONTROL_P)
                .then(|| format!("{} {} → {}", k.what(), fmt_ns(b), fmt_ns(a)))
        })
        .collect();
    (!seen.is_empty()).then(|| {
        format!(
            "the machine's own speed changed while this experiment ran ({}, before it → after \
             it): its figures mix the two",
            seen.join("; ")
        )
    })
}

/// What of an experiment's load could widen its intervals: other programs' CPU time above
/// the quiet threshold (2 % of the CPUs) and steal above 1 % of them, in words; `None` when
/// neither was seen.
fn load_seen(load: &RunLoad) -> Option<String> {
    let mut seen = Vec::new();
    if load.foreign_cpu_share > 0.02 {
        seen.push(format!(
            "other programs used {:.0} % of the CPUs",
            load.foreign_cpu_share * 100.0
        ));
    }
    let capacity = load.wall_s * load.cpus_online.max(1) as f64;
    if let Some(steal) = load
        .steal_s
        .filter(|&s| capacity > 0.0 && s > 0.01 * capacity)
    {
        seen.push(format!(
            "the hypervisor took {:.0} % of them (steal)",
            steal / capacity * 100.0
        ));
    }
    (!seen.is_empty()).then(|| format!("{} during the experiment", seen.join(" and ")))
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
    let mut notes = c.notes.clone();
    // Context, not a problem: the share at that rate is simply not a real figure.
    if let Some(a) = at_rate.as_ref().filter(|a| a.share_pct > 100.0) {
        notes.push(rate_warning(a.ops_per_s, s.median).into());
    }
    if s.noisy {
        warnings.extend(wide_ci_warning(&c.samples.per_op_ns, s.median, s.ci95));
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
        notes,
        series: c.series.clone(),
        raw_ns: c.samples.per_op_ns.clone(),
        trace: c.trace.clone(),
        control: c.control,
        process_medians_ns: c.process_medians_ns.clone(),
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

    #[test]
    fn warnings_and_notes_stay_where_the_measuring_layer_put_them() {
        let mut c = case("c", &[5.0; 20], true);
        c.warnings = vec![
            Message::new(
                MessageKind::TimeBudget,
                "300 ms reached: 9 of 15 samples taken",
            ),
            "12 trace records were lost".into(),
        ];
        c.notes = vec![
            "a period was left out".into(),
            Message::new(MessageKind::ShortOperation, "1.0 ns overlaps the loop"),
        ];
        let out = ExperimentOutput {
            cases: vec![c],
            warnings: vec!["a scripted warning".into()],
            notes: vec![Message::new(MessageKind::NoSharePredicted, ": 2 CPUs")],
            ..Default::default()
        };
        let r = experiment("x", out.clone(), 1.0, None);
        assert_eq!(r.warnings, out.warnings);
        assert_eq!(r.notes, out.notes);
        assert_eq!(r.cases[0].warnings, out.cases[0].warnings);
        assert_eq!(r.cases[0].notes, out.cases[0].notes);
        assert_eq!(r.cases[0].notes[1].kind(), MessageKind::ShortOperation);
    }

    #[test]
    fn controls_that_moved_during_the_experiment_are_a_warning_and_steady_ones_are_not() {
        let bursts = |before: f64, after: f64| oscost_model::MachineControls {
            kernel_entry_ns: (0..24)
                .map(|i| if i < 12 { before } else { after } + f64::from(i % 5))
                .collect(),
            user_loop_ns: (0..24).map(|i| 40_000.0 + f64::from(i % 7)).collect(),
            ..Default::default()
        };
        let with = |c| ExperimentOutput {
            controls: Some(c),
            ..Default::default()
        };
        let moved = experiment("x", with(bursts(108.0, 91.0)), 1.0, None);
        assert_eq!(moved.warnings.len(), 1, "{:?}", moved.warnings);
        let w = moved.warnings[0].to_string();
        assert!(w.contains("syscall(-1) 109.5 ns → 93.00 ns"), "{w}");
        assert!(!w.contains("user-space loop"), "{w}");
        let steady = experiment("x", with(bursts(100.0, 101.0)), 1.0, None);
        assert!(steady.warnings.is_empty(), "{:?}", steady.warnings);
        assert!(steady.controls.is_some());
    }

    #[test]
    fn a_wide_interval_carries_its_cause() {
        // Two clusters, a wide interval: the warning gives the half-width and the clusters.
        let mut ns: Vec<f64> = (0..12).map(|i| 100.0 + i as f64 * 0.1).collect();
        ns.extend((0..10).map(|i| 150.0 + i as f64 * 0.1));
        let out = ExperimentOutput {
            cases: vec![case("bimodal", &ns, true), case("steady", &[5.0; 20], true)],
            ..Default::default()
        };
        let r = experiment("x", out, 1.0, None);
        let c = &r.cases[0];
        assert!(c.noisy);
        let wide = |w: &&Message| w.kind() == MessageKind::WideInterval;
        let w = c.warnings.iter().find(wide).unwrap();
        assert!(w.starts_with("wide interval: CI ±"), "{w}");
        assert!(w.contains("two clusters: 12 samples near 100"), "{w}");
        assert!(r.cases[1].warnings.is_empty());
        let text = crate::export::terminal::experiment(&r, "ref-cycles", &Default::default());
        assert!(text.contains("noisy for 1 of 2 cases"), "{text}");
    }

    #[test]
    fn a_wide_interval_names_the_load_it_ran_under() {
        let mut ns: Vec<f64> = (0..12).map(|i| 100.0 + i as f64 * 0.1).collect();
        ns.extend((0..10).map(|i| 150.0 + i as f64 * 0.1));
        let out = || ExperimentOutput {
            cases: vec![case("bimodal", &ns, true)],
            ..Default::default()
        };
        let mut load = oscost_model::example::quiet_load(10.0);
        let quiet = experiment("x", out(), 1.0, Some(load.clone()));
        assert!(!quiet.cases[0].warnings[0].contains("during the experiment"));
        load.foreign_cpu_share = 0.41;
        load.steal_s = Some(0.6);
        load.cpus_online = 2;
        let busy = experiment("x", out(), 1.0, Some(load));
        assert!(
            busy.cases[0].warnings[0].ends_with(
                "; other programs used 41 % of the CPUs and the hypervisor took 3 % of them \
                 (steal) during the experiment"
            ),
            "{}",
            busy.cases[0].warnings[0]
        );
    }

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
        assert!(slow.warnings.is_empty());
        assert_eq!(
            slow.notes,
            [
                "the call cannot run 1000000000 times a second here: at most 11687704, one after \
              another (its share at that rate, 8556 % of a second, is not a real figure)"
            ]
        );
        // Half a second's share is possible: no warning.
        assert_eq!(r.cases[1].at_rate.as_ref().unwrap().share_pct, 50.0);
        assert!(r.cases[1].warnings.is_empty());
        // The terminal table notes it and says it under the table.
        let text = crate::export::terminal::experiment(&r, "ref-cycles", &Default::default());
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
    fn a_derived_figure_wide_from_a_small_difference_says_so() {
        // 20 ms of work, and the same work under events adding 1 %: each term is known to
        // a fraction of a percent, their difference to far worse than ±5 %.
        let base: Vec<f64> = (0..9).map(|i| 20.0e6 + (i as f64 - 4.0) * 20e3).collect();
        let under: Vec<f64> = (0..9).map(|i| 20.2e6 + (4.0 - i as f64) * 25e3).collect();
        let out = ExperimentOutput {
            cases: vec![case("under", &under, true), case("base", &base, true)],
            derived: vec![
                DerivedSpec {
                    id: "per_event".into(),
                    description: String::new(),
                    terms: vec![("under".into(), 0.05), ("base".into(), -0.05)],
                    flagged: None,
                },
                // Each term alone is narrow: no warning.
                DerivedSpec {
                    id: "whole".into(),
                    description: String::new(),
                    terms: vec![("under".into(), 1.0)],
                    flagged: None,
                },
            ],
            ..Default::default()
        };
        let r = experiment("t", out, 1.0, None);
        let w = &r.derived[0].warnings;
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("wide interval: CI ±"), "{w:?}");
        assert_eq!(w[0].kind(), MessageKind::WideInterval);
        assert!(
            w[0].contains("terms nearly cancel: what is left is 1.0 % of under (20.20 ms ±"),
            "{w:?}"
        );
        assert!(r.derived[1].warnings.is_empty());
        // The terminal names the cause in the derived table's notes.
        let text = crate::export::terminal::experiment(&r, "ref-cycles", &Default::default());
        assert!(text.contains("noisy: terms nearly cancel"), "{text}");
        // Older documents without the field still read, and an empty one is not written.
        let json = serde_json::to_value(&r.derived[1]).unwrap();
        assert!(json.get("warnings").is_none());
        let back: DerivedResult = serde_json::from_value(json).unwrap();
        assert!(back.warnings.is_empty());
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
