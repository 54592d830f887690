//! A result of oscost's Windows agent (`windows/`) read by oscost like one of its own runs:
//! imported into the history, set beside the published Windows figures, compared with a Linux
//! run, rendered; and said everywhere to have run under Wine.
//!
//! `tests/golden/windows-agent-wine.json` was produced by the agent itself under Wine:
//! `wine oscost-agent.exe --quick --max-yield 4 --max-ring 8 --out windows-agent-wine.json`.
//! Its figures are Wine's on a Linux host, so these tests check behaviour only, never a time.

mod common;

use oscost_model::ResultDoc;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/windows-agent-wine.json")
}

fn doc() -> ResultDoc {
    oscost_model::read(&std::fs::read_to_string(fixture()).unwrap()).unwrap()
}

/// Runs oscost with a history of its own; (exit code, stdout, stderr).
fn run(home: &Path, args: &[&str]) -> (i32, String, String) {
    let out = common::oscost()
        .env("XDG_DATA_HOME", home.join("data"))
        .env("COLUMNS", "400")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_document_names_windows_and_wine() {
    let d = doc();
    let os = d.environment.os.as_ref().expect("the agent writes `os`");
    assert_eq!(os.family, "windows");
    assert!(os.wine.is_some() && d.environment.under_wine());
    assert!(
        d.environment.system().contains("under Wine"),
        "{}",
        d.environment.system()
    );
    // Windows has no uid: the agent never passes for root.
    assert!(!d.environment.is_root());
    for id in [
        "primitives.win32-mutex",
        "primitives.win32-semaphore",
        "primitives.critical-section",
        "primitives.srwlock",
        "lockring.cs.own",
        "lockring.pipe.n2",
        "lockring.cs.n8.k1",
        "split.threads.one.1.yield",
        "split.threads.two.2.yield",
    ] {
        let c = d
            .experiments
            .iter()
            .flat_map(|e| &e.cases)
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("{id} missing"));
        assert!(c.median_ns > 0.0, "{id}");
        assert!(
            c.ci95_ns[0] <= c.median_ns && c.median_ns <= c.ci95_ns[1],
            "{id}"
        );
        assert_eq!(c.raw_ns.len(), c.samples, "{id}");
    }
    let ring = d
        .experiments
        .iter()
        .flat_map(|e| &e.cases)
        .find(|c| c.id == "lockring.cs.n8.k1")
        .unwrap();
    assert!(ring.checks.iter().any(|k| k.name == "ring_order"));
}

/// The optional `os` is absent from a Linux document and reads back as `None`: older
/// documents still read, and oscost's own output does not change.
#[test]
fn a_linux_document_has_no_os() {
    let text = include_str!("golden/oscost-2.json");
    let d = oscost_model::read(text).unwrap();
    assert!(d.environment.os.is_none());
    assert!(!serde_json::to_string(&d.environment)
        .unwrap()
        .contains("\"os\""));
    assert!(d.environment.system().starts_with("Linux "));
}

#[test]
fn history_imports_it_and_shows_the_system() {
    let home = tempfile::tempdir().unwrap();
    let f = fixture();
    let (code, out, err) = run(home.path(), &["history", "import", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("imported"), "{out}");
    let id = doc().run_id.unwrap();
    let (code, out, err) = run(home.path(), &["history", "show", &id[..8]]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("under Wine"), "{out}");
}

#[test]
fn compare_sets_table_1_and_the_ring_beside_windows_xp() {
    let home = tempfile::tempdir().unwrap();
    let f = fixture();
    let (code, out, err) = run(
        home.path(),
        &["compare", "published:windows-xp-2002", f.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    for want in [
        "primitives.win32-mutex",
        "primitives.win32-semaphore",
        "primitives.critical-section",
        "ring.time_per_switch",
        "ring.switch_cost",
        "under Wine",
    ] {
        assert!(out.contains(want), "{want} missing:\n{out}");
    }
    assert!(!out.contains("is not in this result"), "{out}");
}

/// A Linux run beside it: the Linux figures Windows has no id for stay apart, and the rings
/// (Critical Sections against pthread mutexes) are set side by side, as Bradford compared them.
#[test]
fn compare_with_a_linux_run_sets_the_rings_side_by_side() {
    let home = tempfile::tempdir().unwrap();
    // The Linux side: the same document as Linux would name it (mutex rings, no `os`).
    let mut linux = doc();
    linux.environment.os = None;
    linux.run_id = Some("3f1c2b9e-8a4d-4c1e-9b7a-2d5e6f708193".into());
    for e in &mut linux.experiments {
        for c in &mut e.cases {
            c.id = c.id.replace("lockring.cs.", "lockring.mutex.");
        }
        for d in &mut e.derived {
            d.id = d.id.replace("lockring.cs.", "lockring.mutex.");
            for t in &mut d.terms {
                t.0 = t.0.replace("lockring.cs.", "lockring.mutex.");
            }
        }
    }
    let lin = home.path().join("linux.json");
    std::fs::write(&lin, serde_json::to_string(&linux).unwrap()).unwrap();
    let f = fixture();
    let (code, out, err) = run(
        home.path(),
        &[
            "compare",
            f.to_str().unwrap(),
            lin.to_str().unwrap(),
            "--markdown",
            "-",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("operating system"), "{out}");
    assert!(
        out.contains("| lockring.cs.n8.k1 vs lockring.mutex.n8.k1 |"),
        "{out}"
    );
    assert!(
        out.contains("lockring.cs.n8.k1.switch_cost vs lockring.mutex.n8.k1.switch_cost"),
        "{out}"
    );
    // Paired, so neither side lists them as its own.
    let only = out
        .lines()
        .filter(|l| l.contains("Only in"))
        .collect::<String>();
    assert!(!only.contains("lockring.cs.n8.k1"), "{only}");
    assert!(!only.contains("lockring.mutex.n8.k1"), "{only}");
}

#[test]
fn the_report_names_the_system() {
    let home = tempfile::tempdir().unwrap();
    let f = fixture();
    let (code, out, err) = run(home.path(), &["report", f.to_str().unwrap(), "-o", "-"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("under Wine"),
        "the HTML page does not say Wine"
    );
    assert!(
        out.contains("Critical Section"),
        "Table 1's Windows rows missing"
    );
}

/// A Windows ring renamed to Linux's id is not set one-for-one beside the Linux ring: the
/// comparison names it and leaves the row without a ratio or verdict.
#[test]
fn a_windows_case_under_a_linux_id_is_flagged() {
    let home = tempfile::tempdir().unwrap();
    let mut renamed = doc();
    renamed.run_id = Some("3f1c2b9e-8a4d-4c1e-9b7a-2d5e6f708194".into());
    for c in renamed.experiments.iter_mut().flat_map(|e| &mut e.cases) {
        c.id = c.id.replace("lockring.cs.n8.", "lockring.mutex.n8.");
    }
    let mut linux = doc();
    linux.environment.os = None;
    linux.run_id = Some("3f1c2b9e-8a4d-4c1e-9b7a-2d5e6f708195".into());
    for c in linux.experiments.iter_mut().flat_map(|e| &mut e.cases) {
        c.id = c.id.replace("lockring.cs.", "lockring.mutex.");
    }
    let (win, lin) = (home.path().join("win.json"), home.path().join("lin.json"));
    std::fs::write(&win, serde_json::to_string(&renamed).unwrap()).unwrap();
    std::fs::write(&lin, serde_json::to_string(&linux).unwrap()).unwrap();
    let (code, out, err) = run(
        home.path(),
        &[
            "compare",
            lin.to_str().unwrap(),
            win.to_str().unwrap(),
            "--json",
            "-",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let c = &v["comparisons"][0];
    let flagged = c["foreign_ids"].as_array().expect("foreign_ids");
    assert!(
        flagged.iter().any(|f| f
            .as_str()
            .unwrap()
            .contains("holds lockring.mutex.n8.k1: a pthread mutex's id")),
        "{flagged:?}"
    );
    let row = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "lockring.mutex.n8.k1")
        .expect("the row");
    assert_eq!(row["verdict"], "not_comparable");
    assert!(row["ratio"].is_null());
    // The terminal says it too.
    let (_, text, _) = run(
        home.path(),
        &["compare", lin.to_str().unwrap(), win.to_str().unwrap()],
    );
    assert!(text.contains("Warning: B ("), "{text}");
}

/// Negative times (a case's median far below zero) are refused on import, named.
#[test]
fn negative_times_are_refused_on_import() {
    let home = tempfile::tempdir().unwrap();
    let mut d = doc();
    d.run_id = Some("3f1c2b9e-8a4d-4c1e-9b7a-2d5e6f708196".into());
    d.experiments[0].cases[0].median_ns = -89_120.0;
    let id = d.experiments[0].cases[0].id.clone();
    let f = home.path().join("negative.json");
    std::fs::write(&f, serde_json::to_string(&d).unwrap()).unwrap();
    let (code, out, err) = run(home.path(), &["history", "import", f.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("case `{id}` has median_ns -89120 ns, below zero")),
        "{err}"
    );
}
