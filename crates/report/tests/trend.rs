//! The trend figure from fixed points: valid XML, a point and a bar per run, a mark where the
//! environment changed, and pinned byte for byte.

use oscost_report::trend::{trend_svg, TrendRow};

fn rows() -> Vec<TrendRow> {
    let medians = [1180.0, 1210.0, 1195.0, f64::NAN, 1530.0, 1525.0];
    medians
        .iter()
        .enumerate()
        .map(|(i, &m)| TrendRow {
            label: format!("{:08x}", 0x1a2b_3c4d_u32 + i as u32),
            date: format!("2026-11-{:02} 03:1{i}", 20 + i),
            median_ns: m,
            ci95_ns: [m - 20.0, m + 25.0],
            // The kernel changed before the fifth run.
            env_changed: i == 4,
            checks_passed: i != 2,
            changes: if i == 4 {
                vec!["kernel 6.1.0 → 6.12.0".into()]
            } else {
                Vec::new()
            },
            // The first two runs were quick looks.
            quick: i < 2,
        })
        .collect()
}

fn svg() -> String {
    trend_svg("switch.pipe.threads.same.switch_cost", "derived", &rows())
}

#[test]
fn the_figure_is_valid_xml_with_a_point_per_run_and_the_change_marked() {
    let text = svg();
    let doc = roxmltree::Document::parse(&text).expect("valid XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    // One tooltip'd marker per run with a median (the fourth has none).
    let titled = |prefix: &str| {
        root.descendants()
            .filter(|n| n.has_tag_name("rect"))
            .filter(|n| {
                n.children().any(|c| {
                    c.has_tag_name("title") && c.text().is_some_and(|t| t.starts_with(prefix))
                })
            })
            .count()
    };
    assert_eq!(titled("run "), 5);
    // The change is a mark above the frame, named in its tooltip, not text over the data.
    assert_eq!(titled("environment changed: kernel 6.1.0 → 6.12.0"), 1);
    // Quick runs are drawn hollow, named in their tooltips and in the legend.
    assert_eq!(titled("run 1a2b3c4d (--quick)"), 1);
    let hollow = root
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some("none"))
        .count();
    assert_eq!(hollow, 3, "two quick runs and the legend's mark");
    // The line breaks at the gap: two pieces.
    let lines = root
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .count();
    assert_eq!(lines, 2);
    let texts: Vec<&str> = root
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert!(texts.iter().any(|t| t.starts_with("environment changed (")));
    assert!(texts.contains(&"estimate (µs)"), "{texts:?}");
    assert!(texts
        .iter()
        .any(|t| t.starts_with("a mechanism check failed")));
    assert!(texts.iter().any(|t| t.starts_with("hollow: a --quick run")));
    insta::assert_snapshot!("trend-switch-cost", text);
}

#[test]
fn a_case_is_drawn_per_operation() {
    let text = trend_svg("syscall.getpid <&>", "call", &rows()[..2]);
    roxmltree::Document::parse(&text).expect("valid XML");
    assert!(text.contains("syscall.getpid &lt;&amp;&gt;: median per call across runs"));
    assert!(!text.contains("environment changed</text>"));
    assert!(!text.contains("a mechanism check failed"));
}
