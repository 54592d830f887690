//! Why a history operation failed, in words that never dump SQL.

use crate::{pg, MIN_PREFIX};
use std::path::PathBuf;

/// Why a history operation failed.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The directory the database goes in could not be made.
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file could not be opened, or is not an SQLite database, or could not be set up.
    #[error("cannot open the history database {}: {}", path.display(), sqlite_text(cause))]
    Open {
        /// The database file.
        path: PathBuf,
        /// What SQLite said (shown without the statement it was given).
        cause: rusqlite::Error,
    },
    /// The path is not a regular file (a device, a FIFO, a directory): SQLite would create its
    /// journal beside it.
    #[error(
        "{} is not a regular file, so it cannot hold a history (give --history the path of a \
         file, new or made by oscost)",
        path.display()
    )]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// An SQLite database with tables that are not oscost's: left exactly as it is.
    #[error(
        "{} is another program's database (its tables: {}), which oscost leaves as it is; give \
         --history a file of oscost's own",
        path.display(),
        tables.join(", ")
    )]
    Foreign {
        /// The database file.
        path: PathBuf,
        /// Its tables.
        tables: Vec<String>,
    },
    /// A database with some of oscost's tables but not a whole history (a table or its
    /// recorded version is missing): damaged, or another program's; left exactly as it is.
    #[error(
        "{} is not a whole oscost history ({why}), so oscost leaves it as it is: move it aside \
         to start a new history there (`oscost history import` takes result files back), or \
         give --history another file",
        path.display()
    )]
    Damaged {
        /// The database file.
        path: PathBuf,
        /// What is missing or wrong.
        why: String,
    },
    /// The database was made by a newer oscost, whose layout this one does not know.
    #[error(
        "{} was written by a newer oscost (schema {found}, this one knows {known}); use a \
         newer oscost or --history PATH for another database",
        path.display()
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// The schema version the database has.
        found: i64,
        /// The newest schema version this oscost knows ([`SCHEMA_VERSION`](crate::SCHEMA_VERSION)).
        known: i64,
    },
    /// A read or write failed after the database was opened.
    #[error("the history database failed: {}{}", sqlite_text(.0), layout_hint(.0))]
    Sqlite(rusqlite::Error),
    /// No run has this id, or an id starting with it.
    #[error("no run `{run}` in the history (`oscost history list` shows the runs it holds)")]
    UnknownRun {
        /// What was asked for.
        run: String,
    },
    /// The history holds no run at all (asked for `latest`).
    #[error("the history holds no runs yet (a run is saved there when it ends, unless --no-save)")]
    Empty,
    /// A prefix shorter than [`MIN_PREFIX`] that is not a whole id.
    #[error(
        "`{run}` is too short to name a run: give at least {MIN_PREFIX} characters of its id \
         (`oscost history list` shows them)"
    )]
    ShortPrefix {
        /// What was asked for.
        run: String,
    },
    /// A prefix that starts more than one run id.
    #[error(
        "`{run}` starts the ids of {} runs ({}): give more of the id",
        matches.len(),
        matches.join(", ")
    )]
    AmbiguousRun {
        /// What was asked for.
        run: String,
        /// The ids it starts.
        matches: Vec<String>,
    },
    /// No run in the history has a case or derived figure with this id.
    #[error(
        "no run in the history has a case `{case_id}`{}",
        similar_hint(similar)
    )]
    UnknownCase {
        /// What was asked for.
        case_id: String,
        /// Case ids that contain it, a few at most.
        similar: Vec<String>,
    },
    /// A stored document could not be read back.
    #[error(
        "run {run_id} in the history cannot be read: {why} (remove it with `oscost history rm \
         {run_id}`)"
    )]
    Document {
        /// The run.
        run_id: String,
        /// Why (in the message, not a source: a chain would say it twice).
        why: oscost_model::ReadError,
    },
    /// A stored document is not the one saved under its run: its text does not match the
    /// digest stored beside it, or it names another run. Someone changed the store.
    #[error(
        "run {run_id} in the history cannot be trusted: {why}, so the store was altered after it \
         was saved (remove the run with `oscost history rm {run_id}` and import its result file \
         again)"
    )]
    Altered {
        /// The run.
        run_id: String,
        /// What does not match.
        why: String,
    },
    /// A stored document's bytes could not be turned back into its text.
    #[error("run {run_id} in the history cannot be read: {why}")]
    Stored {
        /// The run.
        run_id: String,
        /// Why.
        why: String,
    },
    /// A document could not be turned into JSON.
    #[error("cannot serialise the result document: {0}")]
    Json(#[from] serde_json::Error),
    /// A PostgreSQL store could not be reached, or refused a statement: the server's words,
    /// with the URL's password masked.
    #[error("{0}")]
    Postgres(String),
    /// A store location that names no store.
    #[error("{0}")]
    BadLocation(String),
}

impl From<pg::PgError> for HistoryError {
    fn from(e: pg::PgError) -> HistoryError {
        HistoryError::Postgres(e.0)
    }
}

impl From<rusqlite::Error> for HistoryError {
    fn from(e: rusqlite::Error) -> HistoryError {
        HistoryError::Sqlite(e)
    }
}

/// What SQLite said, on one line and without the statement it was given: a message never
/// dumps SQL.
pub(crate) fn sqlite_text(e: &rusqlite::Error) -> String {
    let text = match e {
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        rusqlite::Error::SqliteFailure(_, Some(msg)) => msg.clone(),
        e => e.to_string(),
    };
    let text = text.lines().next().unwrap_or_default();
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// What to do when SQLite finds a table or column missing: the layout is not oscost's.
fn layout_hint(e: &rusqlite::Error) -> &'static str {
    let text = sqlite_text(e);
    if [
        "no such table",
        "no such column",
        "has no column",
        "already exists",
    ]
    .iter()
    .any(|m| text.contains(m))
    {
        " (its tables are not the ones oscost made: move the file aside to start a new history \
         there)"
    } else {
        ""
    }
}

fn similar_hint(similar: &[String]) -> String {
    if similar.is_empty() {
        " (`oscost history show latest` lists the case ids of the last run)".into()
    } else {
        format!(" (did you mean {}?)", similar.join(", "))
    }
}

/// Free space below which an SQLite I/O error is taken for a full disk: a write of the
/// history (a run's compressed document and its rows) rarely needs more.
pub(crate) const FULL_BELOW_BYTES: u64 = 1 << 20;

impl HistoryError {
    /// Whether this is a full disk: SQLite's SQLITE_FULL, or one of its I/O errors while the
    /// file system holding the database has less than [`FULL_BELOW_BYTES`] free (`free`, as
    /// this user may write it). SQLite reports ENOSPC met on its WAL index or when growing a
    /// file as a plain "disk I/O error", which names no cause a user can act on.
    pub fn is_disk_full(&self, free: Option<u64>) -> bool {
        let cause = match self {
            HistoryError::Open { cause, .. } | HistoryError::Sqlite(cause) => cause,
            _ => return false,
        };
        match cause.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DiskFull) => true,
            Some(rusqlite::ErrorCode::SystemIoFailure) => {
                free.is_some_and(|f| f < FULL_BELOW_BYTES)
            }
            _ => false,
        }
    }

    /// Whether SQLite said another connection holds the database (busy or locked).
    pub(crate) fn is_busy(&self) -> bool {
        let cause = match self {
            HistoryError::Open { cause, .. } | HistoryError::Sqlite(cause) => cause,
            _ => return false,
        };
        matches!(
            cause.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(code: i32) -> HistoryError {
        HistoryError::Sqlite(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(code),
            None,
        ))
    }

    #[test]
    fn a_full_disk_is_said_as_one() {
        let full = sqlite(rusqlite::ffi::SQLITE_FULL);
        assert!(full.is_disk_full(None) && full.is_disk_full(Some(1 << 30)));
        // An I/O error is a full disk only where the file system has no room left.
        let io = sqlite(rusqlite::ffi::SQLITE_IOERR_WRITE);
        assert!(io.is_disk_full(Some(0)) && io.is_disk_full(Some(4096)));
        assert!(!io.is_disk_full(Some(1 << 30)) && !io.is_disk_full(None));
        let busy = sqlite(rusqlite::ffi::SQLITE_BUSY);
        assert!(!busy.is_disk_full(Some(0)));
        assert!(!HistoryError::Empty.is_disk_full(Some(0)));
    }
}
