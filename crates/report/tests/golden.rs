//! The schema's golden file and snapshots of every rendering of it.
//!
//! `tests/golden/oscost-1.json` is an `oscost/1` document made on the scripted clock
//! (`oscost --scripted run example example-more --json tests/golden/oscost-1.json`): a fictional
//! machine, so it carries no real machine's details, and every shape a result can take. It
//! must read back and write out byte for byte, so any schema change shows here first (bump the
//! schema version, keep the old golden file). The renderings are pinned with insta.

use oscost_model::ResultDoc;
use oscost_report::render;
use std::path::PathBuf;

fn doc() -> (String, ResultDoc) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/oscost-1.json");
    let text = std::fs::read_to_string(path).unwrap();
    let doc: ResultDoc = oscost_model::read(&text).expect("golden file reads as oscost/1");
    (text, doc)
}

#[test]
fn golden_document_round_trips_exactly() {
    let (text, doc) = doc();
    assert_eq!(doc.schema, oscost_model::SCHEMA);
    assert_eq!(render::json(&doc).unwrap(), text);
}

#[test]
fn golden_document_holds_every_shape() {
    let (_, doc) = doc();
    assert!(doc.experiments.len() >= 2);
    let cases = || doc.experiments.iter().flat_map(|e| &e.cases);
    assert!(cases().any(|c| c.checks.iter().any(|k| k.passed)));
    assert!(cases().any(|c| c.checks.iter().any(|k| !k.passed)));
    assert!(cases().any(|c| !c.series.is_empty()));
    assert!(cases().any(|c| !c.warnings.is_empty()));
    let derived = || doc.experiments.iter().flat_map(|e| &e.derived);
    assert!(derived().any(|d| d.flagged.is_some()));
    assert!(derived().any(|d| d.flagged.is_none()));
    assert!(doc.experiments.iter().any(|e| !e.unavailable.is_empty()));
    assert!(doc.experiments.iter().any(|e| !e.warnings.is_empty()));
    assert!(doc.environment.load.is_some());
}

#[test]
fn unknown_fields_are_rejected_at_every_level() {
    let (text, _) = doc();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for pointer in [
        "",
        "/environment",
        "/environment/clock",
        "/environment/load",
        "/experiments/0",
        "/experiments/0/cases/0",
        "/experiments/0/cases/0/checks/0",
        "/experiments/0/derived/0",
        "/experiments/0/unavailable/0",
    ] {
        let mut v = v.clone();
        v.pointer_mut(pointer)
            .and_then(|o| o.as_object_mut())
            .unwrap_or_else(|| panic!("no object at {pointer}"))
            .insert("surprise".into(), 1.into());
        assert!(
            serde_json::from_value::<ResultDoc>(v).is_err(),
            "an unknown field at {pointer} was accepted"
        );
    }
}

#[test]
fn renderings_match_their_snapshots() {
    let (_, doc) = doc();
    insta::assert_snapshot!("markdown", render::markdown(&doc));
    insta::assert_snapshot!("csv", render::csv(&doc).unwrap());
    for e in &doc.experiments {
        insta::assert_snapshot!(
            format!("terminal-{}", e.name),
            render::terminal(e, &doc.environment.clock.tick_unit, Some(120))
        );
    }
}
