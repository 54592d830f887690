//! The timeline's figure from a fixed trace: valid XML, one line per worker, one bar per turn,
//! every text escaped, and pinned byte for byte.

use oscost_model::case::Series;
use oscost_report::plot::timeline::progress_svg;

/// Two workers taking turns of 4 chunks (4 ms at 1 ms a chunk), 12 chunks each, then a third
/// that only runs at the end.
fn fixed_trace() -> Series {
    let mut points = Vec::new();
    let mut t = 0.0;
    let mut done = [0usize; 3];
    for turn in 0..6 {
        let w = turn % 2;
        for _ in 0..4 {
            t += 1e6;
            done[w] += 1;
            points.push(vec![t, (w + 1) as f64, done[w] as f64]);
        }
    }
    for _ in 0..3 {
        t += 1e6;
        done[2] += 1;
        points.push(vec![t, 3.0, done[2] as f64]);
    }
    Series {
        name: "trace".into(),
        columns: vec!["elapsed_ns".into(), "worker".into(), "chunk".into()],
        points,
    }
}

fn svg() -> String {
    let labels = vec![
        "worker 1 (nice 0)".to_string(),
        "worker 2 (nice 5)".to_string(),
        "worker <3> & \"friends\"".to_string(),
    ];
    progress_svg(
        "timeline.processes.n3",
        "3 processes of <12> chunks & more",
        &fixed_trace(),
        &labels,
    )
    .expect("a trace with points draws")
}

#[test]
fn the_figure_is_valid_xml_with_a_line_per_worker_and_a_bar_per_turn() {
    let text = svg();
    let doc = roxmltree::Document::parse(&text).expect("valid XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let lines: Vec<_> = root
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .collect();
    assert_eq!(lines.len(), 3);
    let bars = root
        .descendants()
        .filter(|n| n.has_tag_name("rect"))
        .filter(|n| n.children().any(|c| c.has_tag_name("title")))
        .count();
    assert_eq!(bars, 7, "six alternating turns and the third worker's one");
    // Every text came through the escaping intact.
    let texts: Vec<String> = root
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(str::to_owned))
        .collect();
    assert!(
        texts.iter().any(|t| t == "worker <3> & \"friends\""),
        "{texts:?}"
    );
    assert!(texts
        .iter()
        .any(|t| t == "3 processes of <12> chunks & more"));
    insta::assert_snapshot!("timeline-progress", text);
}

#[test]
fn an_empty_or_foreign_series_draws_nothing() {
    let empty = Series {
        name: "trace".into(),
        columns: vec!["elapsed_ns".into(), "worker".into(), "chunk".into()],
        points: Vec::new(),
    };
    assert!(progress_svg("x", "", &empty, &[]).is_none());
    let other = Series {
        name: "visit_order".into(),
        columns: vec!["step".into(), "task".into()],
        points: vec![vec![1.0, 2.0]],
    };
    assert!(progress_svg("x", "", &other, &[]).is_none());
}
