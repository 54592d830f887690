//! `oscost report` and `--report`, on the scripted clock: a result file in, one HTML page out;
//! every unreadable input or unwritable output named in one line, exit 2, and nothing written.

mod common;
use common::oscost;

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// A scripted run of `example` written with --json into `dir`.
fn result_file(dir: &Path, name: &str) -> PathBuf {
    let json = dir.join(name);
    oscost()
        .args(["--scripted", "--quiet", "run", "example", "--json"])
        .arg(&json)
        .assert()
        .success();
    json
}

/// Runs oscost, expecting exit 2 and one line on stderr; returns that line.
fn fails(c: &mut Command) -> String {
    let out = c.assert().code(2).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("oscost: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn page_checks(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));
    assert!(!html.contains("<script"));
    assert!(html.contains("<svg "));
    assert!(html.contains("example.cost100"));
}

#[test]
fn a_result_file_becomes_one_page() {
    let dir = tempfile::tempdir().unwrap();
    let json = result_file(dir.path(), "r.json");
    let out = dir.path().join("report.html");
    let run = oscost()
        .arg("report")
        .arg(&json)
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .get_output()
        .clone();
    // The page it wrote, named on stderr; nothing on stdout.
    assert!(run.stdout.is_empty());
    assert_eq!(
        String::from_utf8(run.stderr).unwrap(),
        format!("wrote {}\n", out.display())
    );
    let html = std::fs::read_to_string(&out).unwrap();
    page_checks(&html);
    let doc = oscost_model::read(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(html.contains(doc.run_id.as_deref().unwrap()));
    // Nothing else is left in the directory: the page was written beside and renamed.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    // `-o -` writes the page to stdout.
    let stdout = oscost()
        .arg("report")
        .arg(&json)
        .args(["-o", "-"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(String::from_utf8(stdout).unwrap(), html);
}

#[test]
fn several_files_are_compared_against_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let a = result_file(dir.path(), "a.json");
    let b = result_file(dir.path(), "b.json");
    let out = dir.path().join("ab.html");
    oscost()
        .arg("report")
        .args([&a, &b])
        .arg("--output")
        .arg(&out)
        .assert()
        .success();
    let html = std::fs::read_to_string(&out).unwrap();
    page_checks(&html);
    assert!(html.contains("Runs compared"));
    assert!(html.contains("example.runs"));
}

#[test]
fn a_run_writes_its_own_page_with_report() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("run.html");
    let svg = dir.path().join("figures");
    std::fs::create_dir(&svg).unwrap();
    oscost()
        .args([
            "--scripted",
            "--quiet",
            "run",
            "example",
            "example-more",
            "--report",
        ])
        .arg(&page)
        .arg("--svg")
        .arg(&svg)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    page_checks(&html);
    assert!(html.contains("example-more.cost60"));
    // --svg writes every experiment's samples.
    for name in [
        "example.distributions.svg",
        "example-more.distributions.svg",
    ] {
        let text = std::fs::read_to_string(svg.join(name)).unwrap();
        assert!(text.starts_with("<?xml") && text.trim_end().ends_with("</svg>"));
    }
}

#[test]
fn report_and_another_format_cannot_share_a_file_or_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x");
    let err = fails(
        oscost()
            .args(["--scripted", "run", "example", "--json"])
            .arg(&f)
            .arg("--report")
            .arg(&f),
    );
    assert!(err.contains("--json and --report both write"), "{err}");
    let err = fails(oscost().args([
        "--scripted",
        "run",
        "example",
        "--json",
        "-",
        "--report",
        "-",
    ]));
    assert!(err.contains("can go to stdout"), "{err}");
    let err = fails(
        oscost()
            .args(["--scripted", "run", "example", "--report"])
            .arg(dir.path().join("missing/r.html")),
    );
    assert!(err.contains("--report"), "{err}");
}

#[test]
fn bad_inputs_are_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let good = result_file(dir.path(), "good.json");
    let text = std::fs::read_to_string(&good).unwrap();
    let out = dir.path().join("out.html");
    std::fs::write(&out, "the previous page").unwrap();
    let write = |name: &str, contents: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, contents).unwrap();
        p
    };
    let cases: Vec<(PathBuf, &str)> = vec![
        (dir.path().join("missing.json"), "No such file"),
        (
            write("truncated.json", &text[..text.len() / 2]),
            "not an oscost result document",
        ),
        (write("empty.json", ""), "not an oscost result document"),
        (
            write("other.json", "{\"name\": \"another tool\", \"version\": 3}"),
            "not an oscost result document",
        ),
        (
            write("newer.json", &text.replacen("oscost/2", "oscost/9", 1)),
            "`oscost/9`",
        ),
        (
            write("binary.json", "\u{0}\u{1}\u{2}"),
            "not an oscost result document",
        ),
    ];
    for (path, says) in cases {
        let err = fails(
            oscost()
                .arg("report")
                .arg(&good)
                .arg(&path)
                .arg("-o")
                .arg(&out),
        );
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(err.contains(name), "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "the previous page",
            "{name}: the page was touched"
        );
    }
}

#[test]
fn a_missing_or_unwritable_output_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let json = result_file(dir.path(), "r.json");
    let before = std::fs::read_to_string(&json).unwrap();
    let err = fails(oscost().arg("report").arg(&json));
    assert!(err.contains("-o"), "{err}");
    let err = fails(oscost().args(["report", "-o", "x.html"]));
    assert!(err.contains("result file"), "{err}");
    let err = fails(
        oscost()
            .arg("report")
            .arg(&json)
            .arg("-o")
            .arg(dir.path().join("no/such/dir.html")),
    );
    assert!(err.contains("does not exist"), "{err}");
    let err = fails(oscost().arg("report").arg(&json).arg("-o").arg(dir.path()));
    assert!(err.contains("is a directory"), "{err}");
    // The page would replace the result it is made from.
    let err = fails(oscost().arg("report").arg(&json).arg("-o").arg(&json));
    assert!(err.contains("one of the result files"), "{err}");
    assert_eq!(std::fs::read_to_string(&json).unwrap(), before);
    let err = fails(
        oscost()
            .arg("report")
            .arg(&json)
            .args(["-o", "x.html", "--json", "y.json"]),
    );
    assert!(err.contains("report does not use --json"), "{err}");
}

#[test]
fn runs_of_the_history_are_taken_as_compare_takes_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    for _ in 0..2 {
        oscost()
            .args(["--scripted", "--quiet", "run", "example", "--history"])
            .arg(&db)
            .assert()
            .success();
    }
    let out = dir.path().join("r.html");
    oscost()
        .args(["report", "latest~1", "latest", "-o"])
        .arg(&out)
        .arg("--history")
        .arg(&db)
        .assert()
        .success();
    page_checks(&std::fs::read_to_string(&out).unwrap());
    let err = fails(
        oscost()
            .args(["report", "latest~5", "-o"])
            .arg(dir.path().join("x.html"))
            .arg("--history")
            .arg(&db),
    );
    assert!(err.contains("latest~5: no such file"), "{err}");
}

/// A headline case whose median its own samples contradict (1e300 ns, far above its largest
/// sample) is refused by datasheet, compare and report alike, by its case, in one line: it
/// never becomes a headline of 301 digits.
#[test]
fn a_median_its_samples_contradict_is_refused_by_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let suite =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/report/tests/fixtures/suite.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&suite).unwrap()).unwrap();
    let case = doc["experiments"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .flat_map(|e| e["cases"].as_array_mut().unwrap())
        .find(|c| c["id"] == "syscall.getpid")
        .unwrap();
    case["median_ns"] = 1e300.into();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, doc.to_string()).unwrap();
    let page = dir.path().join("p.html");
    for args in [
        vec!["datasheet".into(), bad.clone()],
        vec!["compare".into(), suite.clone(), bad.clone()],
        vec!["report".into(), bad.clone(), "-o".into(), page.clone()],
    ] {
        let err = fails(oscost().args(&args));
        assert!(
            err.contains("bad.json")
                && err.contains("case `syscall.getpid` has median_ns 1e300 ns, outside its own")
                && err.contains("inconsistent with its samples"),
            "{args:?}: {err}"
        );
        assert!(err.len() < 400, "{err}");
    }
    assert!(!page.exists());
}

/// `oscost datasheet FILE` prints the run's sheet: the machine, what it measured, the failed
/// checks; a file that is not there is one line and exit 2.
#[test]
fn the_datasheet_of_a_result_file_and_of_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    let json = result_file(dir.path(), "r.json");
    let out = oscost()
        .arg("datasheet")
        .arg(&json)
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("What the OS costs a program here"),
        "{text}"
    );
    assert!(text.contains("Example CPU @ 1.00GHz, 2 CPUs"), "{text}");
    // The example experiment has none of the headline costs; its failed check is named.
    assert!(text.contains("no headline cost was measured"), "{text}");
    assert!(text.contains("example.cost400"), "{text}");
    assert!(text.lines().count() <= 20, "{text}");
    // The run printed the same sheet at its end.
    let run = oscost()
        .args(["--scripted", "--quiet", "run", "example", "--no-save"])
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(String::from_utf8(run.stdout).unwrap().ends_with(&text));
    let err = fails(
        oscost()
            .args(["--history"])
            .arg(dir.path().join("h.sqlite"))
            .arg("datasheet")
            .arg(dir.path().join("missing.json")),
    );
    assert!(
        err.contains("missing.json") && err.contains("no such file"),
        "{err}"
    );
    // It prints a screen and writes no file: a file option is refused, not ignored.
    for opt in ["--json", "--csv", "--markdown"] {
        let out_file = dir.path().join("sheet.out");
        let err = fails(oscost().arg("datasheet").arg(&json).arg(opt).arg(&out_file));
        assert!(
            err.contains(&format!("datasheet does not use {opt}")),
            "{err}"
        );
        assert!(!out_file.exists());
    }
    // Two runs: side by side, both machines named, both runs' failed checks said.
    let other = result_file(dir.path(), "s.json");
    let out = oscost()
        .arg("datasheet")
        .arg(&json)
        .arg(&other)
        .assert()
        .success()
        .get_output()
        .clone();
    let both = String::from_utf8(out.stdout).unwrap();
    assert!(
        both.starts_with("What the OS costs a program: A against B"),
        "{both}"
    );
    assert!(
        both.contains("\nA: Example CPU") && both.contains("\nB: Example CPU"),
        "{both}"
    );
    assert!(both.contains("✗ A: ") && both.contains("✗ B: "), "{both}");
}

/// A published baseline beside runs that hold none of its study's figures is refused in one
/// line naming the study's experiments and the run to give; no page is written.
#[test]
fn a_study_beside_a_run_without_its_figures_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let json = result_file(dir.path(), "r.json");
    let out = dir.path().join("page.html");
    let err = fails(
        oscost()
            .args(["report", "published:qnx-tick"])
            .arg(&json)
            .arg("-o")
            .arg(&out),
    );
    assert!(
        err.contains("published:qnx-tick:")
            && err.contains("r.json holds no figure of the study `qnx-tick` (it reads tick-forms")
            && err.contains("oscost study qnx-tick --json"),
        "{err}"
    );
    assert!(!out.exists());
}

/// `oscost datasheet` with no run, after a suite and then one experiment: the suite's sheet,
/// saying which run it is and how to see the newest; with only the one experiment's run, that
/// run's sheet, saying how few costs it holds.
#[test]
fn the_default_datasheet_is_the_newest_run_with_a_datasheets_worth() {
    let dir = tempfile::tempdir().unwrap();
    let suite: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/crates/report/tests/fixtures/suite.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let mut one = suite.clone();
    one["run_id"] = "9999aaaa-0000-4000-8000-000000000001".into();
    one["started_at"] = "2099-01-01T00:00:00Z".into();
    one["experiments"]
        .as_array_mut()
        .unwrap()
        .retain(|e| e["name"] == "syscall");
    let (a, b) = (dir.path().join("suite.json"), dir.path().join("one.json"));
    std::fs::write(&a, suite.to_string()).unwrap();
    std::fs::write(&b, one.to_string()).unwrap();
    let sheet = |files: &[&PathBuf]| {
        let h = dir.path().join(format!("h{}.sqlite3", files.len()));
        oscost()
            .args(["history", "import", "--history"])
            .arg(&h)
            .args(files)
            .assert()
            .success();
        let out = oscost()
            .args(["datasheet", "--history"])
            .arg(&h)
            .assert()
            .success()
            .get_output()
            .clone();
        String::from_utf8(out.stdout).unwrap()
    };
    let text = sheet(&[&a, &b]);
    assert!(text.contains("spawn.fork.p1mib"), "{text}");
    assert!(
        text.contains("run 52ea9e78, the newest with a third of the costs or more"),
        "{text}"
    );
    assert!(text.contains("`oscost datasheet 9999aaaa`"), "{text}");
    let text = sheet(&[&b]);
    assert!(!text.contains("spawn.fork.p1mib"), "{text}");
    assert!(text.contains("run 9999aaaa measured 2 of the"), "{text}");
}
