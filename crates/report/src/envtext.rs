//! The machine description as readable, aligned text (`oscost env`).
//!
//! Everything is printed in a fixed order and maps are already sorted, so the same
//! environment always gives the same text and two machines can be compared with `diff`.
//! Values that could not be read print as `n/a`: a blank would look like "none".

use oscost_model::cpulist as cpuset;
use oscost_model::CounterKind;
use oscost_model::{Environment, RunLoad};
use std::fmt::Display;

/// Column where values start.
const LABEL_WIDTH: usize = 16;
/// Long values are wrapped at this width where no terminal sets one (a file, a pipe, the
/// report), so the same machine always gives the same text.
const LINE_WIDTH: usize = 100;
/// The narrowest width a terminal can narrow the text to: the label column and a few words.
const MIN_WIDTH: usize = 40;
const NA: &str = "n/a";

struct Out {
    text: String,
    width: usize,
}

impl Out {
    fn section(&mut self, title: &str) {
        self.text.push_str(title);
        self.text.push('\n');
    }

    /// One `label  value` row; a value too long for the line is wrapped at spaces and
    /// continued under the value column.
    fn row(&mut self, label: &str, value: impl AsRef<str>) {
        let indent = 2 + LABEL_WIDTH + 1;
        let mut line = format!("  {label:<LABEL_WIDTH$} ");
        let mut words = 0;
        for word in value.as_ref().split(' ') {
            if words > 0 && line.chars().count() + 1 + word.chars().count() > self.width {
                self.text.push_str(line.trim_end());
                self.text.push('\n');
                line = " ".repeat(indent);
                words = 0;
            }
            if words > 0 {
                line.push(' ');
            }
            line.push_str(word);
            words += 1;
        }
        self.text.push_str(line.trim_end());
        self.text.push('\n');
    }
}

fn opt<T: Display>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| NA.to_owned(), |x| x.to_string())
}

fn yes_no(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => NA,
    }
}

fn cpus(v: &Option<Vec<usize>>) -> String {
    match v {
        None => NA.to_owned(),
        Some(l) if l.is_empty() => "none".to_owned(),
        Some(l) => cpuset::format(l),
    }
}

/// Renders `env` as a multi-line, aligned, human-readable description.
pub fn render_environment(env: &Environment) -> String {
    render_environment_to(env, None)
}

/// [`render_environment`] with long values wrapped to a terminal's `width` (100 without one).
pub fn render_environment_to(env: &Environment, width: Option<u16>) -> String {
    let mut o = Out {
        text: String::new(),
        width: width.map_or(LINE_WIDTH, |w| usize::from(w).max(MIN_WIDTH)),
    };
    system(&mut o, env);
    cpu_and_clock(&mut o, env);
    virtualisation(&mut o, env);
    security(&mut o, env);
    power(&mut o, env);
    scheduler(&mut o, env);
    this_run(&mut o, env);
    if let Some(load) = &env.load {
        run_load(&mut o, load);
    }
    o.text
}

fn system(o: &mut Out, env: &Environment) {
    o.section("System");
    if let Some(host) = &env.hostname {
        o.row("host", host.clone());
    }
    if let Some(os) = &env.os {
        o.row("system", os.describe());
        if let Some(hz) = os.counter_hz {
            o.row("performance counter", format!("{:.3} MHz", hz / 1e6));
        }
    }
    let release = if env.kernel_release.is_empty() {
        NA
    } else {
        &env.kernel_release
    };
    o.row(
        "kernel",
        format!("{release} {}", env.kernel_version.as_deref().unwrap_or("")),
    );
    o.row(
        "build",
        format!(
            "{} (kernel reports {}), glibc {}",
            env.arch,
            opt(&env.machine),
            opt(&env.glibc_version)
        ),
    );
    let config = match &env.kernel_config {
        None => NA.to_owned(),
        Some(c) => format!(
            "{}: CONFIG_HZ={}, preempt {}{}, NO_HZ {}, high-res timers {}",
            c.source,
            opt(&c.hz),
            opt(&c.preempt),
            if c.preempt_dynamic == Some(true) {
                " (dynamic)"
            } else {
                ""
            },
            opt(&c.no_hz),
            yes_no(c.high_res_timers)
        ),
    };
    o.row("kernel config", config);
    let params = if env.kernel_cmdline.is_none() {
        NA.to_owned()
    } else if env.boot_params.is_empty() {
        "none of note".to_owned()
    } else {
        env.boot_params
            .iter()
            .map(|(k, v)| {
                if v.is_empty() {
                    k.clone()
                } else {
                    format!("{k}={v}")
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    o.row("boot params", params);
    o.row(
        "huge pages",
        format!(
            "THP {}, defrag {}",
            opt(&env.thp_enabled),
            opt(&env.thp_defrag)
        ),
    );
}

fn cpu_and_clock(o: &mut Out, env: &Environment) {
    o.section("CPU & clock");
    let details: Vec<String> = [
        env.cpu_vendor.clone(),
        env.cpu_signature.clone(),
        env.microcode.as_ref().map(|m| format!("microcode {m}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let model = if details.is_empty() {
        opt(&env.cpu_model)
    } else {
        format!("{} ({})", opt(&env.cpu_model), details.join(", "))
    };
    o.row("model", model);
    let online = match &env.cpus_online {
        Some(l) => format!("online {} ({})", cpuset::format(l), l.len()),
        None => format!("online {NA}"),
    };
    let smt = match env.smt.active {
        Some(true) => "active",
        Some(false) => "inactive",
        None => NA,
    };
    o.row(
        "CPUs",
        format!(
            "{online}; SMT {smt} (control {}, CPU 0 siblings {})",
            opt(&env.smt.control),
            cpus(&env.smt.cpu0_siblings)
        ),
    );
    let flags = match &env.cpu_flags {
        None => NA.to_owned(),
        Some(f) => {
            let all = [
                ("constant_tsc", f.constant_tsc),
                ("nonstop_tsc", f.nonstop_tsc),
                ("tsc_reliable", f.tsc_reliable),
                ("tsc_known_freq", f.tsc_known_freq),
                ("rdtscp", f.rdtscp),
                ("pcid", f.pcid),
                ("invpcid", f.invpcid),
            ];
            let pick = |want: bool| {
                all.iter()
                    .filter(|(_, v)| *v == want)
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let (present, absent) = (pick(true), pick(false));
            match (present.is_empty(), absent.is_empty()) {
                (false, false) => format!("{present}; absent: {absent}"),
                (false, true) => present,
                (true, _) => format!("absent: {absent}"),
            }
        }
    };
    o.row("CPU flags", flags);
    let c = &env.clock;
    let counter = match c.counter {
        CounterKind::Tsc => "TSC",
        CounterKind::Cntvct => "CNTVCT_EL0",
        CounterKind::MonotonicRaw => "CLOCK_MONOTONIC_RAW",
    };
    let stated = c
        .kernel_stated_hz
        .map_or_else(|| NA.to_owned(), |hz| format!("{:.3} MHz", hz / 1e6));
    o.row(
        "counter",
        format!(
            "{counter} at {:.3} MHz ({}, spread {:.1} ppm); kernel states {stated}; invariant {}",
            c.frequency_hz / 1e6,
            c.frequency_source,
            c.calibration_spread_ppm,
            yes_no(Some(c.invariant))
        ),
    );
    if let Some(why) = &c.fallback_reason {
        o.row("counter note", why);
    }
    let available = env
        .clocksource_available
        .as_ref()
        .map_or_else(|| NA.to_owned(), |v| v.join(" "));
    o.row(
        "clock source",
        format!("{} (available: {available})", opt(&env.clocksource_current)),
    );
}

fn virtualisation(o: &mut Out, env: &Environment) {
    let v = &env.virtualisation;
    o.section("Virtualisation");
    o.row(
        "hypervisor",
        format!(
            "cpu flag {}, CPUID signature {}",
            yes_no(v.hypervisor_flag),
            opt(&v.cpuid_signature)
        ),
    );
    o.row(
        "firmware",
        format!(
            "/sys/hypervisor/type {}, DMI vendor {}, product {}",
            opt(&v.sys_hypervisor_type),
            opt(&v.dmi_sys_vendor),
            opt(&v.dmi_product_name)
        ),
    );
}

fn security(o: &mut Out, env: &Environment) {
    let s = &env.security;
    o.section("Security");
    let who = if s.euid == 0 { "root" } else { "user" };
    o.row(
        "running as",
        format!(
            "{who} (uid {}, euid {}); perf_event_paranoid {}",
            s.uid,
            s.euid,
            opt(&s.perf_event_paranoid)
        ),
    );
    if let Some(n) = s.seccomp_filters {
        o.row(
            "seccomp",
            if n == 0 {
                "no filter".to_owned()
            } else {
                format!("{n} filter(s): every system call of every figure passes them")
            },
        );
    }
    let unset = |v: &Option<String>| v.clone().unwrap_or_else(|| "(not set)".to_owned());
    o.row(
        "boot params",
        format!(
            "mitigations={} pti={}",
            unset(&s.cmdline_mitigations),
            unset(&s.cmdline_pti)
        ),
    );
    match &s.vulnerabilities {
        None => o.row("vulnerabilities", NA),
        Some(map) if map.is_empty() => o.row("vulnerabilities", "none listed"),
        Some(map) => {
            // "Not affected" is the common answer; grouping it keeps the rest visible.
            let unaffected: Vec<&str> = map
                .iter()
                .filter(|(_, t)| t.as_str() == "Not affected")
                .map(|(n, _)| n.as_str())
                .collect();
            if !unaffected.is_empty() {
                o.row(
                    "not affected",
                    format!("{} ({})", unaffected.join(", "), unaffected.len()),
                );
            }
            // Names are too long to be labels; they lead the value instead, under one label.
            let mut label = "affected";
            for (name, text) in map.iter().filter(|(_, t)| t.as_str() != "Not affected") {
                o.row(label, format!("{name}: {text}"));
                label = "";
            }
        }
    }
}

fn power(o: &mut Out, env: &Environment) {
    let p = &env.power;
    o.section("Power & idle");
    if p.cpufreq_driver.is_none() && p.cpufreq_governor.is_none() && p.cpufreq_cur_khz.is_none() {
        o.row(
            "cpufreq",
            format!("{NA} (no cpufreq driver); boost {}", boost(env)),
        );
    } else {
        o.row(
            "cpufreq",
            format!(
                "driver {}, governor {}, CPU 0 at {} kHz; boost {}",
                opt(&p.cpufreq_driver),
                opt(&p.cpufreq_governor),
                opt(&p.cpufreq_cur_khz),
                boost(env)
            ),
        );
    }
    o.row(
        "cpuidle",
        format!(
            "driver {}, governor {}",
            opt(&p.cpuidle_driver),
            opt(&p.cpuidle_governor)
        ),
    );
    let states = match &p.idle_states {
        None => NA.to_owned(),
        Some(v) if v.is_empty() => "none".to_owned(),
        Some(v) => v
            .iter()
            .map(|s| {
                let mut t = format!(
                    "{} (exit {} µs)",
                    s.name.as_deref().unwrap_or(&s.state),
                    opt(&s.latency_us)
                );
                if s.disabled == Some(true) {
                    t.push_str(" disabled");
                }
                t
            })
            .collect::<Vec<_>>()
            .join(", "),
    };
    o.row("CPU 0 states", states);
    let qos = match p.cpu_dma_latency_us {
        None => format!("{NA} (/dev/cpu_dma_latency needs root)"),
        Some(v) if v >= 2_000_000_000 => format!("no limit ({v} µs)"),
        Some(v) => format!("{v} µs: CPUs are kept out of deeper idle states"),
    };
    o.row("PM QoS latency", qos);
}

fn boost(env: &Environment) -> String {
    match (env.power.boost, &env.power.boost_source) {
        (Some(b), Some(src)) => format!("{} ({src})", if b { "on" } else { "off" }),
        (Some(b), None) => (if b { "on" } else { "off" }).to_owned(),
        (None, _) => NA.to_owned(),
    }
}

fn scheduler(o: &mut Out, env: &Environment) {
    let s = &env.scheduler;
    o.section("Scheduler");
    let config_hz = env.kernel_config.as_ref().and_then(|c| c.hz);
    let hz = match (&s.tick, config_hz) {
        (Some(t), Some(c)) if c == t.hz => format!("{} ({}; CONFIG_HZ agrees)", t.hz, t.method),
        (Some(t), Some(c)) => format!("{} ({}; CONFIG_HZ={c} DISAGREES)", t.hz, t.method),
        (Some(t), None) => format!("{} ({})", t.hz, t.method),
        (None, Some(c)) => format!("{NA} from the coarse clock; CONFIG_HZ={c}"),
        (None, None) => NA.to_owned(),
    };
    o.row("HZ", hz);
    let built = env.kernel_config.as_ref().map_or_else(
        || NA.to_owned(),
        |c| {
            let dynamic = if c.preempt_dynamic == Some(true) {
                " (dynamic)"
            } else {
                ""
            };
            format!("{}{dynamic}", opt(&c.preempt))
        },
    );
    o.row(
        "preemption",
        format!(
            "current {} (debugfs), built {built}, boot preempt={}",
            opt(&s.preempt_model),
            s.preempt_boot_param.as_deref().unwrap_or("(not set)")
        ),
    );
    o.row(
        "real-time",
        format!(
            "RR slice {} ms, RT throttling {} of {} µs",
            opt(&s.sched_rr_timeslice_ms),
            opt(&s.sched_rt_runtime_us),
            opt(&s.sched_rt_period_us)
        ),
    );
    o.row(
        "autogroup",
        format!(
            "{} ({})",
            yes_no(s.sched_autogroup_enabled),
            opt(&s.autogroup)
        ),
    );
    o.row(
        "isolation",
        format!(
            "isolated CPUs {}, nohz_full CPUs {}",
            cpus(&s.isolated_cpus),
            cpus(&s.nohz_full_cpus)
        ),
    );
}

fn this_run(o: &mut Out, env: &Environment) {
    o.section("This run");
    o.row(
        "oscost",
        format!(
            "{}, commit {}, built with {}",
            env.oscost_version,
            opt(&env.git_commit),
            // `rustc --version` already starts with "rustc".
            env.rustc_version.as_deref().unwrap_or("an unknown rustc")
        ),
    );
    o.row("command", env.command_line.join(" "));
    if let Some(h) = &env.hostname {
        o.row("host name", h.clone());
    }
    if let Some(f) = &env.fleet {
        o.row(
            "fleet",
            format!(
                "host {}, started by {}",
                f.host_name.as_deref().unwrap_or("(its host name)"),
                f.runner.as_deref().unwrap_or("(not said)")
            ),
        );
    }
    o.row(
        "CPUs used",
        format!(
            "{} (process affinity {})",
            if env.cpus_used.is_empty() {
                "not pinned".to_owned()
            } else {
                cpuset::format(&env.cpus_used)
            },
            cpus(&env.affinity)
        ),
    );
    o.row(
        "nice",
        format!(
            "requested {}, process at start {}",
            env.nice
                .map_or_else(|| "(not set)".to_owned(), |n| n.to_string()),
            opt(&env.process_nice)
        ),
    );
}

fn run_load(o: &mut Out, l: &RunLoad) {
    o.section("Load during run");
    o.row(
        "verdict",
        if l.quiet {
            "quiet"
        } else {
            "NOT quiet: see the warnings"
        },
    );
    o.row(
        "wall",
        format!(
            "{:.3} s over {} online CPUs (the probes took {:.1} ms)",
            l.wall_s,
            l.cpus_online,
            l.probe_s * 1e3
        ),
    );
    o.row(
        "foreign CPU",
        format!(
            "{:.3} s = {:.2} % of all CPUs ({} tasks read)",
            l.foreign_cpu_s,
            l.foreign_cpu_share * 100.0,
            l.foreign_tasks_seen
        ),
    );
    for p in &l.busiest_foreign {
        o.row(
            "busiest",
            format!(
                "{} (pid {}) {:.3} s, {:.1} % of one CPU",
                p.comm,
                p.pid,
                p.cpu_s,
                p.share_of_one_cpu * 100.0
            ),
        );
    }
    let steal = match l.steal_s {
        None => NA.to_owned(),
        Some(s) if l.steal_by_cpu_s.is_empty() => format!("{s:.2} s"),
        Some(s) => {
            let per: Vec<String> = l
                .steal_by_cpu_s
                .iter()
                .map(|(c, v)| format!("CPU {c} {v:.2} s"))
                .collect();
            format!("{s:.2} s ({})", per.join(", "))
        }
    };
    o.row("steal", steal);
    let la = |v: Option<f64>| v.map_or_else(|| NA.to_owned(), |x| format!("{x:.2}"));
    o.row(
        "load average",
        format!(
            "{} at start, {} at end (1 min)",
            la(l.loadavg_start),
            la(l.loadavg_end)
        ),
    );
    o.row(
        "forks",
        format!(
            "{} during the run: {} own, {} by other programs",
            opt(&l.forks),
            l.own_forks,
            opt(&l.foreign_forks)
        ),
    );
    for w in &l.warnings {
        o.row("warning", w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_section_deterministically() {
        let mut env = oscost_model::example::environment();
        let text = render_environment(&env);
        for s in [
            "System\n",
            "CPU & clock\n",
            "Virtualisation\n",
            "Security\n",
            "Power & idle\n",
            "Scheduler\n",
            "This run\n",
        ] {
            assert!(text.contains(s), "missing section {s}\n{text}");
        }
        assert!(!text.contains("Load during run"));
        assert_eq!(text, render_environment(&env));
        let narrow = render_environment_to(&env, Some(60));
        assert!(narrow.lines().all(|l| l.chars().count() <= 60), "{narrow}");
        let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(
            words(&narrow),
            words(&text),
            "the same words, wrapped narrower"
        );
        let lines = text.lines().count();
        assert!((25..=70).contains(&lines), "{lines} lines\n{text}");
        assert!(text.lines().all(|l| l.chars().count() <= LINE_WIDTH + 40));

        env.load = Some(oscost_model::example::quiet_load(1.5));
        let with_load = render_environment(&env);
        assert!(with_load.starts_with(&text));
        assert!(with_load.contains("Load during run\n"));
        assert!(with_load.contains("  foreign CPU "));
    }

    #[test]
    fn wraps_long_values_under_the_value_column() {
        let mut o = Out {
            text: String::new(),
            width: LINE_WIDTH,
        };
        let long = vec!["word"; 60].join(" ");
        o.row("label", &long);
        let lines: Vec<&str> = o.text.lines().collect();
        assert!(lines.len() > 1);
        assert!(lines.iter().all(|l| l.len() <= LINE_WIDTH));
        assert!(lines[1].starts_with(&" ".repeat(2 + LABEL_WIDTH + 1)));
        assert_eq!(
            o.text.split_whitespace().filter(|w| *w == "word").count(),
            60
        );
    }

    #[test]
    fn missing_values_print_as_na() {
        assert_eq!(opt::<u32>(&None), "n/a");
        assert_eq!(cpus(&Some(vec![])), "none");
        assert_eq!(cpus(&Some(vec![0, 1, 2, 5])), "0-2,5");
        assert_eq!(yes_no(None), "n/a");
    }
}
