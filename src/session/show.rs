//! What a run prints as it goes: each experiment's tables, or a study's.

use crate::config::Config;
use crate::stdout::print_stdout;
use oscost_model::ResultDoc;
use oscost_report::export::brief;
use oscost_report::export::terminal::{self, layout_width};
use oscost_report::export::{write_plots, ExportOptions, Figures};

/// Prints an experiment's tables: to stdout, or to stderr when stdout carries a machine
/// format. Warnings are summarised by kind, printed in full with `--verbose`, left out with
/// `--quiet` (the result files keep them all). `brief` (a suite without `--verbose`): its
/// figures with their intervals and check marks only, the run's warnings left to
/// [`brief_tail`].
pub(super) fn show(
    cfg: &Config,
    result: &oscost_model::ExperimentResult,
    tick_unit: &str,
    brief: bool,
) -> anyhow::Result<()> {
    let opts = ExportOptions {
        width: table_width(cfg),
        warnings: cfg.warnings(),
        label: None,
    };
    let text = if brief {
        brief::experiment(result, opts.width)
    } else {
        terminal::experiment(result, tick_unit, &opts)
    };
    emit(cfg, &text)
}

/// What a brief run says once after its experiments: the cases refused for want of privilege,
/// their shared warnings and notes; with `--quiet`, the refusals alone (every case not
/// measured is said).
pub(super) fn brief_tail(cfg: &Config, doc: &ResultDoc) -> anyhow::Result<()> {
    let width = table_width(cfg);
    if cfg.quiet {
        emit(cfg, &brief::unprivileged(&doc.experiments, width))
    } else {
        emit(cfg, &brief::run_tail(&doc.experiments, width))
    }
}

/// `text` to stdout, or to stderr when stdout carries a machine format.
fn emit(cfg: &Config, text: &str) -> anyhow::Result<()> {
    if cfg.stdout_taken() {
        eprint!("{text}");
        Ok(())
    } else {
        print_stdout(text)
    }
}

/// Prints the run's datasheet (to stderr when stdout carries a machine format): the last
/// screen of a run, its answer.
pub(super) fn datasheet(cfg: &Config, doc: &ResultDoc) -> anyhow::Result<()> {
    let text = oscost_report::datasheet::datasheet(doc).render(table_width(cfg));
    let text = format!("\n{text}");
    if cfg.stdout_taken() {
        eprint!("{text}");
        Ok(())
    } else {
        print_stdout(&text)
    }
}

/// Prints a study's tables from the finished run (to stderr when stdout carries a machine
/// format) and writes its charts with `--svg`.
pub(super) fn show_study(cfg: &Config, name: &str, doc: &ResultDoc) -> anyhow::Result<Figures> {
    let mut n = Figures::default();
    let Some(study) = oscost_report::study::find(name) else {
        return Ok(n);
    };
    let width = table_width(cfg);
    let mut text = String::new();
    let tables = study.tables(Some(doc));
    for v in &tables {
        text += &terminal::view(v, width);
        text.push('\n');
    }
    // The study's cells carry marks; what the run's cases carried is said under them. Read
    // from the tables made above: the study's figures are not worked out a second time.
    let doubtful = tables
        .iter()
        .flat_map(|v| &v.rows)
        .flatten()
        .any(|cell| cell.ends_with(" ~"));
    if doubtful {
        text += &terminal::wrap(oscost_report::study::MARKS, width, 2);
    }
    if !cfg.quiet {
        text += &brief::quality(&doc.experiments, width);
    }
    if cfg.stdout_taken() {
        eprint!("{text}");
    } else {
        print_stdout(&text)?;
    }
    if let Some(dir) = &cfg.svg {
        n.plots += write_plots(dir, study.plots(Some(doc)))?;
    }
    Ok(n)
}

/// The width tables are laid out to (see [`layout_width`]): the terminal the tables go to,
/// standard error when standard output carries a file format.
pub(super) fn table_width(cfg: &Config) -> Option<u16> {
    layout_width(cfg.stdout_taken())
}
