//! The first entry points of the terminal, Markdown and CSV renderings, kept as thin calls
//! into [`crate::export`], where each format has its exporter: the snapshots pinned in
//! `tests/golden.rs` name them.

use crate::export::{self, ExportOptions};
use oscost_model::schema::{ExperimentResult, ResultDoc};

/// The terminal view of one experiment with its warnings summarised by kind:
/// [`export::terminal::experiment`]. `tick_unit` names the counter column (`ref-cycles` for
/// the TSC); `width` is the terminal's width (`None`: the tables' natural width).
pub fn terminal(e: &ExperimentResult, tick_unit: &str, width: Option<u16>) -> String {
    let opts = ExportOptions {
        width,
        ..ExportOptions::default()
    };
    export::terminal::experiment(e, tick_unit, &opts)
}

/// The whole document as Markdown tables: [`export::Markdown`].
pub fn markdown(doc: &ResultDoc) -> String {
    export::markdown::markdown(doc)
}

/// One CSV row per case: [`export::Csv`].
pub fn csv(doc: &ResultDoc) -> anyhow::Result<String> {
    export::csv::csv(doc)
}
