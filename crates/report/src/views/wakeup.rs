//! `wakeup` in one table: each case's lateness distribution (min, p50, p90, p99, p99.9, max)
//! beside what it was measured under, and how many wake-ups the percentiles rest on.

use super::View;
use crate::format::fmt_ns;
use oscost_model::schema::ExperimentResult;
use serde_json::Value;

/// The lateness table, one row per case.
pub fn views(e: &ExperimentResult) -> Vec<View> {
    if e.cases.is_empty() {
        return Vec::new();
    }
    let mut notes = Vec::new();
    let rows = e
        .cases
        .iter()
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
    notes.push(
        "lateness: how long after its deadline the thread ran again, from CLOCK_MONOTONIC; \
         overruns: deadlines passed with no wake-up of their own (not in the distribution)"
            .into(),
    );
    vec![View {
        title: format!("{}: how late each wake-up came", e.name),
        head: [
            "case", "policy", "mode", "load", "cpu", "wake-ups", "min", "p50", "p90", "p99",
            "p99.9", "max", "overruns", "run",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes,
    }]
}

#[cfg(test)]
mod tests {
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
}
