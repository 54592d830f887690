//! Parsers for what the kernel says about itself: pure functions on text, tested on fixed
//! samples.

use oscost_model::env::KernelConfig;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// Parses a kernel CPU list (`0-3,8`), where empty means no CPU.
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let text = text.trim();
    if text.is_empty() {
        return Some(Vec::new());
    }
    crate::cpuset::parse(text).ok()
}

pub(crate) fn parse_bool01(s: &str) -> Option<bool> {
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
pub(crate) fn is_notable_param(key: &str) -> bool {
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
pub(crate) struct CpuInfoFields {
    pub(crate) model: Option<String>,
    pub(crate) vendor: Option<String>,
    pub(crate) family: Option<String>,
    pub(crate) model_number: Option<String>,
    pub(crate) stepping: Option<String>,
    pub(crate) microcode: Option<String>,
    pub(crate) flags: Option<Vec<String>>,
}

impl CpuInfoFields {
    pub(crate) fn signature(&self) -> Option<String> {
        let f = self.family.as_ref()?;
        let m = self.model_number.as_ref()?;
        let mut s = format!("family {f} model {m}");
        if let Some(st) = &self.stepping {
            let _ = write!(s, " stepping {st}");
        }
        Some(s)
    }
}

pub(crate) fn parse_cpuinfo(text: &str) -> CpuInfoFields {
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
