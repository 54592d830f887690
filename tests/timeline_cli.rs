//! `oscost timeline` as a user drives it: the trace, the figure and the series files of a tiny
//! run, bad input, a real-time policy without permission, and the round-robin slice setting
//! put back after runs that fail. No timing assertions.

mod common;
use common::is_root;
use common::{children_of, read_doc};

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RR: &str = "/proc/sys/kernel/sched_rr_timeslice_ms";

/// Held by each test that reads or changes the round-robin slice: one changing it must not
/// run while another checks that nothing changed it.
static RR_SETTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn hold_rr() -> std::sync::MutexGuard<'static, ()> {
    RR_SETTING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn first_cpu() -> String {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| s.split([',', '-']).next()?.trim().parse::<usize>().ok())
        .unwrap_or(0)
        .to_string()
}

/// A marker put in the environment of one oscost run: every process it starts inherits it,
/// so the processes left of that run (and only of it) can be found afterwards.
fn marker(name: &str) -> String {
    format!("OSCOST_TEST_MARK={name}-{}", std::process::id())
}

fn oscost(mark: &str) -> Command {
    let mut c = common::oscost_std();
    let (k, v) = mark.split_once('=').unwrap();
    c.env(k, v);
    c
}

#[test]
fn a_tiny_run_keeps_the_whole_trace_and_draws_it() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mark = marker("tiny");
    let out = oscost(&mark)
        .args(["--quiet", "--cpus", &first_cpu(), "timeline"])
        .args(["--workers", "1,3", "--chunks", "10", "--chunk-us", "200"])
        .args(["--rounds", "2", "--json"])
        .arg(&json)
        .arg("--svg")
        .arg(dir.path())
        .arg("--series")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::assert_nothing_left(&mark);
    let doc = read_doc(&json);
    let e = &doc.experiments[0];
    assert_eq!(e.name, "timeline");
    for n in [1usize, 3] {
        let id = format!("timeline.processes.n{n}");
        let c = e.cases.iter().find(|c| c.id == id).unwrap();
        assert!(c.checks_passed, "{id}: {:?}", c.checks);
        let trace = &c.series[0];
        assert_eq!(trace.name, "trace");
        assert_eq!(trace.points.len(), n * 10, "{id}");
        for w in 1..=n {
            let row: Vec<&Vec<f64>> = trace.points.iter().filter(|p| p[1] == w as f64).collect();
            assert_eq!(row.len(), 10, "{id} worker {w}");
            assert!(
                row.windows(2)
                    .all(|p| p[0][0] <= p[1][0] && p[1][2] == p[0][2] + 1.0),
                "{id} worker {w}: {row:?}"
            );
        }
        // The latency case holds every worker of every round.
        let lat = e
            .cases
            .iter()
            .find(|c| c.id == format!("{id}.latency"))
            .unwrap();
        assert_eq!(lat.samples, 2 * n);
        // The study's latency: from each worker's own start, so never longer than from the
        // common start, worker by worker; one worker alone takes the whole run.
        let own = e
            .cases
            .iter()
            .find(|c| c.id == format!("{id}.own_latency"))
            .unwrap();
        assert_eq!(own.samples, 2 * n);
        for w in 1..=n {
            let mine = own.counters[&format!("own_latency_worker{w}_ns")];
            let common = c.counters[&format!("latency_worker{w}_ns")];
            assert!(
                mine > 0.0 && mine <= common,
                "{id} worker {w}: {mine} > {common}"
            );
        }
        if n == 1 {
            let mine = own.counters["own_latency_avg_ns"];
            let total = c.counters["total_ns"];
            // Only the wake-up after the common start lies between them.
            assert!(mine <= total && mine >= 0.5 * total, "{mine} vs {total}");
        }
        let svg = std::fs::read_to_string(dir.path().join(format!("{id}.svg"))).unwrap();
        assert!(svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), n);
        let csv = std::fs::read_to_string(dir.path().join(format!("{id}.trace.csv"))).unwrap();
        let mut lines = csv.lines();
        assert_eq!(lines.next(), Some("elapsed_ns,worker,chunk"));
        assert_eq!(lines.count(), n * 10);
    }
    // Three workers of 2 ms each share less than a slice: their shares are recorded, and not
    // held against the weights.
    let n3 = e
        .cases
        .iter()
        .find(|c| c.id == "timeline.processes.n3")
        .unwrap();
    assert!(n3.counters.contains_key("share_worker3_pct"));
    assert!(!n3.checks.iter().any(|k| k.name == "largest_share_miss_pct"));
    assert!(
        n3.warnings
            .iter()
            .any(|w| w.starts_with("shares not compared with the weights")),
        "{:?}",
        n3.warnings
    );
}

/// A failed run: [`common::assert_refused`], no warning either, no process of the run left
/// and the round-robin slice as it was.
fn assert_refused(args: &[&str], needle: &str) {
    let mark = marker("refused");
    let before = std::fs::read_to_string(RR).ok();
    let err = common::assert_refused(
        assert_cmd::Command::from_std(oscost(&mark))
            .arg("--quiet")
            .args(args),
        needle,
    );
    assert_eq!(err.lines().count(), 1, "{args:?}: one line expected: {err}");
    common::assert_nothing_left(&mark);
    assert_eq!(
        std::fs::read_to_string(RR).ok(),
        before,
        "{args:?} changed {RR}"
    );
}

#[test]
fn bad_input_is_one_line_exit_2_and_changes_nothing() {
    let _rr = hold_rr();
    let cases: [(&[&str], &str); 10] = [
        (
            &["timeline", "--workers", "0"],
            "`0` is not a number of workers",
        ),
        (
            &["timeline", "--chunks", "0"],
            "`0` is not a number of chunks",
        ),
        (
            &["timeline", "--workers", "2", "--worker-nice", "0,20"],
            "`20` is not a nice value from -20 to 19",
        ),
        (
            &["timeline", "--workers", "2", "--worker-nice", "0,5,7"],
            "--worker-nice gives 3 values for 2 workers",
        ),
        (
            &["timeline", "--worker-nice", "0,5", "--workers", "1,2"],
            "--worker-nice needs a single --workers value",
        ),
        (&["--cpus", "99999", "timeline"], "--cpus"),
        (
            &["timeline", "--rr-slice-ms", "20"],
            "--rr-slice-ms sets the round-robin slice, which only --policy rr uses",
        ),
        (&["timeline", "--policy", "deadline"], "--policy"),
        (
            &["timeline", "--chunk-iterations", "0"],
            "`0` is not a number of iterations per chunk",
        ),
        (
            &[
                "timeline",
                "--chunk-iterations",
                "100000",
                "--chunk-us",
                "300",
            ],
            "cannot be used with",
        ),
    ];
    for (args, needle) in cases {
        assert_refused(args, needle);
    }
}

#[test]
fn a_real_time_policy_without_permission_is_refused_and_nothing_is_left() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    // Writable for `nobody` too.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let json = dir.path().join("r.json");
    let mark = marker("fifo");
    let mut cmd = if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
        common::isolate_in(&mut c, dir.path()).arg(common::bin_for_nobody(dir.path()));
        c
    } else {
        common::oscost_std()
    };
    let (k, v) = mark.split_once('=').unwrap();
    let out = cmd
        .env(k, v)
        .env("TMPDIR", dir.path())
        .args(["--quiet", "timeline", "--workers", "2", "--policy", "fifo"])
        .arg("--json")
        .arg(&json)
        .output()
        .expect("setpriv (util-linux) must be installed");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("setpriv:"), "could not drop privilege: {err}");
    assert_eq!(out.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("oscost: ")
            && lines[0].contains("--policy fifo: the kernel refused SCHED_FIFO for worker 1")
            && lines[0].contains("use --policy other, batch or idle"),
        "{err}"
    );
    assert!(!json.exists());
    common::assert_nothing_left(&mark);
}

/// Puts the round-robin slice back when dropped, whatever the test did.
struct KeepRr(String);

impl Drop for KeepRr {
    fn drop(&mut self) {
        let _ = std::fs::write(RR, &self.0);
    }
}

fn rr_now() -> String {
    std::fs::read_to_string(RR).unwrap().trim().to_owned()
}

/// Starts a long round-robin run that sets the slice to 37 ms and waits until it has; returns
/// the running oscost.
fn start_rr_run(mark: &str) -> std::process::Child {
    start_rr_run_at(mark, "37")
}

/// The same with a slice of `ms`.
fn start_rr_run_at(mark: &str, ms: &str) -> std::process::Child {
    let (k, v) = mark.split_once('=').unwrap();
    let original = rr_now();
    let child = common::oscost_std()
        .env(k, v)
        // No --cpus: the workers take the first CPU, and the measuring process stays free to
        // run beside them while they hold it at real-time priority.
        .args(["--quiet", "timeline", "--policy", "rr"])
        .args(["--rr-slice-ms", ms, "--workers", "2", "--chunks", "20000"])
        .args(["--chunk-us", "100", "--rounds", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while rr_now() == original {
        assert!(Instant::now() < deadline, "the slice was never set");
        std::thread::sleep(Duration::from_millis(1));
    }
    child
}

fn kill(sig: &str, pid: i32) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} {pid}");
}

/// The run fails three ways with the slice changed: a worker killed (the measuring process
/// puts it back), the measuring process killed (the coordinator does), and a SIGTERM to oscost
/// (an orderly stop). Each time the setting is as before, and nothing of the run is left.
#[test]
fn the_rr_slice_is_put_back_after_a_failing_run() {
    if !is_root() {
        return common::skip(&format!("needs root to change {RR}"));
    }
    let _rr = hold_rr();
    let original = rr_now();
    let _keep = KeepRr(original.clone());

    // A worker dies mid-run.
    let mark = marker("rr-worker");
    let child = start_rr_run(&mark);
    let oscost_pid = child.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(30);
    let worker = loop {
        let w: Vec<i32> = children_of(oscost_pid)
            .into_iter()
            .flat_map(children_of)
            .collect();
        if let Some(&w) = w.first() {
            break w;
        }
        assert!(Instant::now() < deadline, "no worker appeared");
        std::thread::sleep(Duration::from_millis(1));
    };
    kill("-KILL", worker);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("worker process {worker} was killed by signal 9")),
        "{err}"
    );
    assert_eq!(rr_now(), original, "{err}");
    common::assert_nothing_left(&mark);

    // The measuring process dies: the coordinator puts the slice back.
    let mark = marker("rr-measuring");
    let child = start_rr_run(&mark);
    let measuring = children_of(child.id() as i32);
    assert_eq!(measuring.len(), 1, "{measuring:?}");
    kill("-KILL", measuring[0]);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("oscost: put {RR} back to {original}")),
        "{err}"
    );
    assert_eq!(rr_now(), original, "{err}");
    common::assert_nothing_left(&mark);

    // SIGTERM to oscost: interrupted, the slice put back on the way out.
    let mark = marker("rr-term");
    let child = start_rr_run(&mark);
    kill("-TERM", child.id() as i32);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert_eq!(rr_now(), original, "{err}");
    common::assert_nothing_left(&mark);
}

/// `kill -9` of oscost itself while the slice is changed: the next run puts it back first
/// and says so.
#[test]
fn the_rr_slice_is_put_back_by_the_next_run_after_a_kill_9() {
    if !is_root() {
        return common::skip(&format!("needs root to change {RR}"));
    }
    let _rr = hold_rr();
    let original = rr_now();
    let _keep = KeepRr(original.clone());
    let mark = marker("rr-kill9");
    let mut child = start_rr_run(&mark);
    kill("-KILL", child.id() as i32);
    child.wait().unwrap();
    common::assert_nothing_left(&mark);
    assert_eq!(rr_now(), "37", "the kill left the slice as it was");
    let out = common::oscost_std()
        .args(["--scripted", "--quiet", "--no-save", "example"])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("oscost: put {RR} back to {original}")),
        "{err}"
    );
    assert_eq!(rr_now(), original, "{err}");
}

/// Two overlapping runs with different slices: the second never takes the first's slice as
/// the value before, and the slice ends at its first value whichever ends first.
#[test]
fn overlapping_rr_runs_end_at_the_first_value() {
    if !is_root() {
        return common::skip(&format!("needs root to change {RR}"));
    }
    let _rr = hold_rr();
    let original = rr_now();
    let _keep = KeepRr(original.clone());
    let a = start_rr_run_at(&marker("rr-first"), "37");
    let b = start_rr_run_at(&marker("rr-second"), "23");
    let out_a = a.wait_with_output().unwrap();
    let out_b = b.wait_with_output().unwrap();
    let err_b = String::from_utf8_lossy(&out_b.stderr);
    assert_eq!(
        out_a.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out_a.stderr)
    );
    assert_eq!(out_b.status.code(), Some(0), "{err_b}");
    assert_eq!(rr_now(), original, "{err_b}");
}
