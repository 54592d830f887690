//! An experiment's part of a run: its parameters, cases and derived figures, its views and
//! charts, what it could not measure, and its warnings and notes.

use super::{anchor, ci_pct, ci_text, cycles, figure, load_line, table, Figure, Table};
use crate::format::fmt_ns;
use oscost_model::{CaseResult, ExperimentResult, Message};
use serde::Serialize;

#[derive(Debug, Serialize)]
struct Param {
    name: String,
    value: String,
    full: String,
}

#[derive(Debug, Serialize)]
struct CheckCell {
    text: String,
    passed: bool,
    detail: String,
}

#[derive(Debug, Serialize)]
struct CaseRow {
    id: String,
    description: String,
    unit: String,
    median: String,
    ci: String,
    ci_pct: String,
    cycles: String,
    min: String,
    p95: String,
    samples: String,
    rate: String,
    checks: Vec<CheckCell>,
    noisy: bool,
    warnings: usize,
    failed: bool,
}

#[derive(Debug, Serialize)]
struct DerivedRow {
    id: String,
    description: String,
    estimate: String,
    ci: String,
    cycles: String,
    flagged: String,
    /// What makes it less precise, as the terminal's notes column says it.
    notes: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Missing {
    id: String,
    description: String,
    reason: String,
}

#[derive(Debug, Serialize)]
struct Warning {
    case: String,
    text: String,
}

#[derive(Debug, Serialize)]
pub(super) struct Experiment {
    anchor: String,
    name: String,
    params: Vec<Param>,
    tick_unit: String,
    with_rate: bool,
    rate: String,
    cases: Vec<CaseRow>,
    derived: Vec<DerivedRow>,
    views: Vec<Table>,
    figures: Vec<Figure>,
    unavailable: Vec<Missing>,
    warnings: Vec<Warning>,
    notes: Vec<Warning>,
    load: String,
}

/// A parameter's value as one short line; the whole of it for the tooltip. Numbers are as
/// short as they are exact (`10000`, not `10000.0`; six decimals at most).
fn param(name: &str, v: &serde_json::Value) -> Param {
    let full = match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n
            .as_f64()
            .map_or_else(|| n.to_string(), crate::format::plain),
        v => v.to_string(),
    };
    let value = if full.chars().count() > 90 {
        format!("{}…", full.chars().take(89).collect::<String>())
    } else {
        full.clone()
    };
    Param {
        name: name.replace('_', " "),
        value,
        full,
    }
}

/// A parameter a reader of the page can use: structured ones (a helper's own settings, a
/// list) and paths of temporary files are the run's internals, kept in the JSON result.
fn shown_param(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Object(_) | serde_json::Value::Array(_) => false,
        serde_json::Value::String(s) => !(s.starts_with("/tmp/") || s.starts_with("/var/tmp/")),
        _ => true,
    }
}

fn case_row(c: &CaseResult) -> CaseRow {
    let checks = c
        .checks
        .iter()
        .filter(|k| {
            !(k.passed && crate::export::table::QUIET_WHEN_PASSED.contains(&k.name.as_str()))
        })
        .map(|k| CheckCell {
            text: crate::format::check(k),
            passed: k.passed,
            detail: k.detail.clone(),
        })
        .collect();
    CaseRow {
        id: c.id.clone(),
        description: c.description.clone(),
        unit: c.unit.clone(),
        median: fmt_ns(c.median_ns),
        ci: ci_text(c.ci95_ns),
        ci_pct: ci_pct(c.median_ns, c.ci95_ns),
        cycles: cycles(c.median_cycles),
        min: fmt_ns(c.min_ns),
        p95: fmt_ns(c.p95_ns),
        samples: if c.iterations_per_sample > 1 {
            format!(
                "{} × {}",
                c.samples,
                crate::format::grouped(c.iterations_per_sample as f64)
            )
        } else {
            c.samples.to_string()
        },
        rate: c
            .at_rate
            .as_ref()
            .map_or_else(|| "-".into(), |a| format!("{:.3} %", a.share_pct)),
        checks,
        noisy: c.noisy,
        warnings: c.warnings.len(),
        failed: !c.checks_passed,
    }
}

/// An experiment's own messages, then each case's, named by its case.
fn messages<'a>(
    own: &[Message],
    cases: impl Iterator<Item = (&'a String, &'a Vec<Message>)>,
) -> Vec<Warning> {
    let mut out: Vec<Warning> = own
        .iter()
        .map(|w| Warning {
            case: String::new(),
            text: w.into(),
        })
        .collect();
    for (id, texts) in cases {
        out.extend(texts.iter().map(|w| Warning {
            case: id.clone(),
            text: w.into(),
        }));
    }
    out
}

pub(super) fn experiment(prefix: &str, e: &ExperimentResult, tick_unit: &str) -> Experiment {
    let rate = e
        .params
        .get("rate_per_s")
        .and_then(|v| v.as_f64())
        .map_or_else(String::new, |r| format!("{r} calls/s"));
    let warnings = messages(&e.warnings, e.cases.iter().map(|c| (&c.id, &c.warnings)));
    let notes = messages(&e.notes, e.cases.iter().map(|c| (&c.id, &c.notes)));
    Experiment {
        anchor: anchor(&[prefix, &e.name]),
        name: e.name.clone(),
        params: e
            .params
            .iter()
            .filter(|(_, v)| shown_param(v))
            .map(|(k, v)| param(k, v))
            .collect(),
        tick_unit: tick_unit.to_owned(),
        with_rate: e.cases.iter().any(|c| c.at_rate.is_some()),
        rate,
        cases: e.cases.iter().map(case_row).collect(),
        derived: e
            .derived
            .iter()
            .map(|d| DerivedRow {
                id: d.id.clone(),
                description: d.description.clone(),
                estimate: fmt_ns(d.estimate_ns),
                ci: ci_text(d.ci95_ns),
                cycles: cycles(d.estimate_cycles),
                flagged: d.flagged.clone().unwrap_or_default(),
                notes: d
                    .warnings
                    .iter()
                    .map(crate::export::table::derived_note)
                    .collect(),
            })
            .collect(),
        views: crate::experiments::views(e)
            .into_iter()
            .map(table)
            .collect(),
        figures: crate::experiments::plots(e)
            .into_iter()
            .map(figure)
            .collect(),
        unavailable: e
            .unavailable
            .iter()
            .map(|u| Missing {
                id: u.id.clone(),
                description: u.description.clone(),
                reason: u.reason.clone(),
            })
            .collect(),
        warnings,
        notes,
        load: e.load.as_ref().map(load_line).unwrap_or_default(),
    }
}
