//! `oscost seccomp` as a user drives it: a tiny run whose children each count the filters they
//! run under, its derived costs and figure, the same run as `nobody` (seccomp needs no
//! privilege), and bad input refused. No timing assertions.

mod common;
use common::{assert_args_refused, oscost, read_doc};

/// Checks what every run must hold: each case's checks passed (the filter count, no refused
/// call, one thread), and every set above the bare call derived over it.
fn assert_sound(e: &oscost_model::ExperimentResult, calls: &[&str]) {
    let mut sets = vec!["none", "allow-1", "args-1", "args-8"];
    if cfg!(target_arch = "x86_64") {
        sets.push("profile");
    }
    let mut want: Vec<String> = sets
        .iter()
        .flat_map(|s| calls.iter().map(move |c| format!("seccomp.{s}.{c}")))
        .collect();
    want.push("seccomp.notify.same".into());
    // The cross-CPU supervisor needs a second CPU; on one it is said why not.
    if e.unavailable.iter().all(|u| u.id != "seccomp.notify.cross") {
        want.push("seccomp.notify.cross".into());
    }
    let ids: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, want);
    let inherited = e.params["inherited_filters"].as_u64();
    for c in &e.cases {
        let names: Vec<&str> = c.checks.iter().map(|k| k.name.as_str()).collect();
        assert!(names.contains(&"refused_calls"), "{}: {names:?}", c.id);
        if c.id.starts_with("seccomp.notify.") {
            assert!(names.contains(&"answered_by_supervisor"), "{}", c.id);
        }
        for k in &c.checks {
            assert!(k.passed, "{}: {k:?}", c.id);
        }
        assert!(c.median_ns.is_finite() && c.median_ns > 0.0, "{}", c.id);
        if let (Some(f), Some(before)) = (c.counters.get("seccomp_filters"), inherited) {
            assert_eq!(
                *f as u64,
                before + c.params["filters"].as_u64().unwrap(),
                "{}",
                c.id
            );
        }
    }
    for c in calls {
        for d in ["allow-1", "args-1", "args-8"] {
            let id = format!("seccomp.{d}.{c}.over_none");
            assert!(e.derived.iter().any(|x| x.id == id), "{id} missing");
        }
        let per = format!("seccomp.args-8.{c}.per_filter");
        assert!(e.derived.iter().any(|x| x.id == per), "{per} missing");
    }
    assert!(e.derived.iter().all(|d| d.flagged.is_none()));
}

#[test]
fn each_set_runs_under_its_own_filters_and_draws_its_figure() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    oscost()
        .args(["--quick", "--quiet", "--samples", "5", "seccomp", "--json"])
        .arg(&json)
        .arg("--svg")
        .arg(dir.path())
        .assert()
        .success();
    let e = read_doc(&json).experiments.remove(0);
    assert_sound(&e, &["getpid", "fstat"]);
    let svg = std::fs::read_to_string(dir.path().join("seccomp.over-none.svg")).unwrap();
    for set in ["allow-1", "args-1", "args-8"] {
        assert!(svg.contains(set), "{set} missing from the figure");
    }
}

#[test]
fn nobody_measures_every_set_without_privilege() {
    use std::os::unix::fs::PermissionsExt;
    if !common::is_root() {
        // Already unprivileged: the run above is this one.
        return common::skip("needs root to run oscost as nobody");
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let json = dir.path().join("r.json");
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
    let out = common::isolate_in(&mut cmd, dir.path())
        .arg(common::bin_for_nobody(dir.path()))
        .args(["--quick", "--quiet", "--samples", "5", "seccomp"])
        .args(["--calls", "getpid", "--json"])
        .arg(&json)
        .env("TMPDIR", dir.path())
        .output()
        .expect("setpriv (util-linux) must be installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let e = read_doc(&json).experiments.remove(0);
    assert_sound(&e, &["getpid"]);
}

#[test]
fn one_cpu_measures_the_supervisor_on_it_and_says_why_not_across() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    oscost()
        .args(["--quick", "--quiet", "--samples", "5", "--cpus", "0"])
        .args(["seccomp", "--sets", "none,notify", "--json"])
        .arg(&json)
        .assert()
        .success();
    let e = read_doc(&json).experiments.remove(0);
    let ids: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "seccomp.none.getpid",
            "seccomp.none.fstat",
            "seccomp.notify.same"
        ]
    );
    let same = &e.cases[2];
    for k in &same.checks {
        assert!(k.passed, "{k:?}");
    }
    assert!(same.counters["voluntary_switches_per_call"] >= 0.9);
    let cross: Vec<&str> = e.unavailable.iter().map(|u| u.id.as_str()).collect();
    assert_eq!(cross, ["seccomp.notify.cross"]);
    assert!(e.unavailable[0].reason.contains("--cpus"));
    assert!(e
        .derived
        .iter()
        .any(|d| d.id == "seccomp.notify.same.over_none"));
}

#[test]
fn bad_sets_and_calls_are_refused() {
    assert_args_refused(&["seccomp", "--sets", "args-2"], "args-2");
    assert_args_refused(&["seccomp", "--calls", "read"], "read");
}

/// The C reference builds its profile from its own copy of the list: it must be this one, in
/// the same order, or the two would time different filters.
#[cfg(target_arch = "x86_64")]
#[test]
fn the_c_reference_lists_the_same_profile() {
    let c = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/seccomp_ref.c"
    ))
    .unwrap();
    let start = c.find("profile_nrs[] = {").expect("the C list");
    let end = start + c[start..].find("};").unwrap();
    let names: Vec<&str> = c[start..end]
        .split("P(")
        .skip(1)
        .filter_map(|s| s.split(')').next())
        .collect();
    let ours: Vec<&str> = oscost_sys::seccomp::PROFILE_CALLS.to_vec();
    assert_eq!(names, ours);
}
