//! The shipped published baselines: every document reads, says where its figures come from,
//! and maps only to ids oscost can produce; the text of `oscost baselines` is pinned.

use oscost_model::published::{PublishedDoc, PublishedFigure, PUBLISHED_SCHEMA};
use oscost_report::baselines;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The experiments oscost has: a mapped case id must start with one of them.
const EXPERIMENTS: &[&str] = &[
    "syscall",
    "fs",
    "lockring",
    "tick-forms",
    "primitives",
    "switch",
    "ring",
    "split",
    "spawn",
    "timeline",
    "tick",
    "noise",
];

/// ns per unit, for the units that are times.
fn ns_per(unit: &str) -> Option<f64> {
    match unit {
        "ns" => Some(1.0),
        "us" | "µs" => Some(1e3),
        "ms" => Some(1e6),
        "s" => Some(1e9),
        _ => None,
    }
}

fn every_figure() -> Vec<(PublishedDoc, PublishedFigure)> {
    baselines::all()
        .into_iter()
        .flat_map(|d| {
            d.figures
                .clone()
                .into_iter()
                .map(move |f| (d.clone(), f))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn every_shipped_file_is_listed_and_every_listed_name_reads_as_itself() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("baselines");
    let on_disk: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let listed: BTreeSet<String> = baselines::names()
        .iter()
        .map(|n| format!("{n}.json"))
        .collect();
    assert_eq!(
        on_disk, listed,
        "a baseline file is not in FILES, or the reverse"
    );
    assert_eq!(
        baselines::names().len(),
        listed.len(),
        "a name is listed twice"
    );
    for name in baselines::names() {
        let doc = baselines::find(name).expect("listed name is found");
        assert_eq!(doc.name, name);
        assert_eq!(doc.schema, PUBLISHED_SCHEMA);
    }
    assert_eq!(baselines::all().len(), baselines::names().len());
    assert!(baselines::find("no-such-baseline").is_none());
}

#[test]
fn every_baseline_cites_its_study_and_describes_its_machine() {
    for d in baselines::all() {
        let c = &d.citation;
        assert!(!c.authors.trim().is_empty(), "{}: no authors", d.name);
        assert!(!c.title.trim().is_empty(), "{}: no title", d.name);
        match c.year {
            Some(y) => assert!(y > 1990 && y < 2100, "{}: year {y}", d.name),
            // An undated work must say so rather than leave the reader to guess.
            None => assert!(
                d.notes
                    .iter()
                    .any(|n| n.contains("date") || n.contains("year")),
                "{}: undated, and no note says so",
                d.name
            ),
        }
        if c.authors.eq_ignore_ascii_case("unknown") {
            assert!(
                d.notes.iter().any(|n| n.contains("author")),
                "{}: no author, and no note says so",
                d.name
            );
        }
        assert!(!d.machine.os.trim().is_empty(), "{}: no OS", d.name);
        assert!(!d.title.trim().is_empty(), "{}: no title", d.name);
        assert!(!d.method.trim().is_empty(), "{}: no method", d.name);
        assert!(!d.figures.is_empty(), "{}: no figures", d.name);
    }
}

#[test]
fn figure_ids_are_unique_within_a_baseline() {
    for d in baselines::all() {
        let mut seen = BTreeSet::new();
        for f in &d.figures {
            assert!(!f.id.is_empty(), "{}: empty figure id", d.name);
            assert!(seen.insert(&f.id), "{}: figure id {} twice", d.name, f.id);
        }
    }
}

#[test]
fn every_figure_has_a_unit_a_meaning_and_a_finite_value() {
    for (d, f) in every_figure() {
        assert!(!f.unit.trim().is_empty(), "{}/{}: no unit", d.name, f.id);
        assert!(
            !f.meaning.trim().is_empty(),
            "{}/{}: no meaning",
            d.name,
            f.id
        );
        assert!(f.value.is_finite(), "{}/{}: value", d.name, f.id);
    }
}

#[test]
fn mapped_ids_are_oscost_ids_of_a_known_experiment() {
    for (d, f) in every_figure() {
        let Some(id) = &f.case_id else { continue };
        let parts: Vec<&str> = id.split('.').collect();
        if parts[0] == "study" {
            // A study figure: computed from a run by the study it names.
            assert!(
                parts.len() >= 3 && oscost_report::study::find(parts[1]).is_some(),
                "{}/{}: `{id}` names no study",
                d.name,
                f.id
            );
            assert_eq!(
                oscost_report::study::of_baseline(&d.name).map(|s| s.info.name),
                Some(parts[1]),
                "{}/{}: `{id}` is another study's figure",
                d.name,
                f.id
            );
            continue;
        }
        assert!(
            parts.len() >= 2,
            "{}/{}: `{id}` has no case part",
            d.name,
            f.id
        );
        assert!(
            EXPERIMENTS.contains(&parts[0]),
            "{}/{}: `{id}` is not of an oscost experiment",
            d.name,
            f.id
        );
        for p in &parts {
            assert!(
                !p.is_empty()
                    && p.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_".contains(c)),
                "{}/{}: `{id}` is not a well-formed id",
                d.name,
                f.id
            );
        }
    }
}

#[test]
fn every_unmapped_or_uncompared_figure_says_why() {
    for (d, f) in every_figure() {
        // Unmapped: why not. Mapped but not a time per op: what does compare.
        if f.case_id.is_none() || f.per_op_ns.is_none() {
            assert!(
                f.mapping_note
                    .as_deref()
                    .is_some_and(|n| !n.trim().is_empty()),
                "{}/{}: no mapping note",
                d.name,
                f.id
            );
        }
    }
}

#[test]
fn per_op_ns_is_the_published_time_in_ns() {
    for (d, f) in every_figure() {
        let Some(ns) = f.per_op_ns else { continue };
        let per = ns_per(&f.unit).unwrap_or_else(|| {
            panic!(
                "{}/{}: per_op_ns beside a unit that is no time ({})",
                d.name, f.id, f.unit
            )
        });
        let want = f.value * per;
        assert!(
            (ns - want).abs() <= want.abs() * 1e-9,
            "{}/{}: per_op_ns {ns} but {} {} is {want} ns",
            d.name,
            f.id,
            f.value,
            f.unit
        );
    }
}

#[test]
fn short_citations_name_the_first_author_and_the_year() {
    let minix = baselines::find("minix3-user-drivers").unwrap();
    assert_eq!(
        baselines::short_citation(&minix.citation),
        "Herder et al. (2006)"
    );
    let linux = baselines::find("linux-2.4-2002").unwrap();
    assert_eq!(
        baselines::short_citation(&linux.citation),
        "Bradford (2002)"
    );
    let qnx = baselines::find("qnx-tick").unwrap();
    assert_eq!(
        baselines::short_citation(&qnx.citation),
        "author unknown (undated)"
    );
}

#[test]
fn the_list_names_every_baseline_and_says_how_to_use_one() {
    let text = baselines::list_text();
    for name in baselines::names() {
        assert!(text.contains(name), "{name} missing from the list");
    }
    assert!(text.contains("oscost compare published:<name> my.json"));
    insta::assert_snapshot!("baselines-list", text);
    let narrow = baselines::list_text_to(Some(72));
    assert!(narrow.lines().all(|l| l.chars().count() <= 72), "{narrow}");
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(
        words(&narrow),
        words(&text),
        "the same words, wrapped narrower"
    );
}

#[test]
fn a_description_lists_every_figure_with_its_case() {
    for d in baselines::all() {
        let text = baselines::describe(&d);
        for f in &d.figures {
            assert!(text.contains(&f.id), "{}: {} missing", d.name, f.id);
            if let Some(id) = &f.case_id {
                assert!(text.contains(id.as_str()), "{}: {id} missing", d.name);
            }
        }
    }
    let minix = baselines::find("minix3-user-drivers").unwrap();
    insta::assert_snapshot!(
        "baselines-describe-minix3-user-drivers",
        baselines::describe(&minix)
    );
}
