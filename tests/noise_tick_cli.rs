//! `oscost noise` and `oscost tick` as a user drives them: tiny real runs whose output must be
//! self-consistent, bad input, and an interrupted run. No timing assertions: only what was
//! counted and what the command did.

mod common;
use common::children_of;
use common::{assert_args_refused, oscost};

use oscost_model::{CaseResult, ExperimentResult, ResultDoc};
use std::path::Path;
use std::time::{Duration, Instant};

/// Runs `oscost --quiet ARGS --json -` and reads the document from standard output with the
/// typed model, so an unknown or missing field fails the test.
fn json_run(args: &[&str]) -> ResultDoc {
    let out = oscost()
        .arg("--quiet")
        .args(args)
        .args(["--json", "-"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap_or_else(|e| panic!("not a result document: {e}"))
}

fn counter(c: &CaseResult, key: &str) -> f64 {
    *c.counters
        .get(key)
        .unwrap_or_else(|| panic!("{}: no counter {key}: {:?}", c.id, c.counters))
}

/// These runs measure timing: `noise` spins on every CPU and `--rr-slices` runs real-time
/// threads, either of which would starve another test's probe of which timer periods the
/// machine can keep. The test harness runs tests in parallel, so each takes this lock.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn bad_input_exits_2_with_one_line_and_no_result() {
    let _alone = one_at_a_time();
    let cases: [(&[&str], &str); 11] = [
        (&["tick", "--periods", "500ns"], "below 1us"),
        (&["tick", "--rr-slices", "0"], "--rr-slices"),
        (&["tick", "--rr-tasks", "1"], "--rr-tasks"),
        (
            &["tick", "--periods", "1us", "--source", "signal"],
            "cannot keep that period",
        ),
        (
            &["tick", "--periods", "5ms", "--work", "20ms"],
            "fewer than 10",
        ),
        (&["tick", "--source", "carrier-pigeon"], "--source"),
        (&["tick", "--work", "0s"], "above 0"),
        (&["tick", "--runs", "0"], "--runs"),
        (&["noise", "--duration", "0"], "--duration"),
        (&["noise", "--threshold-ns", "0"], "--threshold-ns"),
        (&["--cpus", "99999", "noise"], "99999"),
    ];
    for (args, needle) in cases {
        assert_args_refused(args, needle);
    }
}

fn experiment(doc: &ResultDoc) -> &ExperimentResult {
    assert_eq!(doc.experiments.len(), 1);
    &doc.experiments[0]
}

/// A short spin on the first allowed CPU: a case whose counters, samples, series and the
/// kernel's counts agree with each other.
#[test]
fn noise_tiny_run_is_self_consistent() {
    let _alone = one_at_a_time();
    let cpu = oscost_sys::affinity().unwrap()[0].to_string();
    let doc = json_run(&["--cpus", &cpu, "noise", "--duration", "300ms"]);
    let e = experiment(&doc);
    assert_eq!(e.name, "noise");
    assert!(e.params["threshold_ns"].as_f64().unwrap() > 0.0);
    let Some(c) = e.cases.first() else {
        // A CPU never interrupted above the threshold has no case, and says so.
        assert!(
            e.warnings.iter().any(|w| w.contains("no gap above")),
            "{e:?}"
        );
        return;
    };
    assert_eq!(c.id, format!("noise.cpu{cpu}"));
    assert_eq!(c.unit, "interruption");
    let gaps = counter(c, "gaps");
    assert!(gaps >= 1.0);
    assert_eq!(counter(c, "gaps_stored"), gaps);
    assert_eq!(c.samples as f64, gaps);
    assert!(counter(c, "gaps_per_s") > 0.0);
    assert!(counter(c, "length_median_ns") <= counter(c, "length_p99_ns"));
    assert!(counter(c, "length_p99_ns") <= counter(c, "length_max_ns"));
    let lost = counter(c, "cpu_lost_pct");
    assert!((0.0..100.0).contains(&lost), "{lost}");
    let hist = c.series.iter().find(|s| s.name == "histogram").unwrap();
    assert_eq!(hist.columns, ["from_ns", "to_ns", "count"]);
    assert_eq!(hist.points.iter().map(|p| p[2]).sum::<f64>(), gaps);
    let timeline = c.series.iter().find(|s| s.name == "timeline").unwrap();
    assert_eq!(timeline.points.len() as f64, gaps);
    assert!(timeline.points.windows(2).all(|w| w[0][0] <= w[1][0]));
    // The kernel's count of local timer interrupts is beside it, with its check: against the
    // periodic gaps, or, when the traced pass ran, against the timer's own traced events.
    // A CPU spinning for 300 ms takes its scheduler tick (1 ms to 10 ms apart), unless the
    // kernel stops the tick on it (nohz_full).
    let nohz_full = std::fs::read_to_string("/sys/devices/system/cpu/nohz_full")
        .is_ok_and(|l| !matches!(l.trim(), "" | "(null)"));
    let loc = counter(c, "local_timer_interrupts");
    assert!(loc >= if nohz_full { 0.0 } else { 1.0 }, "{loc}");
    match e.params["kernel_view"].as_str() {
        Some("traced") => {
            let k = e
                .cases
                .iter()
                .find(|k| k.id == format!("noise.cpu{cpu}.kernel"))
                .expect("a traced case beside the untraced one");
            assert!(c.params.contains_key("timer_rate_checked_by"));
            assert!(k
                .checks
                .iter()
                .any(|x| x.name == "timer_events_vs_local_timer"));
            assert!((0.0..=100.0).contains(&counter(k, "attributed_pct")));
        }
        _ => {
            assert_eq!(e.unavailable.len(), 1, "{e:?}");
            // The periodic gaps are checked against the local timer, or, when they come
            // faster than it by far (a virtual machine's host), a note says whose they are not.
            let checked = c
                .checks
                .iter()
                .any(|k| k.name == "periodic_gaps_vs_local_timer_per_s");
            let foreign = c
                .notes
                .iter()
                .any(|n| n.to_string().contains("are not this kernel's timer"));
            assert!(checked != foreign, "{c:?}");
        }
    }
}

/// Every source at two periods in a tiny run: a row per period with counted events, the
/// per-event figures, each source's slope, and the kernel's own tick beside them.
#[test]
fn tick_tiny_run_is_self_consistent() {
    if !common::is_root() {
        return common::skip("needs root: the helper and timerfd sources run SCHED_FIFO");
    }
    let _alone = one_at_a_time();
    let doc = json_run(&[
        "tick",
        // Periods a machine busy with other tests still keeps.
        "--work",
        "40ms",
        "--periods",
        "4ms,2ms",
        "--runs",
        "3",
    ]);
    let e = experiment(&doc);
    assert_eq!(e.name, "tick");
    let ids: Vec<&str> = e
        .cases
        .iter()
        .map(|c| c.id.as_str())
        .filter(|id| !id.ends_with(".kernel"))
        .collect();
    // The traced runs: one case per source, or one line saying why there are none.
    let traced: Vec<&str> = e
        .cases
        .iter()
        .map(|c| c.id.as_str())
        .filter(|id| id.ends_with(".kernel"))
        .collect();
    if e.params["kernel_view"] == "traced" {
        assert_eq!(
            traced,
            [
                "tick.signal.2ms.kernel",
                "tick.helper.2ms.kernel",
                "tick.timerfd.2ms.kernel"
            ]
        );
    } else {
        assert!(traced.is_empty());
        assert_eq!(e.unavailable.len(), 1, "{e:?}");
    }
    assert_eq!(
        ids,
        [
            "tick.undisturbed",
            "tick.signal.4ms",
            "tick.signal.2ms",
            "tick.helper.4ms",
            "tick.helper.2ms",
            "tick.timerfd.4ms",
            "tick.timerfd.2ms"
        ]
    );
    for c in e.cases[1..].iter().filter(|c| !c.id.ends_with(".kernel")) {
        assert_eq!(c.samples, 3, "{}", c.id);
        let events = counter(c, "events_per_run");
        assert!(events > 0.0, "{}: no event counted", c.id);
        assert!(counter(c, "expirations_per_run") >= events, "{}", c.id);
        let extra = counter(c, "extra_cycles");
        assert!(
            (counter(c, "cycles_per_event") - extra / events).abs() <= 1e-6 * extra.abs().max(1.0),
            "{}",
            c.id
        );
        let runs = c.series.iter().find(|s| s.name == "runs").unwrap();
        assert_eq!(runs.points.len(), 3);
        assert!(e
            .derived
            .iter()
            .any(|d| d.id == format!("{}.per_event", c.id)));
    }
    for source in ["signal", "helper", "timerfd"] {
        let fit = &e.params["slope"][source];
        assert_eq!(fit["runs"], serde_json::json!(9), "{source}: {fit}");
        let v = fit["cycles_per_event"].as_f64().unwrap();
        let ci = &fit["ci95_cycles"];
        assert!(ci[0].as_f64().unwrap() <= v && v <= ci[1].as_f64().unwrap());
    }
    assert!(e.params.contains_key("natural_tick"));
}

/// SIGTERM while `tick` runs its helper threads and timers: exit 130, and the measuring
/// process is gone with everything it had armed.
#[test]
fn sigterm_mid_tick_leaves_nothing() {
    if !common::is_root() {
        return common::skip("needs root: it waits for the SCHED_FIFO helper thread");
    }
    let _alone = one_at_a_time();
    let child = common::oscost_std()
        .args(["--quiet", "tick", "--work", "50ms", "--runs", "1000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(30);
    let measuring = loop {
        // Once a helper thread exists, runs are under way.
        let m = children_of(pid).into_iter().find(|&m| {
            std::fs::read_dir(format!("/proc/{m}/task"))
                .map(|d| {
                    d.flatten().any(|t| {
                        std::fs::read_to_string(t.path().join("comm"))
                            .is_ok_and(|c| c.trim() == "oscost-tick")
                    })
                })
                .unwrap_or(false)
        });
        if let Some(m) = m {
            break m;
        }
        assert!(Instant::now() < deadline, "no helper thread appeared");
        std::thread::sleep(Duration::from_millis(5));
    };
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(
        !Path::new(&format!("/proc/{measuring}")).exists(),
        "the measuring process {measuring} outlived oscost"
    );
}

/// `--rr-slices`: as root, two SCHED_RR threads and one alone under each slice, the
/// reschedulings counted, and the setting back as it was; otherwise both cases are reported
/// as not measured, with the reason. Never a changed setting.
#[test]
fn rr_slices_measure_reschedulings_and_put_the_setting_back() {
    let _alone = one_at_a_time();
    const RR: &str = "/proc/sys/kernel/sched_rr_timeslice_ms";
    let before = std::fs::read_to_string(RR).unwrap();
    let cpu = oscost_sys::affinity().unwrap()[0].to_string();
    let doc = json_run(&[
        "--cpus",
        &cpu,
        "tick",
        "--source",
        "signal",
        "--periods",
        "4ms",
        "--work",
        "40ms",
        "--runs",
        "2",
        "--rr-slices",
        "2,7",
        "--rr-tasks",
        "2",
    ]);
    assert_eq!(
        std::fs::read_to_string(RR).unwrap(),
        before,
        "the setting was not put back"
    );
    let e = experiment(&doc);
    for ms in [2, 7] {
        let id = format!("tick.rr.{ms}ms");
        match e.cases.iter().find(|c| c.id == id) {
            Some(c) => {
                assert!(e.cases.iter().any(|a| a.id == format!("{id}.alone")));
                assert_eq!(c.params["sched_rr_timeslice_ms"], ms);
                let k = c
                    .checks
                    .iter()
                    .find(|k| k.name == "reschedulings_vs_time_over_slice");
                // Two threads sharing 40 ms of work in turns of 7 ms at most (10 ms in whole
                // ticks of a 100 Hz kernel): one gave way to the other at least once. (The work
                // is sized by a calibration: on a loaded machine it may take under two slices
                // when the threads run alone, and then no turn need come.)
                assert!(
                    k.is_some_and(|k| k.expected < 2.0 || k.counted >= 1.0),
                    "{id}: {:?}",
                    c.checks
                );
                assert!(c.samples == 2 && c.median_ns > 0.0, "{id}");
            }
            None => {
                let u = e.unavailable.iter().find(|u| u.id == id);
                assert!(
                    u.is_some_and(|u| !u.reason.is_empty()),
                    "{id} neither measured nor explained"
                );
            }
        }
    }
}

/// A user without the right to SCHED_FIFO gets the helper sources as "not measured", with the
/// reason and the fix, and the signal source measured: a refused set-up is not a failed check.
#[test]
fn without_sched_fifo_the_helpers_are_not_measured_and_say_why() {
    use std::os::unix::fs::PermissionsExt;
    if !common::is_root() {
        return common::skip("needs root to run oscost as nobody");
    }
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let json = dir.path().join("t.json");
    // No real-time priority to inherit, whatever this test's own limit is.
    let mut cmd = std::process::Command::new("prlimit");
    cmd.args(["--rtprio=0:0", "--", "setpriv"]);
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
    let out = common::isolate_in(&mut cmd, dir.path())
        .arg(common::bin_for_nobody(dir.path()))
        .args([
            "--quiet",
            "--no-save",
            "tick",
            "--quick",
            "--no-kernel-view",
        ])
        .args(["--source", "signal,helper", "--periods", "1ms", "--json"])
        .arg(&json)
        .env("TMPDIR", dir.path())
        .output()
        .expect("prlimit and setpriv (util-linux) must be installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = common::read_doc(&json);
    let e = &doc.experiments[0];
    let ids: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    assert!(ids.contains(&"tick.signal.1ms"), "{ids:?}");
    assert!(!ids.contains(&"tick.helper.1ms"), "{ids:?}");
    let refused = e
        .unavailable
        .iter()
        .find(|u| u.id == "tick.helper.1ms")
        .expect("the helper said as not measured");
    assert!(refused.reason.contains("SCHED_FIFO"), "{}", refused.reason);
    assert!(
        refused.reason.contains("CAP_SYS_NICE"),
        "{}",
        refused.reason
    );
}
