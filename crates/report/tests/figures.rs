//! Every figure of two fixed documents, pinned byte for byte: the schema's golden file (the
//! scripted example experiments) and `fixtures/suite.json`, a run of the default suite on a
//! real machine with its samples thinned and its machine description replaced by the
//! fictional one. Each must be valid XML whose texts came through the escaping intact.

use oscost_model::ResultDoc;
use oscost_report::plot::{self, Plot};
use std::path::PathBuf;

fn read(rel: &str) -> ResultDoc {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    oscost_model::read(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn golden() -> ResultDoc {
    read("../../tests/golden/oscost-2.json")
}

fn suite() -> ResultDoc {
    read("tests/fixtures/suite.json")
}

/// The golden file with its medians, intervals and samples moved by a different factor per
/// case: a second run to compare against.
fn shifted(mut doc: ResultDoc) -> ResultDoc {
    doc.run_id = Some("00000000-0000-4000-8000-000000000002".into());
    for e in &mut doc.experiments {
        for (i, c) in e.cases.iter_mut().enumerate() {
            let f = [3.0, 1.0, 0.9, 1.25][i % 4];
            c.median_ns *= f;
            c.ci95_ns = c.ci95_ns.map(|v| v * f);
            for v in &mut c.raw_ns {
                *v *= f;
            }
        }
    }
    doc
}

/// Parses a figure, checks its root, and returns the text of every `<text>` and `<title>`.
fn check(p: &Plot) -> Vec<String> {
    let doc = roxmltree::Document::parse(&p.svg)
        .unwrap_or_else(|e| panic!("{}: not valid XML: {e}", p.name));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg", "{}", p.name);
    assert!(root.attribute("viewBox").is_some(), "{}", p.name);
    assert!(
        !p.svg.contains("NaN") && !p.svg.contains("inf"),
        "{}",
        p.name
    );
    root.descendants()
        .filter(|n| n.has_tag_name("text") || n.has_tag_name("title"))
        .filter_map(|n| n.text().map(str::to_owned))
        .collect()
}

fn all(doc: &ResultDoc) -> Vec<Plot> {
    doc.experiments
        .iter()
        .flat_map(oscost_report::experiments::plots)
        .collect()
}

#[test]
fn the_suite_fixture_carries_only_the_fictional_machine() {
    assert_eq!(
        suite().environment,
        oscost_model::example::environment(),
        "fixtures/suite.json must describe the fictional machine only"
    );
}

#[test]
fn every_experiment_of_the_suite_draws_its_figures() {
    let doc = suite();
    let names: Vec<String> = all(&doc).into_iter().map(|p| p.name).collect();
    for e in &doc.experiments {
        assert!(
            names.contains(&format!("{}.distributions", e.name)),
            "{}: {names:?}",
            e.name
        );
    }
    for own in [
        "ring.hops",
        "split.tasks",
        "spawn.parent-size",
        "tick.per-event",
        "noise.cpu0.gaps",
        "noise.cpu1.gaps",
        "timeline.processes.n2",
    ] {
        assert!(names.iter().any(|n| n == own), "{own}: {names:?}");
    }
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        names.len(),
        "every figure has a name of its own"
    );
}

#[test]
fn every_figure_of_the_suite_is_pinned() {
    for p in all(&suite()) {
        let texts = check(&p);
        assert!(!texts.is_empty(), "{}", p.name);
        insta::assert_snapshot!(format!("suite-{}", p.name), p.svg);
    }
}

#[test]
fn every_figure_of_the_golden_file_is_pinned() {
    let plots = all(&golden());
    assert_eq!(plots.len(), 2, "one distribution per example experiment");
    for p in plots {
        check(&p);
        insta::assert_snapshot!(format!("golden-{}", p.name), p.svg);
    }
}

#[test]
fn runs_are_compared_case_by_case() {
    let (a, b) = (golden(), shifted(golden()));
    let docs = [
        ("first.json".to_owned(), &a),
        ("second <run> & co".to_owned(), &b),
    ];
    let plots = plot::comparison_plots(&docs);
    assert_eq!(
        plots.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["example.runs", "example-more.runs"]
    );
    for p in &plots {
        let texts = check(p);
        assert!(texts.iter().any(|t| t == "second <run> & co"), "{texts:?}");
        // A case three times slower reads +200 % against the first run.
        assert!(p.svg.contains("+200 % against first.json"), "{}", p.name);
    }
    insta::assert_snapshot!("golden-example.runs", plots[0].svg);
    // One run alone has nothing to be compared with.
    assert!(plot::comparison_plots(&docs[..1]).is_empty());
}

#[test]
fn hostile_text_in_a_result_stays_text_in_every_figure() {
    let mut doc = suite();
    let hostile = "<script>alert(1)</script> \"q\" & 'a'";
    for e in &mut doc.experiments {
        for c in &mut e.cases {
            c.id = format!("{}.{hostile}", c.id);
            c.description = hostile.into();
        }
        // A derived id keeps its shape (`switch.<primitive>.threads.same.switch_cost`) with
        // the text inside it.
        for d in &mut e.derived {
            d.id = d.id.replacen('.', &format!(".{hostile}"), 1);
        }
    }
    let plots = all(&doc);
    assert!(!plots.is_empty());
    for p in &plots {
        assert!(!p.svg.contains("<script"), "{}", p.name);
        let texts = check(p);
        assert!(
            texts.iter().any(|t| t.contains(hostile)),
            "{}: {texts:?}",
            p.name
        );
    }
}
