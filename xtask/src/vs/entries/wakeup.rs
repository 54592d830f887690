//! `wakeup`'s idle cases against a C loop of the same sleeps (`benches/wakeup_ref.c`), whose
//! wake-ups can be taken in turns with oscost's: cyclictest cannot take turns, and an idle
//! CPU's wake-up time moves with what ran on the machine before, between sittings.

use super::super::entry::{Entry, Read, Reference, Run, BASE, RUN};

/// One policy's idle case on both sides: 1 ms, the same count, oscost without its traced pass.
macro_rules! idle {
    ($policy:literal, $root:literal) => {
        Run {
            c: &[&[
                "-c",
                "{a}",
                "-n",
                "{q:5000:500}",
                "-i",
                "1000",
                "-p",
                $policy,
            ]],
            oscost: &[
                "wakeup",
                "--period",
                "1000us",
                "--wakeups",
                "{q:5000:500}",
                "--policies",
                $policy,
                "--no-kernel-view",
            ],
            root: $root,
            ..RUN
        }
    };
}

/// `cargo xtask vs wakeup`.
pub const WAKEUP: Entry = Entry {
    name: "wakeup",
    about: "a thread sleeping to an absolute time every 1 ms on one idle CPU, SCHED_OTHER (and \
            SCHED_FIFO as root): the lateness's p50 and p99 in whole µs, against a C loop of \
            the same sleeps (benches/wakeup_ref.c) that can take turns with oscost",
    reference: Reference::C("benches/wakeup_ref.c"),
    cflags: &["-pthread"],
    idle_poll: true,
    // Both pin their sleeping thread themselves (oscost's --cpus, the C program's -c).
    taskset: false,
    runs: &[idle!("other", false), idle!("fifo", true)],
    read: &[Read::WholeUsPercentiles],
    // The SCHED_OTHER tail moved between sittings beside cyclictest: both programs' wake-ups
    // taken in turns of 25.
    alternate: &[idle!("other", false), idle!("fifo", true)],
    ..BASE
};
