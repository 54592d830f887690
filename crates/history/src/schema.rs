//! The database layout, as an ordered list of migrations. Each one runs once, in a
//! transaction together with the row in `schema_migrations` that records it, so a database is
//! always at one whole version.

use crate::HistoryError;
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
];

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
