//! References of the address space: mappings, page faults, TLB shootdowns.

use super::super::entry::{Cpus, Entry, Reference, Run, BASE, RUN};

/// `cargo xtask vs shootdown`.
pub const SHOOTDOWN: Entry = Entry {
    name: "shootdown",
    about: "munmap and mprotect with the process's other thread on another CPU or none, \
            spinning or asleep (benches/shootdown_ref.c)",
    reference: Reference::C("benches/shootdown_ref.c"),
    cflags: &["-pthread"],
    cpus: Cpus::Two,
    c_samples: [81, 15],
    taskset: false,
    runs: &[Run {
        c: &[
            &["-a", "{a}", "-b", "{b}", "-o", "0", "-s", "{s}"],
            &[
                "-a", "{a}", "-b", "{b}", "-o", "1", "-m", "spin", "-s", "{s}",
            ],
            &[
                "-a", "{a}", "-b", "{b}", "-o", "1", "-m", "sleep", "-s", "{s}",
            ],
        ],
        oscost: &["shootdown"],
        ..RUN
    }],
    show: &["tlb_interrupts_other_cpus_per_op"],
    ..BASE
};

/// `cargo xtask vs mmap`.
pub const MMAP: Entry = Entry {
    name: "mmap",
    about: "mmap + munmap of 1 to 10 000 pages, untouched and touched (benches/mmap_ref.c)",
    reference: Reference::C("benches/mmap_ref.c"),
    c_samples: [81, 15],
    runs: &[Run {
        c: &[&["-s", "{s}", "-p", "1,10,1000,10000"]],
        oscost: &["mmap", "--pages", "1,10,1000,10000"],
        ..RUN
    }],
    ..BASE
};

/// One fault kind alone on both sides, for the alternation.
macro_rules! fault_one {
    ($kind:literal) => {
        Run {
            c: &[&["-p", "{q:1024:256}", "-s", "{s}", "-k", $kind]],
            oscost: &["fault", "--kinds", $kind, "--pages", "{q:1024:256}"],
            only: Some(concat!("fault.", $kind)),
            ..RUN
        }
    };
}

/// `cargo xtask vs fault`.
pub const FAULT: Entry = Entry {
    name: "fault",
    about: "page faults of every kind oscost times: anonymous, file, copy-on-write, THP, \
            major (benches/fault_ref.c)",
    reference: Reference::C("benches/fault_ref.c"),
    c_samples: [81, 15],
    runs: &[Run {
        c: &[&[
            "-p",
            "{q:1024:256}",
            "-s",
            "{s}",
            "-k",
            "anon-write,anon-read,file-read,file-write-shared,cow,thp,file-major",
        ]],
        oscost: &[
            "fault",
            "--kinds",
            "anon-write,anon-read,file-read,file-write-shared,cow,thp,file-major",
            "--pages",
            "{q:1024:256}",
        ],
        ..RUN
    }],
    show: &["minor_faults_per_op", "major_faults_per_op"],
    // A fault's cost moves with what the host has behind the guest's memory (a huge page's
    // first touch may wait on the host): the kinds whose ratio moved between sittings, one
    // kind a run, with the two programs' samples taken in turn.
    alternate: &[fault_one!("thp"), fault_one!("anon-read")],
    ..BASE
};
