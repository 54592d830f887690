//! `oscost study`: the list, a whole study run at its quick size, and bad input.

mod common;
use common::oscost;

use predicates::prelude::*;

#[test]
fn the_list_names_the_five_studies_with_their_citations() {
    let out = oscost().arg("study").assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for name in [
        "minix3",
        "bradford",
        "windows-yield",
        "qnx-tick",
        "linux-timeslice",
    ] {
        assert!(
            text.contains(&format!("\n{name}\n")),
            "{name} missing:\n{text}"
        );
    }
    assert!(
        text.contains("Herder") && text.contains("Bradford"),
        "{text}"
    );
}

#[test]
fn a_study_run_prints_its_table_beside_the_published_one_and_keeps_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = oscost()
        .args([
            "study",
            "linux-timeslice",
            "--quick",
            "--quiet",
            "--no-save",
            "--json",
        ])
        .arg(&json)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    // The study's own columns, published and measured, and what it derived.
    assert!(
        text.contains("linux-timeslice: N processes of 100 chunks on one CPU"),
        "{text}"
    );
    assert!(
        text.contains("29.748") && text.contains("here vs N=1"),
        "{text}"
    );
    // Said once, under the first of the study's three tables that holds this machine.
    assert_eq!(text.matches("this machine: Linux").count(), 1, "{text}");
    // An ordinary result document with the study's cases.
    let doc = oscost_model::read(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ids: Vec<&str> = doc
        .experiments
        .iter()
        .flat_map(|e| &e.cases)
        .map(|c| c.id.as_str())
        .collect();
    for n in [1, 2, 4] {
        assert!(
            ids.contains(&format!("timeline.processes.n{n}.own_latency").as_str()),
            "{ids:?}"
        );
    }
    // compare sets the published ratios beside the same ratios of this run.
    let out = oscost()
        .args(["compare", "published:linux-timeslice"])
        .arg(&json)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains("study.linux-timeslice.n4.latency_vs_n1"),
        "{text}"
    );
}

#[test]
fn an_unknown_study_or_full_without_one_is_one_line_and_exit_2() {
    oscost().args(["study", "minix"]).assert().code(2).stderr(
        predicate::str::contains("no study named `minix` (did you mean minix3?")
            .and(predicate::str::contains("windows-yield")),
    );
    // Nothing near: no guess.
    oscost()
        .args(["study", "zzz"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no study named `zzz` (choose from:",
        ));
    oscost()
        .args(["study", "--full"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--full needs a study"));
    oscost()
        .args(["study", "qnx-tick", "--full", "--quick"])
        .assert()
        .code(2);
}
