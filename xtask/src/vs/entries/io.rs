//! References of signals, sockets, pipes, context switches, io_uring, readiness calls and
//! file calls.

use super::super::entry::{Cpus, Entry, Needs, Read, Reference, Run, BASE, RUN};
use super::super::setup::Setup;
use super::value;

macro_rules! net_cross {
    ($case:literal) => {
        Run {
            c: &[&["-a", "{a}", "-b", "{b}", "-s", "{s}", $case]],
            oscost: &["net", "--cases", $case, "--placement", "cross"],
            ..RUN
        }
    };
}

/// A connection case alone (no placement: its threads on CPU A), both sides running just it;
/// `only` keeps the ids holding its name, as each side prints just that case.
macro_rules! net_connect {
    ($case:literal) => {
        Run {
            c: &[&["-a", "{a}", "-s", "{s}", $case]],
            oscost: &["net", "--cases", $case],
            only: Some(concat!("net.", $case)),
            ..RUN
        }
    };
}

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
            ..RUN
        }
    };
}

/// `cargo xtask vs signal`.
pub const SIGNAL: Entry = Entry {
    name: "signal",
    about: "sigaction, a caught signal, SIGSEGV, and a signal waking a thread or a process \
            on the same and another CPU (benches/signal_ref.c)",
    reference: Reference::C("benches/signal_ref.c"),
    cflags: &["-pthread"],
    cpus: Cpus::Two,
    taskset: false,
    idle_poll: true,
    runs: &[Run {
        c: &[&["-a", "{a}", "-b", "{b}", "-s", "{s}"]],
        oscost: &["signal"],
        ..RUN
    }],
    alternate: &[
        Run {
            c: &[&["-a", "{a}", "-b", "{b}", "-s", "{s}", "-k", "wake.cross"]],
            oscost: &["signal", "--cases", "wake-cross"],
            ..RUN
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
            ..RUN
        },
    ],
    ..BASE
};

/// `cargo xtask vs net`.
pub const NET: Entry = Entry {
    name: "net",
    about: "1-byte round trips over TCP, UDP and AF_UNIX, TCP connections, 64 KiB streams \
            and LEBench's send + recv (benches/net_ref.c)",
    reference: Reference::C("benches/net_ref.c"),
    cflags: &["-pthread"],
    cpus: Cpus::Two,
    c_quick: &["-q"],
    taskset: false,
    idle_poll: true,
    runs: &[Run {
        c: &[
            &["-a", "{a}", "-b", "{a}", "-s", "{s}", "-c"],
            &["-a", "{a}", "-b", "{b}", "-s", "{s}"],
        ],
        oscost: &["net", "--placement", "same,cross"],
        ..RUN
    }],
    // The connections first: `--smoke` alternates an entry's first case, and they drift
    // between sittings as the cross-CPU cases do (on one CPU, a thread accepting).
    alternate: &[
        net_connect!("tcp.connect"),
        net_connect!("tcp.connect.rst"),
        net_cross!("tcp.rtt"),
        net_cross!("udp.rtt"),
        net_cross!("unix.rtt"),
        net_cross!("unix-dgram.rtt"),
        net_cross!("tcp.bw"),
        net_cross!("unix.bw"),
        net_cross!("pipe.bw"),
    ],
    ..BASE
};

/// `cargo xtask vs switch`.
pub const SWITCH: Entry = Entry {
    name: "switch",
    about: "a 1-byte pipe ping-pong between two threads or two processes on one CPU and on \
            two (benches/switch_ref.c)",
    reference: Reference::C("benches/switch_ref.c"),
    cflags: &["-pthread"],
    cpus: Cpus::Two,
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
        ..RUN
    }],
    show: &["switches_per_round_trip", "migrations"],
    alternate: &[switch_cross!("threads"), switch_cross!("processes")],
    ..BASE
};

/// `cargo xtask vs uring`.
pub const URING: Entry = Entry {
    name: "uring",
    about: "io_uring nops and reads at several batches, registered or not, beside the plain \
            system call, and SQPOLL's nop (benches/uring_ref.c)",
    reference: Reference::C("benches/uring_ref.c"),
    cpus: Cpus::Two,
    taskset: false,
    runs: &[Run {
        c: &[&["-a", "{a}", "-b", "{b}", "-s", "{s}"]],
        oscost: &["uring"],
        ..RUN
    }],
    derive: Some(over_unregistered),
    show: &["io_uring_enter_per_op", "poller_cpu_share"],
    // Not alternated: a SQPOLL thread keeps polling for its idle time after its process stops
    // submitting, so the side waiting its turn would poll on the CPU of the other's poller.
    ..BASE
};

/// `cargo xtask vs poll`.
pub const POLL: Entry = Entry {
    name: "poll",
    about: "select, poll and epoll_wait over 10 and 1 000 ready sockets at the lowest \
            descriptors, and select over ten high ones (benches/poll_ref.c)",
    reference: Reference::C("benches/poll_ref.c"),
    taskset: false,
    runs: &[
        Run {
            c: &[&["-a", "{a}", "-n", "10,1000", "-s", "{s}"]],
            oscost: &["poll", "--fds", "10,1000"],
            ..RUN
        },
        Run {
            c: &[&["-H", "-a", "{a}", "-n", "10", "-s", "{s}"]],
            oscost: &["poll", "--fds", "10", "--calls", "select,select-high"],
            only: Some(".high"),
            ..RUN
        },
    ],
    derive: Some(poll_per_descriptor),
    ..BASE
};

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

/// A lock ring of N threads and one free mutex: oscost's run of it and csfast5's, the C
/// program's passes N times its count per thread (400 000 in all, 20 000 under `--quick`).
macro_rules! lockring_mutex {
    ($n:literal, $count:literal, $quick:literal) => {
        Run {
            c: &[&[
                "mutex",
                $n,
                "1",
                concat!("{q:", $count, ":", $quick, "}"),
                "{a}",
            ]],
            oscost: &[
                "lockring", "--forms", "mutex", "--tasks", $n, "--tokens", "1",
            ],
            ..RUN
        }
    };
}

/// `cargo xtask vs lockring`.
pub const LOCKRING: Entry = Entry {
    name: "lockring",
    about: "a mutex handed round a ring of 2 to 128 threads on one CPU, and a pipe token \
            between two: time per switch (benches/csfast5_ref.c, Bradford's csfast5 and \
            cspipe2a)",
    reference: Reference::C("benches/csfast5_ref.c"),
    // -fno-plt: call libc through the GOT as the Rust binary does; a PLT stub on every
    // pthread call is a measurable share of an uncontended lock.
    cflags: &["-fno-plt", "-pthread"],
    // One timing of the whole run, as the study's: no samples to set.
    c_samples: [1, 1],
    runs: &[
        lockring_mutex!("2", "200000", "10000"),
        lockring_mutex!("4", "100000", "5000"),
        lockring_mutex!("8", "50000", "2500"),
        lockring_mutex!("16", "25000", "1250"),
        lockring_mutex!("32", "12500", "625"),
        lockring_mutex!("64", "6250", "312"),
        lockring_mutex!("128", "3125", "156"),
        Run {
            c: &[&["pipe", "{q:200000:10000}", "{a}"]],
            oscost: &["lockring", "--forms", "pipe"],
            ..RUN
        },
    ],
    // Beside the time, the context switches the kernel counted per hand-over or pass, every
    // thread summed: a ratio near 1 there says both rings switch alike.
    read: &[
        Read::Medians,
        Read::Counter("switches_per_hand_over"),
        Read::Counter("switches_per_pass"),
    ],
    ..BASE
};

/// `cargo xtask vs fs`.
pub const FS: Entry = Entry {
    name: "fs",
    about: "the MINIX 3 study's file calls (getpid, lseek, open + close, 64 KiB reads and \
            writes, a file's life) on a tmpfs and on oscost's FUSE file system \
            (benches/fscalls_ref.c)",
    reference: Reference::C("benches/fscalls_ref.c"),
    // -fno-plt: call libc through the GOT as the Rust binary does.
    cflags: &["-fno-plt"],
    // It mounts the tmpfs (and the FUSE file system directly).
    needs: &[Needs::Root],
    // The program's sampler: 81 samples, oscost's --quick shape under -q.
    c_samples: [81, 15],
    c_quick: &["-q"],
    // The program pins nothing itself; the FUSE server it talks to runs on the same CPU.
    runs: &[Run {
        c: &[&[
            "-d",
            "tmpfs={tmp}/tmpfs",
            "-d",
            "fuse={tmp}/fuse",
            "getpid",
            "lseek",
            "open-close",
            "read64k",
            "write64k",
            "creat-write1k-unlink",
        ]],
        oscost: &[
            "fs",
            "--calls",
            "getpid,lseek,open-close,read64k,write64k,creat-write1k-unlink",
        ],
        ..RUN
    }],
    setup: Setup::FsMounts,
    ..BASE
};

#[cfg(test)]
mod tests {
    use super::super::figures;
    use super::*;

    #[test]
    fn derived_figures_are_the_differences_the_names_say() {
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
