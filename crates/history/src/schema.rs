//! The database layout, as an ordered list of migrations. Each one runs once, in a
//! transaction together with the row in `schema_migrations` that records it, so a database is
//! always at one whole version.

use crate::{pg, HistoryError};
use rusqlite::{params, Connection, TransactionBehavior};
use std::path::Path;

/// Migration `n` (from 1) is `MIGRATIONS[n - 1]`. Append only: a released migration never
/// changes, since databases out there have already run it.
const MIGRATIONS: &[&str] = &[
    // 1: runs, their experiments, and one row per case and per derived figure.
    "CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        started_at TEXT,
        saved_at TEXT NOT NULL,
        oscost_version TEXT NOT NULL,
        kernel TEXT NOT NULL,
        cpu_model TEXT,
        env_fingerprint TEXT NOT NULL,
        command_line TEXT NOT NULL,
        case_count INTEGER NOT NULL,
        document TEXT NOT NULL
    );
    CREATE TABLE experiments (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        name TEXT NOT NULL,
        PRIMARY KEY (run_id, position)
    );
    CREATE TABLE cases (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        case_id TEXT NOT NULL,
        experiment TEXT NOT NULL,
        kind TEXT NOT NULL,
        unit TEXT NOT NULL,
        median_ns DOUBLE PRECISION,
        ci_low_ns DOUBLE PRECISION,
        ci_high_ns DOUBLE PRECISION,
        median_cycles DOUBLE PRECISION,
        samples INTEGER,
        checks_passed INTEGER NOT NULL,
        PRIMARY KEY (run_id, case_id)
    );
    CREATE INDEX cases_by_case_id ON cases (case_id);",
    // 2: the host name of the machine each run ran on, for a history a fleet shares. Runs
    // saved before have none: their documents did not record it. A table of its own rather
    // than a column added to `runs`: SQLite keeps an added column after the document, so
    // listing would read every document's overflow pages to reach it.
    "CREATE TABLE run_hosts (
        run_id TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
        hostname TEXT NOT NULL
    );",
    // 3: the document as it was given, LZ4-compressed, with a digest of its text, in a table
    // of its own (`runs.document` stays for the runs saved before: empty text in SQLite and
    // NULL in PostgreSQL for the runs saved since). Nothing queries inside a document, so
    // PostgreSQL need not parse it into JSONB nor compress it again.
    "CREATE TABLE documents (
        run_id TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
        encoding TEXT NOT NULL,
        digest TEXT NOT NULL,
        body BLOB NOT NULL
    );",
];

/// Migration `i` (from 0) as PostgreSQL runs it: the same layout, the document as JSONB (up
/// to schema 2) and the compressed one as BYTEA, kept out of line and not compressed again.
fn postgres_sql(i: usize) -> String {
    let sql = MIGRATIONS[i]
        .replace("document TEXT NOT NULL", "document JSONB NOT NULL")
        .replace("body BLOB NOT NULL", "body BYTEA NOT NULL");
    if i == 2 {
        format!(
            "{sql}
            ALTER TABLE runs ALTER COLUMN document DROP NOT NULL;
            ALTER TABLE documents ALTER COLUMN body SET STORAGE EXTERNAL;"
        )
    } else {
        sql
    }
}

/// Any number: the key of the advisory lock that lets one oscost at a time create or migrate
/// the tables of a PostgreSQL database.
const MIGRATION_LOCK: i64 = 0x6f73_636f_7374;

/// [`migrate`] for PostgreSQL: brings oscost's tables up to [`SCHEMA_VERSION`], creating them
/// in a database that has none; fails with [`HistoryError::TooNew`] for a newer layout.
pub(crate) fn migrate_postgres(client: &mut pg::Client, shown: &str) -> Result<(), HistoryError> {
    let version = |client: &mut pg::Client| -> Result<Option<i64>, HistoryError> {
        let out = client.run(&[(
            "SELECT CASE WHEN to_regclass('schema_migrations') IS NULL THEN NULL \
             ELSE 0 END",
            vec![],
        )])?;
        let exists = out
            .first()
            .and_then(|o| o.rows.first())
            .and_then(|r| r.first().cloned().flatten())
            .is_some();
        if !exists {
            return Ok(None);
        }
        let out = client.run(&[(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            vec![],
        )])?;
        Ok(out
            .first()
            .and_then(|o| o.rows.first())
            .and_then(|r| r.first().cloned().flatten())
            .and_then(|v| v.parse().ok()))
    };
    let too_new = |found| HistoryError::TooNew {
        path: shown.into(),
        found,
        known: SCHEMA_VERSION,
    };
    // Up to date (the common case): reads only, so a user who may only read can list.
    match version(client)? {
        Some(v) if v == SCHEMA_VERSION => return Ok(()),
        Some(v) if v > SCHEMA_VERSION => return Err(too_new(v)),
        _ => {}
    }
    client.batch("BEGIN")?;
    let result = (|| {
        client.run(&[(
            "SELECT pg_advisory_xact_lock($1)",
            vec![Some(MIGRATION_LOCK.to_string())],
        )])?;
        client.batch(
            "CREATE TABLE IF NOT EXISTS schema_migrations (
                version INTEGER PRIMARY KEY,
                applied_at TEXT NOT NULL
            );",
        )?;
        let found = version(client)?.unwrap_or(0);
        if found > SCHEMA_VERSION {
            return Err(too_new(found));
        }
        let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        for i in found as usize..MIGRATIONS.len() {
            client.batch(&postgres_sql(i))?;
            client.run(&[(
                "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)",
                vec![Some((i + 1).to_string()), Some(now.clone())],
            )])?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok(client.batch("COMMIT")?),
        Err(e) => {
            let _ = client.batch("ROLLBACK");
            Err(e)
        }
    }
}

/// The newest layout this oscost knows: the number of its migrations.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Fails with [`HistoryError::TooNew`] if a newer oscost took the database past
/// [`SCHEMA_VERSION`]; reads only, so nothing of such a database changes.
pub(crate) fn refuse_newer(conn: &Connection, path: &Path) -> Result<(), HistoryError> {
    let found: Option<i64> = conn
        .query_row("SELECT MAX(version) FROM schema_migrations", [], |r| {
            r.get(0)
        })
        .map_err(|cause| HistoryError::Open {
            path: path.to_path_buf(),
            cause,
        })?;
    match found {
        Some(v) if v > SCHEMA_VERSION => Err(HistoryError::TooNew {
            path: path.to_path_buf(),
            found: v,
            known: SCHEMA_VERSION,
        }),
        _ => Ok(()),
    }
}

/// For a database of an older layout opened to read only (so not migrated): empty temporary
/// tables stand in for the ones later migrations add, so that every query of this oscost
/// reads it (runs without a host; every document in `runs.document`). They live in the
/// connection's own temporary schema; nothing of the file changes.
pub(crate) fn stand_in_for_missing(conn: &Connection) -> rusqlite::Result<()> {
    let has = |name: &str| -> rusqlite::Result<bool> {
        conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [name],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)
    };
    if !has("run_hosts")? {
        conn.execute_batch("CREATE TEMP TABLE run_hosts (run_id TEXT PRIMARY KEY, hostname TEXT)")?;
    }
    if !has("documents")? {
        conn.execute_batch(
            "CREATE TEMP TABLE documents (run_id TEXT PRIMARY KEY, encoding TEXT, digest TEXT, \
             body BLOB)",
        )?;
    }
    Ok(())
}

/// Brings the database up to [`SCHEMA_VERSION`], or fails with [`HistoryError::TooNew`]
/// (changing nothing) if a newer oscost already took it further.
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), HistoryError> {
    // Up to date (the common case): a plain read, so that opening to read never waits for a
    // writer's lock.
    let current: Option<i64> = conn
        .query_row("SELECT MAX(version) FROM schema_migrations", [], |r| {
            r.get(0)
        })
        .ok()
        .flatten();
    match current {
        Some(v) if v == SCHEMA_VERSION => return Ok(()),
        Some(v) if v > SCHEMA_VERSION => {
            return Err(HistoryError::TooNew {
                path: path.to_path_buf(),
                found: v,
                known: SCHEMA_VERSION,
            })
        }
        _ => {}
    }
    // IMMEDIATE: two processes opening a new database at once must not both create it.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY,
            applied_at TEXT NOT NULL
        );",
    )?;
    let found: i64 = tx.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
        [],
        |r| r.get(0),
    )?;
    if found > SCHEMA_VERSION {
        return Err(HistoryError::TooNew {
            path: path.to_path_buf(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tx.execute_batch(sql)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)",
            params![i as i64 + 1, now],
        )?;
    }
    tx.commit()?;
    Ok(())
}
