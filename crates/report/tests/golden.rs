//! The schema's golden file and snapshots of every rendering of it.
//!
//! `tests/golden/oscost-1.json` is a real `oscost/1` document. It must read back and write out
//! byte for byte, so any schema change shows here first (bump the schema version, keep the old
//! golden file). The renderings are pinned beside it; `UPDATE_GOLDEN=1 cargo test` rewrites
//! the snapshots after a deliberate change to a renderer.

use oscost_report::{render, ResultDoc};
use std::path::PathBuf;

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/golden")
        .join(name)
}

fn doc() -> (String, ResultDoc) {
    let text = std::fs::read_to_string(golden("oscost-1.json")).unwrap();
    let doc: ResultDoc = serde_json::from_str(&text).expect("golden file reads as oscost/1");
    (text, doc)
}

fn snapshot(name: &str, rendered: &str) {
    let path = golden(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, rendered).unwrap();
    }
    let pinned = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        rendered, pinned,
        "{name} changed; UPDATE_GOLDEN=1 if intended"
    );
}

#[test]
fn golden_document_round_trips_exactly() {
    let (text, doc) = doc();
    assert_eq!(doc.schema, oscost_report::SCHEMA);
    assert_eq!(render::json(&doc).unwrap(), text);
}

#[test]
fn unknown_fields_are_rejected() {
    let (text, _) = doc();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["experiments"][0]["cases"][0]["surprise"] = 1.into();
    assert!(serde_json::from_value::<ResultDoc>(v).is_err());
}

#[test]
fn renderings_match_their_snapshots() {
    let (_, doc) = doc();
    snapshot("oscost-1.md", &render::markdown(&doc));
    snapshot("oscost-1.csv", &render::csv(&doc).unwrap());
    snapshot(
        "oscost-1.txt",
        &render::terminal(
            &doc.experiments[0],
            &doc.environment.clock.tick_unit,
            Some(120),
        ),
    );
}
