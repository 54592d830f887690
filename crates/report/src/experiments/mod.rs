//! What report adds for each experiment: its views (tables under its case table) and its
//! figures, in one table keyed by the experiment's name. Every registered experiment has an
//! entry, an empty one when the common tables and the per-case distributions say all there is;
//! a test of the binary holds the table against measure's registry (report cannot see it), so
//! a new or renamed experiment without its entry fails there, by name.
//!
//! Adding views or figures to an experiment is a file under [`crate::views`] or
//! [`crate::plot`] and its function named in the experiment's entry here.

use crate::plot::{self, Plot};
use crate::views::{self, View};
use oscost_model::ExperimentResult;

/// The views of one experiment's result: tables in display order.
pub type ViewFn = fn(&ExperimentResult) -> Vec<View>;

/// The figures of one experiment's result, beside the samples every experiment gets drawn.
pub type PlotFn = fn(&ExperimentResult) -> Vec<Plot>;

/// One experiment's own parts of a report.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The experiment's name, as registered in measure.
    pub name: &'static str,
    /// Its view functions, their tables shown in this order.
    pub views: &'static [ViewFn],
    /// Its figure functions, their figures written in this order.
    pub plots: &'static [PlotFn],
}

/// Every experiment's entry, in the registry's order.
pub const TABLE: &[Entry] = &[
    Entry {
        name: "syscall",
        views: &[],
        plots: &[],
    },
    Entry {
        name: "fs",
        views: &[views::fs::views],
        plots: &[],
    },
    Entry {
        name: "primitives",
        views: &[],
        plots: &[],
    },
    Entry {
        name: "switch",
        views: &[views::switch::views],
        plots: &[plot::switch_cost::plots, plot::switch_stages::plots],
    },
    Entry {
        name: "ring",
        views: &[],
        plots: &[plot::ring::plots],
    },
    Entry {
        name: "lockring",
        views: &[],
        plots: &[],
    },
    Entry {
        name: "split",
        views: &[views::split::views],
        plots: &[plot::split::plots],
    },
    Entry {
        name: "spawn",
        views: &[views::spawn::views],
        plots: &[plot::spawn::plots],
    },
    Entry {
        name: "fault",
        views: &[],
        plots: &[plot::memory::fault_plots],
    },
    Entry {
        name: "mmap",
        views: &[],
        plots: &[],
    },
    Entry {
        name: "shootdown",
        views: &[],
        plots: &[plot::memory::shootdown_plots],
    },
    Entry {
        name: "net",
        views: &[views::net::views],
        plots: &[plot::io::net_plots],
    },
    Entry {
        name: "seccomp",
        views: &[],
        plots: &[plot::seccomp::plots],
    },
    Entry {
        name: "uring",
        views: &[],
        plots: &[plot::io::uring_plots],
    },
    Entry {
        name: "poll",
        views: &[],
        plots: &[plot::io::poll_plots],
    },
    Entry {
        name: "timeline",
        views: &[views::timeline::views],
        plots: &[plot::timeline::plots],
    },
    Entry {
        name: "tick",
        views: &[views::tick::views],
        plots: &[plot::tick::plots],
    },
    Entry {
        name: "tick-forms",
        views: &[views::tick_forms::views],
        plots: &[],
    },
    Entry {
        name: "noise",
        views: &[views::noise::views],
        plots: &[plot::noise::plots],
    },
    Entry {
        name: "wakeup",
        views: &[views::wakeup::views],
        plots: &[plot::wakeup::plots],
    },
    Entry {
        name: "signal",
        views: &[],
        plots: &[],
    },
    Entry {
        name: "cgroup",
        views: &[],
        plots: &[plot::isolation::cgroup_plots],
    },
    Entry {
        name: "ns",
        views: &[],
        plots: &[plot::isolation::ns_plots],
    },
    Entry {
        name: "example",
        views: &[],
        plots: &[],
    },
    Entry {
        name: "example-more",
        views: &[],
        plots: &[],
    },
    Entry {
        name: "example-fails",
        views: &[],
        plots: &[],
    },
];

/// The views of experiment `e`, in display order; none for most experiments.
pub fn views(e: &ExperimentResult) -> Vec<View> {
    entry(&e.name)
        .map_or(&[][..], |x| x.views)
        .iter()
        .flat_map(|f| f(e))
        .collect()
}

/// The plots of experiment `e`: its own figures first, then its samples case by case.
pub fn plots(e: &ExperimentResult) -> Vec<Plot> {
    entry(&e.name)
        .map_or(&[][..], |x| x.plots)
        .iter()
        .flat_map(|f| f(e))
        .chain(plot::distribution::plots(e))
        .collect()
}

/// The entry of the experiment named `name`, if it has one.
pub fn entry(name: &str) -> Option<&'static Entry> {
    TABLE.iter().find(|e| e.name == name)
}

/// The experiments that draw figures of their own (besides every experiment's samples), in
/// the registry's order: what `--svg` draws beyond the distributions.
pub fn with_figures() -> impl Iterator<Item = &'static str> {
    TABLE.iter().filter(|e| !e.plots.is_empty()).map(|e| e.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_experiment_has_one_entry() {
        let mut names: Vec<&str> = TABLE.iter().map(|e| e.name).collect();
        names.sort_unstable();
        let len = names.len();
        names.dedup();
        assert_eq!(names.len(), len, "an experiment has two entries");
    }

    #[test]
    fn the_experiments_with_figures_are_named_in_order() {
        let names: Vec<&str> = with_figures().collect();
        assert_eq!(
            names,
            [
                "switch",
                "ring",
                "split",
                "spawn",
                "fault",
                "shootdown",
                "net",
                "seccomp",
                "uring",
                "poll",
                "timeline",
                "tick",
                "noise",
                "wakeup",
                "cgroup",
                "ns"
            ]
        );
    }
}
