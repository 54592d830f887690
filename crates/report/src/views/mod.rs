//! Experiment-specific readings of a result: tables that only make sense for one experiment
//! (a sweep's overhead against its baseline, a timeline's CPU shares), computed from the
//! summarised cases and shown under the experiment's case table.
//!
//! Adding one is a file here with a `views(&ExperimentResult) -> Vec<View>` function, named in
//! the experiment's entry of the experiments table (`experiments::TABLE`). A view reads the model only; it
//! never measures.

pub mod fs;
pub mod noise;
pub mod spawn;
pub mod split;
pub mod switch;
#[cfg(test)]
pub(crate) mod testkit;
pub mod tick;
pub mod tick_forms;
pub mod timeline;
pub mod wakeup;

/// One extra table: a title, a header, rows of already formatted cells, and lines of notes
/// printed under it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct View {
    /// Printed above the table.
    pub title: String,
    /// Column names; the first column is left-aligned, the others right-aligned.
    pub head: Vec<String>,
    /// Rows, each as long as `head`.
    pub rows: Vec<Vec<String>>,
    /// Lines printed under the table (what the columns mean, what was left out).
    pub notes: Vec<String>,
}
