//! Measuring commands (`oscost`, `run`, an experiment's name, `study NAME`): the experiments
//! checked against the clock and the machine's limits, run, saved, and where they went said.

use crate::config::{Config, Sink, NO_DATA_DIR};
use crate::run_id::short_id;
use crate::session;
use crate::store;
use oscost_measure::experiments::{ExperimentArgs, REGISTRY};
use oscost_measure::limits::Limits;
use std::path::PathBuf;
use std::process::ExitCode;

/// Runs `experiments` (checked against the clock and the machine's limits first), saves the
/// run and says where it went. `default_suite`: the run keeps its result file and report
/// beside the history, and says where.
pub fn run(
    experiments: Vec<ExperimentArgs>,
    default_suite: bool,
    mut cfg: Config,
) -> anyhow::Result<ExitCode> {
    let kept = if default_suite && !cfg.no_save {
        keep_files(&mut cfg)
    } else {
        Vec::new()
    };
    // The scripted clock never moves on its own: a real experiment would wait forever on it,
    // and the example experiments mean nothing on a real clock.
    for e in &experiments {
        let hidden = REGISTRY.iter().any(|i| i.name == e.name() && i.hidden);
        if cfg.scripted != hidden {
            anyhow::bail!(
                "{} cannot run {}",
                e.name(),
                if cfg.scripted {
                    "on the scripted clock"
                } else {
                    "without --scripted (it is a test fixture)"
                }
            );
        }
    }
    // Every experiment's needs against the machine's limits, before the first one measures:
    // a run that cannot fit fails now, not after the experiments before it.
    if !cfg.scripted {
        let limits = Limits::read();
        for e in &experiments {
            e.preflight(cfg.quick, &limits)?;
        }
    }
    // Opened before anything is measured: a --history that cannot take the run fails now.
    let saving = saving(&cfg)?;
    let saved = session::run(&cfg, &experiments, saving)?;
    if !cfg.quiet {
        let short = short_id(&saved.run_id);
        if saved.in_history {
            eprintln!("saved as run {short} (oscost history show {short})");
        }
        // A kept file that could not be written was said so when it failed.
        for (what, path) in kept.iter().filter(|(_, p)| !saved.lost.contains(p)) {
            eprintln!("{what:8} {}", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Where the run is saved: opened before anything is measured, so a --history that cannot
/// take the run fails now.
pub(crate) fn saving(cfg: &Config) -> anyhow::Result<session::Saving> {
    Ok(if cfg.no_save {
        session::Saving::Off
    } else if let Some(location) = cfg.named_history()? {
        session::Saving::Into {
            history: store::open(
                &location,
                true,
                "give --history a path where oscost can write, or --no-save",
            )?,
            explicit: true,
        }
    } else {
        match oscost_history::History::default_path() {
            Some(path) => match oscost_history::History::open(&path) {
                Ok(history) => session::Saving::Into {
                    history,
                    explicit: false,
                },
                Err(e) => session::Saving::Unavailable(e.to_string()),
            },
            None => session::Saving::Unavailable(NO_DATA_DIR.into()),
        }
    })
}

/// For the default suite: the result file and the report the user did not ask for, in
/// `runs/` beside the history, named after the day and the run, so that a run made with no
/// options can still be read, compared and opened later. Returns what it chose, to be named
/// at the end; nothing when the directory cannot be made (said in one line).
fn keep_files(cfg: &mut Config) -> Vec<(&'static str, PathBuf)> {
    // Beside a history file; for a PostgreSQL store, beside the default one.
    let file = match cfg.history_location() {
        Ok(Some((oscost_history::Location::File(p), _))) => Some(p),
        _ => oscost_history::History::default_path(),
    };
    let Some(dir) = file.and_then(|p| p.parent().map(|d| d.join("runs"))) else {
        return Vec::new();
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!(
            "oscost: the run's result file and report are not kept: cannot create {} ({e}; \
             give --json and --report, or --no-save)",
            dir.display()
        );
        return Vec::new();
    }
    let day = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let stem = format!(
        "{}-{}",
        day.get(..10).unwrap_or(&day),
        short_id(&cfg.run_id)
    );
    let mut kept = Vec::new();
    if cfg.json.is_none() {
        let p = dir.join(format!("{stem}.json"));
        cfg.json = Some(Sink::File(p.clone()));
        cfg.kept.push(p.clone());
        kept.push(("results:", p));
    }
    if cfg.report.is_none() {
        let p = dir.join(format!("{stem}.html"));
        cfg.report = Some(Sink::File(p.clone()));
        cfg.kept.push(p.clone());
        kept.push(("report:", p));
    }
    kept
}

/// The named experiments at their suite size (with `quick`, at their own `--quick` size), or
/// the default suite when none are named.
pub fn by_name(names: &[String], quick: bool) -> Vec<ExperimentArgs> {
    let names: Vec<&str> = if names.is_empty() {
        REGISTRY
            .iter()
            .filter(|e| e.in_default_suite)
            .map(|e| e.name)
            .collect()
    } else {
        // Each experiment once: a second run would repeat every case id in the results.
        let mut unique: Vec<&str> = Vec::new();
        for n in names {
            if !unique.contains(&n.as_str()) {
                unique.push(n);
            }
        }
        unique
    };
    names
        .into_iter()
        .filter_map(|n| ExperimentArgs::in_suite(n, quick))
        .collect()
}
