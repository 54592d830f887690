//! What report adds for each experiment: its views (tables under its case table) and its
//! figures, in one exhaustive `match` on [`ExperimentId`]. Every experiment has an entry, an
//! empty one when the common tables and the per-case distributions say all there is; measure's
//! registry is keyed on the same enum, so an experiment added there and forgotten here is a
//! compile error.
//!
//! Adding views or figures to an experiment is a file under [`crate::views`] or
//! [`crate::plot`] and its function named in the experiment's entry here.

use crate::plot::{self, Plot};
use crate::views::{self, View};
use oscost_model::{ExperimentId, ExperimentResult};

/// The views of one experiment's result: tables in display order.
pub type ViewFn = fn(&ExperimentResult) -> Vec<View>;

/// The figures of one experiment's result, beside the samples every experiment gets drawn.
pub type PlotFn = fn(&ExperimentResult) -> Vec<Plot>;

/// One experiment's own parts of a report.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Its view functions, their tables shown in this order.
    pub views: &'static [ViewFn],
    /// Its figure functions, their figures written in this order.
    pub plots: &'static [PlotFn],
}

/// The experiment's entry: an exhaustive match, so an experiment added to [`ExperimentId`]
/// without one here does not compile.
pub fn entry(id: ExperimentId) -> Entry {
    match id {
        ExperimentId::Fs => Entry {
            views: &[views::fs::views],
            plots: &[],
        },
        ExperimentId::Switch => Entry {
            views: &[views::switch::views],
            plots: &[plot::switch_cost::plots, plot::switch_stages::plots],
        },
        ExperimentId::Ring => Entry {
            views: &[],
            plots: &[plot::ring::plots],
        },
        ExperimentId::Split => Entry {
            views: &[views::split::views],
            plots: &[plot::split::plots],
        },
        ExperimentId::Spawn => Entry {
            views: &[views::spawn::views],
            plots: &[plot::spawn::plots],
        },
        ExperimentId::Fault => Entry {
            views: &[],
            plots: &[plot::memory::fault_plots],
        },
        ExperimentId::Shootdown => Entry {
            views: &[],
            plots: &[plot::memory::shootdown_plots],
        },
        ExperimentId::Net => Entry {
            views: &[views::net::views],
            plots: &[plot::io::net_plots],
        },
        ExperimentId::Seccomp => Entry {
            views: &[],
            plots: &[plot::seccomp::plots],
        },
        ExperimentId::Uring => Entry {
            views: &[],
            plots: &[plot::io::uring_plots],
        },
        ExperimentId::Poll => Entry {
            views: &[],
            plots: &[plot::io::poll_plots],
        },
        ExperimentId::Timeline => Entry {
            views: &[views::timeline::views],
            plots: &[plot::timeline::plots],
        },
        ExperimentId::Tick => Entry {
            views: &[views::tick::views],
            plots: &[plot::tick::plots],
        },
        ExperimentId::TickForms => Entry {
            views: &[views::tick_forms::views],
            plots: &[],
        },
        ExperimentId::Noise => Entry {
            views: &[views::noise::views],
            plots: &[plot::noise::plots],
        },
        ExperimentId::Wakeup => Entry {
            views: &[views::wakeup::views],
            plots: &[plot::wakeup::plots],
        },
        ExperimentId::Cgroup => Entry {
            views: &[],
            plots: &[plot::isolation::cgroup_plots],
        },
        ExperimentId::Ns => Entry {
            views: &[],
            plots: &[plot::isolation::ns_plots],
        },
        ExperimentId::Syscall
        | ExperimentId::Primitives
        | ExperimentId::Lockring
        | ExperimentId::Mmap
        | ExperimentId::Signal
        | ExperimentId::Example
        | ExperimentId::ExampleMore
        | ExperimentId::ExampleFails => Entry {
            views: &[],
            plots: &[],
        },
    }
}

/// The views of experiment `e`, in display order; none for most experiments, and none for
/// an experiment this version does not know.
pub fn views(e: &ExperimentResult) -> Vec<View> {
    e.id()
        .map_or(&[][..], |id| entry(id).views)
        .iter()
        .flat_map(|f| f(e))
        .collect()
}

/// The plots of experiment `e`: its own figures first, then its samples case by case.
pub fn plots(e: &ExperimentResult) -> Vec<Plot> {
    e.id()
        .map_or(&[][..], |id| entry(id).plots)
        .iter()
        .flat_map(|f| f(e))
        .chain(plot::distribution::plots(e))
        .collect()
}

/// The experiments that draw figures of their own (besides every experiment's samples), in
/// the registry's order: what `--svg` draws beyond the distributions.
pub fn with_figures() -> impl Iterator<Item = &'static str> {
    ExperimentId::ALL
        .iter()
        .filter(|id| !entry(**id).plots.is_empty())
        .map(|id| id.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

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
