//! The history as a user drives it: scripted runs saved, then listed, shown, followed,
//! exported, imported and removed; bad input refused in one line. Each test has a data
//! directory (`XDG_DATA_HOME`) of its own, so its history starts empty.

mod common;

use common::read_doc;
use std::path::{Path, PathBuf};

/// A fresh data directory and the history file oscost keeps in it by default.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("data/oscost/history.sqlite3")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// oscost with this data directory and tables at their natural width.
    fn oscost(&self) -> assert_cmd::Command {
        let mut c = common::oscost();
        c.env("XDG_DATA_HOME", self.dir.path().join("data"));
        c
    }

    /// Runs oscost; returns (exit code, stdout, stderr).
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.oscost().args(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    /// A scripted run of `example` with its result document in `name`; returns its run id.
    fn scripted_run(&self, name: &str) -> String {
        let json = self.path(name);
        let (code, _, err) = self.run(&[
            "--scripted",
            "run",
            "example",
            "--json",
            json.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        read_doc(&json)
            .run_id
            .expect("an oscost/2 document has an id")
    }

    /// The full ids `history list` names, newest first.
    fn listed(&self) -> Vec<String> {
        let (code, out, err) = self.run(&["history", "list"]);
        assert_eq!(code, 0, "{err}");
        out.lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next())
            .filter(|id| id.len() == 8)
            .map(str::to_owned)
            .collect()
    }
}

fn short(id: &str) -> &str {
    &id[..8]
}

/// One line on stderr, `oscost: ...`, exit 2. A line saying what was put back after another
/// oscost process that was killed (another test's, or one running beside the tests) is no
/// part of the error.
fn assert_one_line_error(code: i32, err: &str, needles: &[&str]) {
    assert_eq!(code, 2, "{err}");
    let err: String = err
        .lines()
        .filter(|l| !l.ends_with("ended before it could)"))
        .map(|l| format!("{l}\n"))
        .collect();
    let err = err.as_str();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("oscost: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` not in: {err}");
    }
}

#[test]
fn show_continues_a_long_command_line_under_itself_to_fit_the_terminal() {
    let home = Home::new();
    // A scripted run records a fixed command line: give its document a long one, as a run
    // with a long --json path or list of cases has, and import it.
    home.scripted_run("r.json");
    let json = home.path("r.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let long = format!("/tmp/{}.json", "a-rather-long-result-name".repeat(3));
    doc["run_id"] = serde_json::json!("01234567-89ab-4def-8123-456789abcdef");
    doc["environment"]["command_line"] = serde_json::json!(["oscost", "switch", "--json", long]);
    let edited = home.path("long.json");
    std::fs::write(&edited, doc.to_string()).unwrap();
    let (code, _, err) = home.run(&["history", "import", edited.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let out = home
        .oscost()
        .env("COLUMNS", "60")
        .args(["history", "show", "01234567"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let header: Vec<&str> = text.lines().take_while(|l| !l.is_empty()).collect();
    for l in &header {
        assert!(
            l.chars().count() <= 60,
            "{} columns: {l}\n{text}",
            l.chars().count()
        );
    }
    // Every character of the command is kept, in order, the first line labelled and the
    // path cut where the line ends.
    let start = header
        .iter()
        .position(|l| l.starts_with("command  "))
        .unwrap();
    let kept: Vec<&str> = header[start..].iter().map(|l| &l[9..]).collect();
    assert!(kept.len() > 2, "{text}");
    assert!(
        header[start + 1..]
            .iter()
            .all(|l| l.starts_with("         ")),
        "{text}"
    );
    let squeeze = |s: &str| s.split_whitespace().collect::<String>();
    assert_eq!(
        squeeze(&kept.join(" ")),
        squeeze(&format!("oscost switch --json {long}")),
        "{text}"
    );
}

#[test]
fn a_scripted_run_is_saved_and_can_be_listed_shown_exported_and_removed() {
    let home = Home::new();
    let json = home.path("r.json");
    let (code, _, err) = home.run(&[
        "--scripted",
        "run",
        "example",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let id = read_doc(&json).run_id.unwrap();
    let s = short(&id);
    assert!(
        err.contains(&format!("saved as run {s} (oscost history show {s})")),
        "{err}"
    );
    assert!(home.db().exists());
    assert_eq!(home.listed(), [s]);
    let (_, list, _) = home.run(&["history", "list"]);
    assert!(list.contains("Example CPU @ 1.00GHz"), "{list}");
    assert!(list.contains("example (5)"), "{list}");

    // show: the header, then the tables.
    for name in [id.as_str(), s, &id[..4], "latest"] {
        let (code, out, err) = home.run(&["history", "show", name]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(&format!("run      {id}")), "{out}");
        assert!(out.contains("kernel   0.0.0-example"), "{out}");
        assert!(out.contains("example.cost100"), "{out}");
        assert!(out.contains("example.flagged_difference"), "{out}");
    }

    // export: the same document, on stdout or into --json FILE.
    let (code, out, err) = home.run(&["history", "export", s]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(oscost_model::read(&out).unwrap(), read_doc(&json));
    let exported = home.path("exported.json");
    let (code, out, err) = home.run(&[
        "history",
        "export",
        "latest",
        "--json",
        exported.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "");
    assert_eq!(read_doc(&exported), read_doc(&json));

    // rm, and then the run is gone.
    let (code, out, err) = home.run(&["history", "rm", s]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("removed run {id}\n"));
    assert!(home.listed().is_empty());
    let (code, _, err) = home.run(&["history", "show", s]);
    assert_one_line_error(code, &err, &[s, "oscost history list"]);
}

#[test]
fn quiet_runs_are_saved_without_a_word_and_no_save_saves_nothing() {
    let home = Home::new();
    let (code, _, err) = home.run(&["--scripted", "--quiet", "example"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "");
    assert_eq!(home.listed().len(), 1);
    let (code, _, err) = home.run(&["--scripted", "--no-save", "example"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("saved"), "{err}");
    assert_eq!(home.listed().len(), 1);

    let empty = Home::new();
    let (code, _, err) = empty.run(&["--scripted", "example", "--no-save"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = empty.run(&["history", "list"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("no runs in the history yet"), "{out}");
    // --no-save and --history together make no sense.
    let (code, _, err) = empty.run(&["--scripted", "example", "--no-save", "--history", "x"]);
    assert_one_line_error(code, &err, &["--no-save"]);
}

#[test]
fn a_trend_lists_every_run_oldest_first_and_draws_it() {
    let home = Home::new();
    let ids: Vec<String> = (0..3)
        .map(|i| home.scripted_run(&format!("r{i}.json")))
        .collect();
    let (code, out, err) = home.run(&["history", "trend", "example.cost250"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("example.cost250: median per op in 3 runs, oldest first\n"),
        "{out}"
    );
    let rows: Vec<&str> = out.lines().skip(2).collect();
    assert_eq!(rows.len(), 3, "{out}");
    // Runs started within the same second keep the order they were saved in.
    for (row, id) in rows.iter().zip(&ids) {
        assert!(row.starts_with(short(id)), "{out}");
        assert!(row.contains("257.5 ns"), "{out}");
        // The fictional machine never changes.
        assert!(!row.contains("environment changed"), "{out}");
    }
    // A derived figure, drawn into a file and into a directory.
    let svg = home.path("t.svg");
    let (code, out, err) = home.run(&[
        "history",
        "trend",
        "example.flagged_difference",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("flagged"), "{out}");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<?xml"), "{text}");
    assert!(text.contains("example.flagged_difference: estimate across runs"));
    let (code, _, err) = home.run(&[
        "history",
        "trend",
        "example.cost100",
        "--svg",
        home.dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(home.path("example.cost100.svg").exists());
    // An unknown case is named, with the ones it may have meant.
    let (code, _, err) = home.run(&["history", "trend", "cost25"]);
    assert_one_line_error(code, &err, &["`cost25`", "example.cost250"]);
}

#[test]
fn a_trend_names_what_changed_and_marks_quick_runs() {
    let home = Home::new();
    home.scripted_run("a.json");
    // A later run on another kernel, and a quick one: the same document, edited.
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path("a.json")).unwrap()).unwrap();
    doc["run_id"] = "01234567-89ab-4def-8123-456789abcdef".into();
    doc["started_at"] = "2099-01-01T00:00:00Z".into();
    doc["environment"]["kernel_release"] = "9.9.9-test".into();
    doc["environment"]["command_line"]
        .as_array_mut()
        .unwrap()
        .push("--quick".into());
    std::fs::write(home.path("b.json"), doc.to_string()).unwrap();
    let (code, _, err) = home.run(&["history", "import", home.path("b.json").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = home.run(&["history", "trend", "example.cost250"]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<&str> = out.lines().skip(2).take(2).collect();
    assert!(rows[0].trim_end().ends_with(" full"), "{out}");
    assert!(
        rows[1].contains(" quick ") && rows[1].contains("environment changed"),
        "{out}"
    );
    let change = out
        .lines()
        .find(|l| l.starts_with("environment changed before run 01234567: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        change.contains("kernel ") && change.ends_with("→ 9.9.9-test"),
        "{out}"
    );
    assert!(out.contains("size: quick runs (--quick)"), "{out}");
}

#[test]
fn importing_twice_changes_nothing() {
    let home = Home::new();
    let id = home.scripted_run("r.json");
    let (code, out, err) = home.run(&["history", "import", home.path("r.json").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("already in the history: {id}\n"));
    // Into another history: imported, then already there.
    let other = Home::new();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/oscost-1.json");
    let files = [
        home.path("r.json").to_str().unwrap().to_owned(),
        golden.to_str().unwrap().to_owned(),
    ];
    let (code, first, err) = other.run(&["history", "import", &files[0], &files[1]]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(lines.len(), 2, "{first}");
    assert_eq!(lines[0], format!("imported {id}"));
    let golden_id = lines[1].strip_prefix("imported ").expect(&first);
    let (code, second, err) = other.run(&["history", "import", &files[0], &files[1]]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        second,
        format!("already in the history: {id}\nalready in the history: {golden_id}\n")
    );
    assert_eq!(other.listed().len(), 2);
    // The oscost/1 document shows, with no start time.
    let (code, out, err) = other.run(&["history", "show", golden_id]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("an oscost/1 document"), "{out}");
}

#[test]
fn bad_files_are_named_in_one_line_and_nothing_of_them_is_kept() {
    let home = Home::new();
    let id = home.scripted_run("good.json");
    let good = std::fs::read_to_string(home.path("good.json")).unwrap();
    std::fs::write(home.path("truncated.json"), &good[..good.len() / 2]).unwrap();
    std::fs::write(
        home.path("other.json"),
        "{\"name\": \"another tool\", \"v\": [1]}",
    )
    .unwrap();
    std::fs::write(
        home.path("future.json"),
        good.replacen("\"oscost/2\"", "\"oscost/9\"", 1),
    )
    .unwrap();
    for (file, needles) in [
        ("missing.json", &["missing.json", "no such file"][..]),
        (
            "truncated.json",
            &["truncated.json", "not an oscost result document"][..],
        ),
        (
            "other.json",
            &["other.json", "not an oscost result document"][..],
        ),
        (
            "future.json",
            &["future.json", "`oscost/9`", "newer one"][..],
        ),
    ] {
        let (code, out, err) = home.run(&["history", "import", home.path(file).to_str().unwrap()]);
        assert_one_line_error(code, &err, needles);
        assert_eq!(out, "");
    }
    assert_eq!(home.listed(), [short(&id)]);
    // A bad file among good ones: the others still go in, and the exit says one failed.
    let other = Home::new();
    let (code, out, err) = other.run(&[
        "history",
        "import",
        home.path("missing.json").to_str().unwrap(),
        home.path("good.json").to_str().unwrap(),
    ]);
    assert_one_line_error(code, &err, &["missing.json"]);
    assert_eq!(out, format!("imported {id}\n"));
    // Unknown, too short and misspelt run names.
    for (args, needles) in [
        (
            &["history", "show", "0000dead"][..],
            &["`0000dead`", "oscost history list"][..],
        ),
        (&["history", "export", "zzzzzzzz"][..], &["`zzzzzzzz`"][..]),
        (&["history", "rm", "ab"][..], &["`ab`", "at least 4"][..]),
        (
            &["history", "trend", "no.such.case"][..],
            &["`no.such.case`"][..],
        ),
    ] {
        let (code, out, err) = home.run(args);
        assert_one_line_error(code, &err, needles);
        assert_eq!(out, "");
    }
    assert_eq!(home.listed(), [short(&id)]);
}

#[test]
fn a_history_that_cannot_be_written_fails_before_measuring() {
    let home = Home::new();
    // A regular file where the database's directory would be.
    std::fs::write(home.path("file"), "").unwrap();
    let json = home.path("r.json");
    for bad in [home.path("file/h.sqlite3"), home.path("r0.json")] {
        if bad.ends_with("r0.json") {
            std::fs::write(&bad, "not a database, and long enough to be read as one").unwrap();
        }
        let (code, out, err) = home.run(&[
            "--scripted",
            "example",
            "--history",
            bad.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ]);
        assert_one_line_error(code, &err, &[bad.to_str().unwrap(), "--history"]);
        // Nothing was measured: no table, no result file.
        assert_eq!(out, "");
        assert!(!json.exists());
    }
    // The same at the default place is a warning, and the run goes on.
    let home = Home::new();
    std::fs::write(home.path("data"), "").unwrap();
    let (code, out, err) = home.run(&["--scripted", "example"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("example.cost100"), "{out}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("history")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].starts_with("oscost: history not saved: ")
            && warnings[0].ends_with("(use --history PATH or --no-save)"),
        "{err}"
    );
}

#[test]
fn a_history_of_a_newer_oscost_is_refused() {
    let home = Home::new();
    let db = home.path("h.sqlite3");
    // Reading creates nothing; a run does.
    let (code, _, err) = home.run(&["history", "list", "--history", db.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(!db.exists());
    let (code, _, err) = home.run(&["--scripted", "example", "--history", db.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "INSERT INTO schema_migrations (version, applied_at) VALUES (99, 'later')",
        [],
    )
    .unwrap();
    drop(conn);
    for args in [&["history", "list"][..], &["--scripted", "example"][..]] {
        let (code, out, err) = home.run(&[args, &["--history", db.to_str().unwrap()]].concat());
        assert_one_line_error(
            code,
            &err,
            &[
                "was written by a newer oscost (schema 99, this one knows 3)",
                "--history PATH",
            ],
        );
        assert_eq!(out, "");
    }
}

#[test]
fn a_history_without_schema_migrations_is_refused_in_one_line() {
    let home = Home::new();
    let db = home.path("h.sqlite3");
    let (code, _, err) = home.run(&["--scripted", "example", "--history", db.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("DROP TABLE schema_migrations").unwrap();
    drop(conn);
    for args in [&["history", "list"][..], &["--scripted", "example"][..]] {
        let (code, out, err) = home.run(&[args, &["--history", db.to_str().unwrap()]].concat());
        assert_one_line_error(
            code,
            &err,
            &[
                "h.sqlite3 is not a whole oscost history (it has no schema_migrations table)",
                "move it aside",
            ],
        );
        assert!(!err.contains("CREATE") && !err.contains("SELECT"), "{err}");
        assert_eq!(out, "");
    }
}

/// A case id holding a newline and an escape, in a file refused at import and by compare: the
/// error stays one line, the id's characters shown as escapes.
#[test]
fn a_newline_in_a_case_id_does_not_split_the_error() {
    let home = Home::new();
    home.scripted_run("r.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path("r.json")).unwrap()).unwrap();
    let case = &mut doc["experiments"][0]["cases"][0];
    case["id"] = "evil\nid\u{1b}[2J".into();
    let raw = case["raw_ns"].as_array().unwrap().clone();
    case["raw_ns"] = raw.iter().chain(&raw).chain(&raw).cloned().collect();
    let bad = home.path("bad.json");
    std::fs::write(&bad, doc.to_string()).unwrap();
    let bad = bad.to_str().unwrap();
    let r = home.path("r.json");
    for args in [
        &["history", "import", bad][..],
        &["compare", bad, r.to_str().unwrap()][..],
    ] {
        let (code, out, err) = home.run(args);
        assert_one_line_error(code, &err, &["case `evil\\x0aid\\x1b[2J` has", "raw_ns"]);
        assert!(!err.contains('\u{1b}'), "{err}");
        assert_eq!(out, "");
    }
}

#[test]
fn history_commands_refuse_options_they_do_not_use() {
    let home = Home::new();
    let (code, _, err) = home.run(&["history", "list", "--quick"]);
    assert_one_line_error(code, &err, &["history list does not use --quick"]);
    let (code, _, err) = home.run(&["history", "show", "latest", "--json", "x.json"]);
    assert_one_line_error(code, &err, &["history show does not use --json"]);
    let (code, _, err) = home.run(&["history", "show", "latest"]);
    assert_one_line_error(code, &err, &["holds no runs yet"]);
}

/// `oscost run` with no experiment named (the default suite) ends by naming the run in the
/// history, its result file and its report, all kept beside the history; `--no-save` keeps
/// none of them.
#[test]
fn the_default_suite_names_its_saved_run_result_file_and_report() {
    let home = Home::new();
    let (code, _, err) = home.run(&["--quick", "--samples", "5", "run"]);
    assert_eq!(code, 0, "{err}");
    let ids = home.listed();
    assert_eq!(ids.len(), 1, "{err}");
    assert!(err.contains(&format!("saved as run {}", ids[0])), "{err}");
    let named = |label: &str| -> PathBuf {
        let line = err
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no `{label}` line in: {err}"));
        PathBuf::from(line[label.len()..].trim())
    };
    let (json, html) = (named("results:"), named("report:"));
    let runs = home.db().parent().unwrap().join("runs");
    assert!(json.starts_with(&runs) && html.starts_with(&runs), "{err}");
    let doc = read_doc(&json);
    assert!(doc.run_id.as_deref().unwrap().starts_with(&ids[0]));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(doc.run_id.as_deref().unwrap()));

    let other = Home::new();
    let (code, _, err) = other.run(&["--quick", "--samples", "5", "--no-save", "run", "syscall"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !err.contains("results:") && !err.contains("saved as run"),
        "{err}"
    );
    assert!(!other.db().parent().unwrap().join("runs").exists());
}

/// `history export --json` and `history trend --svg` keep to the rules every output follows: a
/// read-only file is refused and left as it was, a missing directory never becomes a file.
#[test]
fn history_outputs_refuse_read_only_files_and_missing_directories() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new();
    home.scripted_run("r.json");
    for (name, args) in [
        ("ro.json", &["history", "export", "latest", "--json"][..]),
        (
            "ro.svg",
            &["history", "trend", "example.cost100", "--svg"][..],
        ),
    ] {
        let ro = home.path(name);
        std::fs::write(&ro, "precious").unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
        let mut all = args.to_vec();
        all.push(ro.to_str().unwrap());
        let (code, out, err) = home.run(&all);
        assert_one_line_error(code, &err, &["read-only (mode 0444)"]);
        assert_eq!(out, "");
        assert_eq!(std::fs::read_to_string(&ro).unwrap(), "precious");
    }
    let nodir = format!("{}/", home.path("nodir").display());
    let (code, _, err) = home.run(&["history", "trend", "example.cost100", "--svg", &nodir]);
    assert_one_line_error(code, &err, &["no such directory"]);
    assert!(!home.path("nodir").exists());
}

/// A missing argument is named in the one line, not cut off after "not provided:".
#[test]
fn missing_arguments_are_named_in_one_line() {
    let home = Home::new();
    let (code, _, err) = home.run(&["history", "show"]);
    assert_one_line_error(code, &err, &["not provided: <RUN>"]);
    let (code, _, err) = home.run(&["history", "import"]);
    assert_one_line_error(code, &err, &["not provided: <FILE>"]);
}

/// A document whose run id is stored with other content is never dropped quietly: import and
/// push refuse it by name with the fix, go on with the others, and exit 2; the same document
/// again is still "already there".
#[test]
fn a_stored_id_with_other_content_is_refused_by_name() {
    let home = Home::new();
    let id = home.scripted_run("a.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path("a.json")).unwrap()).unwrap();
    doc["experiments"][0]["cases"][0]["description"] = "edited".into();
    std::fs::write(home.path("b.json"), doc.to_string()).unwrap();
    let b = home.path("b.json");
    let b = b.to_str().unwrap();
    let (code, out, err) = home.run(&["history", "import", b]);
    assert_one_line_error(code, &err, &[b, &id, "other content", "history rm"]);
    assert!(out.is_empty(), "{out}");
    let a = home.path("a.json");
    let (code, out, err) = home.run(&["history", "push", a.to_str().unwrap(), b]);
    assert_one_line_error(code, &err, &[b, &id, "other content"]);
    assert!(out.contains(&format!("already there: {id}")), "{out}");
    assert!(
        out.lines().last().unwrap().contains(&format!(
            "1 refused (another run's content under a stored id: {b})"
        )),
        "{out}"
    );
}

/// `--since` takes a date, a time or an age; anything else, or a time to come, is refused in
/// one line. `--all-runs` lists the same runs as a window that holds them all.
#[test]
fn since_chooses_runs_by_start_and_bad_times_are_refused() {
    let home = Home::new();
    let a = home.scripted_run("a.json");
    let b = home.scripted_run("b.json");
    for args in [
        &["history", "list", "--since", "1d"][..],
        &["history", "list", "--since", "2026-01-01", "--all-runs"],
        &["history", "trend", "example.cost100", "--since", "2weeks"],
    ] {
        let (code, out, err) = home.run(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        for id in [&a, &b] {
            assert!(out.contains(short(id)), "{args:?}: {out}");
        }
        assert!(!out.contains("--all-runs for every one"), "{out}");
    }
    for bad in ["yesterday", "2026-13-01", "7 parsecs", ""] {
        let (code, _, err) = home.run(&["history", "list", "--since", bad]);
        assert_one_line_error(code, &err, &["--since", "is not a date", "7d"]);
    }
    let (code, _, err) = home.run(&[
        "history",
        "trend",
        "example.cost100",
        "--since",
        "2999-01-01",
    ]);
    assert_one_line_error(code, &err, &["in the future"]);
}

/// `compare --group-by FIELD` from the history, no files given: each group's newest run
/// stands for it and the older ones are counted.
#[test]
fn group_by_a_field_from_the_history_keeps_each_groups_newest() {
    let home = Home::new();
    home.scripted_run("a.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path("a.json")).unwrap()).unwrap();
    for (n, kernel) in ["6.1.0-a", "6.1.0-a", "6.12.0-b"].iter().enumerate() {
        doc["run_id"] = serde_json::json!(format!("0000000{n}-89ab-4def-8123-456789abcdef"));
        doc["started_at"] = serde_json::json!(format!("2026-11-0{}T00:00:00Z", n + 1));
        doc["environment"]["kernel_release"] = serde_json::json!(kernel);
        let f = home.path(&format!("k{n}.json"));
        std::fs::write(&f, doc.to_string()).unwrap();
        let (code, _, err) = home.run(&["history", "import", f.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
    }
    let json = home.path("fleet.json");
    let (code, _, err) = home.run(&[
        "compare",
        "--group-by",
        "kernel_release",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let mut groups: Vec<(String, i64)> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["name"].as_str().unwrap().to_owned(),
                g["older_runs"].as_i64().unwrap(),
            )
        })
        .collect();
    groups.sort();
    assert_eq!(groups.len(), 3, "{groups:?}");
    assert!(groups.contains(&("6.1.0-a".to_owned(), 1)), "{groups:?}");
    assert!(groups.contains(&("6.12.0-b".to_owned(), 0)), "{groups:?}");
}

/// A NUL character in a document (which a PostgreSQL store cannot keep) is named with the file
/// before anything is stored; the push goes on with the other files and its summary names
/// what was not pushed.
#[test]
fn a_push_goes_on_past_a_bad_file_and_names_it_in_its_summary() {
    let home = Home::new();
    let id = home.scripted_run("a.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path("a.json")).unwrap()).unwrap();
    doc["run_id"] = "00000000-0000-4000-8000-000000000001".into();
    doc["experiments"][0]["cases"][0]["description"] = "a\u{0}b".into();
    std::fs::write(home.path("nul.json"), doc.to_string()).unwrap();
    let (a, nul) = (home.path("a.json"), home.path("nul.json"));
    let (a, nul) = (a.to_str().unwrap(), nul.to_str().unwrap());
    let store = home.path("store.sqlite3");
    let (code, out, err) = home.run(&["history", "push", nul, a, "--to", store.to_str().unwrap()]);
    assert_one_line_error(code, &err, &[nul, "a NUL character (\\u0000) at line 1"]);
    assert!(out.contains(&format!("pushed {id}")), "{out}");
    assert!(
        out.lines().last().unwrap().contains(&format!(
            "pushed 1, already there 0, 1 not read (not pushed: {nul})"
        )),
        "{out}"
    );
}

/// A run stored before its kind of document was refused (a time far below zero) is named when
/// read, once, with the way to remove it.
#[test]
fn a_stored_run_that_no_longer_reads_is_named_with_its_removal() {
    let home = Home::new();
    let id = home.scripted_run("a.json");
    let (code, _, err) = home.run(&["history", "import", home.path("a.json").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, text, err) = home.run(&["history", "export", &id]);
    assert_eq!(code, 0, "{err}");
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["experiments"][0]["cases"][0]["median_ns"] = (-89_120.0).into();
    // As a store kept it before its documents were compressed (schema 3): in `runs`.
    let db = rusqlite::Connection::open(home.db()).unwrap();
    db.execute("DELETE FROM documents WHERE run_id = ?1", [&id])
        .unwrap();
    db.execute(
        "UPDATE runs SET document = ?1 WHERE run_id = ?2",
        [&doc.to_string(), &id],
    )
    .unwrap();
    drop(db);
    let (code, out, err) = home.run(&["history", "show", "latest"]);
    assert_one_line_error(
        code,
        &err,
        &[
            &format!("run {id} in the history cannot be read"),
            "below zero",
            &format!("(remove it with `oscost history rm {id}`)"),
        ],
    );
    assert_eq!(err.matches("below zero").count(), 1, "{err}");
    assert!(out.is_empty(), "{out}");
}
