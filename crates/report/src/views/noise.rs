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
    let rows = sources(c)
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
    notes.extend(super::trace_lines([c], |_| format!("CPU {cpu}")));
    for k in c.checks.iter().filter(|k| !k.passed) {
        notes.push(format!(
            "* {}: {} counted {:.1}, expected {:.1}: {}",
            c.id, k.name, k.counted, k.expected, k.detail
        ));
    }
    View {
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
