//! A PostgreSQL history as a fleet uses it: result files pushed (twice: nothing twice), then
//! listed with their hosts, shown, followed, exported, compared and reported through
//! `--history`, `OSCOST_HISTORY` and `OSCOST_HISTORY_FILE`; the password in no output; a bad
//! URL or a server that is gone refused in one line. A throw-away cluster per test (skipped,
//! saying why, only when PostgreSQL's `initdb` and `pg_ctl` are not installed).

mod common;
#[path = "../crates/history/tests/common/pgcluster.rs"]
mod pgcluster;

use pgcluster::{Cluster, PASSWORD};
use std::path::{Path, PathBuf};

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs oscost with `vars` set; returns (exit code, stdout, stderr), neither holding the
    /// password.
    fn run_with(&self, vars: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
        let mut c = common::oscost();
        c.env("XDG_DATA_HOME", self.path("data"))
            .env_remove("OSCOST_HISTORY")
            .env_remove("OSCOST_HISTORY_FILE");
        for (k, v) in vars {
            c.env(k, v);
        }
        let out = c.args(args).output().unwrap();
        let (o, e) = (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        );
        assert!(!o.contains(PASSWORD) && !e.contains(PASSWORD), "{o}{e}");
        (out.status.code().unwrap_or(-1), o, e)
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        self.run_with(&[], args)
    }

    /// The golden document as run `n` of host `host`, written to a file.
    fn result_file(&self, host: &str, n: u32) -> PathBuf {
        let mut doc: serde_json::Value =
            serde_json::from_str(include_str!("golden/oscost-2.json")).unwrap();
        let id = format!("00000000-0000-4000-8000-{:012}", n);
        doc["run_id"] = id.into();
        doc["started_at"] = format!("2026-11-0{}T10:00:00Z", n + 1).into();
        doc["environment"]["hostname"] = host.into();
        let p = self.path(&format!("{host}-{n}.json"));
        std::fs::write(&p, serde_json::to_string(&doc).unwrap()).unwrap();
        p
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn pushed_runs_are_listed_with_their_hosts_and_read_like_local_ones() {
    let Some(cluster) = Cluster::start(false) else {
        return;
    };
    let env = Env::new();
    let url = cluster.url();
    let files: Vec<PathBuf> = ["node-a", "node-b", "node-c"]
        .iter()
        .enumerate()
        .map(|(i, h)| env.result_file(h, i as u32))
        .collect();
    let mut args = vec!["history", "push", "--to", &url];
    args.extend(files.iter().map(|f| s(f)));
    let (code, out, err) = env.run(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("pushed 0000")).count(),
        3,
        "{out}"
    );
    assert!(
        out.lines()
            .last()
            .unwrap()
            .starts_with("pushed 3, already there 0 (postgres://oscost:***@"),
        "{out}"
    );
    // Again: nothing added.
    let (code, out, err) = env.run(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("already there: "))
            .count(),
        3,
        "{out}"
    );
    assert!(
        out.lines()
            .last()
            .unwrap()
            .starts_with("pushed 0, already there 3"),
        "{out}"
    );

    // The URL from a file (the password stays off the command line), as data.
    let url_file = env.path("store.url");
    std::fs::write(&url_file, format!("{url}\n")).unwrap();
    let (code, out, err) = env.run_with(
        &[("OSCOST_HISTORY_FILE", s(&url_file))],
        &["history", "list", "--json", "-"],
    );
    assert_eq!(code, 0, "{err}");
    let runs: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    let hosts: Vec<&str> = runs
        .iter()
        .map(|r| r["hostname"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["node-c", "node-b", "node-a"]);
    assert_eq!(runs[0]["run_id"], "00000000-0000-4000-8000-000000000002");
    // The table names the hosts too, and the store without its password.
    let (code, out, err) = env.run(&[
        "history",
        "list",
        "--history",
        &format!("@{}", s(&url_file)),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().next().unwrap().contains("host"), "{out}");
    assert!(
        out.contains("node-a") && out.contains("3 runs in postgres://oscost:***@"),
        "{out}"
    );
    let (code, out, _) = env.run(&["history", "list", "--csv", "-", "--history", &url]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("run_id,started_at,saved_at,hostname,"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 4, "{out}");

    // Everything else that reads the history, through OSCOST_HISTORY.
    let vars = [("OSCOST_HISTORY", url.as_str())];
    let (code, out, err) = env.run_with(&vars, &["history", "show", "latest~2"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("00000000-0000-4000-8000-000000000000"),
        "{out}"
    );
    let (code, out, err) = env.run_with(&vars, &["history", "trend", "example.cost100"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("in 3 runs"), "{out}");
    let exported = env.path("e.json");
    let (code, _, err) = env.run_with(
        &vars,
        &["history", "export", "0000", "--json", s(&exported)],
    );
    // `0000` starts every id: ambiguous, said so.
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = env.run_with(
        &vars,
        &[
            "history",
            "export",
            "00000000-0000-4000-8000-000000000001",
            "--json",
            s(&exported),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let doc = common::read_doc(&exported);
    assert_eq!(doc.environment.hostname.as_deref(), Some("node-b"));
    let (code, out, err) = env.run_with(&vars, &["compare", "latest~2", "latest", "--csv", "-"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("example.cost100"), "{out}");
    // By host from the store: each host's newest run, chosen by the database.
    let (code, out, err) = env.run_with(&vars, &["compare", "--group-by", "host", "--json", "-"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let hosts: Vec<&str> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["node-a", "node-b", "node-c"], "{out}");
    let html = env.path("r.html");
    let (code, _, err) = env.run_with(&vars, &["report", "latest~1", "latest", "-o", s(&html)]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&html).unwrap().contains("<html"));
    // A run saves into it too.
    let (code, _, err) = env.run_with(&vars, &["--scripted", "example"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("saved as run"), "{err}");
    let (_, out, _) = env.run_with(&vars, &["history", "list", "--csv", "-"]);
    assert_eq!(out.lines().count(), 5, "{out}");
    // The URL on a run's command line is recorded with its password masked (a real run, at
    // the smallest size: the scripted machine records a command line of its own).
    let (code, _, err) = env.run(&[
        "syscall",
        "--calls",
        "getpid",
        "--multi-threaded",
        "none",
        "--quick",
        "--samples",
        "5",
        "--quiet",
        "--history",
        &url,
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = env.run(&["history", "export", "latest", "--history", &url]);
    assert_eq!(code, 0, "{err}");
    let doc = oscost_model::read(&out).unwrap();
    let line = doc.environment.command_line.join(" ");
    assert!(line.contains("postgres://oscost:***@127.0.0.1"), "{line}");
}

#[test]
fn a_bad_or_unreachable_store_is_one_line_without_the_password() {
    let Some(cluster) = Cluster::start(false) else {
        return;
    };
    let env = Env::new();
    let file = env.result_file("node-a", 0);
    let wrong_pw = cluster.url().replace(PASSWORD, &format!("{PASSWORD}x"));
    let port = cluster.port;
    drop(cluster);
    let gone = format!("postgres://oscost:{PASSWORD}@127.0.0.1:{port}/postgres");
    for (args, says) in [
        (
            vec!["history", "push", "--to", gone.as_str(), s(&file)],
            "cannot reach the history at postgres://oscost:***@127.0.0.1",
        ),
        (
            vec![
                "history",
                "list",
                "--history",
                "postgres://oscost:pw@h:0x10/db",
            ],
            "--history: the URL's port `0x10` is not a number",
        ),
        (
            vec!["history", "list", "--history", "mysql://a@b/c"],
            "`mysql` is neither a file path nor a postgres:// URL",
        ),
        (
            vec!["history", "list", "--history", "@/nonexistent/url"],
            "cannot read /nonexistent/url (no such file",
        ),
        (
            vec![
                "compare",
                "latest",
                "latest~1",
                "--history",
                wrong_pw.as_str(),
            ],
            "cannot reach the history",
        ),
    ] {
        let (code, out, err) = env.run(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("oscost: ") && err.contains(says),
            "{args:?}: {err}"
        );
        assert!(!err.contains(&format!("{PASSWORD}x")), "{err}");
    }
}

/// A document holding a NUL character (which PostgreSQL's JSON cannot store) is named with its
/// file before anything is stored; the files after it are still pushed and the closing line
/// names it as not pushed.
#[test]
fn a_nul_character_is_named_and_the_push_goes_on() {
    let Some(cluster) = Cluster::start(false) else {
        return;
    };
    let env = Env::new();
    let url = cluster.url();
    let bad = env.result_file("node-a", 0);
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&bad).unwrap()).unwrap();
    doc["experiments"][0]["cases"][0]["description"] = "a\u{0}b".into();
    std::fs::write(&bad, doc.to_string()).unwrap();
    let good = env.result_file("node-b", 1);
    let (code, out, err) = env.run(&["history", "push", "--to", &url, s(&bad), s(&good)]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(s(&bad)) && err.contains("a NUL character"),
        "{err}"
    );
    assert!(
        out.contains("pushed 00000000-0000-4000-8000-000000000001"),
        "{out}"
    );
    assert!(
        out.lines().last().unwrap().contains(&format!(
            "pushed 1, already there 0, 1 not read (not pushed: {})",
            s(&bad)
        )),
        "{out}"
    );
}
