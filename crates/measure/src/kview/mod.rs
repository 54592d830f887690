//! The kernel's own view of a measured run: its tracepoint records (read by
//! `oscost_sys::ktrace`) decoded into events on oscost's time line, and the pure functions
//! that match them with what a measuring loop saw (which interrupt, softirq or task took a
//! gap of a busy loop).

mod args;

pub use args::{NoMore, ViewArgs, ViewHelp};

use crate::timesource::TimeSource;
use oscost_sys::kseam::{Mechanism, Tracer};
use oscost_sys::ktrace::{Format, Record, Tracefs, Unavailable};
use std::collections::{BTreeMap, HashMap};

/// The label of time no kernel event explains.
pub const OUTSIDE: &str = "outside the kernel's view";
/// The label of the local timer interrupt's handler.
pub const LOCAL_TIMER: &str = "local timer";
/// The label of a CPU's idle time (the idle task switched in).
pub const IDLE: &str = "idle";

/// The local timer's entry tracepoint, `sys:event`, as a session names it.
pub const LOCAL_TIMER_ENTRY: &str = "irq_vectors:local_timer_entry";
/// The label of hrtimer callbacks' time.
pub const CALLBACKS: &str = "timer callbacks";

/// The x86 interrupt vectors with entry and exit tracepoints, and the label of each.
const VECTORS: &[(&str, &str)] = &[
    ("local_timer", LOCAL_TIMER),
    ("reschedule", "IPI reschedule"),
    ("call_function", "IPI call function"),
    ("call_function_single", "IPI call function single"),
    ("irq_work", "IPI irq work"),
    ("x86_platform_ipi", "IPI platform"),
    ("thermal_apic", "thermal interrupt"),
    ("error_apic", "APIC error"),
    ("spurious_apic", "spurious interrupt"),
];

/// The softirq kinds, by vector number (`include/linux/interrupt.h`).
const SOFTIRQS: &[&str] = &[
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// The tracepoints the noise attribution reads (those a kernel lacks are skipped).
pub const NOISE_EVENTS: &[(&str, &str)] = &[
    ("irq_vectors", "local_timer_entry"),
    ("irq_vectors", "local_timer_exit"),
    ("irq_vectors", "reschedule_entry"),
    ("irq_vectors", "reschedule_exit"),
    ("irq_vectors", "call_function_entry"),
    ("irq_vectors", "call_function_exit"),
    ("irq_vectors", "call_function_single_entry"),
    ("irq_vectors", "call_function_single_exit"),
    ("irq_vectors", "irq_work_entry"),
    ("irq_vectors", "irq_work_exit"),
    ("irq_vectors", "x86_platform_ipi_entry"),
    ("irq_vectors", "x86_platform_ipi_exit"),
    ("irq_vectors", "thermal_apic_entry"),
    ("irq_vectors", "thermal_apic_exit"),
    ("irq_vectors", "error_apic_entry"),
    ("irq_vectors", "error_apic_exit"),
    ("irq_vectors", "spurious_apic_entry"),
    ("irq_vectors", "spurious_apic_exit"),
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
    ("irq", "softirq_entry"),
    ("irq", "softirq_exit"),
    ("sched", "sched_switch"),
];

/// What one event was.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A handler started: its matching key and its label.
    Enter(String, String),
    /// A handler ended: its matching key.
    Exit(String),
    /// The scheduler switched tasks.
    Switch {
        /// The task leaving.
        prev_tid: i64,
        /// Its state: 0 is preempted (still runnable), anything else went to sleep.
        prev_state: i64,
        /// The task coming in and its name.
        next_tid: i64,
        /// Its name.
        next_comm: String,
    },
    /// A signal was delivered to the task running.
    Signal,
}

/// One kernel event on oscost's time line.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Counter ticks, on the same counter the loop read.
    pub ticks: f64,
    /// The CPU it happened on.
    pub cpu: u32,
    /// What it was.
    pub kind: Kind,
}

/// Maps `CLOCK_MONOTONIC_RAW` ns onto the counter with two anchors taken around the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeMap {
    a: (u64, u64),
    ticks_per_ns: f64,
}

impl TimeMap {
    /// From two `(counter, raw ns)` anchors (see `oscost_sys::ktrace::anchor`).
    pub fn new(a: (u64, u64), b: (u64, u64)) -> TimeMap {
        let dn = b.1.saturating_sub(a.1).max(1) as f64;
        TimeMap {
            a,
            ticks_per_ns: b.0.wrapping_sub(a.0) as f64 / dn,
        }
    }

    /// The counter reading at raw time `ns`.
    pub fn ticks(&self, ns: u64) -> f64 {
        self.a.0 as f64 + (ns as f64 - self.a.1 as f64) * self.ticks_per_ns
    }
}

/// Turns records into events by the formats of the tracepoints they came from.
pub struct Decoder {
    by_id: HashMap<u64, Format>,
    /// Handlers whose exit is traced too: an entry without its exit would hold the stack.
    paired: Vec<String>,
}

impl Decoder {
    /// A decoder for the tracepoints `formats`.
    pub fn new(formats: &[Format]) -> Decoder {
        let paired = VECTORS
            .iter()
            .map(|(v, _)| *v)
            .filter(|v| {
                let has = |end: &str| {
                    formats
                        .iter()
                        .any(|f| f.name == format!("irq_vectors:{v}_{end}"))
                };
                has("entry") && has("exit")
            })
            .map(str::to_owned)
            .collect();
        Decoder {
            by_id: formats.iter().map(|f| (f.id, f.clone())).collect(),
            paired,
        }
    }

    /// The event of `r`, or `None` for a record of no known tracepoint.
    pub fn decode(&self, r: &Record, map: &TimeMap) -> Option<Event> {
        let f = self.by_id.get(&r.event_id())?;
        let (sys, ev) = f.name.split_once(':')?;
        let kind = match (sys, ev) {
            ("irq_vectors", _) => {
                let (vec, end) = ev
                    .strip_suffix("_entry")
                    .map(|v| (v, false))
                    .or_else(|| ev.strip_suffix("_exit").map(|v| (v, true)))?;
                let label = VECTORS.iter().find(|(n, _)| *n == vec)?.1;
                if !self.paired.iter().any(|p| p == vec) {
                    return None;
                }
                if end {
                    Kind::Exit(vec.into())
                } else {
                    Kind::Enter(vec.into(), label.into())
                }
            }
            ("irq", "irq_handler_entry") => {
                let name = f.string(&r.raw, "name").unwrap_or_default();
                let irq = f.int(&r.raw, "irq").unwrap_or(-1);
                Kind::Enter("irq".into(), format!("irq {irq} {name}"))
            }
            ("irq", "irq_handler_exit") => Kind::Exit("irq".into()),
            ("timer", "hrtimer_expire_entry") => Kind::Enter("hrtimer".into(), CALLBACKS.into()),
            ("timer", "hrtimer_expire_exit") => Kind::Exit("hrtimer".into()),
            ("irq", "softirq_entry") | ("irq", "softirq_exit") => {
                let v = f.int(&r.raw, "vec").unwrap_or(-1);
                let kind = usize::try_from(v)
                    .ok()
                    .and_then(|v| SOFTIRQS.get(v))
                    .map_or_else(|| format!("softirq {v}"), |k| format!("softirq {k}"));
                if ev == "softirq_entry" {
                    Kind::Enter("softirq".into(), kind)
                } else {
                    Kind::Exit("softirq".into())
                }
            }
            ("sched", "sched_switch") => Kind::Switch {
                prev_tid: f.int(&r.raw, "prev_pid")?,
                prev_state: f.int(&r.raw, "prev_state")?,
                next_tid: f.int(&r.raw, "next_pid")?,
                next_comm: f.string(&r.raw, "next_comm")?,
            },
            ("signal", "signal_deliver") => Kind::Signal,
            _ => return None,
        };
        Some(Event {
            ticks: map.ticks(r.time_ns),
            cpu: r.cpu,
            kind,
        })
    }
}

/// A stretch of one CPU's time the kernel's events give to one label (the innermost handler,
/// or the task that ran instead of the loop).
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Start and end, in the caller's unit.
    pub from: f64,
    /// End.
    pub to: f64,
    /// What ran.
    pub label: String,
}

/// The stretches of one CPU's time the events `(at, kind)` (in time order, one CPU) explain.
/// `loop_tid` is the measuring task: while another task runs in its place, that task's name
/// labels the time.
pub fn segments(events: &[(f64, &Kind)], loop_tid: i64) -> Vec<Segment> {
    let mut segs = Vec::new();
    // The stack of what runs: (key, label); the bottom may be another task.
    let mut stack: Vec<(String, String)> = Vec::new();
    let mut last = f64::NAN;
    for &(at, kind) in events {
        // A signal's delivery runs inside what the stack holds: it neither starts nor ends a
        // stretch.
        if *kind == Kind::Signal {
            continue;
        }
        // No handler nests in itself on one CPU: an entry of one already open means the earlier
        // one's exit was never seen, and the time since is no handler's known time.
        let stale = match kind {
            Kind::Enter(key, _) => stack.iter().rposition(|(k, _)| k == key),
            _ => None,
        };
        if let Some(i) = stale {
            stack.truncate(i);
        } else if let Some((_, label)) = stack.last() {
            if at > last {
                segs.push(Segment {
                    from: last,
                    to: at,
                    label: label.clone(),
                });
            }
        }
        last = at;
        match kind {
            Kind::Enter(key, label) => stack.push((key.clone(), label.clone())),
            Kind::Exit(key) => {
                if let Some(i) = stack.iter().rposition(|(k, _)| k == key) {
                    stack.truncate(i);
                }
            }
            Kind::Switch {
                next_tid,
                next_comm,
                ..
            } => {
                // A switch ends whatever handler ran before it on this CPU's stack.
                stack.clear();
                if *next_tid != loop_tid {
                    let name = if *next_tid == 0 {
                        IDLE.to_owned()
                    } else {
                        format!("task {next_comm}")
                    };
                    stack.push(("task".into(), name));
                }
            }
            Kind::Signal => {}
        }
    }
    segs
}

/// What the kernel says about one gap of the loop.
#[derive(Debug, Clone, PartialEq)]
pub struct GapView {
    /// The label that took most of the gap, or `None`: no event inside.
    pub source: Option<String>,
    /// Time inside the gap the events explain.
    pub explained: f64,
    /// Whether the local timer's handler ran inside it.
    pub timer: bool,
}

/// Matches each gap `(start, length)` (in time order) with the segments inside it
/// (widened by `tol` on both sides: the loop's readings bracket the interruption).
pub fn attribute(gaps: &[(f64, f64)], segs: &[Segment], tol: f64) -> Vec<GapView> {
    gaps.iter()
        .map(|&(g0, len)| {
            let (lo, hi) = (g0 - tol, g0 + len + tol);
            let first = segs.partition_point(|s| s.to < lo);
            let mut by: BTreeMap<&str, f64> = BTreeMap::new();
            let mut timer = false;
            for s in segs[first..].iter().take_while(|s| s.from <= hi) {
                let t = s.to.min(hi) - s.from.max(lo);
                if t >= 0.0 {
                    *by.entry(&s.label).or_insert(0.0) += t;
                    timer |= s.label == LOCAL_TIMER;
                }
            }
            let explained: f64 = by.values().sum();
            let source = by
                .iter()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map(|(l, _)| (*l).to_owned());
            GapView {
                source,
                explained: explained.min(len),
                timer,
            }
        })
        .collect()
}

/// One source's line of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceRow {
    /// The label.
    pub source: String,
    /// Gaps it took.
    pub count: usize,
    /// Their median and p99 length.
    pub median: f64,
    /// p99.
    pub p99: f64,
    /// Their total length.
    pub lost: f64,
    /// The time the events explain in them.
    pub explained: f64,
}

/// Whose a source's time is, as the datasheet splits a CPU's lost time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whose {
    /// The kernel's own work: an interrupt, a softirq, an IPI, the timer, a kernel thread.
    Os,
    /// A task of another program (any task that is not a kernel thread).
    Programs,
    /// Nothing the guest kernel recorded: the hypervisor's time (or an SMI).
    Outside,
}

/// Whether task `tid` is a kernel thread (`Kthread:` in its `/proc` status); `None` when the
/// task is gone or the kernel does not say.
pub fn kernel_thread(tid: i64) -> Option<bool> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    let v = s.lines().find_map(|l| l.strip_prefix("Kthread:"))?;
    Some(v.trim() == "1")
}

/// Whose each source label of `events` is: every label of a switched-in task by its tid (a
/// kernel thread is the OS's; one that is gone by the time this runs, or that the kernel does
/// not mark, counts as a program's), [`OUTSIDE`] the host's, every handler the OS's.
pub fn whose_sources<'a>(events: impl IntoIterator<Item = &'a Kind>) -> BTreeMap<String, Whose> {
    let mut tasks: BTreeMap<String, Whose> = BTreeMap::new();
    for k in events {
        if let Kind::Switch {
            next_tid,
            next_comm,
            ..
        } = k
        {
            if *next_tid == 0 {
                continue;
            }
            let label = format!("task {next_comm}");
            if tasks.get(&label) == Some(&Whose::Os) {
                continue;
            }
            let w = if kernel_thread(*next_tid) == Some(true) {
                Whose::Os
            } else {
                Whose::Programs
            };
            tasks.insert(label, w);
        }
    }
    tasks
}

/// Whose the time of the source labelled `label` is, `tasks` from [`whose_sources`].
pub fn whose(label: &str, tasks: &BTreeMap<String, Whose>) -> Whose {
    if label == OUTSIDE {
        Whose::Outside
    } else if let Some(w) = tasks.get(label) {
        *w
    } else if label.starts_with("task ") {
        Whose::Programs
    } else {
        Whose::Os
    }
}

/// The gaps grouped by source, the largest total first; unexplained gaps under [`OUTSIDE`].
pub fn table(lens: &[f64], views: &[GapView]) -> Vec<SourceRow> {
    let mut by: BTreeMap<String, (Vec<f64>, f64)> = BTreeMap::new();
    for (len, v) in lens.iter().zip(views) {
        let e = by
            .entry(v.source.clone().unwrap_or_else(|| OUTSIDE.into()))
            .or_default();
        e.0.push(*len);
        e.1 += v.explained;
    }
    let mut rows: Vec<SourceRow> = by
        .into_iter()
        .map(|(source, (mut l, explained))| {
            l.sort_by(f64::total_cmp);
            SourceRow {
                source,
                count: l.len(),
                median: oscost_stats::percentile(&l, 50.0),
                p99: oscost_stats::percentile(&l, 99.0),
                lost: l.iter().sum(),
                explained,
            }
        })
        .collect();
    rows.sort_by(|a, b| b.lost.total_cmp(&a.lost));
    rows
}

/// A short key for a label in counter names: lower case, words joined by `_`.
pub fn key(label: &str) -> String {
    let mut k = String::new();
    for c in label.chars() {
        if c.is_ascii_alphanumeric() {
            k.push(c.to_ascii_lowercase());
        } else if !k.ends_with('_') {
            k.push('_');
        }
    }
    k.trim_matches('_').to_owned()
}

/// The mechanism asked for on the command line (`--trace-with`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum TraceWith {
    /// BPF programs on raw tracepoints.
    Bpf,
    /// An ftrace instance of oscost's own.
    Ftrace,
    /// perf_event_open tracepoints.
    Perf,
}

impl TraceWith {
    /// The mechanisms to try: the one asked for (the lightest when none was), then the
    /// others, lightest first.
    pub fn order(chosen: Option<TraceWith>) -> Vec<Mechanism> {
        let first = match chosen {
            None | Some(TraceWith::Bpf) => Mechanism::Bpf,
            Some(TraceWith::Ftrace) => Mechanism::Ftrace,
            Some(TraceWith::Perf) => Mechanism::Perf,
        };
        std::iter::once(first)
            .chain(Mechanism::ALL.into_iter().filter(|&m| m != first))
            .collect()
    }
}

/// What a run's traced passes, taken case by case, came to: whether they were wanted, why
/// none could be once one found tracing unavailable (the rest are not tried), how many were
/// traced with which mechanism, and their notes.
#[derive(Debug)]
pub struct Passes {
    /// `--no-kernel-view`.
    pub off: bool,
    /// The mechanisms to try, in order.
    pub order: Vec<Mechanism>,
    /// Why tracing is unavailable, once a pass found it so.
    pub unavailable: Option<String>,
    notes: Vec<oscost_model::Message>,
    traced: usize,
    used: Option<Mechanism>,
}

impl Passes {
    /// No pass taken yet; `off` for `--no-kernel-view`, `chosen` from `--trace-with`.
    pub fn new(off: bool, chosen: Option<TraceWith>) -> Passes {
        Passes {
            off,
            order: TraceWith::order(chosen),
            unavailable: None,
            notes: Vec::new(),
            traced: 0,
            used: None,
        }
    }

    /// Whether another pass is to be tried.
    pub fn wanted(&self) -> bool {
        !self.off && self.unavailable.is_none()
    }

    /// Keeps a pass's note, once however many passes make it.
    pub fn note(&mut self, n: oscost_model::Message) {
        if !self.notes.contains(&n) {
            self.notes.push(n);
        }
    }

    /// Counts a pass traced with `m`.
    pub fn traced_with(&mut self, m: Mechanism) {
        self.traced += 1;
        self.used = Some(m);
    }

    /// Says in `out` what was traced (`traced`: the words for "some were"; `none`: for no
    /// case to trace), or why nothing was, with the unavailable entry `id` (`what` it splits),
    /// the mechanism used and the passes' notes.
    pub fn finish(
        self,
        out: &mut oscost_model::case::ExperimentOutput,
        (id, what): (String, &str),
        none: &str,
        traced: String,
    ) {
        let state = match (self.unavailable, self.off) {
            (_, true) => "off (--no-kernel-view)".to_owned(),
            (Some(why), _) => {
                out.unavailable.push(oscost_model::case::Unavailable {
                    id,
                    description: what.into(),
                    reason: why.clone(),
                });
                why
            }
            (None, _) if self.traced == 0 => none.to_owned(),
            (None, _) => traced,
        };
        out.params
            .insert("kernel_view".into(), serde_json::json!(state));
        if let Some(m) = self.used {
            out.params
                .insert("kernel_view_mechanism".into(), serde_json::json!(m.name()));
        }
        out.notes.extend(self.notes);
    }
}

/// What a traced pass asks of [`Session::open`].
#[derive(Debug, Clone, Copy)]
pub struct Pass<'a> {
    /// The tracepoints, `(system, event)`.
    pub events: &'a [(&'a str, &'a str)],
    /// The CPUs recorded.
    pub cpus: &'a [usize],
    /// Whether the pass is one of several, each mounting tracefs anew where it is mounted
    /// nowhere (the note says so).
    pub each: bool,
    /// `None`: tracepoints this kernel lacks are skipped and named in a note. `Some(why)`: the
    /// pass needs every one, so a kernel lacking any (or a tracefs closed to this user) is the
    /// reason it is not measured; `why` ends the reason for lacking ones.
    pub needs_all: Option<&'a str>,
    /// The mechanisms to try, in order (see `oscost_sys::kseam`).
    pub mechanisms: &'a [Mechanism],
    /// The fields the pass reads, by tracepoint (`sys:event`): a mechanism whose records
    /// would leave any of them at zero is passed over, and the notes say which fields.
    pub fields: &'a [(&'a str, &'a [&'a str])],
}

impl<'a> Pass<'a> {
    /// A single pass over `events` on `cpus` by the first of `mechanisms` this kernel
    /// allows, skipping the tracepoints it lacks.
    pub fn new(
        events: &'a [(&'a str, &'a str)],
        cpus: &'a [usize],
        mechanisms: &'a [Mechanism],
    ) -> Pass<'a> {
        Pass {
            events,
            cpus,
            each: false,
            needs_all: None,
            mechanisms,
            fields: &[],
        }
    }
}

/// A traced run: the tracer, its tracefs, and where their times are anchored.
pub struct Session {
    tracer: Tracer,
    /// The record of the ftrace instance, dropped once the tracer removed it.
    _instance: Option<crate::sysctl::MountRecord>,
    /// Kept so a tracefs mounted for the run is unmounted after the tracer is closed (fields
    /// drop in order of declaration).
    _fs: Tracefs,
    /// The record of a tracefs mounted for the run, dropped after the unmount: if this process
    /// is killed first, the next oscost run unmounts it.
    _mount: Option<crate::sysctl::MountRecord>,
    start: (u64, u64),
}

impl Session {
    /// Opens `pass`'s tracepoints, disabled, mounting tracefs where it is mounted nowhere: the
    /// session with its notes (what was changed on the machine, the tracepoints skipped), or
    /// the one line saying why tracing is not to be had and how to get it.
    pub fn open(pass: &Pass) -> Result<(Session, Vec<oscost_model::Message>), Unavailable> {
        let fs = Tracefs::open()?;
        let mut notes = Vec::new();
        // Not being able to record it only loses the clean-up after a kill.
        let mount = fs
            .mounted_here()
            .then(|| {
                let me = crate::sysctl::Holder::this_process()?;
                let dir = crate::sysctl::settings_dir();
                crate::sysctl::record_mount(&dir, fs.mountpoint(), "tracefs", me).ok()
            })
            .flatten();
        if fs.mounted_here() {
            let (passes, after) = if pass.each {
                ("passes", "after each")
            } else {
                ("pass", "after")
            };
            notes.push(
                format!(
                "tracefs was not mounted: mounted on {} for the traced {passes}, unmounted {after}",
                fs.mountpoint().display()
            )
                .into(),
            );
        }
        // Instances of runs long gone whose records went too (an instance outlives the
        // tracefs mount it was made under) are removed once tracefs shows them.
        for (dir, pid) in oscost_sys::ftrace::orphans(&fs) {
            notes.push(
                match oscost_sys::ftrace::remove_instance(&fs, &dir) {
                    Ok(_) => format!(
                        "removed the ftrace instance {} (the oscost process that made it, pid \
                         {pid}, ended without removing it)",
                        dir.display()
                    ),
                    Err(e) => format!(
                        "cannot remove the ftrace instance {} that oscost pid {pid} left: {e}; \
                         `rmdir` it by hand",
                        dir.display()
                    ),
                }
                .into(),
            );
        }
        // An ftrace instance is recorded as soon as it exists: a run killed before it is
        // removed has the next run remove it.
        let mut instance = None;
        let mut made = |dir: &std::path::Path| {
            instance = crate::sysctl::Holder::this_process().and_then(|me| {
                let rec = crate::sysctl::settings_dir();
                crate::sysctl::record_mount(&rec, dir, crate::sysctl::FTRACE_INSTANCE, me).ok()
            });
        };
        let tracer = match Tracer::open(
            &fs,
            pass.events,
            pass.cpus,
            pass.mechanisms,
            pass.fields,
            &mut made,
        ) {
            Ok(t) => t,
            Err(u) if pass.needs_all.is_some() => return Err(closed(&fs).unwrap_or(u)),
            Err(u) => return Err(u),
        };
        if let Some(n) = passed_over(&tracer) {
            notes.push(n.into());
        }
        if !tracer.missing().is_empty() {
            let missing = tracer.missing().join(", ");
            match pass.needs_all {
                Some(why) => {
                    return Err(Unavailable(format!(
                        "this kernel lacks the tracepoints {missing}: {why}"
                    )))
                }
                None => notes
                    .push(format!("tracepoints this kernel lacks, not traced: {missing}").into()),
            }
        }
        let session = Session {
            _fs: fs,
            _mount: mount,
            tracer,
            _instance: instance,
            start: (0, 0),
        };
        Ok((session, notes))
    }

    /// Keeps only the system calls of threads `tids` (every other task's would fill the
    /// buffers).
    pub fn keep_threads(&self, tids: &[u32]) -> std::io::Result<()> {
        self.tracer.keep_threads(tids)
    }

    /// The mechanism recording.
    pub fn mechanism(&self) -> Mechanism {
        self.tracer.mechanism()
    }

    /// Tracepoints asked for that are not recorded (this kernel lacks or refuses them).
    pub fn missing(&self) -> &[String] {
        self.tracer.missing()
    }

    /// The clock of the records' times (to anchor another clock against them).
    pub fn clock(&self) -> libc::clockid_t {
        self.tracer.clock()
    }

    /// Starts recording; anchors the time line.
    pub fn start<C: TimeSource + ?Sized>(&mut self, clock: &C) -> std::io::Result<()> {
        self.tracer.enable()?;
        self.start = oscost_sys::ktrace::anchor_on(self.tracer.clock(), || clock.now());
        Ok(())
    }

    /// Stops recording and decodes every event; counts the records of each tracepoint per
    /// CPU (`(cpu, sys:event)`), and those the kernel dropped.
    pub fn stop<C: TimeSource + ?Sized>(&mut self, clock: &C) -> std::io::Result<Stopped> {
        let end = oscost_sys::ktrace::anchor_on(self.tracer.clock(), || clock.now());
        self.tracer.disable()?;
        let map = TimeMap::new(self.start, end);
        let dec = Decoder::new(self.tracer.formats());
        let records = self.tracer.drain();
        let mut counts: BTreeMap<(u32, String), u64> = BTreeMap::new();
        for r in &records {
            if let Some(f) = dec.by_id.get(&r.event_id()) {
                *counts.entry((r.cpu, f.name.clone())).or_insert(0) += 1;
            }
        }
        Ok(Stopped {
            mechanism: self.tracer.mechanism(),
            events: records.iter().filter_map(|r| dec.decode(r, &map)).collect(),
            counts,
            lost: self.tracer.lost(),
            lost_by_event: self.tracer.lost_by_event(),
            unsampled: self.tracer.unsampled(),
            unsampled_by: self.tracer.unsampled_by(),
            window_ns: end.1.saturating_sub(self.start.1),
        })
    }
}

/// The line saying which mechanism records and why the lighter ones tried first do not, or
/// `None` when the first one tried does.
fn passed_over(t: &Tracer) -> Option<String> {
    let skipped = t.passed_over();
    if skipped.is_empty() {
        return None;
    }
    let names = skipped
        .iter()
        .map(|(m, _)| m.describe())
        .collect::<Vec<_>>()
        .join(" or ");
    let why = skipped
        .iter()
        .map(|(_, why)| why.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    Some(format!(
        "the kernel's tracepoints are recorded by {} ({}), not by {names}: {why}",
        t.mechanism().describe(),
        t.mechanism()
    ))
}

impl Drop for Session {
    fn drop(&mut self) {
        // An instance that could not be removed keeps its record: the next run removes it.
        if let Some(record) = self._instance.take() {
            if self.tracer.remove().is_err() {
                std::mem::forget(record);
            }
        }
    }
}

/// A tracefs mounted by someone else but closed to this user hides every tracepoint: say it
/// is permission, not a kernel without them.
fn closed(fs: &Tracefs) -> Option<Unavailable> {
    let e = std::fs::read_dir(fs.root().join("events")).err()?;
    (e.kind() == std::io::ErrorKind::PermissionDenied).then(|| {
        Unavailable(format!(
            "the kernel's tracepoints cannot be read (tracefs at {}: {e}): run as root (or \
             with CAP_PERFMON and read access to tracefs)",
            fs.mountpoint().display()
        ))
    })
}

/// What a session recorded.
pub struct Stopped {
    /// The mechanism that recorded it.
    pub mechanism: Mechanism,
    /// The decoded events, in time order.
    pub events: Vec<Event>,
    /// Records per `(cpu, sys:event)`.
    pub counts: BTreeMap<(u32, String), u64>,
    /// Records the mechanism lost (a full buffer, a program that could not run).
    pub lost: u64,
    /// Those of [`Stopped::lost`] the kernel counted by tracepoint (`sys:event`): BPF
    /// programs it did not run because they were already running on that CPU.
    pub lost_by_event: BTreeMap<String, u64>,
    /// Events the kernel counted but did not sample, none lost (see
    /// [`oscost_sys::ktrace::Tracer::unsampled`]).
    pub unsampled: u64,
    /// The same by `(cpu, sys:event)`, where any.
    pub unsampled_by: BTreeMap<(u32, String), u64>,
    /// How long recording was on, ns.
    pub window_ns: u64,
}

/// What a session recorded, undecoded: for a reader of tracepoints the [`Decoder`] does not
/// know (the scheduler's wake-ups, system calls), or one that decodes them later
/// ([`Raw::events`]).
pub struct Raw {
    /// The mechanism that recorded them.
    pub mechanism: Mechanism,
    /// Every record, in time order.
    pub records: Vec<Record>,
    /// The formats of the tracepoints opened.
    pub formats: Vec<Format>,
    /// Maps the records' times onto the counter.
    pub map: TimeMap,
    /// Records the kernel dropped (a ring was full, a program was not run).
    pub lost: u64,
    /// Those of [`Raw::lost`] the kernel counted by tracepoint (see [`Stopped::lost_by_event`]).
    pub lost_by_event: BTreeMap<String, u64>,
    /// Events the kernel counted but did not sample, none lost (see
    /// [`oscost_sys::ktrace::Tracer::unsampled`]).
    pub unsampled: u64,
    /// How long recording was on, ns.
    pub window_ns: u64,
}

/// Counters naming each tracepoint's records lost to programs the kernel did not run
/// (`trace_records_lost.<sys>.<event>`), for a case's counters beside `trace_records_lost`.
pub fn lost_counters(by_event: &BTreeMap<String, u64>) -> Vec<(String, f64)> {
    by_event
        .iter()
        .map(|(e, n)| {
            (
                format!("trace_records_lost.{}", e.replace(':', ".")),
                *n as f64,
            )
        })
        .collect()
}

/// The words naming them, `" (sched:sched_switch 3, ...: BPF programs the kernel did not
/// run, ...)"`, or nothing when there are none.
pub fn lost_words(by_event: &BTreeMap<String, u64>) -> String {
    if by_event.is_empty() {
        return String::new();
    }
    let each: Vec<String> = by_event.iter().map(|(e, n)| format!("{e} {n}")).collect();
    format!(
        " ({}: BPF programs the kernel did not run, already running on their CPU)",
        each.join(", ")
    )
}

impl Raw {
    /// The format of the tracepoint `r` came from.
    pub fn format(&self, r: &Record) -> Option<&Format> {
        self.formats.iter().find(|f| f.id == r.event_id())
    }

    /// The records of tracepoints the [`Decoder`] knows, decoded, in time order.
    pub fn events(&self) -> Vec<Event> {
        let dec = Decoder::new(&self.formats);
        self.records
            .iter()
            .filter_map(|r| dec.decode(r, &self.map))
            .collect()
    }
}

impl Session {
    /// Stops recording and hands back the records as they came, with their formats.
    pub fn stop_raw<C: TimeSource + ?Sized>(&mut self, clock: &C) -> std::io::Result<Raw> {
        let end = oscost_sys::ktrace::anchor_on(self.tracer.clock(), || clock.now());
        self.tracer.disable()?;
        let records = self.tracer.drain();
        Ok(Raw {
            mechanism: self.tracer.mechanism(),
            records,
            formats: self.tracer.formats().to_vec(),
            map: TimeMap::new(self.start, end),
            lost: self.tracer.lost(),
            lost_by_event: self.tracer.lost_by_event(),
            unsampled: self.tracer.unsampled(),
            window_ns: end.1.saturating_sub(self.start.1),
        })
    }
}

#[cfg(test)]
mod tests;
