//! `noise` per CPU in one table: how often the busy loop was interrupted, for how long, the
//! share of the CPU lost, the dominant period and what its interruptions cost, beside the local
//! timer interrupts and the steal time the kernel counted over the run.

use super::View;
use crate::format::fmt_ns;
use crate::format::grouped;
use oscost_model::schema::ExperimentResult;
use serde_json::Value;

/// The per-CPU table.
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
            let rate = |k: &str| get(k).map_or_else(|| "-".into(), |v| format!("{v:.1}"));
            for k in c.checks.iter().filter(|k| !k.passed) {
                notes.push(format!(
                    "* {}: {} counted {:.1}, expected {:.1}: {}",
                    c.id, k.name, k.counted, k.expected, k.detail
                ));
            }
            let cpu = c
                .params
                .get("cpu")
                .and_then(Value::as_u64)
                .map_or_else(|| c.id.clone(), |n| n.to_string());
            vec![
                format!("{cpu}{}", if c.checks_passed { "" } else { " *" }),
                rate("gaps_per_s"),
                ns("length_median_ns"),
                ns("length_p99_ns"),
                ns("length_max_ns"),
                get("cpu_lost_pct").map_or_else(|| "-".into(), |v| format!("{v:.3} %")),
                ns("period_ns"),
                rate("periodic_per_s"),
                rate("local_timer_per_s"),
                match (get("periodic_median_ns"), get("periodic_median_cycles")) {
                    (Some(n), Some(t)) => format!("{} ({})", fmt_ns(n), grouped(t)),
                    _ => "-".into(),
                },
                get("steal_ms").map_or_else(|| "-".into(), |v| format!("{v:.0} ms")),
            ]
        })
        .collect();
    if let Some(t) = e.params.get("threshold_ns").and_then(Value::as_f64) {
        let hz = e
            .params
            .get("kernel_hz")
            .and_then(Value::as_u64)
            .map_or_else(String::new, |hz| {
                format!(
                    "; the kernel's tick: {hz} Hz, every {}",
                    fmt_ns(1e9 / hz as f64)
                )
            });
        notes.push(format!(
            "interruptions: gaps above {} between two counter readings, less one loop \
             iteration; period: the dominant one among their start times; at the period: \
             interruptions per second at its main phase, and their median length (cycles){hz}",
            fmt_ns(t)
        ));
    }
    vec![View {
        title: format!("{}: interruptions of a busy loop per CPU", e.name),
        head: [
            "cpu",
            "per s",
            "median",
            "p99",
            "max",
            "CPU lost",
            "period",
            "at period /s",
            "local timer /s",
            "at period, each",
            "steal",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes,
    }]
}
