//! References that are peer tools, not C programs of ours: `perf bench`, cyclictest
//! (rt-tests) and lmbench's programs, each run as its users run it and its output read here.

use std::collections::BTreeMap;

use anyhow::{bail, Context as _};

use super::super::entry::{
    Cpus, Entry, Needs, Pin, Read, Reference, Run, Step, Tool, BASE, RUN, STEP,
};
use super::super::run::bin_percentiles;

/// Where perf comes from.
const PERF: &str = "Debian package linux-perf";
/// Where cyclictest comes from.
const RT_TESTS: &str = "Debian package rt-tests";
/// Where lmbench's programs come from: no distribution package, its source.
const LMBENCH: &str = "lmbench3's, built from its source, which Debian does not package; put \
                       the directory of its programs on PATH";

/// One `perf bench sched pipe` against oscost's same-CPU pipe ping-pong of `kind`.
macro_rules! perf_pipe {
    ($kind:literal, [$($more:literal),*]) => {
        Run {
            tool: &[Step {
                argv: &["perf", "bench", "sched", "pipe", "-l", "{q:200000:20000}", $($more),*],
                pin: Some(Pin::A),
                id: concat!("switch.pipe.", $kind, ".same"),
                parse: Some(perf_usecs_per_op),
                ..STEP
            }],
            oscost: &[
                "switch", "--via", "pipe", "--kind", $kind, "--placement", "same",
                "--no-kernel-view",
            ],
            ..RUN
        }
    };
}

/// `cargo xtask vs perf-switch`.
pub const PERF_SWITCH: Entry = Entry {
    name: "perf-switch",
    about: "a pipe round trip between two processes and two threads on one CPU, against \
            `perf bench sched pipe` (its usecs/op is one round trip, two switches)",
    reference: Reference::Tool(Tool {
        label: "perf",
        env: &[],
        finally: &[],
        mounts_tracefs: false,
    }),
    needs: &[Needs::Tool("perf", PERF)],
    // perf is started under taskset; oscost pins its two tasks itself (--cpus).
    taskset: false,
    runs: &[perf_pipe!("processes", []), perf_pipe!("threads", ["-T"])],
    ..BASE
};

/// perf's `       5.582000 usecs/op` line, in ns.
fn perf_usecs_per_op(text: &str) -> anyhow::Result<Vec<(String, f64)>> {
    let us = text
        .lines()
        .find_map(|l| l.trim().strip_suffix("usecs/op"))
        .context("no `usecs/op` line")?;
    let us: f64 = us
        .trim()
        .parse()
        .with_context(|| format!("not a number before usecs/op: {us:?}"))?;
    Ok(vec![(String::new(), us * 1000.0)])
}

/// cyclictest's two cases for a policy, idle and beside a spinning process on its CPU, in
/// the same 1 µs histogram oscost's wake-ups are read into.
macro_rules! cyclictest {
    ($policy:literal, [$($prio:literal),*], $root:literal) => {
        Run {
            tool: &[
                Step {
                    argv: &cyclictest!(@argv [$($prio),*]),
                    id: concat!("wakeup.", $policy, ".1ms"),
                    parse: Some(cyclictest_percentiles),
                    ..STEP
                },
                Step {
                    argv: &cyclictest!(@argv [$($prio),*]),
                    spinner: true,
                    id: concat!("wakeup.", $policy, ".1ms.load"),
                    parse: Some(cyclictest_percentiles),
                    ..STEP
                },
            ],
            oscost: &[
                "wakeup", "--period", "1000us", "--wakeups", "{q:5000:500}", "--policies",
                $policy, "--load", "--no-kernel-view",
            ],
            root: $root,
            ..RUN
        }
    };
    // --laptop: cyclictest leaves /dev/cpu_dma_latency alone, as oscost does unless
    // --idle-poll, which holds it for both sides.
    (@argv [$($prio:literal),*]) => {
        [
            "cyclictest", "-q", "-m", "-a", "{a}", "-i", "1000", "-l", "{q:5000:500}", "-h",
            "100000", "--laptop", $($prio),*
        ]
    };
}

/// `cargo xtask vs cyclictest`.
pub const CYCLICTEST: Entry = Entry {
    name: "cyclictest",
    about: "a thread sleeping to an absolute time every 1 ms on one CPU, idle and beside a \
            spinning process, SCHED_OTHER (and SCHED_FIFO as root): the lateness's p50 and \
            p99 in whole µs, against cyclictest (rt-tests)",
    reference: Reference::Tool(Tool {
        label: "cyclictest",
        env: &[],
        finally: &[],
        mounts_tracefs: false,
    }),
    needs: &[Needs::Tool("cyclictest", RT_TESTS)],
    idle_poll: true,
    // cyclictest pins its thread itself (-a); oscost's --cpus pins its own.
    taskset: false,
    runs: &[
        // -p would make cyclictest's thread SCHED_FIFO whatever --policy says.
        cyclictest!("other", ["--policy=other"], false),
        cyclictest!("fifo", ["-p", "90"], true),
    ],
    read: &[Read::WholeUsPercentiles],
    ..BASE
};

/// cyclictest's histogram (`-h`: lines `BIN COUNT` of 1 µs bins, `# Histogram Overflows:`)
/// as its p50 and p99 in µs; the p99 left out when it lies beyond the histogram.
fn cyclictest_percentiles(text: &str) -> anyhow::Result<Vec<(String, f64)>> {
    let mut bins = BTreeMap::new();
    let mut overflow = 0;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("# Histogram Overflows:") {
            overflow += n
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
            continue;
        }
        let mut words = line.split_whitespace();
        if let (Some(Ok(bin)), Some(Ok(n))) = (
            words.next().map(str::parse::<u64>),
            words.next().map(str::parse::<u64>),
        ) {
            *bins.entry(bin).or_insert(0) += n;
        }
    }
    let Some(p50) = bin_percentiles(&bins, overflow, 0.50) else {
        bail!("no histogram in cyclictest's output (or half its wake-ups beyond it)");
    };
    let mut figures = vec![("p50_us".to_string(), p50 as f64)];
    if let Some(p99) = bin_percentiles(&bins, overflow, 0.99) {
        figures.push(("p99_us".to_string(), p99 as f64));
    }
    Ok(figures)
}

/// The tracepoints `noise`'s kernel view records and `perf stat` counts.
const NOISE_EVENTS: &str = "irq_vectors:local_timer_entry,irq:irq_handler_entry,irq:softirq_entry,\
                            sched:sched_switch,irq_vectors:reschedule_entry,\
                            irq_vectors:call_function_single_entry";

/// `cargo xtask vs noise-perf`.
pub const NOISE_PERF: Entry = Entry {
    name: "noise-perf",
    about: "the rate of each kernel event noise's traced pass recorded on a spinning CPU, \
            against `perf stat -e` of the same tracepoints on that CPU through a window inside \
            the traced spin",
    reference: Reference::Tool(Tool {
        label: "perf",
        env: &[],
        finally: &[],
        mounts_tracefs: true,
    }),
    // Tracepoints, for oscost's kernel view and for perf.
    needs: &[Needs::Root, Needs::Tool("perf", PERF)],
    taskset: false,
    // Rates, counters of oscost's traced case (its local timer entries are also held against
    // /proc/interrupts' LOC by oscost itself: its check timer_events_vs_local_timer).
    read: &[
        Read::Counter("events.irq_vectors.local_timer_entry.per_s"),
        Read::Counter("events.irq.irq_handler_entry.per_s"),
        Read::Counter("events.irq.softirq_entry.per_s"),
        Read::Counter("events.sched.sched_switch.per_s"),
        Read::Counter("events.irq_vectors.reschedule_entry.per_s"),
        Read::Counter("events.irq_vectors.call_function_single_entry.per_s"),
    ],
    runs: &[Run {
        // oscost times its loop (under a second), spins D untraced, then D traced: perf counts
        // from a second into the traced spin to a second before its end.
        tool: &[Step {
            argv: &[
                "perf",
                "stat",
                "-x,",
                "-C",
                "{a}",
                "-e",
                NOISE_EVENTS,
                "--",
                "sleep",
                "{q:3:2}",
            ],
            id: "noise.cpu{a}.kernel",
            parse: Some(perf_stat_rates),
            ..STEP
        }],
        oscost: &["noise", "--duration", "{q:5s:4s}"],
        during: Some("{q:7000:6000}"),
        ..RUN
    }],
    ..BASE
};

/// `perf stat -x,` lines (`COUNT,UNIT,EVENT,RUN_NS,PCT,…`) as each event's rate over the time
/// its counter ran, under oscost's counter name `events.SUBSYSTEM.EVENT.per_s`; an event perf
/// could not count (`<not counted>`, `<not supported>`) is left out.
fn perf_stat_rates(text: &str) -> anyhow::Result<Vec<(String, f64)>> {
    let mut figures = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(',').collect();
        let [count, _unit, event, run_ns, ..] = f.as_slice() else {
            continue;
        };
        let (Ok(count), Ok(run_ns)) = (count.parse::<f64>(), run_ns.parse::<f64>()) else {
            continue;
        };
        if run_ns > 0.0 && event.contains(':') {
            let name = format!("events.{}.per_s", event.replace(':', "."));
            figures.push((name, count / (run_ns / 1e9)));
        }
    }
    if figures.is_empty() {
        bail!("no counted event in perf stat's output");
    }
    Ok(figures)
}

/// An lmbench server started on `$cpu`, left a moment to listen.
macro_rules! lm_server {
    ($program:literal, $cpu:expr) => {
        Step {
            argv: &[$program, "-s"],
            pin: Some($cpu),
            settle_ms: 200,
            ..STEP
        }
    };
}

/// An lmbench client on CPU A against the server on 127.0.0.1.
macro_rules! lm_client {
    ($program:literal, $id:literal, $parse:expr $(, $arg:literal)*) => {
        Step {
            argv: &[$program, $($arg,)* "127.0.0.1"],
            pin: Some(Pin::A),
            id: $id,
            parse: Some($parse),
            ..STEP
        }
    };
}

/// The server stopped, its port left a moment to be freed for the next.
macro_rules! lm_stop {
    ($program:literal) => {
        Step {
            argv: &[$program, "-S", "127.0.0.1"],
            settle_ms: 200,
            ..STEP
        }
    };
}

/// bw_unix or bw_pipe with its two processes on CPU A and `$b`.
macro_rules! lm_pair {
    ($program:literal, $b:literal, $id:literal) => {
        Step {
            argv: &[$program],
            env: &[("LMBENCH_SCHED", concat!("CUSTOM_UNIQUE {a} ", $b))],
            id: $id,
            parse: Some(lmbench_ns_per_64k),
            ..STEP
        }
    };
}

/// `cargo xtask vs lmbench`.
pub const LMBENCH_NET: Entry = Entry {
    name: "lmbench",
    about: "1-byte round trips over TCP, UDP and AF_UNIX and 64 KiB streams over TCP, \
            AF_UNIX and pipes, same CPU and across two, against lmbench's lat_* and bw_* \
            (lat_connect's connection, its server on CPU B, is related, not the same figure)",
    reference: Reference::Tool(Tool {
        label: "lmbench",
        // Each figure the median of 11 timings of at least ENOUGH µs.
        env: &[("ENOUGH", "{q:20000:2000}")],
        // Servers a failed step left running.
        finally: &[
            &["lat_tcp", "-S", "127.0.0.1"],
            &["lat_udp", "-S", "127.0.0.1"],
            &["bw_tcp", "-S", "127.0.0.1"],
            &["lat_connect", "-S", "127.0.0.1"],
        ],
        mounts_tracefs: false,
    }),
    needs: &[
        Needs::Tool("lat_tcp", LMBENCH),
        Needs::Tool("lat_udp", LMBENCH),
        Needs::Tool("lat_unix", LMBENCH),
        Needs::Tool("lat_connect", LMBENCH),
        Needs::Tool("bw_tcp", LMBENCH),
        Needs::Tool("bw_unix", LMBENCH),
        Needs::Tool("bw_pipe", LMBENCH),
    ],
    cpus: Cpus::Two,
    taskset: false,
    idle_poll: true,
    runs: &[Run {
        // What differs in meaning: lmbench's two sides are processes, oscost's two threads of
        // one (on one CPU each of lmbench's switches also changes the address space); bw_tcp
        // fixes SO_SNDBUF and SO_RCVBUF, oscost leaves them to the kernel's autotuning;
        // lat_connect's server on CPU B accepts and closes after the client, oscost's accepting
        // thread on CPU A closes first.
        tool: &[
            lm_server!("lat_tcp", Pin::A),
            lm_client!("lat_tcp", "net.tcp.rtt.same", lmbench_us),
            lm_stop!("lat_tcp"),
            lm_server!("lat_udp", Pin::A),
            // lmbench sends 4 bytes, its sequence number.
            lm_client!("lat_udp", "net.udp.rtt.same", lmbench_us),
            lm_stop!("lat_udp"),
            lm_server!("bw_tcp", Pin::A),
            lm_client!(
                "bw_tcp",
                "net.tcp.bw.same",
                lmbench_ns_per_64k,
                "-m",
                "65536"
            ),
            lm_stop!("bw_tcp"),
            lm_pair!("bw_unix", "{a}", "net.unix.bw.same"),
            lm_pair!("bw_pipe", "{a}", "net.pipe.bw.same"),
            lm_server!("lat_tcp", Pin::B),
            lm_client!("lat_tcp", "net.tcp.rtt.cross", lmbench_us),
            lm_stop!("lat_tcp"),
            lm_server!("lat_udp", Pin::B),
            lm_client!("lat_udp", "net.udp.rtt.cross", lmbench_us),
            lm_stop!("lat_udp"),
            lm_server!("bw_tcp", Pin::B),
            lm_client!(
                "bw_tcp",
                "net.tcp.bw.cross",
                lmbench_ns_per_64k,
                "-m",
                "65536"
            ),
            lm_stop!("bw_tcp"),
            lm_pair!("bw_unix", "{b}", "net.unix.bw.cross"),
            lm_pair!("bw_pipe", "{b}", "net.pipe.bw.cross"),
            // lat_unix places its child itself: the whole program on CPU A, no cross case.
            Step {
                argv: &["lat_unix"],
                pin: Some(Pin::A),
                id: "net.unix.rtt.same",
                parse: Some(lmbench_us),
                ..STEP
            },
            lm_server!("lat_connect", Pin::B),
            lm_client!("lat_connect", "net.tcp.connect", lmbench_us),
            lm_stop!("lat_connect"),
        ],
        oscost: &[
            "net",
            "--placement",
            "same,cross",
            "--cases",
            "tcp.rtt,udp.rtt,unix.rtt,tcp.connect,tcp.bw,unix.bw,pipe.bw",
        ],
        ..RUN
    }],
    ..BASE
};

/// The last number before `unit` in lmbench's report.
fn lmbench_value(text: &str, unit: &str) -> anyhow::Result<f64> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let at = words
        .iter()
        .rposition(|w| *w == unit)
        .filter(|&k| k > 0)
        .with_context(|| format!("no figure in {unit}"))?;
    words[at - 1]
        .parse()
        .with_context(|| format!("not a number before {unit}: {:?}", words[at - 1]))
}

/// A latency lmbench reports in microseconds, in ns.
fn lmbench_us(text: &str) -> anyhow::Result<Vec<(String, f64)>> {
    Ok(vec![(
        String::new(),
        lmbench_value(text, "microseconds")? * 1000.0,
    )])
}

/// A bandwidth lmbench reports in MB/s, as the ns oscost gives per 64 KiB: 65 536 000 / MB/s.
fn lmbench_ns_per_64k(text: &str) -> anyhow::Result<Vec<(String, f64)>> {
    let mb_per_s = lmbench_value(text, "MB/sec")?;
    if mb_per_s <= 0.0 {
        bail!("a bandwidth of {mb_per_s} MB/sec");
    }
    Ok(vec![(String::new(), 65_536_000.0 / mb_per_s)])
}

#[cfg(test)]
mod tests {
    use super::super::figures;
    use super::*;

    #[test]
    fn perf_s_round_trip_is_read_in_ns() {
        let out = "# Running 'sched/pipe' benchmark:\n# Executed 1000 pipe operations between \
                   two processes\n\n     Total time: 0.038 [sec]\n\n      38.322000 usecs/op\n\
                   \x20         26094 ops/sec\n";
        assert_eq!(perf_usecs_per_op(out).unwrap(), figures(&[("", 38322.0)]));
        assert!(perf_usecs_per_op("nothing").is_err());
    }

    #[test]
    fn cyclictest_s_histogram_gives_its_percentiles_and_no_p99_beyond_it() {
        let out = "# Histogram\n000060 000049\n000061 000002\n000080 000048\n# Total: 000000100\n\
                   # Histogram Overflows: 00001\n";
        assert_eq!(
            cyclictest_percentiles(out).unwrap(),
            figures(&[("p50_us", 61.0), ("p99_us", 80.0)])
        );
        let over = out.replace("Overflows: 00001", "Overflows: 00003");
        assert_eq!(
            cyclictest_percentiles(&over).unwrap(),
            figures(&[("p50_us", 61.0)])
        );
        assert!(cyclictest_percentiles("WARN: nothing\n").is_err());
    }

    #[test]
    fn perf_stat_s_counts_are_rates_over_their_running_time_under_oscost_s_names() {
        let out = "84,,irq_vectors:local_timer_entry,2000000000,100.00,,\n\
                   <not counted>,,irq:irq_handler_entry,0,0.00,,\n\
                   15,,irq:softirq_entry,500000000,100.00,,\n";
        assert_eq!(
            perf_stat_rates(out).unwrap(),
            figures(&[
                ("events.irq_vectors.local_timer_entry.per_s", 42.0),
                ("events.irq.softirq_entry.per_s", 30.0)
            ])
        );
        assert!(perf_stat_rates("Performance counter stats\n").is_err());
    }

    #[test]
    fn lmbench_s_figures_are_read_before_their_unit() {
        assert_eq!(
            lmbench_us("TCP latency using 127.0.0.1: 25.1234 microseconds\n").unwrap(),
            figures(&[("", 25123.4)])
        );
        assert_eq!(
            lmbench_ns_per_64k("0.065536 1024.00 MB/sec\n").unwrap(),
            figures(&[("", 64000.0)])
        );
        assert!(lmbench_us("Pipe bandwidth: 1.0 MB/sec").is_err());
    }
}
