//! The registry of experiments, in display order.
//!
//! Each experiment is one module whose `Options` type implements [`Experiment`]. Adding one is a
//! new file plus one line in the `registry!` call below (and its `pub mod`). What experiments
//! share lives in [`crate::engine`]; no experiment imports another.

use crate::engine::registry;
pub use crate::engine::{parse_time, Experiment, ExperimentInfo};

pub mod cgroup;
pub mod example;
pub mod fault;
pub mod fs;
pub mod lockring;
pub mod mmap;
pub mod net;
pub mod noise;
pub mod ns;
pub mod poll;
pub mod primitives;
pub mod ring;
pub mod seccomp;
pub mod shootdown;
pub mod signal;
pub mod spawn;
pub mod split;
pub mod switch;
pub mod syscall;
pub mod tick;
pub mod tick_forms;
pub mod timeline;
pub mod uring;
pub mod wakeup;

registry! {
    Syscall => syscall::Options,
    Fs => fs::Options,
    Primitives => primitives::Options,
    Switch => switch::Options,
    Ring => ring::Options,
    Lockring => lockring::Options,
    Split => split::Options,
    Spawn => spawn::Options,
    Fault => fault::Options,
    Mmap => mmap::Options,
    Shootdown => shootdown::Options,
    Net => net::Options,
    Seccomp => seccomp::Options,
    Uring => uring::Options,
    Poll => poll::Options,
    Timeline => timeline::Options,
    Tick => tick::Options,
    TickForms => tick_forms::Options,
    Noise => noise::Options,
    Wakeup => wakeup::Options,
    Signal => signal::Options,
    Cgroup => cgroup::Options,
    Ns => ns::Options,
    Example => example::Options,
    ExampleMore => example::More,
    ExampleFails => example::Failing,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quick_suite_runs_each_experiment_at_its_quick_size() {
        // The suite's own sizes are given as options, which --quick would not shrink.
        let Some(ExperimentArgs::Noise(suite)) = ExperimentArgs::in_suite(noise::NAME, false)
        else {
            panic!("noise")
        };
        assert_eq!(suite.duration_ns, Some(1_000_000_000));
        let Some(ExperimentArgs::Noise(quick)) = ExperimentArgs::in_suite(noise::NAME, true) else {
            panic!("noise")
        };
        assert_eq!(quick.duration_ns, None);
        let Some(ExperimentArgs::Ring(quick)) = ExperimentArgs::in_suite(ring::NAME, true) else {
            panic!("ring")
        };
        assert!(quick.tasks.is_none());
        assert!(ExperimentArgs::in_suite("nosuch", true).is_none());
    }

    #[test]
    fn names_are_unique_well_formed_and_documented() {
        let mut seen = std::collections::BTreeSet::new();
        for e in REGISTRY {
            assert!(seen.insert(e.name), "duplicate {}", e.name);
            assert!(e.name.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
            assert!(!e.summary.is_empty());
            assert!(ExperimentArgs::with_defaults(e.name).is_some());
            let doc = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/methodology.md");
            let text = std::fs::read_to_string(doc).expect("docs/methodology.md");
            assert!(
                e.hidden || text.contains(&format!("## `{}`", e.name)),
                "{} undocumented",
                e.name
            );
            assert!(
                !(e.hidden && e.in_default_suite),
                "{} hidden but in the suite",
                e.name
            );
        }
    }
}
