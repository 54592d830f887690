//! The machine's description recorded with every run, and how busy the machine was during it.
//!
//! Two figures are only comparable if they were measured under the same kernel, mitigations,
//! clock, idle and scheduler configuration (method §8.3, §2.2 rule 4, §3.3 rule 2), so
//! [`Environment`] records all of these. Every value is read, never assumed: anything the
//! process cannot read is `None`, and no default is put in its place.
//!
//! A quiet machine cannot be taken on trust either (method §8.4): [`LoadProbe`] measures the
//! CPU time other tasks used, the steal time and the forks of other programs *during* a run,
//! and [`RunLoad`] says in plain words when that makes the figures suspect.

use oscost_model::env::*;
use oscost_model::ClockInfo;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::Read as _;
use std::time::Instant;

/// Reads everything that can be read about this machine. Takes a few milliseconds; may
/// start `gzip` once to read `/proc/config.gz`. Never fails: unreadable items are `None`.
pub fn collect(clock: &ClockInfo, cpus_used: &[usize]) -> Environment {
    let uname = oscost_sys::sysinfo::uname();
    let kernel_release = read_trim("/proc/sys/kernel/osrelease")
        .filter(|s| !s.is_empty())
        .or_else(|| uname.as_ref().map(|u| u.release.clone()))
        .unwrap_or_default();
    let kernel_cmdline = read_trim("/proc/cmdline");
    let params = kernel_cmdline
        .as_deref()
        .map(parse_cmdline)
        .unwrap_or_default();
    let param = |key: &str| {
        params
            .iter()
            .rev() // the kernel honours the last occurrence
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone().unwrap_or_default())
    };
    let boot_params = params
        .iter()
        .filter(|(k, _)| is_notable_param(k))
        .map(|(k, v)| (k.clone(), v.clone().unwrap_or_default()))
        .collect();

    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo")
        .map(|t| parse_cpuinfo(&t))
        .unwrap_or_default();
    let has = |f: &str| cpuinfo.flags.as_ref().map(|fl| fl.iter().any(|x| x == f));
    let cpu_flags = cpuinfo.flags.as_ref().map(|_| CpuFlags {
        constant_tsc: has("constant_tsc") == Some(true),
        nonstop_tsc: has("nonstop_tsc") == Some(true),
        tsc_reliable: has("tsc_reliable") == Some(true),
        tsc_known_freq: has("tsc_known_freq") == Some(true),
        rdtscp: has("rdtscp") == Some(true),
        pcid: has("pcid") == Some(true),
        invpcid: has("invpcid") == Some(true),
    });

    const CPU: &str = "/sys/devices/system/cpu";
    const CS: &str = "/sys/devices/system/clocksource/clocksource0";
    let (uid, euid) = oscost_sys::sysinfo::uids();
    let kernel_config = read_kernel_config(&kernel_release);
    let tick = oscost_sys::sysinfo::coarse_clock_resolution_ns().and_then(|ns| {
        hz_from_tick_ns(ns).map(|hz| Tick {
            hz,
            tick_ns: ns,
            method: format!("clock_getres(CLOCK_MONOTONIC_COARSE) = {ns} ns, which is one jiffy"),
        })
    });
    let (boost, boost_source) = read_boost();

    Environment {
        oscost_version: env!("CARGO_PKG_VERSION").to_owned(),
        git_commit: None,
        rustc_version: None,
        command_line: std::env::args().collect(),
        nice: None,
        kernel_release,
        kernel_version: uname.as_ref().map(|u| u.version.clone()),
        proc_version: read_trim("/proc/version"),
        kernel_cmdline,
        boot_params,
        arch: std::env::consts::ARCH.to_owned(),
        machine: uname.as_ref().map(|u| u.machine.clone()),
        glibc_version: oscost_sys::sysinfo::glibc_version(),
        kernel_config,
        cpu_model: cpuinfo.model.clone(),
        cpu_vendor: cpuinfo.vendor.clone(),
        cpu_signature: cpuinfo.signature(),
        microcode: cpuinfo.microcode.clone(),
        cpus_online: read_cpu_list(&format!("{CPU}/online")),
        cpus_used: cpus_used.to_vec(),
        smt: Smt {
            active: read_trim(&format!("{CPU}/smt/active")).and_then(|s| parse_bool01(&s)),
            control: read_trim(&format!("{CPU}/smt/control")),
            cpu0_siblings: read_cpu_list(&format!("{CPU}/cpu0/topology/thread_siblings_list")),
        },
        cpu_flags,
        clock: clock.clone(),
        clocksource_current: read_trim(&format!("{CS}/current_clocksource")),
        clocksource_available: read_trim(&format!("{CS}/available_clocksource"))
            .map(|s| s.split_whitespace().map(str::to_owned).collect()),
        virtualisation: Virtualisation {
            hypervisor_flag: has("hypervisor"),
            cpuid_signature: oscost_sys::sysinfo::cpuid_hypervisor_vendor(),
            sys_hypervisor_type: read_trim("/sys/hypervisor/type"),
            dmi_sys_vendor: read_trim("/sys/class/dmi/id/sys_vendor"),
            dmi_product_name: read_trim("/sys/class/dmi/id/product_name"),
        },
        security: Security {
            vulnerabilities: read_vulnerabilities(&format!("{CPU}/vulnerabilities")),
            cmdline_mitigations: param("mitigations"),
            cmdline_pti: param("pti").or_else(|| param("nopti").map(|_| "off".to_owned())),
            perf_event_paranoid: read_parse("/proc/sys/kernel/perf_event_paranoid"),
            uid,
            euid,
        },
        power: Power {
            cpufreq_driver: read_trim(&format!("{CPU}/cpu0/cpufreq/scaling_driver")),
            cpufreq_governor: read_trim(&format!("{CPU}/cpu0/cpufreq/scaling_governor")),
            cpufreq_cur_khz: read_parse(&format!("{CPU}/cpu0/cpufreq/scaling_cur_freq")),
            boost,
            boost_source,
            cpuidle_driver: read_trim(&format!("{CPU}/cpuidle/current_driver")),
            cpuidle_governor: read_trim(&format!("{CPU}/cpuidle/current_governor_ro"))
                .or_else(|| read_trim(&format!("{CPU}/cpuidle/current_governor"))),
            idle_states: read_idle_states(&format!("{CPU}/cpu0/cpuidle")),
            cpu_dma_latency_us: read_cpu_dma_latency(),
        },
        scheduler: Scheduler {
            tick,
            preempt_model: read_trim("/sys/kernel/debug/sched/preempt")
                .and_then(|s| parse_preempt_debugfs(&s)),
            preempt_boot_param: param("preempt"),
            sched_rr_timeslice_ms: read_parse("/proc/sys/kernel/sched_rr_timeslice_ms"),
            sched_rt_period_us: read_parse("/proc/sys/kernel/sched_rt_period_us"),
            sched_rt_runtime_us: read_parse("/proc/sys/kernel/sched_rt_runtime_us"),
            sched_autogroup_enabled: read_trim("/proc/sys/kernel/sched_autogroup_enabled")
                .and_then(|s| parse_bool01(&s)),
            autogroup: read_trim("/proc/self/autogroup"),
            isolated_cpus: read_cpu_list(&format!("{CPU}/isolated")),
            nohz_full_cpus: read_cpu_list(&format!("{CPU}/nohz_full")),
        },
        thp_enabled: read_trim("/sys/kernel/mm/transparent_hugepage/enabled")
            .and_then(|s| bracketed(&s)),
        thp_defrag: read_trim("/sys/kernel/mm/transparent_hugepage/defrag")
            .and_then(|s| bracketed(&s)),
        affinity: oscost_sys::affinity().ok(),
        process_nice: oscost_sys::nice().ok(),
        load: None,
    }
}

// ------------------------------------------------------------------------------------------
// Readers for the environment
// ------------------------------------------------------------------------------------------

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

fn read_parse<T: std::str::FromStr>(path: &str) -> Option<T> {
    read_trim(path)?.parse().ok()
}

/// A kernel CPU list file; an empty file is a real answer ("none"), so it is `Some(vec![])`.
fn read_cpu_list(path: &str) -> Option<Vec<usize>> {
    let text = read_trim(path)?;
    parse_cpu_list(&text)
}

/// Parses a kernel CPU list (`0-3,8`), where empty means no CPU.
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let text = text.trim();
    if text.is_empty() {
        return Some(Vec::new());
    }
    crate::cpuset::parse(text).ok()
}

fn parse_bool01(s: &str) -> Option<bool> {
    match s.trim() {
        "1" | "Y" | "y" | "on" => Some(true),
        "0" | "N" | "n" | "off" => Some(false),
        _ => None,
    }
}

/// The bracketed choice of a sysfs selector file: `always [madvise] never` → `madvise`.
pub fn bracketed(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let end = start + text[start..].find(']')?;
    Some(text[start + 1..end].to_owned())
}

/// The current model in `/sys/kernel/debug/sched/preempt`: `none (voluntary) full` →
/// `voluntary`.
pub fn parse_preempt_debugfs(text: &str) -> Option<String> {
    let start = text.find('(')?;
    let end = start + text[start..].find(')')?;
    Some(text[start + 1..end].to_owned())
}

/// HZ from the length of one jiffy. The kernel computes `TICK_NSEC` as
/// `(10^9 + HZ/2) / HZ`; the rate is accepted only if it reproduces `tick_ns` exactly, so a
/// clock whose resolution is not a jiffy is never mistaken for one.
pub fn hz_from_tick_ns(tick_ns: u64) -> Option<u32> {
    if tick_ns == 0 {
        return None;
    }
    let hz = (1e9 / tick_ns as f64).round() as u64;
    if !(10..=10_000).contains(&hz) {
        return None;
    }
    ((1_000_000_000 + hz / 2) / hz == tick_ns).then_some(hz as u32)
}

/// Boot parameters worth recording next to the full command line.
fn is_notable_param(key: &str) -> bool {
    const KEYS: &[&str] = &[
        "mitigations",
        "pti",
        "nopti",
        "spectre_v2",
        "spectre_v2_user",
        "retbleed",
        "mds",
        "nospectre_v2",
        "idle",
        "cpuidle.off",
        "intel_idle.max_cstate",
        "processor.max_cstate",
        "isolcpus",
        "nohz",
        "nohz_full",
        "rcu_nocbs",
        "irqaffinity",
        "preempt",
        "threadirqs",
        "clocksource",
        "tsc",
        "nosmt",
        "transparent_hugepage",
        "intel_pstate",
        "amd_pstate",
        "skew_tick",
    ];
    KEYS.contains(&key) || key.contains("haltpoll")
}

/// Splits a kernel command line into `(key, value)` pairs, stopping at `--` (what follows
/// goes to init). Quoted values containing spaces are not supported; the kernel's own
/// parameters do not use them.
pub fn parse_cmdline(text: &str) -> Vec<(String, Option<String>)> {
    text.split_whitespace()
        .take_while(|t| *t != "--")
        .map(|t| match t.split_once('=') {
            Some((k, v)) => (k.to_owned(), Some(v.to_owned())),
            None => (t.to_owned(), None),
        })
        .collect()
}

/// The first CPU's block of `/proc/cpuinfo`.
#[derive(Debug, Default, Clone, PartialEq)]
struct CpuInfoFields {
    model: Option<String>,
    vendor: Option<String>,
    family: Option<String>,
    model_number: Option<String>,
    stepping: Option<String>,
    microcode: Option<String>,
    flags: Option<Vec<String>>,
}

impl CpuInfoFields {
    fn signature(&self) -> Option<String> {
        let f = self.family.as_ref()?;
        let m = self.model_number.as_ref()?;
        let mut s = format!("family {f} model {m}");
        if let Some(st) = &self.stepping {
            let _ = write!(s, " stepping {st}");
        }
        Some(s)
    }
}

fn parse_cpuinfo(text: &str) -> CpuInfoFields {
    let mut out = CpuInfoFields::default();
    let (mut implementer, mut part) = (None, None);
    for line in text.lines() {
        if line.trim().is_empty() {
            // Only the first processor's block: all CPUs of a machine report the same model,
            // and hybrid CPUs say so in their own files, not here.
            if out.model.is_some() || out.flags.is_some() || implementer.is_some() {
                break;
            }
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim().to_owned());
        match k {
            "model name" => out.model = Some(v),
            "vendor_id" => out.vendor = Some(v),
            "cpu family" => out.family = Some(v),
            "model" => out.model_number = Some(v),
            "stepping" => out.stepping = Some(v),
            "microcode" => out.microcode = Some(v),
            "flags" => out.flags = Some(v.split_whitespace().map(str::to_owned).collect()),
            "CPU implementer" => implementer = Some(v),
            "CPU part" => part = Some(v),
            _ => {}
        }
    }
    if out.model.is_none() {
        if let (Some(i), Some(p)) = (implementer, part) {
            out.model = Some(format!("CPU implementer {i}, part {p}"));
        }
    }
    out
}

/// Kernel configuration from `/boot/config-<release>`, else `/proc/config.gz` through
/// `gzip -dc` (no decompressor is linked in, and this runs once per invocation).
fn read_kernel_config(release: &str) -> Option<KernelConfig> {
    if !release.is_empty() {
        let path = format!("/boot/config-{release}");
        if let Ok(text) = std::fs::read_to_string(&path) {
            return Some(parse_kernel_config(&text, &path));
        }
    }
    if !std::path::Path::new("/proc/config.gz").exists() {
        return None;
    }
    let out = std::process::Command::new("gzip")
        .args(["-dc", "/proc/config.gz"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Some(parse_kernel_config(&text, "/proc/config.gz"))
}

/// Parses a kernel `.config` text. Options the text does not mention stay `None`.
pub fn parse_kernel_config(text: &str, source: &str) -> KernelConfig {
    let mut set: HashMap<&str, &str> = HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("# CONFIG_") {
            if let Some(name) = rest.strip_suffix(" is not set") {
                set.insert(name, "n");
            }
        } else if let Some(rest) = line.strip_prefix("CONFIG_") {
            if let Some((k, v)) = rest.split_once('=') {
                set.insert(k, v);
            }
        }
    }
    let yes = |k: &str| set.get(k).map(|v| *v == "y");
    // PREEMPT_RT is a separate option on recent kernels, combined with one of the choices.
    let choice = [
        ("PREEMPT_NONE", "none"),
        ("PREEMPT_VOLUNTARY", "voluntary"),
        ("PREEMPT", "full"),
        ("PREEMPT_LAZY", "lazy"),
    ]
    .iter()
    .find(|(k, _)| yes(k) == Some(true))
    .map(|(_, v)| (*v).to_owned());
    let preempt = match (yes("PREEMPT_RT") == Some(true), choice) {
        (true, Some(c)) => Some(format!("rt ({c})")),
        (true, None) => Some("rt".to_owned()),
        (false, c) => c,
    };
    let no_hz = if yes("NO_HZ_FULL") == Some(true) {
        Some("full".to_owned())
    } else if yes("NO_HZ_IDLE") == Some(true) {
        Some("idle".to_owned())
    } else if yes("HZ_PERIODIC") == Some(true) {
        Some("periodic".to_owned())
    } else {
        None
    };
    KernelConfig {
        source: source.to_owned(),
        hz: set.get("HZ").and_then(|v| v.parse().ok()),
        preempt,
        preempt_dynamic: yes("PREEMPT_DYNAMIC"),
        no_hz,
        high_res_timers: yes("HIGH_RES_TIMERS"),
    }
}

fn read_vulnerabilities(dir: &str) -> Option<BTreeMap<String, String>> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut map = BTreeMap::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Ok(text) = std::fs::read_to_string(e.path()) {
            map.insert(name, text.trim().to_owned());
        }
    }
    Some(map)
}

fn read_idle_states(dir: &str) -> Option<Vec<IdleState>> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut states: Vec<(u32, IdleState)> = entries
        .flatten()
        .filter_map(|e| {
            let state = e.file_name().to_string_lossy().into_owned();
            let n: u32 = state.strip_prefix("state")?.parse().ok()?;
            let p = |f: &str| format!("{dir}/{state}/{f}");
            Some((
                n,
                IdleState {
                    name: read_trim(&p("name")),
                    latency_us: read_parse(&p("latency")),
                    residency_us: read_parse(&p("residency")),
                    disabled: read_trim(&p("disable")).and_then(|s| parse_bool01(&s)),
                    state,
                },
            ))
        })
        .collect();
    // Numeric order: `state10` comes after `state9`.
    states.sort_by_key(|(n, _)| *n);
    Some(states.into_iter().map(|(_, s)| s).collect())
}

fn read_boost() -> (Option<bool>, Option<String>) {
    const BOOST: &str = "/sys/devices/system/cpu/cpufreq/boost";
    const NO_TURBO: &str = "/sys/devices/system/cpu/intel_pstate/no_turbo";
    if let Some(b) = read_trim(BOOST).and_then(|s| parse_bool01(&s)) {
        return (Some(b), Some(BOOST.to_owned()));
    }
    if let Some(nt) = read_trim(NO_TURBO).and_then(|s| parse_bool01(&s)) {
        return (Some(!nt), Some(NO_TURBO.to_owned()));
    }
    (None, None)
}

/// The PM QoS CPU latency limit. The device can only be read after opening it; an open file
/// adds a request at the default value (no constraint), so reading it does not change the
/// limit, and the request goes away on close.
fn read_cpu_dma_latency() -> Option<i32> {
    let mut f = std::fs::File::open("/dev/cpu_dma_latency").ok()?;
    let mut buf = [0u8; 4];
    f.read_exact(&mut buf).ok()?;
    Some(i32::from_ne_bytes(buf))
}

// ------------------------------------------------------------------------------------------
// Load during a run
// ------------------------------------------------------------------------------------------

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
        .or_else(|| read_cpu_list("/sys/devices/system/cpu/online").map(|v| v.len()))
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

/// What oscost takes from `/proc/stat`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// Steal ticks (USER_HZ) per CPU: the 8th value of each `cpuN` line; CPUs whose line is
    /// too short (kernels without steal accounting) are left out.
    pub steal_ticks: BTreeMap<usize, u64>,
    /// Number of `cpuN` lines, i.e. online CPUs.
    pub cpus: usize,
    /// `processes`: tasks created since boot.
    pub forks: Option<u64>,
}

/// Parses the text of `/proc/stat`.
pub fn parse_proc_stat(text: &str) -> ProcStat {
    let mut out = ProcStat::default();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let Some(key) = it.next() else { continue };
        if let Some(n) = key.strip_prefix("cpu") {
            // The aggregate `cpu` line has no number and is skipped.
            let Ok(cpu) = n.parse::<usize>() else {
                continue;
            };
            out.cpus += 1;
            // user nice system idle iowait irq softirq steal ...
            if let Some(steal) = it.nth(7).and_then(|v| v.parse().ok()) {
                out.steal_ticks.insert(cpu, steal);
            }
        } else if key == "processes" {
            out.forks = it.next().and_then(|v| v.parse().ok());
        }
    }
    out
}

/// Time on CPU in ns: the first field of `/proc/<pid>/task/<tid>/schedstat`.
pub fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// The fields of `/proc/<pid>/stat` the probe needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidStat<'a> {
    /// Command name (field 2, without the parentheses).
    pub comm: &'a str,
    /// Parent pid (field 4).
    pub ppid: u32,
    /// Number of threads (field 20).
    pub num_threads: u32,
}

/// Parses `/proc/<pid>/stat`. The command name may contain spaces and parentheses, so the
/// fields are counted from the *last* `)`.
pub fn parse_pid_stat(text: &str) -> Option<PidStat<'_>> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?;
    // Fields from 3 (state) on; field n is at index n - 3.
    let mut rest = text.get(close + 1..)?.split_whitespace();
    let ppid = rest.nth(1)?.parse().ok()?;
    let num_threads = rest.nth(15)?.parse().ok()?;
    Some(PidStat {
        comm,
        ppid,
        num_threads,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use oscost_sys::clock::Clock;
    use std::time::Duration;

    #[test]
    fn collect_describes_this_machine() {
        let clock = Clock::monotonic("test".into());
        let env = collect(clock.info(), &[0]);
        assert!(!env.kernel_release.is_empty());
        assert_eq!(env.cpus_used, vec![0]);
        assert_eq!(env.clock, *clock.info());
        assert!(!env.oscost_version.is_empty());
        if let Some(t) = &env.scheduler.tick {
            assert!([100, 250, 300, 1000].contains(&t.hz), "HZ {}", t.hz);
            if let Some(cfg_hz) = env.kernel_config.as_ref().and_then(|c| c.hz) {
                assert_eq!(cfg_hz, t.hz, "CONFIG_HZ disagrees with the coarse clock");
            }
        }
        if let Some(v) = &env.security.vulnerabilities {
            let keys: Vec<&String> = v.keys().collect();
            let mut sorted = keys.clone();
            sorted.sort();
            assert_eq!(keys, sorted);
        }
        if let Some(on) = &env.cpus_online {
            assert!(!on.is_empty());
        }
        // Round-trips through JSON (no NaN, every field deserialisable).
        let json = serde_json::to_string(&env).unwrap();
        let back: Environment = serde_json::from_str(&json).unwrap();
        assert_eq!(back, env);
    }

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
    fn proc_stat_steal_and_forks() {
        let text = "cpu  12686 0 2086 33918 194 0 15 39 0 0\n\
                    cpu0 6253 0 874 17285 34 0 4 19 0 0\n\
                    cpu1 6432 0 1211 16632 159 0 11 20 0 0\n\
                    cpu3 1 2 3 4 5 6 7\n\
                    intr 1234 0 0\n\
                    ctxt 98765\n\
                    processes 3868\n\
                    procs_running 1\n";
        let s = parse_proc_stat(text);
        assert_eq!(s.cpus, 3);
        assert_eq!(s.steal_ticks.get(&0), Some(&19));
        assert_eq!(s.steal_ticks.get(&1), Some(&20));
        // Too short for a steal column: not invented.
        assert_eq!(s.steal_ticks.get(&3), None);
        assert_eq!(s.forks, Some(3868));
        assert_eq!(parse_proc_stat("").forks, None);
    }

    #[test]
    fn schedstat_and_pid_stat() {
        assert_eq!(
            parse_schedstat("170551358 25295737 357\n"),
            Some(170_551_358)
        );
        assert_eq!(parse_schedstat(""), None);
        assert_eq!(parse_schedstat("x 1 2"), None);
        let stat = "3901 (my (odd) prog) R 3889 3889 3463 0 -1 4194304 98 0 0 0 0 0 0 0 20 0 \
                    7 0 24816 3133440 396";
        let p = parse_pid_stat(stat).unwrap();
        assert_eq!(p.comm, "my (odd) prog");
        assert_eq!(p.ppid, 3889);
        assert_eq!(p.num_threads, 7);
        assert_eq!(parse_pid_stat("12 (x) S"), None);
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

    #[test]
    fn small_parsers() {
        assert_eq!(hz_from_tick_ns(4_000_000), Some(250));
        assert_eq!(hz_from_tick_ns(3_333_333), Some(300));
        assert_eq!(hz_from_tick_ns(1_000_000), Some(1000));
        assert_eq!(hz_from_tick_ns(10_000_000), Some(100));
        assert_eq!(hz_from_tick_ns(1), None);
        assert_eq!(hz_from_tick_ns(3_999_000), None);
        assert_eq!(bracketed("always [madvise] never"), Some("madvise".into()));
        assert_eq!(bracketed("always madvise"), None);
        assert_eq!(
            parse_preempt_debugfs("none (voluntary) full lazy"),
            Some("voluntary".into())
        );
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("0-2,5\n"), Some(vec![0, 1, 2, 5]));
        let p = parse_cmdline("mitigations=auto,nosmt quiet nopti -- --addr 0.0.0.0");
        assert_eq!(p.len(), 3);
        assert_eq!(p[0], ("mitigations".into(), Some("auto,nosmt".into())));
        assert_eq!(p[2], ("nopti".into(), None));
        let cfg = parse_kernel_config(
            "CONFIG_HZ_250=y\nCONFIG_HZ=250\nCONFIG_PREEMPT_NONE=y\n# CONFIG_PREEMPT is not set\n\
             CONFIG_PREEMPT_DYNAMIC=y\nCONFIG_NO_HZ_IDLE=y\n# CONFIG_NO_HZ_FULL is not set\n",
            "test",
        );
        assert_eq!(cfg.hz, Some(250));
        assert_eq!(cfg.preempt.as_deref(), Some("none"));
        assert_eq!(cfg.preempt_dynamic, Some(true));
        assert_eq!(cfg.no_hz.as_deref(), Some("idle"));
        assert_eq!(cfg.high_res_timers, None);
        let ci = parse_cpuinfo(
            "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 167\n\
             model name\t: Intel Xeon Processor\nstepping\t: 1\nflags\t\t: fpu constant_tsc pcid\n\n\
             processor\t: 1\nmodel name\t: Other\n",
        );
        assert_eq!(ci.model.as_deref(), Some("Intel Xeon Processor"));
        assert_eq!(
            ci.signature().as_deref(),
            Some("family 6 model 167 stepping 1")
        );
        assert_eq!(ci.flags.unwrap().len(), 3);
    }
}
