//! The timeline's traced round in the report: the kernel's table from fixed counters (fitting
//! 80 and 60 columns), and its who-ran-when drawn under the workers' trace from fixed runs.

use oscost_model::case::Series;
use oscost_model::ResultDoc;
use oscost_report::export;
use oscost_report::plot::timeline::progress_with_kernel_svg;
use serde_json::json;
use std::path::PathBuf;

fn suite() -> ResultDoc {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/suite.json");
    oscost_model::read(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The suite's timeline with a traced case for two workers, of known figures.
fn with_kernel_case() -> oscost_model::ExperimentResult {
    let doc = suite();
    let mut e = doc
        .experiments
        .into_iter()
        .find(|e| e.name == "timeline")
        .unwrap();
    let mut k = e
        .cases
        .iter()
        .find(|c| c.id == "timeline.processes.n2")
        .unwrap()
        .clone();
    k.id = "timeline.processes.n2.kernel".into();
    k.params.insert("kernel_view".into(), json!(true));
    k.checks.clear();
    k.counters = [
        ("run_vs_cpu_ratio_median", 1.002),
        ("kernel_slice_median_ns", 3.99e6),
        ("own_slice_median_ns", 4.02e6),
        ("slice_ratio_median", 0.995),
        ("slices_within_chunk_pct", 94.0),
        ("runs_preempted", 54.0),
        ("runs_slept", 0.0),
        ("wake_latency_median_ns", 9197.0),
        ("other_tasks_ns", 6.23e6),
        ("trace_cost_total_pct", 2.9),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    e.cases.push(k);
    e
}

#[test]
fn the_kernel_table_holds_the_traced_figures_and_fits() {
    let e = with_kernel_case();
    let v = oscost_report::experiments::views(&e);
    let k = v
        .iter()
        .find(|v| v.title.contains("kernel's scheduler"))
        .expect("a table of the traced round");
    assert_eq!(k.rows.len(), 1);
    assert_eq!(
        k.rows[0],
        [
            "timeline.processes.n2",
            "1.002",
            "3.990 ms / 4.020 ms",
            "0.995",
            "94 %",
            "54 / 0",
            "9.197 µs",
            "6.230 ms",
            "+2.9 %"
        ]
    );
    // The traced case is no row of the timed table.
    let main = &v[0];
    assert!(main.rows.iter().all(|r| !r[0].ends_with(".kernel")));
    for width in [80u16, 60] {
        let text = export::terminal::view(k, Some(width));
        for l in text.lines() {
            assert!(l.chars().count() <= usize::from(width), "{width}: {l}");
        }
        assert!(text.contains("timeline.processes.n2"));
    }
}

#[test]
fn the_kernel_runs_are_drawn_under_the_workers_trace() {
    let trace = Series {
        name: "trace".into(),
        columns: vec!["elapsed_ns".into(), "worker".into(), "chunk".into()],
        points: vec![
            vec![1e6, 1.0, 1.0],
            vec![2e6, 2.0, 1.0],
            vec![3e6, 1.0, 2.0],
            vec![4e6, 2.0, 2.0],
        ],
    };
    let runs = Series {
        name: "kernel_runs".into(),
        columns: vec![
            "from_ns".into(),
            "to_ns".into(),
            "worker".into(),
            "ended".into(),
        ],
        points: vec![
            vec![0.0, 1.1e6, 1.0, 1.0],
            vec![1.1e6, 1.2e6, 0.0, 2.0],
            vec![1.2e6, 2.1e6, 2.0, 1.0],
            vec![2.1e6, 3.1e6, 1.0, 2.0],
            vec![3.1e6, 3.2e6, -1.0, 0.0],
            vec![3.2e6, 4.0e6, 2.0, 0.0],
        ],
    };
    let text = progress_with_kernel_svg("t.n2.kernel", "d", &trace, &[], Some(&runs)).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("valid XML");
    let tips: Vec<String> = doc
        .root_element()
        .descendants()
        .filter(|n| n.has_tag_name("title"))
        .filter_map(|n| n.text().map(str::to_owned))
        .collect();
    let kernel: Vec<&String> = tips.iter().filter(|t| t.contains(", then ")).collect();
    // Five runs drawn; idle (-1) is left blank.
    assert_eq!(kernel.len(), 5, "{tips:?}");
    assert!(kernel
        .iter()
        .any(|t| *t == "another task: 1.100 to 1.200 ms, then slept"));
    assert!(kernel
        .iter()
        .any(|t| *t == "worker 2: 3.200 to 4.000 ms, then still running"));
    assert!(text.contains("from the kernel&apos;s sched_switch"));
    // Without runs the figure is the plain one.
    let plain = progress_with_kernel_svg("t.n2.kernel", "d", &trace, &[], None).unwrap();
    assert!(!plain.contains("sched_switch"));
}
