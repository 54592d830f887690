//! The environment fields that can explain a difference between two runs.

use super::EnvDiff;
use oscost_model::env::Environment;
use std::collections::BTreeMap;

/// The environment fields that can explain a difference, as text, when they differ.
pub fn env_diffs(a: &Environment, b: &Environment) -> Vec<EnvDiff> {
    fn opt<T: ToString>(v: &Option<T>) -> String {
        v.as_ref()
            .map(|x| x.to_string())
            .unwrap_or_else(|| "unknown".into())
    }
    fn list(v: &[usize]) -> String {
        oscost_model::cpulist::format(v)
    }
    type Field = (&'static str, fn(&Environment) -> String);
    let fields: &[Field] = &[
        ("oscost version", |e| e.oscost_version.clone()),
        // Linux for oscost's own runs; Windows (or Wine) for the Windows agent's.
        ("operating system", |e| {
            e.os.as_ref().map_or("Linux".into(), |o| o.describe())
        }),
        ("kernel", |e| e.kernel_release.clone()),
        ("kernel build", |e| opt(&e.kernel_version)),
        ("CPU", |e| opt(&e.cpu_model)),
        ("microcode", |e| opt(&e.microcode)),
        ("virtualisation", |e| {
            let v = &e.virtualisation;
            match (&v.cpuid_signature, &v.dmi_product_name, v.hypervisor_flag) {
                (Some(s), p, _) => format!(
                    "{s}{}",
                    p.as_ref().map(|p| format!(" ({p})")).unwrap_or_default()
                ),
                (None, Some(p), Some(true)) => format!("hypervisor ({p})"),
                (None, _, Some(true)) => "hypervisor".into(),
                (None, _, Some(false)) => "none".into(),
                _ => "unknown".into(),
            }
        }),
        ("mitigations= boot parameter", |e| {
            opt(&e.security.cmdline_mitigations)
        }),
        ("counter", |e| {
            format!(
                "{:?} at {:.3} MHz",
                e.clock.counter,
                e.clock.frequency_hz / 1e6
            )
        }),
        ("clock source", |e| opt(&e.clocksource_current)),
        ("CPUs used", |e| list(&e.cpus_used)),
        ("CPUs online", |e| {
            e.cpus_online
                .as_deref()
                .map(list)
                .unwrap_or_else(|| "unknown".into())
        }),
        ("SMT", |e| opt(&e.smt.active)),
        ("nice asked for", |e| opt(&e.nice)),
        ("nice of the process", |e| opt(&e.process_nice)),
        ("tick", |e| {
            opt(&e.scheduler.tick.as_ref().map(|t| format!("{} Hz", t.hz)))
        }),
        ("preemption", |e| {
            opt(&e.kernel_config.as_ref().and_then(|k| k.preempt.clone()))
        }),
        ("cpufreq governor", |e| opt(&e.power.cpufreq_governor)),
        ("transparent hugepages", |e| opt(&e.thp_enabled)),
        ("sampling", |e| {
            e.sampling
                .as_ref()
                .map_or_else(|| "unknown".into(), |s| s.describe())
        }),
        ("other load during the run", |e| match &e.load {
            Some(l) if l.quiet => "quiet".into(),
            Some(l) => format!(
                "{:.0} % of the CPUs used by others",
                l.foreign_cpu_share * 100.0
            ),
            None => "unknown".into(),
        }),
    ];
    let mut out: Vec<EnvDiff> = fields
        .iter()
        .filter_map(|(field, get)| {
            let (x, y) = (get(a), get(b));
            (x != y).then(|| EnvDiff {
                field: field.to_string(),
                baseline: x,
                other: y,
            })
        })
        .collect();
    // A calibrated frequency differs in its last digits from run to run (a few ppm): only a
    // change beyond 100 ppm is a different counter.
    let same_counter = a.clock.counter == b.clock.counter
        && (a.clock.frequency_hz - b.clock.frequency_hz).abs() <= 1e-4 * a.clock.frequency_hz.abs();
    if same_counter {
        out.retain(|d| d.field != "counter");
    }
    // Each vulnerability's mitigation separately: one row saying "they differ" would hide which.
    let empty = BTreeMap::new();
    let va = a.security.vulnerabilities.as_ref().unwrap_or(&empty);
    let vb = b.security.vulnerabilities.as_ref().unwrap_or(&empty);
    let names: std::collections::BTreeSet<&String> = va.keys().chain(vb.keys()).collect();
    for n in names {
        let (x, y) = (va.get(n), vb.get(n));
        if x != y {
            out.push(EnvDiff {
                field: format!("mitigation {n}"),
                baseline: x.cloned().unwrap_or_else(|| "unknown".into()),
                other: y.cloned().unwrap_or_else(|| "unknown".into()),
            });
        }
    }
    out
}
