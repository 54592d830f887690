//! Experiment-specific readings of a result: tables that only make sense for one experiment
//! (a sweep's overhead against its baseline, a timeline's CPU shares), computed from the
//! summarised cases and shown under the experiment's case table.
//!
//! Adding one is a file here with a `views(&ExperimentResult) -> Vec<View>` function and one
//! line in `VIEWS`. A view reads the model only; it never measures.

use oscost_model::ExperimentResult;

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

/// Each experiment's view function, one line per experiment that has views.
type ViewFn = fn(&ExperimentResult) -> Vec<View>;
const VIEWS: &[(&str, ViewFn)] = &[
    ("fs", fs::views),
    ("split", split::views),
    ("spawn", spawn::views),
    ("timeline", timeline::views),
    ("tick", tick::views),
    ("tick-forms", tick_forms::views),
    ("noise", noise::views),
    ("switch", switch::views),
];

/// The names of the experiments that have views of their own: a test holds them against the
/// experiment registry, so that renaming an experiment cannot silently drop its tables.
pub fn experiments_with_views() -> impl Iterator<Item = &'static str> {
    VIEWS.iter().map(|(name, _)| *name)
}

/// The views of experiment `e`, in display order; none for most experiments.
pub fn views(e: &ExperimentResult) -> Vec<View> {
    VIEWS
        .iter()
        .filter(|(name, _)| *name == e.name)
        .flat_map(|(_, f)| f(e))
        .collect()
}
