//! `oscost wakeup` and `oscost signal` as a user drives them: tiny runs whose checks pass in
//! oscost's own measuring process, SCHED_FIFO refused to a normal user in one line while
//! SCHED_OTHER is still measured, and bad input refused. No timing assertions.

mod common;
use common::{assert_args_refused, is_root, read_doc};
use std::process::Command;

fn run_json(cmd: &mut Command, json: &std::path::Path) -> oscost_model::ExperimentResult {
    let out = cmd.arg("--json").arg(json).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("setpriv:"), "could not drop privilege: {err}");
    assert!(out.status.success(), "{err}");
    read_doc(json).experiments.remove(0)
}

#[test]
fn wakeup_measures_every_policy_it_may_and_says_why_not_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut cmd = common::oscost_std();
    cmd.args(["--quiet", "--no-save", "wakeup", "--wakeups", "30"]);
    cmd.args(["--period", "500us", "--modes", "abstime,timerfd,relative"]);
    let e = run_json(&mut cmd, &json);
    let measured: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    assert!(measured.contains(&"wakeup.other.500us"), "{measured:?}");
    assert!(measured.contains(&"wakeup.other.500us.timerfd"));
    assert!(measured.contains(&"wakeup.other.500us.relative"));
    let (split, timed): (Vec<_>, Vec<_>) = e.cases.iter().partition(|c| c.id.ends_with(".kernel"));
    let missing: Vec<&str> = e
        .unavailable
        .iter()
        .map(|u| u.id.as_str())
        .filter(|id| *id != "wakeup.kernel")
        .collect();
    assert_eq!(timed.len() + missing.len(), 6, "{measured:?}");
    // Each timed case has its traced split, or one line says why there is none.
    if split.is_empty() {
        let why = e.unavailable.iter().find(|u| u.id == "wakeup.kernel");
        assert!(why.is_some_and(|u| !u.reason.contains('\n')), "{e:?}");
    } else {
        assert_eq!(split.len(), timed.len(), "{measured:?}");
        for k in &split {
            assert!(k.counters["wakeups_split"] > 0.0, "{}", k.id);
            assert!(k.checks.iter().any(|c| c.name == "parts_vs_measured"));
        }
    }
    // A host that takes the CPU between a deadline's test and the sleep for it makes a wake-up
    // with no sleep, which the switch check rightly fails: such a run says so and passes only
    // where the host took time (steal) or other programs held a tenth of the CPUs.
    let held = e
        .load
        .as_ref()
        .is_some_and(|l| l.steal_s.is_some_and(|s| s > 0.0) || l.foreign_cpu_share >= 0.10);
    for c in &timed {
        for k in &c.checks {
            if !k.passed && held {
                eprintln!(
                    "{}: {k:?} failed while the machine was held: {:?}",
                    c.id, e.load
                );
                continue;
            }
            assert!(k.passed, "{}: {k:?}", c.id);
        }
        assert!(c.counters["lateness_p99_ns"] >= c.counters["lateness_p50_ns"]);
        assert_eq!(c.counters["wakeups"], 30.0);
    }
    if is_root() {
        assert!(missing.is_empty(), "{:?}", e.unavailable);
    }
}

#[test]
fn as_a_normal_user_fifo_is_refused_in_one_line_and_other_measured() {
    use std::os::unix::fs::PermissionsExt;
    if !is_root() {
        // Already a normal user: the test above covers it.
        return common::skip("needs root to run oscost as nobody");
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let json = dir.path().join("r.json");
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
    common::isolate_in(&mut c, dir.path()).arg(common::bin_for_nobody(dir.path()));
    c.env("TMPDIR", dir.path())
        .args(["--quiet", "--no-save", "wakeup", "--wakeups", "20"]);
    let e = run_json(&mut c, &json);
    let ids: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["wakeup.other.1ms"]);
    // SCHED_FIFO and the kernel's view, each refused in one line.
    let missing: Vec<&str> = e.unavailable.iter().map(|u| u.id.as_str()).collect();
    assert_eq!(missing, ["wakeup.fifo.1ms", "wakeup.kernel"]);
    let u = &e.unavailable[0];
    assert!(
        !u.reason.contains('\n') && u.reason.contains("SCHED_FIFO 90 refused"),
        "{u:?}"
    );
    assert!(!e.unavailable[1].reason.contains('\n'));
}

#[test]
fn signal_counts_every_handler_run_in_its_own_process() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut cmd = common::oscost_std();
    cmd.args([
        "--quiet",
        "--no-save",
        "--quick",
        "signal",
        "--repeats",
        "3",
    ]);
    let e = run_json(&mut cmd, &json);
    let ids: Vec<&str> = e
        .cases
        .iter()
        .map(|c| c.id.as_str())
        .chain(e.unavailable.iter().map(|u| u.id.as_str()))
        .collect();
    for id in ["signal.install", "signal.catch", "signal.wake.same"] {
        assert!(ids.contains(&id), "{id} missing: {ids:?}");
    }
    for c in &e.cases {
        for k in &c.checks {
            // Whether the woken thread preempts the sender is the scheduler's business.
            if k.name != "switches_per_round_trip" {
                assert!(k.passed, "{}: {k:?}", c.id);
            }
        }
        assert!(c.median_ns > 0.0, "{}", c.id);
    }
}

#[test]
fn bad_input_is_refused_in_one_line() {
    assert_args_refused(&["wakeup", "--period", "1us"], "from 10us to 1s");
    assert_args_refused(&["wakeup", "--wakeups", "0"], "number of wake-ups");
    assert_args_refused(&["wakeup", "--priority", "100"], "100");
    assert_args_refused(&["wakeup", "--modes", "sleepy"], "sleepy");
    assert_args_refused(&["signal", "--repeats", "1"], "from 3");
    assert_args_refused(&["signal", "--cases", "nosuch"], "nosuch");
}
