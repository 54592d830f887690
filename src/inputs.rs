//! What `compare`, `compare --group-by` and `report` read: result files, history runs and
//! published baselines, named on the command line.

use oscost_model::{PublishedDoc, ResultDoc, ResultHead};
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
    let text = read_text(path)?;
    oscost_model::read(&text).map_err(|e| unreadable(path, &text, e))
}

/// The head of a result file (its run, start time and environment; its experiments passed
/// over, not built) and the digest of its bytes, with [`read_result_file`]'s errors for all
/// that the head shows wrong.
pub fn read_result_head(path: &Path) -> anyhow::Result<(ResultHead, String)> {
    let text = read_text(path)?;
    let digest = oscost_history::digest(text.as_bytes());
    let head = oscost_model::read_head(&text).map_err(|e| unreadable(path, &text, e))?;
    Ok((head, digest))
}

/// [`read_result_file`] of a file whose head was read with [`read_result_head`] (`digest` its
/// bytes' digest then): refused when the file changed since, since what was chosen by its
/// head might not be what it now holds.
pub fn read_result_file_again(path: &Path, digest: &str) -> anyhow::Result<ResultDoc> {
    let text = read_text(path)?;
    if oscost_history::digest(text.as_bytes()) != digest {
        anyhow::bail!(
            "{}: changed while oscost read it (run the command again once it is written)",
            path.display()
        );
    }
    oscost_model::read(&text).map_err(|e| unreadable(path, &text, e))
}

/// The text of a file, the file named in every error.
fn read_text(path: &Path) -> anyhow::Result<String> {
    let shown = path.display();
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| {
            anyhow::anyhow!("{shown}: not a text file (give an oscost --json result)")
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            anyhow::bail!("{shown}: no such file")
        }
        Err(e) => anyhow::bail!("{shown}: cannot read it ({e})"),
    }
}

/// Why the file at `path`, holding `text`, is not a result oscost reads.
fn unreadable(path: &Path, text: &str, e: oscost_model::ReadError) -> anyhow::Error {
    let shown = path.display();
    match e {
        oscost_model::ReadError::NotADocument(why) if text.trim().is_empty() => {
            anyhow::anyhow!("{shown}: the file is empty ({why})")
        }
        oscost_model::ReadError::NotADocument(why) => anyhow::anyhow!(
            "{shown}: not an oscost result (give a file written by oscost --json; {why})"
        ),
        e => anyhow::anyhow!("{shown}: {e}"),
    }
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
        .map_err(|e| not_found(arg, e))
}

/// The error of an input that names no file and no run of the history that can be read.
pub fn not_found(arg: &str, e: anyhow::Error) -> anyhow::Error {
    anyhow::anyhow!("{arg}: no such file, and {e:#}")
}

/// The head of a run of the history named on the command line, and its full id (to read the
/// run by later), with [`load`]'s errors.
pub fn run_head(arg: &str, history: HistoryAt) -> anyhow::Result<(ResultHead, String)> {
    let head = || -> anyhow::Result<(ResultHead, String)> {
        let history = open_history(history)?;
        let id = history.resolve(arg)?;
        Ok((history.head(&id)?, id))
    };
    head().map_err(|e| not_found(arg, e))
}

/// Whether a command-line input names a result file rather than a run of the history: an
/// existing path, or one that looks like a path (a `/`, a `.json` ending).
pub fn names_a_file(arg: &str) -> bool {
    Path::new(arg).exists() || arg.contains('/') || arg.ends_with(".json")
}

/// A run of the history, when the history exists (a comparison never creates a file).
pub fn load_run(arg: &str, history: HistoryAt) -> anyhow::Result<ResultDoc> {
    let history = open_history(history)?;
    Ok(history.get(&history.resolve(arg)?)?)
}

/// The history runs are looked up in, opened to read, when it exists.
fn open_history(history: HistoryAt) -> anyhow::Result<oscost_history::History> {
    let hint = "give a result file, a run of the history, or published:NAME";
    let Some((location, explicit)) = history else {
        anyhow::bail!("no history to look in ({hint})");
    };
    if let oscost_history::Location::File(path) = location {
        if !path.exists() {
            anyhow::bail!("no history at {} ({hint})", path.display());
        }
    }
    crate::store::open_read_only(location, *explicit, "give --history the database to read")
}
