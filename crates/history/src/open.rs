//! Opening a history: an SQLite file only when it is oscost's or empty (checked before
//! anything in or beside it changes), or a PostgreSQL database; waiting for other writers.

use crate::error::sqlite_text;
use crate::store::Store;
use crate::{pg, schema, History, HistoryError, Location, PgUrl, SCHEMA_VERSION};
use rusqlite::Connection;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a writer waits for another one to finish before giving up. Saves are short
/// transactions; this only has to outlast a burst of them on a loaded machine.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

impl History {
    /// `<data dir>/oscost/history.sqlite3`: `$XDG_DATA_HOME/oscost/history.sqlite3`, else
    /// `~/.local/share/oscost/history.sqlite3`; `None` when neither can be found.
    pub fn default_path() -> Option<PathBuf> {
        dirs::data_dir().map(|d| d.join("oscost").join("history.sqlite3"))
    }

    /// Opens the database at `path` to read and write, creating it and its parent directories
    /// if needed, and brings its layout up to [`SCHEMA_VERSION`]. Only a file that is oscost's
    /// or empty is opened: a device or FIFO fails with [`HistoryError::NotAFile`], another
    /// program's database with [`HistoryError::Foreign`], a database a newer oscost made with
    /// [`HistoryError::TooNew`], each before anything in or beside it changed (its journal
    /// mode included). Writers wait for each other, so any number of oscost processes can
    /// save into one database at once.
    pub fn open(path: &Path) -> Result<History, HistoryError> {
        // SQLite answers "busy" at once, without its busy handler, where waiting could
        // deadlock (two processes creating one database together, each holding a read lock and
        // wanting to write): the whole opening is tried again then, as long as a busy wait
        // would have waited.
        let started = std::time::Instant::now();
        loop {
            match Self::open_once(path) {
                Err(e) if e.is_busy() && started.elapsed() < BUSY_TIMEOUT && !stop_asked() => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                r => return r,
            }
        }
    }

    fn open_once(path: &Path) -> Result<History, HistoryError> {
        if file_kind(path)?.is_some() {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|source| HistoryError::CreateDir {
                    path: dir.to_path_buf(),
                    source,
                })?;
            }
        }
        let open_err = |cause| HistoryError::Open {
            path: path.to_path_buf(),
            cause,
        };
        let mut conn = Connection::open(path).map_err(open_err)?;
        conn.busy_handler(Some(wait_busy)).map_err(open_err)?;
        let ours = owned_tables(&conn, path)?;
        if ours {
            schema::refuse_newer(&conn, path)?;
        }
        setup(&conn).map_err(open_err)?;
        schema::migrate(&mut conn, path)?;
        Ok(History::sqlite(conn, path))
    }

    /// Opens the database at `path` to read only: nothing in it or beside it is created or
    /// changed. A file that does not exist yet, or is empty, reads as an empty history.
    pub fn open_read_only(path: &Path) -> Result<History, HistoryError> {
        let open_err = |cause| HistoryError::Open {
            path: path.to_path_buf(),
            cause,
        };
        let empty = || -> Result<History, HistoryError> {
            let mut conn = Connection::open_in_memory().map_err(open_err)?;
            schema::migrate(&mut conn, path)?;
            Ok(History::sqlite(conn, path))
        };
        if file_kind(path)?.is_some() {
            return empty();
        }
        let flags =
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(path, flags).map_err(open_err)?;
        let readable = conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })
            .is_ok();
        if !readable {
            // A WAL database in a directory this user cannot write: its shared-memory file
            // cannot be made, so it is read as a snapshot nothing changes while it is open.
            let escaped = path
                .to_string_lossy()
                .replace('%', "%25")
                .replace('?', "%3f")
                .replace('#', "%23");
            conn = Connection::open_with_flags(
                format!("file:{escaped}?immutable=1"),
                flags | rusqlite::OpenFlags::SQLITE_OPEN_URI,
            )
            .map_err(open_err)?;
        }
        conn.busy_handler(Some(wait_busy)).map_err(open_err)?;
        if !owned_tables(&conn, path)? {
            return empty();
        }
        schema::refuse_newer(&conn, path)?;
        schema::stand_in_for_missing(&conn).map_err(open_err)?;
        Ok(History::sqlite(conn, path))
    }

    fn sqlite(conn: Connection, path: &Path) -> History {
        History {
            store: Store::Sqlite(conn),
            path: path.to_path_buf(),
            shown: path.display().to_string(),
        }
    }

    /// Opens the history at `location` to read and write: [`History::open`] for a file; for a
    /// PostgreSQL database, connects and brings oscost's tables up to [`SCHEMA_VERSION`]
    /// (creating them in a database that has none).
    pub fn open_at(location: &Location) -> Result<History, HistoryError> {
        match location {
            Location::File(p) => History::open(p),
            Location::Postgres(url) => History::open_postgres(url),
        }
    }

    /// Opens the history at `location` to read: [`History::open_read_only`] for a file; a
    /// PostgreSQL database as [`History::open_at`] does (a database without oscost's tables
    /// gets them, empty).
    pub fn open_read_only_at(location: &Location) -> Result<History, HistoryError> {
        match location {
            Location::File(p) => History::open_read_only(p),
            Location::Postgres(url) => History::open_postgres(url),
        }
    }

    fn open_postgres(url: &PgUrl) -> Result<History, HistoryError> {
        let mut client = pg::Client::connect(url)?;
        schema::migrate_postgres(&mut client, url.shown())?;
        Ok(History {
            store: Store::Postgres(Box::new(RefCell::new(client))),
            path: PathBuf::new(),
            shown: url.shown().to_owned(),
        })
    }
}

/// SQLite's side of the setup, the only part of this crate that is not portable SQL.
/// `Some(())` when `path` does not exist (it is to be created); `None` for a regular file;
/// [`HistoryError::NotAFile`] for anything else, which SQLite must never open: it would create
/// its journal beside it (`/dev/null-journal`).
fn file_kind(path: &Path) -> Result<Option<()>, HistoryError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(None),
        Ok(_) => Err(HistoryError::NotAFile {
            path: path.to_path_buf(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Some(())),
        Err(source) => Err(HistoryError::CreateDir {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Whether the database holds oscost's tables (`true`) or none at all (`false`); another
/// program's tables fail with [`HistoryError::Foreign`]. Reads only.
fn owned_tables(conn: &Connection, path: &Path) -> Result<bool, HistoryError> {
    let open_err = |cause| HistoryError::Open {
        path: path.to_path_buf(),
        cause,
    };
    let mut q = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .map_err(open_err)?;
    let tables: Vec<String> = q
        .query_map([], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .map_err(open_err)?;
    let tables: Vec<String> = tables
        .into_iter()
        .filter(|t| !t.starts_with("sqlite_"))
        .collect();
    if tables.is_empty() {
        return Ok(false);
    }
    let has = |name: &str| tables.iter().any(|t| t == name);
    let damaged = |why: String| HistoryError::Damaged {
        path: path.to_path_buf(),
        why,
    };
    // The tables every layout up to SCHEMA_VERSION has (migration 1 made them all); a
    // migration that adds a table checks for it from its own version on.
    const OURS: [&str; 4] = ["cases", "experiments", "runs", "schema_migrations"];
    // Tables later migrations added (2: `run_hosts`, 3: `documents`).
    const ADDED: [&str; 2] = ["run_hosts", "documents"];
    if !has("schema_migrations") {
        // Only tables of oscost's: a history whose record of versions was lost; anything
        // else is another program's.
        if tables
            .iter()
            .all(|t| OURS.contains(&t.as_str()) || ADDED.contains(&t.as_str()))
        {
            return Err(damaged("it has no schema_migrations table".into()));
        }
        return Err(HistoryError::Foreign {
            path: path.to_path_buf(),
            tables,
        });
    }
    let version: Option<i64> = conn
        .query_row("SELECT MAX(version) FROM schema_migrations", [], |r| {
            r.get(0)
        })
        .map_err(|e| {
            damaged(format!(
                "its schema_migrations table cannot be read: {}",
                sqlite_text(&e)
            ))
        })?;
    match version {
        None => Err(damaged(
            "its schema_migrations table records no version".into(),
        )),
        // A newer oscost's layout may have other tables: `schema::refuse_newer` says so.
        Some(v) if v > SCHEMA_VERSION => Ok(true),
        Some(_) => {
            let missing: Vec<&str> = OURS.iter().copied().filter(|t| !has(t)).collect();
            if missing.is_empty() {
                Ok(true)
            } else {
                Err(damaged(format!(
                    "it lacks the table{} {}",
                    if missing.len() == 1 { "" } else { "s" },
                    missing.join(", ")
                )))
            }
        }
    }
}

/// The flag that, once set (SIGINT, SIGTERM), ends every wait for another writer's lock.
static STOP: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> =
    std::sync::OnceLock::new();

/// Makes waits for another writer's lock end as soon as `flag` is set.
pub fn stop_waiting_on(flag: std::sync::Arc<std::sync::atomic::AtomicBool>) {
    let _ = STOP.set(flag);
}

/// Whether waiting was asked to stop: an operation that failed with a busy database then
/// failed because of the interruption.
pub fn stop_asked() -> bool {
    STOP.get()
        .is_some_and(|f| f.load(std::sync::atomic::Ordering::SeqCst))
}

/// SQLite's busy handler: wait 10 ms more, up to [`BUSY_TIMEOUT`] in all, unless asked to stop.
fn wait_busy(tries: i32) -> bool {
    const STEP: Duration = Duration::from_millis(10);
    if stop_asked() || STEP * tries.max(0) as u32 >= BUSY_TIMEOUT {
        return false;
    }
    std::thread::sleep(STEP);
    true
}

fn setup(conn: &Connection) -> rusqlite::Result<()> {
    // The write-ahead log lets readers go on while one process writes, and a killed writer
    // leaves only a log tail that the next opener ignores. Where it cannot be had (a file
    // system without shared memory) SQLite stays in rollback mode: slower, just as safe.
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;")?;
    Ok(())
}
