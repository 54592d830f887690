//! The timeline's table, as the study it repeats tabulated it: per worker count, throughput,
//! the average and each worker's latency, the time slices seen against the one expected, and
//! the CPU shares measured against the ones the kernel's weights predict.

use super::View;
use crate::format::fmt_ns;
use oscost_model::ids::timeline::{Id, Reading};
use oscost_model::{CaseResult, ExperimentResult};

fn counter(c: &CaseResult, key: &str) -> Option<f64> {
    c.counters.get(key).copied().filter(|v| v.is_finite())
}

/// `key` with `{}` replaced by 1..=n, each present; `None` if any is missing.
fn per_worker(c: &CaseResult, n: usize, key: &str) -> Option<Vec<f64>> {
    (1..=n)
        .map(|w| counter(c, &key.replace("{}", &w.to_string())))
        .collect()
}

fn pct_list(v: &[f64]) -> String {
    let parts: Vec<String> = v.iter().map(|x| format!("{x:.1}")).collect();
    format!("{} %", parts.join(" / "))
}

/// The view of a timeline result: one row per case that carries the figures.
pub fn views(e: &ExperimentResult) -> Vec<View> {
    let rows: Vec<Vec<String>> = e
        .cases
        .iter()
        .filter_map(|c| {
            let tp = counter(c, "throughput_workers_per_s")?;
            let n = c.params.get("workers")?.as_u64()? as usize;
            let dash = || "-".to_string();
            let latencies = per_worker(c, n, "latency_worker{}_ns")
                .map(|v| v.iter().map(|&x| fmt_ns(x)).collect::<Vec<_>>().join(", "))
                .unwrap_or_else(dash);
            let slice = match (counter(c, "slice_median_ns"), counter(c, "slice_p95_ns")) {
                (Some(m), Some(p)) => format!("{} / {}", fmt_ns(m), fmt_ns(p)),
                _ => dash(),
            };
            let shares = per_worker(c, n, "share_worker{}_pct")
                .filter(|_| n > 1)
                .map(|v| pct_list(&v))
                .unwrap_or_else(dash);
            let predicted = per_worker(c, n, "share_predicted_worker{}_pct")
                .filter(|_| n > 1)
                .map(|v| pct_list(&v))
                .unwrap_or_else(dash);
            Some(vec![
                c.id.clone(),
                n.to_string(),
                format!("{tp:.1}"),
                counter(c, "latency_avg_ns").map_or_else(dash, fmt_ns),
                latencies,
                slice,
                counter(c, "expected_slice_ns").map_or_else(dash, fmt_ns),
                shares,
                predicted,
            ])
        })
        .collect();
    if rows.is_empty() {
        return Vec::new();
    }
    let mut notes = vec![
        "throughput: workers finished per second (N / the time until the last finished); \
         latency: a worker's finish time from the common start; medians over the rounds."
            .to_string(),
        "slice: a turn of one worker in the trace, from the previous worker's last chunk end to \
         its own last chunk end (right to within one chunk), counting only turns that began and \
         ended with a switch; with unequal weights one turn can hold several slices."
            .to_string(),
        "CPU share: each worker's CPU time while every worker was runnable (until the first \
         finished); predicted: its weight in the kernel's nice-to-weight table over the sum, \
         checked within ±2 points."
            .to_string(),
    ];
    if let Some(how) = e.params.get("expected_slice").and_then(|v| v.as_str()) {
        notes.push(format!("expected slice: {how}."));
    }
    let mut views = vec![View {
        detail: Vec::new(),
        title: "timeline: throughput, latency, slices and CPU shares".into(),
        head: [
            "case",
            "N",
            "workers/s",
            "avg latency",
            "latency per worker",
            "slice median / p95",
            "expected slice",
            "CPU share",
            "predicted",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes,
    }];
    views.extend(kernel_view(e));
    views
}

/// The id of the run a traced round belongs to: `timeline.processes.n2.kernel` →
/// `timeline.processes.n2`.
fn traced_run(id: &str) -> Option<String> {
    match Id::parse(id)? {
        Id::Of(c, Reading::Kernel) => Some(c.to_string()),
        _ => None,
    }
}

/// The traced rounds: the kernel's switches held against the workers' own trace.
fn kernel_view(e: &ExperimentResult) -> Option<View> {
    let dash = || "-".to_string();
    let rows: Vec<Vec<String>> = e
        .cases
        .iter()
        .filter(|c| c.params.get("kernel_view").and_then(|v| v.as_bool()) == Some(true))
        .map(|c| {
            let get = |k: &str| counter(c, k);
            let ratio = |k: &str| get(k).map_or_else(dash, |v| format!("{v:.3}"));
            let slice = match (get("kernel_slice_median_ns"), get("own_slice_median_ns")) {
                (Some(k), Some(o)) => format!("{} / {}", fmt_ns(k), fmt_ns(o)),
                (Some(k), None) => fmt_ns(k),
                _ => dash(),
            };
            let ended = match (get("runs_preempted"), get("runs_slept")) {
                (Some(p), Some(s)) => format!("{p:.0} / {s:.0}"),
                _ => dash(),
            };
            let cost = get("trace_cost_total_pct").map_or_else(dash, |v| format!("{v:+.1} %"));
            vec![
                format!(
                    "{}{}",
                    traced_run(&c.id).unwrap_or_else(|| c.id.clone()),
                    if c.checks_passed { "" } else { " *" }
                ),
                ratio("run_vs_cpu_ratio_median"),
                slice,
                ratio("slice_ratio_median"),
                get("slices_within_chunk_pct").map_or_else(dash, |v| format!("{v:.0} %")),
                ended,
                get("wake_latency_median_ns").map_or_else(dash, fmt_ns),
                get("other_tasks_ns").map_or_else(dash, fmt_ns),
                cost,
            ]
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut notes = vec![
        "one more round per worker count with sched_switch and sched_wakeup recorded, apart \
         from the timed rounds. run/CPU: each worker's run time from the kernel's switches \
         (its own start to its finish) over its CPU clock, median over the workers; slice: \
         the kernel's whole turns (switch in to switch out) / the workers' own, medians; \
         ratio: each of the workers' turns against the kernel's over it measured alike (from \
         the previous worker's switch out: other tasks' time in it, which the workers cannot \
         see, included), median; within a chunk: the matched turns that differ by at most \
         one chunk (the workers note the time only after one)."
            .to_string(),
        "preempted / slept: the workers' runs that ended still runnable / asleep while they \
         had work; wake-up: sched_wakeup to the switch in (median); others: the CPU's time \
         in the round given to other tasks; trace cost: the traced round's total time against \
         the timed rounds' median."
            .to_string(),
    ];
    notes.extend(super::trace_lines(
        e.cases.iter().filter(|c| traced_run(&c.id).is_some()),
        |c| traced_run(&c.id).unwrap_or_else(|| c.id.clone()),
    ));
    for c in e.cases.iter().filter(|c| !c.checks_passed) {
        for k in c
            .checks
            .iter()
            .filter(|k| !k.passed && traced_run(&c.id).is_some())
        {
            notes.push(format!(
                "* {}: {} counted {:.0}, expected {:.0}: {}",
                c.id, k.name, k.counted, k.expected, k.detail
            ));
        }
    }
    Some(View {
        detail: Vec::new(),
        title: "timeline: the same workers as the kernel's scheduler saw them (a traced round)"
            .into(),
        head: [
            "case",
            "run/CPU",
            "slice kernel / own",
            "ratio",
            "within a chunk",
            "preempted / slept",
            "wake-up",
            "others",
            "trace cost",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes,
    })
}
