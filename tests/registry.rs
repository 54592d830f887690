//! The experiment registry and the report's tables and figures, keyed by experiment name,
//! agree: renaming an experiment without its views or plots would silently drop them.

use oscost_measure::experiments::REGISTRY;
use std::collections::BTreeSet;

/// Experiments read in the common tables alone: no view of their own.
const WITHOUT_VIEWS: &[&str] = &[
    "syscall",
    "fault",
    "mmap",
    "shootdown",
    "primitives",
    "ring",
    "lockring",
    "example",
    "example-more",
    "example-fails",
];

/// Experiments shown by the per-case distributions alone: no figure of their own.
const WITHOUT_PLOTS: &[&str] = &[
    "syscall",
    "mmap",
    "fs",
    "primitives",
    "lockring",
    "tick-forms",
    "example",
    "example-more",
    "example-fails",
];

/// Every registered experiment is either keyed in `with` or listed in `without`, never both,
/// and neither names an experiment that is not registered.
fn covers(what: &str, with: impl Iterator<Item = &'static str>, without: &[&str]) {
    let registered: BTreeSet<&str> = REGISTRY.iter().map(|e| e.name).collect();
    let with: BTreeSet<&str> = with.collect();
    let without: BTreeSet<&str> = without.iter().copied().collect();
    for name in with.iter().chain(&without) {
        assert!(
            registered.contains(name),
            "{what}: `{name}` is no registered experiment"
        );
    }
    for name in &registered {
        assert!(
            with.contains(name) != without.contains(name),
            "{what}: `{name}` must have them or be listed as having none (not both)"
        );
    }
}

#[test]
fn every_experiment_has_its_views_or_says_it_has_none() {
    covers(
        "views",
        oscost_report::views::experiments_with_views(),
        WITHOUT_VIEWS,
    );
}

#[test]
fn every_experiment_has_its_plots_or_says_it_has_none() {
    covers(
        "plots",
        oscost_report::plot::experiments_with_plots(),
        WITHOUT_PLOTS,
    );
}
