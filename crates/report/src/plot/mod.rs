//! Figures drawn from a result, as SVG: hand-written, so the same result always gives the same
//! bytes (pinned by snapshot tests) and no font or drawing library is needed.
//!
//! Adding one is a function here from an experiment's result to its [`Plot`]s and one line in
//! `PLOTS`. Like the views, a plot reads the model only; it never measures.

pub mod svg;
pub mod timeline;

use oscost_model::ExperimentResult;

/// One figure: the stem of its file name (a case id) and the SVG document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plot {
    /// Names the file: `<name>.svg`.
    pub name: String,
    /// The whole SVG document.
    pub svg: String,
}

/// Each experiment's plot function, one line per experiment that draws any.
type PlotFn = fn(&ExperimentResult) -> Vec<Plot>;
const PLOTS: &[(&str, PlotFn)] = &[("timeline", timeline::plots)];

/// The plots of experiment `e`; none for most experiments.
pub fn plots(e: &ExperimentResult) -> Vec<Plot> {
    PLOTS
        .iter()
        .filter(|(name, _)| *name == e.name)
        .flat_map(|(_, f)| f(e))
        .collect()
}

/// A file name made of `stem` and `ext`: characters other than letters, digits, `.`, `_` and
/// `-` become `_`, so a case id can never name a path elsewhere.
pub fn file_name(stem: &str, ext: &str) -> String {
    let safe: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let safe = safe.trim_start_matches('.');
    format!("{}.{ext}", if safe.is_empty() { "_" } else { safe })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_stay_in_their_directory() {
        assert_eq!(
            file_name("timeline.processes.n2", "svg"),
            "timeline.processes.n2.svg"
        );
        assert_eq!(file_name("../x/y", "csv"), "_x_y.csv");
        assert_eq!(file_name("..", "svg"), "_.svg");
    }
}
