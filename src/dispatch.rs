//! The command line parsed and each command run. The raw global options stop here: `config`
//! checks them into the `Config` each command takes.

use crate::args::{Cli, Command, GlobalOpts};
use crate::commands;
use crate::config::{self, Config};
use clap::{CommandFactory as _, FromArgMatches as _};
use std::process::ExitCode;

/// Parses the command line and runs it.
pub fn run() -> anyhow::Result<ExitCode> {
    let cli = match parse()? {
        Ok(cli) => cli,
        Err(code) => return Ok(code),
    };
    if let Some(e) = config::unused_options(cli.command.as_ref(), &cli.global) {
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
        let width = oscost_report::export::terminal::layout_width(true);
        eprint!(
            "{}",
            oscost_report::export::terminal::wrap(
                &crate::lists::quick_suite_note(cli.global.verbose),
                width,
                6
            )
        );
    }
    let quick = cli.global.quick;
    let (experiments, study) = match cli.command {
        Some(Command::Study { name, full }) => match commands::study::plan(name, full, quick)? {
            Some((experiments, name)) => (experiments, Some(name)),
            None => return Ok(ExitCode::SUCCESS),
        },
        Some(Command::Experiment(e)) => (vec![e], None),
        Some(Command::Run { experiments }) => {
            (commands::measure::by_name(&experiments, quick), None)
        }
        None => (commands::measure::by_name(&[], quick), None),
        Some(other) => return other_command(other, &cli.global),
    };
    let mut cfg = Config::from_global(&cli.global)?;
    cfg.study = study;
    commands::measure::run(experiments, default_suite, cfg)
}

/// The command line, or the exit code when clap answered it: help and version printed, or an
/// error said in one line.
fn parse() -> anyhow::Result<Result<Cli, ExitCode>> {
    let parsed = crate::args::hide_unused_options(Cli::command())
        .try_get_matches_from(negative_values(std::env::args_os()))
        .and_then(|m| Cli::from_arg_matches(&m));
    match parsed {
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

/// The commands that measure nothing: history, list, env, completions, baselines, man,
/// compare, report and datasheet.
fn other_command(command: Command, global: &GlobalOpts) -> anyhow::Result<ExitCode> {
    // What a killed run left (a changed setting, a mount, its directories) is put back or
    // removed by the next oscost run of any kind, not only by the next that measures.
    crate::session::remove_earlier_leftovers();
    match command {
        Command::History(cmd) => commands::history::run(cmd, &Config::as_given(global)),
        Command::List => commands::list::run(),
        Command::Env => {
            if global.csv.is_some() || global.markdown.is_some() {
                anyhow::bail!(
                    "env writes the description as text or --json, not --csv or --markdown"
                );
            }
            commands::env::run(&Config::from_global(global)?)
        }
        Command::Completions { shell } => commands::completions::run(shell),
        Command::Baselines { name } => commands::baselines::run(name),
        Command::Man { name, dir } => commands::man::run(name.as_deref(), dir.as_deref()),
        Command::Compare(args) => commands::compare::run(args, &Config::from_global(global)?),
        Command::Bill(args) => {
            // A bill names its host as a run does (`--host-name`, `--runner`).
            let cfg = Config {
                fleet: crate::config::fleet(global)?,
                ..Config::as_given(global)
            };
            commands::bill::run(args, &cfg)
        }
        Command::Report { files, output } => {
            commands::report::run(&files, output.as_deref(), &Config::from_global(global)?)
        }
        Command::Datasheet { runs } => {
            commands::datasheet::run(&runs, &Config::from_global(global)?)
        }
        Command::Study { .. } | Command::Experiment(_) | Command::Run { .. } => {
            unreachable!("measuring commands are run by `run`")
        }
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
