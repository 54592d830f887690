//! The whole path on the scripted clock: command line, measuring process, sampler, summaries and
//! every renderer, with no dependence on the machine's speed. `--scripted` swaps in a fictional
//! machine and a clock that only the hidden example experiments move, so every output is the
//! same on every machine and pinned here with insta snapshots (`cargo insta review` after a
//! deliberate change).

mod common;
use common::oscost;
use common::read_doc;

use assert_cmd::Command;

/// A result document with its run id and start time, which differ in every run, replaced by
/// placeholders; the id is checked to be a version-4 UUID and the time RFC 3339 first.
fn stable(json: &str) -> String {
    json.lines()
        .map(|l| {
            if let Some(v) = l.strip_prefix("  \"run_id\": \"") {
                let id = v.trim_end_matches("\",");
                let uuid = uuid::Uuid::parse_str(id).expect("run_id is a UUID");
                assert_eq!(uuid.get_version_num(), 4, "{id}");
                "  \"run_id\": \"[run id]\",".to_string()
            } else if let Some(v) = l.strip_prefix("  \"started_at\": \"") {
                let t = v.trim_end_matches("\",");
                humantime::parse_rfc3339(t).expect("started_at is RFC 3339");
                "  \"started_at\": \"[start]\",".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn stdout_of(c: &mut Command) -> String {
    String::from_utf8(c.assert().success().get_output().stdout.clone()).unwrap()
}

/// One scripted run of `example` into every format.
struct EveryFormat {
    _dir: tempfile::TempDir,
    json: std::path::PathBuf,
    csv: std::path::PathBuf,
    md: std::path::PathBuf,
    out: std::process::Output,
}

fn every_format() -> EveryFormat {
    let dir = tempfile::tempdir().unwrap();
    let (json, csv, md) = (
        dir.path().join("r.json"),
        dir.path().join("r.csv"),
        dir.path().join("r.md"),
    );
    let out = oscost()
        .args(["--scripted", "example", "--json"])
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .arg("--markdown")
        .arg(&md)
        .assert()
        .success()
        .get_output()
        .clone();
    EveryFormat {
        _dir: dir,
        json,
        csv,
        md,
        out,
    }
}

/// Every format from one scripted run, each pinned.
#[test]
fn a_scripted_run_renders_every_format_the_same_way_everywhere() {
    let run = every_format();
    let (json, csv, md) = (&run.json, &run.csv, &run.md);
    let out = &run.out;
    insta::assert_snapshot!("table", String::from_utf8(out.stdout.clone()).unwrap());
    insta::assert_snapshot!("json", stable(&std::fs::read_to_string(json).unwrap()));
    insta::assert_snapshot!("csv", std::fs::read_to_string(csv).unwrap());
    insta::assert_snapshot!("markdown", std::fs::read_to_string(md).unwrap());

    let doc = read_doc(json);
    assert_eq!(doc.schema, oscost_model::SCHEMA);
    let e = &doc.experiments[0];
    assert_eq!(e.cases.len(), 3);
    assert_eq!(e.unavailable.len(), 1);
    assert!(e.cases.iter().any(|c| !c.series.is_empty()));
    // The scripted costs come back through the sampler: 100, 250 and 400 ticks plus a wobble
    // of 0..=15 whose mean is 7.5, at 1 ns per tick, the empty loop costing nothing.
    for (c, cost) in e.cases.iter().zip([100.0, 250.0, 400.0]) {
        assert!(
            (c.median_ns - cost - 7.5).abs() < 0.5,
            "{}: {}",
            c.id,
            c.median_ns
        );
        assert_eq!(c.loop_overhead_ns, 0.0);
    }
}

/// The same document on stdout, and the tables moved to stderr.
#[test]
fn json_on_stdout_is_the_same_document() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    oscost()
        .args(["--scripted", "--quiet", "example", "--json"])
        .arg(&json)
        .assert()
        .success();
    let out = oscost()
        .args(["--scripted", "--quiet", "example", "--json", "-"])
        .assert()
        .success()
        .get_output()
        .clone();
    // The same document, apart from the id and start time each run has of its own.
    assert_eq!(
        stable(&String::from_utf8(out.stdout.clone()).unwrap()),
        stable(&std::fs::read_to_string(&json).unwrap())
    );
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("example.cost100"));
}

/// One-task cases prove they were measured in a single-threaded process.
#[test]
fn every_scripted_case_was_measured_in_a_single_threaded_process() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    oscost()
        .args(["--scripted", "--quiet", "example", "--json"])
        .arg(&json)
        .assert()
        .success();
    for c in &read_doc(&json).experiments[0].cases {
        let k = c
            .checks
            .iter()
            .find(|k| k.name == oscost_model::case::SINGLE_THREAD_CHECK)
            .unwrap_or_else(|| panic!("{} has no thread check", c.id));
        assert!(k.passed && k.counted == 1.0, "{}: {k:?}", c.id);
    }
}

/// A failed check flags the derived figure built on it, in every renderer.
#[test]
fn a_failed_check_flags_its_derived_figure_everywhere() {
    let run = every_format();
    let (json, csv, md) = (&run.json, &run.csv, &run.md);
    let out = &run.out;
    let doc = read_doc(json);
    let derived = &doc.experiments[0].derived;
    let flagged = derived
        .iter()
        .find(|d| d.id == "example.flagged_difference")
        .unwrap();
    let reason = flagged.flagged.as_deref().expect("flagged in the JSON");
    assert!(reason.contains("example.cost400"), "{reason}");
    let trusted = derived
        .iter()
        .find(|d| d.id == "example.difference")
        .unwrap();
    assert_eq!(trusted.flagged, None);

    let table = String::from_utf8(out.stdout.clone()).unwrap();
    let line = table
        .lines()
        .find(|l| l.contains("example.flagged_difference"))
        .unwrap();
    assert!(line.contains("FLAGGED"), "{line}");
    let markdown = std::fs::read_to_string(md).unwrap();
    let line = markdown
        .lines()
        .find(|l| l.contains("example.flagged_difference"))
        .unwrap();
    assert!(line.contains("FLAGGED"), "{line}");
    let csv = std::fs::read_to_string(csv).unwrap();
    let line = csv
        .lines()
        .find(|l| l.contains("example.flagged_difference"))
        .unwrap();
    assert!(line.contains("example.cost400"), "{line}");
    let line = csv
        .lines()
        .find(|l| l.starts_with("example,example.difference,"))
        .unwrap();
    assert!(
        line.ends_with(','),
        "a trusted figure has an empty flag: {line}"
    );
}

/// An experiment that fails after another leaves the first one's results on disk, complete,
/// and says where they are.
#[test]
fn a_later_failure_keeps_what_was_measured() {
    let dir = tempfile::tempdir().unwrap();
    let (json, md) = (dir.path().join("r.json"), dir.path().join("r.md"));
    let out = oscost()
        .args(["--scripted", "--quiet", "run", "example", "example-fails"])
        .arg("--json")
        .arg(&json)
        .arg("--markdown")
        .arg(&md)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("oscost: example-fails failed: "), "{err}");
    assert!(err.contains(&json.display().to_string()), "{err}");
    let doc = read_doc(&json);
    assert_eq!(doc.experiments.len(), 1);
    assert_eq!(doc.experiments[0].name, "example");
    assert_eq!(doc.experiments[0].cases.len(), 3);
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .contains("example.cost100"));
    // Nothing else was left in the directory: no temporary file beside the results.
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["r.json", "r.md"]);
}

/// The example experiments are fixtures: hidden from users, refused without the scripted
/// clock, and real experiments are refused on it.
#[test]
fn scripted_and_real_experiments_do_not_mix() {
    let out = oscost().arg("list").assert().success().get_output().clone();
    assert!(!String::from_utf8(out.stdout.clone())
        .unwrap()
        .contains("example"));
    let out = oscost()
        .arg("--help")
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(!String::from_utf8(out.stdout.clone())
        .unwrap()
        .contains("example"));
    for (args, needle) in [
        (&["example"][..], "without --scripted"),
        (&["--scripted", "syscall"][..], "on the scripted clock"),
    ] {
        let out = oscost().args(args).assert().code(2).get_output().clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.starts_with("oscost: ") && err.contains(needle), "{err}");
    }
}

/// `COLUMNS` sets the width the tables are laid out to: at 60 columns every table line fits,
/// columns are dropped rather than a case id split, and every case id is whole on a line.
#[test]
fn columns_sets_the_table_width_and_no_case_id_is_split() {
    // --verbose: a run of two experiments is otherwise brief (see the test below).
    let out = stdout_of(oscost().env("COLUMNS", "60").args([
        "--scripted",
        "--verbose",
        "run",
        "example",
        "example-more",
    ]));
    insta::assert_snapshot!("table-60", &out);
    for l in out.lines().filter(|l| !l.starts_with("warning")) {
        assert!(l.chars().count() <= 60, "wider than 60: {l}");
    }
    for id in [
        "example.cost100",
        "example.cost250",
        "example.cost400",
        "example.flagged_difference",
        "example-more.cost240",
        "example-more.flagged_difference",
    ] {
        assert!(
            out.lines()
                .any(|l| l.split([' ', '│', '┆']).any(|word| word == id)),
            "{id} is not whole on any line:\n{out}"
        );
    }
    // Without COLUMNS, a pipe gets 80 columns.
    let piped = stdout_of(
        oscost()
            .env_remove("COLUMNS")
            .args(["--scripted", "example"]),
    );
    for l in piped.lines() {
        assert!(l.chars().count() <= 80, "wider than 80 when piped: {l}");
    }
}

/// A run of several experiments is brief: a line per figure with its interval and mark, no
/// boxes, each failed check on its own line, the shared warnings once at the end.
#[test]
fn a_run_of_several_experiments_is_brief() {
    let out = stdout_of(oscost().env("COLUMNS", "80").args([
        "--scripted",
        "run",
        "example",
        "example-more",
    ]));
    insta::assert_snapshot!("brief-80", &out);
    for l in out.lines() {
        assert!(l.chars().count() <= 80, "wider than 80: {l}");
    }
    assert!(!out.contains('┌'), "{out}");
    assert!(out.contains("  ✗ example.cost400: FAILED"), "{out}");
}

/// By default a kind of per-case warning is one summary line and a passed check is counted;
/// `--verbose` adds every case's own text under it and gives each passed check its figures;
/// `--quiet` prints no warning at all, and the result file keeps them all.
#[test]
fn verbose_shows_every_warning_quiet_none() {
    let case_line = "example.cost400: a scripted warning on one case";
    let default = stdout_of(oscost().args(["--scripted", "example"]));
    // Two kinds of warning: one "warning:" line for the experiment, one item per kind.
    assert_eq!(
        default
            .lines()
            .filter(|l| l.starts_with("warning: "))
            .count(),
        1,
        "{default}"
    );
    assert!(default
        .lines()
        .any(|l| l == "warning: 2 things may have moved the example figures:"));
    assert!(
        default
            .lines()
            .any(|l| l == "  - a scripted warning on one case for 1 of 3 cases (example.cost400)"),
        "{default}"
    );
    assert!(default
        .lines()
        .any(|l| l == "  - a scripted warning on the whole experiment"));
    assert!(!default.contains(case_line), "{default}");

    for flag in ["--verbose", "-v"] {
        let verbose = stdout_of(oscost().args(["--scripted", "example", flag]));
        assert!(
            verbose.lines().any(|l| l.trim_start() == case_line),
            "{verbose}"
        );
        // The same tables, each passed check with its figures where the default counts it.
        let counted = |t: &str| {
            t[..t.find("warning: ").unwrap()]
                .replace("✓ 1.00 events per op (expected 1 ± 0.05)", "✓ 1 check")
        };
        assert!(
            default.contains("✓ 1 check") && !default.contains("✓ 1.00 events"),
            "{default}"
        );
        assert!(verbose.contains("✓ 1.00 events per op"), "{verbose}");
        assert_eq!(
            counted(&verbose)
                .lines()
                .map(str::trim_end)
                .map(|l| l.trim_end_matches(['│', ' ']))
                .collect::<Vec<_>>(),
            counted(&default)
                .lines()
                .map(str::trim_end)
                .map(|l| l.trim_end_matches(['│', ' ']))
                .collect::<Vec<_>>()
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    for flag in ["--quiet", "-q"] {
        let out = oscost()
            .args(["--scripted", "example", flag, "--json"])
            .arg(&json)
            .assert()
            .success()
            .get_output()
            .clone();
        let text = String::from_utf8(out.stdout.clone()).unwrap()
            + &String::from_utf8(out.stderr).unwrap();
        assert!(!text.lines().any(|l| l.starts_with("warning")), "{text}");
        assert!(!text.contains("warning(s)"), "{text}");
        assert!(text.contains("example.cost400"), "{text}");
    }
    let doc = read_doc(&json);
    let e = &doc.experiments[0];
    assert_eq!(e.warnings, ["a scripted warning on the whole experiment"]);
    let c = e.cases.iter().find(|c| c.id == "example.cost400").unwrap();
    assert_eq!(c.warnings, ["a scripted warning on one case"]);

    let out = oscost()
        .args(["--scripted", "example", "-q", "-v"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("oscost: ") && err.contains("--quiet"),
        "{err}"
    );
}
