//! Figures drawn from a result, as SVG: hand-written, so the same result always gives the same
//! bytes (pinned by snapshot tests) and no font or drawing library is needed.
//!
//! Every experiment gets its samples drawn ([`distribution`]); an experiment with a figure of
//! its own adds a file here with a `plots(&ExperimentResult) -> Vec<Plot>` function, named in
//! the experiment's entry of the experiments table (`experiments::entry`). Like the views, a plot reads the
//! model only; it never measures.

pub mod bill;
pub mod chart;
pub mod datasheet;
pub mod distribution;
pub mod io;
pub mod isolation;
pub mod marks;
pub mod memory;
pub mod noise;
pub mod ring;
pub mod runs;
pub mod seccomp;
pub mod spawn;
pub mod split;
pub mod stacked;
pub mod svg;
pub mod switch_cost;
pub mod switch_stages;
pub mod tick;
pub mod timeline;
pub mod wakeup;

pub use runs::comparison_plots;

/// One figure: the stem of its file name (a case id) and the SVG document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plot {
    /// Names the file: `<name>.svg`.
    pub name: String,
    /// The whole SVG document.
    pub svg: String,
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
