//! Validated settings: the second stage after clap, where values are checked against the
//! machine (online CPUs, writable output paths) before anything is measured.

mod unused;

pub use oscost_report::export::Sink;
pub use unused::unused_options;

use crate::args::GlobalOpts;
use anyhow::Context as _;
use oscost_measure::cpuset;
use oscost_measure::sampler::SamplerConfig;
use oscost_report::export::Warnings;
use std::path::{Path, PathBuf};

/// Everything a session needs, checked.
#[derive(Debug, Clone)]
pub struct Config {
    /// JSON destination.
    pub json: Option<Sink>,
    /// CSV destination.
    pub csv: Option<Sink>,
    /// Markdown destination.
    pub markdown: Option<Sink>,
    /// HTML report destination.
    pub report: Option<Sink>,
    /// The run's id (a version-4 UUID), made here so that files can be named after it.
    pub run_id: String,
    /// Directory for the figures (`--svg`).
    pub svg: Option<PathBuf>,
    /// Directory for the series as CSV (`--series`).
    pub series: Option<PathBuf>,
    /// `--quick`.
    pub quick: bool,
    /// Sampling rules.
    pub sampler: SamplerConfig,
    /// CPUs the user asked for (`None`: whatever the process may use).
    pub cpus: Option<Vec<usize>>,
    /// Nice value to set, if any.
    pub nice: Option<i32>,
    /// `--quiet`.
    pub quiet: bool,
    /// `--verbose`: every case's warning in full.
    pub verbose: bool,
    /// `--scripted`: the fictional machine and the scripted clock, for tests.
    pub scripted: bool,
    /// The study this run repeats (`oscost study NAME`): its tables replace the experiments'.
    pub study: Option<&'static str>,
    /// `--host-name` and `--runner`: how a fleet tool started the run, if one did.
    pub fleet: Option<oscost_model::env::FleetRun>,
    /// Files oscost chose itself (the default suite's result file and report beside the
    /// history): one that cannot be written is given up with a line, never the run.
    pub kept: Vec<PathBuf>,
    /// `--history` as given: read when a command opens the history, so that a run's own
    /// checks come first.
    pub history: Option<String>,
    /// `--no-save`.
    pub no_save: bool,
}

/// An output directory given to `--flag`: it must exist and take new files, checked before
/// anything is measured (nothing is created for the user).
fn directory(flag: &str, dir: &std::path::Path) -> anyhow::Result<PathBuf> {
    let shown = dir.display();
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            anyhow::bail!("--{flag} {shown}: not a directory (give a directory for its files)")
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            anyhow::bail!("--{flag} {shown}: no such directory (create it first)")
        }
        Err(e) => anyhow::bail!("--{flag} {shown}: {e}"),
    }
    tempfile::NamedTempFile::new_in(dir).map_err(|e| {
        let reason = e.to_string();
        let reason = reason
            .split(" at path ")
            .next()
            .unwrap_or(&reason)
            .to_owned();
        anyhow::anyhow!("--{flag} {shown}: cannot write files there ({reason})")
    })?;
    Ok(dir.to_path_buf())
}

impl Config {
    /// Validates the global options.
    pub fn from_global(g: &GlobalOpts) -> anyhow::Result<Config> {
        let mut sampler = if g.quick {
            SamplerConfig::quick()
        } else {
            SamplerConfig::standard()
        };
        if let Some(n) = g.samples {
            sampler.samples = n as usize;
            // More samples than the default need a proportionally larger budget.
            let per_sample = sampler.min_sample * 3;
            sampler.budget = sampler.budget.max(per_sample * n);
        }
        if let Some(w) = g.warmup {
            sampler.warmup = w;
        }
        // Given, the budget is the user's, whatever --samples asked for.
        if let Some(b) = g.budget {
            sampler.budget = b;
        }
        if let Some(m) = g.min_runs {
            if m as usize > sampler.samples {
                anyhow::bail!(
                    "--min-runs {m} is more than the {} samples per case{}: give --min-runs at \
                     most {}, or --samples {m} or more",
                    sampler.samples,
                    if g.samples.is_some() {
                        ""
                    } else {
                        " by default"
                    },
                    sampler.samples
                );
            }
            sampler.min_runs = m as usize;
        }
        let cpus = g
            .cpus
            .as_deref()
            .map(cpuset::parse_online)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--cpus: {e}"))?;
        let sink = |flag: &str, p: &Option<PathBuf>| -> anyhow::Result<Option<Sink>> {
            let to_stdout = || {
                if oscost_report::output::stdout_closed() {
                    anyhow::bail!(
                        "--{flag} {}: standard output is closed (oscost was started with \
                         `>&-`), so the document would be lost; give a file name",
                        p.as_deref().unwrap_or(Path::new("-")).display()
                    );
                }
                Ok(Some(Sink::Stdout))
            };
            match p {
                None => Ok(None),
                Some(p) if p.as_os_str() == "-" => to_stdout(),
                // `/dev/stdout` is `-`: written once at the end, the tables going to stderr.
                Some(p) if oscost_report::output::is_stdout(p) => to_stdout(),
                Some(p) => {
                    oscost_report::output::check_writable(p)
                        .with_context(|| format!("--{flag}"))?;
                    Ok(Some(Sink::File(p.clone())))
                }
            }
        };
        let cfg = Config {
            run_id: uuid::Uuid::new_v4().to_string(),
            json: sink("json", &g.json)?,
            csv: sink("csv", &g.csv)?,
            markdown: sink("markdown", &g.markdown)?,
            report: sink("report", &g.report)?,
            svg: g.svg.as_deref().map(|d| directory("svg", d)).transpose()?,
            series: g
                .series
                .as_deref()
                .map(|d| directory("series", d))
                .transpose()?,
            quick: g.quick,
            sampler,
            cpus,
            nice: g.nice,
            quiet: g.quiet,
            verbose: g.verbose,
            scripted: g.scripted,
            study: None,
            fleet: fleet(g)?,
            kept: Vec::new(),
            history: g.history.clone(),
            no_save: g.no_save,
        };
        let to_stdout = [&cfg.json, &cfg.csv, &cfg.markdown, &cfg.report]
            .iter()
            .filter(|s| matches!(s, Some(Sink::Stdout)))
            .count();
        if to_stdout > 1 {
            anyhow::bail!(
                "only one of --json, --csv, --markdown and --report can go to stdout (`-` or \
                 /dev/stdout)"
            );
        }
        // Two formats in one file would leave only the last: refuse before measuring.
        let files: Vec<(&str, &PathBuf)> = [
            ("json", &cfg.json),
            ("csv", &cfg.csv),
            ("markdown", &cfg.markdown),
            ("report", &cfg.report),
        ]
        .into_iter()
        .filter_map(|(flag, s)| match s {
            Some(Sink::File(p)) => Some((flag, p)),
            _ => None,
        })
        .collect();
        for (i, (a, pa)) in files.iter().enumerate() {
            let id = oscost_report::output::identity(pa);
            if let Some((b, _)) = files[i + 1..]
                .iter()
                .find(|(_, pb)| oscost_report::output::identity(pb) == id)
            {
                anyhow::bail!(
                    "--{a} and --{b} both write {}: give each format a file of its own",
                    pa.display()
                );
            }
        }
        Ok(cfg)
    }

    /// The global options as given, without the checks of [`Config::from_global`]: for the
    /// history commands, which measure nothing and check a path when they write it
    /// (`history trend --svg` takes a file name as well as a directory).
    pub fn as_given(g: &GlobalOpts) -> Config {
        let sink = |p: &Option<PathBuf>| {
            p.as_ref().map(|p| {
                if p.as_os_str() == "-" || oscost_report::output::is_stdout(p) {
                    Sink::Stdout
                } else {
                    Sink::File(p.clone())
                }
            })
        };
        Config {
            run_id: uuid::Uuid::new_v4().to_string(),
            json: sink(&g.json),
            csv: sink(&g.csv),
            markdown: sink(&g.markdown),
            report: sink(&g.report),
            svg: g.svg.clone(),
            series: g.series.clone(),
            quick: g.quick,
            sampler: SamplerConfig::standard(),
            cpus: None,
            nice: g.nice,
            quiet: g.quiet,
            verbose: g.verbose,
            scripted: g.scripted,
            study: None,
            fleet: None,
            kept: Vec::new(),
            history: g.history.clone(),
            no_save: g.no_save,
        }
    }

    /// The history the user named: `--history`, else `OSCOST_HISTORY`, else the file
    /// `OSCOST_HISTORY_FILE` names; `None` when none is named (the default file is used).
    pub fn named_history(&self) -> anyhow::Result<Option<oscost_history::Location>> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let (spec, from) = if let Some(h) = &self.history {
            (h.clone(), "--history")
        } else if let Some(h) = var("OSCOST_HISTORY") {
            (h, "OSCOST_HISTORY")
        } else if let Some(f) = var("OSCOST_HISTORY_FILE") {
            (format!("@{f}"), "OSCOST_HISTORY_FILE")
        } else {
            return Ok(None);
        };
        crate::store::location(&spec, from).map(Some)
    }

    /// The history a command uses, and whether the user named it
    /// ([`named_history`](Config::named_history)), else the default file; `None` when there
    /// is neither.
    pub fn history_location(&self) -> anyhow::Result<Option<(oscost_history::Location, bool)>> {
        Ok(match self.named_history()? {
            Some(l) => Some((l, true)),
            None => oscost_history::History::default_path()
                .map(|p| (oscost_history::Location::File(p), false)),
        })
    }

    /// Whether stdout is taken by a machine-readable format (then tables go to stderr).
    pub fn stdout_taken(&self) -> bool {
        [&self.json, &self.csv, &self.markdown, &self.report]
            .iter()
            .any(|s| matches!(s, Some(Sink::Stdout)))
    }

    /// How much of each experiment's warnings the tables print: none with `--quiet`, every
    /// case's own with `--verbose`, else a summary by kind.
    pub fn warnings(&self) -> Warnings {
        if self.quiet {
            Warnings::Hidden
        } else if self.verbose {
            Warnings::Full
        } else {
            Warnings::Summary
        }
    }
}

/// Why the history has no default place.
pub const NO_DATA_DIR: &str = "no home directory to keep it in";

/// `--host-name` and `--runner`, checked: one line each, so that tables and CSV stay whole.
pub(crate) fn fleet(g: &GlobalOpts) -> anyhow::Result<Option<oscost_model::env::FleetRun>> {
    let check = |flag: &str, v: &Option<String>| -> anyhow::Result<Option<String>> {
        match v.as_deref().map(str::trim) {
            None => Ok(None),
            Some("") => anyhow::bail!("--{flag}: empty (give a name, or leave the option out)"),
            Some(t) if t.chars().any(char::is_control) => {
                anyhow::bail!("--{flag}: holds a control character (give one line of text)")
            }
            Some(t) => Ok(Some(t.to_owned())),
        }
    };
    let host_name = check("host-name", &g.host_name)?;
    let runner = check("runner", &g.runner)?;
    Ok((host_name.is_some() || runner.is_some())
        .then_some(oscost_model::env::FleetRun { host_name, runner }))
}
