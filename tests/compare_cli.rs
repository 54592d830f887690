//! `oscost compare`, `completions` and `man` as a user drives them: real files, bad input.

mod common;
use common::oscost;

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

fn golden() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/oscost-2.json")
}

/// The golden run with one case 20 % slower, written to `dir`.
fn slower_copy(dir: &Path) -> PathBuf {
    let mut doc = oscost_model::read(&std::fs::read_to_string(golden()).unwrap()).unwrap();
    let c = &mut doc.experiments[0].cases[1];
    assert_eq!(c.id, "example.cost250");
    c.raw_ns.iter_mut().for_each(|x| *x *= 1.2);
    c.median_ns *= 1.2;
    c.min_ns *= 1.2;
    c.max_ns *= 1.2;
    let path = dir.join("slower.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    path
}

/// One `oscost:` line on stderr, exit 2, nothing on stdout.
fn refused(cmd: &mut Command, needle: &str) {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("oscost: "), "{err}");
    assert!(err.contains(needle), "wanted {needle:?} in {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn compare_finds_the_slower_case_and_gates_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let slower = slower_copy(dir.path());
    oscost()
        .arg("compare")
        .arg(golden())
        .arg(&slower)
        .assert()
        .success()
        .stdout(predicate::str::contains("example.cost250"))
        .stdout(predicate::str::contains("1 slower"));
    let csv = dir.path().join("c.csv");
    let out = oscost()
        .arg("compare")
        .arg(golden())
        .arg(&slower)
        .args(["--fail-above", "10", "--csv"])
        .arg(&csv)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("example.cost250") && err.contains("+20.0 %"),
        "{err}"
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text
        .lines()
        .any(|l| l.contains("example.cost250") && l.contains("slower")));
    // Above the change: passes the gate.
    oscost()
        .arg("compare")
        .arg(golden())
        .arg(&slower)
        .args(["--fail-above", "25", "--json", "-"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"schema\": \"oscost-compare/1\""));
}

/// Two runs with no figure in common: refused in one line that names both and what each
/// holds, exit 2, whether files or runs of the history; never a passed --fail-above gate.
#[test]
fn runs_with_no_common_figure_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let suite =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/report/tests/fixtures/suite.json");
    refused(
        oscost()
            .arg("compare")
            .arg(golden())
            .arg(&suite)
            .args(["--fail-above", "10"]),
        "suite.json against A = ",
    );
    let history = dir.path().join("h.sqlite3");
    oscost()
        .arg("--history")
        .arg(&history)
        .args(["history", "import"])
        .arg(golden())
        .arg(&suite)
        .assert()
        .success();
    refused(
        oscost()
            .arg("--history")
            .arg(&history)
            .args(["compare", "latest~1", "latest"]),
        "no common figure, so nothing to compare (A has 10 figures of example, example-more; B \
         has 192 figures of syscall",
    );
    // A third input that shares figures with A: the comparison that has some is shown.
    let out = oscost()
        .arg("compare")
        .arg(golden())
        .arg(&suite)
        .arg(golden())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("B = "), "{text}");
    assert!(
        text.lines().next().unwrap().contains("no common figure"),
        "{text}"
    );
    assert!(text.contains("figures compared: "), "{text}");
}

/// The --fail-above line names the slower cases by their ids, which come from the files: a
/// newline in one does not split it.
#[test]
fn the_gate_line_stays_one_line_whatever_the_ids_hold() {
    let dir = tempfile::tempdir().unwrap();
    let renamed = |path: &Path, name: &str| {
        let mut doc = oscost_model::read(&std::fs::read_to_string(path).unwrap()).unwrap();
        doc.experiments[0].cases[1].id = "cost\n250".into();
        let out = dir.path().join(name);
        std::fs::write(&out, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        out
    };
    let a = renamed(&golden(), "a.json");
    let b = renamed(&slower_copy(dir.path()), "b.json");
    let out = oscost()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--fail-above", "10"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cost\\x0a250 in"), "{err}");
}

#[test]
fn compare_refuses_bad_input_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let write = |name: &str, text: &str| {
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let truncated = write(
        "truncated.json",
        &std::fs::read_to_string(golden()).unwrap()[..500],
    );
    let other_tool = write("hyperfine.json", r#"{"results": [{"command": "x"}]}"#);
    let newer = write("newer.json", r#"{"schema": "oscost/9", "run_id": "x"}"#);
    let not_json = write("notes.txt", "hello\n");
    let missing = d.join("missing.json");
    for (path, needle) in [
        (&missing, "missing.json: no such file"),
        (&truncated, "truncated.json: not an oscost result"),
        (&other_tool, "hyperfine.json: not an oscost result"),
        (&newer, "`oscost/9`"),
        (&not_json, "notes.txt: not an oscost result"),
    ] {
        refused(oscost().arg("compare").arg(golden()).arg(path), needle);
    }
    refused(
        oscost()
            .args(["compare", "published:no-such-study"])
            .arg(golden()),
        "no such published baseline",
    );
    refused(oscost().arg("compare").arg(golden()), "two results or more");
    refused(
        oscost()
            .arg("compare")
            .arg(golden())
            .arg(golden())
            .args(["--threshold", "lots"]),
        "not a percentage",
    );
    // An unwritable output: refused before anything is written, and an existing file is kept.
    let kept = write("kept.csv", "old\n");
    std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o500)).unwrap();
    // Root writes into a read-only directory anyway: that case is only checkable as a user.
    let root = common::is_root();
    if !root {
        refused(
            oscost()
                .arg("compare")
                .arg(golden())
                .arg(golden())
                .arg("--csv")
                .arg(&kept),
            "--csv",
        );
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "old\n");
    }
    std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    refused(
        oscost()
            .arg("compare")
            .arg(golden())
            .arg(golden())
            .arg("--csv")
            .arg(d.join("no/such/dir/c.csv")),
        "--csv",
    );
}

#[test]
fn completions_and_man_page_come_from_the_cli_definition() {
    for shell in ["bash", "zsh", "fish"] {
        oscost()
            .args(["completions", shell])
            .assert()
            .success()
            .stdout(predicate::str::contains("compare"));
    }
    oscost()
        .arg("man")
        .assert()
        .success()
        .stdout(predicate::str::starts_with(".ie"))
        .stdout(predicate::str::contains(".TH oscost 1"))
        .stdout(predicate::str::contains("compare"));
    refused(oscost().args(["completions", "cmd.exe"]), "invalid value");
    // Every subcommand the top page names has a page of its own, with its options.
    oscost()
        .args(["man", "syscall"])
        .assert()
        .success()
        .stdout(predicate::str::contains(".TH oscost-syscall 1"))
        .stdout(predicate::str::contains("calls"));
    refused(
        oscost().args(["man", "bogus"]),
        "man bogus: no such subcommand",
    );
    let dir = tempfile::tempdir().unwrap();
    let pages = std::fs::read_dir(dir.path()).unwrap().count();
    oscost()
        .args(["man", "--dir"])
        .arg(dir.path())
        .assert()
        .success()
        .stderr(
            predicate::str::starts_with("wrote ").and(predicate::str::contains(format!(
                "manual pages to {}",
                dir.path().display()
            ))),
        );
    assert_eq!(pages, 0);
    for page in [
        "oscost.1",
        "oscost-run.1",
        "oscost-history-list.1",
        "oscost-timeline.1",
    ] {
        assert!(dir.path().join(page).exists(), "{page} not written");
    }
}

#[test]
fn typos_get_a_suggestion_and_negative_values_are_values() {
    refused(oscost().arg("sycall"), "(did you mean `syscall`?)");
    refused(oscost().args(["history", "lst"]), "(did you mean `list`?)");
    refused(
        oscost().args(["syscall", "--quik"]),
        "(did you mean `--quick`?)",
    );
    // A value that starts with a minus sign is the option's value, refused by its parser.
    refused(
        oscost().args(["split", "--work", "-1s"]),
        "invalid value '-1s' for '--work <TIME>'",
    );
}

#[test]
fn help_into_a_closed_pipe_ends_quietly() {
    use std::io::Read;
    let mut child = common::oscost_std()
        .arg("--help")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read nothing: the pipe is closed before oscost writes (or while it does).
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{status:?}: {err}");
    assert!(err.is_empty(), "{err}");
}

#[test]
fn no_save_is_accepted_where_nothing_is_saved() {
    let g = golden();
    oscost()
        .args(["compare", "--no-save"])
        .arg(&g)
        .arg(&g)
        .assert()
        .success();
    oscost().args(["list", "--no-save"]).assert().success();
}

/// The golden run as made on fleet host `host` (a run of its own: its own id), written to
/// `dir/host.json`.
fn on_host(dir: &Path, host: &str) -> PathBuf {
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(golden()).unwrap()).unwrap();
    doc["environment"]["fleet"] = serde_json::json!({"host_name": host, "runner": "a test"});
    let n = host
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(131).wrapping_add(u64::from(b)));
    doc["run_id"] = format!("00000000-0000-4000-8000-{:012x}", n & 0xffff_ffff_ffff).into();
    let path = dir.join(format!("{host}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    path
}

#[test]
fn group_by_host_gives_one_column_per_host_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = ["web2", "web10", "db"]
        .iter()
        .map(|h| on_host(dir.path(), h))
        .collect();
    let out = oscost()
        .args(["compare", "--group-by", "host", "--reference", "web2"])
        .args(&files)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let header = text.lines().find(|l| l.contains("│ figure")).unwrap();
    assert!(
        header.contains("db") && header.contains("web2 (reference)") && header.contains("web10"),
        "{header}"
    );
    assert!(text.contains("example.cost250"), "{text}");
    let (md, csv, json, html) = (
        dir.path().join("f.md"),
        dir.path().join("f.csv"),
        dir.path().join("f.json"),
        dir.path().join("f.html"),
    );
    oscost()
        .args(["compare", "--group-by", "host"])
        .args(&files)
        .arg("--markdown")
        .arg(&md)
        .arg("--csv")
        .arg(&csv)
        .arg("--json")
        .arg(&json)
        .arg("--report")
        .arg(&html)
        .assert()
        .success();
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .contains("| figure | db (reference) | web2 | web10 |"));
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .starts_with("figure,unit,group_by"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["groups"].as_array().unwrap().len(), 3);
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .contains("ratio to the reference"));
}

#[test]
fn group_by_refuses_a_field_no_run_has_and_one_input_needs_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = on_host(dir.path(), "a");
    let b = on_host(dir.path(), "b");
    refused(
        oscost()
            .args(["compare", "--group-by", "power.no_such_field"])
            .arg(&a)
            .arg(&b),
        "no such environment field",
    );
    refused(
        oscost()
            .args(["compare", "--group-by", "host", "--reference", "c"])
            .arg(&a)
            .arg(&b),
        "choose from: a, b",
    );
    refused(
        oscost()
            .args(["compare", "--group-by", "kernel"])
            .arg(&a)
            .arg(&b),
        "every run has the same value",
    );
    refused(oscost().arg("compare").arg(&a), "two results or more");
    refused(
        oscost()
            .args(["compare", "--group-by", "host", "--fail-above", "5"])
            .arg(&a)
            .arg(&b),
        "neither --fail-above, --rate nor --only-changed",
    );
}

/// A run's group name that cannot head a column (empty, or two lines), and runs sharing no
/// figure, are refused in one line naming the file or the groups and the fix.
#[test]
fn group_by_refuses_names_no_column_can_carry_and_groups_sharing_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let b = on_host(dir.path(), "b");
    let with_host = |name: &str, host: &str| {
        let p = on_host(dir.path(), name);
        let mut doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        doc["environment"]["fleet"]["host_name"] = host.into();
        std::fs::write(&p, doc.to_string()).unwrap();
        p
    };
    let empty = with_host("empty", "");
    refused(
        oscost()
            .args(["compare", "--group-by", "host"])
            .arg(&empty)
            .arg(&b),
        "empty.json: its host (environment.fleet.host_name) is empty",
    );
    let two_lines = with_host("two-lines", "h0\nevil");
    refused(
        oscost()
            .args(["compare", "--group-by", "host"])
            .arg(&two_lines)
            .arg(&b),
        "holds a control character",
    );
    // Another experiment's figures only: nothing to set beside b's.
    let other = on_host(dir.path(), "other");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&other).unwrap()).unwrap();
    for e in doc["experiments"].as_array_mut().unwrap() {
        for kind in ["cases", "derived"] {
            for c in e[kind].as_array_mut().unwrap() {
                let id = format!("elsewhere.{}", c["id"].as_str().unwrap());
                c["id"] = id.into();
            }
        }
    }
    std::fs::write(&other, doc.to_string()).unwrap();
    refused(
        oscost()
            .args(["compare", "--group-by", "host"])
            .arg(&b)
            .arg(&other),
        "b shares no figure with other",
    );
}

/// One run given twice is one run, not its own older run; two documents of one id that
/// differ are named.
#[test]
fn group_by_counts_a_run_given_twice_once() {
    let dir = tempfile::tempdir().unwrap();
    let a = on_host(dir.path(), "a");
    let b = on_host(dir.path(), "b");
    let out = oscost()
        .args(["compare", "--group-by", "host"])
        .arg(&a)
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("2 groups by host"), "{text}");
    assert!(!text.contains("older runs not used"), "{text}");
    let copy = dir.path().join("a-edited.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    doc["experiments"][0]["cases"][0]["description"] = "edited".into();
    std::fs::write(&copy, doc.to_string()).unwrap();
    refused(
        oscost()
            .args(["compare", "--group-by", "host"])
            .arg(&a)
            .arg(&copy)
            .arg(&b),
        "a-edited.json are both run 00000000-0000-4000-8000-",
    );
}

/// The runs are compared with the reference by one worker or several, each reading its run
/// when it starts: the same fleet either way, older runs counted and never read whole.
#[test]
fn group_by_gives_one_fleet_at_any_number_of_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = ["h1", "h2", "h3", "h4", "h5"]
        .iter()
        .map(|h| on_host(dir.path(), h))
        .collect();
    // h3 slower, and an older run of h2 whose experiments are not even valid: only its head is
    // read, since h2's newer run stands for it.
    let slow = slower_copy(dir.path());
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&slow).unwrap()).unwrap();
    let h3: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[2]).unwrap()).unwrap();
    doc["environment"] = h3["environment"].clone();
    doc["run_id"] = h3["run_id"].clone();
    std::fs::write(&files[2], doc.to_string()).unwrap();
    let mut old: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[1]).unwrap()).unwrap();
    old["run_id"] = "00000000-0000-4000-8000-0000000000aa".into();
    old["started_at"] = "2020-01-01T00:00:00Z".into();
    old["experiments"][0]["cases"][0]["samples"] = "many".into();
    let older = dir.path().join("h2-older.json");
    std::fs::write(&older, old.to_string()).unwrap();
    files.push(older);
    let fleet_json = |jobs: &str| {
        let out = oscost()
            .args([
                "compare",
                "--group-by",
                "host",
                "--jobs",
                jobs,
                "--json",
                "-",
            ])
            .args(&files)
            .arg("--quiet")
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    let one = fleet_json("1");
    assert_eq!(fleet_json("2"), one);
    assert_eq!(fleet_json("4"), one);
    let v: serde_json::Value = serde_json::from_str(&one).unwrap();
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 5, "{v}");
    assert_eq!(groups[1]["older_runs"], 1, "{v}");
    let row = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "example.cost250")
        .unwrap();
    assert_eq!(row["cells"][2]["verdict"], "slower", "{row}");
    for jobs in ["0", "-1", "two", "1025"] {
        refused(
            oscost()
                .args(["compare", "--group-by", "host", "--jobs", jobs])
                .args(&files),
            "is not a number of comparisons at once from 1 to 1024",
        );
    }
    refused(
        oscost().args(["compare", "--jobs", "2"]).args(&files),
        "--group-by",
    );
    // A chosen run that is no result is named as when every file was read whole.
    std::fs::write(&files[4], "{\"schema\": \"oscost/2\", ").unwrap();
    refused(
        oscost()
            .args(["compare", "--group-by", "host", "--jobs", "2"])
            .args(&files),
        "h5.json: not an oscost result (give a file written by oscost --json;",
    );
}

#[test]
fn host_name_and_runner_are_recorded_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    oscost()
        .args(["--scripted", "run", "example", "--no-save", "--quiet"])
        .args(["--host-name", "rack1-7", "--runner", "ansible-core 2.14"])
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["environment"]["fleet"]["host_name"], "rack1-7");
    assert_eq!(v["environment"]["fleet"]["runner"], "ansible-core 2.14");
    refused(
        oscost().args([
            "--scripted",
            "run",
            "example",
            "--no-save",
            "--host-name",
            " ",
        ]),
        "--host-name: empty",
    );
}

/// A run id for host `host`'s run of day `day`.
fn run_id(host: &str, day: u32) -> String {
    format!(
        "00000000-0000-4000-8000-{:06x}{day:06x}",
        host.as_bytes()[0]
    )
}

#[test]
fn group_by_from_a_history_reads_each_hosts_newest_run_and_counts_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let golden: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(golden()).unwrap()).unwrap();
    let mut files = Vec::new();
    for (host, day, scale) in [("a", 1, 3.0), ("a", 3, 1.0), ("a", 2, 3.0), ("b", 1, 1.0)] {
        let mut doc = golden.clone();
        doc["run_id"] = run_id(host, day).into();
        doc["started_at"] = format!("2026-11-0{day}T01:00:00Z").into();
        doc["environment"]["fleet"] = serde_json::json!({"host_name": host});
        // The older runs of `a` are 3 times slower: read, they would show.
        for e in doc["experiments"].as_array_mut().unwrap() {
            for c in e["cases"].as_array_mut().unwrap() {
                for x in c["raw_ns"].as_array_mut().unwrap() {
                    *x = (x.as_f64().unwrap() * scale).into();
                }
                for t in ["median_ns", "min_ns", "max_ns"] {
                    c[t] = (c[t].as_f64().unwrap() * scale).into();
                }
            }
        }
        let path = dir.path().join(format!("{host}-{day}.json"));
        std::fs::write(&path, doc.to_string()).unwrap();
        files.push(path);
    }
    let history = dir.path().join("h.sqlite3");
    oscost()
        .arg("--history")
        .arg(&history)
        .args(["history", "import"])
        .args(&files)
        .assert()
        .success();
    let out = oscost()
        .arg("--history")
        .arg(&history)
        .args(["compare", "--group-by", "host", "--json", "-"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{v}");
    assert_eq!(groups[0]["run_id"], run_id("a", 3));
    assert_eq!(groups[0]["older_runs"], 2);
    assert_eq!(groups[1]["run_id"], run_id("b", 1));
    assert_eq!(groups[1]["older_runs"], 0);
    for r in v["rows"].as_array().unwrap() {
        let verdict = &r["cells"][1]["verdict"];
        assert!(verdict != "slower" && verdict != "faster", "{r}");
    }
}

/// A result document that gives one case id to two cases is refused by name when loaded, by
/// compare, report and history import alike.
#[test]
fn a_document_with_a_case_id_twice_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(golden()).unwrap()).unwrap();
    let cases = doc["experiments"][0]["cases"].as_array_mut().unwrap();
    let twin = cases[0].clone();
    let id = twin["id"].as_str().unwrap().to_owned();
    cases.push(twin);
    let twice = dir.path().join("twice.json");
    std::fs::write(&twice, doc.to_string()).unwrap();
    let needle = format!("the id `{id}` is given to two cases or figures");
    refused(oscost().arg("compare").arg(golden()).arg(&twice), &needle);
    refused(
        oscost()
            .arg("report")
            .arg(&twice)
            .arg("-o")
            .arg(dir.path().join("r.html")),
        &needle,
    );
    refused(
        oscost()
            .arg("--history")
            .arg(dir.path().join("h.sqlite3"))
            .args(["history", "import"])
            .arg(&twice),
        &needle,
    );
}

/// Bills of one program from three hosts read as one table, a column per host, the reference
/// first; a run of experiments among them, or a bill of another program, is refused by name.
#[test]
fn bills_grouped_by_host_read_as_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let bill = |host: &str, cmd: &[&str]| {
        let json = dir.path().join(format!("{host}.json"));
        let out = oscost()
            .args([
                "bill",
                "--quiet",
                "--no-save",
                "--host-name",
                host,
                "--json",
            ])
            .arg(&json)
            .arg("--")
            .args(cmd)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        json
    };
    let files: Vec<_> = ["alpha", "beta", "gamma"]
        .iter()
        .map(|h| bill(h, &["sh", "-c", "exit 0"]))
        .collect();
    let out = oscost()
        .args(["compare", "--group-by", "host", "--reference", "beta"])
        .args(&files)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("sh -c exit 0 by host, 3 groups, each against beta"),
        "{text}"
    );
    let header = text.lines().find(|l| l.starts_with("counted")).unwrap();
    let cols: Vec<&str> = header.split_whitespace().skip(1).collect();
    assert_eq!(cols, ["beta", "alpha", "gamma"], "{text}");
    assert!(text.contains("task time"), "{text}");

    let other = bill("delta", &["true"]);
    let out = oscost()
        .args(["compare", "--group-by", "host"])
        .args(&files)
        .arg(&other)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("must be of one program"), "{err}");
}
