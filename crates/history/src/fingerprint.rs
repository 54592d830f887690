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
    let v = &env.virtualisation;
    let parts = serde_json::json!({
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
    // `json!` objects are sorted maps, so the text is the same for equal parts.
    let id = uuid::Uuid::new_v5(&FINGERPRINT_NAMESPACE, parts.to_string().as_bytes());
    id.simple().to_string()[..16].to_owned()
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
        }
    }
}
