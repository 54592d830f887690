//! `switch`'s traced passes: each pinned case's one-way hand-over split into stages by the
//! kernel's events, the stages' sum against the one-way time the loop timed while traced, and
//! what tracing cost a round trip.

use super::View;
use crate::format::fmt_ns;
use oscost_model::schema::ExperimentResult;
use oscost_model::CaseResult;
use serde_json::Value;

/// The stages' keys and labels of a traced case, in order.
pub fn stages(c: &CaseResult) -> Vec<(String, String)> {
    c.params
        .get("stages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let p = p.as_array()?;
            Some((
                p.first()?.as_str()?.to_owned(),
                p.get(1)?.as_str()?.to_owned(),
            ))
        })
        .collect()
}

/// A traced case: one made by the traced pass.
pub fn is_stages(c: &CaseResult) -> bool {
    c.params.get("kernel_view").and_then(Value::as_bool) == Some(true)
}

/// The case's name in a row: primitive, task kind and placement.
pub fn label(c: &CaseResult) -> String {
    let p = |k: &str| c.params.get(k).and_then(Value::as_str).unwrap_or("?");
    format!("{} {} {}", p("via"), p("kind"), p("placement"))
}

/// The stages table, when the run traced any case.
pub fn views(e: &ExperimentResult) -> Vec<View> {
    let traced: Vec<&CaseResult> = e.cases.iter().filter(|c| is_stages(c)).collect();
    let Some(first) = traced.first() else {
        return Vec::new();
    };
    let keys = stages(first);
    let mut notes = Vec::new();
    let rows = traced
        .iter()
        .map(|c| {
            let get = |k: &str| c.counters.get(k).copied();
            let ns = |k: &str| get(k).map_or_else(|| "-".into(), fmt_ns);
            let mut row = vec![format!(
                "{}{}",
                label(c),
                if c.checks_passed { "" } else { " *" }
            )];
            row.extend(keys.iter().map(|(k, _)| ns(&format!("stage.{k}.mean_ns"))));
            row.push(ns("stages_sum_ns"));
            row.push(ns("traced_one_way_ns"));
            row.push(
                get("stages_vs_traced_one_way").map_or_else(|| "-".into(), |v| format!("{v:.3}")),
            );
            row.push(
                match (&c.trace, get("trace_cost_ns"), get("trace_cost_pct")) {
                    (Some(t), _, _) => format!(
                        "{} x{:.2} (+{})",
                        t.mechanism,
                        t.ratio(),
                        fmt_ns(t.traced_ns - t.untraced_ns)
                    ),
                    (None, Some(n), Some(p)) => format!("+{} ({p:+.0} %)", fmt_ns(n)),
                    _ => "-".into(),
                },
            );
            for k in c.checks.iter().filter(|k| !k.passed) {
                notes.push(format!(
                    "* {}: {} counted {:.0}, expected {:.0}: {}",
                    c.id, k.name, k.counted, k.expected, k.detail
                ));
            }
            for w in &c.warnings {
                notes.push(format!("* {}: {w}", c.id));
            }
            row
        })
        .collect();
    notes.push(format!(
        "stages: means per one-way hand-over, from the switch into a task to the switch out of \
         it: {}; a stage that did not happen counts 0 (no return seen when the task was \
         preempted, not asleep; no wake-up when the other task was runnable)",
        keys.iter()
            .map(|(_, l)| l.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    notes.push(
        "traced 1-way: half the loop's mean round trip while traced; sum / 1-way: their ratio \
         (±5 % checked); tracing cost: how the tracepoints were recorded (bpf: BPF programs on \
         raw tracepoints, perf: perf_event_open), the loop's median round trip traced over \
         untraced in the same pass (how far the traced system is from the untraced one), and \
         their difference"
            .into(),
    );
    let mut head = vec!["case".to_owned()];
    head.extend(keys.iter().map(|(k, _)| short(k).to_owned()));
    head.extend(["sum", "traced 1-way", "sum / 1-way", "tracing cost"].map(String::from));
    vec![View {
        detail: Vec::new(),
        title: format!(
            "{}: a one-way hand-over taken apart by the kernel's events (traced pass)",
            e.name
        ),
        head,
        rows,
        notes,
    }]
}

/// A column head for a stage key.
fn short(key: &str) -> &str {
    match key {
        "switch_to_return" => "to return",
        "user" => "user",
        "post_to_wake" => "to wake",
        "wake_to_switch" => "to switch",
        k => k,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A traced case as the measure layer writes it.
    pub(crate) fn traced(via: &str, stages_ns: [f64; 4], one_way: f64, passed: bool) -> CaseResult {
        let sum: f64 = stages_ns.iter().sum();
        let mut c: CaseResult = serde_json::from_value(serde_json::json!({
            "id": format!("switch.{via}.threads.same.stages"), "description": "",
            "unit": "one-way hand-over", "samples": 5,
            "params": {
                "via": via, "kind": "threads", "placement": "same", "kernel_view": true,
                "stages": [
                    ["switch_to_return", "switch to return to user"],
                    ["user", "user space to the post"],
                    ["post_to_wake", "post's entry to wake-up"],
                    ["wake_to_switch", "wake-up to switch"]
                ]
            },
            "iterations_per_sample": 1, "loop_overhead_ns": 0.0, "median_ns": sum,
            "mad_ns": 0.0, "min_ns": sum, "max_ns": sum, "mean_ns": sum,
            "stddev_ns": 0.0, "p5_ns": sum, "p95_ns": sum, "ci95_ns": [sum, sum],
            "median_cycles": sum, "ci95_cycles": [sum, sum],
            "outliers": {"low_severe": 0, "low_mild": 0, "high_mild": 0, "high_severe": 0},
            "noisy": false, "checks": [{
                "name": "stages_cover_one_way", "expected": one_way, "counted": sum,
                "passed": passed, "detail": "within ±5 %"
            }], "checks_passed": passed, "counters": {
                "stages_sum_ns": sum, "traced_one_way_ns": one_way,
                "stages_vs_traced_one_way": sum / one_way,
                "trace_cost_ns": 8600.0, "trace_cost_pct": 130.0
            },
            "at_rate": null, "warnings": [], "series": [], "raw_ns": []
        }))
        .unwrap();
        for (k, v) in ["switch_to_return", "user", "post_to_wake", "wake_to_switch"]
            .iter()
            .zip(stages_ns)
        {
            c.counters.insert(format!("stage.{k}.mean_ns"), v);
        }
        c
    }

    pub(crate) fn experiment(cases: Vec<CaseResult>) -> ExperimentResult {
        crate::views::testkit::experiment("switch", cases)
    }

    #[test]
    fn a_row_per_traced_case_with_its_stages_and_the_cost_of_tracing() {
        let e = experiment(vec![
            traced("pipe", [750.0, 2500.0, 650.0, 3900.0], 7624.0, true),
            traced("futex", [720.0, 1500.0, 770.0, 4000.0], 6500.0, false),
        ]);
        let v = views(&e);
        assert_eq!(v.len(), 1);
        assert_eq!(
            v[0].head,
            [
                "case",
                "to return",
                "user",
                "to wake",
                "to switch",
                "sum",
                "traced 1-way",
                "sum / 1-way",
                "tracing cost"
            ]
        );
        assert_eq!(v[0].rows[0][0], "pipe threads same");
        assert_eq!(v[0].rows[0][5], "7.800 µs");
        assert_eq!(v[0].rows[0][7], "1.023");
        assert_eq!(v[0].rows[0][8], "+8.600 µs (+130 %)");
        // A case that says how it was traced gives its mechanism and traced / untraced.
        let mut bpf = traced("pipe", [750.0, 2500.0, 650.0, 3900.0], 7624.0, true);
        bpf.trace = Some(oscost_model::TraceCost {
            mechanism: "bpf".into(),
            per: "round trip".into(),
            untraced_ns: 5000.0,
            traced_ns: 6500.0,
            lost: 0,
        });
        let v2 = views(&experiment(vec![bpf]));
        assert_eq!(v2[0].rows[0][8], "bpf x1.30 (+1.500 µs)");
        assert_eq!(v[0].rows[1][0], "futex threads same *");
        assert!(v[0].notes[0].starts_with("* switch.futex.threads.same.stages"));
        // No traced case, no table.
        assert!(views(&experiment(vec![])).is_empty());
    }
}
