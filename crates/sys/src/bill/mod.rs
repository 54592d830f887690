//! The bill's probe: BPF programs on raw tracepoints that add up, in the kernel, what one
//! program's tasks cost the OS — system calls by number (count, errors, time on the CPU in the
//! kernel and its distribution), page faults by kind, switches, time waiting for a CPU and
//! time blocked, interrupts and softirqs that ran while one of its tasks was current, signals,
//! tasks created, programs executed, TLB flushes. Nothing is recorded per event: counters and
//! sums sit in per-CPU arrays and a hash of the tasks, read once the program ended, so the
//! cost per event stays near a bare counter's.
//!
//! Which tasks are the program's: those of one cgroup v2 (`bpf_get_current_cgroup_id`, for a
//! command started in a cgroup of its own: every thread and descendant follows), or those of
//! one thread group (a process attached by its id) and of the processes it makes once the
//! probe is attached, and they make in turn: a task woken new by one of them is marked on the
//! CPU it first comes in on, and the first program that runs in it there adds its thread group
//! to the followed ones. Its descendants already running when the probe was attached are added
//! from user space ([`Probe::follow`]). The programs read no kernel memory: a task
//! is named by its thread id where it is current, and by its `task_struct` pointer where the
//! scheduler hands one (the task switched in, the task woken), the pointer mapped to the
//! thread when the task last switched out.

mod asm;
mod follow;
mod programs;

use crate::bpf::{
    attach_error, attach_raw, bpf, load, owned, possible_cpus, prog_misses, program_name, put32,
    put64, refused, F_MMAPABLE, MAP_CREATE,
};
use crate::ktrace::Unavailable;
use asm::Maps;
use programs::programs;
use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// Which tasks the probe counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every task of the cgroup v2 with this id (its directory's inode number).
    Cgroup(u64),
    /// Every thread of this process, of every process it (or one of them) makes after the
    /// probe is attached, and of those given to [`Probe::follow`] (its descendants already
    /// running).
    Process(u32),
}

/// How much the probe does per system call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Counts at entry only: no time, no errors, no per-thread split of the calls.
    Count,
    /// Entry and exit: each call's time on the CPU in the kernel, its errors.
    Time,
}

/// The largest system-call number counted by name; higher (and negative) numbers share the
/// last slot.
pub const CALL_SLOTS: u32 = 512;
/// Buckets of a time distribution: four per power of two, from 0 ns to about 2 s.
pub const BUCKETS: usize = 128;
/// Tasks the probe can follow at once.
pub const MAX_TASKS: u32 = 16_384;

// The task's hash value, bytes.
const T_TID: i16 = 0;
const T_PART: i16 = 8;
const T_NR: i16 = 16;
const T_INCALL: i16 = 24;
const T_OUT: i16 = 32;
const T_OUT_KIND: i16 = 40;
const T_WOKEN: i16 = 48;
const T_OFF: i16 = 56;
const T_WAIT: i16 = 64;
const T_BLOCKED: i16 = 72;
const T_IRQ: i16 = 80;
const T_CALLS: i16 = 88;
const T_CALL_NS: i16 = 96;
const T_FAULTS: i16 = 104;
const T_VCSW: i16 = 112;
const T_IVCSW: i16 = 120;
const T_IN: i16 = 128;
const T_ONCPU: i16 = 136;
const T_WAKEUPS: i16 = 144;
const T_FIRST: i16 = 152;
const T_EXIT: i16 = 160;
const T_COMM: i16 = 168;
// The CPU its waker ran on, plus one (0: none recorded), when one of the program's tasks woke
// it (`sched_waking`); taken when it comes in.
const T_WAKER: i16 = 184;
const TASK_BYTES: usize = 192;

// The per-CPU totals, bytes.
const G_FAULT: i16 = 0;
const G_IRQ_N: i16 = 64;
const G_IRQ_NS: i16 = 128;
const G_IRQ_TS: i16 = 192;
const G_SIGNALS: i16 = 256;
const G_THREADS: i16 = 264;
const G_PROCS: i16 = 272;
const G_EXECS: i16 = 280;
const G_WAKEUPS: i16 = 288;
const G_TLB: i16 = 296;
const G_MISSED: i16 = 360;
// Interrupt time charged to the program on this CPU, all kinds.
const G_IRQ_ALL: i16 = 368;
// The program's system call in progress on this CPU: whether there is one, its entry, slot,
// G_IRQ_ALL at entry, and its time on a CPU before it last came in.
const G_CUR_ON: i16 = 376;
const G_CUR_ENTER: i16 = 384;
const G_CUR_NR: i16 = 392;
const G_CUR_IRQ: i16 = 400;
const G_CUR_PART: i16 = 408;
// The running task's calls and their time since it came in on this CPU (and its faults, at
// G_ACC_FAULTS): the hot programs add here, the switch away moves them into the task's state.
const G_ACC_TID: i16 = 416;
const G_ACC_CALLS: i16 = 424;
const G_ACC_NS: i16 = 432;
// A task never run before that just came in: when, when it was woken, its wait.
const G_PEND_IN: i16 = 440;
const G_PEND_WOKEN: i16 = 448;
const G_PEND_WAIT: i16 = 456;
// Wake-ups by the program's own tasks after which the woken task ran on another CPU.
const G_CROSS: i16 = 464;
// Set while a task just made by one of the program's processes, not yet known to be the
// program's, is current on this CPU (process scope): the first program that runs in it adopts it.
const G_ADOPT: i16 = 472;
const G_ACC_FAULTS: i16 = 480;
// Nonzero while the task on this CPU is one of the program's known by its pointer (set by the
// switch into it): the programs that run in its context skip asking the kernel whose it is.
const G_OURS: i16 = 488;
const G_LAT: i16 = 512;
const GLOB_BYTES: usize = 512 + 8 * BUCKETS;

// The words every CPU reads (process scope): nonzero once one of the program's processes made a
// task or a process was followed from user space; marks set and not yet taken.
const C_ANY: i16 = 0;
const C_PENDING: i16 = 8;
const CTL_BYTES: usize = 16;

// A system call's slot, bytes.
const C_COUNT: i16 = 0;
const C_ERR: i16 = 8;
const C_NS: i16 = 16;
const C_HIST: i16 = 24;
const CALL_BYTES: usize = 24 + 8 * BUCKETS;

/// The interrupts told apart, in the order of [`Totals::irqs`].
pub const IRQ_KINDS: [&str; 6] = [
    "device interrupt",
    "softirq",
    "timer interrupt",
    "function-call IPI",
    "reschedule IPI",
    "irq work",
];

/// The TLB flushes of `tlb:tlb_flush`, by reason (`enum tlb_flush_reason`).
pub const TLB_REASONS: [&str; 5] = [
    "on task switch",
    "received (remote shootdown)",
    "local shootdown",
    "local mm shootdown",
    "sent (remote IPI)",
];

const MAP_HASH: u32 = 1;
const MAP_ARRAY: u32 = 2;
const MAP_PERCPU_ARRAY: u32 = 6;
const MAP_LOOKUP_ELEM: libc::c_long = 1;
const MAP_GET_NEXT_KEY: libc::c_long = 4;

fn map_create(
    kind: u32,
    key: u32,
    value: u32,
    entries: u32,
    flags: u32,
    name: &[u8],
) -> io::Result<OwnedFd> {
    let mut attr = [0u8; 128];
    put32(&mut attr, 0, kind);
    put32(&mut attr, 4, key);
    put32(&mut attr, 8, value);
    put32(&mut attr, 12, entries);
    put32(&mut attr, 16, flags);
    let n = name.len().min(15);
    attr[28..28 + n].copy_from_slice(&name[..n]);
    Ok(owned(bpf(MAP_CREATE, &mut attr)?))
}

/// Looks `key` up in map `fd` into `value` (a per-CPU map's value: every possible CPU's, each
/// rounded up to 8 bytes); false when it has none.
fn map_lookup(fd: &OwnedFd, key: &[u8], value: &mut [u8]) -> io::Result<bool> {
    let mut attr = [0u8; 128];
    put32(&mut attr, 0, fd.as_raw_fd() as u32);
    put64(&mut attr, 8, key.as_ptr() as u64);
    put64(&mut attr, 16, value.as_mut_ptr() as u64);
    match bpf(MAP_LOOKUP_ELEM, &mut attr) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The key after `key` (the first with None) in hash map `fd`, or None at the end.
fn next_key(fd: &OwnedFd, key: Option<u32>) -> io::Result<Option<u32>> {
    let k = key.unwrap_or(0).to_ne_bytes();
    let mut next = [0u8; 4];
    let mut attr = [0u8; 128];
    put32(&mut attr, 0, fd.as_raw_fd() as u32);
    if key.is_some() {
        put64(&mut attr, 8, k.as_ptr() as u64);
    }
    put64(&mut attr, 16, next.as_mut_ptr() as u64);
    match bpf(MAP_GET_NEXT_KEY, &mut attr) {
        Ok(_) => Ok(Some(u32::from_ne_bytes(next))),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// One system call's totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallTotals {
    /// The call's number (`CALL_SLOTS − 1`: any number at or above it).
    pub nr: u32,
    /// Calls entered.
    pub count: u64,
    /// Calls that returned an error (timed probes only).
    pub errors: u64,
    /// Time on the CPU in the kernel between entry and exit, ns (timed probes only).
    pub time_ns: u64,
    /// The calls by time, [`BUCKETS`] buckets (see [`bucket_bounds`]).
    pub hist: Vec<u64>,
}

/// One task's totals.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskTotals {
    /// Thread id.
    pub tid: u32,
    /// Process id (thread group).
    pub pid: u32,
    /// Its name (`comm`) when first seen.
    pub comm: String,
    /// System calls entered (timed probes only).
    pub calls: u64,
    /// Their time on the CPU in the kernel, ns.
    pub call_ns: u64,
    /// Page faults.
    pub faults: u64,
    /// Switches away while blocking (voluntary).
    pub voluntary: u64,
    /// Switches away while runnable (preempted).
    pub involuntary: u64,
    /// Time on a CPU, ns.
    pub oncpu_ns: u64,
    /// Time runnable, waiting for a CPU, ns.
    pub wait_ns: u64,
    /// Time blocked (asleep, in I/O, on a lock), ns.
    pub blocked_ns: u64,
    /// Time in interrupts while it was current, ns.
    pub irq_ns: u64,
    /// Wake-ups.
    pub wakeups: u64,
    /// When it was first seen and when it exited (0: had not), `CLOCK_MONOTONIC` ns.
    pub first_ns: u64,
    /// See `first_ns`.
    pub exit_ns: u64,
}

/// Everything the probe added up.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Totals {
    /// System calls by number, only those entered.
    pub calls: Vec<CallTotals>,
    /// Tasks, by thread id.
    pub tasks: Vec<TaskTotals>,
    /// Page faults, indexed by the error code's low bits (1: the page was present, 2: a
    /// write): four taken in user mode, then four the kernel took on user addresses.
    pub faults: [u64; 8],
    /// Interrupts while a task was current, by [`IRQ_KINDS`]: count and ns.
    pub irqs: [(u64, u64); 6],
    /// Signals delivered, threads made, processes made, programs executed, wake-ups.
    pub signals: u64,
    /// See `signals`.
    pub threads: u64,
    /// See `signals`.
    pub processes: u64,
    /// See `signals`.
    pub execs: u64,
    /// See `signals`.
    pub wakeups: u64,
    /// Wake-ups whose waker was the program's (one of its tasks, or an interrupt while one
    /// was current) and after which the woken task came in on a CPU other than the waker's:
    /// the wake-ups that cross CPUs, which pinning the program to one CPU makes local.
    pub cross_cpu_wakeups: u64,
    /// TLB flushes in the program's context by [`TLB_REASONS`]; the first (on task switch)
    /// stays 0: that flush is the switch's own work, and the bill counts the switch.
    pub tlb: [u64; 5],
    /// Wake-up latencies (woken → on a CPU) by bucket.
    pub wake_latency: Vec<u64>,
    /// Tasks not followed because the task hash was full.
    pub missed_tasks: u64,
    /// Program runs the kernel skipped (another ran on that CPU), by tracepoint.
    pub skipped: BTreeMap<String, u64>,
}

/// The lower and upper bound of bucket `b`, ns.
pub fn bucket_bounds(b: usize) -> (f64, f64) {
    if b < 4 {
        return (b as f64, b as f64 + 1.0);
    }
    let l = (b / 4) as i32;
    let q = (b % 4) as f64;
    let width = 2f64.powi(l - 2);
    let lo = 2f64.powi(l) + q * width;
    (lo, lo + width)
}

/// The bucket of `ns`, as the programs compute it.
pub fn bucket_of(ns: u64) -> usize {
    if ns < 4 {
        return ns as usize;
    }
    let l = 63 - ns.leading_zeros() as usize;
    let q = ((ns >> (l - 2)) & 3) as usize;
    (4 * l + q).min(BUCKETS - 1)
}

/// The probe: its maps, programs and attachments; detached and closed on drop.
pub struct Probe {
    tasks: OwnedFd,
    glob: OwnedFd,
    calls: OwnedFd,
    followed: OwnedFd,
    ctl: OwnedFd,
    _maps: [OwnedFd; 2],
    scope: Scope,
    progs: Vec<(&'static str, OwnedFd)>,
    links: Vec<OwnedFd>,
    /// Tracepoints this kernel lacks (optional ones, skipped).
    missing: Vec<&'static str>,
    cpus: usize,
    misses_before: Vec<u64>,
    depth: Depth,
}

impl Probe {
    /// Loads the programs for `scope` at `depth`; attached by [`Probe::attach`].
    pub fn load(scope: Scope, depth: Depth) -> Result<Probe, Unavailable> {
        Probe::load_some(scope, depth, false)
    }

    /// Loads only the system calls' programs: what a call pays the probe, for its
    /// calibration, at a fraction of the whole probe's attaching time.
    pub fn load_calls_only(scope: Scope, depth: Depth) -> Result<Probe, Unavailable> {
        Probe::load_some(scope, depth, true)
    }

    fn load_some(scope: Scope, depth: Depth, calls_only: bool) -> Result<Probe, Unavailable> {
        if std::fs::read_to_string("/proc/sys/net/core/bpf_jit_enable")
            .is_ok_and(|s| s.trim() == "0")
        {
            return Err(Unavailable(
                "BPF's JIT is off (net.core.bpf_jit_enable is 0)".into(),
            ));
        }
        let cpus =
            possible_cpus().map_err(|e| Unavailable(format!("counting the possible CPUs: {e}")))?;
        let make = |kind, key, value: usize, entries, flags, name: &[u8]| {
            map_create(kind, key, value as u32, entries, flags, name)
                .map_err(|e| refused("creating its maps", &e))
        };
        let tasks = make(MAP_HASH, 4, TASK_BYTES, MAX_TASKS, 0, b"oscost_tasks")?;
        let ptrs = make(MAP_HASH, 8, 8, MAX_TASKS, 0, b"oscost_ptrs")?;
        let newborn = make(MAP_HASH, 8, 8, MAX_TASKS, 0, b"oscost_newborn")?;
        let glob = make(MAP_PERCPU_ARRAY, 4, GLOB_BYTES, 1, 0, b"oscost_glob")?;
        let calls = make(
            MAP_PERCPU_ARRAY,
            4,
            CALL_BYTES,
            CALL_SLOTS,
            0,
            b"oscost_calls",
        )?;
        let followed = make(MAP_HASH, 4, 8, MAX_TASKS, 0, b"oscost_followed")?;
        // Mapped into user space, for [`Probe::follow`] to set one word while the programs
        // count in the other.
        let ctl = make(MAP_ARRAY, 4, CTL_BYTES, 1, F_MMAPABLE, b"oscost_ctl")?;
        let maps = Maps {
            tasks: tasks.as_raw_fd(),
            ptrs: ptrs.as_raw_fd(),
            newborn: newborn.as_raw_fd(),
            glob: glob.as_raw_fd(),
            calls: calls.as_raw_fd(),
            followed: followed.as_raw_fd(),
            ctl: ctl.as_raw_fd(),
        };
        let mut progs = Vec::new();
        let mut all = programs(maps, scope, depth);
        if calls_only {
            all.retain(|p| matches!(p.event, "sys_enter" | "sys_exit"));
        }
        for prog in all {
            let fd = load(&prog.insns, &program_name(prog.event))
                .map_err(|e| refused(&format!("loading the program of {}", prog.event), &e))?;
            progs.push((prog.event, fd));
        }
        Ok(Probe {
            tasks,
            glob,
            calls,
            followed,
            ctl,
            _maps: [ptrs, newborn],
            scope,
            progs,
            links: Vec::new(),
            missing: Vec::new(),
            cpus,
            misses_before: Vec::new(),
            depth,
        })
    }

    /// How much the probe does per system call.
    pub fn depth(&self) -> Depth {
        self.depth
    }

    /// Attaches every program whose tracepoint this kernel has: counting starts. A required
    /// tracepoint (system calls, the scheduler's) missing is an error.
    pub fn attach(&mut self) -> io::Result<()> {
        self.misses_before = self.misses();
        for (event, fd) in &self.progs {
            match attach_raw(event, fd) {
                Ok(l) => self.links.push(l),
                Err(e)
                    if e.raw_os_error() == Some(libc::ENOENT)
                        && !matches!(
                            *event,
                            "sys_enter" | "sys_exit" | "sched_switch" | "sched_wakeup"
                        ) =>
                {
                    self.missing.push(event);
                }
                Err(e) => {
                    self.links.clear();
                    return Err(attach_error(event, e));
                }
            }
        }
        Ok(())
    }

    /// Detaches every program: counting stops.
    pub fn detach(&mut self) {
        self.links.clear();
    }

    /// The optional tracepoints this kernel lacks, whose counts read as zero.
    pub fn missing(&self) -> &[&'static str] {
        &self.missing
    }

    fn misses(&self) -> Vec<u64> {
        self.progs
            .iter()
            .map(|(_, p)| prog_misses(p).unwrap_or(0))
            .collect()
    }

    /// A per-CPU value of `bytes` bytes, summed over the CPUs as u64 words.
    fn per_cpu(&self, fd: &OwnedFd, key: u32, bytes: usize) -> io::Result<Vec<u64>> {
        let stride = bytes.div_ceil(8) * 8;
        let mut v = vec![0u8; stride * self.cpus];
        map_lookup(fd, &key.to_ne_bytes(), &mut v)?;
        let mut sum = vec![0u64; bytes / 8];
        for cpu in 0..self.cpus {
            for (i, s) in sum.iter_mut().enumerate() {
                let at = cpu * stride + 8 * i;
                *s += u64::from_ne_bytes(v[at..at + 8].try_into().expect("8 bytes"));
            }
        }
        Ok(sum)
    }

    /// Everything counted so far (read after [`Probe::detach`] for a consistent view).
    pub fn read(&self) -> io::Result<Totals> {
        let w = |off: i16| off as usize / 8;
        let g = self.per_cpu(&self.glob, 0, GLOB_BYTES)?;
        let mut t = Totals::default();
        for (i, f) in t.faults.iter_mut().enumerate() {
            *f = g[w(G_FAULT) + i];
        }
        for (k, irq) in t.irqs.iter_mut().enumerate() {
            *irq = (g[w(G_IRQ_N) + k], g[w(G_IRQ_NS) + k]);
        }
        t.signals = g[w(G_SIGNALS)];
        t.threads = g[w(G_THREADS)];
        t.processes = g[w(G_PROCS)];
        t.execs = g[w(G_EXECS)];
        t.wakeups = g[w(G_WAKEUPS)];
        t.cross_cpu_wakeups = g[w(G_CROSS)];
        for (i, n) in t.tlb.iter_mut().enumerate() {
            *n = g[w(G_TLB) + i];
        }
        t.missed_tasks = g[w(G_MISSED)];
        t.wake_latency = g[w(G_LAT)..w(G_LAT) + BUCKETS].to_vec();
        for nr in 0..CALL_SLOTS {
            let c = self.per_cpu(&self.calls, nr, CALL_BYTES)?;
            if c[w(C_COUNT)] == 0 && c[w(C_NS)] == 0 {
                continue;
            }
            t.calls.push(CallTotals {
                nr,
                count: c[w(C_COUNT)],
                errors: c[w(C_ERR)],
                time_ns: c[w(C_NS)],
                hist: c[w(C_HIST)..w(C_HIST) + BUCKETS].to_vec(),
            });
        }
        let mut key = None;
        let mut value = vec![0u8; TASK_BYTES];
        while let Some(k) = next_key(&self.tasks, key)? {
            key = Some(k);
            if !map_lookup(&self.tasks, &k.to_ne_bytes(), &mut value)? {
                continue;
            }
            let at = |off: i16| {
                let o = off as usize;
                u64::from_ne_bytes(value[o..o + 8].try_into().expect("8 bytes"))
            };
            let comm = &value[T_COMM as usize..T_COMM as usize + 16];
            let end = comm.iter().position(|&b| b == 0).unwrap_or(16);
            let id = at(T_TID);
            t.tasks.push(TaskTotals {
                tid: id as u32,
                pid: (id >> 32) as u32,
                comm: String::from_utf8_lossy(&comm[..end]).into_owned(),
                calls: at(T_CALLS),
                call_ns: at(T_CALL_NS),
                faults: at(T_FAULTS),
                voluntary: at(T_VCSW),
                involuntary: at(T_IVCSW),
                oncpu_ns: at(T_ONCPU),
                wait_ns: at(T_WAIT),
                blocked_ns: at(T_BLOCKED),
                irq_ns: at(T_IRQ),
                wakeups: at(T_WAKEUPS),
                first_ns: at(T_FIRST),
                exit_ns: at(T_EXIT),
            });
        }
        // Sums still on a CPU (a task running when the probe was detached).
        let stride = GLOB_BYTES;
        let mut v = vec![0u8; stride * self.cpus];
        map_lookup(&self.glob, &0u32.to_ne_bytes(), &mut v)?;
        for cpu in 0..self.cpus {
            let at = |off: i16| {
                let o = cpu * stride + off as usize;
                u64::from_ne_bytes(v[o..o + 8].try_into().expect("8 bytes"))
            };
            let tid = at(G_ACC_TID) as u32;
            if let Some(k) = t.tasks.iter_mut().find(|k| k.tid == tid && tid != 0) {
                k.calls += at(G_ACC_CALLS);
                k.call_ns += at(G_ACC_NS);
                k.faults += at(G_ACC_FAULTS);
            }
        }
        t.tasks.sort_by_key(|k| k.tid);
        for ((event, _), (now, before)) in self
            .progs
            .iter()
            .zip(self.misses().into_iter().zip(&self.misses_before))
        {
            if now > *before {
                *t.skipped.entry((*event).to_owned()).or_insert(0) += now - before;
            }
        }
        Ok(t)
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.links.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_bound_their_values() {
        for ns in [0u64, 1, 3, 4, 5, 7, 8, 100, 1000, 12_345, 1 << 20, 3 << 29] {
            let b = bucket_of(ns);
            let (lo, hi) = bucket_bounds(b);
            assert!(
                lo <= ns as f64 && (ns as f64) < hi,
                "{ns} in {b}: {lo}..{hi}"
            );
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }
}

#[cfg(test)]
mod live {
    use super::*;
    use crate::skip::skip;

    /// Taken by the tests that count this process's calls exactly: each probe follows the
    /// children of every other test's too.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn getppid_n(n: u32) {
        for _ in 0..n {
            // SAFETY: getppid has no arguments and no memory effects.
            unsafe { libc::syscall(libc::SYS_getppid) };
        }
    }

    #[test]
    fn a_probe_counts_this_process_calls_faults_and_switches() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let pid = std::process::id();
        let mut p = match Probe::load(Scope::Process(pid), Depth::Time) {
            Ok(p) => p,
            // SAFETY: geteuid has no memory effects.
            Err(e) if unsafe { libc::geteuid() } != 0 => {
                return skip(&format!("needs root: {}", e.0));
            }
            Err(e) => panic!("as root, BPF must load: {}", e.0),
        };
        p.attach().expect("attach");
        getppid_n(1000);
        let v = vec![1u8; 64 * 4096];
        std::hint::black_box(&v);
        std::thread::sleep(std::time::Duration::from_millis(2));
        p.detach();
        let t = p.read().expect("read");
        let getppid = t
            .calls
            .iter()
            .find(|c| c.nr == libc::SYS_getppid as u32)
            .expect("getppid counted");
        assert_eq!(getppid.count, 1000, "{t:?}");
        assert_eq!(getppid.errors, 0);
        assert_eq!(getppid.hist.iter().sum::<u64>(), 1000);
        assert!(getppid.time_ns > 0);
        assert!(t.faults.iter().sum::<u64>() >= 60, "{:?}", t.faults);
        let me = t
            .tasks
            .iter()
            .find(|k| k.tid == gettid())
            .expect("this thread");
        assert!(me.voluntary >= 1, "{me:?}");
        assert!(me.blocked_ns >= 1_000_000, "{me:?}");
        assert!(me.calls >= 1000);
    }

    /// `n` round trips over two pipes between this thread and another, this one pinned to
    /// `here` and the other to `there`.
    fn ping_pong(n: u32, here: usize, there: usize) {
        let (mut a_rd, mut a_wr) = std::io::pipe().expect("pipe");
        let (mut b_rd, mut b_wr) = std::io::pipe().expect("pipe");
        crate::set_affinity(&[here]).expect("pin");
        let other = std::thread::spawn(move || {
            use std::io::{Read, Write};
            crate::set_affinity(&[there]).expect("pin");
            let mut byte = [0u8];
            for _ in 0..n {
                a_rd.read_exact(&mut byte).expect("read");
                b_wr.write_all(&byte).expect("write");
            }
        });
        use std::io::{Read, Write};
        let mut byte = [0u8];
        for _ in 0..n {
            a_wr.write_all(&byte).expect("write");
            b_rd.read_exact(&mut byte).expect("read");
        }
        other.join().expect("the other thread");
    }

    /// A ping-pong across two CPUs counts its wake-ups as crossing CPUs; the same on one CPU
    /// counts (next to) none.
    #[test]
    fn wake_ups_across_cpus_are_told_from_wake_ups_on_one() {
        let cpus = crate::affinity().expect("affinity");
        if cpus.len() < 2 {
            return skip("needs two CPUs");
        }
        let count = |here: usize, there: usize| {
            let pid = std::process::id();
            let mut p = match Probe::load(Scope::Process(pid), Depth::Count) {
                Ok(p) => p,
                Err(e) => return Err(e.0),
            };
            p.attach().expect("attach");
            ping_pong(200, here, there);
            p.detach();
            let t = p.read().expect("read");
            crate::set_affinity(&cpus).expect("unpin");
            Ok(t)
        };
        let across = match count(cpus[0], cpus[1]) {
            Ok(t) => t,
            // SAFETY: geteuid has no memory effects.
            Err(e) if unsafe { libc::geteuid() } != 0 => {
                return skip(&format!("needs root: {e}"));
            }
            Err(e) => panic!("as root, BPF must load: {e}"),
        };
        assert!(across.cross_cpu_wakeups >= 100, "{across:?}");
        assert!(across.cross_cpu_wakeups <= across.wakeups, "{across:?}");
        let one = count(cpus[0], cpus[0]).expect("loaded once already");
        // Other tests' threads of this process may wake each other across CPUs meanwhile.
        assert!(one.wakeups >= 100, "{one:?}");
        assert!(one.cross_cpu_wakeups < 20, "{one:?}");
    }

    /// `n` getsid calls (a call no other test here makes: the count is the children's alone).
    fn getsid_n(n: u32) {
        for _ in 0..n {
            // SAFETY: getsid(0) reads this process's session id; no memory effects.
            unsafe { libc::syscall(libc::SYS_getsid, 0) };
        }
    }

    /// Forks a child that runs `f`, then exits at once (no destructor, no atexit handler of
    /// the test process runs in it).
    fn fork_running(f: impl FnOnce()) -> libc::pid_t {
        // SAFETY: the child makes only raw system calls (f's), forks and waits, then _exits;
        // it touches no lock another thread of the test process might hold.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
        if pid == 0 {
            f();
            // SAFETY: _exit ends the child without running the parent's handlers.
            unsafe { libc::_exit(0) };
        }
        pid
    }

    fn reap(pid: libc::pid_t) {
        let mut status = 0;
        // SAFETY: status is a valid int for waitpid to write.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(r, pid, "waitpid: {}", io::Error::last_os_error());
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }

    /// A child made after attaching, and the grandchild it makes, are the program's (their
    /// calls counted exactly, at both depths); so are a child made before attaching and the
    /// grandchild it made, once given to [`Probe::follow`]. Each is forgotten once it ended.
    #[test]
    fn children_from_before_attaching_are_followed_once_given_as_later_ones_are() {
        use std::io::{Read, Write};
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        for depth in [Depth::Count, Depth::Time] {
            let (go_rd, mut go_wr) = std::io::pipe().expect("pipe");
            let (mut ready_rd, mut ready_wr) = std::io::pipe().expect("pipe");
            // Each waits for its byte: billing has begun, and it is followed.
            let wait_then = |mut rd: std::io::PipeReader| {
                let mut byte = [0u8];
                let _ = rd.read(&mut byte);
                getsid_n(50);
            };
            let older = fork_running(|| {
                let rd = go_rd.try_clone().expect("pipe");
                let older_grandchild = fork_running(|| wait_then(rd));
                let _ = ready_wr.write_all(&older_grandchild.to_ne_bytes());
                wait_then(go_rd);
                reap(older_grandchild);
            });
            let mut id = [0u8; 4];
            ready_rd
                .read_exact(&mut id)
                .expect("the older grandchild's id");
            let older_grandchild = u32::from_ne_bytes(id);
            let pid = std::process::id();
            let mut p = match Probe::load(Scope::Process(pid), depth) {
                Ok(p) => p,
                // SAFETY: geteuid has no memory effects.
                Err(e) if unsafe { libc::geteuid() } != 0 => {
                    go_wr.write_all(b"xx").expect("write");
                    reap(older);
                    return skip(&format!("needs root: {}", e.0));
                }
                Err(e) => panic!("as root, BPF must load: {}", e.0),
            };
            p.attach().expect("attach");
            assert!(p.follow(older as u32).expect("follow"), "{depth:?}");
            assert!(p.follow(older_grandchild).expect("follow"), "{depth:?}");
            assert!(!p.follow(older as u32).expect("follow"), "given twice");
            assert!(!p.follow(pid).expect("follow"), "the attached process");
            assert!(!p.follow(u32::MAX).expect("follow"), "no such process");
            // Before the program makes any process: following one is enough for its events.
            go_wr.write_all(b"xx").expect("write");
            reap(older);
            let (mut id_rd, mut id_wr) = std::io::pipe().expect("pipe");
            let child = fork_running(|| {
                getsid_n(300);
                let grandchild = fork_running(|| getsid_n(200));
                let _ = id_wr.write_all(&grandchild.to_ne_bytes());
                reap(grandchild);
            });
            reap(child);
            id_rd.read_exact(&mut id).expect("the grandchild's id");
            let grandchild = u32::from_ne_bytes(id);
            let ours = [child as u32, grandchild, older as u32, older_grandchild];
            // Forgotten at its final switch, which may come just after its parent reaped it.
            let mut left = Vec::new();
            for _ in 0..100 {
                left = p.followed_now().expect("the followed ones");
                left.retain(|k| ours.contains(k));
                if left.is_empty() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            assert!(left.is_empty(), "{depth:?}: still followed: {left:?}");
            p.detach();
            let t = p.read().expect("read");
            let getsid = t
                .calls
                .iter()
                .find(|c| c.nr == libc::SYS_getsid as u32)
                .map_or(0, |c| c.count);
            assert_eq!(getsid, 600, "{depth:?}: {t:?}");
            let pids: std::collections::BTreeSet<u32> = t.tasks.iter().map(|k| k.pid).collect();
            // Each billed to its last run: a process is forgotten only after its switch into
            // death, not at its exit.
            for p in ours {
                assert!(pids.contains(&p), "{depth:?}: {p} not in {pids:?}");
                let on: u64 = t
                    .tasks
                    .iter()
                    .filter(|k| k.pid == p)
                    .map(|k| k.oncpu_ns)
                    .sum();
                assert!(
                    on > 0,
                    "{depth:?}: process {p} never on a CPU: {:?}",
                    t.tasks
                );
            }
            assert!(t.processes >= 2, "{depth:?}: {t:?}");
        }
    }

    fn gettid() -> u32 {
        // SAFETY: gettid has no arguments and no memory effects.
        unsafe { libc::syscall(libc::SYS_gettid) as u32 }
    }
}

/// The name of system call `nr` on this machine's architecture (`syscall_<nr>` for one it does
/// not know; the last slot collects every number from [`CALL_SLOTS`] − 1 up, and invalid ones).
pub fn call_name(nr: u32) -> String {
    if nr == CALL_SLOTS - 1 {
        return format!("(numbers ≥ {nr} or invalid)");
    }
    syscalls::Sysno::new(nr as usize)
        .map(|s| s.name().to_owned())
        .unwrap_or_else(|| format!("syscall_{nr}"))
}
