//! oscost's run history: every result document kept in an embedded SQLite database, or in a
//! PostgreSQL database that a fleet of machines shares, so a figure can be followed across
//! runs (`oscost history trend`) and any run shown again.
//!
//! The document is stored whole (the `oscost/2` JSON), next to a few columns drawn from it
//! that listing and trends need: one row per run, one per experiment and one per case and per
//! derived figure. Runs are keyed by their `run_id`, so saving or importing a run twice
//! changes nothing. The layout is described in `docs/history.md`.
//!
//! The SQL is written once for both (TEXT, INTEGER and DOUBLE PRECISION columns,
//! `INSERT ... ON CONFLICT DO NOTHING`, `$N` placeholders, no functions of either); only the
//! connection setup (SQLite's write-ahead log, busy timeout and foreign keys) and the
//! document's column type (JSONB in PostgreSQL) differ.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod fingerprint;
pub mod pg;
mod schema;

pub use fingerprint::{env_differences, env_fingerprint};
pub use pg::PgUrl;
pub use schema::SCHEMA_VERSION;

use oscost_model::{ResultDoc, SCHEMA};
use rusqlite::Connection;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Namespace of the ids given to documents that carry none (`oscost/1`): a UUID v5 of the
/// document's canonical JSON in it, so the same document always gets the same id.
const RUN_NAMESPACE: uuid::Uuid = uuid::uuid!("afcbae2c-4a80-4653-a8c4-617d4961ebf9");

/// How long a writer waits for another one to finish before giving up. Saves are short
/// transactions; this only has to outlast a burst of them on a loaded machine.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The shortest prefix of a run id that [`History::resolve`] accepts.
pub const MIN_PREFIX: usize = 4;

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
        /// The newest schema version this oscost knows ([`SCHEMA_VERSION`]).
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
    #[error("run {run_id} in the history cannot be read: {source}")]
    Document {
        /// The run.
        run_id: String,
        /// Why.
        source: oscost_model::ReadError,
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
fn sqlite_text(e: &rusqlite::Error) -> String {
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

/// What [`History::save`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    /// The run's id: its own, or the one derived for a document that has none.
    pub run_id: String,
    /// False when the run was already in the history (nothing was written).
    pub new: bool,
}

/// One run, as `oscost history list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// The run's id.
    pub run_id: String,
    /// When it started (RFC 3339); `None` for an `oscost/1` document.
    pub started_at: Option<String>,
    /// When it was saved into this history (RFC 3339).
    pub saved_at: String,
    /// The oscost that made it.
    pub oscost_version: String,
    /// The host it ran on, when its document records one: the name a fleet gave it
    /// (`--host-name`), else its host name.
    pub hostname: Option<String>,
    /// The kernel release it ran on.
    pub kernel: String,
    /// The CPU model it ran on, when known.
    pub cpu_model: Option<String>,
    /// Its experiments, in the order they ran.
    pub experiments: Vec<String>,
    /// Its cases and derived figures.
    pub case_count: usize,
}

/// One run's figure for a case, as `oscost history trend` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendPoint {
    /// The run's id.
    pub run_id: String,
    /// When the run started (RFC 3339); `None` for an `oscost/1` document.
    pub started_at: Option<String>,
    /// Median per operation (the estimate, for a derived figure), ns.
    pub median_ns: f64,
    /// Its bootstrap 95 % confidence interval, ns.
    pub ci95_ns: [f64; 2],
    /// What one operation is; `derived` for a derived figure.
    pub unit: String,
    /// Every mechanism check passed (for a derived figure: it is not flagged).
    pub checks_passed: bool,
    /// The run's [`env_fingerprint`].
    pub env_fingerprint: String,
    /// The fingerprint differs from the previous point's: a change of kernel, CPU, mitigations,
    /// clock, CPUs, nice or oscost version may explain a step.
    pub env_changed: bool,
    /// What changed since the previous point ([`env_differences`]); empty unless
    /// `env_changed`, or when either run's document could not be read.
    pub changes: Vec<String>,
    /// The run was a `--quick` one (fewer, shorter samples and smaller sweeps).
    pub quick: bool,
}

/// Where a history is kept: an SQLite file, or a PostgreSQL database.
#[derive(Debug, Clone)]
pub enum Location {
    /// An SQLite database file (made when missing).
    File(PathBuf),
    /// A PostgreSQL database.
    Postgres(PgUrl),
}

impl Location {
    /// A `postgres://` or `postgresql://` URL, else a file path.
    pub fn parse(text: &str) -> Result<Location, HistoryError> {
        if pg::is_url(text) {
            PgUrl::parse(text)
                .map(Location::Postgres)
                .map_err(|e| HistoryError::BadLocation(e.0))
        } else if text.contains("://") {
            Err(HistoryError::BadLocation(format!(
                "`{}` is neither a file path nor a postgres:// URL",
                text.split("://").next().unwrap_or_default()
            )))
        } else {
            Ok(Location::File(PathBuf::from(text)))
        }
    }

    /// As messages name it: the file's path, or the URL with its password masked.
    pub fn shown(&self) -> String {
        match self {
            Location::File(p) => p.display().to_string(),
            Location::Postgres(u) => u.shown().to_owned(),
        }
    }
}

/// The database behind a [`History`].
enum Store {
    Sqlite(Connection),
    // A RefCell because reading needs the connection's buffers; a History is used by one
    // thread at a time.
    Postgres(Box<RefCell<pg::Client>>),
}

/// A value going to or coming from the database.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl Cell {
    fn text(self) -> Option<String> {
        match self {
            Cell::Null => None,
            Cell::Int(i) => Some(i.to_string()),
            Cell::Real(r) => Some(r.to_string()),
            Cell::Text(t) => Some(t),
        }
    }
    fn string(self) -> String {
        self.text().unwrap_or_default()
    }
    fn int(&self) -> i64 {
        match self {
            Cell::Int(i) => *i,
            Cell::Real(r) => *r as i64,
            Cell::Text(t) => t.parse().unwrap_or(0),
            Cell::Null => 0,
        }
    }
    /// NULL (how NaN is stored) reads as NaN.
    fn real(&self) -> f64 {
        match self {
            Cell::Int(i) => *i as f64,
            Cell::Real(r) => *r,
            Cell::Text(t) => t.parse().unwrap_or(f64::NAN),
            Cell::Null => f64::NAN,
        }
    }
    /// As PostgreSQL reads a text parameter.
    fn pg_text(&self) -> Option<String> {
        match self {
            Cell::Null => None,
            Cell::Int(i) => Some(i.to_string()),
            Cell::Real(r) if r.is_infinite() => {
                Some(if *r > 0.0 { "Infinity" } else { "-Infinity" }.into())
            }
            Cell::Real(r) => Some(r.to_string()),
            Cell::Text(t) => Some(t.clone()),
        }
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_owned())
    }
}
impl From<&String> for Cell {
    fn from(s: &String) -> Cell {
        Cell::Text(s.clone())
    }
}
impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}
impl From<i64> for Cell {
    fn from(i: i64) -> Cell {
        Cell::Int(i)
    }
}
impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Cell {
        v.map_or(Cell::Null, Into::into)
    }
}
/// NaN is stored as NULL (SQLite would anyway).
fn real(v: f64) -> Cell {
    if v.is_nan() {
        Cell::Null
    } else {
        Cell::Real(v)
    }
}

impl rusqlite::ToSql for Cell {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value};
        Ok(ToSqlOutput::Owned(match self {
            Cell::Null => Value::Null,
            Cell::Int(i) => Value::Integer(*i),
            Cell::Real(r) => Value::Real(*r),
            Cell::Text(t) => Value::Text(t.clone()),
        }))
    }
}

fn from_sqlite(v: rusqlite::types::Value) -> Cell {
    use rusqlite::types::Value;
    match v {
        Value::Null => Cell::Null,
        Value::Integer(i) => Cell::Int(i),
        Value::Real(r) => Cell::Real(r),
        Value::Text(t) => Cell::Text(t),
        Value::Blob(b) => Cell::Text(String::from_utf8_lossy(&b).into_owned()),
    }
}

/// An open history: an SQLite database or a PostgreSQL one, the same to every caller.
pub struct History {
    store: Store,
    path: PathBuf,
    shown: String,
}

impl HistoryError {
    /// Whether SQLite said another connection holds the database (busy or locked).
    fn is_busy(&self) -> bool {
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

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History").field("at", &self.shown).finish()
    }
}

/// The columns `list` and `resolve` sort by: newest first. A document without a start time
/// (`oscost/1`) counts from when it was saved.
// A run with no start time (imported from an `oscost/1` file) counts as older than every run
// that has one, so that importing old files does not make them `latest`.
const NEWEST_FIRST: &str = "ORDER BY CASE WHEN started_at IS NULL THEN 0 ELSE 1 END DESC, \
     started_at DESC, saved_at DESC, run_id DESC";

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

    /// The database file; empty for a PostgreSQL store (see [`History::shown`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the history is, as messages name it: the file's path, or the URL with its
    /// password masked.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The rows `sql` (with `$N` placeholders) gives.
    fn query(&self, sql: &str, params: &[Cell]) -> Result<Vec<Vec<Cell>>, HistoryError> {
        match &self.store {
            Store::Sqlite(conn) => {
                let mut st = conn.prepare_cached(&sql.replace('$', "?"))?;
                let n = st.column_count();
                let rows = st.query_map(rusqlite::params_from_iter(params), |r| {
                    (0..n)
                        .map(|i| r.get::<_, rusqlite::types::Value>(i).map(from_sqlite))
                        .collect::<rusqlite::Result<Vec<Cell>>>()
                })?;
                Ok(rows.collect::<rusqlite::Result<_>>()?)
            }
            Store::Postgres(client) => {
                let text = params.iter().map(Cell::pg_text).collect();
                let mut out = client.borrow_mut().run(&[(sql, text)])?;
                let rows = out.pop().map(|o| o.rows).unwrap_or_default();
                Ok(rows
                    .into_iter()
                    .map(|r| {
                        r.into_iter()
                            .map(|c| c.map_or(Cell::Null, Cell::Text))
                            .collect()
                    })
                    .collect())
            }
        }
    }

    /// Runs writes in order, each with its parameters; returns the rows each one touched. On
    /// PostgreSQL they go in one exchange with the server.
    fn execute(&self, statements: &[(&str, Vec<Cell>)]) -> Result<Vec<u64>, HistoryError> {
        match &self.store {
            Store::Sqlite(conn) => statements
                .iter()
                .map(|(sql, params)| {
                    let mut st = conn.prepare_cached(&sql.replace('$', "?"))?;
                    Ok(st.execute(rusqlite::params_from_iter(params))? as u64)
                })
                .collect(),
            Store::Postgres(client) => {
                let text: Vec<(&str, Vec<Option<String>>)> = statements
                    .iter()
                    .map(|(sql, p)| (*sql, p.iter().map(Cell::pg_text).collect()))
                    .collect();
                Ok(client
                    .borrow_mut()
                    .run(&text)?
                    .iter()
                    .map(|o| o.affected)
                    .collect())
            }
        }
    }

    /// Runs `f` in a write transaction: all of it is kept, or none.
    fn write<T>(
        &mut self,
        f: impl FnOnce(&History) -> Result<T, HistoryError>,
    ) -> Result<T, HistoryError> {
        // SQLite: IMMEDIATE takes the write lock at the start, so a second writer waits (busy
        // timeout) instead of failing when it would upgrade a read lock in the middle.
        let (begin, commit, rollback) = match &self.store {
            Store::Sqlite(_) => ("BEGIN IMMEDIATE", "COMMIT", "ROLLBACK"),
            Store::Postgres(_) => ("BEGIN", "COMMIT", "ROLLBACK"),
        };
        self.batch(begin)?;
        match f(self) {
            Ok(v) => {
                self.batch(commit)?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.batch(rollback);
                Err(e)
            }
        }
    }

    fn batch(&self, sql: &str) -> Result<(), HistoryError> {
        match &self.store {
            Store::Sqlite(conn) => Ok(conn.execute_batch(sql)?),
            Store::Postgres(client) => Ok(client.borrow_mut().batch(sql)?),
        }
    }

    /// Saves `doc` in one transaction: all of it or nothing. A document without a `run_id`
    /// (read from `oscost/1`) is stored under [`derived_run_id`], so importing it twice
    /// changes nothing either. A run already in the history is left as it is
    /// (`new == false`).
    pub fn save(&mut self, doc: &ResultDoc) -> Result<Saved, HistoryError> {
        self.write(|h| h.save_in(doc))
    }

    /// Saves every document of `docs` as [`History::save`] does, in one transaction: all of
    /// them or none. Much faster than one save each where a commit waits for the disk.
    pub fn save_all(&mut self, docs: &[ResultDoc]) -> Result<Vec<Saved>, HistoryError> {
        self.write(|h| docs.iter().map(|d| h.save_in(d)).collect())
    }

    /// [`History::save`] inside a transaction already begun.
    fn save_in(&self, doc: &ResultDoc) -> Result<Saved, HistoryError> {
        let run_id = match &doc.run_id {
            Some(id) => id.clone(),
            None => derived_run_id(doc)?,
        };
        // A run already there costs one look-up, not the whole document sent and parsed.
        let there = self.query(
            "SELECT run_id FROM runs WHERE run_id = $1",
            &[(&run_id).into()],
        )?;
        if !there.is_empty() {
            return Ok(Saved { run_id, new: false });
        }
        let mut stored = doc.clone();
        stored.schema = SCHEMA.into();
        stored.run_id = Some(run_id.clone());
        let document = serde_json::to_string(&stored)?;
        let env = &doc.environment;
        let rows = case_rows(doc);
        let saved_at = humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string();
        let run = vec![
            Cell::from(&run_id),
            doc.started_at.as_ref().into(),
            saved_at.into(),
            (&env.oscost_version).into(),
            (&env.kernel_release).into(),
            env.cpu_model.as_ref().into(),
            env_fingerprint(env).into(),
            env.command_line.join(" ").into(),
            (rows.len() as i64).into(),
            document.into(),
        ];
        let mut rest: Vec<(&str, Vec<Cell>)> = Vec::new();
        // The name a fleet gives the host, else its own: loopback "hosts" share one hostname.
        if let Some(host) = env.host() {
            rest.push((
                "INSERT INTO run_hosts (run_id, hostname) VALUES ($1, $2)",
                vec![(&run_id).into(), host.into()],
            ));
        }
        for (i, e) in doc.experiments.iter().enumerate() {
            rest.push((
                "INSERT INTO experiments (run_id, position, name) VALUES ($1, $2, $3)",
                vec![(&run_id).into(), (i as i64).into(), (&e.name).into()],
            ));
        }
        for r in &rows {
            rest.push((
                "INSERT INTO cases (run_id, case_id, experiment, kind, unit, median_ns, \
                 ci_low_ns, ci_high_ns, median_cycles, samples, checks_passed) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                vec![
                    (&run_id).into(),
                    r.case_id.into(),
                    r.experiment.into(),
                    r.kind.into(),
                    r.unit.into(),
                    real(r.median_ns),
                    real(r.ci95_ns[0]),
                    real(r.ci95_ns[1]),
                    real(r.median_cycles),
                    r.samples.into(),
                    (r.checks_passed as i64).into(),
                ],
            ));
        }
        // ON CONFLICT: another oscost may have saved the run since the look-up.
        let inserted = self.execute(&[(
            "INSERT INTO runs (run_id, started_at, saved_at, oscost_version, kernel, \
                 cpu_model, env_fingerprint, command_line, case_count, document) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
                 ON CONFLICT (run_id) DO NOTHING",
            run,
        )])?;
        if inserted.first().copied().unwrap_or(0) == 0 {
            return Ok(Saved { run_id, new: false });
        }
        self.execute(&rest)?;
        Ok(Saved { run_id, new: true })
    }

    /// Every run, newest first.
    pub fn list(&self) -> Result<Vec<RunSummary>, HistoryError> {
        let mut experiments: HashMap<String, Vec<String>> = HashMap::new();
        for row in self.query(
            "SELECT run_id, name FROM experiments ORDER BY run_id, position",
            &[],
        )? {
            let mut row = row.into_iter();
            let (id, name) = (next(&mut row).string(), next(&mut row).string());
            experiments.entry(id).or_default().push(name);
        }
        let runs = self.query(
            &format!(
                "SELECT run_id, started_at, saved_at, oscost_version, kernel, cpu_model, \
                 case_count, (SELECT hostname FROM run_hosts h WHERE h.run_id = runs.run_id) \
                 FROM runs {NEWEST_FIRST}"
            ),
            &[],
        )?;
        Ok(runs
            .into_iter()
            .map(|r| {
                let mut r = r.into_iter();
                let run_id = next(&mut r).string();
                RunSummary {
                    experiments: experiments.remove(&run_id).unwrap_or_default(),
                    run_id,
                    started_at: next(&mut r).text(),
                    saved_at: next(&mut r).string(),
                    oscost_version: next(&mut r).string(),
                    kernel: next(&mut r).string(),
                    cpu_model: next(&mut r).text(),
                    case_count: next(&mut r).int() as usize,
                    hostname: next(&mut r).text(),
                }
            })
            .collect())
    }

    /// The full id of the run `run` names: a whole id, a prefix of one id (at least
    /// [`MIN_PREFIX`] characters), `latest` for the newest run, or `latest~N` for the one N
    /// runs before it.
    pub fn resolve(&self, run: &str) -> Result<String, HistoryError> {
        let back = match run.strip_prefix("latest") {
            Some("") => Some(0),
            Some(rest) => rest
                .strip_prefix('~')
                .and_then(|n| n.parse::<u32>().ok())
                .map(i64::from),
            None => None,
        };
        if let Some(back) = back {
            let found = self.query(
                &format!("SELECT run_id FROM runs {NEWEST_FIRST} LIMIT 1 OFFSET $1"),
                &[back.into()],
            )?;
            return found
                .into_iter()
                .next()
                .map(|r| first(r).string())
                .ok_or_else(|| {
                    if back == 0 {
                        HistoryError::Empty
                    } else {
                        HistoryError::UnknownRun { run: run.into() }
                    }
                });
        }
        let exact = self.query("SELECT run_id FROM runs WHERE run_id = $1", &[run.into()])?;
        if let Some(row) = exact.into_iter().next() {
            return Ok(first(row).string());
        }
        if run.chars().count() < MIN_PREFIX {
            return Err(HistoryError::ShortPrefix { run: run.into() });
        }
        // Matched here rather than with LIKE, whose wildcards and case rules differ between
        // databases; listing ten thousand ids takes milliseconds.
        let mut matches: Vec<String> = self
            .query("SELECT run_id FROM runs", &[])?
            .into_iter()
            .map(|r| first(r).string())
            .filter(|id| id.starts_with(run))
            .collect();
        matches.sort();
        match matches.len() {
            0 => Err(HistoryError::UnknownRun { run: run.into() }),
            1 => Ok(matches.remove(0)),
            _ => Err(HistoryError::AmbiguousRun {
                run: run.into(),
                matches,
            }),
        }
    }

    /// The document of the run with the full id `run_id` (see [`History::resolve`]), read
    /// with [`oscost_model::read`] so that documents of older schemas load too.
    pub fn get(&self, run_id: &str) -> Result<ResultDoc, HistoryError> {
        let text = self
            .query(
                "SELECT document FROM runs WHERE run_id = $1",
                &[run_id.into()],
            )?
            .into_iter()
            .next()
            .map(|r| first(r).string())
            .ok_or_else(|| HistoryError::UnknownRun { run: run_id.into() })?;
        oscost_model::read(&text).map_err(|source| HistoryError::Document {
            run_id: run_id.into(),
            source,
        })
    }

    /// The newest other run comparable with `doc`: the same host (when `doc` names one), the
    /// same environment fingerprint, the same experiments in the same order, and the same size
    /// (both `--quick` or neither). Looks at the last 20 such runs at most.
    pub fn last_comparable(&self, doc: &ResultDoc) -> Result<Option<ResultDoc>, HistoryError> {
        let quick = |words: &[&str]| words.contains(&"--quick");
        let line = doc.environment.command_line.join(" ");
        let mine: Vec<&str> = line.split(' ').collect();
        let names: Vec<&str> = doc.experiments.iter().map(|e| e.name.as_str()).collect();
        let own = match &doc.run_id {
            Some(id) => id.clone(),
            None => derived_run_id(doc)?,
        };
        self.newest_alike(&doc.environment, &own, |words, experiments| {
            quick(words) == quick(&mine)
                && experiments
                    .iter()
                    .map(String::as_str)
                    .eq(names.iter().copied())
        })
    }

    /// The newest run other than `own` on the machine `env` describes (the same host when it
    /// names one, the same environment fingerprint) that `accept` takes, judged by its command
    /// line (split at spaces, as it is kept) and its experiments' names in order; only that
    /// run's document is read. Looks at the last 20 such runs at most: a run about to start
    /// asks it before it has any results.
    pub fn newest_alike(
        &self,
        env: &oscost_model::Environment,
        own: &str,
        accept: impl Fn(&[&str], &[String]) -> bool,
    ) -> Result<Option<ResultDoc>, HistoryError> {
        // On a store many machines share, twins of one fingerprint are still other hosts.
        let (host_filter, host) = match env.host() {
            Some(h) => (
                "AND run_id IN (SELECT run_id FROM run_hosts WHERE hostname = $3)",
                h.to_owned(),
            ),
            None => (
                "AND run_id NOT IN (SELECT run_id FROM run_hosts WHERE hostname != $3)",
                String::new(),
            ),
        };
        let candidates = self.query(
            &format!(
                "SELECT run_id, command_line FROM runs WHERE env_fingerprint = $1 AND run_id != $2 \
                 {host_filter} {NEWEST_FIRST} LIMIT 20"
            ),
            &[env_fingerprint(env).into(), own.into(), host.into()],
        )?;
        for row in candidates {
            let mut r = row.into_iter();
            let id = next(&mut r).string();
            let line = next(&mut r).string();
            let names: Vec<String> = self
                .query(
                    "SELECT name FROM experiments WHERE run_id = $1 ORDER BY position",
                    &[id.clone().into()],
                )?
                .into_iter()
                .map(|r| first(r).string())
                .collect();
            if accept(&line.split(' ').collect::<Vec<_>>(), &names) {
                return self.get(&id).map(Some);
            }
        }
        Ok(None)
    }

    /// Removes the run `run` names (as [`History::resolve`] reads it), with its experiments
    /// and cases.
    pub fn remove(&mut self, run: &str) -> Result<(), HistoryError> {
        let run_id = self.resolve(run)?;
        self.write(|h| {
            // Spelled out rather than left to ON DELETE CASCADE alone, so a database opened
            // without foreign keys enforced loses no less.
            h.execute(&[
                (
                    "DELETE FROM cases WHERE run_id = $1",
                    vec![(&run_id).into()],
                ),
                (
                    "DELETE FROM experiments WHERE run_id = $1",
                    vec![(&run_id).into()],
                ),
                ("DELETE FROM runs WHERE run_id = $1", vec![(&run_id).into()]),
            ])
        })?;
        Ok(())
    }

    /// The figure of case (or derived figure) `case_id` in every run that has it, oldest
    /// first, each point saying whether the environment changed since the one before.
    pub fn trend(&self, case_id: &str) -> Result<Vec<TrendPoint>, HistoryError> {
        let rows = self.query(
            "SELECT r.run_id, r.started_at, r.env_fingerprint, c.unit, c.median_ns, \
             c.ci_low_ns, c.ci_high_ns, c.checks_passed, r.command_line \
             FROM cases c JOIN runs r ON r.run_id = c.run_id WHERE c.case_id = $1 \
             ORDER BY CASE WHEN r.started_at IS NULL THEN 0 ELSE 1 END, r.started_at, \
             r.saved_at, r.run_id",
            &[case_id.into()],
        )?;
        let mut points: Vec<TrendPoint> = rows
            .into_iter()
            .map(|r| {
                let mut r = r.into_iter();
                TrendPoint {
                    run_id: next(&mut r).string(),
                    started_at: next(&mut r).text(),
                    env_fingerprint: next(&mut r).string(),
                    unit: next(&mut r).string(),
                    median_ns: next(&mut r).real(),
                    ci95_ns: [next(&mut r).real(), next(&mut r).real()],
                    checks_passed: next(&mut r).int() != 0,
                    env_changed: false,
                    changes: Vec::new(),
                    quick: next(&mut r).string().split(' ').any(|a| a == "--quick"),
                }
            })
            .collect();
        if points.is_empty() {
            return Err(HistoryError::UnknownCase {
                case_id: case_id.into(),
                similar: self.similar_cases(case_id)?,
            });
        }
        for i in 1..points.len() {
            points[i].env_changed = points[i].env_fingerprint != points[i - 1].env_fingerprint;
            if points[i].env_changed {
                // Only the runs either side of a change are read whole.
                if let (Ok(a), Ok(b)) =
                    (self.get(&points[i - 1].run_id), self.get(&points[i].run_id))
                {
                    points[i].changes = env_differences(&a.environment, &b.environment);
                }
            }
        }
        Ok(points)
    }

    /// A few stored case ids that contain `case_id`, for an error message.
    fn similar_cases(&self, case_id: &str) -> Result<Vec<String>, HistoryError> {
        let needle = case_id.to_lowercase();
        let mut ids: Vec<String> = self
            .query("SELECT DISTINCT case_id FROM cases", &[])?
            .into_iter()
            .map(|r| first(r).string())
            .filter(|id| !needle.is_empty() && id.to_lowercase().contains(&needle))
            .collect();
        ids.sort();
        ids.truncate(5);
        Ok(ids)
    }
}

/// The next cell of a row (NULL past its end, which the queries above never reach).
fn next(row: &mut impl Iterator<Item = Cell>) -> Cell {
    row.next().unwrap_or(Cell::Null)
}

fn first(row: Vec<Cell>) -> Cell {
    row.into_iter().next().unwrap_or(Cell::Null)
}

/// The id [`History::save`] gives a document that carries none: a UUID v5 of its canonical
/// JSON (compact, fields in the model's order, maps sorted), so the same document read from
/// any file gets the same id.
pub fn derived_run_id(doc: &ResultDoc) -> Result<String, HistoryError> {
    let mut canonical = doc.clone();
    canonical.schema = SCHEMA.into();
    canonical.run_id = None;
    let json = serde_json::to_string(&canonical)?;
    Ok(uuid::Uuid::new_v5(&RUN_NAMESPACE, json.as_bytes()).to_string())
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
    // Tables later migrations added (2: `run_hosts`).
    const ADDED: [&str; 1] = ["run_hosts"];
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

/// One row of the `cases` table.
struct CaseRow<'a> {
    case_id: &'a str,
    experiment: &'a str,
    kind: &'static str,
    unit: &'a str,
    median_ns: f64,
    ci95_ns: [f64; 2],
    median_cycles: f64,
    samples: Option<i64>,
    checks_passed: bool,
}

/// The cases and derived figures of `doc`, each id once (the first wins: ids are unique in
/// any document oscost writes, and the primary key needs them to be).
fn case_rows(doc: &ResultDoc) -> Vec<CaseRow<'_>> {
    let mut seen = HashSet::new();
    let mut rows = Vec::new();
    for e in &doc.experiments {
        for c in &e.cases {
            if seen.insert(c.id.as_str()) {
                rows.push(CaseRow {
                    case_id: &c.id,
                    experiment: &e.name,
                    kind: "case",
                    unit: &c.unit,
                    median_ns: c.median_ns,
                    ci95_ns: c.ci95_ns,
                    median_cycles: c.median_cycles,
                    samples: Some(c.samples as i64),
                    checks_passed: c.checks_passed,
                });
            }
        }
        for d in &e.derived {
            if seen.insert(d.id.as_str()) {
                rows.push(CaseRow {
                    case_id: &d.id,
                    experiment: &e.name,
                    kind: "derived",
                    // As the CSV output names them.
                    unit: "derived",
                    median_ns: d.estimate_ns,
                    ci95_ns: d.ci95_ns,
                    median_cycles: d.estimate_cycles,
                    samples: None,
                    checks_passed: d.flagged.is_none(),
                });
            }
        }
    }
    rows
}

/// How many rows of the `cases` table `doc` gives: its distinct case and derived-figure ids.
pub fn case_count(doc: &ResultDoc) -> usize {
    case_rows(doc).len()
}
