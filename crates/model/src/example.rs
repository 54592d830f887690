//! A fictional machine, for tests and for oscost's scripted (fake-clock) mode.
//!
//! Every value is made up and says so, so a document built from it can never be mistaken for a
//! measurement, and a snapshot built from it never carries a real machine's details.

use crate::clock::{ClockInfo, CounterKind};
use crate::env::*;
use std::collections::BTreeMap;

/// A clock of exactly 1 GHz, so one tick is one nanosecond.
pub fn clock() -> ClockInfo {
    ClockInfo {
        counter: CounterKind::Tsc,
        tick_unit: "ref-cycles".into(),
        frequency_hz: 1e9,
        frequency_source: "scripted: a fictional 1 GHz counter".into(),
        calibration_spread_ppm: 0.0,
        kernel_stated_hz: None,
        invariant: true,
        fallback_reason: None,
    }
}

/// A fictional two-CPU machine with every section filled in.
pub fn environment() -> Environment {
    let s = |v: &str| Some(v.to_owned());
    Environment {
        oscost_version: "0.0.0-example".into(),
        git_commit: None,
        rustc_version: None,
        command_line: vec!["oscost".into(), "--example".into()],
        nice: None,
        // None, so that the example documents and their snapshots stay as they were.
        hostname: None,
        kernel_release: "0.0.0-example".into(),
        kernel_version: s("#1 SMP PREEMPT_DYNAMIC (example)"),
        proc_version: s("Linux version 0.0.0-example (example)"),
        kernel_cmdline: s("quiet mitigations=auto"),
        boot_params: BTreeMap::from([("mitigations".to_owned(), "auto".to_owned())]),
        arch: "x86_64".into(),
        machine: s("x86_64"),
        glibc_version: s("2.99"),
        kernel_config: Some(KernelConfig {
            source: "example".into(),
            hz: Some(250),
            preempt: s("dynamic"),
            preempt_dynamic: Some(true),
            no_hz: s("idle"),
            high_res_timers: Some(true),
        }),
        cpu_model: s("Example CPU @ 1.00GHz"),
        cpu_vendor: s("ExampleVendor"),
        cpu_signature: s("family 1 model 2 stepping 3"),
        microcode: s("0x1"),
        cpus_online: Some(vec![0, 1]),
        cpus_used: vec![0, 1],
        smt: Smt {
            active: Some(false),
            control: s("notsupported"),
            cpu0_siblings: Some(vec![0]),
        },
        cpu_flags: Some(CpuFlags {
            constant_tsc: true,
            nonstop_tsc: true,
            tsc_reliable: true,
            tsc_known_freq: true,
            rdtscp: true,
            pcid: true,
            invpcid: true,
        }),
        clock: clock(),
        clocksource_current: s("tsc"),
        clocksource_available: Some(vec!["tsc".into(), "hpet".into()]),
        virtualisation: Virtualisation {
            hypervisor_flag: Some(false),
            cpuid_signature: None,
            sys_hypervisor_type: None,
            dmi_sys_vendor: s("Example Inc."),
            dmi_product_name: s("Example Machine"),
        },
        security: Security {
            vulnerabilities: Some(BTreeMap::from([(
                "spectre_v2".to_owned(),
                "Mitigation: example".to_owned(),
            )])),
            cmdline_mitigations: s("auto"),
            cmdline_pti: None,
            perf_event_paranoid: Some(2),
            uid: 1000,
            euid: 1000,
            seccomp_filters: None,
        },
        power: Power {
            cpufreq_driver: None,
            cpufreq_governor: None,
            cpufreq_cur_khz: None,
            boost: None,
            boost_source: None,
            cpuidle_driver: s("example_idle"),
            cpuidle_governor: s("menu"),
            idle_states: Some(vec![IdleState {
                state: "state0".into(),
                name: s("POLL"),
                latency_us: Some(0),
                residency_us: Some(0),
                disabled: Some(false),
            }]),
            cpu_dma_latency_us: Some(2_000_000_000),
        },
        scheduler: Scheduler {
            tick: Some(Tick {
                hz: 250,
                tick_ns: 4_000_000,
                method: "example".into(),
            }),
            preempt_model: s("voluntary"),
            preempt_boot_param: None,
            sched_rr_timeslice_ms: Some(100),
            sched_rt_period_us: Some(1_000_000),
            sched_rt_runtime_us: Some(950_000),
            sched_autogroup_enabled: Some(true),
            autogroup: s("/autogroup-1 nice 0"),
            isolated_cpus: Some(vec![]),
            nohz_full_cpus: Some(vec![]),
        },
        thp_enabled: s("madvise"),
        thp_defrag: s("madvise"),
        affinity: Some(vec![0, 1]),
        process_nice: Some(0),
        load: None,
        os: None,
        fleet: None,
        sampling: None,
    }
}

/// A quiet run of `wall_s` seconds on the fictional machine.
pub fn quiet_load(wall_s: f64) -> RunLoad {
    RunLoad {
        wall_s,
        cpus_online: 2,
        steal_s: Some(0.0),
        steal_by_cpu_s: BTreeMap::new(),
        loadavg_start: Some(0.1),
        loadavg_end: Some(0.2),
        foreign_cpu_s: 0.0,
        foreign_cpu_share: 0.0,
        foreign_tasks_seen: 100,
        busiest_foreign: Vec::new(),
        forks: Some(0),
        own_forks: 0,
        foreign_forks: Some(0),
        probe_s: 0.0,
        quiet: true,
        warnings: Vec::new(),
    }
}

/// Samples of one operation each, in ns on [`clock`] (a tick is a nanosecond), with no loop
/// overhead: a case's timings in a test.
pub fn samples(per_op_ns: &[f64]) -> crate::case::Samples {
    crate::case::Samples {
        per_op_ns: per_op_ns.to_vec(),
        per_op_ticks: per_op_ns.to_vec(),
        iterations_per_sample: 1,
        loop_overhead_ns: 0.0,
    }
}
