//! The bill's measurement: a command run (or a process attached) with the kernel counting
//! every OS operation of its tasks, the kernel's own accounting read beside it, and the
//! counts checked against independent ones. Pricing and the parts' sums are the report
//! layer's; this module only measures.

mod fill;
mod perf;
mod tree;

use crate::sysctl::{self, CgroupRecord, Holder};
use fill::{call_check, checks, fill};
use oscost_model::bill::{
    Bill, CallDepth, Counter, Ending, Events, FaultCounts, Mechanism, ProbeCost, Target, Usage,
};
use oscost_stats::median;
use oscost_sys::bill::{self as probe, Depth, Probe, Scope};
use oscost_sys::launch::{self, CallCounter, Ended, Rusage};
use oscost_sys::syscount::CallCounts;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

/// What to bill.
#[derive(Debug, Clone)]
pub enum Subject {
    /// Run this command (program first), under this setting when one is given.
    Command(Vec<OsString>, Option<Under>),
    /// Attach to this process, for at most this long.
    Process(u32, Option<Duration>),
}

/// A setting a command is billed under.
#[derive(Debug, Clone)]
pub enum Under {
    /// A seccomp filter installed just before the command executes (with `no_new_privs`), as
    /// a container runtime installs its profile; `name` as the user gave it.
    Seccomp {
        /// `seccomp=default`, …
        name: String,
        /// The filter.
        program: oscost_sys::seccomp::Program,
    },
    /// New mount, UTS, IPC, PID, network and cgroup namespaces, the command born in them (as
    /// `ns.container`'s child is, and as a container runtime starts one): it is the init of
    /// its PID namespace, and its network namespace has a loopback, down.
    Container,
    /// Pinned to these CPUs (`sched_setaffinity` in the command's process just before it
    /// executes: every task it makes inherits them); `name` as the user gave it (`cpus=0`).
    Cpus {
        /// `cpus=0`, `cpus=0-1`, …
        name: String,
        /// The CPUs.
        cpus: Vec<usize>,
    },
}

impl Under {
    /// The setting as the user named it.
    pub fn name(&self) -> &str {
        match self {
            Under::Seccomp { name, .. } | Under::Cpus { name, .. } => name,
            Under::Container => "container",
        }
    }

    /// How the command is born under it.
    fn birth(&self) -> launch::Birth<'_> {
        match self {
            Under::Seccomp { program, .. } => launch::Birth {
                filter: Some(program),
                ..launch::Birth::default()
            },
            Under::Container => launch::Birth {
                namespaces: oscost_sys::ns::flags(&oscost_sys::ns::CONTAINER),
                ..launch::Birth::default()
            },
            Under::Cpus { cpus, .. } => launch::Birth {
                cpus: Some(cpus),
                ..launch::Birth::default()
            },
        }
    }
}

/// How the caller and the run talk while it goes: the child to forward signals to, and a
/// request to stop billing an attached process.
#[derive(Debug, Default)]
pub struct Control {
    /// The command's process id once started (0 before).
    pub child: AtomicI32,
    /// Set to stop billing (an attached process keeps running).
    pub stop: AtomicBool,
    /// A signal that came before the command started (0: none): the command is not started.
    pub early: AtomicI32,
    /// The command is the init of its own PID namespace, which the kernel hands only the
    /// signals it has a handler for: one forwarded may need a SIGKILL after it.
    pub init: AtomicBool,
}

/// Why a bill could not be made at all.
#[derive(Debug, thiserror::Error)]
pub enum BillError {
    /// The command could not be started (`exit` is the shell's status for it).
    #[error("{message}")]
    NotStarted {
        /// One line naming the problem.
        message: String,
        /// 127: not found; 126: found but not executable.
        exit: u8,
    },
    /// A signal came before the command started; it was not started.
    #[error("interrupted before the command started (it was not run)")]
    Interrupted,
    /// Anything else, in one line.
    #[error("{0}")]
    Other(String),
}

fn now_ns() -> u64 {
    oscost_sys::clock::clock_ns(libc::CLOCK_MONOTONIC)
}

/// The cgroup v2 the command runs in: made under this process's own cgroup, removed (its
/// remaining processes moved back up first) when dropped.
struct BillCgroup {
    path: PathBuf,
    parent: PathBuf,
    _record: Option<CgroupRecord>,
}

impl BillCgroup {
    fn make() -> Result<BillCgroup, String> {
        let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let mount = mounts
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.get(2) == Some(&"cgroup2"))
            .and_then(|f| f.get(1).map(|m| PathBuf::from(*m)))
            .ok_or("no cgroup v2 hierarchy is mounted (mount -t cgroup2 none /sys/fs/cgroup)")?;
        let own = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let rel = own
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .ok_or("this process has no cgroup v2 (no `0::` line in /proc/self/cgroup)")?;
        let parent = mount.join(rel.trim_start_matches('/'));
        let path = parent.join(format!("oscost-{}-bill", std::process::id()));
        let record = Holder::this_process()
            .and_then(|me| sysctl::record_cgroup(&sysctl::settings_dir(), &path, me).ok());
        fs::create_dir(&path).map_err(|e| {
            format!(
                "making the cgroup {}: {e} (the kernel's counts follow a command through a \
                 cgroup of its own: run as root, or in a cgroup delegated to you)",
                path.display()
            )
        })?;
        Ok(BillCgroup {
            path,
            parent,
            _record: record,
        })
    }

    fn id(&self) -> io::Result<u64> {
        use std::os::unix::fs::MetadataExt;
        Ok(fs::metadata(&self.path)?.ino())
    }
}

impl Drop for BillCgroup {
    fn drop(&mut self) {
        // Descendants still running go back to oscost's cgroup: a populated cgroup cannot go.
        if let Ok(pids) = fs::read_to_string(self.path.join("cgroup.procs")) {
            for pid in pids.lines() {
                let _ = fs::write(self.parent.join("cgroup.procs"), pid);
            }
        }
        let _ = fs::remove_dir(&self.path);
    }
}

/// What the probe costs a system call, measured on this process before billing: rounds of a
/// call the kernel refuses at once (ENOSYS) untraced and traced, interleaved. The added time
/// per call, its spread, the bare call, and the part of the added time that falls inside the
/// probe's own timing of a call (its time for a call that does no work).
struct Calibration {
    added_ns: f64,
    range_ns: [f64; 2],
    bare_ns: f64,
    in_window_ns: f64,
    /// What removing one of its events took (perf's: the kernel waits for a grace period on
    /// each), ns; none for BPF, whose programs go together.
    removal_ns: f64,
}

impl Calibration {
    /// From the rounds' added and bare times: their medians, the added times' range.
    fn of(added: &[f64], bare: &[f64], in_window_ns: f64, removal_ns: f64) -> Calibration {
        let lo = added.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = added.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Calibration {
            added_ns: median(added),
            range_ns: [lo, hi],
            bare_ns: median(bare),
            in_window_ns,
            removal_ns,
        }
    }
}

/// The time `calls` calls of `call` took this thread, ns a call, less the time it waited for
/// a CPU meanwhile (its schedstat's run-queue wait): another task on its CPU, or the kernel's
/// threads woken by detaching a probe, are not the calls' cost.
fn per_call(calls: u32, call: impl Fn() -> i64) -> f64 {
    let waited = || schedstat(Path::new("/proc/thread-self/schedstat")).map_or(0, |(_, wait)| wait);
    let w = waited();
    let t = now_ns();
    for _ in 0..calls {
        std::hint::black_box(call());
    }
    let elapsed = now_ns() - t;
    elapsed.saturating_sub(waited().saturating_sub(w)) as f64 / f64::from(calls)
}

fn calibrate(depth: Depth) -> Option<Calibration> {
    const CALLS: u32 = 20_000;
    const ROUNDS: usize = 5;
    let mut p = Probe::load_calls_only(Scope::Process(std::process::id()), depth).ok()?;
    let timed = || per_call(CALLS, oscost_sys::calls::invalid_syscall);
    timed();
    let (mut bare, mut added) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let b = timed();
        p.attach().ok()?;
        let t = timed();
        p.detach();
        bare.push(b);
        added.push(t - b);
    }
    let totals = p.read().ok()?;
    let in_window_ns = totals
        .calls
        .iter()
        .find(|c| c.nr == probe::CALL_SLOTS - 1 && c.count > 0)
        .map_or(0.0, |c| c.time_ns as f64 / c.count as f64);
    let in_window_ns = if depth == Depth::Time {
        in_window_ns
    } else {
        0.0
    };
    Some(Calibration::of(&added, &bare, in_window_ns, 0.0))
}

/// The tracepoint id of `raw_syscalls:sys_enter`, for the independent count.
fn sys_enter_id() -> Result<u64, String> {
    let fs = oscost_sys::ktrace::Tracefs::open().map_err(|e| e.0)?;
    fs.format("raw_syscalls", "sys_enter")
        .map(|f| f.id)
        .ok_or_else(|| "raw_syscalls:sys_enter is not in tracefs".into())
}

fn online_cpus() -> Vec<usize> {
    let text = fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    oscost_model::cpulist::parse(text.trim()).unwrap_or_else(|_| vec![0])
}

/// A process's counters from `/proc` (for one that is not oscost's child).
fn proc_usage(pid: u32) -> Option<Rusage> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields after the name, from 3 (state): minflt 10, majflt 12, utime 14, stime 15.
    let at = |n: usize| f.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    // SAFETY-free: sysconf via libc is not needed; USER_HZ is 100 on every Linux ABI.
    let tick = 10_000_000;
    let (mut vol, mut invol) = (0, 0);
    if let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            let s = fs::read_to_string(t.path().join("status")).unwrap_or_default();
            for l in s.lines() {
                if let Some(v) = l.strip_prefix("voluntary_ctxt_switches:") {
                    vol += v.trim().parse::<u64>().unwrap_or(0);
                } else if let Some(v) = l.strip_prefix("nonvoluntary_ctxt_switches:") {
                    invol += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
    }
    Some(Rusage {
        user_ns: at(14)? * tick,
        system_ns: at(15)? * tick,
        minor_faults: at(10)?,
        major_faults: at(12)?,
        voluntary: vol,
        involuntary: invol,
        max_rss_kib: 0,
    })
}

/// Whether process `pid` is still running (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rfind(')')
            .and_then(|i| s[i + 1..].split_whitespace().next())
            .is_some_and(|st| st != "Z" && st != "X")
    })
}

/// `/proc/PID/schedstat` of a task: on-CPU and run-queue time, ns.
fn schedstat(path: &Path) -> Option<(u64, u64)> {
    let t = fs::read_to_string(path).ok()?;
    let mut f = t.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

/// What to bill with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// The BPF probe, doing this much per call; where BPF is refused, perf's counts of the
    /// calls by name.
    Bpf(Depth),
    /// perf's counts of the calls by name only (`--trace-with perf`).
    Perf,
    /// Nothing in the kernel: its own accounting only (`--trace-with none`).
    None,
}

/// What the probe side gave, or why there is none.
struct Counted {
    probe: Option<Probe>,
    /// perf's counts by call name, where they stand in for the probe.
    perf: Option<CallCounts>,
    refused: Option<String>,
    counter: Result<CallCounter, String>,
    cost: Option<Calibration>,
}

/// Why no independent count was made without `--verify`.
const NOT_VERIFIED: &str =
    "--verify counts them again with perf_event_open (at about the probe's cost again)";

impl Counted {
    /// No probe, for this reason: the kernel's own accounting only.
    fn none(why: impl Into<String>) -> Counted {
        Counted {
            probe: None,
            perf: None,
            refused: Some(why.into()),
            counter: Err("no probe".into()),
            cost: None,
        }
    }

    /// Where BPF gave nothing and a counter was asked for, perf's counts by call name,
    /// opened by `open` (and the independent count by `independent`, with `verify`); where
    /// perf is refused too, both reasons.
    fn or_perf(
        mut self,
        counting: Counting,
        verify: bool,
        open: impl FnOnce(&[(String, u64)]) -> io::Result<CallCounts>,
        independent: impl FnOnce(u64) -> io::Result<CallCounter>,
    ) -> Counted {
        if self.probe.is_some() || counting == Counting::None {
            return self;
        }
        // An earlier bill's events still on this thread would be inherited by the next command
        // and turned on at its exec: they must be gone first.
        perf::removed();
        let started = perf::tracepoints().and_then(|tps| {
            let cost = perf::calibrate(&tps);
            perf::start(&tps, open).map(|c| (c, cost))
        });
        match started {
            Ok((c, cost)) => {
                self.perf = Some(c);
                self.cost = cost;
                self.counter = if verify {
                    sys_enter_id().and_then(|id| independent(id).map_err(|e| e.to_string()))
                } else {
                    Err(NOT_VERIFIED.into())
                };
            }
            Err(e) => {
                let bpf = self
                    .refused
                    .take()
                    .map_or(String::new(), |r| format!("{r}; "));
                self.refused = Some(format!("{bpf}perf: {e}"));
            }
        }
        self
    }
}

/// Why a bill without a probe has none when the user chose it (`--trace-with none`).
pub const NO_PROBE: &str = "--trace-with none: no probe, the kernel's own accounting only";

fn start_probe(
    scope: Scope,
    depth: Depth,
    verify: bool,
    counter: impl FnOnce(u64) -> io::Result<CallCounter>,
) -> Counted {
    let cost = calibrate(depth);
    match Probe::load(scope, depth) {
        Ok(mut p) => match p.attach() {
            Ok(()) => {
                let counter = if verify {
                    sys_enter_id().and_then(|id| counter(id).map_err(|e| e.to_string()))
                } else {
                    Err(NOT_VERIFIED.into())
                };
                Counted {
                    probe: Some(p),
                    perf: None,
                    refused: None,
                    counter,
                    cost,
                }
            }
            Err(e) => Counted::none(format!("attaching the probe: {e}")),
        },
        Err(e) => Counted::none(e.0),
    }
}

/// What a bill counted by perf holds.
const PERF_COUNTS: &str = "system calls counted by name in the kernel with perf's events on \
                           their tracepoints (counts, not times); faults, switches and CPU time \
                           are the kernel's own accounting";

/// Why a bill has no BPF probe when the user chose perf (`--trace-with perf`).
const PERF_ASKED: &str = "--trace-with perf: BPF not asked for";

/// Runs or attaches, and measures with `counting`.
pub fn run(
    subject: &Subject,
    counting: Counting,
    verify: bool,
    control: &Control,
) -> Result<Bill, BillError> {
    let setup_start = now_ns();
    let mut notes = Vec::new();
    let mut leader_sched = None;
    // The first task's run-queue wait, the kernel's own: beside a bill without the probe's.
    let mut first_wait = None;
    let (target, counted, usage, ending, start, end, cgroup) = match subject {
        Subject::Command(argv, under) => {
            let (counted, cg) = match (counting, BillCgroup::make()) {
                (Counting::Bpf(d), Ok(cg)) => {
                    let dir = fs::File::open(&cg.path).map_err(|e| BillError::Other(e.to_string()));
                    let counted = match (cg.id(), dir) {
                        (Ok(id), Ok(dir)) => start_probe(Scope::Cgroup(id), d, verify, |tp| {
                            CallCounter::cgroup(tp, &dir, &online_cpus())
                        }),
                        _ => Counted::none("cannot read the cgroup's id"),
                    };
                    (counted, Some(cg))
                }
                (Counting::Bpf(_), Err(why)) => (Counted::none(why), None),
                (Counting::Perf, cg) => (Counted::none(PERF_ASKED), cg.ok()),
                (Counting::None, cg) => (Counted::none(NO_PROBE), cg.ok()),
            };
            // On this thread, which starts the command: its events turn on when it executes.
            let counted =
                counted.or_perf(counting, verify, CallCounts::on_exec, CallCounter::on_exec);
            let _ = launch::become_subreaper();
            let before = launch::children_rusage();
            if control.early.load(Ordering::SeqCst) != 0 {
                return Err(BillError::Interrupted);
            }
            let start = now_ns();
            let birth = under.as_ref().map(Under::birth).unwrap_or_default();
            control.init.store(birth.namespaces != 0, Ordering::SeqCst);
            let pid = start_command(argv, cg.as_ref(), &birth)?;
            control.child.store(pid, Ordering::SeqCst);
            // A signal between the look above and now was not forwarded: forward it.
            let early = control.early.swap(0, Ordering::SeqCst);
            if early != 0 {
                let _ = launch::signal(pid, early);
            }
            launch::wait_unreaped(pid).map_err(|e| BillError::Other(e.to_string()))?;
            let end = now_ns();
            leader_sched =
                schedstat(Path::new(&format!("/proc/{pid}/schedstat"))).map(|s| (pid as u32, s));
            first_wait = leader_sched.map(|(_, (_, wait))| wait);
            let ended = launch::reap(pid).map_err(|e| BillError::Other(e.to_string()))?;
            control.child.store(0, Ordering::SeqCst);
            let (_, running) = launch::reap_ended();
            if running {
                notes.push(
                    "descendants of the command were still running when it ended: they are \
                     billed up to its end, and their usage is not in getrusage's counts"
                        .into(),
                );
            }
            let usage = launch::children_rusage().since(&before);
            let ending = match ended {
                Ended::Exited(c) => Ending::Exited(c),
                Ended::Killed(s) => Ending::Killed(s),
            };
            let argv = argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            (
                Target::Command { argv },
                counted,
                Some((usage, "getrusage")),
                ending,
                start,
                end,
                cg,
            )
        }
        Subject::Process(pid, duration) => {
            let pid = *pid;
            let comm = fs::read_to_string(format!("/proc/{pid}/comm"))
                .map(|c| c.trim_end().to_owned())
                .map_err(|_| {
                    BillError::Other(format!("no process {pid} (`ps -e` lists the running ones)"))
                })?;
            if !alive(pid) {
                return Err(BillError::Other(format!("process {pid} has already ended")));
            }
            let mut tids = tree::threads(pid);
            // perf's counter is opened here, below, once the descendants already running are
            // followed: both count their calls from about the same moment.
            let mut counted = match counting {
                Counting::None => Counted::none(NO_PROBE),
                Counting::Perf => Counted::none(PERF_ASKED),
                Counting::Bpf(d) => start_probe(Scope::Process(pid), d, false, |_| {
                    Err(io::Error::other("opened below"))
                }),
            };
            let mut older = Vec::new();
            if let Some(p) = &counted.probe {
                // After attaching: a child made meanwhile is followed as a newborn, or found.
                let (followed, error) = tree::follow_descendants(p, pid);
                if let Some(e) = error {
                    notes.push(format!(
                        "following the processes process {pid} had started before attaching \
                         failed for some ({e}): those are not billed"
                    ));
                }
                older = followed;
                if verify {
                    tids.extend(older.iter().flat_map(|&c| tree::threads(c)));
                    counted.counter = sys_enter_id()
                        .and_then(|id| CallCounter::threads(id, &tids).map_err(|e| e.to_string()));
                }
            } else if counting != Counting::None {
                // perf's events go on every thread of the process and of its descendants
                // already running; what those start later inherits them.
                older = tree::descendants(pid);
                tids.extend(older.iter().flat_map(|&c| tree::threads(c)));
            }
            let counted = counted.or_perf(
                counting,
                verify,
                |tps| {
                    // A descriptor per call and thread: more than the usual soft limit.
                    let _ = oscost_sys::raise_open_file_limit();
                    CallCounts::threads(tps, &tids)
                },
                |tp| CallCounter::threads(tp, &tids),
            );
            let stat = format!("/proc/{pid}/schedstat");
            let before = proc_usage(pid);
            let wait_before = schedstat(Path::new(&stat));
            let start = now_ns();
            let deadline = duration.map(|d| start + d.as_nanos() as u64);
            let mut still = true;
            while still && !control.stop.load(Ordering::SeqCst) {
                if deadline.is_some_and(|d| now_ns() >= d) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
                still = alive(pid);
            }
            let end = now_ns();
            let after = if still { proc_usage(pid) } else { None };
            if let (Some((_, w0)), true) = (wait_before, still) {
                first_wait = schedstat(Path::new(&stat)).map(|(_, w1)| w1.saturating_sub(w0));
            }
            let usage = match (before, after) {
                (Some(b), Some(a)) => Some((a.since(&b), "/proc")),
                _ => {
                    notes.push(format!(
                        "process {pid} ended before its counters could be read again: the \
                         kernel's accounting is not beside the bill"
                    ));
                    None
                }
            };
            if counted.probe.is_some() || counted.perf.is_some() {
                notes.push(format!(
                    "attached to a running process: its threads are billed, and those of its \
                     descendants — the processes already running when billing began ({}), and \
                     those it (or one of them) starts after attaching",
                    older.len()
                ));
            }
            (
                Target::Process { pid, comm },
                counted,
                usage,
                if still { Ending::Running } else { Ending::Gone },
                start,
                end,
                None,
            )
        }
    };
    let Counted {
        mut probe,
        perf,
        refused,
        counter,
        cost,
    } = counted;
    if let Some(p) = probe.as_mut() {
        p.detach();
    }
    let totals = match probe.as_ref().map(Probe::read) {
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => {
            notes.push(format!("reading the probe's counts failed: {e}"));
            None
        }
        None => None,
    };
    let perf_calls = perf.as_ref().map(CallCounts::read);
    if let Some(events) = perf {
        // The kernel waits for a grace period as it removes each event, one after another:
        // seconds for a few hundred. Removed while the bill is made and printed; oscost's exit
        // waits for what is left.
        let n = events.events();
        if let Some(c) = cost.as_ref().filter(|c| c.removal_ns * n as f64 > 1e9) {
            notes.push(format!(
                "removing perf's {n} events takes the kernel about {:.0} ms each here: oscost \
                 ends about {:.0} s after the bill",
                c.removal_ns / 1e6,
                c.removal_ns * n as f64 / 1e9
            ));
        }
        perf::remove_later(events);
    }
    let independent_calls = counter
        .as_ref()
        .map(CallCounter::read)
        .map_err(Clone::clone);
    drop(cgroup);
    let mechanism = Mechanism {
        name: match (&totals, &perf_calls) {
            (Some(_), _) => Counter::Bpf,
            (None, Some(_)) => Counter::Perf,
            (None, None) => Counter::None,
        },
        depth: match (counting, &perf_calls) {
            (Counting::None, _) => CallDepth::None,
            (_, Some(_)) | (Counting::Perf, _) | (Counting::Bpf(Depth::Count), _) => {
                CallDepth::Count
            }
            (Counting::Bpf(Depth::Time), None) => CallDepth::Time,
        },
        refused: refused.clone().filter(|r| r != PERF_ASKED),
        missing: probe
            .as_ref()
            .map(|p| p.missing().iter().map(|m| (*m).to_owned()).collect())
            .unwrap_or_default(),
    };
    match (&refused, &perf_calls) {
        (Some(r), _) if r == NO_PROBE => notes.push(
            "no probe (--trace-with none): the bill holds the kernel's own accounting".into(),
        ),
        (Some(r), Some(_)) if r == PERF_ASKED => notes.push(PERF_COUNTS.into()),
        (Some(r), Some(_)) => notes.push(format!("no BPF: {r}; {PERF_COUNTS}")),
        (Some(r), None) => notes.push(format!(
            "no kernel counts: {r}; the bill holds only the kernel's own accounting"
        )),
        (None, _) => {}
    }
    let usage = usage.map(|(u, source)| Usage {
        source: source.into(),
        user_ns: u.user_ns,
        system_ns: u.system_ns,
        minor_faults: u.minor_faults,
        major_faults: u.major_faults,
        voluntary: u.voluntary,
        involuntary: u.involuntary,
        max_rss_kib: u.max_rss_kib,
        first_task_wait_ns: first_wait,
    });
    let mut bill = Bill {
        target,
        under: match subject {
            Subject::Command(_, Some(u)) => Some(u.name().to_owned()),
            _ => None,
        },
        wall_ns: end.saturating_sub(start),
        ending,
        mechanism,
        probe_cost: None,
        usage,
        calls: Vec::new(),
        faults_user: FaultCounts::default(),
        faults_kernel: FaultCounts::default(),
        sched: None,
        interrupts: Vec::new(),
        events: Events::default(),
        tasks: Vec::new(),
        task_time_ns: 0,
        parts: Vec::new(),
        residual_ns: 0.0,
        explained_pct: 0.0,
        prices_from: None,
        prices: Vec::new(),
        checks: Vec::new(),
        notes,
    };
    let probe_cost = |cost: Option<Calibration>, calls: &[oscost_model::bill::CallLine]| {
        let n: u64 = calls.iter().map(|c| c.count).sum();
        cost.map(|c| ProbeCost {
            per_call_ns: c.added_ns,
            range_ns: c.range_ns,
            bare_call_ns: c.bare_ns,
            in_window_ns: c.in_window_ns,
            total_ns: c.added_ns * n as f64,
            setup_ns: start.saturating_sub(setup_start),
        })
    };
    if let Some(t) = &totals {
        let in_window = cost.as_ref().map_or(0.0, |c| c.in_window_ns);
        let floor = cost.as_ref().map_or(0.0, |c| c.bare_ns);
        fill(&mut bill, t, end, in_window, floor);
        if bill.mechanism.missing.iter().any(|m| m == "sched_waking") {
            if let Some(s) = bill.sched.as_mut() {
                s.cross_cpu_wakeups = None;
            }
        }
        bill.probe_cost = probe_cost(cost, &bill.calls);
        bill.checks = checks(&bill, t, independent_calls, leader_sched);
    } else {
        bill.task_time_ns = bill.wall_ns;
        if let Some(counts) = &perf_calls {
            bill.calls = perf::calls(counts);
            bill.probe_cost = probe_cost(cost, &bill.calls);
            bill.checks = vec![call_check(&bill, independent_calls)];
        }
    }
    match subject {
        Subject::Command(_, Some(u @ Under::Seccomp { .. })) => bill.notes.push(format!(
            "under {}: its first prctl and seccomp calls are oscost installing the filter, in \
             the command's process just before it executed",
            u.name()
        )),
        Subject::Command(_, Some(Under::Container)) => bill.notes.push(
            "under container: born in new mount, UTS, IPC, PID, network and cgroup namespaces \
             (the wall time holds making them and, at the end, taking down what the kernel \
             does not defer); the command was its PID namespace's init, and its network \
             namespace had only a loopback, down"
                .into(),
        ),
        Subject::Command(_, Some(u @ Under::Cpus { .. })) => bill.notes.push(format!(
            "under {}: its first sched_setaffinity call is oscost pinning it, in the command's \
             process just before it executed",
            u.name()
        )),
        _ => {}
    }
    Ok(bill)
}

/// Starts the command: born in the cgroup where the kernel allows it, else moved into it
/// before it executes (its first few events, in oscost's copy, then go unseen).
fn start_command(
    argv: &[OsString],
    cg: Option<&BillCgroup>,
    birth: &launch::Birth,
) -> Result<i32, BillError> {
    if let Some(c) = cg {
        let dir = fs::File::open(&c.path)
            .map_err(|e| BillError::Other(format!("opening {}: {e}", c.path.display())))?;
        if let Some(pid) =
            launch::spawn_into(argv, &dir, birth).map_err(|e| not_started(argv, &e))?
        {
            return Ok(pid);
        }
    }
    if birth.namespaces != 0 {
        // Moved into namespaces after it started, the command would not be its PID
        // namespace's init, nor born as a runtime starts it: not the setting asked for.
        return Err(BillError::Other(
            "--under container needs the command born in its namespaces and its cgroup \
             (clone3 with CLONE_INTO_CGROUP, Linux 5.7, and a cgroup v2 oscost may make)"
                .into(),
        ));
    }
    let procs = match cg {
        Some(c) => Some(
            fs::OpenOptions::new()
                .write(true)
                .open(c.path.join("cgroup.procs"))
                .map_err(|e| BillError::Other(format!("opening cgroup.procs: {e}")))?,
        ),
        None => None,
    };
    let child = launch::spawn(argv, procs.as_ref(), birth).map_err(|e| not_started(argv, &e))?;
    Ok(child.id() as i32)
}

/// The one line of a command that could not start, as a shell says it.
fn not_started(argv: &[OsString], e: &io::Error) -> BillError {
    let name = argv
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    match e.kind() {
        io::ErrorKind::NotFound => BillError::NotStarted {
            message: format!("{name}: command not found"),
            exit: 127,
        },
        io::ErrorKind::PermissionDenied => BillError::NotStarted {
            message: format!("{name}: permission denied (not executable?)"),
            exit: 126,
        },
        _ => BillError::NotStarted {
            message: format!("{name}: cannot start it ({e})"),
            exit: 126,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::fill::hist_quantile;
    use super::*;

    #[test]
    fn a_histogram_quantile_reads_its_bucket() {
        let mut h = vec![0u64; probe::BUCKETS];
        h[probe::bucket_of(100)] = 9;
        h[probe::bucket_of(10_000)] = 1;
        let m = hist_quantile(&h, 0.5).expect("a median");
        assert!((90.0..=110.0).contains(&m), "{m}");
        let p = hist_quantile(&h, 0.99).expect("a p99");
        assert!((9_000.0..=11_000.0).contains(&p), "{p}");
        assert_eq!(hist_quantile(&[0; 4], 0.5), None);
    }

    #[test]
    fn a_missing_command_is_named_as_a_shell_names_it() {
        let e = not_started(
            &["no-such-cmd".into()],
            &io::Error::from(io::ErrorKind::NotFound),
        );
        match e {
            BillError::NotStarted { message, exit } => {
                assert_eq!(message, "no-such-cmd: command not found");
                assert_eq!(exit, 127);
            }
            other => panic!("{other}"),
        }
    }
}
