//! `oscost history`: the runs kept in the history database, listed, shown, followed across
//! runs, exported, imported and removed.

mod text;

use crate::args::HistoryCommand;
use crate::config::{Config, Sink};
use crate::run_id::short_id;
use crate::stdout::print_stdout;
use crate::store::{location, open, open_read_only};
use anyhow::Context as _;
use oscost_history::{Encoded, History, HistoryError, Location, Window};
use oscost_report::export::{ExportOptions, Format};
use std::collections::HashMap;
// Text from result files, which may carry escape sequences, is shown, never sent raw.
use crate::commands::emit::emit;
use oscost_report::termtext::one_line;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use text::{minute, RunList, Shown, Trend};

/// Runs one `oscost history` command on the history `cfg` names.
pub fn run(cmd: HistoryCommand, cfg: &Config) -> anyhow::Result<ExitCode> {
    let (db, explicit) = cfg.history_location()?.ok_or_else(|| {
        anyhow::anyhow!(
            "the history has {} (give --history PATH)",
            crate::config::NO_DATA_DIR
        )
    })?;
    let db = &db;
    // SIGINT and SIGTERM end a wait for another writer's lock, or for a reader of the output.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, std::sync::Arc::clone(&stop))
            .context("installing the signal handlers")?;
    }
    oscost_history::stop_waiting_on(std::sync::Arc::clone(&stop));
    oscost_report::output::stop_waiting_on(std::sync::Arc::clone(&stop));
    let result = run_with(cmd, db, explicit, cfg);
    if result.is_err() && stop.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(anyhow::Error::new(oscost_measure::Cancelled));
    }
    // SQLite's own errors ("disk I/O error") name no file: name the database, and say "disk
    // full" where it is one.
    result.map_err(|e| {
        let h = e.downcast_ref::<HistoryError>();
        match (h.and_then(|h| crate::store::disk_full(h, db)), h) {
            (Some(full), _) => anyhow::anyhow!(full),
            (None, Some(HistoryError::Sqlite(_))) => e.context(db.shown()),
            _ => e,
        }
    })
}

fn run_with(
    cmd: HistoryCommand,
    db: &Location,
    explicit: bool,
    cfg: &Config,
) -> anyhow::Result<ExitCode> {
    if let HistoryCommand::Push { files, to } = cmd {
        let (target, explicit) = match to {
            Some(spec) => (location(&spec, "--to")?, true),
            None => (db.clone(), explicit),
        };
        let mut store = open(
            &target,
            explicit,
            "give --to a store oscost can write: postgres://USER@HOST/DB or a file",
        )?;
        return push(&mut store, &files);
    }
    let mut history = match cmd {
        HistoryCommand::Import { .. } | HistoryCommand::Rm { .. } => {
            open(db, explicit, "give --history a path where oscost can write")?
        }
        _ => open_read_only(db, explicit, "give --history the database to read")?,
    };
    match cmd {
        HistoryCommand::List { window } => {
            let (runs, total) = history.list_window(&window_of(&window))?;
            let view = RunList {
                history: &history,
                runs: &runs,
                total,
            };
            emit(cfg, "history list", &view)?;
        }
        HistoryCommand::Show { run } => {
            let doc = history.get(&history.resolve(&run)?)?;
            emit(cfg, "history show", &Shown { doc: &doc, cfg })?;
        }
        HistoryCommand::Trend { case_id, window } => {
            let (points, total) = history.trend_window(&case_id, &window_of(&window))?;
            if points.is_empty() {
                anyhow::bail!(
                    "no run started since {} has a case `{case_id}` (earlier runs do: give an \
                     earlier --since)",
                    window.since.as_deref().unwrap_or_default()
                );
            }
            // The global --svg, which names a directory for a run's figures: a trend is one
            // figure, so a file name is taken too.
            if let Some(svg) = &cfg.svg {
                // `--svg DIR/` names a directory: one that is missing is not a file name.
                if svg.as_os_str().as_encoded_bytes().ends_with(b"/") && !svg.is_dir() {
                    anyhow::bail!(
                        "--svg {}: no such directory (create it, or give a file name)",
                        svg.display()
                    );
                }
                let path = if svg.is_dir() {
                    svg.join(oscost_report::plot::file_name(&case_id, "svg"))
                } else {
                    svg.clone()
                };
                let rows: Vec<_> = points
                    .iter()
                    .map(|p| oscost_report::trend::TrendRow {
                        label: short_id(&p.run_id).to_owned(),
                        date: p.started_at.as_deref().map(minute).unwrap_or_default(),
                        median_ns: p.median_ns,
                        ci95_ns: p.ci95_ns,
                        env_changed: p.env_changed,
                        checks_passed: p.checks_passed,
                        changes: p.changes.clone(),
                        quick: p.quick,
                    })
                    .collect();
                let text = oscost_report::trend::trend_svg(&case_id, &points[0].unit, &rows);
                oscost_report::output::write_atomic(&path, &text)
                    .with_context(|| format!("--svg {}", svg.display()))?;
            }
            let view = Trend {
                case_id: &case_id,
                points: &points,
                total,
            };
            emit(cfg, "history trend", &view)?;
        }
        HistoryCommand::Export { run } => {
            let doc = history.get(&history.resolve(&run)?)?;
            let text = Format::Json.export(&doc, &ExportOptions::default())?;
            match &cfg.json {
                Some(Sink::File(p)) => {
                    oscost_report::output::write_atomic(p, &text)
                        .with_context(|| format!("--json {}", p.display()))?;
                }
                _ => print_stdout(&text)?,
            }
        }
        HistoryCommand::Import { files } => return import(&mut history, &files),
        HistoryCommand::Push { .. } => unreachable!("handled above"),
        HistoryCommand::Rm { run } => {
            let run_id = history.resolve(&run)?;
            history.remove(&run_id)?;
            print_stdout(&format!("removed run {run_id}\n"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How many runs `history list` and `history trend` show without --all-runs: the newest.
const SHOWN: usize = 100;

/// The runs the window options choose.
fn window_of(w: &crate::args::WindowArgs) -> Window {
    Window {
        since: w.since.clone(),
        limit: (!w.all_runs).then_some(SHOWN),
    }
}

/// How many documents one transaction of `history push` stores: a commit waits for the disk
/// once per batch instead of once per file, and a batch stays a few hundred MB at most.
const PUSH_BATCH: usize = 100;

/// How much of a file's beginning is read to find its run id before the store is asked.
const HEAD: usize = 4096;

/// What became of one file of a push before the store took its batch.
enum Prepared {
    /// Read, checked and compressed, to be stored.
    Doc(Box<Encoded>),
    /// The store holds its run with this very text: nothing to send.
    There(String),
    /// It could not be read, in words.
    Unread(String),
}

/// Pushes the files in batches, each batch one transaction: a bad file is named on stderr and
/// the others still go in. For each batch the files' run ids are read from their first bytes
/// and looked up in one query; a file whose run the store holds with the same text (by its
/// digest) is not parsed. The others are read, parsed once and compressed on two threads
/// while the store takes the batch before; those threads also write the rows the store will
/// send (see [`Encoded`]), so its own thread only inserts the runs and sends bytes.
fn push(store: &mut History, files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let mut tally = Tally::default();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let mut pending: Option<(&[PathBuf], std::thread::ScopedJoinHandle<Vec<Prepared>>)> = None;
        for chunk in files.chunks(PUSH_BATCH) {
            let known = known_runs(store, chunk)?;
            let next = scope.spawn(move || prepare(chunk, &known));
            if let Some((names, work)) = pending.take() {
                let stored = store_batch(store, names, join(work), &mut tally)?;
                // A batch's documents freed beside the next batch, not before it: the store
                // would wait for the frees.
                scope.spawn(move || drop(stored));
            }
            pending = Some((chunk, next));
        }
        if let Some((names, work)) = pending.take() {
            store_batch(store, names, join(work), &mut tally)?;
        }
        Ok(())
    })?;
    let Tally {
        pushed,
        there,
        not_read,
        refused,
    } = tally;
    let mut last = format!("pushed {pushed}, already there {there}");
    if !not_read.is_empty() {
        let _ = write!(
            last,
            ", {} not read (not pushed: {})",
            not_read.len(),
            not_read.join(", ")
        );
    }
    if !refused.is_empty() {
        let _ = write!(
            last,
            ", {} refused (another run's content under a stored id: {})",
            refused.len(),
            refused.join(", ")
        );
    }
    print_stdout(&format!("{} ({})\n", one_line(&last), store.shown()))?;
    Ok(if !not_read.is_empty() || !refused.is_empty() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// What a push did so far.
#[derive(Default)]
struct Tally {
    pushed: usize,
    there: usize,
    not_read: Vec<String>,
    refused: Vec<String>,
}

fn join<T>(work: std::thread::ScopedJoinHandle<T>) -> T {
    work.join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// The runs of `files` the store already holds, by the id read from each file's first bytes,
/// with the digest of the stored text: one query.
fn known_runs(
    store: &History,
    files: &[PathBuf],
) -> anyhow::Result<HashMap<String, Option<String>>> {
    use std::io::Read as _;
    let ids: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let mut head = Vec::with_capacity(HEAD);
            std::fs::File::open(f)
                .and_then(|h| h.take(HEAD as u64).read_to_end(&mut head))
                .ok()?;
            oscost_history::peek(&head).run_id
        })
        .collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    Ok(store.stored_digests(&ids)?)
}

/// Reads the files of a batch on two threads: each file whose run `known` holds with the same
/// text is only digested, every other one parsed and compressed.
fn prepare(files: &[PathBuf], known: &HashMap<String, Option<String>>) -> Vec<Prepared> {
    let one = |file: &PathBuf| -> Prepared {
        let bytes = match std::fs::read(file) {
            Ok(b) => b,
            Err(e) => {
                return Prepared::Unread(match e.kind() {
                    std::io::ErrorKind::NotFound => "no such file".to_owned(),
                    _ => e.to_string(),
                })
            }
        };
        if let Some(id) = oscost_history::peek(&bytes).run_id {
            if let Some(Some(stored)) = known.get(&id) {
                if *stored == oscost_history::digest(&bytes) {
                    return Prepared::There(id);
                }
            }
        }
        let Ok(text) = String::from_utf8(bytes) else {
            return Prepared::Unread("not a text file".to_owned());
        };
        match Encoded::from_text(&text) {
            Ok(e) => Prepared::Doc(Box::new(e)),
            Err(e) => Prepared::Unread(read_error(e)),
        }
    };
    let half = files.len().div_ceil(2);
    let (a, b) = files.split_at(half);
    std::thread::scope(|scope| {
        let other = scope.spawn(|| b.iter().map(one).collect::<Vec<_>>());
        let mut out: Vec<Prepared> = a.iter().map(one).collect();
        out.extend(join(other));
        out
    })
}

/// Stores a prepared batch in one transaction and prints a line per file, in order; returns
/// the batch's documents, for the caller to free where it costs no waiting.
fn store_batch(
    store: &mut History,
    files: &[PathBuf],
    prepared: Vec<Prepared>,
    tally: &mut Tally,
) -> anyhow::Result<Vec<Encoded>> {
    let mut docs = Vec::new();
    let mut lines: Vec<Option<String>> = Vec::with_capacity(files.len());
    for (file, p) in files.iter().zip(prepared) {
        match p {
            Prepared::Doc(e) => {
                docs.push((file, *e));
                lines.push(None);
            }
            Prepared::There(id) => {
                tally.there += 1;
                lines.push(Some(format!("already there: {id} ({})", file.display())));
            }
            Prepared::Unread(why) => {
                eprintln!(
                    "oscost: {}",
                    one_line(&format!("{}: {why}", file.display()))
                );
                tally.not_read.push(file.display().to_string());
                lines.push(Some(String::new()));
            }
        }
    }
    let (names, encoded): (Vec<&PathBuf>, Vec<Encoded>) = docs.into_iter().unzip();
    let mut saved = store.save_encoded(&encoded)?.into_iter().zip(names);
    for line in lines {
        let line = match line {
            Some(l) => l,
            None => {
                let Some((saved, file)) = saved.next() else {
                    continue;
                };
                if saved.differs {
                    eprintln!("oscost: {}", one_line(&conflict(file, &saved.run_id)));
                    tally.refused.push(file.display().to_string());
                    continue;
                }
                if saved.new {
                    tally.pushed += 1;
                    format!("pushed {} ({})", saved.run_id, file.display())
                } else {
                    tally.there += 1;
                    format!("already there: {} ({})", saved.run_id, file.display())
                }
            }
        };
        if !line.is_empty() {
            // A file name may hold a newline or an escape sequence: one line, shown.
            print_stdout(&format!("{}\n", one_line(&line)))?;
        }
    }
    Ok(encoded)
}

/// Why a document whose run id the history holds with other content is not stored.
fn conflict(file: &Path, run_id: &str) -> String {
    format!(
        "{}: not stored: run {run_id} is already in the history with other content (two \
         documents disagree under one id; the history keeps the one it has: `oscost history rm \
         {run_id}` first to replace it)",
        file.display()
    )
}

/// A result file read for import, or why not, in words.
fn read_doc(file: &Path) -> Result<Encoded, String> {
    std::fs::read_to_string(file)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_owned(),
            std::io::ErrorKind::InvalidData => "not a text file".to_owned(),
            _ => e.to_string(),
        })
        .and_then(|text| Encoded::from_text(&text).map_err(read_error))
}

/// Why a file is not a result document oscost reads, with what to give instead.
fn read_error(e: oscost_model::ReadError) -> String {
    match e {
        // Its own message says what to do.
        oscost_model::ReadError::Unsupported(_) => e.to_string(),
        e => format!("{e} (give the JSON files oscost writes with --json)"),
    }
}

/// Imports each file on its own: a bad one is named on stderr and the others still go in.
fn import(history: &mut History, files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let mut failed = false;
    for file in files {
        let shown = file.display();
        let doc = read_doc(file);
        match doc {
            Ok(doc) => {
                let saved = history.save_encoded(&[doc])?.remove(0);
                if saved.differs {
                    eprintln!("oscost: {}", one_line(&conflict(file, &saved.run_id)));
                    failed = true;
                    continue;
                }
                print_stdout(&if saved.new {
                    format!("imported {}\n", saved.run_id)
                } else {
                    format!("already in the history: {}\n", saved.run_id)
                })?;
            }
            Err(why) => {
                eprintln!("oscost: {}", one_line(&format!("{shown}: {why}")));
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
