//! What a run prints as it goes: each experiment's tables, or a study's.

use crate::config::Config;
use crate::output::Figures;
use crate::stdout::print_stdout;
use oscost_model::ResultDoc;
use oscost_report::render;

/// Prints an experiment's tables: to stdout, or to stderr when stdout carries a machine
/// format. Warnings are summarised by kind, printed in full with `--verbose`, left out with
/// `--quiet` (the result files keep them all).
pub(super) fn show(
    cfg: &Config,
    result: &oscost_model::ExperimentResult,
    tick_unit: &str,
) -> anyhow::Result<()> {
    let warnings = if cfg.quiet {
        render::Warnings::Hidden
    } else if cfg.verbose {
        render::Warnings::Full
    } else {
        render::Warnings::Summary
    };
    let text = render::terminal_with(result, tick_unit, table_width(cfg), warnings);
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
    for v in study.tables(Some(doc)) {
        text += &render::view_table(&v, width);
        text.push('\n');
    }
    if cfg.stdout_taken() {
        eprint!("{text}");
    } else {
        print_stdout(&text)?;
    }
    if let Some(dir) = &cfg.svg {
        for plot in study.plots(Some(doc)) {
            let path = dir.join(oscost_report::plot::file_name(&plot.name, "svg"));
            oscost_report::output::write_atomic(&path, &plot.svg)?;
            n.plots += 1;
        }
    }
    Ok(n)
}

/// The width tables are laid out to (see [`render::layout_width`]): the terminal the tables
/// go to, standard error when standard output carries a file format.
pub(super) fn table_width(cfg: &Config) -> Option<u16> {
    render::layout_width(cfg.stdout_taken())
}
