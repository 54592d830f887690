//! Helpers the report crate's tests share.
// Each test binary uses only some of them.
#![allow(dead_code)]

use oscost_model::ResultDoc;

/// `doc` with one case's samples scaled by `factor`, as a slower or faster run of that case
/// would give.
pub fn scaled(mut doc: ResultDoc, case: &str, factor: f64) -> ResultDoc {
    let c = doc
        .experiments
        .iter_mut()
        .flat_map(|e| e.cases.iter_mut())
        .find(|c| c.id == case)
        .unwrap();
    c.raw_ns.iter_mut().for_each(|x| *x *= factor);
    c.median_ns *= factor;
    // Its range too: a file whose median lies outside it does not read.
    c.min_ns *= factor;
    c.max_ns *= factor;
    c.ci95_ns = c.ci95_ns.map(|x| x * factor);
    doc
}

/// `doc` with its first case made a latency case: 2000 samples from `from` ns a nanosecond
/// apart, and the lateness percentiles among its counters.
pub fn with_latency_case(mut doc: ResultDoc, from: f64) -> ResultDoc {
    let c = &mut doc.experiments[0].cases[0];
    c.raw_ns = (0..2000).map(|i| from + f64::from(i)).collect();
    c.samples = c.raw_ns.len();
    // The file's median is its samples' (no note saying otherwise).
    c.median_ns = from + 999.5;
    (c.min_ns, c.max_ns) = (from, from + 1999.0);
    c.ci95_ns = [from + 990.0, from + 1010.0];
    for (k, v) in [
        ("lateness_p50_ns", 1_000.0),
        ("lateness_p90_ns", 1_800.0),
        ("lateness_p99_ns", 1_980.0),
        ("lateness_p99_9_ns", 1_998.0),
    ] {
        c.counters.insert(k.into(), from + v);
    }
    doc
}
