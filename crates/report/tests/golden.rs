//! The schema's golden file and snapshots of every rendering of it.
//!
//! `tests/golden/oscost-2.json` is an `oscost/2` document made on the scripted clock
//! (`oscost --scripted run example example-more --json tests/golden/oscost-2.json`): a fictional
//! machine, so it carries no real machine's details, and every shape a result can take. It
//! must read back and write out byte for byte, so any schema change shows here first (bump the
//! schema version, keep the old golden file). The renderings are pinned with insta.

use oscost_model::{ExperimentResult, ResultDoc};
use oscost_report::export::{self, ExportOptions, Warnings};
use oscost_report::render;
use std::path::PathBuf;

fn doc() -> (String, ResultDoc) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/oscost-2.json");
    let text = std::fs::read_to_string(path).unwrap();
    let doc: ResultDoc = oscost_model::read(&text).expect("golden file reads as oscost/2");
    (text, doc)
}

/// The terminal view of `e` at its natural width, with its warnings as `warnings` says.
fn terminal_with(e: &ExperimentResult, unit: &str, warnings: Warnings) -> String {
    let opts = ExportOptions {
        warnings,
        ..ExportOptions::default()
    };
    export::terminal::experiment(e, unit, &opts)
}

#[test]
fn golden_document_round_trips_exactly() {
    let (text, doc) = doc();
    assert_eq!(doc.schema, oscost_model::SCHEMA);
    assert_eq!(export::json::json(&doc).unwrap(), text);
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
            render::terminal(e, &doc.environment.clock.tick_unit, None)
        );
    }
}

/// Every id of `e`'s cases and derived figures, each of which must appear whole on a line.
fn ids(e: &ExperimentResult) -> Vec<&str> {
    e.cases
        .iter()
        .map(|c| c.id.as_str())
        .chain(e.derived.iter().map(|d| d.id.as_str()))
        .collect()
}

/// In a narrow terminal columns are dropped and notes wrapped, never an id: the tables fit
/// the width and every case id and figure id is whole on some line.
#[test]
fn narrow_terminals_drop_columns_and_never_split_an_id() {
    let (_, doc) = doc();
    let unit = &doc.environment.clock.tick_unit;
    for width in [60u16, 100] {
        for e in &doc.experiments {
            let text = render::terminal(e, unit, Some(width));
            insta::assert_snapshot!(format!("terminal-{}-{width}", e.name), text);
            for id in ids(e) {
                assert!(
                    text.lines()
                        .any(|l| l.split([' ', '│', '┆']).any(|word| word == id)),
                    "{id} is not whole on any line at {width} columns:\n{text}"
                );
            }
            for l in text.lines() {
                assert!(
                    l.chars().count() <= usize::from(width),
                    "wider than {width}: {l}"
                );
            }
        }
    }
    // The order columns go in: `min` and `p95` first, `95% CI` last, the median never.
    let e = &doc.experiments[0];
    let header = |w: u16| {
        render::terminal(e, unit, Some(w))
            .lines()
            .find(|l| l.contains("case"))
            .unwrap()
            .to_owned()
    };
    let wide = header(100);
    assert!(!wide.contains(" min ") && !wide.contains(" p95 ") && wide.contains("95% CI"));
    let narrow = header(60);
    assert!(
        narrow.contains("median") && narrow.contains("notes"),
        "{narrow}"
    );
    assert!(!narrow.contains(unit.as_str()), "{narrow}");
}

/// Warnings of one kind on several cases: one plain-words line by default, every case's text
/// with `Full`, nothing with `Hidden`; the notes column names the kind in every mode.
#[test]
fn per_case_warnings_are_summarised_by_kind() {
    let (_, doc) = doc();
    let unit = &doc.environment.clock.tick_unit;
    let mut e = doc.experiments[0].clone();
    let text = |ms: u32| {
        format!(
            "warm-up did not settle: the last three batches differed by more than 2 % after \
             {ms} ms"
        )
    };
    e.cases[0].warnings.push(text(160).into());
    e.cases[1].warnings.push(text(170).into());
    let n = e.cases.len();

    let summary = terminal_with(&e, unit, Warnings::Summary);
    // Several kinds of warning: one "warning:" line, then one item per kind.
    assert_eq!(
        summary
            .lines()
            .filter(|l| l.starts_with("warning: "))
            .count(),
        1,
        "{summary}"
    );
    let lines: Vec<&str> = summary
        .lines()
        .filter(|l| l.starts_with("  - warm-up did not settle"))
        .collect();
    assert_eq!(lines.len(), 1, "{summary}");
    assert!(
        lines[0].starts_with(&format!("  - warm-up did not settle for 2 of {n} cases: ")),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("docs/methodology.md"), "{}", lines[0]);
    assert!(!summary.contains("after 160 ms"), "{summary}");

    let full = terminal_with(&e, unit, Warnings::Full);
    for (c, ms) in e.cases.iter().zip([160, 170]) {
        let line = format!("{}: {}", c.id, text(ms));
        assert!(
            full.lines().any(|l| l.trim_start() == line),
            "{line} missing:\n{full}"
        );
    }
    assert!(full.contains(lines[0]), "{full}");

    let hidden = terminal_with(&e, unit, Warnings::Hidden);
    assert!(
        !hidden.lines().any(|l| l.starts_with("warning")),
        "{hidden}"
    );

    for t in [&summary, &full, &hidden] {
        let row = t.lines().find(|l| l.contains(&e.cases[0].id)).unwrap();
        assert!(row.contains("warm-up did not settle"), "{row}");
        assert!(!t.contains("warning(s)"), "{t}");
    }
    // The default view is the summary.
    assert_eq!(render::terminal(&e, unit, None), summary);
}

#[test]
fn older_golden_document_still_loads() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/oscost-1.json");
    let old = oscost_model::read(&std::fs::read_to_string(path).unwrap())
        .expect("an oscost/1 document still reads");
    let (_, new) = doc();
    assert_eq!(
        old.schema,
        oscost_model::SCHEMA,
        "read upgrades it to the current form"
    );
    assert_eq!(
        (old.run_id.as_deref(), old.started_at.as_deref()),
        (None, None)
    );
    assert_eq!(old.experiments, new.experiments);
    assert_eq!(old.environment, new.environment);
}
