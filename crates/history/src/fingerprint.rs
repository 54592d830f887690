//! A short, stable name for the parts of a run's environment that can explain a change in its
//! figures, so a trend can mark where the machine changed under it.

use oscost_model::Environment;

/// Namespace of the fingerprints (UUID v5, which is SHA-1 based and so the same in every
/// build, unlike the standard library's hasher).
const FINGERPRINT_NAMESPACE: uuid::Uuid = uuid::uuid!("0d6f3d52-52a4-4f43-a5f5-3a0e8d0d8c11");

/// The environment fingerprint stored with every run: 16 hex digits of a hash of the oscost
/// version, kernel release, CPU model and microcode, mitigations (the vulnerabilities files
/// and the `mitigations=` and `pti=` boot parameters), virtualisation, SMT, the clock (its
/// counter and its frequency rounded to 10 MHz, so calibration jitter does not count), the
/// CPUs used and the nice value. Two runs with the same fingerprint ran under the same of
/// all these; the load during the run and everything else recorded are left out.
pub fn env_fingerprint(env: &Environment) -> String {
    let parts: serde_json::Map<String, serde_json::Value> = parts(env)
        .into_iter()
        .map(|p| (p.key.to_owned(), p.value))
        .collect();
    // A map's keys are sorted, so the text is the same for equal parts.
    let text = serde_json::Value::Object(parts).to_string();
    let id = uuid::Uuid::new_v5(&FINGERPRINT_NAMESPACE, text.as_bytes());
    id.simple().to_string()[..16].to_owned()
}

/// One part of the fingerprint: its key in the hashed text, the name a reader knows it by,
/// and its value.
struct Part {
    key: &'static str,
    label: &'static str,
    value: serde_json::Value,
}

fn parts(env: &Environment) -> Vec<Part> {
    let v = &env.virtualisation;
    let part = |key, label, value| Part { key, label, value };
    vec![
        part(
            "oscost_version",
            "oscost version",
            env.oscost_version.clone().into(),
        ),
        part(
            "kernel_release",
            "kernel",
            env.kernel_release.clone().into(),
        ),
        part("cpu_model", "CPU", serde_json::json!(env.cpu_model)),
        part("microcode", "microcode", serde_json::json!(env.microcode)),
        part(
            "vulnerabilities",
            "mitigations (vulnerabilities files)",
            serde_json::json!(env.security.vulnerabilities),
        ),
        part(
            "cmdline_mitigations",
            "mitigations= boot parameter",
            serde_json::json!(env.security.cmdline_mitigations),
        ),
        part(
            "cmdline_pti",
            "pti= boot parameter",
            serde_json::json!(env.security.cmdline_pti),
        ),
        part(
            "hypervisor",
            "hypervisor",
            serde_json::json!([v.hypervisor_flag, v.cpuid_signature, v.sys_hypervisor_type]),
        ),
        part("smt_active", "SMT", serde_json::json!(env.smt.active)),
        part(
            "counter",
            "clock counter",
            serde_json::json!(env.clock.counter),
        ),
        part(
            "frequency_10mhz",
            "counter frequency (10 MHz steps)",
            ((env.clock.frequency_hz / 1e7).round() as i64).into(),
        ),
        part("cpus_used", "CPUs used", serde_json::json!(env.cpus_used)),
        part("nice", "nice", serde_json::json!(env.nice)),
    ]
}

/// What differs between two runs' fingerprinted environments, one short phrase per part,
/// `kernel 6.1.0-1 → 6.12.0-3`; a value too long to show is named alone (`mitigations
/// (vulnerabilities files) changed`). Empty when the fingerprints are equal.
pub fn env_differences(before: &Environment, after: &Environment) -> Vec<String> {
    /// Longer values are named, not shown: a phrase must fit a table cell.
    const SHOWN: usize = 24;
    let shown = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "none".to_owned(),
        other => other.to_string(),
    };
    parts(before)
        .into_iter()
        .zip(parts(after))
        .filter(|(a, b)| a.value != b.value)
        .map(|(a, b)| {
            let (x, y) = (shown(&a.value), shown(&b.value));
            if x.chars().count() + y.chars().count() <= SHOWN {
                format!("{} {x} → {y}", a.label)
            } else {
                format!("{} changed", a.label)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_fields_that_explain_a_difference_count() {
        let a = oscost_model::example::environment();
        let mut b = a.clone();
        b.load = Some(oscost_model::example::quiet_load(3.0));
        b.command_line.push("--quick".into());
        b.clock.frequency_hz += 1e5;
        assert_eq!(env_fingerprint(&a), env_fingerprint(&b));
        assert_eq!(env_fingerprint(&a).len(), 16);
        for change in [
            |e: &mut Environment| e.kernel_release = "6.1.0".into(),
            |e: &mut Environment| e.cpus_used = vec![1],
            |e: &mut Environment| e.nice = Some(-19),
            |e: &mut Environment| e.security.cmdline_mitigations = Some("off".into()),
            |e: &mut Environment| e.clock.frequency_hz = 2.4e9,
        ] {
            let mut c = a.clone();
            change(&mut c);
            assert_ne!(env_fingerprint(&a), env_fingerprint(&c));
            assert_eq!(env_differences(&a, &c).len(), 1, "one part changed");
        }
    }

    #[test]
    fn the_fingerprint_keeps_its_value() {
        // Stored histories hold fingerprints made by earlier versions: the hashed text must
        // not change with the code that builds it.
        let env = oscost_model::example::environment();
        let v = &env.virtualisation;
        let old = serde_json::json!({
            "oscost_version": env.oscost_version,
            "kernel_release": env.kernel_release,
            "cpu_model": env.cpu_model,
            "microcode": env.microcode,
            "vulnerabilities": env.security.vulnerabilities,
            "cmdline_mitigations": env.security.cmdline_mitigations,
            "cmdline_pti": env.security.cmdline_pti,
            "hypervisor": [v.hypervisor_flag, v.cpuid_signature, v.sys_hypervisor_type],
            "smt_active": env.smt.active,
            "counter": env.clock.counter,
            "frequency_10mhz": (env.clock.frequency_hz / 1e7).round() as i64,
            "cpus_used": env.cpus_used,
            "nice": env.nice,
        });
        let id = uuid::Uuid::new_v5(&FINGERPRINT_NAMESPACE, old.to_string().as_bytes());
        assert_eq!(env_fingerprint(&env), id.simple().to_string()[..16]);
    }

    #[test]
    fn differences_name_what_changed() {
        let a = oscost_model::example::environment();
        let mut b = a.clone();
        b.kernel_release = "6.12.0".into();
        b.nice = Some(-5);
        b.security
            .vulnerabilities
            .get_or_insert_with(Default::default)
            .insert(
                "spectre_v2".into(),
                "Mitigation: a long text of the kernel".into(),
            );
        let d = env_differences(&a, &b);
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(
            d[0].starts_with("kernel ") && d[0].ends_with("→ 6.12.0"),
            "{d:?}"
        );
        assert_eq!(d[1], "mitigations (vulnerabilities files) changed");
        assert!(d[2].starts_with("nice ") && d[2].ends_with("→ -5"), "{d:?}");
        assert!(env_differences(&a, &a).is_empty());
    }
}
