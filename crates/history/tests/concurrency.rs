//! Several writers at once, and a writer killed in the middle: every run lands whole or not at
//! all. The writer processes are this test binary run again on the ignored `child_writer`,
//! with `CHILD_DB` set.

mod common;

use oscost_history::History;
use std::io::BufRead as _;
use std::path::Path;
use std::process::{Command, Stdio};

/// Where a child writer saves; unset in a normal test run.
const CHILD_DB: &str = "OSCOST_HISTORY_TEST_CHILD_DB";
/// Runs it saves (0: until it is killed).
const CHILD_RUNS: &str = "OSCOST_HISTORY_TEST_CHILD_RUNS";
/// Tells its runs apart from another writer's.
const CHILD_TAG: &str = "OSCOST_HISTORY_TEST_CHILD_TAG";

/// The writer, started by [`writer_process`]; not a test of its own, so ignored in a normal
/// run (and a no-op without `CHILD_DB`).
#[test]
#[ignore = "a writer process, run by the tests below"]
fn child_writer() {
    let Ok(db) = std::env::var(CHILD_DB) else {
        return;
    };
    let runs: u32 = std::env::var(CHILD_RUNS).unwrap().parse().unwrap();
    let tag = std::env::var(CHILD_TAG).unwrap();
    let mut h = History::open(Path::new(&db)).unwrap();
    let mut n = 0;
    while runs == 0 || n < runs {
        let saved = h.save(&common::big_run(&tag, n, 200)).unwrap();
        assert!(saved.new);
        // Each line is written whole, then the parent may kill us between two saves or in
        // the middle of one.
        println!("saved {}", saved.run_id);
        n += 1;
    }
}

fn writer_process(db: &Path, runs: u32, tag: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "child_writer",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DB, db)
        .env(CHILD_RUNS, runs.to_string())
        .env(CHILD_TAG, tag)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The id on a writer's `saved` line. The test harness may have begun the first line with
/// the test's name.
fn saved_id(line: &str) -> Option<String> {
    line.split_once("saved ")
        .map(|(_, id)| id.trim().to_owned())
}

/// The ids a writer process said it saved.
fn saved_ids(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(saved_id)
        .collect()
}

/// Checks the database as SQLite sees it and every run in it: each run's case and
/// experiment rows match its document.
fn assert_whole(db: &Path) -> usize {
    let conn = rusqlite::Connection::open(db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let h = History::open(db).unwrap();
    let runs = h.list().unwrap();
    for r in &runs {
        let doc = h.get(&r.run_id).unwrap();
        let cases: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM cases WHERE run_id = ?1",
                [&r.run_id],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(
            cases as usize,
            oscost_history::case_count(&doc),
            "{}",
            r.run_id
        );
        assert_eq!(
            r.case_count,
            oscost_history::case_count(&doc),
            "{}",
            r.run_id
        );
        let names: Vec<&str> = doc.experiments.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(r.experiments, names, "{}", r.run_id);
    }
    runs.len()
}

#[test]
fn two_threads_with_their_own_connections_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.sqlite3");
    let writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|tag| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut h = History::open(&db).unwrap();
                (0..50)
                    .map(|n| h.save(&common::run(tag, n)).unwrap().run_id)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut ids: Vec<String> = writers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    assert_eq!(assert_whole(&db), 100);
    let h = History::open(&db).unwrap();
    let mut listed: Vec<String> = h.list().unwrap().into_iter().map(|r| r.run_id).collect();
    ids.sort();
    listed.sort();
    assert_eq!(ids, listed);
}

#[test]
fn two_processes_all_land() {
    let dir = tempfile::tempdir().unwrap();
    // Neither process finds the database: both create it at once.
    let db = dir.path().join("new/history.sqlite3");
    let children = [writer_process(&db, 50, "p"), writer_process(&db, 50, "q")];
    let mut ids = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a writer failed: {out:?}");
        let saved = saved_ids(&out.stdout);
        assert_eq!(saved.len(), 50);
        ids.extend(saved);
    }
    assert_eq!(assert_whole(&db), 100);
    let h = History::open(&db).unwrap();
    for id in &ids {
        h.get(id).unwrap();
    }
}

#[test]
fn a_writer_killed_in_the_middle_leaves_only_whole_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.sqlite3");
    let mut child = writer_process(&db, 0, "killed");
    let stdout = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let mut confirmed = Vec::new();
    while confirmed.len() < 15 {
        let line = lines.next().expect("the writer ended early").unwrap();
        confirmed.extend(saved_id(&line));
    }
    // SIGKILL: no destructor, no rollback of its own; it is somewhere inside a save.
    child.kill().unwrap();
    child.wait().unwrap();
    let runs = assert_whole(&db);
    // Everything it confirmed is there, and at most the one it was writing besides.
    assert!(
        runs >= confirmed.len() && runs <= confirmed.len() + 2,
        "{runs}"
    );
    let mut h = History::open(&db).unwrap();
    for id in &confirmed {
        h.get(id).unwrap();
    }
    // The database takes new runs afterwards.
    assert!(h.save(&common::run("after", 1)).unwrap().new);
    assert_eq!(assert_whole(&db), runs + 1);
}
