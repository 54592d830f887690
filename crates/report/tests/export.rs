//! Every exporter writes what the renderings pinned in `golden.rs` and `html.rs` show: the
//! exporters are the one implementation of each format, the older entry points thin calls.

use oscost_model::ResultDoc;
use oscost_report::export::{self, html, ExportOptions, Format, Warnings};
use oscost_report::render;
use std::path::PathBuf;

fn doc() -> (String, ResultDoc) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/oscost-2.json");
    let text = std::fs::read_to_string(path).unwrap();
    let doc = oscost_model::read(&text).expect("golden file reads as oscost/2");
    (text, doc)
}

#[test]
fn each_format_exports_what_its_rendering_shows() {
    let (text, doc) = doc();
    let opts = ExportOptions::default();
    assert_eq!(Format::Json.export(&doc, &opts).unwrap(), text);
    assert_eq!(
        Format::Markdown.export(&doc, &opts).unwrap(),
        render::markdown(&doc)
    );
    assert_eq!(
        Format::Csv.export(&doc, &opts).unwrap(),
        render::csv(&doc).unwrap()
    );
    let unit = &doc.environment.clock.tick_unit;
    let tables: String = doc
        .experiments
        .iter()
        .map(|e| render::terminal(e, unit, None))
        .collect();
    assert_eq!(Format::Terminal.export(&doc, &opts).unwrap(), tables);
    let label = doc.run_id.clone().unwrap_or_else(|| "this run".into());
    assert_eq!(
        Format::Html.export(&doc, &opts).unwrap(),
        html::report(&[(label, &doc)]).unwrap()
    );
}

#[test]
fn options_reach_the_formats_that_use_them() {
    let (_, doc) = doc();
    let unit = &doc.environment.clock.tick_unit;
    let narrow = ExportOptions {
        width: Some(60),
        warnings: Warnings::Hidden,
        label: Some("before".into()),
    };
    let e = &doc.experiments[0];
    let alone = ResultDoc {
        experiments: vec![e.clone()],
        bill: None,
        ..doc.clone()
    };
    let text = export::terminal::experiment(e, unit, &narrow);
    assert_eq!(Format::Terminal.export(&alone, &narrow).unwrap(), text);
    assert_ne!(text, render::terminal(e, unit, None));
    assert_eq!(
        Format::Html.export(&doc, &narrow).unwrap(),
        html::report(&[("before".into(), &doc)]).unwrap()
    );
    // Formats for programs ignore the terminal's options.
    assert_eq!(
        Format::Csv.export(&doc, &narrow).unwrap(),
        Format::Csv.export(&doc, &ExportOptions::default()).unwrap()
    );
}

#[test]
fn exporters_lists_every_format_once() {
    let listed: Vec<&str> = export::exporters().iter().map(|e| e.name()).collect();
    let formats: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
    assert_eq!(listed, formats);
}
