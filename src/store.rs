//! The history store a command names: where it is (`--history`, the environment, the default
//! file) and opening it with a message that says what to do when it cannot be.

use oscost_history::{History, HistoryError, Location};

/// The history `spec` names (`from` is the option or variable that gave it, for messages):
/// an SQLite path, a postgres:// URL, or `@FILE` for a file holding either. What the file
/// holds is never shown: it may carry a password.
pub fn location(spec: &str, from: &str) -> anyhow::Result<Location> {
    let (text, shown) = match spec.strip_prefix('@') {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| {
                anyhow::anyhow!(
                    "{from} {spec}: cannot read {file} ({}; it holds the history's URL or \
                     path)",
                    match e.kind() {
                        std::io::ErrorKind::NotFound => "no such file".to_owned(),
                        _ => e.to_string(),
                    }
                )
            })?;
            let text = text.trim().to_owned();
            if text.is_empty() || text.starts_with('@') {
                anyhow::bail!(
                    "{from} {spec}: {file} should hold the history's URL or path on one line"
                );
            }
            (text, format!("{from} {spec}"))
        }
        None => (spec.to_owned(), from.to_owned()),
    };
    Location::parse(&text).map_err(|e| anyhow::anyhow!("{shown}: {e}"))
}

/// Opens the history at `location` for a command, with a hint on what to do when it cannot
/// be; `explicit` when the user named it, which the message then does.
pub fn open(location: &Location, explicit: bool, hint: &str) -> anyhow::Result<History> {
    explain(History::open_at(location), location, explicit, hint)
}

/// [`open`] to read only: nothing in or beside an SQLite database changes.
pub fn open_read_only(location: &Location, explicit: bool, hint: &str) -> anyhow::Result<History> {
    explain(
        History::open_read_only_at(location),
        location,
        explicit,
        hint,
    )
}

/// What to say of `e` when it is a full disk (see [`HistoryError::is_disk_full`]), naming the
/// file and what to do; `None` when it is not one. SQLite's own words for it ("disk I/O
/// error") name neither the cause nor the file.
pub fn disk_full(e: &HistoryError, location: &Location) -> Option<String> {
    let Location::File(path) = location else {
        return None;
    };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let free = oscost_sys::mount::free_bytes(path)
        .or_else(|_| oscost_sys::mount::free_bytes(dir.unwrap_or(std::path::Path::new("."))))
        .ok();
    e.is_disk_full(free).then(|| {
        format!(
            "disk full: the file system holding the history {} has no room left ({e}); free \
             some space there, or give --history a file on another file system, or --no-save",
            path.display()
        )
    })
}

fn explain(
    opened: Result<History, HistoryError>,
    location: &Location,
    explicit: bool,
    hint: &str,
) -> anyhow::Result<History> {
    opened.map_err(|e| match (disk_full(&e, location), e) {
        (Some(full), _) => anyhow::anyhow!(full),
        (None, e) => match e {
            HistoryError::CreateDir { .. } | HistoryError::Open { .. } if explicit => {
                anyhow::anyhow!("--history {}: {e} ({hint})", location.shown())
            }
            HistoryError::CreateDir { .. } | HistoryError::Open { .. } => {
                anyhow::anyhow!("{e} ({hint})")
            }
            e => e.into(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::ffi;

    fn sqlite(code: i32) -> HistoryError {
        HistoryError::Sqlite(rusqlite::Error::SqliteFailure(ffi::Error::new(code), None))
    }

    #[test]
    fn a_full_disk_names_the_file_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let file = Location::File(dir.path().join("history.sqlite3"));
        let text = disk_full(&sqlite(ffi::SQLITE_FULL), &file).expect("SQLITE_FULL is one");
        assert!(text.starts_with("disk full: "), "{text}");
        assert!(
            text.contains("history.sqlite3") && text.contains("--no-save"),
            "{text}"
        );
        // The tests' own file system has room: an I/O error there is not a full disk.
        assert_eq!(disk_full(&sqlite(ffi::SQLITE_IOERR_WRITE), &file), None);
    }

    #[test]
    fn a_missing_url_file_is_said_in_plain_words() {
        let e = location("@/nonexistent/url", "OSCOST_HISTORY_FILE").unwrap_err();
        assert_eq!(
            e.to_string(),
            "OSCOST_HISTORY_FILE @/nonexistent/url: cannot read /nonexistent/url (no such file; \
             it holds the history's URL or path)"
        );
    }
}
