//! Command-line definitions (clap derive) and dispatch.

use crate::config::{Config, Sink};
use crate::history_cmd::{self, HistoryCommand};
use crate::session;
use anyhow::Context as _;
use clap::{Args, CommandFactory, Parser, Subcommand};
use oscost_measure::experiments::{ExperimentArgs, REGISTRY};
use oscost_measure::limits::Limits;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const ABOUT: &str = "oscost measures what the operating system costs a program: system calls, \
context switches, wake-ups, with the loop overhead subtracted, every figure in ns and counter \
ticks, a median with a bootstrap 95 % CI, and checks that what was timed really happened.";

const AFTER_HELP: &str = "Examples:
  oscost                          run the default suite (same as `oscost run`; about 50 s on a
                                  2-vCPU virtual machine)
  oscost --quick                  the suite at each experiment's --quick size, without the
                                  kernel's traced passes (about 4.7 s there)
  oscost syscall --quick          the system-call table, fast (about 0.6 s)
  oscost syscall --calls getpid,read64k --json r.json
  oscost switch --via pipe,futex --kind processes   ping-pong, switches counted
  oscost ring --tasks 2..1024 --via futex            token ring sweep
  oscost timeline --workers 2 --worker-nice 0,5 --svg .   CPU shares by nice, drawn
  oscost run syscall --cpus 1 --nice -19 --csv r.csv
  oscost --report r.html          the default suite, and a page of its tables and figures
  oscost report a.json b.json -o ab.html   two runs' results side by side in one page
  oscost list                     experiments and what they measure
  oscost env                      the machine description stored with every result
  oscost history list             the runs kept in the history (every run is saved there)
  oscost history trend syscall.getpid --svg t.svg   one figure across runs, drawn";

/// Top-level command line.
#[derive(Debug, Parser)]
#[command(name = "oscost", version, about = ABOUT, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOpts,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options every command takes, before or after the subcommand.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Output and sampling (any command)")]
pub struct GlobalOpts {
    /// Write the full results (schema oscost/2, raw samples included) to FILE; `-` for stdout
    #[arg(long, global = true, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write one CSV row per case to FILE; `-` for stdout
    #[arg(long, global = true, value_name = "FILE")]
    pub csv: Option<PathBuf>,

    /// Write Markdown tables to FILE; `-` for stdout
    #[arg(long, global = true, value_name = "FILE")]
    pub markdown: Option<PathBuf>,

    /// Write a self-contained HTML page of the run (tables, figures, the machine) to FILE; `-`
    /// for stdout
    #[arg(long, global = true, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// Write each figure of the run into the existing directory DIR, as `<name>.svg`: every
    /// experiment's samples case by case, and the figures of ring, split, spawn, timeline,
    /// tick and noise
    #[arg(long, global = true, value_name = "DIR")]
    pub svg: Option<PathBuf>,

    /// Write each series a case carries (a timeline's trace) into the existing directory DIR,
    /// as `<case id>.<series>.csv`
    #[arg(long, global = true, value_name = "DIR")]
    pub series: Option<PathBuf>,

    /// A rough look: smaller sizes, fewer and shorter samples (each experiment's --help says how
    /// long it takes); a suite with --quick runs each experiment at its --quick size
    #[arg(long, global = true)]
    pub quick: bool,

    /// Samples per case, 3 or more (default 81, or 10 with --quick). Taken by the experiments
    /// that sample a repeated operation (syscall, fs, primitives, switch, ring, lockring) and by
    /// spawn; the others size themselves by their own options (--rounds, --runs, --duration)
    #[arg(long, global = true, value_name = "N", allow_negative_numbers = true,
          value_parser = parse_samples)]
    pub samples: Option<u32>,

    /// Fewest samples per case before --budget may stop sampling, 3 or more and at most
    /// --samples (default 5); the same experiments as --samples
    #[arg(long, global = true, value_name = "N", allow_negative_numbers = true,
          value_parser = parse_min_runs)]
    pub min_runs: Option<u32>,

    /// Minimum warm-up per case before its samples, e.g. 40ms: warm-up goes on until three
    /// batches agree within 2 %, at most four times this (default 40ms, or 4ms with --quick;
    /// 1us to 60s). The experiments that sample a repeated operation (syscall, fs,
    /// primitives, switch, ring, lockring)
    #[arg(long, global = true, value_name = "TIME", allow_hyphen_values = true,
          value_parser = parse_warmup)]
    pub warmup: Option<std::time::Duration>,

    /// Time budget per case, e.g. 2s: once spent, sampling stops after --min-runs samples
    /// (default 2s, or 300ms with --quick, and more with a larger --samples; 1us to 1h). The
    /// same experiments as --samples
    #[arg(long, global = true, value_name = "TIME", allow_hyphen_values = true,
          value_parser = parse_budget)]
    pub budget: Option<std::time::Duration>,

    /// CPUs to measure on, kernel list syntax (`0-3,8`); single-task cases use the first
    #[arg(long, global = true, value_name = "LIST", allow_hyphen_values = true)]
    pub cpus: Option<String>,

    /// Nice value for the measuring tasks (-20..19; a negative value such as -19 needs root or
    /// CAP_SYS_NICE). Default: leave it as inherited; the value used is recorded
    #[arg(long, global = true, value_name = "N", allow_hyphen_values = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub nice: Option<i32>,

    /// No progress bar and no warnings (tables and errors still print; warnings stay in the
    /// result files)
    #[arg(long, short, global = true)]
    pub quiet: bool,

    /// Under each table, every case's warning in full (by default one line per kind of
    /// warning, saying how many cases it touched)
    #[arg(long, short, global = true, conflicts_with = "quiet")]
    pub verbose: bool,

    /// The history: where each run is saved and what `oscost history`, `compare` and
    /// `report` read. An SQLite file, a postgres://USER@HOST/DB URL (a store a fleet
    /// shares), or @FILE for a file holding either, so a password stays off the command
    /// line. Default: $OSCOST_HISTORY, else the file $OSCOST_HISTORY_FILE names, else
    /// $XDG_DATA_HOME/oscost/history.sqlite3 (~/.local/share/oscost/history.sqlite3)
    #[arg(long, global = true, value_name = "PATH|URL")]
    pub history: Option<String>,

    /// Do not save this run in the history
    #[arg(long, global = true, conflicts_with = "history")]
    pub no_save: bool,

    /// The name this host goes by in a fleet (an inventory name), recorded with the run and
    /// used by `compare --group-by host` (default: the machine's host name)
    #[arg(long, global = true, value_name = "NAME")]
    pub host_name: Option<String>,

    /// What started this run on the host (`ansible-core 2.14, command module over ssh`),
    /// recorded with the run as part of the machine's state
    #[arg(long, global = true, value_name = "TEXT")]
    pub runner: Option<String>,

    /// Tests only: a fictional machine and a scripted clock, for the example experiments
    #[arg(long, global = true, hide = true)]
    pub scripted: bool,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run experiments at their suite size (no names: the default suite; `ring` runs 2, 4, 16 and
    /// 64 tasks), or with --quick each at its --quick size
    Run {
        /// Experiments to run, in order
        #[arg(value_name = "EXPERIMENT", value_parser = experiment_names())]
        experiments: Vec<String>,
    },
    /// List the experiments
    List,
    /// Print the machine description recorded with every result
    Env,
    /// Compare results: each against the first, case by case, with the environment
    /// differences that can explain a difference
    #[command(after_help = COMPARE_HELP)]
    Compare {
        /// Results to compare: result files (`--json` output), history runs (`latest`,
        /// `latest~N` for the one N runs before it, or an id or its first characters, from
        /// `oscost history list`), or published
        /// baselines (`published:NAME`, listed by `oscost baselines`). Each is compared
        /// against the first. With --group-by, one or more runs, or none for every run of the
        /// history
        #[arg(required_unless_present = "group_by", value_name = "RESULT")]
        inputs: Vec<String>,
        /// Compare groups of runs, one column each: `host` (the fleet's name for the host,
        /// else its host name), `kernel`, or any environment field by its JSON path
        /// (`scheduler.preempt_model`); each group's latest run stands for it
        #[arg(long, value_name = "FIELD")]
        group_by: Option<String>,
        /// With --group-by: the group every other is compared against (default: the first
        /// group in name order)
        #[arg(long, value_name = "NAME", requires = "group_by")]
        reference: Option<String>,
        /// Changes smaller than PCT percent are noise whatever the statistics say: two runs
        /// of one build on one machine differ by several percent, a virtual machine's by more
        #[arg(long, value_name = "PCT", default_value_t = 10.0,
              value_parser = parse_pct)]
        threshold: f64,
        /// Also show each difference as time per second at N operations per second (Herder et
        /// al., "MINIX 3: A Highly Reliable, Self-Repairing Operating System", 2006, priced the
        /// 180 ns getpid difference at 10 000 calls a second)
        #[arg(long, value_name = "N", value_parser = parse_rate)]
        rate: Option<f64>,
        /// Exit with status 1 when any figure is slower by more than PCT percent beyond
        /// noise, to gate a CI pipeline (only figures beyond --threshold count, so a PCT
        /// below it gates at the threshold)
        #[arg(long, value_name = "PCT", value_parser = parse_pct)]
        fail_above: Option<f64>,
        /// Show only the figures called slower or faster in the terminal table (the summary
        /// still counts every figure; --json and --csv keep every row)
        #[arg(long)]
        only_changed: bool,
    },
    /// List the published baselines (the studies' own figures), or describe one
    Baselines {
        /// A baseline to describe in full: its citation, machine, method and every figure
        #[arg(value_name = "NAME")]
        name: Option<String>,
    },
    /// The five published studies oscost repeats: list them, or run one on this machine and
    /// print its own tables with the published figures beside this machine's
    #[command(after_help = STUDY_HELP)]
    Study {
        /// The study to run (none: list them)
        #[arg(value_name = "NAME")]
        name: Option<String>,
        /// At the study's own sizes (longer: --quick takes seconds, the default up to about a
        /// minute and a half)
        #[arg(long, conflicts_with = "quick")]
        full: bool,
    },
    /// Print a shell completion script (`oscost completions bash > ~/.local/share/bash-completion/completions/oscost`)
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a manual page in roff: oscost's own (`oscost man > oscost.1; man ./oscost.1`) or a
    /// subcommand's (`oscost man syscall > oscost-syscall.1`); `--dir DIR` writes them all
    Man {
        /// The subcommand whose page to print, with its options (none: oscost's own page)
        #[arg(value_name = "SUBCOMMAND")]
        name: Option<String>,
        /// Write every page into DIR instead: oscost.1 and oscost-SUBCOMMAND.1 for each
        /// subcommand (oscost-history-list.1 and so on below history)
        #[arg(long, value_name = "DIR", conflicts_with = "name")]
        dir: Option<PathBuf>,
    },
    /// The runs kept in the history: list, show, trend, export, import, rm
    #[command(subcommand)]
    History(HistoryCommand),
    /// Write one HTML page of result files (`--json` output): tables, figures, the machine;
    /// with several files, the cases they share side by side against the first
    Report {
        /// Result files written by `oscost --json`, or runs of the history (`latest`,
        /// `latest~1`, an id), the first the reference
        #[arg(value_name = "RUN")]
        files: Vec<PathBuf>,
        /// The HTML file to write (`-` for stdout); replaced whole, never half written
        #[arg(short, long, value_name = "OUT.html")]
        output: Option<PathBuf>,
    },
    #[command(flatten)]
    Experiment(ExperimentArgs),
}

const COMPARE_HELP: &str = "Examples:
  oscost compare before.json after.json
  oscost compare before.json after.json --fail-above 10     exit 1 on a regression
  oscost compare published:minix3-kernel-drivers today.json --rate 10000
  oscost compare latest~1 latest --markdown -               history runs, as Markdown
  oscost compare --group-by host results/*.json             one column per host (docs/fleet.md)

Verdicts: faster or slower when the bootstrap 95 % CI of the ratio of medians excludes 1,
Mann-Whitney p < 0.05 and the change exceeds --threshold; otherwise no difference beyond
noise. A published baseline was not measured here: ratios only, no verdict.";

const STUDY_HELP: &str = "Examples:
  oscost study                           the five studies: who, when, on what, what they measured
  oscost study windows-yield --quick     run one here, print its tables (seconds)
  oscost study qnx-tick --report q.html  its tables and charts in one page
  oscost compare published:qnx-tick latest   every published figure with a counterpart, beside it
  oscost report published:qnx-tick r.json -o r.html   the study's page from a saved run

A study run is an ordinary run of oscost's experiments: it is saved in the history and writes
--json, --report and --svg like any other.";

fn parse_pct(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').trim().parse::<f64>() {
        Ok(p) if p.is_finite() && (0.0..=10_000.0).contains(&p) => Ok(p),
        _ => Err(format!("`{s}` is not a percentage from 0 to 10000")),
    }
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.trim().replace('_', "").parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!(
            "`{s}` is not a positive number of operations per second"
        )),
    }
}

fn parse_samples(s: &str) -> Result<u32, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if (3..=100_000).contains(&n) => Ok(n as u32),
        _ => Err(format!("`{s}` is not a number of samples from 3 to 100000")),
    }
}

fn parse_min_runs(s: &str) -> Result<u32, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if (3..=100_000).contains(&n) => Ok(n as u32),
        _ => Err(format!("`{s}` is not a number of samples from 3 to 100000")),
    }
}

/// A time from `min` to `max` (ns, spelled `shown` in the error), with its unit.
fn parse_time_in(
    s: &str,
    (min, max): (u64, u64),
    what: &str,
    shown: &str,
) -> Result<std::time::Duration, String> {
    let bounds = || format!("`{s}` is not {what} from {shown} (e.g. 40ms)");
    if s.trim().starts_with('-') {
        return Err(bounds());
    }
    match oscost_measure::experiments::parse_time(s)? {
        ns if (min..=max).contains(&ns) => Ok(std::time::Duration::from_nanos(ns)),
        _ => Err(bounds()),
    }
}

fn parse_warmup(s: &str) -> Result<std::time::Duration, String> {
    parse_time_in(s, (1_000, 60_000_000_000), "a warm-up", "1us to 60s")
}

fn parse_budget(s: &str) -> Result<std::time::Duration, String> {
    parse_time_in(s, (1_000, 3_600_000_000_000), "a time budget", "1us to 1h")
}

fn experiment_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        REGISTRY
            .iter()
            .map(|e| clap::builder::PossibleValue::new(e.name).hide(e.hidden)),
    )
}

/// Parses the command line and runs it.
pub fn run() -> anyhow::Result<ExitCode> {
    let cli = match parse()? {
        Ok(cli) => cli,
        Err(code) => return Ok(code),
    };
    if let Some(e) = unused_options(cli.command.as_ref(), &cli.global) {
        eprintln!("oscost: {e}");
        return Ok(ExitCode::from(2));
    }
    // The default suite keeps its result file and report beside the history, and says where.
    let default_suite = match &cli.command {
        None => true,
        Some(Command::Run { experiments }) => experiments.is_empty(),
        _ => false,
    };
    // A quick suite leaves out the kernel's traced passes (`QUICK_SUITE_ARGS`): say so once,
    // so their absence from the tables is not taken for a missing permission.
    if cli.global.quick
        && !cli.global.quiet
        && matches!(cli.command, None | Some(Command::Run { .. }))
    {
        let width = oscost_report::render::layout_width(true);
        eprint!(
            "{}",
            oscost_report::render::wrap(
                "note: a quick suite leaves out the kernel's traced passes (switch, timeline, \
                 tick, noise), which would double its time: `oscost NAME --quick` takes them",
                width,
                6
            )
        );
    }
    let (experiments, study) = match cli.command {
        Some(Command::Study { name, full }) => match study(name, full, &cli.global)? {
            Some(planned) => planned,
            None => return Ok(ExitCode::SUCCESS),
        },
        Some(Command::Experiment(e)) => (vec![e], None),
        Some(Command::Run { experiments }) => (by_name(&experiments, cli.global.quick), None),
        None => (by_name(&[], cli.global.quick), None),
        Some(other) => return other_command(other, &cli.global),
    };
    measure(experiments, study, default_suite, &cli.global)
}

/// The command line, or the exit code when clap answered it: help and version printed, or an
/// error said in one line.
fn parse() -> anyhow::Result<Result<Cli, ExitCode>> {
    match Cli::try_parse_from(negative_values(std::env::args_os())) {
        Ok(cli) => Ok(Ok(cli)),
        Err(e) if !e.use_stderr() => {
            // --help and --version: print as clap formats them; a reader that closed the pipe
            // early (`oscost --help | head -1`) has what it wanted.
            if let Err(io) = e.print() {
                if io.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(io.into());
                }
            }
            Ok(Err(ExitCode::SUCCESS))
        }
        Err(e) => {
            // One line, like every other oscost error, instead of clap's paragraph.
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            // "the following required arguments were not provided:" names them on the lines
            // after it: bring them into the one line.
            let missing = if first.ends_with(':') {
                let names: Vec<&str> = text
                    .lines()
                    .skip(1)
                    .map(str::trim)
                    .take_while(|l| !l.is_empty())
                    .collect();
                format!(" {}", names.join(", "))
            } else {
                String::new()
            };
            eprintln!("oscost: {first}{missing}{}", choices(&e));
            Ok(Err(ExitCode::from(2)))
        }
    }
}

/// The command line with a value that starts with a minus sign and a digit (`--work -1s`,
/// `--nice -19`) joined to the option before it (`--work=-1s`), so that it is read as that
/// option's value, to be accepted or refused by its parser, and never as an unknown flag.
/// oscost has no option named by a digit, so nothing else is changed.
fn negative_values(args: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out: Vec<std::ffi::OsString> = Vec::new();
    for arg in args {
        let negative = arg
            .to_str()
            .and_then(|a| a.strip_prefix('-'))
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit() || c == '.'));
        match out.last_mut() {
            Some(prev)
                if negative
                    && prev.to_str().is_some_and(|p| {
                        p.starts_with("--") && p.len() > 2 && !p.contains('=')
                    }) =>
            {
                prev.push("=");
                prev.push(&arg);
            }
            _ => out.push(arg),
        }
    }
    out
}

/// `oscost study`: the list of studies (`None`, nothing to measure), or the experiments of
/// the study named and its name.
fn study(
    name: Option<String>,
    full: bool,
    global: &GlobalOpts,
) -> anyhow::Result<Option<(Vec<ExperimentArgs>, Option<&'static str>)>> {
    let Some(name) = name else {
        if full {
            anyhow::bail!("--full needs a study to run (`oscost study NAME --full`)");
        }
        session::print_stdout(&oscost_report::study::list_text())?;
        return Ok(None);
    };
    let size = if full {
        crate::study_cmd::Size::Full
    } else if global.quick {
        crate::study_cmd::Size::Quick
    } else {
        crate::study_cmd::Size::Default
    };
    let (name, exps) = crate::study_cmd::experiments(&name, size)?;
    Ok(Some((exps, Some(name))))
}

/// The commands that measure nothing: history, list, env, completions, baselines, man,
/// compare and report.
fn other_command(command: Command, global: &GlobalOpts) -> anyhow::Result<ExitCode> {
    match command {
        Command::History(cmd) => {
            let (db, explicit) = history_location(global)?.ok_or_else(|| {
                anyhow::anyhow!("the history has {NO_DATA_DIR} (give --history PATH)")
            })?;
            history_cmd::run(cmd, &db, explicit, global)
        }
        Command::List => {
            session::print_stdout(&list())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Env => {
            if global.csv.is_some() || global.markdown.is_some() {
                anyhow::bail!(
                    "env writes the description as text or --json, not --csv or --markdown"
                );
            }
            let cfg = Config::from_global(global)?;
            let text = session::environment_text(&cfg)?;
            if cfg.stdout_taken() {
                eprint!("{text}");
            } else {
                session::print_stdout(&text)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Completions { shell } => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "oscost", &mut out);
            session::print_stdout(&String::from_utf8_lossy(&out))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Baselines { name } => {
            let text = match name {
                None => oscost_report::baselines::list_text(),
                Some(n) => {
                    let n = n
                        .strip_prefix(crate::compare_cmd::PUBLISHED_PREFIX)
                        .unwrap_or(&n);
                    let doc = oscost_report::baselines::find(n).ok_or_else(|| {
                        anyhow::anyhow!(
                            "no published baseline named `{n}` (choose from: {})",
                            oscost_report::baselines::names().join(", ")
                        )
                    })?;
                    oscost_report::baselines::describe(&doc)
                }
            };
            session::print_stdout(&text)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { name, dir } => man(name.as_deref(), dir.as_deref()),
        Command::Compare {
            inputs,
            threshold,
            rate,
            fail_above,
            only_changed,
            group_by,
            reference,
        } => {
            let cfg = Config::from_global(global)?;
            let settings = oscost_report::compare::Settings {
                threshold_pct: threshold,
                rate_per_s: rate,
            };
            let db = history_location(global)?;
            if let Some(field) = group_by {
                if fail_above.is_some() || rate.is_some() || only_changed {
                    anyhow::bail!(
                        "--group-by takes neither --fail-above, --rate nor --only-changed \
                         (compare two runs for those)"
                    );
                }
                return crate::fleet_cmd::run(
                    &inputs,
                    &field,
                    reference.as_deref(),
                    settings,
                    &cfg,
                    db.as_ref(),
                );
            }
            if inputs.len() < 2 {
                anyhow::bail!(
                    "compare needs two results or more (or --group-by FIELD for groups of runs)"
                );
            }
            crate::compare_cmd::run(
                &inputs,
                settings,
                fail_above,
                only_changed,
                &cfg,
                db.as_ref(),
            )
        }
        Command::Report { files, output } => {
            let db = history_location(global)?;
            session::report(&files, output.as_deref(), db.as_ref())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Study { .. } | Command::Experiment(_) | Command::Run { .. } => {
            unreachable!("measuring commands are run by `run`")
        }
    }
}

/// `oscost man`: oscost's page or subcommand `name`'s on stdout, or every page into `dir`.
fn man(name: Option<&str>, dir: Option<&Path>) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--dir {}: cannot create it", dir.display()))?;
        clap_mangen::generate_to(cmd, dir)
            .with_context(|| format!("--dir {}: cannot write the pages", dir.display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    // Built, so that a subcommand's page carries its full name and the global options.
    cmd.build();
    let page = match name {
        None => cmd,
        Some(name) => {
            let visible: Vec<&str> = cmd
                .get_subcommands()
                .filter(|c| !c.is_hide_set())
                .map(|c| c.get_name())
                .collect();
            if !visible.contains(&name) {
                anyhow::bail!(
                    "man {name}: no such subcommand (choose from: {})",
                    visible.join(", ")
                );
            }
            cmd.find_subcommand(name)
                .cloned()
                .expect("a visible subcommand is found")
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out)?;
    session::print_stdout(&String::from_utf8_lossy(&out))?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `experiments` (checked against the clock and the machine's limits first), saves the
/// run and says where it went.
fn measure(
    experiments: Vec<ExperimentArgs>,
    study: Option<&'static str>,
    default_suite: bool,
    global: &GlobalOpts,
) -> anyhow::Result<ExitCode> {
    let mut cfg = Config::from_global(global)?;
    cfg.study = study;
    let kept = if default_suite && !global.no_save {
        keep_files(&mut cfg, global)
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
    let saving = saving(global)?;
    let saved = session::run(&cfg, &experiments, saving)?;
    if !cfg.quiet {
        let short = history_cmd::short_id(&saved.run_id);
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
fn saving(global: &GlobalOpts) -> anyhow::Result<session::Saving> {
    Ok(if global.no_save {
        session::Saving::Off
    } else if let Some(location) = named_history(global)? {
        session::Saving::Into {
            history: history_cmd::open(
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
fn keep_files(cfg: &mut Config, g: &GlobalOpts) -> Vec<(&'static str, PathBuf)> {
    // Beside a history file; for a PostgreSQL store, beside the default one.
    let file = match history_location(g) {
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
        history_cmd::short_id(&cfg.run_id)
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

/// Why the history has no default place.
const NO_DATA_DIR: &str = "no home directory to keep it in";

/// The history the user named: `--history`, else `OSCOST_HISTORY`, else the file
/// `OSCOST_HISTORY_FILE` names; `None` when none is named (the default file is used).
pub fn named_history(g: &GlobalOpts) -> anyhow::Result<Option<oscost_history::Location>> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let (spec, from) = if let Some(h) = &g.history {
        (h.clone(), "--history")
    } else if let Some(h) = var("OSCOST_HISTORY") {
        (h, "OSCOST_HISTORY")
    } else if let Some(f) = var("OSCOST_HISTORY_FILE") {
        (format!("@{f}"), "OSCOST_HISTORY_FILE")
    } else {
        return Ok(None);
    };
    history_cmd::location(&spec, from).map(Some)
}

/// The history a command uses, and whether the user named it ([`named_history`]), else the
/// default file; `None` when there is neither.
pub fn history_location(
    g: &GlobalOpts,
) -> anyhow::Result<Option<(oscost_history::Location, bool)>> {
    Ok(match named_history(g)? {
        Some(l) => Some((l, true)),
        None => oscost_history::History::default_path()
            .map(|p| (oscost_history::Location::File(p), false)),
    })
}

/// The global options given to a command that does not use them (`list` uses none, `env`
/// only --json, --cpus and --nice; --quiet and --verbose are accepted everywhere), as one
/// line; `None` when every option given is used.
fn unused_options(command: Option<&Command>, g: &GlobalOpts) -> Option<String> {
    let (name, uses): (&str, &[&str]) = match command {
        Some(Command::List) => ("list", &[]),
        Some(Command::Completions { .. }) => ("completions", &[]),
        Some(Command::Man { .. }) => ("man", &[]),
        Some(Command::Baselines { .. }) => ("baselines", &[]),
        Some(Command::History(h)) => h.uses(),
        // --csv and --markdown have a message of their own.
        Some(Command::Env) => (
            "env",
            &[
                "--json",
                "--cpus",
                "--nice",
                "--csv",
                "--markdown",
                "--host-name",
                "--runner",
            ],
        ),
        Some(Command::Compare { group_by: None, .. }) => {
            ("compare", &["--json", "--csv", "--markdown", "--history"])
        }
        Some(Command::Compare { .. }) => (
            "compare --group-by",
            &["--json", "--csv", "--markdown", "--history", "--report"],
        ),
        Some(Command::Report { .. }) => ("report", &["--history"]),
        _ => return None,
    };
    let given = [
        ("--json", g.json.is_some()),
        ("--csv", g.csv.is_some()),
        ("--markdown", g.markdown.is_some()),
        ("--report", g.report.is_some()),
        ("--svg", g.svg.is_some()),
        ("--series", g.series.is_some()),
        ("--quick", g.quick),
        ("--samples", g.samples.is_some()),
        ("--min-runs", g.min_runs.is_some()),
        ("--warmup", g.warmup.is_some()),
        ("--budget", g.budget.is_some()),
        ("--cpus", g.cpus.is_some()),
        ("--nice", g.nice.is_some()),
        ("--scripted", g.scripted),
        ("--history", g.history.is_some()),
        ("--host-name", g.host_name.is_some()),
        ("--runner", g.runner.is_some()),
        // --no-save is not listed: these commands save nothing, so it holds whatever they are.
    ];
    let unused: Vec<&str> = given
        .iter()
        .filter(|(flag, set)| *set && !uses.contains(flag))
        .map(|(flag, _)| *flag)
        .collect();
    match unused.as_slice() {
        [] => None,
        [one] => Some(format!("{name} does not use {one} (it would be ignored)")),
        many => Some(format!(
            "{name} does not use {} (they would be ignored)",
            many.join(", ")
        )),
    }
}

/// What to do about a parse error: the near miss clap found (a typo) and the valid values when
/// it knows them (an invalid choice), else a pointer to the help.
fn choices(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    // A near miss of a subcommand, an option or a value: the likely fix, said first.
    let near = [
        ContextKind::SuggestedSubcommand,
        ContextKind::SuggestedArg,
        ContextKind::SuggestedValue,
    ]
    .into_iter()
    .find_map(|kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(format!("did you mean `{s}`?")),
        Some(ContextValue::Strings(v)) if !v.is_empty() => {
            Some(format!("did you mean `{}`?", v.join("` or `")))
        }
        _ => None,
    });
    let valid = match e.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(values)) if !values.is_empty() => {
            Some(format!("choose from: {}", values.join(", ")))
        }
        _ => None,
    };
    match (near, valid) {
        (Some(n), Some(v)) => format!(" ({n} {v})"),
        (Some(one), None) | (None, Some(one)) => format!(" ({one})"),
        (None, None) => " (see `oscost --help`)".into(),
    }
}

/// The named experiments at their suite size (with `quick`, at their own `--quick` size), or
/// the default suite when none are named.
fn by_name(names: &[String], quick: bool) -> Vec<ExperimentArgs> {
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

/// The text of `oscost list`.
fn list() -> String {
    let width = REGISTRY
        .iter()
        .filter(|e| !e.hidden)
        .map(|e| e.name.len())
        .max()
        .unwrap_or(0);
    let mut s = String::new();
    for e in REGISTRY.iter().filter(|e| !e.hidden) {
        let suite = if e.in_default_suite {
            ""
        } else {
            " (not in the default suite)"
        };
        s += &format!("{:width$}  {}{suite}\n", e.name, e.summary);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    fn unused(args: &[&str]) -> Option<String> {
        let cli =
            Cli::try_parse_from(std::iter::once("oscost").chain(args.iter().copied())).unwrap();
        unused_options(cli.command.as_ref(), &cli.global)
    }

    #[test]
    fn options_a_command_does_not_use_are_named() {
        assert_eq!(
            unused(&["list", "--json", "F", "--cpus", "99", "--nice", "5"]).as_deref(),
            Some("list does not use --json, --cpus, --nice (they would be ignored)")
        );
        assert_eq!(
            unused(&["--quick", "list"]).as_deref(),
            Some("list does not use --quick (it would be ignored)")
        );
        assert_eq!(
            unused(&["env", "--samples", "9", "--json", "F"]).as_deref(),
            Some("env does not use --samples (it would be ignored)")
        );
        assert_eq!(unused(&["list", "--quiet"]), None);
        assert_eq!(
            unused(&["env", "--json", "F", "--cpus", "0", "--nice", "5"]),
            None
        );
        assert_eq!(
            unused(&["syscall", "--quick", "--json", "F", "--cpus", "0"]),
            None
        );
        assert_eq!(unused(&["--samples", "9", "run"]), None);
        assert_eq!(
            unused(&["report", "r.json", "-o", "r.html", "--report", "x.html"]).as_deref(),
            Some("report does not use --report (it would be ignored)")
        );
        assert_eq!(unused(&["report", "r.json", "-o", "r.html", "-q"]), None);
        assert_eq!(
            unused(&["env", "--report", "x.html"]).as_deref(),
            Some("env does not use --report (it would be ignored)")
        );
    }

    #[test]
    fn list_names_every_experiment() {
        let l = list();
        for e in REGISTRY {
            assert_eq!(l.contains(e.name), !e.hidden, "{}", e.name);
        }
    }
}
