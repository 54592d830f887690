//! Which experiment: one enum for measure's registry and report's per-experiment table, so
//! that an experiment added here and forgotten on either side is a compile error there.
//!
//! A result document still names its experiment by string ([`ExperimentResult::name`]), so
//! documents read as before and one from a newer version, naming an experiment this one does
//! not know, still reads: [`ExperimentId::from_name`] is then `None`.
//!
//! [`ExperimentResult::name`]: crate::ExperimentResult::name

use std::fmt;

/// Declares the enum, its names and [`ExperimentId::ALL`] from one list, so that no variant
/// can be left out of `ALL`.
macro_rules! experiment_ids {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// An experiment, as measure registers it and report draws it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ExperimentId {
            $($(#[$doc])* $variant,)*
        }

        impl ExperimentId {
            /// Every experiment, in display order (the registry's order).
            pub const ALL: &'static [ExperimentId] = &[$(ExperimentId::$variant,)*];

            /// Its name: the subcommand, the first part of its case ids, and what a result
            /// document calls it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ExperimentId::$variant => $name,)*
                }
            }
        }
    };
}

experiment_ids! {
    /// `syscall`: common system calls, per call.
    Syscall => "syscall",
    /// `fs`: file calls served by the kernel and by a FUSE program.
    Fs => "fs",
    /// `primitives`: wake-up and locking primitives, uncontended.
    Primitives => "primitives",
    /// `switch`: a ping-pong round trip between two tasks.
    Switch => "switch",
    /// `ring`: tokens passed round a ring of tasks.
    Ring => "ring",
    /// `lockring`: mutexes handed round a ring of threads.
    Lockring => "lockring",
    /// `split`: the same work split among N tasks.
    Split => "split",
    /// `spawn`: creating a task.
    Spawn => "spawn",
    /// `fault`: a page fault, by kind.
    Fault => "fault",
    /// `mmap`: mapping, unmapping, reading and writing memory, by size.
    Mmap => "mmap",
    /// `shootdown`: invalidating a page while other CPUs run the process.
    Shootdown => "shootdown",
    /// `net`: loopback sockets.
    Net => "net",
    /// `seccomp`: what a filter adds to a system call.
    Seccomp => "seccomp",
    /// `uring`: io_uring operations by batch.
    Uring => "uring",
    /// `poll`: readiness calls over N sockets.
    Poll => "poll",
    /// `timeline`: who ran when on one CPU.
    Timeline => "timeline",
    /// `tick`: what each timer event costs a running program.
    Tick => "tick",
    /// `tick-forms`: one flow, threads and processes under timer events.
    TickForms => "tick-forms",
    /// `noise`: the interruptions of a busy loop.
    Noise => "noise",
    /// `wakeup`: how late a sleeping thread is woken.
    Wakeup => "wakeup",
    /// `signal`: installing, catching and waking by a signal.
    Signal => "signal",
    /// `cgroup`: starting a task inside a cgroup.
    Cgroup => "cgroup",
    /// `ns`: making and tearing down namespaces.
    Ns => "ns",
    /// `example`: scripted costs (tests only).
    Example => "example",
    /// `example-more`: the example at other costs (tests only).
    ExampleMore => "example-more",
    /// `example-fails`: fails on purpose (tests only).
    ExampleFails => "example-fails",
}

impl ExperimentId {
    /// The experiment called `name`, or `None` for a name this version does not know (a
    /// document from a newer one).
    pub fn from_name(name: &str) -> Option<ExperimentId> {
        Self::ALL.iter().copied().find(|id| id.as_str() == name)
    }
}

impl fmt::Display for ExperimentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        for (i, id) in ExperimentId::ALL.iter().enumerate() {
            assert_eq!(ExperimentId::from_name(id.as_str()), Some(*id));
            assert_eq!(id.to_string(), id.as_str());
            assert_eq!(*id as usize, i, "ALL in declaration order");
        }
        assert_eq!(ExperimentId::from_name("nosuch"), None);
        assert_eq!(ExperimentId::from_name(""), None);
    }
}
