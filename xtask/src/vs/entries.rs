//! The references, one entry each: which C program in `benches/` holds which oscost
//! experiment, with which arguments, on which CPUs. Adding a reference is adding an entry.

use super::entry::{Cpus, Entry, Needs, Run};

/// Every entry, in `--list` order.
pub const ENTRIES: &[Entry] = &[
    SIGNAL, NET, SWITCH, URING, SECCOMP, SHOOTDOWN, POLL, MMAP, FAULT, NS,
];

/// The entry called `name`.
pub fn find(name: &str) -> Option<&'static Entry> {
    ENTRIES.iter().find(|e| e.name == name)
}

const SIGNAL: Entry = Entry {
    name: "signal",
    about: "sigaction, a caught signal, SIGSEGV, and a signal waking a thread or a process \
            on the same and another CPU (benches/signal_ref.c)",
    source: "benches/signal_ref.c",
    cflags: &["-pthread"],
    cpus: Cpus::Two,
    needs: Needs::Nothing,
    c_samples: [81, 10],
    c_quick: &[],
    taskset: false,
    idle_poll: true,
    runs: &[Run {
        c: &[&["-a", "{a}", "-b", "{b}", "-s", "{s}"]],
        oscost: &["signal"],
        only: None,
    }],
    derive: None,
    show: &[],
    alternate: &[
        Run {
            c: &[&["-a", "{a}", "-b", "{b}", "-s", "{s}", "-k", "wake.cross"]],
            oscost: &["signal", "--cases", "wake-cross"],
            only: None,
        },
        Run {
            c: &[&[
                "-a",
                "{a}",
                "-b",
                "{b}",
                "-s",
                "{s}",
                "-k",
                "wake.process.cross",
            ]],
            oscost: &["signal", "--cases", "wake-process-cross"],
            only: None,
        },
    ],
};

/// A cross-CPU `net` case held sample by sample.
macro_rules! net_cross {
    ($case:literal) => {
        Run {
            c: &[&["-a", "{a}", "-b", "{b}", "-s", "{s}", $case]],
            oscost: &["net", "--cases", $case, "--placement", "cross"],
            only: None,
        }
    };
}

const NET: Entry = Entry {
    name: "net",
    about: "1-byte round trips over TCP, UDP and AF_UNIX, TCP connections, 64 KiB streams \
            and LEBench's send + recv (benches/net_ref.c)",
    source: "benches/net_ref.c",
    cflags: &["-pthread"],
    cpus: Cpus::Two,
    needs: Needs::Nothing,
    c_samples: [81, 10],
    c_quick: &["-q"],
    taskset: false,
    idle_poll: true,
    runs: &[Run {
        c: &[
            &["-a", "{a}", "-b", "{a}", "-s", "{s}", "-c"],
            &["-a", "{a}", "-b", "{b}", "-s", "{s}"],
        ],
        oscost: &["net", "--placement", "same,cross"],
        only: None,
    }],
    derive: None,
    show: &[],
    alternate: &[
        net_cross!("tcp.rtt"),
        net_cross!("udp.rtt"),
        net_cross!("unix.rtt"),
        net_cross!("unix-dgram.rtt"),
        net_cross!("tcp.bw"),
        net_cross!("unix.bw"),
        net_cross!("pipe.bw"),
    ],
};

/// A cross-CPU `switch` case held sample by sample.
macro_rules! switch_cross {
    ($kind:literal) => {
        Run {
            c: &[&[
                "-a", "{a}", "-b", "{b}", "-s", "{s}", "-k", $kind, "-p", "cross",
            ]],
            oscost: &[
                "switch",
                "--via",
                "pipe",
                "--kind",
                $kind,
                "--placement",
                "cross",
                "--no-kernel-view",
            ],
            only: Some(".cross"),
        }
    };
}

const SWITCH: Entry = Entry {
    name: "switch",
    about: "a 1-byte pipe ping-pong between two threads or two processes on one CPU and on \
            two (benches/switch_ref.c)",
    source: "benches/switch_ref.c",
    cflags: &["-pthread"],
    cpus: Cpus::Two,
    needs: Needs::Nothing,
    c_samples: [81, 10],
    c_quick: &["-q"],
    taskset: false,
    idle_poll: true,
    runs: &[Run {
        c: &[&["-a", "{a}", "-b", "{b}", "-s", "{s}"]],
        oscost: &[
            "switch",
            "--via",
            "pipe",
            "--kind",
            "threads,processes",
            "--placement",
            "same,cross",
            "--no-kernel-view",
        ],
        only: None,
    }],
    derive: None,
    show: &["switches_per_round_trip", "migrations"],
    alternate: &[switch_cross!("threads"), switch_cross!("processes")],
};

const URING: Entry = Entry {
    name: "uring",
    about: "io_uring nops and reads at several batches, registered or not, beside the plain \
            system call, and SQPOLL's nop (benches/uring_ref.c)",
    source: "benches/uring_ref.c",
    cflags: &[],
    cpus: Cpus::Two,
    needs: Needs::Nothing,
    c_samples: [81, 10],
    c_quick: &[],
    taskset: false,
    idle_poll: false,
    runs: &[Run {
        c: &[&["-a", "{a}", "-b", "{b}", "-s", "{s}"]],
        oscost: &["uring"],
        only: None,
    }],
    derive: Some(over_unregistered),
    show: &["io_uring_enter_per_op", "poller_cpu_share"],
    // Not alternated: a SQPOLL thread keeps polling for its idle time after its process stops
    // submitting, so the side waiting its turn would poll on the CPU of the other's poller.
    alternate: &[],
};

const SECCOMP: Entry = Entry {
    name: "seccomp",
    about: "system calls under no filter, an allow-all filter, Docker's profile and a user \
            notifier (benches/seccomp_ref.c)",
    source: "benches/seccomp_ref.c",
    cflags: &[],
    cpus: Cpus::Two,
    needs: Needs::Nothing,
    c_samples: [81, 10],
    c_quick: &[],
    taskset: false,
    idle_poll: false,
    runs: &[Run {
        c: &[&["-c", "{a}", "-C", "{b}", "-s", "{s}", "-m", "{q:4000:1000}"]],
        oscost: &["seccomp"],
        only: None,
    }],
    derive: Some(seccomp_over_none),
    show: &[],
    alternate: &[],
};

const SHOOTDOWN: Entry = Entry {
    name: "shootdown",
    about: "munmap and mprotect with the process's other thread on another CPU or none, \
            spinning or asleep (benches/shootdown_ref.c)",
    source: "benches/shootdown_ref.c",
    cflags: &["-pthread"],
    cpus: Cpus::Two,
    needs: Needs::Nothing,
    c_samples: [81, 15],
    c_quick: &[],
    taskset: false,
    idle_poll: false,
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
        only: None,
    }],
    derive: None,
    show: &["tlb_interrupts_other_cpus_per_op"],
    alternate: &[],
};

const POLL: Entry = Entry {
    name: "poll",
    about: "select, poll and epoll_wait over 10 and 1 000 ready sockets at the lowest \
            descriptors, and select over ten high ones (benches/poll_ref.c)",
    source: "benches/poll_ref.c",
    cflags: &[],
    cpus: Cpus::One,
    needs: Needs::Nothing,
    c_samples: [81, 10],
    c_quick: &[],
    taskset: false,
    idle_poll: false,
    runs: &[
        Run {
            c: &[&["-a", "{a}", "-n", "10,1000", "-s", "{s}"]],
            oscost: &["poll", "--fds", "10,1000"],
            only: None,
        },
        Run {
            c: &[&["-H", "-a", "{a}", "-n", "10", "-s", "{s}"]],
            oscost: &["poll", "--fds", "10", "--calls", "select,select-high"],
            only: Some(".high"),
        },
    ],
    derive: Some(poll_per_descriptor),
    show: &[],
    alternate: &[],
};

const MMAP: Entry = Entry {
    name: "mmap",
    about: "mmap + munmap of 1 to 10 000 pages, untouched and touched (benches/mmap_ref.c)",
    source: "benches/mmap_ref.c",
    cflags: &[],
    cpus: Cpus::One,
    needs: Needs::Nothing,
    c_samples: [81, 15],
    c_quick: &[],
    taskset: true,
    idle_poll: false,
    runs: &[Run {
        c: &[&["-s", "{s}", "-p", "1,10,1000,10000"]],
        oscost: &["mmap", "--pages", "1,10,1000,10000"],
        only: None,
    }],
    derive: None,
    show: &[],
    alternate: &[],
};

const FAULT: Entry = Entry {
    name: "fault",
    about: "page faults of every kind oscost times: anonymous, file, copy-on-write, THP, \
            major (benches/fault_ref.c)",
    source: "benches/fault_ref.c",
    cflags: &[],
    cpus: Cpus::One,
    needs: Needs::Nothing,
    c_samples: [81, 15],
    c_quick: &[],
    taskset: true,
    idle_poll: false,
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
        only: None,
    }],
    derive: None,
    show: &["minor_faults_per_op", "major_faults_per_op"],
    alternate: &[],
};

const NS: Entry = Entry {
    name: "ns",
    about: "a child created in no new namespace and in each kind, and all at once \
            (benches/ns_ref.c)",
    source: "benches/ns_ref.c",
    cflags: &[],
    cpus: Cpus::One,
    needs: Needs::Root,
    c_samples: [81, 10],
    c_quick: &[],
    taskset: false,
    idle_poll: false,
    runs: &[Run {
        c: &[&["-c", "{a}", "-s", "{s}", "-m", "{q:2000:1000}"]],
        oscost: &["ns"],
        only: None,
    }],
    derive: Some(ns_over_none),
    show: &[],
    alternate: &[],
};

fn value(figures: &[(String, f64)], id: &str) -> Option<f64> {
    figures.iter().find(|(i, _)| i == id).map(|&(_, v)| v)
}

/// Each filtered call over the same call unfiltered (`seccomp.PROFILE.CALL.over_none`); the
/// notifier's over the bare getpid.
fn seccomp_over_none(figures: &[(String, f64)]) -> Vec<(String, f64)> {
    figures
        .iter()
        .filter_map(|(id, v)| {
            let mut parts = id.split('.').skip(1);
            let (profile, call) = (parts.next()?, parts.next()?);
            let base = match profile {
                "none" => return None,
                "notify" => "seccomp.none.getpid".to_string(),
                _ => format!("seccomp.none.{call}"),
            };
            Some((format!("{id}.over_none"), v - value(figures, &base)?))
        })
        .collect()
}

/// Each namespace's child over the child in none (`ns.KIND.over_none`).
fn ns_over_none(figures: &[(String, f64)]) -> Vec<(String, f64)> {
    let Some(none) = value(figures, "ns.none") else {
        return Vec::new();
    };
    figures
        .iter()
        .filter(|(id, _)| id != "ns.none" && id.starts_with("ns."))
        .map(|(id, v)| (format!("{id}.over_none"), v - none))
        .collect()
}

/// Each call's cost of one more descriptor: (1 000 − 10) apart, `poll.CALL.per_fd`.
fn poll_per_descriptor(figures: &[(String, f64)]) -> Vec<(String, f64)> {
    ["select", "poll", "epoll"]
        .iter()
        .filter_map(|call| {
            let lo = value(figures, &format!("poll.{call}.10"))?;
            let hi = value(figures, &format!("poll.{call}.1000"))?;
            Some((format!("poll.{call}.per_fd"), (hi - lo) / 990.0))
        })
        .collect()
}

/// A registered read over the same read unregistered at the same batch: each side's own
/// ratio (`…fixed….over_unregistered`), so the pair holds the gain, not the times.
fn over_unregistered(figures: &[(String, f64)]) -> Vec<(String, f64)> {
    figures
        .iter()
        .filter(|(id, _)| id.contains(".fixed."))
        .filter_map(|(id, v)| {
            let base = value(figures, &id.replace(".fixed", ""))?;
            Some((format!("{id}.over_unregistered"), v / base))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
        pairs.iter().map(|&(i, v)| (i.to_string(), v)).collect()
    }

    #[test]
    fn names_are_unique_and_every_source_exists() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        for (k, e) in ENTRIES.iter().enumerate() {
            assert!(
                ENTRIES[..k].iter().all(|o| o.name != e.name),
                "{} twice",
                e.name
            );
            assert!(
                std::path::Path::new(root).join(e.source).is_file(),
                "{}: no {}",
                e.name,
                e.source
            );
            assert!(!e.runs.is_empty(), "{}: no run", e.name);
        }
        assert_eq!(find("net").map(|e| e.source), Some("benches/net_ref.c"));
        assert!(find("nothing").is_none());
    }

    #[test]
    fn derived_figures_are_the_differences_the_names_say() {
        let s = seccomp_over_none(&figures(&[
            ("seccomp.none.getpid", 100.0),
            ("seccomp.none.read", 200.0),
            ("seccomp.allow.read", 230.0),
            ("seccomp.notify.getpid", 5100.0),
        ]));
        assert_eq!(
            s,
            figures(&[
                ("seccomp.allow.read.over_none", 30.0),
                ("seccomp.notify.getpid.over_none", 5000.0)
            ])
        );
        let n = ns_over_none(&figures(&[("ns.none", 50.0), ("ns.net", 250.0)]));
        assert_eq!(n, figures(&[("ns.net.over_none", 200.0)]));
        assert!(ns_over_none(&figures(&[("ns.net", 1.0)])).is_empty());
        let p = poll_per_descriptor(&figures(&[
            ("poll.select.10", 10.0),
            ("poll.select.1000", 1000.0),
        ]));
        assert_eq!(p, figures(&[("poll.select.per_fd", 1.0)]));
        let u = over_unregistered(&figures(&[
            ("uring.read1.b1", 400.0),
            ("uring.read1.fixed.b1", 300.0),
        ]));
        assert_eq!(
            u,
            figures(&[("uring.read1.fixed.b1.over_unregistered", 0.75)])
        );
    }
}
