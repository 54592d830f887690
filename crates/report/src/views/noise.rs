//! `noise` per CPU in one table: how often the busy loop was interrupted, for how long, the
//! share of the CPU lost, the dominant period and what its interruptions cost, beside the local
//! timer interrupts and the steal time the kernel counted over the run.

use super::View;
use crate::format::fmt_ns;
use crate::format::grouped;
use oscost_model::schema::ExperimentResult;
use oscost_model::CaseResult;
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
        .filter(|c| !is_kernel(c))
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
    let mut views = vec![View {
        detail: Vec::new(),
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
    }];
    views.extend(e.cases.iter().filter(|c| is_kernel(c)).map(kernel_view));
    views
}

/// A case of the traced pass.
fn is_kernel(c: &CaseResult) -> bool {
    c.params.get("kernel_view").and_then(Value::as_bool) == Some(true)
}

/// The sources of one traced CPU's gaps, largest share first, as `(key, label)`.
pub fn sources(c: &CaseResult) -> Vec<(String, String)> {
    let Some(labels) = c.params.get("sources").and_then(Value::as_object) else {
        return Vec::new();
    };
    let lost = |k: &str| {
        c.counters
            .get(&format!("source.{k}.cpu_lost_pct"))
            .copied()
            .unwrap_or(0.0)
    };
    let mut v: Vec<(String, String)> = labels
        .iter()
        .map(|(k, l)| (k.clone(), l.as_str().unwrap_or(k).to_owned()))
        .collect();
    v.sort_by(|a, b| lost(&b.0).total_cmp(&lost(&a.0)));
    v
}

/// One traced CPU: its gaps by the kernel event that took them.
fn kernel_view(c: &CaseResult) -> View {
    let get = |k: &str| c.counters.get(k).copied();
    let ns = |k: &str| get(k).map_or_else(|| "-".into(), fmt_ns);
    // Tasks seen once each are one row, not a row apiece: a loaded machine's compilers and
    // shells would fill the table with single gaps.
    let count = |k: &str| get(&format!("source.{k}.count")).unwrap_or(0.0);
    let (once, kept): (Vec<_>, Vec<_>) = sources(c)
        .into_iter()
        .partition(|(k, label)| label.starts_with("task ") && count(k) == 1.0);
    let (once, kept) = if once.len() >= 2 {
        (once, kept)
    } else {
        (Vec::new(), once.into_iter().chain(kept).collect())
    };
    let mut rows: Vec<Vec<String>> = kept
        .into_iter()
        .map(|(k, label)| {
            let f = |what: &str| format!("source.{k}.{what}");
            vec![
                label,
                get(&f("per_s")).map_or_else(|| "-".into(), |v| format!("{v:.1}")),
                ns(&f("median_ns")),
                ns(&f("p99_ns")),
                get(&f("cpu_lost_pct")).map_or_else(|| "-".into(), |v| format!("{v:.3} %")),
                ns(&f("in_events_ns")),
            ]
        })
        .collect();
    if !once.is_empty() {
        let each = |what: &str| -> Vec<f64> {
            once.iter()
                .filter_map(|(k, _)| get(&format!("source.{k}.{what}")))
                .collect()
        };
        let mut lengths = each("median_ns");
        lengths.sort_by(f64::total_cmp);
        let n = once.len();
        let in_events = each("in_events_ns");
        rows.push(vec![
            format!("other tasks, once each ({n})"),
            format!("{:.1}", each("per_s").iter().sum::<f64>()),
            lengths
                .get(lengths.len() / 2)
                .map_or_else(|| "-".into(), |v| fmt_ns(*v)),
            lengths.last().map_or_else(|| "-".into(), |v| fmt_ns(*v)),
            format!("{:.3} %", each("cpu_lost_pct").iter().sum::<f64>()),
            if in_events.is_empty() {
                "-".into()
            } else {
                fmt_ns(in_events.iter().sum::<f64>() / in_events.len() as f64)
            },
        ]);
    }
    let cpu = c.params.get("cpu").and_then(Value::as_u64).unwrap_or(0);
    let mut notes = Vec::new();
    if let (Some(a), Some(lost)) = (get("attributed_pct"), get("cpu_lost_pct")) {
        let mut outside = format!(
            "attributed: {a:.1} % of the {lost:.3} % of the CPU lost; in the events' own \
             handlers: {:.1} %",
            get("in_events_pct").unwrap_or(0.0)
        );
        if let Some(p) = get("outside_period_ns") {
            outside.push_str(&format!(
                "; outside the kernel's view: {:.0} % of those gaps come every {} (a rhythm \
                 the guest kernel does not see: a hypervisor's timer, an SMI)",
                get("outside_periodic_share_pct").unwrap_or(0.0),
                fmt_ns(p)
            ));
        }
        if let (Some(stolen), Some(rest)) = (get("outside_steal_ms"), get("outside_unstolen_ms")) {
            outside.push_str(&format!(
                "; of that time the host ran something else in this CPU's place for {stolen:.3}                  ms (the steal clock over the spin) and handled the guest itself for {rest:.3}                  ms (VM exits, its own timer: time steal accounting does not count)"
            ));
        }
        notes.push(outside);
    }
    if let (Some(t), Some(loc)) = (get("timer_events_in_window"), get("local_timer_interrupts")) {
        notes.push(format!(
            "local timer: {t:.0} entries traced against {loc:.0} in /proc/interrupts over the \
             same window ({:.1} per s, every {}); its handler {} (median), a gap it took {}",
            get("local_timer_per_s").unwrap_or(0.0),
            ns("timer_period_ns"),
            ns("timer_handler_median_ns"),
            ns("timer_gap_median_ns"),
        ));
    }
    if let (Some(cost), Some(plain)) =
        (get("trace_cost_cpu_lost_pct"), get("untraced_cpu_lost_pct"))
    {
        // Less lost traced than untraced cannot be tracing's doing: the machine's own
        // interruptions moved between the two spins, so no cost is claimed.
        notes.push(if cost >= 0.0 {
            format!(
                "what tracing cost: the CPU lost {:.3} % traced against {plain:.3} % untraced \
                 ({cost:+.3} points)",
                plain + cost
            )
        } else {
            format!(
                "what tracing cost: not measurable here: the CPU lost less traced ({:.3} %) \
                 than untraced ({plain:.3} %), so the machine's own interruptions changed \
                 between the two spins by more than tracing added",
                plain + cost
            )
        });
    }
    if !once.is_empty() {
        let names: Vec<&str> = once
            .iter()
            .map(|(_, l)| l.trim_start_matches("task "))
            .collect();
        notes.push(format!(
            "other tasks, once each: {} tasks that took one gap each ({}); their median and \
             p99 are over those gaps, the last their largest",
            names.len(),
            names.join(", ")
        ));
    }
    notes.extend(super::trace_lines([c], |_| format!("CPU {cpu}")));
    for k in c.checks.iter().filter(|k| !k.passed) {
        notes.push(format!(
            "* {}: {} counted {:.1}, expected {:.1}: {}",
            c.id, k.name, k.counted, k.expected, k.detail
        ));
    }
    View {
        detail: Vec::new(),
        title: format!("noise: CPU {cpu} as the kernel saw it (a second, traced spin)"),
        head: [
            "source",
            "per s",
            "median",
            "p99",
            "CPU lost",
            "in events, each",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::testkit;

    fn traced(cost: f64) -> View {
        let mut c = testkit::case("noise.cpu0.kernel", "interruption", 1000.0);
        c.counters.insert("trace_cost_cpu_lost_pct".into(), cost);
        c.counters.insert("untraced_cpu_lost_pct".into(), 1.0);
        kernel_view(&c)
    }

    #[test]
    fn tasks_seen_once_each_are_one_row() {
        let mut c = testkit::case("noise.cpu0.kernel", "gap", 1000.0);
        c.params.insert("kernel_view".into(), true.into());
        let mut labels = serde_json::Map::new();
        for (k, label, count, len) in [
            ("timer", "local timer", 250.0, 3000.0),
            ("task.a", "task a", 1.0, 10_000.0),
            ("task.b", "task b", 1.0, 30_000.0),
            ("task.c", "task c", 1.0, 20_000.0),
            ("task.d", "task d", 4.0, 5_000.0),
        ] {
            labels.insert(k.into(), label.into());
            c.counters.insert(format!("source.{k}.count"), count);
            c.counters.insert(format!("source.{k}.per_s"), count);
            c.counters.insert(format!("source.{k}.median_ns"), len);
            c.counters.insert(format!("source.{k}.p99_ns"), len);
            c.counters.insert(format!("source.{k}.cpu_lost_pct"), 0.001);
            c.counters.insert(format!("source.{k}.in_events_ns"), 100.0);
        }
        c.params.insert("sources".into(), labels.into());
        let v = kernel_view(&c);
        let labels: Vec<&str> = v.rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(labels.len(), 3, "{labels:?}");
        assert!(labels.contains(&"task d") && labels.contains(&"local timer"));
        let last = v.rows.last().unwrap();
        assert_eq!(last[0], "other tasks, once each (3)");
        assert_eq!(last[1], "3.0");
        assert_eq!(last[2], fmt_ns(20_000.0));
        assert_eq!(last[3], fmt_ns(30_000.0));
        assert!(
            v.notes.iter().any(|n| n.contains("(a, b, c)")),
            "{:?}",
            v.notes
        );
    }

    #[test]
    fn tracing_is_said_to_cost_only_what_it_can_have_cost() {
        let v = traced(0.25);
        assert!(
            v.notes.iter().any(|n| n
                .contains("the CPU lost 1.250 % traced against 1.000 % untraced (+0.250 points)")),
            "{:?}",
            v.notes
        );
        // Less lost traced than untraced: no negative cost, the reason instead.
        let v = traced(-0.5);
        let note = v
            .notes
            .iter()
            .find(|n| n.starts_with("what tracing cost"))
            .unwrap();
        assert!(note.contains("not measurable here"), "{note}");
        assert!(!note.contains("-0.500"), "{note}");
    }
}
