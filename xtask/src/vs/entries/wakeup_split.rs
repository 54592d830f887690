//! `wakeup`'s kernel split (its traced pass, `<case>.kernel`) against an independent one: the
//! same tracepoints recorded by `perf record` and split here, on the wake-ups of oscost's own
//! sleeping thread (`wakeup-split-perf`) and of cyclictest's (`wakeup-split-cyclictest`).
//!
//! Each wake-up of the named thread's absolute sleeps is split into the parts oscost's traced
//! pass gives: `slack` (the deadline, the timer's soft expiry, to its programmed expiry or its
//! earlier run), `interrupt` (that expiry to the interrupt's run of the timer),
//! `to_switch` (the interrupt to the switch into the thread), `to_return` (the switch to the
//! thread's return from clock_nanosleep), and the kernel's lateness (deadline to the return).

use std::collections::HashMap;

use anyhow::bail;

use super::super::entry::{Entry, Needs, Read, Reference, Run, Step, Tool, BASE, RUN, STEP};

/// clock_nanosleep's number, for perf's filter on `raw_syscalls:sys_exit`: x86_64's, i386's,
/// 32-bit ARM's, else the generic table's (arm64, riscv64, loongarch64).
#[cfg(target_arch = "x86_64")]
const FILTER: &str = "id == 230";
#[cfg(target_arch = "x86")]
const FILTER: &str = "id == 267";
#[cfg(target_arch = "arm")]
const FILTER: &str = "id == 265";
#[cfg(not(any(target_arch = "x86_64", target_arch = "x86", target_arch = "arm")))]
const FILTER: &str = "id == 115";

/// `perf record` of the split's tracepoints on CPU A into the scratch directory, the command
/// to record after `--`.
macro_rules! record {
    ($($command:literal),*) => {
        Step {
            argv: &[
                "perf", "record", "-q", "-C", "{a}", "-k", "CLOCK_MONOTONIC", "-m", "4M", "-o",
                "{tmp}/split.data", "-e", "timer:hrtimer_start", "-e",
                "timer:hrtimer_expire_entry", "-e", "sched:sched_switch", "-e",
                "sched:sched_wakeup", "-e", "raw_syscalls:sys_exit", "--filter", FILTER, "-e",
                "irq:irq_handler_entry", "-e", "irq:irq_handler_exit", "-e",
                "irq:softirq_entry", "-e", "irq:softirq_exit", "--", $($command),*
            ],
            ..STEP
        }
    };
}

/// The recording read back, each event a line, split by `$parse`.
macro_rules! split {
    ($policy:literal, $parse:expr) => {
        Step {
            argv: &[
                "perf",
                "script",
                "-i",
                "{tmp}/split.data",
                "--ns",
                "-F",
                "comm,tid,cpu,time,event,trace",
            ],
            id: concat!("wakeup.", $policy, ".1ms.kernel"),
            parse: Some($parse),
            ..STEP
        }
    };
}

/// oscost's wake-up arguments for one policy, every 1 ms, the CPUs held polling (as cyclictest
/// holds them by default), written once: handed to `$then!` after `$before` and before `$after`.
macro_rules! wakeup_args {
    ($policy:literal, $then:ident, [$($before:literal),*], [$($after:literal),*]) => {
        $then!(
            $($before,)* "wakeup", "--wakeups", "{q:2000:500}", "--policies", $policy,
            "--idle-poll" $(, $after)*
        )
    };
}

/// Its literals as a slice.
macro_rules! slice {
    ($($word:literal),*) => {
        &[$($word),*]
    };
}

/// oscost's traced pass of one policy.
macro_rules! traced {
    ($policy:literal) => {
        wakeup_args!($policy, slice, [], [])
    };
}

/// The tool both entries run: perf, which may mount tracefs to resolve the tracepoints.
const PERF_TOOL: Reference = Reference::Tool(Tool {
    label: "perf split",
    env: &[],
    finally: &[],
    mounts_tracefs: true,
});

/// What both entries read of oscost's traced case: each part's median and the lateness's.
const PARTS: &[Read] = &[
    Read::Counter("part.slack.median_ns"),
    Read::Counter("part.interrupt.median_ns"),
    Read::Counter("part.to_switch.median_ns"),
    Read::Counter("part.to_return.median_ns"),
    Read::Counter("kernel_median_ns"),
];

/// The same oscost wake-ups, its traced pass off, recorded by perf.
macro_rules! on_oscost {
    ($policy:literal, $root:literal) => {
        Run {
            tool: &[
                wakeup_args!(
                    $policy,
                    record,
                    ["{oscost}", "--cpus", "{a}", "--quiet", "--no-save"],
                    ["--no-kernel-view"]
                ),
                split!($policy, split_oscost),
            ],
            oscost: traced!($policy),
            root: $root,
            ..RUN
        }
    };
}

/// `cargo xtask vs wakeup-split-perf`.
pub const ON_OSCOST: Entry = Entry {
    name: "wakeup-split-perf",
    about: "wakeup's kernel split (slack, interrupt, to_switch, to_return, the kernel's \
            lateness: medians) against perf record's tracepoints of the same program, split \
            independently",
    reference: PERF_TOOL,
    needs: &[
        Needs::Root,
        Needs::Tool("perf", "Debian package linux-perf"),
    ],
    taskset: false,
    runs: &[on_oscost!("other", false), on_oscost!("fifo", true)],
    read: PARTS,
    ..BASE
};

/// cyclictest with the same period, policy, CPU and count, recorded by perf.
macro_rules! on_cyclictest {
    ($policy:literal, [$($prio:literal),*]) => {
        Run {
            tool: &[
                record!(
                    "cyclictest", "-q", "-m", "-a", "{a}", "-i", "1000", "-l", "{q:2000:500}",
                    $($prio),*
                ),
                split!($policy, split_cyclictest),
            ],
            oscost: traced!($policy),
            ..RUN
        }
    };
}

/// `cargo xtask vs wakeup-split-cyclictest`.
pub const ON_CYCLICTEST: Entry = Entry {
    name: "wakeup-split-cyclictest",
    about: "wakeup's kernel split (slack, interrupt, to_switch, to_return, the kernel's \
            lateness: medians) against perf record's tracepoints of cyclictest doing the same, \
            split independently",
    reference: PERF_TOOL,
    needs: &[
        Needs::Root,
        Needs::Tool("perf", "Debian package linux-perf"),
        Needs::Tool("cyclictest", "Debian package rt-tests"),
    ],
    taskset: false,
    // -p would make cyclictest's thread SCHED_FIFO whatever --policy says; both policies need
    // root here anyway (perf's tracepoints).
    runs: &[
        on_cyclictest!("other", ["--policy=other"]),
        on_cyclictest!("fifo", ["-p", "90"]),
    ],
    read: PARTS,
    ..BASE
};

fn split_oscost(text: &str) -> anyhow::Result<Vec<(String, f64)>> {
    split_thread(text, "oscost-wakeup")
}

fn split_cyclictest(text: &str) -> anyhow::Result<Vec<(String, f64)>> {
    split_thread(text, "cyclictest")
}

/// One line of `perf script -F comm,tid,cpu,time,event,trace --ns`.
#[derive(Debug, PartialEq)]
struct Event<'a> {
    ns: u64,
    tid: i64,
    name: &'a str,
    fields: HashMap<&'a str, &'a str>,
}

/// `COMM TID [CPU] SECONDS.NANOS: EVENT: key=value …`, or `None` for any other line.
fn event(line: &str) -> Option<Event<'_>> {
    // The CPU in brackets ends the task's name and id (a name may hold spaces).
    let open = line.find(" [")?;
    let close = open + line[open..].find("] ")?;
    line[open + 2..close].parse::<u32>().ok()?;
    let tid = line[..open].split_whitespace().last()?.parse().ok()?;
    let mut rest = line[close + 1..].split_whitespace();
    let time = rest.next()?.strip_suffix(':')?;
    let (s, frac) = time.split_once('.')?;
    let frac = format!("{frac:0<9}");
    let ns = s.parse::<u64>().ok()? * 1_000_000_000 + frac.get(..9)?.parse::<u64>().ok()?;
    let name = rest.next()?.strip_suffix(':')?;
    let fields = rest.filter_map(|w| w.split_once('=')).collect();
    Some(Event {
        ns,
        tid,
        name,
        fields,
    })
}

fn number(fields: &HashMap<&str, &str>, key: &str) -> Option<i64> {
    fields.get(key)?.parse().ok()
}

/// A wake-up in progress: the timer's soft and hard expiry, its run, the switch into the
/// thread.
struct Pending {
    soft: i64,
    hard: i64,
    now: i64,
    switch: Option<i64>,
}

/// The parts of every wake-up of `thread` in perf's recording, as the medians oscost's traced
/// case gives under its counter names.
fn split_thread(text: &str, thread: &str) -> anyhow::Result<Vec<(String, f64)>> {
    let events: Vec<Event> = text.lines().filter_map(event).collect();
    // The kernel's names of the tasks, from the switches (perf's own may be `perf-exec`).
    let mut names: HashMap<i64, &str> = HashMap::new();
    for e in events.iter().filter(|e| e.name == "sched:sched_switch") {
        for (pid, comm) in [("prev_pid", "prev_comm"), ("next_pid", "next_comm")] {
            if let (Some(pid), Some(comm)) = (number(&e.fields, pid), e.fields.get(comm)) {
                names.insert(pid, comm);
            }
        }
    }
    let mut timers: HashMap<&str, (i64, i64, i64)> = HashMap::new();
    let mut pending: HashMap<i64, Pending> = HashMap::new();
    let mut parts: [Vec<f64>; 5] = Default::default();
    for e in &events {
        match e.name {
            "timer:hrtimer_start" => {
                // Absolute sleeps only (mode 0, HRTIMER_MODE_ABS): cyclictest's main thread
                // sleeps relative on the same CPU.
                let abs = matches!(e.fields.get("mode"), Some(&"0x0") | Some(&"ABS"));
                if names.get(&e.tid) == Some(&thread)
                    && e.fields.get("function") == Some(&"hrtimer_wakeup")
                    && abs
                {
                    if let (Some(t), Some(soft), Some(hard)) = (
                        e.fields.get("hrtimer"),
                        number(&e.fields, "softexpires"),
                        number(&e.fields, "expires"),
                    ) {
                        timers.insert(t, (e.tid, soft, hard));
                    }
                }
            }
            "timer:hrtimer_expire_entry" => {
                let timer = e.fields.get("hrtimer").and_then(|t| timers.remove(t));
                if let (Some((owner, soft, hard)), Some(now)) = (timer, number(&e.fields, "now")) {
                    let wake = Pending {
                        soft,
                        hard,
                        now,
                        switch: None,
                    };
                    pending.insert(owner, wake);
                }
            }
            "sched:sched_switch" => {
                if let Some(w) = number(&e.fields, "next_pid").and_then(|n| pending.get_mut(&n)) {
                    w.switch.get_or_insert(e.ns as i64);
                }
            }
            "raw_syscalls:sys_exit" if pending.get(&e.tid).is_some_and(|w| w.switch.is_some()) => {
                let Some(w) = pending.remove(&e.tid) else {
                    continue;
                };
                let (switch, exit) = (w.switch.unwrap_or(0), e.ns as i64);
                // The timer's programmed expiry, or its earlier run by another's interrupt.
                let expiry = w.hard.min(w.now);
                let split = [
                    expiry - w.soft,
                    w.now - expiry,
                    switch - w.now,
                    exit - switch,
                    exit - w.soft,
                ];
                for (part, v) in parts.iter_mut().zip(split) {
                    part.push(v as f64);
                }
            }
            _ => {}
        }
    }
    if parts[0].is_empty() {
        bail!("no wake-up of a thread named {thread:?} in perf's recording");
    }
    let names = [
        "part.slack.median_ns",
        "part.interrupt.median_ns",
        "part.to_switch.median_ns",
        "part.to_return.median_ns",
        "kernel_median_ns",
    ];
    Ok(names
        .iter()
        .zip(&mut parts)
        .map(|(name, v)| (name.to_string(), half_way(v)))
        .collect())
}

/// The value at half the count, sorted (the upper of the two middle ones for an even count),
/// as the independent splitter has always read its medians.
fn half_way(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[(v.len() / 2).min(v.len() - 1)]
}

/// The trace's timestamp text for tests: `SECONDS.NANOS`.
#[cfg(test)]
fn at(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_records_the_same_wake_ups_as_the_traced_pass_without_its_trace() {
        for run in ON_OSCOST.runs {
            let argv = run.tool[0].argv;
            let at = argv.iter().position(|w| *w == "--").unwrap() + 1;
            let command = &argv[at..];
            let oscost = command.iter().position(|w| *w == "wakeup").unwrap();
            assert_eq!(command[0], "{oscost}");
            assert_eq!(&command[oscost..command.len() - 1], run.oscost);
            assert_eq!(command.last(), Some(&"--no-kernel-view"));
        }
    }

    #[test]
    fn a_line_of_perf_script_is_read_and_others_are_not() {
        let e = event(
            " oscost-wakeup 4242 [001] 12.000000500: timer:hrtimer_start: hrtimer=0xff \
             function=hrtimer_wakeup expires=100 softexpires=90 mode=ABS",
        )
        .unwrap();
        assert_eq!(
            (e.ns, e.tid, e.name),
            (12_000_000_500, 4242, "timer:hrtimer_start")
        );
        assert_eq!(e.fields["softexpires"], "90");
        assert!(event("[ perf record: Woken up 1 times ]").is_none());
    }

    /// One wake-up of the thread: deadline 1000, expiry 1050, the timer run at 1060, the
    /// switch at 1100, the return at 1130; another thread's and a relative sleep ignored.
    #[test]
    fn a_wake_up_is_split_into_oscost_s_parts() {
        let line = |ns: u64, comm: &str, tid: u32, ev: &str, rest: &str| {
            format!("{comm} {tid} [001] {}: {ev}: {rest}", at(ns))
        };
        let trace = [
            line(
                500,
                "swapper/1",
                0,
                "sched:sched_switch",
                "prev_comm=x prev_pid=9 next_comm=cyclictest next_pid=7",
            ),
            line(
                600,
                "cyclictest",
                7,
                "timer:hrtimer_start",
                "hrtimer=0xa function=hrtimer_wakeup expires=1050 softexpires=1000 mode=ABS",
            ),
            line(
                610,
                "cyclictest",
                7,
                "timer:hrtimer_start",
                "hrtimer=0xb function=hrtimer_wakeup expires=1050 softexpires=1000 mode=REL",
            ),
            line(
                1060,
                "swapper/1",
                0,
                "timer:hrtimer_expire_entry",
                "hrtimer=0xa now=1060 function=hrtimer_wakeup",
            ),
            line(
                1100,
                "swapper/1",
                0,
                "sched:sched_switch",
                "prev_comm=swapper/1 prev_pid=0 next_comm=cyclictest next_pid=7",
            ),
            line(1130, "cyclictest", 7, "raw_syscalls:sys_exit", "NR 230 = 0"),
        ]
        .join("\n");
        let split = split_thread(&trace, "cyclictest").unwrap();
        let values: Vec<f64> = split.iter().map(|(_, v)| *v).collect();
        assert_eq!(values, [50.0, 10.0, 40.0, 30.0, 130.0]);
        assert_eq!(split[4].0, "kernel_median_ns");
        assert!(split_thread(&trace, "oscost-wakeup").is_err());
    }
}
