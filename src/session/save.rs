//! Saving a finished run in the history, and what the history says of the same run made
//! before (how long it took, what changed since).

use crate::config::Config;
use oscost_measure::experiments::ExperimentArgs;
use oscost_model::{Environment, ResultDoc};

/// Where a finished run is saved.
pub enum Saving {
    /// Nowhere (`--no-save`).
    Off,
    /// Into this history, opened before measuring. When it was given with `--history`
    /// (`explicit`) a failure to save fails the run; at the default place it is a warning.
    Into {
        /// The open database.
        history: oscost_history::History,
        /// Given with `--history`.
        explicit: bool,
    },
    /// The default history could not be opened, for this reason: the run goes on, and says
    /// at its end that it was not saved.
    Unavailable(String),
}

/// Saves a finished run as `saving` says; says why not when it could not. Returns whether
/// the run is in the history.
pub fn save(saving: Saving, doc: &ResultDoc, cfg: &Config) -> anyhow::Result<bool> {
    let why = match saving {
        Saving::Off => return Ok(false),
        Saving::Unavailable(why) => why,
        Saving::Into {
            mut history,
            explicit,
        } => match history.save(doc).map_err(|e| located(&history, e)) {
            Ok(_) => {
                // The change since the last comparable run, as criterion prints it (a bill
                // has no figures to hold against another run's).
                let figures = !doc.experiments.is_empty();
                if let (true, Ok(Some(prev))) =
                    (figures && !cfg.quiet, history.last_comparable(doc))
                {
                    let label = prev
                        .run_id
                        .as_deref()
                        .map_or("", |id| &id[..id.len().min(8)]);
                    // The machine's own run-to-run spread, from its earlier comparable runs
                    // (none of the two compared): what `oscost compare` widens intervals by.
                    let besides: Vec<&str> = [prev.run_id.as_deref(), doc.run_id.as_deref()]
                        .into_iter()
                        .flatten()
                        .collect();
                    let spread = history
                        .comparable_runs(doc, &besides, crate::commands::compare::SPREAD_RUNS)
                        .ok()
                        .map(|runs| oscost_report::compare::spread_of(&runs));
                    let since = oscost_report::compare::since_last;
                    let width = super::show::table_width(cfg);
                    if let Some(text) = since(&prev, label, doc, spread.as_ref(), width) {
                        eprint!("{}", oscost_report::termtext::for_terminal(&text));
                    }
                }
                return Ok(true);
            }
            // SIGINT or SIGTERM while waiting for another writer's lock: an interruption.
            Err(_) if oscost_history::stop_asked() => {
                return Err(anyhow::Error::new(oscost_measure::Cancelled).context(
                    "interrupted while waiting for the history database's lock: the run was \
                     not saved in the history",
                ))
            }
            Err(e) if explicit => {
                return Err(anyhow::anyhow!(
                    "the run could not be saved in the history: {e} (give --history a \
                     writable path, or --no-save)"
                ))
            }
            Err(e) => e.to_string(),
        },
    };
    // Even with --quiet: the run is not kept where the user will look for it.
    eprintln!("oscost: history not saved: {why} (use --history PATH or --no-save)");
    Ok(false)
}

/// A history error that names the database when the error itself does not (SQLite's "disk I/O
/// error" and "database or disk is full" name no file), and says "disk full" where it is one.
fn located(history: &oscost_history::History, e: oscost_history::HistoryError) -> String {
    let file = oscost_history::Location::File(history.path().to_owned());
    if let Some(full) = crate::store::disk_full(&e, &file) {
        return full;
    }
    let text = e.to_string();
    let path = history.shown().to_owned();
    if text.contains(&path) {
        text
    } else {
        format!("{path}: {text}")
    }
}

/// Options that say where results go or how much is printed: they change nothing measured,
/// so two runs that differ only in them take the same time. Each takes a value.
const OUTPUT_OPTIONS: &[&str] = &[
    "--json",
    "--csv",
    "--markdown",
    "--report",
    "--svg",
    "--series",
    "--history",
    "--host-name",
    "--runner",
];

/// Flags of the same kind: see [`OUTPUT_OPTIONS`].
const OUTPUT_FLAGS: &[&str] = &["--no-save", "-q", "--quiet", "-v", "--verbose"];

/// A command line's words without its program name and its output options: what decides
/// what a run measures and so how long it takes.
fn measuring_args<'a>(line: &[&'a str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut args = line.iter().skip(1).copied();
    while let Some(a) = args.next() {
        let name = a.split_once('=').map_or(a, |(n, _)| n);
        if OUTPUT_OPTIONS.contains(&name) {
            if !a.contains('=') {
                args.next();
            }
        } else if !OUTPUT_FLAGS.contains(&a) {
            out.push(a);
        }
    }
    out
}

/// What each of `experiments` took the last time the same run (the same experiments and the
/// same measuring options) was saved in this history from this machine: the progress bar's
/// time left for the whole run. Empty when there is no such run or no history.
pub(super) fn expected_seconds(
    saving: &Saving,
    env: &Environment,
    run_id: &str,
    experiments: &[ExperimentArgs],
) -> Vec<Option<f64>> {
    let Saving::Into { history, .. } = saving else {
        return Vec::new();
    };
    let names: Vec<&str> = experiments.iter().map(|e| e.name()).collect();
    // Split as the history keeps a command line: joined at spaces.
    let line = env.command_line.join(" ");
    let args = measuring_args(&line.split(' ').collect::<Vec<_>>());
    let alike = |words: &[&str], experiments: &[String]| {
        experiments
            .iter()
            .map(String::as_str)
            .eq(names.iter().copied())
            && measuring_args(words) == args
    };
    match history.newest_alike(env, run_id, alike) {
        Ok(Some(prev)) => prev
            .experiments
            .iter()
            .map(|e| e.load.as_ref().map(|l| l.wall_s))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(s: &str) -> Vec<&str> {
        s.split(' ').collect()
    }

    #[test]
    fn output_options_do_not_change_what_a_run_measures() {
        let a = line("oscost run tick --work 1s --json a.json --no-save -q");
        let b = line("/usr/bin/oscost run tick --work 1s --report=r.html --history h.db");
        assert_eq!(measuring_args(&a), ["run", "tick", "--work", "1s"]);
        assert_eq!(measuring_args(&a), measuring_args(&b));
        // A measuring option differs: not alike.
        let c = line("oscost run tick --work 2s");
        assert_ne!(measuring_args(&a), measuring_args(&c));
        let quick = line("oscost --quick --csv -");
        assert_eq!(measuring_args(&quick), ["--quick"]);
    }
}
