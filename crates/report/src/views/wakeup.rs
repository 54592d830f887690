//! `wakeup` in tables: each case's lateness distribution (min, p50, p90, p99, p99.9, max)
//! beside what it was measured under, and how many wake-ups the percentiles rest on; where
//! the run traced, the kernel's split of the lateness and its worst wake-ups explained.

use super::View;
use crate::format::fmt_ns;
use oscost_model::schema::ExperimentResult;
use oscost_model::CaseResult;
use serde_json::Value;

/// Whether `c` is a traced pass's split case.
pub fn is_split(c: &CaseResult) -> bool {
    c.params.get("kernel_view") == Some(&Value::Bool(true))
}

/// The parts of a split case, `(key, label)`, as its params name them.
pub fn parts(c: &CaseResult) -> Vec<(String, String)> {
    c.params
        .get("parts")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|p| {
                    Some((
                        p.get(0)?.as_str()?.to_owned(),
                        p.get(1)?.as_str()?.to_owned(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The lateness table, one row per timed case, then the kernel's split where traced.
pub fn views(e: &ExperimentResult) -> Vec<View> {
    if e.cases.is_empty() {
        return Vec::new();
    }
    let mut notes = Vec::new();
    let rows = e
        .cases
        .iter()
        .filter(|c| !is_split(c))
        .map(|c| {
            let get = |k: &str| c.counters.get(k).copied();
            let ns = |k: &str| get(k).map_or_else(|| "-".into(), fmt_ns);
            let param = |k: &str| {
                c.params
                    .get(k)
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        v => v.to_string(),
                    })
                    .unwrap_or_else(|| "-".into())
            };
            for k in c.checks.iter().filter(|k| !k.passed) {
                notes.push(format!(
                    "* {}: {} counted {:.3}, expected {:.3}: {}",
                    c.id, k.name, k.counted, k.expected, k.detail
                ));
            }
            vec![
                format!("{}{}", c.id, if c.checks_passed { "" } else { " *" }),
                param("policy"),
                param("mode"),
                param("load"),
                param("cpu"),
                get("wakeups").map_or_else(|| "-".into(), |v| format!("{v:.0}")),
                ns("lateness_min_ns"),
                ns("lateness_p50_ns"),
                ns("lateness_p90_ns"),
                ns("lateness_p99_ns"),
                ns("lateness_p99_9_ns"),
                ns("lateness_max_ns"),
                get("overruns").map_or_else(|| "-".into(), |v| format!("{v:.0}")),
                get("run_s").map_or_else(|| "-".into(), |v| format!("{v:.2} s")),
            ]
        })
        .collect();
    notes.push("lateness: how long after its deadline the thread ran again".into());
    let mut v = vec![View {
        title: format!("{}: how late each wake-up came", e.name),
        head: [
            "case", "policy", "mode", "load", "cpu", "wake-ups", "min", "p50", "p90", "p99",
            "p99.9", "max", "overruns", "run",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes,
        detail: vec![
            "lateness is read from CLOCK_MONOTONIC; overruns: deadlines passed with no wake-up \
             of their own (not in the distribution)"
                .into(),
        ],
    }];
    v.extend(split_views(e));
    v
}

/// The kernel's split, a row per traced case (each part's median), and the worst wake-ups
/// explained.
fn split_views(e: &ExperimentResult) -> Vec<View> {
    let split: Vec<&CaseResult> = e.cases.iter().filter(|c| is_split(c)).collect();
    let Some(first) = split.first() else {
        return Vec::new();
    };
    let keys = parts(first);
    let mut head = vec!["case".to_owned(), "split".to_owned()];
    head.extend(keys.iter().map(|(k, _)| k.replace('_', " ")));
    head.extend(
        [
            "parts / measured",
            "kernel / measured",
            "traced p50",
            "untraced p50",
        ]
        .map(String::from),
    );
    let mut worst_rows = Vec::new();
    let rows = split
        .iter()
        .map(|c| {
            let get = |k: &str| c.counters.get(k).copied();
            let ns = |k: &str| get(k).map_or_else(|| "-".into(), fmt_ns);
            let mut row = vec![
                format!("{}{}", c.id, if c.checks_passed { "" } else { " *" }),
                match (get("wakeups_split"), get("wakeups")) {
                    (Some(s), Some(n)) => format!("{s:.0}/{n:.0}"),
                    _ => "-".into(),
                },
            ];
            row.extend(keys.iter().map(|(k, _)| ns(&format!("part.{k}.median_ns"))));
            for k in ["parts_vs_measured", "kernel_vs_measured"] {
                row.push(get(k).map_or_else(|| "-".into(), |r| format!("{r:.3}")));
            }
            row.push(ns("lateness_p50_ns"));
            row.push(ns("untraced_lateness_p50_ns"));
            let worst = c.params.get("worst").and_then(Value::as_array);
            for (i, w) in worst.into_iter().flatten().enumerate() {
                let num = |k: &str| w.get(k).and_then(Value::as_f64);
                let parts = w
                    .get("parts_ns")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .map(|v| v.as_f64().map_or_else(|| "-".into(), fmt_ns))
                            .collect::<Vec<_>>()
                            .join(" + ")
                    })
                    .unwrap_or_default();
                worst_rows.push(vec![
                    if i == 0 { c.id.clone() } else { String::new() },
                    num("lateness_ns").map_or_else(|| "-".into(), fmt_ns),
                    num("at_s").map_or_else(|| "-".into(), |s| format!("{s:.3} s")),
                    parts,
                    w.get("between")
                        .and_then(Value::as_str)
                        .unwrap_or("-")
                        .to_owned(),
                ]);
            }
            row
        })
        .collect();
    let labels = keys
        .iter()
        .map(|(k, l)| format!("{}: {l}", k.replace('_', " ")))
        .collect::<Vec<_>>()
        .join("; ");
    let mechanism = e
        .params
        .get("kernel_view_mechanism")
        .and_then(Value::as_str)
        .unwrap_or("-");
    let mut v = vec![View {
        title: format!(
            "{}: each wake-up's lateness split by the kernel's events (medians)",
            e.name
        ),
        head,
        rows,
        notes: vec![
            format!("{labels}."),
            format!("Traced in a second run of each case ({mechanism})."),
        ],
        detail: vec![
            "parts / measured: the median of each wake-up's parts added up, over the median \
             lateness the thread measured on the same wake-ups (a check, 1 ± 0.05); kernel / \
             measured: the median of the kernel's own parts (deadline to the return to user \
             space) over the same; traced p50 against the timed case's untraced p50 is what \
             tracing cost."
                .into(),
        ],
    }];
    if !worst_rows.is_empty() {
        v.push(View {
            title: format!("{}: the worst traced wake-ups explained", e.name),
            head: ["case", "lateness", "at", "parts", "what held the CPU"]
                .map(String::from)
                .to_vec(),
            rows: worst_rows,
            notes: vec![format!(
                "parts in the order {}",
                keys.iter()
                    .map(|(k, _)| k.replace('_', " "))
                    .collect::<Vec<_>>()
                    .join(" + ")
            )],
            detail: vec![
                "what held the CPU from the deadline to the return to user space, by the \
                 kernel's events (idle: the CPU waited for the interrupt; nothing recorded: no \
                 event accounts for it, e.g. interrupts or preemption off, or the hypervisor)"
                    .into(),
            ],
        });
    }
    v
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::views::testkit;

    fn result(cases: Vec<oscost_model::CaseResult>) -> ExperimentResult {
        ExperimentResult {
            name: "wakeup".into(),
            params: Default::default(),
            cases,
            unavailable: Vec::new(),
            derived: Vec::new(),
            warnings: Vec::new(),
            notes: Vec::new(),
            load: None,
            controls: None,
        }
    }

    #[test]
    fn a_row_per_case_with_its_percentiles() {
        let mut e = result(vec![testkit::case("wakeup.other.1ms", "wake-up", 70_000.0)]);
        let c = &mut e.cases[0];
        for (k, v) in [
            ("lateness_min_ns", 60_000.0),
            ("lateness_p50_ns", 70_000.0),
            ("lateness_p99_9_ns", 1_500_000.0),
            ("wakeups", 250.0),
        ] {
            c.counters.insert(k.into(), v);
        }
        c.params.insert("policy".into(), "other".into());
        let v = views(&e);
        assert_eq!(v.len(), 1);
        let row = &v[0].rows[0];
        assert_eq!(row.len(), v[0].head.len());
        assert_eq!(row[1], "other");
        assert_eq!(row[5], "250");
        assert_eq!(row[6], fmt_ns(60_000.0));
        assert_eq!(row[10], fmt_ns(1_500_000.0));
        assert_eq!(row[9], "-");
        assert!(views(&result(Vec::new())).is_empty());
    }

    /// A traced case: a row of part medians, and its worst wake-ups explained.
    pub(crate) fn split_case() -> CaseResult {
        let mut k = testkit::case("wakeup.fifo.1ms.kernel", "wake-up", 20_000.0);
        k.params.insert("kernel_view".into(), Value::Bool(true));
        k.params.insert(
            "parts".into(),
            serde_json::json!([
                ["slack", "deadline to expiry"],
                ["to_switch", "to the switch"]
            ]),
        );
        k.params.insert(
            "worst".into(),
            serde_json::json!([{"lateness_ns": 90000.0, "at_s": 1.5,
                "parts_ns": [0.0, 85000.0], "between": "task kworker/0:1 80.0 µs"}]),
        );
        for (key, v) in [
            ("part.slack.median_ns", 0.0),
            ("part.to_switch.median_ns", 15_000.0),
            ("parts_vs_measured", 0.98),
            ("wakeups_split", 1990.0),
            ("wakeups", 2000.0),
        ] {
            k.counters.insert(key.into(), v);
        }
        k
    }

    #[test]
    fn a_traced_case_gets_its_split_and_worst_tables_not_a_lateness_row() {
        let e = result(vec![
            testkit::case("wakeup.fifo.1ms", "wake-up", 20_000.0),
            split_case(),
        ]);
        let v = views(&e);
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].rows.len(), 1);
        let row = &v[1].rows[0];
        assert_eq!(row.len(), v[1].head.len());
        assert_eq!(row[1], "1990/2000");
        assert_eq!(row[3], fmt_ns(15_000.0));
        assert_eq!(row[4], "0.980");
        assert_eq!(row[5], "-");
        assert!(v[1].notes[0].contains("to switch: to the switch"));
        assert!(v[1].detail[0].contains("the median of each wake-up's parts added up"));
        let w = &v[2].rows[0];
        assert_eq!(w[0], "wakeup.fifo.1ms.kernel");
        assert_eq!(w[3], format!("{} + {}", fmt_ns(0.0), fmt_ns(85_000.0)));
        assert_eq!(w[4], "task kworker/0:1 80.0 µs");
    }
}
