//! How busy the machine was during a run: a quiet machine cannot be taken on trust, so
//! [`LoadProbe`] measures the CPU time other tasks used, the steal time and the forks of other
//! programs *during* a run, and the resulting `RunLoad` says in plain words when that makes the
//! figures suspect.

use super::parse::{parse_pid_stat, parse_proc_stat, parse_schedstat, ProcStat};
use oscost_model::env::{ForeignProcess, RunLoad};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::Read as _;
use std::time::Instant;

/// Snapshot of machine-wide activity taken before a run; [`LoadProbe::finish`] takes a
/// second one and compares.
///
/// Foreign CPU time is estimated twice, and the larger estimate counts:
///
/// - per task: the sum of `/proc/<pid>/task/<tid>/schedstat` run times (ns, precise) of every
///   task not belonging to this process or its descendants, on every CPU. Tasks that appear
///   during the run count from zero; tasks that exit before the end are lost. The busiest
///   processes are named from it. A process that is orphaned and reparented away from us
///   during the run counts as foreign.
/// - per CPU: the busy time `/proc/stat` gives the CPUs this process may run on (its affinity
///   when the probe starts, which `--cpus` sets for the whole run), minus the CPU time of this
///   process and of the children it waited for (`getrusage`), which includes every measuring
///   process and its reaped workers. It sees tasks that exited before the end, but it is
///   sampled at the kernel's tick, so it only counts above a threshold that tick accounting
///   alone cannot reach (see `busy_excess`). The probe must therefore be finished after the
///   measuring process has been waited for, in the process that waited for it.
///
/// Another oscost process (by its command name) seen at either end is named in a warning and
/// makes the run not quiet: two runs at once spoil each other's figures.
#[derive(Debug)]
pub struct LoadProbe {
    start: Snapshot,
    /// Workqueues whose kernel workers do the run's own deferred work (see
    /// [`LoadProbe::with_own_workqueue`]).
    own_work: Vec<&'static str>,
}

impl LoadProbe {
    /// Takes the starting snapshot (a few milliseconds on a normal machine).
    pub fn start() -> LoadProbe {
        LoadProbe {
            start: Snapshot::take(false),
            own_work: Vec::new(),
        }
    }

    /// Counts the kernel workers serving `workqueue` (`kworker/u8:3+netns` for `netns`) as the
    /// run's own, not another program: they finish what the run started (`ns` tears down
    /// network namespaces whose last steps, cleanup_net, run later on such a worker).
    pub fn with_own_workqueue(mut self, workqueue: &'static str) -> LoadProbe {
        self.own_work.push(workqueue);
        self
    }

    /// Takes the final snapshot and compares, assuming this process started no tasks.
    pub fn finish(self) -> RunLoad {
        self.finish_with_own_forks(0)
    }

    /// Takes the final snapshot and compares; `own` is the number of processes and threads
    /// the caller created during the run, so only other programs' forks are counted.
    pub fn finish_with_own_forks(self, own: u64) -> RunLoad {
        let end = Snapshot::take(true);
        compare(&self.start, &end, own, None, &self.own_work)
    }

    /// Like [`LoadProbe::finish_with_own_forks`], judging the foreign CPU time against the
    /// `cpus_used` CPUs the run measured on rather than every online CPU: on a large machine a
    /// process saturating the measured CPU is a small share of all CPUs but spoils the run.
    /// (The busy-time estimate always looks at the CPUs this process may run on.)
    pub fn finish_for(self, own: u64, cpus_used: usize) -> RunLoad {
        let end = Snapshot::take(true);
        compare(&self.start, &end, own, Some(cpus_used), &self.own_work)
    }
}

#[derive(Debug, Default)]
struct Snapshot {
    /// Midpoint of the snapshot: task times are read throughout it.
    at: Option<Instant>,
    took_s: f64,
    stat: Option<ProcStat>,
    loadavg1: Option<f64>,
    /// Foreign tasks: tid → (pid, ns on CPU).
    tasks: HashMap<u32, (u32, u64)>,
    /// pid → comm, only at the end, for naming the busiest processes.
    comms: HashMap<u32, String>,
    /// Busy ticks per CPU (USER_HZ), from the same read of `/proc/stat` as `stat`.
    busy_ticks: BTreeMap<usize, [u64; 5]>,
    /// CPU time of this process and of its waited-for children, ns, read next to
    /// `/proc/stat`: just before it in the starting snapshot, just after it in the final one,
    /// so that the window of this time encloses the window of the busy ticks.
    own_ns: Option<u64>,
    /// CPUs this process may run on (starting snapshot only): where its own time was spent,
    /// hence the CPUs whose busy time is compared with it.
    cpus: Option<Vec<usize>>,
    /// Other oscost processes (not this one, not its descendants): pid → parent pid.
    oscost: BTreeMap<u32, u32>,
}

impl Snapshot {
    /// `end`: the final snapshot, which also records the command names.
    fn take(end: bool) -> Snapshot {
        let own = || oscost_sys::usage::own_cpu_time().ok().map(|t| t.total_ns());
        let t0 = Instant::now();
        let own_before = if end { None } else { own() };
        let stat_text = std::fs::read_to_string("/proc/stat").ok();
        let own_ns = if end { own() } else { own_before };
        let mut s = Snapshot {
            stat: stat_text.as_deref().map(parse_proc_stat),
            busy_ticks: stat_text
                .as_deref()
                .map(parse_busy_ticks)
                .unwrap_or_default(),
            own_ns,
            cpus: if end {
                None
            } else {
                oscost_sys::affinity().ok()
            },
            loadavg1: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|t| t.split_whitespace().next()?.parse().ok()),
            ..Snapshot::default()
        };
        read_foreign_tasks(&mut s, end);
        let took = t0.elapsed();
        s.at = Some(t0 + took / 2);
        s.took_s = took.as_secs_f64();
        s
    }
}

/// Reads a file into `buf` (reused across calls to keep the probe fast).
fn read_into(path: &str, buf: &mut String) -> bool {
    buf.clear();
    match std::fs::File::open(path) {
        Ok(mut f) => f.read_to_string(buf).is_ok(),
        Err(_) => false,
    }
}

fn read_foreign_tasks(s: &mut Snapshot, want_comm: bool) {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return;
    };
    let mut path = String::with_capacity(64);
    let mut buf = String::with_capacity(512);
    /// One process read from /proc.
    struct Proc {
        ppid: u32,
        /// Its command name is oscost's.
        oscost: bool,
        /// (tid, ns on CPU) of each of its tasks.
        tasks: Vec<(u32, u64)>,
    }
    let mut procs: HashMap<u32, Proc> = HashMap::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        path.clear();
        let _ = write!(path, "/proc/{pid}/stat");
        // Processes vanish between listing and reading: skip them silently.
        if !read_into(&path, &mut buf) {
            continue;
        }
        let Some(st) = parse_pid_stat(&buf) else {
            continue;
        };
        if want_comm {
            s.comms.insert(pid, st.comm.to_owned());
        }
        let (ppid, threads, oscost) = (st.ppid, st.num_threads, st.comm == OSCOST_COMM);
        let mut tasks = Vec::new();
        if threads <= 1 {
            // A single-threaded process's own schedstat is its only task's: one read instead
            // of a directory listing plus a read.
            path.clear();
            let _ = write!(path, "/proc/{pid}/schedstat");
            if read_into(&path, &mut buf) {
                if let Some(ns) = parse_schedstat(&buf) {
                    tasks.push((pid, ns));
                }
            }
        } else {
            path.clear();
            let _ = write!(path, "/proc/{pid}/task");
            let Ok(tdir) = std::fs::read_dir(&path) else {
                continue;
            };
            for t in tdir.flatten() {
                let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                    continue;
                };
                path.clear();
                let _ = write!(path, "/proc/{pid}/task/{tid}/schedstat");
                if read_into(&path, &mut buf) {
                    if let Some(ns) = parse_schedstat(&buf) {
                        tasks.push((tid, ns));
                    }
                }
            }
        }
        procs.insert(
            pid,
            Proc {
                ppid,
                oscost,
                tasks,
            },
        );
    }
    // Our descendants (children, grandchildren...) are ours, not foreign.
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, p) in &procs {
        children.entry(p.ppid).or_default().push(pid);
    }
    let mut stack = vec![me];
    while let Some(p) = stack.pop() {
        if let Some(kids) = children.remove(&p) {
            for k in kids {
                procs.remove(&k);
                stack.push(k);
            }
        }
    }
    // Our ancestors are not another run either: were the probe ever taken in a measuring
    // process, its coordinating oscost would be one.
    // (Bounded: parent links read at different moments could in theory form a loop.)
    let mut ancestor = std::os::unix::process::parent_id();
    for _ in 0..procs.len() {
        let Some(p) = procs.get_mut(&ancestor) else {
            break;
        };
        p.oscost = false;
        ancestor = p.ppid;
    }
    for (pid, p) in procs {
        if p.oscost {
            s.oscost.insert(pid, p.ppid);
        }
        for (tid, ns) in p.tasks {
            s.tasks.insert(tid, (pid, ns));
        }
    }
}

/// The comm of an oscost process (the coordinating one, its measuring processes and their
/// workers alike).
const OSCOST_COMM: &str = "oscost";

/// One `cpuN` line of `/proc/stat`, in USER_HZ ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CpuTimes {
    /// Time in user mode.
    pub user: u64,
    /// Time in user mode at a lowered priority.
    pub nice: u64,
    /// Time in the kernel.
    pub system: u64,
    /// Time serving interrupts.
    pub irq: u64,
    /// Time serving softirqs.
    pub softirq: u64,
    /// Time the hypervisor ran something else on this vCPU; `None` when the line stops
    /// before it.
    pub steal: Option<u64>,
}

impl CpuTimes {
    /// The busy fields: user, nice, system, irq and softirq. Idle and iowait are idle time,
    /// steal was not the guest's to use, and guest time is already counted in user and nice.
    pub fn busy(&self) -> [u64; 5] {
        [self.user, self.nice, self.system, self.irq, self.softirq]
    }
}

/// Parses the `cpuN` lines of `/proc/stat` (not the aggregate `cpu` line); a line too short
/// to reach softirq is left out.
pub(crate) fn parse_cpu_times(text: &str) -> BTreeMap<usize, CpuTimes> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let Some(cpu) = it
            .next()
            .and_then(|k| k.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        // user nice system idle iowait irq softirq steal
        let v: Vec<u64> = it.take(8).map_while(|x| x.parse().ok()).collect();
        if let [user, nice, system, _idle, _iowait, irq, softirq, ..] = v[..] {
            let steal = v.get(7).copied();
            out.insert(
                cpu,
                CpuTimes {
                    user,
                    nice,
                    system,
                    irq,
                    softirq,
                    steal,
                },
            );
        }
    }
    out
}

/// The per-CPU busy time of `/proc/stat` (see [`CpuTimes::busy`]).
fn parse_busy_ticks(text: &str) -> BTreeMap<usize, [u64; 5]> {
    parse_cpu_times(text)
        .into_iter()
        .map(|(cpu, t)| (cpu, t.busy()))
        .collect()
}

/// The units of the kernel's CPU-time accounting.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ticks {
    /// USER_HZ, the unit of `/proc/stat`.
    user_hz: u64,
    /// The kernel's tick (a jiffy, 1/HZ), s: busy time is accounted one jiffy at a time.
    jiffy_s: f64,
}

impl Ticks {
    fn of_this_kernel() -> Option<Ticks> {
        let user_hz = oscost_sys::sysinfo::user_hz().filter(|&hz| hz > 0)?;
        let tick_s = 1.0 / user_hz as f64;
        // HZ is read as the resolution of the coarse clock; a USER_HZ tick (never shorter
        // than a jiffy, since HZ >= USER_HZ) stands in when it cannot be read.
        let jiffy_s = oscost_sys::sysinfo::coarse_clock_resolution_ns()
            .map(|ns| ns as f64 / 1e9)
            .filter(|&j| j > 0.0 && j <= 0.05)
            .unwrap_or(tick_s);
        Some(Ticks { user_hz, jiffy_s })
    }
}

/// The second estimate of foreign CPU time, which also sees tasks that exited before the end
/// of the run: the busy time of the CPUs this process may run on, minus its own CPU time and
/// that of its waited-for children over the same window.
#[derive(Debug, Clone, PartialEq)]
struct BusyExcess {
    /// The CPUs compared.
    cpus: Vec<usize>,
    /// Their busy time, s.
    busy_s: f64,
    /// This process's and its waited-for children's CPU time, s.
    own_s: f64,
    /// `busy_s − own_s`; negative when the busy time reads low (see `busy_excess`).
    excess_s: f64,
    /// The excess above which it is foreign load rather than an error of tick accounting.
    threshold_s: f64,
    /// `wall_s × cpus.len()`.
    capacity_s: f64,
}

impl BusyExcess {
    fn significant(&self) -> bool {
        self.excess_s > self.threshold_s
    }

    /// The excess as a share of the CPUs compared, in [0, 1].
    fn share(&self) -> f64 {
        if self.capacity_s > 0.0 {
            (self.excess_s / self.capacity_s).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// Compares the busy time of the CPUs this process may run on with its own CPU time.
///
/// Its own time (from `getrusage`) is exact, but busy time is accounted at the kernel's tick:
/// every jiffy goes whole to what the CPU was doing at that tick, and `/proc/stat` prints it in
/// whole USER_HZ ticks (10 ms when USER_HZ is 100). So the excess counts as foreign load only
/// above the largest of three bounds, so that a quiet run is never flagged by accounting alone:
///
/// - 1 % of the capacity compared (`wall_s × CPUs`), the share the per-task estimate allows;
/// - rounding: each busy field is printed rounded down, so a field's difference can read up
///   to one tick high, but only if the field moved; and a CPU's busy time can include up to
///   one jiffy run before the first read (accounted at the tick after it), again only if it
///   moved. On a short experiment this is a large share: 3 ticks + a jiffy is 17 % of 0.2 s
///   of one CPU, which is why 1 % alone would not do;
/// - sampling: a CPU busy a fraction `p` of `n` jiffies reads `n·p` give or take
///   `√(n·p·(1 − p))` jiffies when its activity is not aligned with the tick, as for tasks
///   that block and wake far more often than the tick; three of these.
///
/// Busy time can also read *low*: with the tick stopped in idle (NO_HZ_IDLE), bursts shorter
/// than a jiffy between idle periods are often never sampled (oscost's own cross-CPU
/// ping-pong reads 4–11 % low), so the excess is negative and foreign load that runs the same
/// way is under-counted. It never makes a quiet run look busy.
fn busy_excess(start: &Snapshot, end: &Snapshot, wall_s: f64, ticks: Ticks) -> Option<BusyExcess> {
    let (own0, own1) = (start.own_ns?, end.own_ns?);
    if ticks.user_hz == 0 || wall_s <= 0.0 {
        return None;
    }
    let cpus: Vec<usize> = match &start.cpus {
        Some(c) => c.clone(),
        None => start.busy_ticks.keys().copied().collect(),
    }
    .into_iter()
    // A CPU brought online or taken offline during the run has no difference to take.
    .filter(|c| start.busy_ticks.contains_key(c) && end.busy_ticks.contains_key(c))
    .collect();
    if cpus.is_empty() {
        return None;
    }
    let tick_s = 1.0 / ticks.user_hz as f64;
    let (mut busy_s, mut rounding_s, mut variance_s2) = (0.0, 0.0, 0.0);
    for c in &cpus {
        let (a, b) = (start.busy_ticks[c], end.busy_ticks[c]);
        let moved = a.iter().zip(&b).filter(|(x, y)| y > x).count();
        let d: u64 = a.iter().zip(&b).map(|(x, y)| y.saturating_sub(*x)).sum();
        let cpu_busy_s = d as f64 * tick_s;
        busy_s += cpu_busy_s;
        if moved > 0 {
            rounding_s += moved as f64 * tick_s + ticks.jiffy_s;
        }
        // n·p·(1 − p) jiffies², with n = wall_s / jiffy_s and p this CPU's busy fraction.
        let p = (cpu_busy_s / wall_s).clamp(0.0, 1.0);
        variance_s2 += wall_s * ticks.jiffy_s * p * (1.0 - p);
    }
    let own_s = own1.saturating_sub(own0) as f64 / 1e9;
    let capacity_s = wall_s * cpus.len() as f64;
    let threshold_s = (QUIET_SHARE * capacity_s)
        .max(rounding_s)
        .max(3.0 * variance_s2.sqrt());
    Some(BusyExcess {
        cpus,
        busy_s,
        own_s,
        excess_s: busy_s - own_s,
        threshold_s,
        capacity_s,
    })
}

fn compare(
    start: &Snapshot,
    end: &Snapshot,
    own_forks: u64,
    cpus_used: Option<usize>,
    own_work: &[&str],
) -> RunLoad {
    compare_in(
        start,
        end,
        own_forks,
        cpus_used,
        Ticks::of_this_kernel(),
        own_work,
    )
}

/// Whether `comm` is a kernel worker serving one of the `own_work` workqueues: its name ends
/// in `+netns` while it runs that work, `-netns` after.
fn own_worker(comm: &str, own_work: &[&str]) -> bool {
    comm.starts_with("kworker/")
        && own_work.iter().any(|w| {
            comm.rsplit_once(['+', '-'])
                .is_some_and(|(_, queue)| queue == *w)
        })
}

/// The share of the CPUs a run used that other processes may take with the run still called
/// quiet: a quiet machine's own kernel threads (DAMON's `kdamond`, for one) take about 1 %,
/// which is no reason to doubt a figure.
const QUIET_SHARE: f64 = 0.02;

/// [`compare`] with the kernel's accounting units given (`None`: unknown).
fn compare_in(
    start: &Snapshot,
    end: &Snapshot,
    own_forks: u64,
    cpus_used: Option<usize>,
    ticks: Option<Ticks>,
    own_work: &[&str],
) -> RunLoad {
    let wall_s = match (start.at, end.at) {
        (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
        _ => 0.0,
    };
    let cpus_online = end
        .stat
        .as_ref()
        .map(|s| s.cpus)
        .filter(|&n| n > 0)
        .or_else(|| {
            std::fs::read_to_string("/sys/devices/system/cpu/online")
                .ok()
                .and_then(|t| super::parse::parse_cpu_list(&t))
                .map(|v| v.len())
        })
        .unwrap_or(0);
    let (steal_s, steal_by_cpu_s) = steal(start, end, ticks.map(|t| t.user_hz));

    let forks = match (&start.stat, &end.stat) {
        (Some(a), Some(b)) => match (a.forks, b.forks) {
            (Some(x), Some(y)) => Some(y.saturating_sub(x)),
            _ => None,
        },
        _ => None,
    };
    let foreign_forks = forks.map(|f| f.saturating_sub(own_forks));

    let mut per_pid = cpu_ns_per_pid(start, end);
    // The run's own kernel work is neither another program's tasks nor busy time beyond the
    // run's.
    let mut own_work_ns = 0;
    per_pid.retain(|pid, ns| {
        let own = end.comms.get(pid).is_some_and(|c| own_worker(c, own_work));
        if own {
            own_work_ns += *ns;
        }
        !own
    });
    let foreign_ns: u64 = per_pid.values().sum();
    let tasks_cpu_s = foreign_ns as f64 / 1e9;
    let busy = ticks
        .and_then(|t| busy_excess(start, end, wall_s, t))
        .map(|mut b| {
            b.own_s += own_work_ns as f64 / 1e9;
            b.excess_s = b.busy_s - b.own_s;
            b
        });
    let busy_flagged = busy.as_ref().filter(|b| b.significant());
    // The larger of the two estimates: the per-task one sees other CPUs too, the busy-time
    // one sees tasks that exited; the busy-time one only once it is above its threshold.
    let foreign_cpu_s = busy_flagged.map_or(tasks_cpu_s, |b| b.excess_s.max(tasks_cpu_s));
    let judged_cpus = cpus_used
        .filter(|&n| n > 0)
        .map_or(cpus_online, |n| n.min(cpus_online));
    let capacity_s = wall_s * judged_cpus as f64;
    // Run times of tasks running at the moment they are read lag by up to a tick, so a delta
    // can slightly exceed the window; the clamp keeps the share meaningful.
    let share = |cpu_s: f64| {
        if capacity_s > 0.0 {
            (cpu_s / capacity_s).clamp(0.0, 1.0)
        } else {
            0.0
        }
    };
    let tasks_share = share(tasks_cpu_s);
    let foreign_cpu_share = share(foreign_cpu_s);
    let busiest = busiest(&per_pid, end, wall_s);

    // Steal is read over every online CPU: a tick of it (10 ms) now and then is the
    // hypervisor's housekeeping, no reason to doubt a figure; a share like the one other
    // processes may take is.
    let steal_capacity_s = wall_s * cpus_online as f64;
    let steal_share = steal_s.map(|s| {
        if steal_capacity_s > 0.0 {
            s / steal_capacity_s
        } else if s > 0.0 {
            1.0
        } else {
            0.0
        }
    });
    let foreign_tasks_seen = end.tasks.len();
    let others = other_oscost(start, end);
    let seen = Seen {
        foreign_tasks_seen,
        tasks_share,
        tasks_cpu_s,
        busiest: &busiest,
        busy: busy.as_ref(),
        steal_s,
        steal_share,
        steal_by_cpu_s: &steal_by_cpu_s,
        others: &others,
        foreign_forks,
    };
    let warnings = seen.warnings();
    let quiet = foreign_tasks_seen > 0
        && foreign_cpu_share <= QUIET_SHARE
        && busy.is_some()
        && busy_flagged.is_none()
        && others.is_empty()
        && steal_share.is_some_and(|s| s <= QUIET_SHARE);

    RunLoad {
        wall_s,
        cpus_online,
        steal_s,
        steal_by_cpu_s,
        loadavg_start: start.loadavg1,
        loadavg_end: end.loadavg1,
        foreign_cpu_s,
        foreign_cpu_share,
        foreign_tasks_seen,
        busiest_foreign: busiest,
        forks,
        own_forks,
        foreign_forks,
        probe_s: start.took_s + end.took_s,
        quiet,
        warnings,
    }
}

/// Steal over the run, s, in total and by CPU, from /proc/stat's USER_HZ ticks
/// (sysconf(_SC_CLK_TCK) is the right unit there); `None` when it cannot be read.
fn steal(
    start: &Snapshot,
    end: &Snapshot,
    user_hz: Option<u64>,
) -> (Option<f64>, BTreeMap<usize, f64>) {
    let mut steal_by_cpu_s = BTreeMap::new();
    let steal_s = match (&start.stat, &end.stat, user_hz) {
        (Some(a), Some(b), Some(hz)) if !b.steal_ticks.is_empty() => {
            let mut total = 0u64;
            for (&cpu, &t1) in &b.steal_ticks {
                // A CPU brought online during the run counts from zero.
                let d = t1.saturating_sub(a.steal_ticks.get(&cpu).copied().unwrap_or(0));
                if d > 0 {
                    steal_by_cpu_s.insert(cpu, d as f64 / hz as f64);
                }
                total += d;
            }
            Some(total as f64 / hz as f64)
        }
        _ => None,
    };
    (steal_s, steal_by_cpu_s)
}

/// The CPU time other processes' tasks used over the run, ns, by process.
fn cpu_ns_per_pid(start: &Snapshot, end: &Snapshot) -> HashMap<u32, u64> {
    let mut per_pid: HashMap<u32, u64> = HashMap::new();
    for (tid, &(pid, ns1)) in &end.tasks {
        let d = match start.tasks.get(tid) {
            // A smaller value means the tid was reused by a new task: count it from zero.
            Some(&(_, ns0)) if ns0 <= ns1 => ns1 - ns0,
            _ => ns1,
        };
        *per_pid.entry(pid).or_default() += d;
    }
    per_pid
}

/// The five processes that used the most CPU time, each above 1 % of one CPU.
fn busiest(per_pid: &HashMap<u32, u64>, end: &Snapshot, wall_s: f64) -> Vec<ForeignProcess> {
    let mut busiest: Vec<ForeignProcess> = per_pid
        .iter()
        .filter(|(_, &ns)| wall_s > 0.0 && ns as f64 / 1e9 / wall_s > 0.01)
        .map(|(&pid, &ns)| ForeignProcess {
            pid,
            comm: end.comms.get(&pid).cloned().unwrap_or_default(),
            cpu_s: ns as f64 / 1e9,
            share_of_one_cpu: ns as f64 / 1e9 / wall_s,
        })
        .collect();
    busiest.sort_by(|a, b| b.cpu_s.total_cmp(&a.cpu_s).then(a.pid.cmp(&b.pid)));
    busiest.truncate(5);
    busiest
}

/// What the probes saw of the rest of the machine, to be said in warnings.
struct Seen<'a> {
    foreign_tasks_seen: usize,
    tasks_share: f64,
    tasks_cpu_s: f64,
    busiest: &'a [ForeignProcess],
    busy: Option<&'a BusyExcess>,
    steal_s: Option<f64>,
    /// Steal as a share of the online CPUs' time over the run.
    steal_share: Option<f64>,
    steal_by_cpu_s: &'a BTreeMap<usize, f64>,
    others: &'a [u32],
    foreign_forks: Option<u64>,
}

impl Seen<'_> {
    /// The run's warnings: at most one line on other processes' load, however it was seen,
    /// then another oscost, steal, and forks that could not be accounted for.
    fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.foreign_tasks_seen == 0 {
            warnings.push(
                "could not read the CPU time of other processes from /proc: the run cannot be \
                 shown to be quiet"
                    .to_owned(),
            );
        }
        warnings.extend(self.load_line());
        if self.busy.is_none() && self.steal_s.is_some() {
            warnings.push(
                "could not compare the CPUs' busy time in /proc/stat with oscost's own CPU \
                 time: the run cannot be shown to be quiet (processes that exited before its \
                 end are not counted)"
                    .to_owned(),
            );
        }
        for pid in self.others {
            warnings.push(format!(
                "another oscost (pid {pid}) ran at the same time: both runs' figures are suspect"
            ));
        }
        match self.steal_s {
            None => warnings.push(
                "could not read steal time from /proc/stat: the run cannot be shown to be quiet"
                    .to_owned(),
            ),
            Some(s) if self.steal_share.is_some_and(|share| share > QUIET_SHARE) => {
                let cpus: Vec<usize> = self.steal_by_cpu_s.keys().copied().collect();
                warnings.push(format!(
                    "steal time {s:.2} s ({:.1} % of the CPUs' time; CPUs {}): the hypervisor \
                     ran something else on these vCPUs",
                    self.steal_share.unwrap_or(0.0) * 100.0,
                    oscost_model::cpulist::format(&cpus)
                ));
            }
            Some(_) => {}
        }
        // Forks alone do not make a run noisy: a shell or a timer starts a short process now
        // and then at no measurable cost. They mattered because a task that exited before the
        // end was missing from the per-task estimate; the busy-time estimate counts it on the
        // CPUs the run used, so forks are only worth a warning when that estimate could not be
        // made.
        if let Some(n) = self.foreign_forks.filter(|&n| n > 0 && self.busy.is_none()) {
            warnings.push(format!(
                "{n} processes or threads were started by other programs during the run; those \
                 that exited before its end are missing from the foreign CPU time"
            ));
        }
        warnings
    }

    /// One line on the load other processes put on the machine, from the per-task CPU times
    /// and the CPUs' busy time together (two figures of one load in one line, each said with
    /// how it was seen), or `None` when neither saw any worth a word.
    fn load_line(&self) -> Option<String> {
        let who = self
            .busiest
            .first()
            .map(|p| format!(" (busiest: {} pid {})", p.comm, p.pid))
            .unwrap_or_default();
        let by_tasks = (self.tasks_share > QUIET_SHARE).then_some(self.tasks_share * 100.0);
        // Worth its own figure when the per-task estimate did not flag the run, or saw clearly
        // less: then the time went to tasks gone by the end.
        let by_busy = self.busy.filter(|b| {
            b.significant() && (by_tasks.is_none() || b.excess_s > self.tasks_cpu_s + b.threshold_s)
        });
        let busy_text = |b: &BusyExcess| {
            let exited = if b.excess_s > self.tasks_cpu_s + b.threshold_s {
                "; some had exited before its end"
            } else {
                ""
            };
            (
                format!(
                    "{:.1} % of CPU{} {}",
                    b.share() * 100.0,
                    if b.cpus.len() == 1 { "" } else { "s" },
                    oscost_model::cpulist::format(&b.cpus)
                ),
                exited,
            )
        };
        let line = match (by_tasks, by_busy) {
            (None, None) => return None,
            (Some(t), None) => format!(
                "other processes used {t:.1} % of the CPUs during the run{who}: figures may be \
                 inflated"
            ),
            (None, Some(b)) => {
                let (share, exited) = busy_text(b);
                format!(
                    "other processes used {share} during the run (seen in the CPUs' busy \
                     time{exited}): figures may be inflated"
                )
            }
            (Some(t), Some(b)) => {
                let (share, exited) = busy_text(b);
                format!(
                    "other processes used {t:.1} % of the CPUs during the run{who} by their \
                     tasks' CPU time, and {share} by the CPUs' busy time{exited}: figures may \
                     be inflated"
                )
            }
        };
        Some(line)
    }
}

/// Other oscost runs seen at the start or the end of the probe, each named by its topmost
/// oscost process (its coordinating process, unless that one was not seen).
fn other_oscost(start: &Snapshot, end: &Snapshot) -> Vec<u32> {
    let mut seen = start.oscost.clone();
    seen.extend(&end.oscost);
    let mut roots: Vec<u32> = seen
        .iter()
        .filter(|(_, ppid)| !seen.contains_key(ppid))
        .map(|(&pid, _)| pid)
        .collect();
    roots.sort_unstable();
    roots
}

#[cfg(test)]
mod tests;
