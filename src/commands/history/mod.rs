//! `oscost history`: the runs kept in the history database, listed, shown, followed across
//! runs, exported, imported and removed.

mod push;
mod text;

use crate::args::HistoryCommand;
use crate::config::{Config, Sink};
use crate::run_id::short_id;
use crate::stdout::print_stdout;
use crate::store::{location, open, open_read_only};
use anyhow::Context as _;
use oscost_history::{Encoded, History, HistoryError, Location, Window};
use oscost_report::export::{ExportOptions, Format};
// Text from result files, which may carry escape sequences, is shown, never sent raw.
use crate::commands::emit::emit;
use oscost_report::termtext::one_line;
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
        return push::push(&mut store, &files);
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
