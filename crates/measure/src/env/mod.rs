//! The machine's description recorded with every run: collected here, parsed by [`parse`], and
//! how busy the machine was during a run measured by [`load`].
//!
//! Two figures are only comparable if they were measured under the same kernel, mitigations,
//! clock, idle and scheduler configuration, so the environment records all of these. Every
//! value is read, never assumed: anything the process cannot read is `None`, and no default is
//! put in its place.

pub mod load;
pub mod parse;

pub use load::LoadProbe;

use oscost_model::env::*;
use oscost_model::ClockInfo;
use parse::*;
use std::collections::BTreeMap;
use std::io::Read as _;

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
        command_line: std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        nice: None,
        hostname: read_trim("/proc/sys/kernel/hostname").filter(|h| !h.is_empty()),
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
            seccomp_filters: seccomp_filters(),
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
        os: None,
        fleet: None,
        sampling: None,
    }
}

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

/// The seccomp filters this process runs under: 0 outside seccomp, the kernel's count in
/// filter mode, `None` where it does not say.
fn seccomp_filters() -> Option<u64> {
    let st = oscost_sys::seccomp::read_status();
    match st.mode? {
        0 => Some(0),
        _ => st.filters,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oscost_sys::clock::Clock;

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
}
