//! `split` against the number of tasks sharing the work, one row per CPU set: the time beside
//! the ideal T1 / min(N, CPUs), and how far above that ideal it is (the same overhead as the
//! split table, from [`crate::views::split::overhead_pct`]).

use super::chart::{Axis, Fit, Header, Key, Line, Panel, Point, Reference, Style, Unit};
use super::Plot;
use crate::format::fmt_ns;
use crate::views::split::{ideal, overhead_pct};
use oscost_model::{CaseResult, ExperimentResult};

fn param_u64(c: &CaseResult, key: &str) -> Option<u64> {
    c.params.get(key).and_then(|v| v.as_u64())
}

fn param_str<'a>(c: &'a CaseResult, key: &str) -> Option<&'a str> {
    c.params.get(key).and_then(|v| v.as_str())
}

const SETS: [(&str, &str); 4] = [
    ("one", "on one CPU"),
    ("two", "on the first two CPUs"),
    ("all", "on all CPUs, the scheduler placing"),
    ("balanced", "pinned evenly over the CPUs"),
];

/// Forms in a fixed order, so each keeps its colour in every panel.
const FORMS: [&str; 3] = ["single", "threads", "processes"];

fn form_index(form: &str) -> usize {
    FORMS.iter().position(|f| *f == form).unwrap_or(FORMS.len())
}

/// The figure, when the experiment names its baseline (T1).
pub fn plots(e: &ExperimentResult) -> Vec<Plot> {
    let Some(base) = crate::views::split::baseline(e) else {
        return Vec::new();
    };
    let t1 = base.median_ns;
    let mut forms: Vec<&str> = e
        .cases
        .iter()
        .filter_map(|c| param_str(c, "form"))
        .collect();
    forms.sort_by_key(|f| (form_index(f), f.to_string()));
    forms.dedup();
    let style = |form: &str| style_of(&forms, form);
    let mut panels = Vec::new();
    let all_n: Vec<f64> = e
        .cases
        .iter()
        .filter_map(|c| param_u64(c, "tasks"))
        .map(|n| n as f64)
        .collect();
    let x = Axis::fit(
        "tasks sharing the work (N)",
        Unit::Plain,
        &all_n,
        Fit::AtData,
    );
    for (set, what) in SETS {
        let cases: Vec<(&CaseResult, u64, u64, &str)> = e
            .cases
            .iter()
            .filter(|c| param_str(c, "set") == Some(set))
            .filter_map(|c| {
                Some((
                    c,
                    param_u64(c, "tasks")?,
                    param_u64(c, "cpu_count")?,
                    param_str(c, "form")?,
                ))
            })
            .collect();
        if cases.is_empty() {
            continue;
        }
        panels.extend(set_panels(&cases, what, &forms, t1, &x));
    }
    if panels.is_empty() {
        return Vec::new();
    }
    let mut keys: Vec<Key> = forms
        .iter()
        .map(|f| Key::Series(f.to_string(), style(f)))
        .collect();
    keys.push(Key::Level(
        "ideal: T1 / min(N, CPUs)".into(),
        "#000000",
        "5 4",
    ));
    let header = Header::new(
        &format!("{}: the same work split among N tasks", e.name),
        &[format!(
            "T1 = {} ({}: one flow on one CPU). Left: time for all the work against the ideal; \
             right: how much longer than the ideal, creating and joining the tasks included. \
             Whiskers: 95 % confidence intervals.",
            fmt_ns(t1),
            base.id
        )],
    );
    vec![Plot {
        name: format!("{}.tasks", e.name),
        svg: super::chart::grid(&header, &panels, 2, 190.0, &keys),
    }]
}

/// Each form's colour, fixed by its place among the forms shown.
fn style_of(forms: &[&str], form: &str) -> Style {
    Style::nth(forms.iter().position(|f| *f == form).unwrap_or(0))
}

/// A CPU set's two panels: the time for all the work beside the ideal, and how far above the
/// ideal it is.
fn set_panels(
    cases: &[(&CaseResult, u64, u64, &str)],
    what: &str,
    forms: &[&str],
    t1: f64,
    x: &Axis,
) -> [Panel; 2] {
    let mut times = Vec::new();
    let mut overheads = Vec::new();
    for form in forms {
        let mut of: Vec<&(&CaseResult, u64, u64, &str)> =
            cases.iter().filter(|c| c.3 == *form).collect();
        if of.is_empty() {
            continue;
        }
        of.sort_by_key(|c| c.1);
        let tip = |c: &CaseResult, n: u64, cpus: u64| {
            format!(
                "{}: {} (95 % CI {} to {}), {:+.1} % against the ideal",
                c.id,
                fmt_ns(c.median_ns),
                fmt_ns(c.ci95_ns[0]),
                fmt_ns(c.ci95_ns[1]),
                overhead_pct(c.median_ns, t1, n, cpus)
            )
        };
        // One line of the form's cases, each point at `at(median or CI bound, N, CPUs)`.
        let line = |at: &dyn Fn(f64, u64, u64) -> f64| Line {
            label: form.to_string(),
            style: style_of(forms, form),
            points: of
                .iter()
                .map(|&&(c, n, cpus, _)| Point {
                    x: n as f64,
                    y: at(c.median_ns, n, cpus),
                    ci: Some(c.ci95_ns.map(|t| at(t, n, cpus))),
                    hollow: !c.checks_passed,
                    tip: tip(c, n, cpus),
                })
                .collect(),
        };
        times.push(line(&|t, _, _| t));
        overheads.push(line(&|t, n, cpus| overhead_pct(t, t1, n, cpus)));
    }
    let mut ns: Vec<(u64, u64)> = cases.iter().map(|c| (c.1, c.2)).collect();
    ns.sort_unstable();
    ns.dedup_by_key(|p| p.0);
    times.push(Line {
        label: "ideal T1 / min(N, CPUs)".into(),
        style: Style {
            colour: "#000000",
            marker: None,
            size: 0.0,
            line: true,
            dash: "5 4",
        },
        points: ns
            .iter()
            .map(|&(n, cpus)| Point {
                x: n as f64,
                y: ideal(t1, n, cpus),
                ci: None,
                hollow: false,
                tip: String::new(),
            })
            .collect(),
    });
    let values = super::marks::values;
    let time = Panel {
        title: format!("time, {what}"),
        x: x.clone(),
        y: Axis::fit(
            "time for all the work",
            Unit::Ns,
            &values(&times),
            Fit::Linear { zero: true },
        ),
        lines: times,
        refs: Vec::new(),
        bars: Vec::new(),
    };
    let mut o = values(&overheads);
    o.push(0.0);
    let above = Panel {
        title: format!("above the ideal, {what}"),
        x: x.clone(),
        y: Axis::fit(
            "time above the ideal",
            Unit::Percent,
            &o,
            Fit::Linear { zero: true },
        ),
        lines: overheads,
        refs: vec![Reference {
            label: "ideal".into(),
            y: 0.0,
            band: None,
            colour: "#000000",
            dash: "5 4",
        }],
        bars: Vec::new(),
    };
    [time, above]
}
