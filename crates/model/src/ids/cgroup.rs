//! `cgroup`: starting a task inside a cgroup, and a ping-pong within one cgroup or across two.

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Cgroup.as_str();

/// `cgroup.fork`: fork, the child ends, the parent waits, all in the parent's cgroup.
pub const FORK: &str = "cgroup.fork";
/// `cgroup.fork-procs`: the same child writes itself into a new cgroup's `cgroup.procs` first.
pub const FORK_PROCS: &str = "cgroup.fork-procs";
/// `cgroup.clone3`: the child made inside the new cgroup by `clone3(CLONE_INTO_CGROUP)`.
pub const CLONE3: &str = "cgroup.clone3";
/// `cgroup.pipe.same`: a pipe round trip between two processes of one cgroup, on one CPU.
pub const PIPE_SAME: &str = "cgroup.pipe.same";
/// `cgroup.pipe.cross`: the same round trip between processes of two sibling cgroups.
pub const PIPE_CROSS: &str = "cgroup.pipe.cross";

/// Every case id `cgroup` writes, in order.
pub const CASES: [&str; 5] = [FORK, FORK_PROCS, CLONE3, PIPE_SAME, PIPE_CROSS];

/// The derived figure of a case: `<case>.over_fork` (creating into a cgroup, less the plain
/// fork) or `cgroup.pipe.cross.over_same` (a round trip across cgroups, less one within).
pub fn derived(case: &str) -> Option<String> {
    match case {
        FORK_PROCS | CLONE3 => Some(format!("{case}.over_fork")),
        PIPE_CROSS => Some(format!("{case}.over_same")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_is_the_experiments() {
        for c in CASES {
            assert!(super::super::within(NAME, c).is_some(), "{c}");
        }
        assert_eq!(derived(CLONE3).unwrap(), "cgroup.clone3.over_fork");
        assert_eq!(derived(PIPE_CROSS).unwrap(), "cgroup.pipe.cross.over_same");
        assert_eq!(derived(FORK), None);
    }
}
