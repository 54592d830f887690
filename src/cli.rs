//! Command-line definitions (clap derive) and dispatch.

use crate::config::Config;
use crate::session;
use clap::{Args, Parser, Subcommand};
use oscost_measure::experiments::{ExperimentArgs, REGISTRY};
use oscost_measure::limits::Limits;
use std::path::PathBuf;
use std::process::ExitCode;

const ABOUT: &str = "oscost measures what the operating system costs a program: system calls, \
context switches, wake-ups, with the loop overhead subtracted, every figure in ns and counter \
ticks, a median with a bootstrap 95 % CI, and checks that what was timed really happened.";

const AFTER_HELP: &str = "Examples:
  oscost                          run the default suite (same as `oscost run`)
  oscost syscall --quick          the system-call table, fast
  oscost syscall --calls getpid,read64k --json r.json
  oscost switch --via pipe,futex --kind processes   ping-pong, switches counted
  oscost ring --tasks 2..1024 --via futex            token ring sweep
  oscost timeline --workers 2 --worker-nice 0,5 --svg .   CPU shares by nice, drawn
  oscost run syscall --cpus 1 --nice -19 --csv r.csv
  oscost --report r.html          the default suite, and a page of its tables and figures
  oscost report a.json b.json -o ab.html   two runs' results side by side in one page
  oscost list                     experiments and what they measure
  oscost env                      the machine description stored with every result";

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

    /// Smaller sizes, fewer and shorter samples: a rough table in about a second per experiment
    #[arg(long, global = true)]
    pub quick: bool,

    /// Samples per case, 5 or more (default 81, or 15 with --quick)
    #[arg(long, global = true, value_name = "N", allow_negative_numbers = true,
          value_parser = parse_samples)]
    pub samples: Option<u32>,

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

    /// Tests only: a fictional machine and a scripted clock, for the example experiments
    #[arg(long, global = true, hide = true)]
    pub scripted: bool,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run experiments at their suite size (no names: the default suite; `ring` runs 2, 4, 16 and
    /// 64 tasks)
    Run {
        /// Experiments to run, in order
        #[arg(value_name = "EXPERIMENT", value_parser = experiment_names())]
        experiments: Vec<String>,
    },
    /// List the experiments
    List,
    /// Print the machine description recorded with every result
    Env,
    /// Write one HTML page of result files (`--json` output): tables, figures, the machine;
    /// with several files, the cases they share side by side against the first
    Report {
        /// Result files written by `oscost --json`, the first the reference
        #[arg(value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The HTML file to write (`-` for stdout); replaced whole, never half written
        #[arg(short, long, value_name = "OUT.html")]
        output: Option<PathBuf>,
    },
    #[command(flatten)]
    Experiment(ExperimentArgs),
}

fn parse_samples(s: &str) -> Result<u32, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if (5..=100_000).contains(&n) => Ok(n as u32),
        _ => Err(format!("`{s}` is not a number of samples from 5 to 100000")),
    }
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
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version: print as clap formats them.
            e.print()?;
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => {
            // One line, like every other oscost error, instead of clap's paragraph.
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("oscost: {first}{}", choices(&e));
            return Ok(ExitCode::from(2));
        }
    };
    if let Some(e) = unused_options(cli.command.as_ref(), &cli.global) {
        eprintln!("oscost: {e}");
        return Ok(ExitCode::from(2));
    }
    let experiments: Vec<ExperimentArgs> = match cli.command {
        Some(Command::List) => {
            session::print_stdout(&list())?;
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Env) => {
            if cli.global.csv.is_some() || cli.global.markdown.is_some() {
                anyhow::bail!(
                    "env writes the description as text or --json, not --csv or --markdown"
                );
            }
            let cfg = Config::from_global(&cli.global)?;
            let text = session::environment_text(&cfg)?;
            if cfg.stdout_taken() {
                eprint!("{text}");
            } else {
                session::print_stdout(&text)?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Report { files, output }) => {
            session::report(&files, output.as_deref())?;
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Experiment(e)) => vec![e],
        Some(Command::Run { experiments }) => by_name(&experiments),
        None => by_name(&[]),
    };
    let cfg = Config::from_global(&cli.global)?;
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
    session::run(&cfg, &experiments)?;
    Ok(ExitCode::SUCCESS)
}

/// The global options given to a command that does not use them (`list` uses none, `env`
/// only --json, --cpus and --nice; --quiet and --verbose are accepted everywhere), as one
/// line; `None` when every option given is used.
fn unused_options(command: Option<&Command>, g: &GlobalOpts) -> Option<String> {
    let (name, uses): (&str, &[&str]) = match command {
        Some(Command::List) => ("list", &[]),
        // --csv and --markdown have a message of their own.
        Some(Command::Env) => (
            "env",
            &["--json", "--cpus", "--nice", "--csv", "--markdown"],
        ),
        Some(Command::Report { .. }) => ("report", &[]),
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
        ("--cpus", g.cpus.is_some()),
        ("--nice", g.nice.is_some()),
        ("--scripted", g.scripted),
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

/// What to do about a parse error: the valid values when clap knows them (an invalid choice),
/// else a pointer to the help.
fn choices(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    match e.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(values)) if !values.is_empty() => {
            format!(" (choose from: {})", values.join(", "))
        }
        _ => " (see `oscost --help`)".into(),
    }
}

/// The named experiments at their suite size, or the default suite when none are named.
fn by_name(names: &[String]) -> Vec<ExperimentArgs> {
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
        .filter_map(ExperimentArgs::with_defaults)
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
    use clap::CommandFactory;

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
