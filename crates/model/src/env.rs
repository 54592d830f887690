//! The machine's description recorded with every run, and how busy the machine was during it.
//!
//! Two figures are only comparable if they were measured under the same kernel, mitigations,
//! clock, idle and scheduler configuration (`docs/methodology.md`, "The machine"), so
//! [`Environment`] records all of these. Every value is read, never assumed: anything the
//! process cannot read is `None`, and no default is put in its place.
//!
//! A quiet machine cannot be taken on trust either: [`LoadProbe`] measures the
//! CPU time other tasks used, the steal time and the forks of other programs *during* a run,
//! and [`RunLoad`] says in plain words when that makes the figures suspect.

use crate::clock::ClockInfo;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Description of the machine and of the run, stored with every result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// Version of oscost that produced the result.
    pub oscost_version: String,
    /// Git commit of oscost, filled in by the CLI when known.
    pub git_commit: Option<String>,
    /// Version of the Rust compiler that built oscost, filled in by the CLI when its build
    /// script recorded it.
    pub rustc_version: Option<String>,
    /// The command line oscost was started with (the CLI may replace it).
    pub command_line: Vec<String>,
    /// Nice value the CLI was asked to run the measured work at, if any (filled by the CLI).
    pub nice: Option<i32>,

    /// The machine's host name (`/proc/sys/kernel/hostname`), which tells the runs of a fleet
    /// apart in one history; absent when it cannot be read, and in documents written before
    /// it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,

    /// Kernel release (`/proc/sys/kernel/osrelease`, else `uname -r`); empty if neither can
    /// be read.
    pub kernel_release: String,
    /// Kernel build string (`uname -v`), e.g. `#1 SMP PREEMPT_DYNAMIC ...`.
    pub kernel_version: Option<String>,
    /// `/proc/version`: release, compiler and build string in one line.
    pub proc_version: Option<String>,
    /// The kernel command line (`/proc/cmdline`).
    pub kernel_cmdline: Option<String>,
    /// Boot parameters that change what oscost measures (mitigations, idle, isolation,
    /// preemption, clock source...), parsed from the command line; flags without a value map
    /// to an empty string.
    pub boot_params: BTreeMap<String, String>,
    /// Architecture oscost was built for (`x86_64`, `aarch64`, ...).
    pub arch: String,
    /// Hardware name reported by the kernel (`uname -m`).
    pub machine: Option<String>,
    /// glibc version the process runs with; `None` with another C library.
    pub glibc_version: Option<String>,
    /// Kernel build configuration, when the kernel's config can be read.
    pub kernel_config: Option<KernelConfig>,

    /// CPU model name (`model name` in `/proc/cpuinfo`; implementer and part on Arm).
    pub cpu_model: Option<String>,
    /// CPU vendor id (`vendor_id` in `/proc/cpuinfo`), e.g. `GenuineIntel`.
    pub cpu_vendor: Option<String>,
    /// CPU family, model and stepping as `/proc/cpuinfo` states them.
    pub cpu_signature: Option<String>,
    /// Microcode revision of CPU 0, which decides some mitigations.
    pub microcode: Option<String>,
    /// Online logical CPUs (`/sys/devices/system/cpu/online`).
    pub cpus_online: Option<Vec<usize>>,
    /// CPUs the measured work was pinned to (passed in by the caller).
    pub cpus_used: Vec<usize>,
    /// Simultaneous multithreading state.
    pub smt: Smt,
    /// Timer- and TLB-related CPU flags; `None` when `/proc/cpuinfo` has no `flags` line
    /// (for example on Arm).
    pub cpu_flags: Option<CpuFlags>,
    /// The clock every figure was timed with.
    pub clock: ClockInfo,
    /// The kernel's clock source (`tsc`, `kvm-clock`, `arch_sys_counter`...).
    pub clocksource_current: Option<String>,
    /// Clock sources the kernel could switch to.
    pub clocksource_available: Option<Vec<String>>,

    /// Whether and under which hypervisor the machine runs.
    pub virtualisation: Virtualisation,
    /// Speculative-execution mitigations and privilege.
    pub security: Security,
    /// Frequency scaling, idle states and PM QoS.
    pub power: Power,
    /// Tick rate, preemption and scheduler settings.
    pub scheduler: Scheduler,
    /// Transparent hugepage mode (the bracketed choice in `.../transparent_hugepage/enabled`).
    pub thp_enabled: Option<String>,
    /// Transparent hugepage defrag mode.
    pub thp_defrag: Option<String>,

    /// CPUs this process was allowed to run on when the environment was collected.
    pub affinity: Option<Vec<usize>>,
    /// Nice value of the collecting thread when the environment was collected.
    pub process_nice: Option<i32>,
    /// How busy the machine was during the run; filled in by the caller from a [`LoadProbe`].
    pub load: Option<RunLoad>,
    /// The operating system when it is not Linux: written by oscost's Windows agent. `None` in
    /// oscost's own runs, whose system is the Linux kernel of `kernel_release`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<OsInfo>,
    /// The fleet tool that started the run and the name it gives this host, when one did
    /// (`--host-name`, `--runner`): its connection and processes were on the machine during
    /// the run, so they are part of the machine's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetRun>,
    /// How the run sampled (`--quick`, `--samples`, `--min-runs`, `--warmup`, `--budget`),
    /// so that a comparison can say two runs sampled differently; absent in documents written
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Sampling>,
}

/// The sampling rules a run used (filled in by the CLI).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sampling {
    /// `--quick`: the experiments' smaller sizes.
    pub quick: bool,
    /// Samples per case asked for (`--samples`).
    pub samples: u64,
    /// Fewest samples per case before the time budget may stop sampling (`--min-runs`).
    pub min_runs: u64,
    /// Minimum warm-up per case, ns (`--warmup`).
    pub warmup_ns: u64,
    /// Minimum duration of one sample, ns.
    pub min_sample_ns: u64,
    /// Time budget per case, ns (`--budget`).
    pub budget_ns: u64,
}

impl Sampling {
    /// One line: `81 samples (at least 5), warm-up 40 ms, budget 2000 ms, 4 ms a sample`.
    pub fn describe(&self) -> String {
        let ms = |ns: u64| {
            let v = ns as f64 / 1e6;
            if v >= 1.0 {
                format!("{v:.0} ms")
            } else {
                format!("{v:.3} ms")
            }
        };
        format!(
            "{}{} samples (at least {}), warm-up {}, budget {}, {} a sample",
            if self.quick { "--quick, " } else { "" },
            self.samples,
            self.min_runs,
            ms(self.warmup_ns),
            ms(self.budget_ns),
            ms(self.min_sample_ns)
        )
    }
}

/// A system other than Linux, as it describes itself (oscost's Windows agent fills it in).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OsInfo {
    /// The system's family: `windows`.
    pub family: String,
    /// Major and minor version as the system reports them (`RtlGetVersion`), e.g. `10.0`.
    pub version: String,
    /// Build number, e.g. `19045`.
    pub build: Option<u32>,
    /// Frequency of the system's performance counter (`QueryPerformanceFrequency`), Hz.
    pub counter_hz: Option<f64>,
    /// Wine's version when the agent ran under Wine: the figures are then Wine's on its host
    /// system, not Windows'. `None` on Windows itself.
    pub wine: Option<String>,
    /// The host system under Wine (`wine_get_host_version`), e.g. `Linux 6.1.0`.
    pub wine_host: Option<String>,
}

impl OsInfo {
    /// One line naming the system, and Wine when it ran under Wine.
    pub fn describe(&self) -> String {
        let name = match self.family.as_str() {
            "windows" => "Windows",
            other => other,
        };
        let build = self
            .build
            .map(|b| format!(" build {b}"))
            .unwrap_or_default();
        match &self.wine {
            Some(w) => format!(
                "{name} {}{build} as Wine {w} reports it, under Wine on {} (Wine's figures, not \
                 Windows')",
                self.version,
                self.wine_host.as_deref().unwrap_or("an unknown host")
            ),
            None => format!("{name} {}{build}", self.version),
        }
    }
}

/// How a fleet tool (Ansible, Slurm, Kubernetes) started a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetRun {
    /// The name the fleet knows this host by (an inventory name, a node name); runs are
    /// grouped by it in `compare --group-by host`.
    pub host_name: Option<String>,
    /// What started the run, as the tool described itself (`ansible-core 2.14.18, command
    /// module over ssh`).
    pub runner: Option<String>,
}

/// What the kernel's build configuration says, from `/boot/config-<release>` or
/// `/proc/config.gz`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelConfig {
    /// Where the configuration was read.
    pub source: String,
    /// `CONFIG_HZ`.
    pub hz: Option<u32>,
    /// Preemption model the kernel was built with (`none`, `voluntary`, `full`, `lazy`, plus
    /// `rt` for PREEMPT_RT); with PREEMPT_DYNAMIC this is only the boot default.
    pub preempt: Option<String>,
    /// `CONFIG_PREEMPT_DYNAMIC`: the model can be chosen at boot (`preempt=`) or run time.
    pub preempt_dynamic: Option<bool>,
    /// Tick mode: `full` (NO_HZ_FULL), `idle` (NO_HZ_IDLE) or `periodic` (HZ_PERIODIC).
    pub no_hz: Option<String>,
    /// `CONFIG_HIGH_RES_TIMERS`.
    pub high_res_timers: Option<bool>,
}

/// Simultaneous multithreading (hyper-threading) state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Smt {
    /// `/sys/devices/system/cpu/smt/active`.
    pub active: Option<bool>,
    /// `/sys/devices/system/cpu/smt/control` (`on`, `off`, `forceoff`, `notsupported`...).
    pub control: Option<String>,
    /// Hardware threads sharing CPU 0's core (`thread_siblings_list`).
    pub cpu0_siblings: Option<Vec<usize>>,
}

/// CPU flags that decide whether the TSC can be trusted and what a kernel entry costs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuFlags {
    /// TSC ticks at a constant rate whatever the core frequency.
    pub constant_tsc: bool,
    /// TSC keeps ticking in deep idle states.
    pub nonstop_tsc: bool,
    /// The kernel skips TSC watchdog checks (set by some hypervisors).
    pub tsc_reliable: bool,
    /// TSC frequency is known from CPUID or the hypervisor, not calibrated.
    pub tsc_known_freq: bool,
    /// `rdtscp` exists.
    pub rdtscp: bool,
    /// Process-context identifiers: page-table switches need not flush the TLB.
    pub pcid: bool,
    /// `invpcid` exists (cheaper PTI TLB management).
    pub invpcid: bool,
}

/// Hypervisor evidence; each source is recorded separately because each can be masked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Virtualisation {
    /// The `hypervisor` CPU flag.
    pub hypervisor_flag: Option<bool>,
    /// CPUID leaf 0x4000_0000 vendor signature (x86-64 only), e.g. `KVMKVMKVM`.
    pub cpuid_signature: Option<String>,
    /// `/sys/hypervisor/type` (Xen and some others).
    pub sys_hypervisor_type: Option<String>,
    /// `/sys/class/dmi/id/sys_vendor`.
    pub dmi_sys_vendor: Option<String>,
    /// `/sys/class/dmi/id/product_name`.
    pub dmi_product_name: Option<String>,
}

/// Mitigations and privilege: both change what a system call or a switch costs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Security {
    /// Every file of `/sys/devices/system/cpu/vulnerabilities`, name → text, sorted by name.
    pub vulnerabilities: Option<BTreeMap<String, String>>,
    /// `mitigations=` boot parameter.
    pub cmdline_mitigations: Option<String>,
    /// `pti=` boot parameter (`nopti` is recorded as `off`).
    pub cmdline_pti: Option<String>,
    /// `/proc/sys/kernel/perf_event_paranoid`: whether kernel-side counting needs privilege.
    pub perf_event_paranoid: Option<i32>,
    /// Real user id (0 = root; 4294967295 where the system has no numeric ids, as on Windows).
    pub uid: u32,
    /// Effective user id (0 = root; 4294967295 where the system has none).
    pub euid: u32,
    /// seccomp filters oscost ran under (`Seccomp_filters` in `/proc/self/status`, 0 when
    /// `Seccomp` is 0): a container's or a sandbox's, paid on every system call of every
    /// figure. Absent where the kernel does not say, and from older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seccomp_filters: Option<u64>,
}

/// One idle state of CPU 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleState {
    /// Directory name, e.g. `state1`.
    pub state: String,
    /// State name, e.g. `POLL`, `C1`, `haltpoll idle`.
    pub name: Option<String>,
    /// Exit latency the driver states, µs.
    pub latency_us: Option<u64>,
    /// Target residency, µs.
    pub residency_us: Option<u64>,
    /// Whether the state is disabled.
    pub disabled: Option<bool>,
}

/// Frequency scaling, idle and PM QoS: they decide how fast a sleeping CPU wakes up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Power {
    /// cpufreq driver of CPU 0.
    pub cpufreq_driver: Option<String>,
    /// cpufreq governor of CPU 0.
    pub cpufreq_governor: Option<String>,
    /// Current frequency of CPU 0 as cpufreq states it, kHz.
    pub cpufreq_cur_khz: Option<u64>,
    /// Whether turbo/boost is enabled.
    pub boost: Option<bool>,
    /// Which file `boost` came from.
    pub boost_source: Option<String>,
    /// cpuidle driver (`intel_idle`, `acpi_idle`, `haltpoll`...).
    pub cpuidle_driver: Option<String>,
    /// cpuidle governor (`menu`, `teo`, `haltpoll`...).
    pub cpuidle_governor: Option<String>,
    /// CPU 0's idle states, in state order.
    pub idle_states: Option<Vec<IdleState>>,
    /// PM QoS CPU latency limit (`/dev/cpu_dma_latency`), µs; 2 000 000 000 means none.
    /// `None` when the device cannot be opened (it needs root).
    pub cpu_dma_latency_us: Option<i32>,
}

/// Timer tick, preemption and scheduler settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scheduler {
    /// The timer tick rate and how it was found.
    pub tick: Option<Tick>,
    /// Current preemption model from `/sys/kernel/debug/sched/preempt` (usually not readable).
    pub preempt_model: Option<String>,
    /// `preempt=` boot parameter.
    pub preempt_boot_param: Option<String>,
    /// `/proc/sys/kernel/sched_rr_timeslice_ms`.
    pub sched_rr_timeslice_ms: Option<u64>,
    /// `/proc/sys/kernel/sched_rt_period_us`.
    pub sched_rt_period_us: Option<u64>,
    /// `/proc/sys/kernel/sched_rt_runtime_us`; -1 means real-time tasks are not throttled.
    pub sched_rt_runtime_us: Option<i64>,
    /// `/proc/sys/kernel/sched_autogroup_enabled`.
    pub sched_autogroup_enabled: Option<bool>,
    /// `/proc/self/autogroup`, e.g. `/autogroup-3 nice 0`.
    pub autogroup: Option<String>,
    /// `/sys/devices/system/cpu/isolated` (empty list: none).
    pub isolated_cpus: Option<Vec<usize>>,
    /// `/sys/devices/system/cpu/nohz_full` (absent without NO_HZ_FULL).
    pub nohz_full_cpus: Option<Vec<usize>>,
}

/// The kernel's timer tick rate (CONFIG_HZ), which cannot change at run time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tick {
    /// Ticks per second.
    pub hz: u32,
    /// One tick (jiffy), ns.
    pub tick_ns: u64,
    /// How the rate was found.
    pub method: String,
}

/// How busy the machine was during a run. All shares are of *all* online CPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunLoad {
    /// Time between the two probes, s.
    pub wall_s: f64,
    /// Online CPUs the shares are relative to.
    pub cpus_online: usize,
    /// Steal time over all CPUs during the run, s; `None` if `/proc/stat` could not be read.
    pub steal_s: Option<f64>,
    /// Steal time per CPU, s, for CPUs that had any.
    pub steal_by_cpu_s: BTreeMap<usize, f64>,
    /// 1-minute load average at the start.
    pub loadavg_start: Option<f64>,
    /// 1-minute load average at the end (includes this process's own load).
    pub loadavg_end: Option<f64>,
    /// CPU time used by tasks that are neither this process nor its descendants, s.
    pub foreign_cpu_s: f64,
    /// `foreign_cpu_s / (wall_s × CPUs judged)`, clamped to [0, 1]; the CPUs judged are the
    /// CPUs the run used (`environment.cpus_used`) where the caller said so, else all online.
    pub foreign_cpu_share: f64,
    /// Foreign tasks whose CPU time was read at the end (0 means /proc could not be read).
    pub foreign_tasks_seen: usize,
    /// The foreign processes that used most CPU (more than 1 % of one CPU), busiest first.
    pub busiest_foreign: Vec<ForeignProcess>,
    /// Tasks created on the whole machine during the run (`processes` in `/proc/stat`,
    /// which counts threads too).
    pub forks: Option<u64>,
    /// Tasks the caller says it created itself.
    pub own_forks: u64,
    /// `forks − own_forks`: tasks started by other programs.
    pub foreign_forks: Option<u64>,
    /// Time the two probes themselves took, s.
    pub probe_s: f64,
    /// Foreign CPU share ≤ 2 % (by tasks' run times and by the CPUs' busy time, which also sees
    /// tasks that exited), steal at most 2 % of the online CPUs' time, no other oscost running,
    /// and all of it could be measured.
    pub quiet: bool,
    /// One plain sentence per problem found.
    pub warnings: Vec<String>,
}

/// The share of the CPUs' time the host took (steal) while an experiment ran above which a
/// check it failed is not laid at the OS's door: a quiet guest's steal is 0.
pub const HELD_STEAL: f64 = 0.05;
/// The same for other programs' share (a quiet machine's is 1–4 %, its own tools').
pub const HELD_FOREIGN: f64 = 0.10;

impl RunLoad {
    /// Who else held the CPUs during the run, where enough to fail a check that is not the
    /// OS's doing: the host (steal time) or other programs. On a 2-vCPU guest whose host took
    /// 22–29 % of the CPUs for a minute, cross-CPU round trips read 660 µs with 1.2 switches
    /// each and timers fired late enough to lose events; the same suite a minute later passed
    /// every check.
    pub fn held(&self) -> Option<Held> {
        let cpu_s = self.wall_s * self.cpus_online as f64;
        let host = if cpu_s > 0.0 {
            self.steal_s.unwrap_or(0.0) / cpu_s
        } else {
            0.0
        };
        let programs = self.foreign_cpu_share;
        (host >= HELD_STEAL || programs >= HELD_FOREIGN).then_some(Held { host, programs })
    }
}

/// How much of the CPUs' time others took while an experiment ran: the host (steal time)
/// and other programs, each a share.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Held {
    /// The host's share (steal).
    pub host: f64,
    /// Other programs' share.
    pub programs: f64,
}

impl Held {
    /// Who held the CPUs, in words, over one or more experiments: each share as a range.
    pub fn words(all: &[Held]) -> String {
        let range = |v: Vec<f64>| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min) * 100.0;
            let hi = v.iter().copied().fold(0.0, f64::max) * 100.0;
            if (hi - lo).abs() < 0.5 {
                format!("{hi:.0} %")
            } else {
                format!("{lo:.0}–{hi:.0} %")
            }
        };
        let host: Vec<f64> = all
            .iter()
            .map(|h| h.host)
            .filter(|&x| x >= HELD_STEAL)
            .collect();
        let programs: Vec<f64> = all
            .iter()
            .map(|h| h.programs)
            .filter(|&x| x >= HELD_FOREIGN)
            .collect();
        let mut who = Vec::new();
        if !host.is_empty() {
            who.push(format!("the host took {} of the CPUs (steal)", range(host)));
        }
        if !programs.is_empty() {
            who.push(format!(
                "other programs took {} of the CPUs",
                range(programs)
            ));
        }
        who.join(" and ")
    }
}

/// A foreign process's CPU use during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForeignProcess {
    /// Process id.
    pub pid: u32,
    /// Command name (`comm`).
    pub comm: String,
    /// CPU time during the run, s.
    pub cpu_s: f64,
    /// `cpu_s / wall_s`: share of one CPU, as `top` shows it.
    pub share_of_one_cpu: f64,
}

impl Environment {
    /// The name of the host the run was made on: the fleet's name for it, else its host name.
    pub fn host(&self) -> Option<&str> {
        self.fleet
            .as_ref()
            .and_then(|f| f.host_name.as_deref())
            .or(self.hostname.as_deref())
    }

    /// Whether the run was made as root (effective uid 0).
    pub fn is_root(&self) -> bool {
        self.security.euid == 0
    }

    /// The measured system in a few words: `Linux 6.1.0` or, from the Windows agent,
    /// `Windows 10.0 build 19045` (and whether it ran under Wine).
    pub fn system(&self) -> String {
        match &self.os {
            Some(os) => os.describe(),
            None => format!("Linux {}", self.kernel_release),
        }
    }

    /// Whether the figures came from Wine, not from the system they name.
    pub fn under_wine(&self) -> bool {
        self.os.as_ref().is_some_and(|o| o.wine.is_some())
    }
}
