//! `tick` in the shape of the tick-period study's table: per event source, one row for the
//! undisturbed work and one per period (events, time, cycles, extra cycles, cycles per event,
//! switches per event, overhead), and under it the slope of cycles against events with its
//! interval, beside what the kernel's own tick costs a spinning loop on the same CPU.

use super::View;
use crate::format::{fmt_ns, grouped};
use oscost_model::ids::tick::Id;
use oscost_model::schema::{CaseResult, ExperimentResult};
use serde_json::Value;

fn counter(c: &CaseResult, key: &str) -> Option<f64> {
    c.counters.get(key).copied()
}

fn cell(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "-".into(), f)
}

/// One table per event source, in the order the cases came, then the traced runs' table.
pub fn views(e: &ExperimentResult) -> Vec<View> {
    let mut v = timed_views(e);
    v.extend(rr_view(e));
    v.extend(kernel_view(e));
    v
}

/// `--rr-slices`: per value of the SCHED_RR slice, the reschedulings counted against the run's
/// time over the slice, the shared run against the same work alone, and what one
/// rescheduling cost (none where the shared runs were no slower).
fn rr_view(e: &ExperimentResult) -> Option<View> {
    let mut notes = Vec::new();
    let rows: Vec<Vec<String>> = e
        .cases
        .iter()
        .filter(|c| matches!(Id::parse(&c.id), Some(Id::Case(k)) if k.source == oscost_model::ids::tick::RR))
        .map(|c| {
            let slice = c
                .params
                .get("sched_rr_timeslice_ms")
                .and_then(Value::as_f64)
                .map_or_else(|| "-".into(), |ms| format!("{ms} ms"));
            let check = c
                .checks
                .iter()
                .find(|k| k.name == "reschedulings_vs_time_over_slice");
            let flag = if c.checks_passed { "" } else { " *" };
            if let Some(k) = check.filter(|k| !k.passed) {
                notes.push(format!(
                    "* {}: {:.0} reschedulings counted, {:.0} expected from the run's time over \
                     the slice",
                    c.id, k.counted, k.expected
                ));
            }
            let alone = oscost_model::ids::tick::alone(&c.id);
            let alone = e.cases.iter().find(|a| a.id == alone);
            let per = oscost_model::ids::tick::derived(
                &c.id,
                oscost_model::ids::tick::Derived::PerRescheduling,
            );
            let per = e.derived.iter().find(|d| d.id == per);
            vec![
                format!("{slice}{flag}"),
                cell(counter(c, "reschedulings"), |v| format!("{v:.0}")),
                check.map_or_else(|| "-".into(), |k| format!("{:.0}", k.expected)),
                fmt_ns(c.median_ns),
                alone.map_or_else(|| "-".into(), |a| fmt_ns(a.median_ns)),
                cell(counter(c, "extra_ns"), fmt_ns),
                per.map_or_else(
                    || "-".into(),
                    |d| crate::format::ns_with_ci(d.estimate_ns, Some(d.ci95_ns)),
                ),
            ]
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    notes.push(
        "Threads sharing one CPU under SCHED_RR against one doing the same work alone, per \
         value of sched_rr_timeslice_ms; reschedulings: the threads' involuntary switches per \
         run, expected: the run's time over the slice in whole ticks. `-` per rescheduling: \
         none was counted, or the shared runs were no slower than the work alone (the notes \
         say which)."
            .into(),
    );
    Some(View {
        detail: Vec::new(),
        title: "tick: the cost of a SCHED_RR rescheduling".into(),
        head: [
            "slice",
            "reschedulings",
            "expected",
            "shared run",
            "alone",
            "extra",
            "per rescheduling",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes,
    })
}

/// The labels of the kernel's parts of an event, as `tick`'s traced runs name them.
pub const KERNEL_PARTS: [(&str, &str); 4] = [
    ("interrupt", "interrupt"),
    ("callbacks", "callbacks"),
    ("softirq", "softirq"),
    ("helper", "helper"),
];

/// The traced runs: the kernel's time per event by part against what the work lost per event.
fn kernel_view(e: &ExperimentResult) -> Option<View> {
    let rows: Vec<Vec<String>> = e
        .cases
        .iter()
        .filter(|c| c.params.get("kernel_view").and_then(Value::as_bool) == Some(true))
        .map(|c| {
            let source = c
                .params
                .get("traced_source")
                .and_then(Value::as_str)
                .unwrap_or("?");
            let period = c
                .params
                .get("period_ns")
                .and_then(Value::as_f64)
                .map_or_else(|| "-".into(), crate::format::time);
            let ns = |k: &str| cell(counter(c, k), fmt_ns);
            let mut row = vec![
                format!(
                    "{source} {period}{}",
                    if c.checks_passed { "" } else { " *" }
                ),
                ns("lost_ns_per_event"),
                ns("kernel_ns_per_event"),
            ];
            row.extend(
                KERNEL_PARTS
                    .iter()
                    .map(|(k, _)| ns(&format!("{k}_ns_per_event"))),
            );
            row.push(ns("outside_ns_per_event"));
            row.push(ns("untraced_lost_ns_per_event"));
            row
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut notes = vec![
        "one more run of the work per source, the kernel's tracepoints recorded on its CPU. \
         lost: the run's time less the mean of the traced undisturbed runs before and after \
         it, other tasks' time taken out, per event; kernel: the kernel's \
         time on the CPU per event, as interrupt (the local timer interrupt's entry, exit and \
         own work), callbacks (hrtimer callbacks inside it), softirq (run on its way out) and \
         helper (the helper thread, with the switches to it and back), each less what an \
         undisturbed traced run had (the kernel's own tick); outside: lost less kernel, what \
         an event costs outside the kernel's handlers (cache and TLB refill, a virtual \
         machine's exit; for a signal also its delivery and sigreturn, which no tracepoint \
         brackets, and the handler's own time); untraced: the timed runs' figure at \
         that period."
            .to_string(),
    ];
    notes.extend(super::trace_lines(
        e.cases
            .iter()
            .filter(|c| c.params.get("kernel_view").and_then(Value::as_bool) == Some(true)),
        |c| {
            c.params
                .get("traced_source")
                .and_then(Value::as_str)
                .unwrap_or(&c.id)
                .to_string()
        },
    ));
    for c in e.cases.iter().filter(|c| {
        c.params.get("kernel_view").and_then(Value::as_bool) == Some(true) && !c.checks_passed
    }) {
        for k in c.checks.iter().filter(|k| !k.passed) {
            notes.push(format!(
                "* {}: {} counted {:.0}, expected {:.0}: {}",
                c.id, k.name, k.counted, k.expected, k.detail
            ));
        }
    }
    let mut head = vec!["source".to_string(), "lost".into(), "kernel".into()];
    head.extend(KERNEL_PARTS.iter().map(|(_, l)| l.to_string()));
    head.push("outside".into());
    head.push("untraced".into());
    Some(View {
        detail: Vec::new(),
        title: format!("{}: one timer event taken apart (a traced run)", e.name),
        head,
        rows,
        notes,
    })
}

fn timed_views(e: &ExperimentResult) -> Vec<View> {
    let undisturbed = Id::Undisturbed.to_string();
    let Some(base) = e.cases.iter().find(|c| c.id == undisturbed) else {
        return Vec::new();
    };
    let mut sources: Vec<&str> = Vec::new();
    for c in &e.cases {
        if let Some(s) = c.params.get("source").and_then(Value::as_str) {
            if !sources.contains(&s) {
                sources.push(s);
            }
        }
    }
    let natural = e.params.get("natural_tick").filter(|v| !v.is_null());
    sources
        .into_iter()
        .map(|source| {
            let mut rows = vec![vec![
                "undisturbed".into(),
                "0".into(),
                fmt_ns(base.median_ns),
                grouped(base.median_cycles),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]];
            let mut notes = Vec::new();
            for c in e
                .cases
                .iter()
                .filter(|c| c.params.get("source").and_then(Value::as_str) == Some(source))
            {
                let period = c
                    .params
                    .get("period_ns")
                    .and_then(Value::as_f64)
                    // A setting, not a measurement: as short as it was asked for (`50 µs`).
                    .map_or_else(|| "-".into(), crate::format::time);
                let flag = if c.checks_passed { "" } else { " *" };
                rows.push(vec![
                    format!("{period}{flag}"),
                    cell(counter(c, "events_per_run"), grouped),
                    fmt_ns(c.median_ns),
                    grouped(c.median_cycles),
                    cell(counter(c, "extra_cycles"), grouped),
                    cell(counter(c, "cycles_per_event"), grouped),
                    cell(counter(c, "switches_per_event"), |v| format!("{v:.2}")),
                    cell(counter(c, "overhead_pct"), |v| format!("{v:.1} %")),
                ]);
                for k in c.checks.iter().filter(|k| !k.passed) {
                    notes.push(format!(
                        "* {}: {} counted {:.2}, expected {:.2}",
                        c.id, k.name, k.counted, k.expected
                    ));
                }
            }
            let fit = e.params.get("slope").and_then(|s| s.get(source));
            let slope = fit
                .and_then(|f| f.get("cycles_per_event"))
                .and_then(Value::as_f64);
            if let (Some(f), Some(slope)) = (fit, slope) {
                let ci = |k: &str, i: usize| {
                    f.get(k)
                        .and_then(|v| v.get(i))
                        .and_then(Value::as_f64)
                        .unwrap_or(f64::NAN)
                };
                notes.push(format!(
                    "slope of cycles against events over {} runs (the undisturbed ones at 0): {} \
                     cycles per event, 95 % CI {} .. {} ({} per event)",
                    f.get("runs").and_then(Value::as_u64).unwrap_or(0),
                    grouped(slope),
                    grouped(ci("ci95_cycles", 0)),
                    grouped(ci("ci95_cycles", 1)),
                    fmt_ns(
                        f.get("ns_per_event")
                            .and_then(Value::as_f64)
                            .unwrap_or(f64::NAN)
                    ),
                ));
            }
            match (natural, slope) {
                (Some(n), Some(slope)) => {
                    let get = |k: &str| n.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
                    notes.push(format!(
                        "the kernel's own tick on this CPU, as a spinning loop sees it: every {}, \
                         {} ({} cycles) each over {:.0} ticks; the slope is {:.2} times that",
                        fmt_ns(get("period_ns")),
                        fmt_ns(get("median_ns")),
                        grouped(get("median_cycles")),
                        get("count"),
                        slope / get("median_cycles")
                    ));
                }
                (None, _) => notes.push(
                    "the kernel's own tick was not seen by the spinning loop: nothing to set \
                     beside the slope"
                        .into(),
                ),
                _ => {}
            }
            // The footnote mark is explained only where a row carries it.
            let flagged = notes.iter().any(|n| n.starts_with("* "));
            notes.push(format!(
                "events: counted per run (median); extra cycles: median run less the undisturbed \
                 median; cycles per event: extra cycles / events; overhead: extra cycles / \
                 undisturbed cycles{}",
                if flagged {
                    "; * a check failed (see the notes above)"
                } else {
                    ""
                }
            ));
            View {
                detail: Vec::new(),
                title: format!("{}: {source}, cost per timer event", e.name),
                head: [
                    "period",
                    "events",
                    "time",
                    "cycles",
                    "extra cycles",
                    "cycles/event",
                    "switches/event",
                    "overhead",
                ]
                .map(String::from)
                .to_vec(),
                rows,
                notes,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::testkit::case;
    use oscost_model::case::Check;

    fn rr(ms: u64, shared: f64, alone: f64, resched: f64) -> Vec<CaseResult> {
        let id = oscost_model::ids::tick::case(oscost_model::ids::tick::RR, ms * 1_000_000);
        let mut c = case(&id, "run", shared);
        c.params
            .insert("sched_rr_timeslice_ms".into(), serde_json::json!(ms));
        c.counters.insert("reschedulings".into(), resched);
        c.counters.insert("extra_ns".into(), shared - alone);
        c.checks.push(Check {
            name: "reschedulings_vs_time_over_slice".into(),
            expected: resched,
            counted: resched,
            passed: true,
            bound: None,
            detail: String::new(),
        });
        vec![c, case(&oscost_model::ids::tick::alone(&id), "run", alone)]
    }

    #[test]
    fn a_row_per_slice_and_no_cost_where_the_shared_runs_were_no_slower() {
        let mut e: ExperimentResult = serde_json::from_value(serde_json::json!({
            "name": "tick", "params": {}, "cases": [], "unavailable": [], "derived": [],
            "warnings": [], "load": null,
        }))
        .unwrap();
        e.cases.extend(rr(1, 2.2e8, 2e8, 200.0));
        e.cases.extend(rr(10, 1.99e8, 2e8, 20.0));
        e.derived.push(
            serde_json::from_value(serde_json::json!({
                "id": "tick.rr.1ms.per_rescheduling", "description": "", "terms": [],
                "estimate_ns": 1e5, "ci95_ns": [9e4, 1.1e5], "estimate_cycles": 2.6e5,
                "flagged": null,
            }))
            .unwrap(),
        );
        let v = rr_view(&e).expect("a table");
        assert_eq!(v.rows.len(), 2);
        assert_eq!(v.rows[0][0], "1 ms");
        assert_eq!(v.rows[0][1], "200");
        assert!(v.rows[0][6].starts_with("100.0 µs"), "{:?}", v.rows[0]);
        assert_eq!(v.rows[1][6], "-", "no negative cost: {:?}", v.rows[1]);
        assert!(rr_view(&ExperimentResult {
            cases: Vec::new(),
            ..e
        })
        .is_none());
    }
}
