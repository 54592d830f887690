//! Which global options each command uses: the command line's own shape, read by the help
//! (which hides the others) and by the configuration (which refuses them in one line).

/// The global options the command named `name` (`list`, `history list`) uses, `None` for
/// one that uses them all (an experiment, `run`, `study`). --quiet and --verbose are used
/// everywhere; `--help` leaves the others out of these commands' pages.
pub fn uses(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "list" | "completions" | "man" | "baselines" => &[],
        "history" | "history show" | "history import" | "history push" | "history rm" => {
            &["--history"]
        }
        "history list" => &["--history", "--json", "--csv"],
        "history trend" => &["--history", "--svg"],
        "history export" => &["--history", "--json"],
        // --csv and --markdown have a message of their own.
        "env" => &[
            "--json",
            "--cpus",
            "--nice",
            "--csv",
            "--markdown",
            "--host-name",
            "--runner",
        ],
        "compare" => &["--json", "--csv", "--markdown", "--history", "--report"],
        "report" => &["--history"],
        // A bill names its host as a run does, so that a fleet's bills group by host.
        "bill" => &[
            "--json",
            "--report",
            "--history",
            "--no-save",
            "--host-name",
            "--runner",
        ],
        // It prints one screen; it writes no file.
        "datasheet" => &["--history"],
        _ => return None,
    })
}
