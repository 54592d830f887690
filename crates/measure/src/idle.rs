//! The CPUs' idle configuration, the idle states they enter, and the PM QoS request that keeps
//! them polling: what a figure that waits for another CPU to wake (a cross-CPU switch, round
//! trip or wake-up) mostly measures on a machine whose idle CPUs halt.

use oscost_model::case::ExperimentOutput;
use oscost_sys::pmqos::IdlePoll;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const CPUIDLE: &str = "/sys/devices/system/cpu/cpuidle";

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn state_dirs(cpu: usize) -> Vec<String> {
    (0..)
        .map(|i| format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{i}"))
        .take_while(|d| std::path::Path::new(d).exists())
        .collect()
}

/// Driver, governor, states, the PM QoS value, halt-polling and idle kernel parameters.
pub fn config(idle_poll_held: bool) -> Value {
    let states: Vec<Value> = state_dirs(0)
        .iter()
        .map(|d| {
            json!({
                "name": read(&format!("{d}/name")),
                "desc": read(&format!("{d}/desc")),
                "latency_us": read(&format!("{d}/latency")).and_then(|v| v.parse::<u64>().ok()),
                "disabled": read(&format!("{d}/disable")).map(|v| v == "1"),
            })
        })
        .collect();
    let haltpoll: BTreeMap<String, Value> = std::fs::read_dir("/sys/module/haltpoll/parameters")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            read(&e.path().to_string_lossy()).map(|v| (name, json!(v)))
        })
        .collect();
    let cmdline: Vec<String> = read("/proc/cmdline")
        .unwrap_or_default()
        .split_whitespace()
        .filter(|t| t.starts_with("idle=") || t.contains("haltpoll") || t.contains("cpuidle"))
        .map(str::to_owned)
        .collect();
    json!({
        "driver": read(&format!("{CPUIDLE}/current_driver")),
        "governor": read(&format!("{CPUIDLE}/current_governor"))
            .or_else(|| read(&format!("{CPUIDLE}/current_governor_ro"))),
        "states_cpu0": states,
        "pm_qos_cpu_dma_latency_us": pm_qos(),
        "haltpoll_parameters": haltpoll,
        "kernel_parameters": cmdline,
        "idle_poll_held": idle_poll_held,
    })
}

/// The PM QoS CPU latency target in force, µs (reading needs root; `None` otherwise).
fn pm_qos() -> Option<i32> {
    let b = std::fs::read("/dev/cpu_dma_latency").ok()?;
    Some(i32::from_ne_bytes(b.get(..4)?.try_into().ok()?))
}

/// Entries into each idle state so far, summed over `cpus`, by sanitised state name.
pub fn usage(cpus: &[usize]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for &cpu in cpus {
        for d in state_dirs(cpu) {
            let name = read(&format!("{d}/name"))
                .unwrap_or_default()
                .to_lowercase()
                .replace(|c: char| !c.is_ascii_alphanumeric(), "_");
            let n = read(&format!("{d}/usage"))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            *m.entry(name).or_insert(0) += n;
        }
    }
    m
}

/// Entries per state between two [`usage`] readings.
pub fn delta(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> Vec<(String, u64)> {
    after
        .iter()
        .map(|(k, &a)| {
            (
                k.clone(),
                a.saturating_sub(before.get(k).copied().unwrap_or(0)),
            )
        })
        .collect()
}
/// Takes the PM QoS request if `wanted` (`--idle-poll`); not permitted is a warning recorded in
/// `out`, not a failure. The request holds while the returned value lives.
pub fn hold(wanted: bool, out: &mut ExperimentOutput) -> Option<IdlePoll> {
    if !wanted {
        return None;
    }
    IdlePoll::hold()
        .map_err(|e| {
            out.warnings.push(
                format!("--idle-poll not in force: {e}; CPUs use their default idle states").into(),
            )
        })
        .ok()
}
