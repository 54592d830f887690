//! The renderers' first entry points, kept as thin calls into [`crate::export`], where each
//! format has its exporter; and the summaries of warnings by kind that the terminal and the
//! notes column share.

use crate::export::{self, ExportOptions};
use oscost_model::schema::{CaseResult, ExperimentResult, ResultDoc};

mod warnings;

pub use crate::export::Warnings;
pub use crate::format::fmt_ns;
pub use crate::layout::{layout_width, terminal_width, wrap, wrap_words};

/// A case's kinds of warning, as its notes column names them.
pub(crate) fn warning_tags(c: &CaseResult) -> Vec<String> {
    warnings::tags(c)
}

/// An experiment's per-case warnings summarised by kind (each case's own text too, when
/// `full`), as the terminal prints them.
pub(crate) fn warning_summary(e: &ExperimentResult, full: bool) -> Vec<(String, Vec<String>)> {
    warnings::summary(e, warnings::Of::Warnings, full)
}

/// An experiment's per-case notes summarised by kind, as [`warning_summary`] does warnings.
pub(crate) fn note_summary(e: &ExperimentResult, full: bool) -> Vec<(String, Vec<String>)> {
    warnings::summary(e, warnings::Of::Notes, full)
}

/// The terminal view of one experiment: its table, derived figures, unavailable cases and
/// warnings summarised by kind. `tick_unit` names the counter column (`ref-cycles` for the
/// TSC); `width` is the terminal's width (`None`: the tables' natural width).
pub fn terminal(e: &ExperimentResult, tick_unit: &str, width: Option<u16>) -> String {
    terminal_with(e, tick_unit, width, Warnings::Summary)
}

/// [`terminal`] with the warnings printed as `warnings` says: [`export::terminal::experiment`].
pub fn terminal_with(
    e: &ExperimentResult,
    tick_unit: &str,
    width: Option<u16>,
    warnings: Warnings,
) -> String {
    let opts = ExportOptions {
        width,
        warnings,
        label: None,
    };
    export::terminal::experiment(e, tick_unit, &opts)
}

/// An experiment's extra table for the terminal: [`export::terminal::view`].
pub fn view_table(v: &crate::views::View, width: Option<u16>) -> String {
    export::terminal::view(v, width)
}

/// The whole document as Markdown tables: [`export::Markdown`].
pub fn markdown(doc: &ResultDoc) -> String {
    export::markdown::markdown(doc)
}

/// One CSV row per case: [`export::Csv`].
pub fn csv(doc: &ResultDoc) -> anyhow::Result<String> {
    export::csv::csv(doc)
}

/// The document as pretty JSON: [`export::Json`].
pub fn json(doc: &ResultDoc) -> anyhow::Result<String> {
    export::json::json(doc)
}
