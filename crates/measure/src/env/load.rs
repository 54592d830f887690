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
/// Foreign CPU time is the sum of per-task `/proc/<pid>/task/<tid>/schedstat` run times (ns,
/// precise, unlike tick-sampled `/proc/stat` busy times) of every task not belonging to this
/// process or its descendants. Tasks that appear during the run count from zero; tasks that
/// exit before the end are lost, so their CPU time is missing, which is why forks of other
/// programs are counted and reported too. A process that is orphaned and reparented away from
/// us during the run counts as foreign.
#[derive(Debug)]
pub struct LoadProbe {
    start: Snapshot,
}

impl LoadProbe {
    /// Takes the starting snapshot (a few milliseconds on a normal machine).
    pub fn start() -> LoadProbe {
        LoadProbe {
            start: Snapshot::take(false),
        }
    }

    /// Takes the final snapshot and compares, assuming this process started no tasks.
    pub fn finish(self) -> RunLoad {
        self.finish_with_own_forks(0)
    }

    /// Takes the final snapshot and compares; `own` is the number of processes and threads
    /// the caller created during the run, so only other programs' forks are counted.
    pub fn finish_with_own_forks(self, own: u64) -> RunLoad {
        let end = Snapshot::take(true);
        compare(&self.start, &end, own, None)
    }

    /// Like [`LoadProbe::finish_with_own_forks`], judging the foreign CPU time against the
    /// `cpus_used` CPUs the run measured on rather than every online CPU: on a large machine a
    /// process saturating the measured CPU is a small share of all CPUs but spoils the run.
    pub fn finish_for(self, own: u64, cpus_used: usize) -> RunLoad {
        let end = Snapshot::take(true);
        compare(&self.start, &end, own, Some(cpus_used))
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
}

impl Snapshot {
    fn take(want_comm: bool) -> Snapshot {
        let t0 = Instant::now();
        let mut s = Snapshot {
            stat: std::fs::read_to_string("/proc/stat")
                .ok()
                .map(|t| parse_proc_stat(&t)),
            loadavg1: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|t| t.split_whitespace().next()?.parse().ok()),
            ..Snapshot::default()
        };
        read_foreign_tasks(&mut s, want_comm);
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
    // pid → (ppid, tasks)
    let mut procs: HashMap<u32, (u32, Vec<(u32, u64)>)> = HashMap::new();
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
        let (ppid, threads) = (st.ppid, st.num_threads);
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
        procs.insert(pid, (ppid, tasks));
    }
    // Our descendants (children, grandchildren...) are ours, not foreign.
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, (ppid, _)) in &procs {
        children.entry(*ppid).or_default().push(pid);
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
    for (pid, (_, tasks)) in procs {
        for (tid, ns) in tasks {
            s.tasks.insert(tid, (pid, ns));
        }
    }
}

fn compare(start: &Snapshot, end: &Snapshot, own_forks: u64, cpus_used: Option<usize>) -> RunLoad {
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

    // Steal, in USER_HZ ticks (sysconf(_SC_CLK_TCK) is the right unit for /proc/stat).
    let user_hz = oscost_sys::sysinfo::user_hz();
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

    let forks = match (&start.stat, &end.stat) {
        (Some(a), Some(b)) => match (a.forks, b.forks) {
            (Some(x), Some(y)) => Some(y.saturating_sub(x)),
            _ => None,
        },
        _ => None,
    };
    let foreign_forks = forks.map(|f| f.saturating_sub(own_forks));

    let mut per_pid: HashMap<u32, u64> = HashMap::new();
    for (tid, &(pid, ns1)) in &end.tasks {
        let d = match start.tasks.get(tid) {
            // A smaller value means the tid was reused by a new task: count it from zero.
            Some(&(_, ns0)) if ns0 <= ns1 => ns1 - ns0,
            _ => ns1,
        };
        *per_pid.entry(pid).or_default() += d;
    }
    let foreign_ns: u64 = per_pid.values().sum();
    let foreign_cpu_s = foreign_ns as f64 / 1e9;
    let judged_cpus = cpus_used
        .filter(|&n| n > 0)
        .map_or(cpus_online, |n| n.min(cpus_online));
    let capacity_s = wall_s * judged_cpus as f64;
    // Run times of tasks running at the moment they are read lag by up to a tick, so a delta
    // can slightly exceed the window; the clamp keeps the share meaningful.
    let foreign_cpu_share = if capacity_s > 0.0 {
        (foreign_cpu_s / capacity_s).clamp(0.0, 1.0)
    } else {
        0.0
    };
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

    let mut warnings = Vec::new();
    let foreign_tasks_seen = end.tasks.len();
    if foreign_tasks_seen == 0 {
        warnings.push(
            "could not read the CPU time of other processes from /proc: the run cannot be \
             shown to be quiet"
                .to_owned(),
        );
    }
    if foreign_cpu_share > 0.01 {
        let who = busiest
            .first()
            .map(|p| format!(" (busiest: {} pid {})", p.comm, p.pid))
            .unwrap_or_default();
        warnings.push(format!(
            "other processes used {:.1} % of the CPUs during the run{who}: figures may be \
             inflated",
            foreign_cpu_share * 100.0
        ));
    }
    match steal_s {
        None => warnings.push(
            "could not read steal time from /proc/stat: the run cannot be shown to be quiet"
                .to_owned(),
        ),
        Some(s) if s > 0.0 => {
            let cpus: Vec<usize> = steal_by_cpu_s.keys().copied().collect();
            warnings.push(format!(
                "steal time {s:.2} s (CPUs {}): the hypervisor ran something else on these vCPUs",
                oscost_model::cpulist::format(&cpus)
            ));
        }
        Some(_) => {}
    }
    if let Some(n) = foreign_forks.filter(|&n| n > 0) {
        warnings.push(format!(
            "{n} processes or threads were started by other programs during the run; those \
             that exited before its end are missing from the foreign CPU time"
        ));
    }
    let quiet = foreign_tasks_seen > 0 && foreign_cpu_share <= 0.01 && steal_s == Some(0.0);

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn load_probe_around_sleep() {
        let probe = LoadProbe::start();
        std::thread::sleep(Duration::from_millis(30));
        let load = probe.finish();
        assert!(load.wall_s > 0.0);
        assert!((0.0..=1.0).contains(&load.foreign_cpu_share));
        assert!(load.foreign_cpu_s >= 0.0);
        assert_eq!(load.own_forks, 0);
        if load.quiet {
            assert!(load.foreign_cpu_share <= 0.01);
            assert_eq!(load.steal_s, Some(0.0));
        }
        let json = serde_json::to_string(&load).unwrap();
        let back: RunLoad = serde_json::from_str(&json).unwrap();
        assert_eq!(back, load);
    }

    #[test]
    fn own_children_are_not_foreign() {
        // A child burning CPU during the run must not be counted as foreign load.
        let probe = LoadProbe::start();
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("sh");
        std::thread::sleep(Duration::from_millis(100));
        let load = probe.finish_with_own_forks(1);
        let _ = child.kill();
        let _ = child.wait();
        let me = std::process::id();
        assert!(load.busiest_foreign.iter().all(|p| p.pid != me));
        assert!(
            load.busiest_foreign.iter().all(|p| p.pid != child.id()),
            "{:?}",
            load.busiest_foreign
        );
    }

    #[test]
    fn compare_counts_new_tasks_from_zero_and_flags_load() {
        let t0 = Instant::now();
        let mut a = Snapshot {
            at: Some(t0),
            stat: Some(parse_proc_stat(
                "cpu0 0 0 0 0 0 0 0 5\ncpu1 0 0 0 0 0 0 0 5\nprocesses 10",
            )),
            ..Snapshot::default()
        };
        a.tasks.insert(100, (100, 1_000_000_000));
        a.tasks.insert(200, (200, 5_000_000_000)); // exits: lost
        let mut b = Snapshot {
            at: Some(t0 + Duration::from_secs(1)),
            stat: Some(parse_proc_stat(
                "cpu0 0 0 0 0 0 0 0 5\ncpu1 0 0 0 0 0 0 0 5\nprocesses 13",
            )),
            ..Snapshot::default()
        };
        b.tasks.insert(100, (100, 1_100_000_000)); // +0.1 s
        b.tasks.insert(300, (300, 50_000_000)); // new: +0.05 s
        b.comms.insert(100, "busy".into());
        let load = compare(&a, &b, 1, None);
        assert!((load.wall_s - 1.0).abs() < 1e-9);
        assert_eq!(load.cpus_online, 2);
        assert!((load.foreign_cpu_s - 0.15).abs() < 1e-9);
        assert!((load.foreign_cpu_share - 0.075).abs() < 1e-9);
        assert_eq!(load.steal_s, Some(0.0));
        assert_eq!(load.forks, Some(3));
        assert_eq!(load.foreign_forks, Some(2));
        assert!(!load.quiet);
        assert_eq!(load.busiest_foreign[0].comm, "busy");
        assert!(load.warnings[0].starts_with("other processes used 7.5 % of the CPUs"));
        assert!(load
            .warnings
            .iter()
            .any(|w| w.starts_with("2 processes or threads")));
        // Judged against the one CPU a run used, the same foreign time is twice the share.
        let one = compare(&a, &b, 1, Some(1));
        assert!((one.foreign_cpu_share - 0.15).abs() < 1e-9);
    }
}
