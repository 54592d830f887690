//! oscost's run history: every result document kept in an embedded SQLite database, or in a
//! PostgreSQL database that a fleet of machines shares, so a figure can be followed across
//! runs (`oscost history trend`) and any run shown again.
//!
//! The document is stored whole (the `oscost/2` JSON as it was given, LZ4-compressed), next to
//! a few columns drawn from it that listing and trends need: one row per run, one per
//! experiment and one per case and per derived figure. Runs are keyed by their `run_id`, so
//! saving or importing a run twice changes nothing. The layout is described in
//! `docs/history.md`.
//!
//! The SQL is written once for both (TEXT, INTEGER, DOUBLE PRECISION and BLOB columns,
//! `INSERT ... ON CONFLICT DO NOTHING`, `$N` placeholders, no functions of either); only the
//! connection setup (SQLite's write-ahead log, busy timeout and foreign keys), the bulk insert
//! (PostgreSQL's binary `COPY`) and the old document column's type (JSONB in PostgreSQL)
//! differ.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod copy;
mod encode;
mod error;
mod fingerprint;
mod open;
pub mod pg;
mod read;
mod rows;
mod save;
mod schema;
mod store;

pub use encode::{digest, peek, Encoded, Peeked};
pub use error::HistoryError;
pub use fingerprint::{env_differences, env_fingerprint};
pub use open::{stop_asked, stop_waiting_on};
pub use pg::PgUrl;
pub use rows::{case_count, derived_run_id};
pub use schema::SCHEMA_VERSION;

use std::path::{Path, PathBuf};
use store::Store;

/// The shortest prefix of a run id that [`History::resolve`] accepts.
pub const MIN_PREFIX: usize = 4;

/// What [`History::save`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    /// The run's id: its own, or the one derived for a document that has none.
    pub run_id: String,
    /// False when the run was already in the history (nothing was written).
    pub new: bool,
    /// The run was already in the history with other content than this document's (nothing
    /// was written): two documents disagree under one id, which the caller must say.
    pub differs: bool,
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
    /// The command line that made it, its words joined by spaces.
    pub command_line: String,
}

impl RunSummary {
    /// The billed command when the run is a bill (`oscost bill -- CMD`: no experiments, and
    /// `bill` among oscost's own words, before `--`).
    pub fn billed(&self) -> Option<&str> {
        if !self.experiments.is_empty() {
            return None;
        }
        let (own, command) = match self.command_line.split_once(" -- ") {
            Some((own, command)) => (own, command),
            None => (self.command_line.as_str(), ""),
        };
        own.split(' ')
            .skip(1)
            .any(|w| w == "bill")
            .then_some(command)
    }
}

/// The newest run of one group of runs (a host, a kernel), as a fleet comparison uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewestRun {
    /// The group's value; `None` for runs that do not record it.
    pub group: Option<String>,
    /// The group's newest run.
    pub run_id: String,
    /// How many runs the group has, the newest included.
    pub runs: usize,
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

/// Which runs a listing or a trend reads: those started since a time, the newest so many of
/// them; chosen in the database, so that only those rows are read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Window {
    /// Only runs started at or after this time (RFC 3339 in UTC, as [`since`] makes it); a run
    /// without a start time (`oscost/1`) counts from when it was saved.
    pub since: Option<String>,
    /// At most this many runs, the newest; `None` for all of them.
    pub limit: Option<usize>,
}

impl Window {
    /// Every run.
    pub fn all() -> Window {
        Window::default()
    }
}

/// The time `text` names, as [`Window::since`] takes it: a date (`2026-11-01`, from its
/// midnight UTC), a time (`2026-11-01T12:00:00Z`, or with a space, seconds optional), or an
/// age back from now (`7d`, `12h`, `2weeks`, `90min`). Otherwise one line saying what is
/// taken.
pub fn since(text: &str) -> Result<String, String> {
    since_at(text, std::time::SystemTime::now())
}

/// [`since`] as of `now`.
pub fn since_at(text: &str, now: std::time::SystemTime) -> Result<String, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "`{text}` is not a date (2026-11-01), a UTC time (2026-11-01T12:00:00Z) or an age \
             (7d, 12h, 2weeks)"
        )
    };
    if t.is_empty() {
        return Err(bad());
    }
    if t.starts_with(|c: char| c.is_ascii_digit()) && t.len() >= 10 && t.as_bytes()[4] == b'-' {
        let bare = t.trim_end_matches('Z');
        let full = match bare.len() {
            10 => format!("{bare}T00:00:00"),
            16 => format!("{bare}:00"),
            _ => bare.to_owned(),
        };
        let at = humantime::parse_rfc3339_weak(&full).map_err(|_| bad())?;
        if at > now {
            return Err(format!("`{text}` is in the future: no run started since"));
        }
        return Ok(humantime::format_rfc3339_seconds(at).to_string());
    }
    let age = humantime::parse_duration(t).map_err(|_| bad())?;
    let at = now.checked_sub(age).ok_or_else(|| {
        format!("`{text}` reaches back before 1970: give a later date or a shorter age")
    })?;
    Ok(humantime::format_rfc3339_seconds(at).to_string())
}

#[cfg(test)]
mod since_tests {
    use super::since_at;
    use std::time::{Duration, SystemTime};

    #[test]
    fn dates_times_and_ages_are_read_and_bad_ones_said() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert_eq!(since_at("2026-11-01", now).unwrap(), "2026-11-01T00:00:00Z");
        assert_eq!(
            since_at("2026-11-01T12:30:00Z", now).unwrap(),
            "2026-11-01T12:30:00Z"
        );
        assert_eq!(
            since_at("2026-11-01 12:30", now).unwrap(),
            "2026-11-01T12:30:00Z"
        );
        assert_eq!(since_at("2d", now).unwrap(), "2026-11-16T11:06:40Z");
        assert_eq!(since_at("12h", now).unwrap(), "2026-11-17T23:06:40Z");
        for bad in ["", "yesterday", "2026-13-01", "7 parsecs", "-3d", "2026-11"] {
            let e = since_at(bad, now).unwrap_err();
            assert!(
                e.contains("is not a date") && e.contains("7d"),
                "{bad}: {e}"
            );
        }
        let e = since_at("2099-01-01", now).unwrap_err();
        assert!(e.contains("future"), "{e}");
    }
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

/// An open history: an SQLite database or a PostgreSQL one, the same to every caller.
pub struct History {
    store: Store,
    path: PathBuf,
    shown: String,
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History").field("at", &self.shown).finish()
    }
}

impl History {
    /// The database file; empty for a PostgreSQL store (see [`History::shown`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the history is, as messages name it: the file's path, or the URL with its
    /// password masked.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}
