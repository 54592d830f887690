//! What `compare`, `compare --group-by` and `report` read: result files, history runs and
//! published baselines, named on the command line.

use oscost_model::{PublishedDoc, ResultDoc};
use std::path::Path;

/// Prefix that names a published baseline on the command line.
pub const PUBLISHED_PREFIX: &str = "published:";

/// One input, loaded.
pub enum Loaded {
    /// A measured run.
    Measured(Box<ResultDoc>),
    /// A published baseline.
    Published(Box<PublishedDoc>),
}

/// Reads a result file and names the file in every error.
pub fn read_result_file(path: &Path) -> anyhow::Result<ResultDoc> {
    let shown = path.display();
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| {
            anyhow::anyhow!("{shown}: not a text file (give an oscost --json result)")
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            anyhow::bail!("{shown}: no such file")
        }
        Err(e) => anyhow::bail!("{shown}: cannot read it ({e})"),
    };
    oscost_model::read(&text).map_err(|e| match e {
        oscost_model::ReadError::NotADocument(why) if text.trim().is_empty() => {
            anyhow::anyhow!("{shown}: the file is empty ({why})")
        }
        oscost_model::ReadError::NotADocument(why) => anyhow::anyhow!(
            "{shown}: not an oscost result (give a file written by oscost --json; {why})"
        ),
        e => anyhow::anyhow!("{shown}: {e}"),
    })
}

/// The history runs are looked up in, and whether the user named it.
pub type HistoryAt<'a> = Option<&'a (oscost_history::Location, bool)>;

/// Loads one command-line input: `published:NAME`, an existing file, else a history run.
pub fn load(arg: &str, history: HistoryAt) -> anyhow::Result<Loaded> {
    if let Some(name) = arg.strip_prefix(PUBLISHED_PREFIX) {
        return oscost_report::baselines::find(name)
            .map(|p| Loaded::Published(Box::new(p)))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "{arg}: no such published baseline (choose from: {}; `oscost baselines` \
                     describes them)",
                    oscost_report::baselines::names().join(", ")
                )
            });
    }
    if names_a_file(arg) {
        return read_result_file(Path::new(arg)).map(|d| Loaded::Measured(Box::new(d)));
    }
    load_run(arg, history)
        .map(|d| Loaded::Measured(Box::new(d)))
        .map_err(|e| anyhow::anyhow!("{arg}: no such file, and {e:#}"))
}

/// Whether a command-line input names a result file rather than a run of the history: an
/// existing path, or one that looks like a path (a `/`, a `.json` ending).
pub fn names_a_file(arg: &str) -> bool {
    Path::new(arg).exists() || arg.contains('/') || arg.ends_with(".json")
}

/// A run of the history, when the history exists (a comparison never creates a file).
pub fn load_run(arg: &str, history: HistoryAt) -> anyhow::Result<ResultDoc> {
    let hint = "give a result file, a run of the history, or published:NAME";
    let Some((location, explicit)) = history else {
        anyhow::bail!("no history to look in ({hint})");
    };
    if let oscost_history::Location::File(path) = location {
        if !path.exists() {
            anyhow::bail!("no history at {} ({hint})", path.display());
        }
    }
    let history =
        crate::store::open_read_only(location, *explicit, "give --history the database to read")?;
    Ok(history.get(&history.resolve(arg)?)?)
}
