//! `oscost datasheet [RUN [RUN]]`: the one-screen sheet of what the OS costs a program, for a
//! saved run or a result file, or two side by side.

use crate::config::Config;
use crate::inputs::{load_run, names_a_file, read_result_file};
use crate::stdout::print_stdout;
use std::path::Path;
use std::process::ExitCode;

/// Prints the datasheet of a run: a result file written by `--json`, or a run of the history
/// (`latest` when none is named); of two, both side by side, the first the reference.
pub fn run(runs: &[String], cfg: &Config) -> anyhow::Result<ExitCode> {
    let width = oscost_report::export::terminal::layout_width(false);
    let sheet = |arg: &str| -> anyhow::Result<oscost_report::datasheet::Datasheet> {
        let doc = if names_a_file(arg) {
            read_result_file(Path::new(arg))?
        } else {
            let history = cfg.history_location()?;
            load_run(arg, history.as_ref())
                .map_err(|e| anyhow::anyhow!("{arg}: no such file, and {e:#}"))?
        };
        if let Some(bill) = &doc.bill {
            anyhow::bail!(
                "{arg} is the bill of {}, not a run of experiments: it has no datasheet \
                 (`oscost history show {arg}` prints the bill)",
                oscost_report::bill::subject(bill)
            );
        }
        Ok(oscost_report::datasheet::datasheet(&doc))
    };
    let text = match runs {
        [] => sheet(&newest_with_figures(cfg))?.render(width),
        [one] => sheet(one)?.render(width),
        [a, b, ..] => oscost_report::datasheet::side_by_side(&sheet(a)?, &sheet(b)?, width),
    };
    print_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The newest run of the history that holds figures (a bill holds none); `latest` when the
/// history cannot say, so that loading it gives the reason.
fn newest_with_figures(cfg: &Config) -> String {
    let newest = || -> Option<String> {
        let (location, explicit) = cfg.history_location().ok()??;
        let history = crate::store::open_read_only(&location, explicit, "").ok()?;
        let runs = history.list().ok()?;
        runs.into_iter()
            .find(|r| r.billed().is_none())
            .map(|r| r.run_id)
    };
    newest().unwrap_or_else(|| "latest".into())
}
