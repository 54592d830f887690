//! Test-only builders for the views' unit tests.

use oscost_model::{CaseResult, ExperimentResult, ResultDoc};

/// A summarised case `id` measured in `unit`, every figure of it `median` ns over five
/// samples, with no params, counters, checks or warnings: each test adds what its view reads.
pub(crate) fn case(id: &str, unit: &str, median: f64) -> CaseResult {
    serde_json::from_value(serde_json::json!({
        "id": id, "description": "", "unit": unit, "params": {}, "samples": 5,
        "iterations_per_sample": 1, "loop_overhead_ns": 0.0, "median_ns": median,
        "mad_ns": 0.0, "min_ns": median, "max_ns": median, "mean_ns": median,
        "stddev_ns": 0.0, "p5_ns": median, "p95_ns": median, "ci95_ns": [median, median],
        "median_cycles": median, "ci95_cycles": [median, median],
        "outliers": {"low_severe": 0, "low_mild": 0, "high_mild": 0, "high_severe": 0},
        "noisy": false, "checks": [], "checks_passed": true, "counters": {},
        "at_rate": null, "warnings": [], "series": [], "raw_ns": []
    }))
    .expect("a summarised case")
}

/// An experiment `name` of `cases`, with nothing else.
pub(crate) fn experiment(name: &str, cases: Vec<CaseResult>) -> ExperimentResult {
    ExperimentResult {
        name: name.into(),
        params: Default::default(),
        cases,
        unavailable: vec![],
        derived: vec![],
        warnings: vec![],
        notes: vec![],
        load: None,
        controls: None,
    }
}

/// A run of `experiments` on the example machine, with no id and no start time.
pub(crate) fn doc(experiments: Vec<ExperimentResult>) -> ResultDoc {
    ResultDoc {
        schema: oscost_model::SCHEMA.into(),
        run_id: None,
        started_at: None,
        environment: oscost_model::example::environment(),
        experiments,
        bill: None,
    }
}
