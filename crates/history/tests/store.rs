//! Saving, reading, listing, resolving, removing and trends, on a database in a fresh
//! directory.

mod common;

use oscost_history::{History, HistoryError, SCHEMA_VERSION};

fn fresh() -> (tempfile::TempDir, History) {
    let dir = tempfile::tempdir().unwrap();
    // A directory that does not exist yet: open makes it.
    let h = History::open(&dir.path().join("a/b/history.sqlite3")).unwrap();
    (dir, h)
}

#[test]
fn a_saved_run_reads_back_equal() {
    let (_dir, mut h) = fresh();
    let doc = common::run("round", 1);
    let saved = h.save(&doc).unwrap();
    assert!(saved.new);
    assert_eq!(Some(&saved.run_id), doc.run_id.as_ref());
    assert_eq!(h.get(&saved.run_id).unwrap(), doc);
    let list = h.list().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].run_id, saved.run_id);
    assert_eq!(list[0].experiments, ["example", "example-more"]);
    assert_eq!(list[0].case_count, 10);
    assert_eq!(list[0].kernel, "0.0.0-example");
    assert_eq!(list[0].cpu_model.as_deref(), Some("Example CPU @ 1.00GHz"));
}

#[test]
fn saving_a_run_twice_changes_nothing() {
    let (_dir, mut h) = fresh();
    let doc = common::run("twice", 1);
    assert!(h.save(&doc).unwrap().new);
    let again = h.save(&doc).unwrap();
    assert!(!again.new);
    assert_eq!(h.list().unwrap().len(), 1);
    assert_eq!(h.trend("example.cost100").unwrap().len(), 1);
}

#[test]
fn an_oscost_1_document_gets_the_same_id_every_time() {
    let (_dir, mut h) = fresh();
    let doc = oscost_model::read(common::GOLDEN_1).unwrap();
    assert_eq!(doc.run_id, None);
    let first = h.save(&doc).unwrap();
    assert!(first.new);
    // Read again from the file: same id, nothing new.
    let second = h
        .save(&oscost_model::read(common::GOLDEN_1).unwrap())
        .unwrap();
    assert_eq!(
        second,
        oscost_history::Saved {
            run_id: first.run_id.clone(),
            new: false,
            differs: false
        }
    );
    assert_eq!(first.run_id, oscost_history::derived_run_id(&doc).unwrap());
    // And in another history too: the id depends on the document alone.
    let (_dir2, mut other) = fresh();
    assert_eq!(other.save(&doc).unwrap().run_id, first.run_id);
    // It reads back with the id it was given, and no start time.
    let back = h.get(&first.run_id).unwrap();
    assert_eq!(back.run_id.as_deref(), Some(first.run_id.as_str()));
    assert_eq!(back.started_at, None);
    assert_eq!(back.experiments, doc.experiments);
    // Exported and imported again, it is still the same run.
    assert!(!h.save(&back).unwrap().new);
    assert_eq!(h.list().unwrap()[0].started_at, None);
}

#[test]
fn a_database_of_a_newer_oscost_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.sqlite3");
    drop(History::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, 'later')",
        [SCHEMA_VERSION + 1],
    )
    .unwrap();
    drop(conn);
    let err = History::open(&path).unwrap_err();
    match &err {
        HistoryError::TooNew {
            path: p,
            found,
            known,
        } => {
            assert_eq!(p, &path);
            assert_eq!(*found, SCHEMA_VERSION + 1);
            assert_eq!(*known, SCHEMA_VERSION);
        }
        other => panic!("expected TooNew, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("was written by a newer oscost"), "{text}");
    assert!(text.contains("--history PATH"), "{text}");
    assert!(!text.contains('\n'), "{text}");
}

#[test]
fn a_file_that_is_not_a_database_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    std::fs::write(&path, common::GOLDEN_2).unwrap();
    let err = History::open(&path).unwrap_err();
    assert!(matches!(err, HistoryError::Open { .. }), "{err:?}");
    assert!(err.to_string().contains("r.json"), "{err}");
    // Untouched.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), common::GOLDEN_2);
}

#[test]
fn runs_are_named_by_id_prefix_or_latest() {
    let (_dir, mut h) = fresh();
    let a = h.save(&common::run("names", 1)).unwrap().run_id;
    let b = h.save(&common::run("names", 2)).unwrap().run_id;
    assert_eq!(h.resolve(&a).unwrap(), a);
    assert_eq!(h.resolve(&a[..8]).unwrap(), a);
    assert_eq!(h.resolve("latest").unwrap(), b);
    assert_eq!(h.resolve("latest~0").unwrap(), b);
    assert_eq!(h.resolve("latest~1").unwrap(), a);
    for beyond in ["latest~2", "latest~-1", "latest~x"] {
        assert!(h.resolve(beyond).is_err(), "{beyond}");
    }
    // A run imported from an oscost/1 file has no start time: older than all, never latest.
    let old = oscost_model::read(common::GOLDEN_1).unwrap();
    let old_id = h.save(&old).unwrap().run_id;
    assert_eq!(h.resolve("latest").unwrap(), b);
    assert_eq!(h.resolve("latest~2").unwrap(), old_id);
    assert!(matches!(
        h.resolve(&a[..3]),
        Err(HistoryError::ShortPrefix { .. })
    ));
    let err = h.resolve("ffffffff-nothing").unwrap_err();
    assert!(matches!(err, HistoryError::UnknownRun { .. }));
    assert!(err.to_string().contains("oscost history list"), "{err}");
    // Runs sharing a prefix.
    let mut c = common::run("names", 3);
    let mut d = common::run("names", 4);
    c.run_id = Some("abcd1111-0000-4000-8000-000000000000".into());
    d.run_id = Some("abcd2222-0000-4000-8000-000000000000".into());
    h.save(&c).unwrap();
    h.save(&d).unwrap();
    match h.resolve("abcd") {
        Err(HistoryError::AmbiguousRun { matches, .. }) => assert_eq!(matches.len(), 2),
        other => panic!("expected AmbiguousRun, got {other:?}"),
    }
    assert_eq!(h.resolve("abcd1").unwrap(), c.run_id.unwrap());
}

#[test]
fn the_list_is_newest_first_and_remove_takes_everything_of_a_run() {
    let (_dir, mut h) = fresh();
    let ids: Vec<String> = [3, 1, 2]
        .into_iter()
        .map(|n| h.save(&common::run("order", n)).unwrap().run_id)
        .collect();
    let listed: Vec<String> = h.list().unwrap().into_iter().map(|r| r.run_id).collect();
    assert_eq!(listed, [ids[0].clone(), ids[2].clone(), ids[1].clone()]);
    h.remove(&ids[2][..6]).unwrap();
    let listed: Vec<String> = h.list().unwrap().into_iter().map(|r| r.run_id).collect();
    assert_eq!(listed, [ids[0].clone(), ids[1].clone()]);
    assert!(matches!(
        h.get(&ids[2]),
        Err(HistoryError::UnknownRun { .. })
    ));
    assert_eq!(h.trend("example.cost100").unwrap().len(), 2);
    assert!(matches!(
        h.remove(&ids[2]),
        Err(HistoryError::UnknownRun { .. })
    ));
    h.remove(&ids[0]).unwrap();
    h.remove(&ids[1]).unwrap();
    assert!(h.list().unwrap().is_empty());
    assert!(matches!(h.resolve("latest"), Err(HistoryError::Empty)));
    assert!(matches!(
        h.trend("example.cost100"),
        Err(HistoryError::UnknownCase { .. })
    ));
}

#[test]
fn a_trend_is_oldest_first_and_marks_where_the_environment_changed() {
    let (_dir, mut h) = fresh();
    // Saved out of order; the third run is on another kernel, the fourth back on the first.
    let mut docs: Vec<_> = (1..=5).map(|n| common::run("trend", n)).collect();
    docs[2].environment.kernel_release = "6.1.0-other".into();
    docs[3].environment.kernel_release = "6.1.0-other".into();
    for i in [4, 0, 2, 1, 3] {
        h.save(&docs[i]).unwrap();
    }
    let t = h.trend("example.cost250").unwrap();
    let ids: Vec<&str> = t.iter().map(|p| p.run_id.as_str()).collect();
    let want: Vec<&str> = docs.iter().map(|d| d.run_id.as_deref().unwrap()).collect();
    assert_eq!(ids, want);
    let changed: Vec<bool> = t.iter().map(|p| p.env_changed).collect();
    assert_eq!(changed, [false, false, true, false, true]);
    for (p, d) in t.iter().zip(&docs) {
        let c = &d.experiments[0].cases[1];
        assert_eq!(p.median_ns, c.median_ns);
        assert_eq!(p.ci95_ns, c.ci95_ns);
        assert_eq!(p.unit, c.unit);
        assert_eq!(p.started_at, d.started_at);
    }
    assert_eq!(t[0].env_fingerprint, t[1].env_fingerprint);
    assert_ne!(t[1].env_fingerprint, t[2].env_fingerprint);
    // Derived figures have a trend too, flagged ones marked.
    let d = h.trend("example.flagged_difference").unwrap();
    assert_eq!(d.len(), 5);
    assert_eq!(d[0].unit, "derived");
    assert!(!d[0].checks_passed);
    assert!(h.trend("example.difference").unwrap()[0].checks_passed);
    // An unknown case is named, with the ids that contain it.
    let err = h.trend("cost25").unwrap_err();
    let text = err.to_string();
    assert!(text.contains("`cost25`"), "{text}");
    assert!(text.contains("example.cost250"), "{text}");
}

/// Files that are not oscost's are refused before anything in or beside them changes: a
/// device (no journal made beside it), another program's database (no tables added, its
/// journal mode kept), a newer oscost's database in rollback mode (kept in rollback mode).
#[test]
fn only_oscosts_own_or_empty_files_are_opened() {
    assert!(matches!(
        History::open(std::path::Path::new("/dev/null")),
        Err(HistoryError::NotAFile { .. })
    ));
    assert!(!std::path::Path::new("/dev/null-journal").exists());

    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.sqlite");
    {
        let c = rusqlite::Connection::open(&other).unwrap();
        c.execute_batch("CREATE TABLE t (x INTEGER);").unwrap();
    }
    let before = std::fs::read(&other).unwrap();
    for opened in [History::open(&other), History::open_read_only(&other)] {
        match opened {
            Err(HistoryError::Foreign { tables, .. }) => assert_eq!(tables, ["t"]),
            other => panic!("expected Foreign, got {other:?}"),
        }
    }
    assert_eq!(std::fs::read(&other).unwrap(), before);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    let newer = dir.path().join("newer.sqlite");
    drop(History::open(&newer).unwrap());
    {
        let c = rusqlite::Connection::open(&newer).unwrap();
        c.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))
            .unwrap();
        c.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, 'x')",
            [SCHEMA_VERSION + 1],
        )
        .unwrap();
    }
    assert!(matches!(
        History::open(&newer),
        Err(HistoryError::TooNew { .. })
    ));
    let mode: String = rusqlite::Connection::open(&newer)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete");
}

/// Reading never creates: a missing file reads as an empty history and stays missing.
#[test]
fn read_only_opens_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none/history.sqlite3");
    let h = History::open_read_only(&path).unwrap();
    assert!(h.list().unwrap().is_empty());
    assert!(!dir.path().join("none").exists());
}

/// A trend follows when the runs ran, not when they were saved: a run imported later but run
/// earlier comes first; a run with no start time (`oscost/1`) counts as the oldest.
#[test]
fn a_trend_follows_when_runs_ran_not_when_they_were_saved() {
    let (_dir, mut h) = fresh();
    let later = common::run("order", 600);
    let earlier = common::run("order", 5);
    let mut undated = common::run("order", 7);
    undated.run_id = None;
    undated.started_at = None;
    for d in [&later, &earlier, &undated] {
        h.save(d).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let case = &later.experiments[0].cases[0].id;
    let order: Vec<Option<String>> = h
        .trend(case)
        .unwrap()
        .into_iter()
        .map(|p| p.started_at)
        .collect();
    assert_eq!(
        order,
        [None, earlier.started_at.clone(), later.started_at.clone()]
    );
}

/// A history that lost a table, its record of versions, or whose record cannot be read: one
/// line naming the file and what to do, never a statement of SQL, and nothing changes.
#[test]
fn a_damaged_history_is_named_in_one_line_without_sql() {
    let dir = tempfile::tempdir().unwrap();
    for (name, damage, why) in [
        (
            "no-migrations",
            "DROP TABLE schema_migrations",
            "no schema_migrations table",
        ),
        (
            "empty-migrations",
            "DELETE FROM schema_migrations",
            "records no version",
        ),
        (
            "odd-migrations",
            "DROP TABLE schema_migrations; CREATE TABLE schema_migrations (x)",
            "cannot be read: no such column: version",
        ),
        ("no-cases", "DROP TABLE cases", "lacks the table cases"),
    ] {
        let path = dir.path().join(format!("{name}.sqlite"));
        {
            let mut h = History::open(&path).unwrap();
            h.save(&common::run("round", 1)).unwrap();
        }
        {
            let c = rusqlite::Connection::open(&path).unwrap();
            c.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))
                .unwrap();
            c.execute_batch(damage).unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        for opened in [History::open(&path), History::open_read_only(&path)] {
            let err = opened.unwrap_err();
            assert!(matches!(err, HistoryError::Damaged { .. }), "{err:?}");
            let text = err.to_string();
            assert!(text.contains(&path.display().to_string()), "{text}");
            assert!(
                text.contains(why) && text.contains("move it aside"),
                "{text}"
            );
            assert!(!text.contains('\n') && !text.contains("SELECT"), "{text}");
        }
        assert_eq!(std::fs::read(&path).unwrap(), before, "{name} changed");
    }
}

/// A store edited so that one run's row holds another run's document (its text alone, or
/// with the digest beside it) is refused by the run's name on every read, never handed out as
/// that run's.
#[test]
fn a_document_swapped_between_runs_is_refused_by_name() {
    for (name, swap) in [
        (
            "text",
            "UPDATE documents SET body = (SELECT body FROM documents WHERE run_id = ?2) \
             WHERE run_id = ?1",
        ),
        (
            "text and digest",
            "UPDATE documents SET body = (SELECT body FROM documents WHERE run_id = ?2), \
             digest = (SELECT digest FROM documents WHERE run_id = ?2) WHERE run_id = ?1",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.sqlite");
        let (a, b) = (common::run("swap", 1), common::run("swap", 2));
        let (a_id, b_id) = (a.run_id.clone().unwrap(), b.run_id.clone().unwrap());
        History::open(&path).unwrap().save_all(&[a, b]).unwrap();
        let changed = rusqlite::Connection::open(&path)
            .unwrap()
            .execute(swap, rusqlite::params![a_id, b_id])
            .unwrap();
        assert_eq!(changed, 1, "{name}");
        let h = History::open_read_only(&path).unwrap();
        let err = h.get(&a_id).unwrap_err();
        assert!(
            matches!(err, HistoryError::Altered { .. }),
            "{name}: {err:?}"
        );
        let text = err.to_string();
        assert!(
            text.contains(&format!("run {a_id}")) && text.contains("store was altered"),
            "{name}: {text}"
        );
        if name == "text" {
            assert!(text.contains("does not match its stored digest"), "{text}");
        } else {
            assert!(text.contains(&format!("document of run {b_id}")), "{text}");
        }
        assert!(!text.contains('\n'), "{text}");
        // The run whose document was copied still reads as itself.
        assert_eq!(h.get(&b_id).unwrap().run_id.as_deref(), Some(b_id.as_str()));
    }
}

/// A table whose columns are not oscost's: SQLite's message without the statement.
#[test]
fn a_failed_statement_is_not_shown_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.sqlite");
    History::open(&path)
        .unwrap()
        .save(&common::run("round", 1))
        .unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("ALTER TABLE runs RENAME COLUMN kernel TO k2")
        .unwrap();
    let err = History::open_read_only(&path).unwrap().list().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("no such column: kernel"), "{text}");
    assert!(text.contains("move the file aside"), "{text}");
    assert!(!text.contains("SELECT") && !text.contains('\n'), "{text}");
    assert!(std::error::Error::source(&err).is_none());
}

#[test]
fn the_last_comparable_run_shares_the_machine_the_experiments_and_the_size() {
    let (_dir, mut h) = fresh();
    let first = common::run("first", 1);
    let mut quick = common::run("quick", 2);
    quick.environment.command_line.push("--quick".into());
    let mut other_kernel = common::run("kernel", 3);
    other_kernel.environment.kernel_release = "6.1.0".into();
    let mut fewer = common::run("fewer", 4);
    fewer.experiments.pop();
    for d in [&first, &quick, &other_kernel, &fewer] {
        h.save(d).unwrap();
    }
    // The newest run that matches is `first`: the others differ in size, kernel or experiments.
    let now = common::run("now", 5);
    let found = h
        .last_comparable(&now)
        .unwrap()
        .expect("first is comparable");
    assert_eq!(found.run_id, first.run_id);
    // Saved itself, the run is never its own comparison.
    h.save(&now).unwrap();
    let found = h.last_comparable(&now).unwrap().expect("first still is");
    assert_eq!(found.run_id, first.run_id);
    // A quick run compares with the quick one only.
    let mut later_quick = common::run("later-quick", 6);
    later_quick.environment.command_line.push("--quick".into());
    let found = h
        .last_comparable(&later_quick)
        .unwrap()
        .expect("quick is comparable");
    assert_eq!(found.run_id, quick.run_id);
    // Another host of the same make is not this host's last run, and the reverse.
    let mut elsewhere = common::run("elsewhere", 7);
    elsewhere.environment.hostname = Some("node-2".into());
    h.save(&elsewhere).unwrap();
    let mut here = common::run("here", 8);
    here.environment.hostname = Some("node-1".into());
    assert!(h.last_comparable(&here).unwrap().is_none());
    let found = h.last_comparable(&now).unwrap().expect("first still is");
    assert_eq!(found.run_id, first.run_id);
}

/// The layout of schema 2 as its oscost made it: the document as text in `runs`.
const SCHEMA_2: &str =
    "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
    CREATE TABLE runs (run_id TEXT PRIMARY KEY, started_at TEXT, saved_at TEXT NOT NULL,
        oscost_version TEXT NOT NULL, kernel TEXT NOT NULL, cpu_model TEXT,
        env_fingerprint TEXT NOT NULL, command_line TEXT NOT NULL, case_count INTEGER NOT NULL,
        document TEXT NOT NULL);
    CREATE TABLE experiments (run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        position INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY (run_id, position));
    CREATE TABLE cases (run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        case_id TEXT NOT NULL, experiment TEXT NOT NULL, kind TEXT NOT NULL, unit TEXT NOT NULL,
        median_ns DOUBLE PRECISION, ci_low_ns DOUBLE PRECISION, ci_high_ns DOUBLE PRECISION,
        median_cycles DOUBLE PRECISION, samples INTEGER, checks_passed INTEGER NOT NULL,
        PRIMARY KEY (run_id, case_id));
    CREATE INDEX cases_by_case_id ON cases (case_id);
    CREATE TABLE run_hosts (run_id TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
        hostname TEXT NOT NULL);
    INSERT INTO schema_migrations VALUES (1, '2026-11-01T00:00:00Z'), (2, '2026-11-01T00:00:00Z');";

/// Writes `doc` into a database of schema 2 (or 1, without `run_hosts`) as that oscost did.
fn old_store(path: &std::path::Path, version: i64, doc: &oscost_model::ResultDoc) {
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch(SCHEMA_2).unwrap();
    let id = doc.run_id.clone().unwrap();
    c.execute(
        "INSERT INTO runs VALUES (?1, ?2, '2026-11-01T00:00:00Z', 'old', ?3, NULL, 'fp', \
         'oscost', 1, ?4)",
        rusqlite::params![
            id,
            doc.started_at,
            doc.environment.kernel_release,
            serde_json::to_string(doc).unwrap()
        ],
    )
    .unwrap();
    c.execute(
        "INSERT INTO experiments VALUES (?1, 0, 'example')",
        rusqlite::params![id],
    )
    .unwrap();
    c.execute(
        "INSERT INTO cases VALUES (?1, 'example.cost100', 'example', 'case', 'op', 5.0, 4.0, \
         6.0, NULL, 10, 1)",
        rusqlite::params![id],
    )
    .unwrap();
    if version == 1 {
        c.execute_batch("DROP TABLE run_hosts; DELETE FROM schema_migrations WHERE version > 1")
            .unwrap();
    } else {
        c.execute(
            "INSERT INTO run_hosts VALUES (?1, 'node-1')",
            rusqlite::params![id],
        )
        .unwrap();
    }
}

/// A history an older oscost wrote (schema 1, before the host names; schema 2, the document
/// as text in `runs`) is brought to the current schema on open: its runs stay, read back
/// whole, and a new run goes in the current layout beside them.
#[test]
fn an_older_history_is_migrated_and_stays_readable() {
    for version in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sqlite3");
        let old = common::run("old", 1);
        old_store(&path, version, &old);
        // Read-only first: nothing changes, and the old run reads back.
        {
            let h = History::open_read_only(&path).unwrap();
            assert_eq!(h.get(old.run_id.as_deref().unwrap()).unwrap(), old);
        }
        let mut h = History::open(&path).unwrap();
        assert_eq!(h.get(old.run_id.as_deref().unwrap()).unwrap(), old);
        let mut doc = common::run("new", 2);
        doc.environment.hostname = Some("node-9".into());
        assert!(h.save(&doc).unwrap().new);
        assert_eq!(h.get(doc.run_id.as_deref().unwrap()).unwrap(), doc);
        // The old run again: already there, the same content (compared as documents, its
        // stored text having no digest).
        let again = h.save(&old).unwrap();
        assert!(!again.new && !again.differs, "{again:?}");
        let hosts: Vec<Option<String>> =
            h.list().unwrap().into_iter().map(|r| r.hostname).collect();
        let old_host = (version == 2).then(|| "node-1".to_owned());
        assert_eq!(hosts, [Some("node-9".to_owned()), old_host]);
        assert_eq!(h.trend("example.cost100").unwrap().len(), 2);
        h.remove(old.run_id.as_deref().unwrap()).unwrap();
        assert_eq!(h.list().unwrap().len(), 1);
        let c = rusqlite::Connection::open(&path).unwrap();
        let version: i64 = c
            .query_row("SELECT MAX(version) FROM schema_migrations", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        // The new run's document is stored compressed, `runs.document` left empty.
        let (plain, encoding, packed): (String, String, i64) = c
            .query_row(
                "SELECT r.document, d.encoding, length(d.body) FROM runs r JOIN documents d \
                 ON d.run_id = r.run_id",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!((plain.as_str(), encoding.as_str()), ("", "lz4"));
        assert!(
            (packed as usize) < serde_json::to_string(&doc).unwrap().len(),
            "{packed}"
        );
    }
}

/// A window chooses the runs in the store: the newest so many, those started since a time;
/// the count says how many the window held before its limit.
#[test]
fn a_window_chooses_the_newest_runs_and_those_since_a_time() {
    use oscost_history::Window;
    let (_dir, mut h) = fresh();
    // Started a minute apart, 00:01 to 00:05 on 2026-11-01.
    let docs: Vec<_> = (1..=5).map(|n| common::run("window", n)).collect();
    h.save_all(&docs).unwrap();
    let id = |n: usize| docs[n - 1].run_id.clone().unwrap();
    let newest2 = Window {
        since: None,
        limit: Some(2),
    };
    let (runs, total) = h.list_window(&newest2).unwrap();
    let ids: Vec<String> = runs.into_iter().map(|r| r.run_id).collect();
    assert_eq!((ids, total), (vec![id(5), id(4)], 5));
    let since = Window {
        since: Some("2026-11-01T00:03:00Z".into()),
        limit: None,
    };
    let (runs, total) = h.list_window(&since).unwrap();
    assert_eq!(total, 3);
    assert_eq!(runs.last().unwrap().run_id, id(3));
    assert_eq!(runs[0].experiments, ["example", "example-more"]);
    // A trend keeps the newest points, oldest first.
    let (points, total) = h.trend_window("example.cost100", &newest2).unwrap();
    let ids: Vec<&str> = points.iter().map(|p| p.run_id.as_str()).collect();
    assert_eq!((ids, total), (vec![id(4).as_str(), id(5).as_str()], 5));
    let (points, total) = h.trend_window("example.cost100", &since).unwrap();
    assert_eq!((points.len(), total), (3, 3));
    // A window with none of the case's runs is empty, not an unknown case; a case no run has
    // is unknown whatever the window.
    let later = Window {
        since: Some("2026-12-01T00:00:00Z".into()),
        limit: None,
    };
    assert_eq!(h.trend_window("example.cost100", &later).unwrap().1, 0);
    assert!(matches!(
        h.trend_window("example.nope", &later),
        Err(HistoryError::UnknownCase { .. })
    ));
    assert_eq!(h.list_window(&later).unwrap(), (vec![], 0));
}

/// A batch goes in whole: every run, document, experiment and case row counted, a copy of
/// a run within the batch stored once, and the batch again adds nothing.
#[test]
fn a_batch_is_stored_in_bulk_and_counted_right() {
    let (_dir, mut h) = fresh();
    let mut docs: Vec<_> = (1..=30).map(|n| common::run("bulk", n)).collect();
    docs.push(docs[0].clone());
    let saved = h.save_all(&docs).unwrap();
    assert_eq!(saved.iter().filter(|s| s.new).count(), 30);
    assert!(!saved[30].new && !saved[30].differs);
    let (runs, total) = h.list_window(&oscost_history::Window::all()).unwrap();
    assert_eq!((runs.len(), total), (30, 30));
    let cases: usize = runs.iter().map(|r| r.case_count).sum();
    assert_eq!(cases, 30 * oscost_history::case_count(&docs[0]));
    for (r, d) in runs.iter().rev().zip(&docs) {
        assert_eq!(r.run_id, d.run_id.clone().unwrap());
        assert_eq!(&h.get(&r.run_id).unwrap(), d);
    }
    assert_eq!(h.trend("example.cost100").unwrap().len(), 30);
    let again = h.save_all(&docs).unwrap();
    assert!(again.iter().all(|s| !s.new && !s.differs));
    // Another content under a stored id is told apart.
    let mut other = docs[3].clone();
    other.experiments[0].cases[0].median_ns += 1.0;
    assert!(h.save(&other).unwrap().differs);
}
