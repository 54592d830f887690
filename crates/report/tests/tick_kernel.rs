//! `tick`'s traced runs in the report: the table of one event taken apart from fixed counters
//! (fitting 80 and 60 columns), and its stacked bar per source.

use oscost_model::ResultDoc;
use oscost_report::export;
use serde_json::json;
use std::path::PathBuf;

fn with_kernel_case() -> oscost_model::ExperimentResult {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/suite.json");
    let doc: ResultDoc = oscost_model::read(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut e = doc
        .experiments
        .into_iter()
        .find(|e| e.name == "tick")
        .unwrap();
    let mut k = e.cases[0].clone();
    k.id = "tick.signal.50us.kernel".into();
    k.params.clear();
    k.params.insert("kernel_view".into(), json!(true));
    k.params.insert("traced_source".into(), json!("signal"));
    k.params.insert("period_ns".into(), json!(50_000));
    k.checks.clear();
    k.counters = [
        ("lost_ns_per_event", 13_308.0),
        ("kernel_ns_per_event", 4_227.0),
        ("interrupt_ns_per_event", 3_206.0),
        ("callbacks_ns_per_event", 1_015.0),
        ("softirq_ns_per_event", 6.0),
        ("helper_ns_per_event", 0.0),
        ("outside_ns_per_event", 9_081.0),
        ("untraced_lost_ns_per_event", 9_115.0),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    e.cases.push(k);
    e
}

#[test]
fn the_table_takes_one_event_apart_and_fits() {
    let e = with_kernel_case();
    let v = oscost_report::experiments::views(&e);
    let k = v
        .iter()
        .find(|v| v.title.contains("taken apart"))
        .expect("a table of the traced runs");
    assert_eq!(
        k.rows,
        [[
            "signal 50 µs",
            "13.31 µs",
            "4.227 µs",
            "3.206 µs",
            "1.015 µs",
            "6.000 ns",
            "0.000 ns",
            "9.081 µs",
            "9.115 µs"
        ]]
    );
    // The traced case is no row of the per-period tables.
    for t in v.iter().filter(|v| !v.title.contains("taken apart")) {
        assert!(t.rows.iter().all(|r| !r[0].contains("kernel")));
    }
    for width in [80u16, 60] {
        let text = export::terminal::view(k, Some(width));
        for l in text.lines() {
            assert!(l.chars().count() <= usize::from(width), "{width}: {l}");
        }
    }
}

#[test]
fn the_figure_has_a_bar_per_traced_source() {
    let e = with_kernel_case();
    let p = oscost_report::experiments::plots(&e);
    let k = p
        .iter()
        .find(|p| p.name == "tick.kernel")
        .expect("the stacked bar");
    roxmltree::Document::parse(&k.svg).expect("valid XML");
    assert!(k.svg.contains("signal 50 µs"));
    assert!(k.svg.contains("outside the kernel&apos;s handlers"));
}
