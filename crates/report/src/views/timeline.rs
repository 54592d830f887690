//! The timeline's table, as the study it repeats tabulated it: per worker count, throughput,
//! the average and each worker's latency, the time slices seen against the one expected, and
//! the CPU shares measured against the ones the kernel's weights predict.

use super::View;
use crate::format::fmt_ns;
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
    vec![View {
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
    }]
}
