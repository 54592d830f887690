//! `tick-forms` in the shape of the QNX tick study's grid: per policy, one row per form and
//! period (events, time, cycles, extra cycles per extra event, share of useful work, switches
//! per event), and under it the hand-over between threads and between processes set against
//! the cost of an event, the study's "switching against servicing the clock".

use super::View;
use crate::format::fmt_ns;
use crate::format::grouped;
use oscost_model::schema::{CaseResult, ExperimentResult};
use serde_json::Value;

fn param<'a>(c: &'a CaseResult, key: &str) -> Option<&'a str> {
    c.params.get(key).and_then(Value::as_str)
}

fn counter(c: &CaseResult, key: &str) -> f64 {
    c.counters.get(key).copied().unwrap_or(f64::NAN)
}

/// Extra cycles per extra event of `c` against `base` (the same form and policy undisturbed).
fn per_event(c: &CaseResult, base: &CaseResult) -> f64 {
    let events = counter(c, "events") - counter(base, "events");
    if events > 0.0 {
        (counter(c, "cycles") - counter(base, "cycles")) / events
    } else {
        f64::NAN
    }
}

/// One table per policy, in the order the cases came; the hand-over notes under the first.
pub fn views(e: &ExperimentResult) -> Vec<View> {
    let runs: Vec<&CaseResult> = e.cases.iter().filter(|c| c.unit == "run").collect();
    let mut policies: Vec<&str> = Vec::new();
    for c in &runs {
        if let Some(p) = param(c, "policy") {
            if !policies.contains(&p) {
                policies.push(p);
            }
        }
    }
    let unit = e
        .params
        .get("tick_unit")
        .and_then(Value::as_str)
        .unwrap_or("cycles");
    let mut views = Vec::new();
    // The median cost of an event over every periodic point that kept its period, for the
    // comparison with a hand-over below.
    let mut kept_costs: Vec<f64> = Vec::new();
    for policy in policies {
        let mut rows = Vec::new();
        let mut notes = Vec::new();
        for c in runs.iter().filter(|c| param(c, "policy") == Some(policy)) {
            let form = param(c, "form").unwrap_or("-");
            let base = runs.iter().find(|b| {
                param(b, "form") == Some(form)
                    && param(b, "policy") == Some(policy)
                    && !b.params.contains_key("period_ns")
            });
            let period = c
                .params
                .get("period_ns")
                .and_then(Value::as_f64)
                // A setting, not a measurement: as short as it was asked for (`50 µs`).
                .map_or_else(|| "none".into(), crate::format::time);
            let flag = if c.checks_passed { "" } else { " *" };
            let (cpe, useful) = match base {
                Some(b) if c.params.contains_key("period_ns") => {
                    let cpe = per_event(c, b);
                    if c.checks_passed && cpe.is_finite() {
                        kept_costs.push(cpe);
                    }
                    (
                        grouped(cpe),
                        format!("{:.1} %", b.median_ns / c.median_ns * 100.0),
                    )
                }
                _ => ("-".into(), "-".into()),
            };
            let events = counter(c, "events");
            let per_event_switches = if events > 0.0 {
                format!("{:.2}", counter(c, "switches") / events)
            } else {
                "-".into()
            };
            rows.push(vec![
                format!("{form} {period}{flag}"),
                grouped(events),
                fmt_ns(c.median_ns),
                grouped(counter(c, "cycles")),
                cpe,
                useful,
                grouped(counter(c, "switches")),
                per_event_switches,
            ]);
            for k in c.checks.iter().filter(|k| !k.passed) {
                notes.push(format!(
                    "* {}: {} counted {:.2}, expected {:.2}",
                    c.id, k.name, k.counted, k.expected
                ));
            }
        }
        notes.push(format!(
            "events: helper wake-ups counted per run (median over rounds); {unit}: the run's \
             span; extra/event: ({unit} - {unit} undisturbed) / (events - 0); useful: time \
             undisturbed / time; switches: the working tasks' own, counted by the kernel"
        ));
        views.push(View {
            detail: Vec::new(),
            title: format!("tick-forms: {policy}, cost per timer event by form"),
            head: [
                "form, period",
                "events",
                "time",
                unit,
                "extra/event",
                "useful",
                "switches",
                "switches/event",
            ]
            .map(String::from)
            .to_vec(),
            rows,
            notes,
        });
    }
    kept_costs.sort_by(f64::total_cmp);
    let event = kept_costs.get(kept_costs.len() / 2).copied();
    let handovers: Vec<String> = e
        .cases
        .iter()
        .filter(|c| c.unit == "switch")
        .map(|c| {
            let kind = param(c, "kind").unwrap_or("-");
            match event {
                Some(ev) if ev > 0.0 => format!(
                    "a hand-over between {kind}: {} ({} {unit}), {:.0} % of an event's {} {unit}",
                    fmt_ns(c.median_ns),
                    grouped(c.median_cycles),
                    c.median_cycles / ev * 100.0,
                    grouped(ev)
                ),
                _ => format!(
                    "a hand-over between {kind}: {} ({} {unit})",
                    fmt_ns(c.median_ns),
                    grouped(c.median_cycles)
                ),
            }
        })
        .collect();
    if let Some(first) = views.first_mut() {
        if event.is_some() && !handovers.is_empty() {
            first.notes.push(
                "an event's cost below: the median extra/event over every periodic point that \
                 kept its period"
                    .into(),
            );
        }
        first.notes.extend(handovers);
    }
    views
}
