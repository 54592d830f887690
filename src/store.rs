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
                    "{from} {spec}: cannot read {file} ({}; it holds the history's URL or                      path)",
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

fn explain(
    opened: Result<History, HistoryError>,
    location: &Location,
    explicit: bool,
    hint: &str,
) -> anyhow::Result<History> {
    opened.map_err(|e| match e {
        HistoryError::CreateDir { .. } | HistoryError::Open { .. } if explicit => {
            anyhow::anyhow!("--history {}: {e} ({hint})", location.shown())
        }
        HistoryError::CreateDir { .. } | HistoryError::Open { .. } => {
            anyhow::anyhow!("{e} ({hint})")
        }
        e => e.into(),
    })
}
