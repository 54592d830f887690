//! `oscost datasheet [RUN [RUN]]`: the one-screen sheet of what the OS costs a program, for a
//! saved run or a result file, or two side by side.

use crate::config::Config;
use crate::inputs::{load_run, names_a_file, read_result_file};
use crate::stdout::print_stdout;
use std::path::Path;
use std::process::ExitCode;

/// Prints the datasheet of a run: a result file written by `--json`, or a run of the history
/// (when none is named, the newest with a datasheet's worth: see [`default_sheet`]); of two,
/// both side by side, the first the reference.
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
        [] => {
            let (sheet, which) = default_sheet(cfg, &sheet)?;
            let mut text = sheet.render(width);
            if let Some(which) = which {
                text += &oscost_report::export::terminal::wrap(&which, width, 0);
            }
            text
        }
        [one] => sheet(one)?.render(width),
        [a, b, ..] => oscost_report::datasheet::side_by_side(&sheet(a)?, &sheet(b)?, width),
    };
    print_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs looked at, newest first, for one with a datasheet's worth.
const LOOK_BACK: usize = 20;

/// The sheet `datasheet` with no run shows: the newest run (of the last [`LOOK_BACK`] with
/// figures) that holds at least a third of the costs a sheet can, so that a single experiment run
/// after a suite does not leave one line; else the newest run with figures. With a line that
/// names the run shown when it is not the newest, or when it holds less than a third.
fn default_sheet(
    cfg: &Config,
    sheet: &dyn Fn(&str) -> anyhow::Result<oscost_report::datasheet::Datasheet>,
) -> anyhow::Result<(oscost_report::datasheet::Datasheet, Option<String>)> {
    let most = oscost_report::datasheet::most_lines();
    let ids = runs_with_figures(cfg);
    let Some(newest) = ids.first() else {
        return Ok((sheet("latest")?, None));
    };
    let first = sheet(newest)?;
    if first.lines.len() * 3 >= most {
        return Ok((first, None));
    }
    for id in ids.iter().skip(1) {
        let Ok(s) = sheet(id) else { continue };
        if s.lines.len() * 3 >= most {
            let (id, newest) = (short(id), short(newest));
            let which = format!(
                "run {id}, the newest with a third of the costs or more ({} of {most}); the \
                 newest run, {newest}, has {}: `oscost datasheet {newest}`",
                s.lines.len(),
                first.lines.len()
            );
            return Ok((s, Some(which)));
        }
    }
    let which = format!(
        "run {} measured {} of the {most} costs; `oscost --quick` (a quick suite) measures \
         the rest",
        short(newest),
        first.lines.len()
    );
    Ok((first, Some(which)))
}

/// A run id as `history list` shows it: its first 8 characters.
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// The newest [`LOOK_BACK`] runs of the history that hold figures (a bill holds none), newest
/// first; none when the history cannot say, so that loading `latest` gives the reason.
fn runs_with_figures(cfg: &Config) -> Vec<String> {
    let runs = || -> Option<Vec<String>> {
        let (location, explicit) = cfg.history_location().ok()??;
        let history = crate::store::open_read_only(&location, explicit, "").ok()?;
        let runs = history.list().ok()?;
        Some(
            runs.into_iter()
                .filter(|r| r.billed().is_none())
                .take(LOOK_BACK)
                .map(|r| r.run_id)
                .collect(),
        )
    };
    runs().unwrap_or_default()
}
