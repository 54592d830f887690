//! `oscost datasheet [RUN]`: the one-screen sheet of what the OS costs a program, for a saved
//! run or a result file.

use crate::config::Config;
use crate::inputs::{load_run, names_a_file, read_result_file};
use crate::stdout::print_stdout;
use std::path::Path;
use std::process::ExitCode;

/// Prints the datasheet of `run`: a result file written by `--json`, or a run of the history
/// (`latest` when none is named).
pub fn run(run: Option<&str>, cfg: &Config) -> anyhow::Result<ExitCode> {
    let arg = run.unwrap_or("latest");
    let doc = if names_a_file(arg) {
        read_result_file(Path::new(arg))?
    } else {
        let history = cfg.history_location()?;
        load_run(arg, history.as_ref())
            .map_err(|e| anyhow::anyhow!("{arg}: no such file, and {e:#}"))?
    };
    let width = oscost_report::export::terminal::layout_width(false);
    print_stdout(&oscost_report::datasheet::datasheet(&doc).render(width))?;
    Ok(ExitCode::SUCCESS)
}
