//! Global options a command does not use: refused in one line, so that a flag given to the
//! wrong command is never silently ignored.

use crate::args::{uses, Command, GlobalOpts, HistoryCommand};

/// A history command's name as messages show it (`history list`).
fn history_name(h: &HistoryCommand) -> &'static str {
    match h {
        HistoryCommand::List { .. } => "history list",
        HistoryCommand::Show { .. } => "history show",
        HistoryCommand::Trend { .. } => "history trend",
        HistoryCommand::Export { .. } => "history export",
        HistoryCommand::Import { .. } => "history import",
        HistoryCommand::Push { .. } => "history push",
        HistoryCommand::Rm { .. } => "history rm",
    }
}

/// The global options given to a command that does not use them (`list` uses none, `env`
/// only --json, --cpus and --nice; --quiet and --verbose are accepted everywhere), as one
/// line; `None` when every option given is used.
pub fn unused_options(command: Option<&Command>, g: &GlobalOpts) -> Option<String> {
    let name = match command {
        Some(Command::List) => "list",
        Some(Command::Completions { .. }) => "completions",
        Some(Command::Man { .. }) => "man",
        Some(Command::Baselines { .. }) => "baselines",
        Some(Command::History(h)) => history_name(h),
        Some(Command::Env) => "env",
        Some(Command::Compare(c)) if c.group_by.is_none() => "compare",
        Some(Command::Compare(_)) => "compare --group-by",
        Some(Command::Report { .. }) => "report",
        Some(Command::Bill(_)) => "bill",
        Some(Command::Datasheet { .. }) => "datasheet",
        _ => return None,
    };
    let uses: &[&str] = match name {
        // Only a fleet comparison writes a report.
        "compare" => &["--json", "--csv", "--markdown", "--history"],
        "compare --group-by" => uses("compare")?,
        _ => uses(name)?,
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
        // --no-save is not listed: bill honours it, the others save nothing.
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn unused(args: &[&str]) -> Option<String> {
        let cli =
            crate::args::Cli::try_parse_from(std::iter::once("oscost").chain(args.iter().copied()))
                .unwrap();
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
}
