//! The bill: what the OS cost one program, counted in the kernel while it ran, each part of
//! its time with its count, its measured time and, where a datasheet has one, its price.
//! It travels in an `oscost/2` result document (its `bill` field), whose environment names
//! the machine and whose `started_at` says when billing began.

use serde::{Deserialize, Serialize};

/// What was billed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case", tag = "kind")]
pub enum Target {
    /// A command oscost started, with every thread and descendant.
    Command {
        /// Its arguments, the program first.
        argv: Vec<String>,
    },
    /// A running process oscost attached to, with its threads and the processes it (or one
    /// of them) started while billed.
    Process {
        /// Its id.
        pid: u32,
        /// Its name (`comm`) when attached.
        comm: String,
    },
}

/// How the program ended (or did not, while billed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    rename_all = "snake_case",
    tag = "kind",
    content = "value"
)]
pub enum Ending {
    /// It exited with this status.
    Exited(i32),
    /// This signal killed it.
    Killed(i32),
    /// It was still running when billing stopped (`--for`, Ctrl-C).
    Running,
    /// It ended while attached; not oscost's child, so its status is unknown.
    Gone,
}

/// What counted the program's events in the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Counter {
    /// BPF programs on raw tracepoints: calls, faults, switches, interrupts and more.
    Bpf,
    /// perf's counting events on each system call's tracepoint, where BPF was refused: calls
    /// by name, counted only.
    Perf,
    /// Nothing: the kernel's own accounting only (`getrusage`, `/proc`).
    None,
}

/// How much was taken of each system call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallDepth {
    /// Each call counted and timed from entry to exit.
    Time,
    /// Each call counted at entry only.
    Count,
    /// No probe was asked for (`--trace-with none`).
    None,
}

/// How the events were counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mechanism {
    /// What counted them.
    pub name: Counter,
    /// How much of each call was taken: what was asked for, or less where the counter can
    /// do no more (perf counts only).
    pub depth: CallDepth,
    /// Why BPF's counts are missing, when they are: the counter then is the next one that
    /// worked.
    pub refused: Option<String>,
    /// Tracepoints this kernel lacks, whose counts read as zero.
    pub missing: Vec<String>,
}

/// What the probe itself costs the program, measured when billing started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeCost {
    /// Time one system call gains with the probe attached, ns (median of rounds).
    pub per_call_ns: f64,
    /// The rounds' spread: lowest and highest.
    pub range_ns: [f64; 2],
    /// A call that does nothing (ENOSYS), untraced, ns: the entry and exit every call's time
    /// includes.
    pub bare_call_ns: f64,
    /// The part of `per_call_ns` inside the probe's own timing of a call, ns: taken out of
    /// every call's time.
    pub in_window_ns: f64,
    /// The probe's time over the program's calls: `per_call_ns` × calls, ns.
    pub total_ns: f64,
    /// Time oscost took to load and attach the probe before the program started, ns.
    pub setup_ns: u64,
}

/// The program's resource usage as the kernel's own accounting gives it (`getrusage` of
/// the reaped descendants, or `/proc` for an attached process).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Where it comes from: `getrusage` or `/proc`.
    pub source: String,
    /// User-mode CPU time, ns.
    pub user_ns: u64,
    /// Kernel CPU time, ns (interrupts that hit the program included).
    pub system_ns: u64,
    /// Faults served without I/O.
    pub minor_faults: u64,
    /// Faults that read from a device.
    pub major_faults: u64,
    /// Switches away while blocking.
    pub voluntary: u64,
    /// Switches away while runnable.
    pub involuntary: u64,
    /// The largest resident set, KiB (0: unknown).
    pub max_rss_kib: u64,
    /// The time its first task (the command's process, or the attached process's main
    /// thread) was runnable but waiting for a CPU, ns (`/proc/PID/schedstat`); `None`: not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_task_wait_ns: Option<u64>,
}

/// A price: one operation's cost from a datasheet run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// The case (or derived figure) it comes from.
    pub case: String,
    /// The run of that case.
    pub run: String,
    /// Its median (or estimate), ns.
    pub ns: f64,
    /// Its 95 % interval, ns.
    pub ci95: [f64; 2],
    /// A floor only (the system call's entry and exit, not its work).
    pub floor: bool,
}

/// One system call's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallLine {
    /// Its name.
    pub name: String,
    /// Its number.
    pub nr: u32,
    /// Calls made.
    pub count: u64,
    /// Calls that failed (timed bills only).
    pub errors: Option<u64>,
    /// Its time on the CPU, ns (timed bills only), as the program sees a call: the kernel's
    /// time between its entry and exit (less the time switched out, in interrupts and in the
    /// probe), plus the entry and exit themselves (a call that does nothing, timed untraced).
    pub time_ns: Option<u64>,
    /// A call's median and 99th percentile, ns, from the kernel's histogram (four buckets per
    /// power of two, so ±10 %).
    pub median_ns: Option<f64>,
    /// See `median_ns`.
    pub p99_ns: Option<f64>,
    /// Its price, when the datasheet has one.
    pub price: Option<Price>,
}

/// Page faults the program took, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultCounts {
    /// A read of a page not mapped yet (first touch, the zero page, a file page).
    pub read_missing: u64,
    /// A write to a page not mapped yet (a new page).
    pub write_missing: u64,
    /// A read of a mapped page the access was refused (rare: protection).
    pub read_present: u64,
    /// A write to a mapped, write-protected page (copy-on-write).
    pub write_present: u64,
}

impl FaultCounts {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.read_missing + self.write_missing + self.read_present + self.write_present
    }
}

/// The scheduler's side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sched {
    /// Switches away while blocking.
    pub voluntary: u64,
    /// Switches away while runnable (preempted).
    pub involuntary: u64,
    /// Wake-ups.
    pub wakeups: u64,
    /// Time on a CPU, ns.
    pub oncpu_ns: u64,
    /// Time runnable but waiting for a CPU, ns.
    pub wait_ns: u64,
    /// Time blocked (asleep, I/O, a lock), ns.
    pub blocked_ns: u64,
    /// Wake-up latency (woken → running), median and 99th percentile, ns.
    pub wake_latency_p50_ns: Option<f64>,
    /// See `wake_latency_p50_ns`.
    pub wake_latency_p99_ns: Option<f64>,
    /// Wake-ups by the program itself (one of its tasks, or an interrupt while one ran) after
    /// which the woken task ran on another CPU than the waker's: what pinning the program to
    /// one CPU makes same-CPU wake-ups. `None`: not counted (a bill made before oscost counted
    /// them, or a kernel without `sched:sched_waking`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_cpu_wakeups: Option<u64>,
}

/// Interrupts of one kind that ran while one of the program's tasks was current.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interrupt {
    /// The kind.
    pub kind: String,
    /// How many.
    pub count: u64,
    /// Their time, ns.
    pub time_ns: u64,
}

/// Other events of the program's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Events {
    /// Signals delivered to it.
    pub signals: u64,
    /// Threads it created.
    pub threads: u64,
    /// Processes it created.
    pub processes: u64,
    /// Programs it executed.
    pub execs: u64,
    /// TLB shootdowns it sent (remote flush IPIs).
    pub tlb_sent: u64,
    /// Shootdowns its CPUs received while it ran.
    pub tlb_received: u64,
    /// Local TLB flushes in its context.
    pub tlb_local: u64,
    /// Tasks the probe could not follow (its table full).
    pub tasks_missed: u64,
}

/// One task's share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskLine {
    /// Thread id.
    pub tid: u32,
    /// Process id.
    pub pid: u32,
    /// Its name when first seen.
    pub comm: String,
    /// From its first event to its exit (or the end of billing), ns.
    pub lifetime_ns: u64,
    /// Time on a CPU, ns.
    pub oncpu_ns: u64,
    /// Time waiting for a CPU, ns.
    pub wait_ns: u64,
    /// Time blocked, ns.
    pub blocked_ns: u64,
    /// System calls (timed bills only) and their time on the CPU, ns.
    pub calls: u64,
    /// See `calls`.
    pub call_ns: u64,
    /// Page faults.
    pub faults: u64,
    /// Interrupts' time while it was current, ns.
    pub irq_ns: u64,
    /// Voluntary and involuntary switches.
    pub voluntary: u64,
    /// See `voluntary`.
    pub involuntary: u64,
}

/// One line of the bill: a part of the program's time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// What it is.
    pub name: String,
    /// 0: a part of the task time; 1: a part of the line above.
    pub level: u8,
    /// Its events, when it is counted.
    pub count: Option<u64>,
    /// Its measured time, ns.
    pub time_ns: f64,
    /// Its share of the task time, %.
    pub share_pct: f64,
    /// count × price, ns, when priced.
    pub priced_ns: Option<f64>,
    /// The price's case and whether it is only a floor.
    pub price: Option<Price>,
}

/// A check of the bill's counts against an independent count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BillCheck {
    /// What is checked.
    pub name: String,
    /// Whether it held; None: not checked (the reason in `detail`).
    pub ok: Option<bool>,
    /// Both counts, or why it was not checked.
    pub detail: String,
}

/// A bill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bill {
    /// What was billed.
    pub target: Target,
    /// The setting it ran under (`seccomp=default`), when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under: Option<String>,
    /// From start to end as oscost saw it, ns.
    pub wall_ns: u64,
    /// How it ended.
    pub ending: Ending,
    /// How the events were counted.
    pub mechanism: Mechanism,
    /// The probe's own cost, when measured.
    pub probe_cost: Option<ProbeCost>,
    /// The kernel's accounting of the program.
    pub usage: Option<Usage>,
    /// System calls, the costliest first.
    pub calls: Vec<CallLine>,
    /// Faults taken in user mode.
    pub faults_user: FaultCounts,
    /// Faults the kernel took on the program's memory (copying to or from it).
    pub faults_kernel: FaultCounts,
    /// The scheduler's side.
    pub sched: Option<Sched>,
    /// Interrupts while it ran.
    pub interrupts: Vec<Interrupt>,
    /// Other events.
    pub events: Events,
    /// Its tasks, the longest-lived first.
    pub tasks: Vec<TaskLine>,
    /// The sum of the tasks' lifetimes (the wall time for a single task), ns.
    pub task_time_ns: u64,
    /// The bill's lines, summing with the residual to the task time.
    pub parts: Vec<Part>,
    /// Task time the parts do not explain, ns (negative: they explain more).
    pub residual_ns: f64,
    /// The share of the task time the parts explain, %.
    pub explained_pct: f64,
    /// Where the prices come from (a run id or file), or why there are none.
    pub prices_from: Option<String>,
    /// Every price the bill was priced with, each with its case and run: what a re-pricing
    /// holds another datasheet's against.
    #[serde(default)]
    pub prices: Vec<Price>,
    /// The checks.
    pub checks: Vec<BillCheck>,
    /// What the reader should know (a refusal, a missed count, an indirect cost).
    pub notes: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bill made before oscost counted cross-CPU wake-ups reads, the count unknown; one
    /// made since keeps it.
    #[test]
    fn a_sched_without_the_cross_cpu_count_still_reads() {
        let old = r#"{"voluntary": 3, "involuntary": 1, "wakeups": 3, "oncpu_ns": 10,
            "wait_ns": 2, "blocked_ns": 5, "wake_latency_p50_ns": 700.0,
            "wake_latency_p99_ns": null}"#;
        let s: Sched = serde_json::from_str(old).expect("an old bill's sched reads");
        assert_eq!(s.cross_cpu_wakeups, None);
        assert_eq!(s.wakeups, 3);
        assert!(!serde_json::to_string(&s).unwrap().contains("cross_cpu"));
        let new = Sched {
            cross_cpu_wakeups: Some(2),
            ..s
        };
        let text = serde_json::to_string(&new).unwrap();
        assert!(text.contains(r#""cross_cpu_wakeups":2"#), "{text}");
        assert_eq!(serde_json::from_str::<Sched>(&text).unwrap(), new);
    }
}
