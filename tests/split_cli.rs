//! `oscost split` through the binary: a tiny run's self-consistency (the work sums to W in
//! every form, N distinct tasks did it, one flow ran in a single-threaded process), its
//! tables, bad input, and a process limit hit while the tasks are being created. No timing
//! assertions.

mod common;
use common::oscost;
use common::{assert_nothing_left, is_root, processes_with};

use oscost_model::ResultDoc;
use std::time::{Duration, Instant};

#[test]
fn every_form_does_exactly_the_work_and_the_tables_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = oscost()
        .env("TMPDIR", dir.path())
        .args([
            "split",
            "--work",
            "5ms",
            "--step",
            "100us",
            "--tasks",
            "1,4",
            "--repeats",
            "2",
            "--yield",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: ResultDoc =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("a result");
    let e = &doc.experiments[0];
    let units = e.params["work_units"].as_u64().unwrap();
    assert!(units > 0);
    assert_eq!(e.params["baseline"], "split.single.one.1.yield");
    let ncpus = e
        .cases
        .iter()
        .filter_map(|c| c.params["cpu_count"].as_u64())
        .max();
    // single 1,4 + threads and processes on one CPU (1,4), and with 2+ CPUs on all (1,4) and
    // balanced (4).
    let expected = if ncpus >= Some(2) {
        2 + 2 * 5
    } else {
        2 + 2 * 2
    };
    assert_eq!(
        e.cases.len(),
        expected,
        "{:?}",
        e.cases.iter().map(|c| &c.id).collect::<Vec<_>>()
    );
    for c in &e.cases {
        assert!(c.checks_passed, "{}: {:?}", c.id, c.checks);
        let n = c.params["tasks"].as_u64().unwrap();
        let names: Vec<&str> = c.checks.iter().map(|k| k.name.as_str()).collect();
        assert!(names.contains(&"work_units_done"), "{}", c.id);
        if c.params["form"] == "single" {
            assert!(names.contains(&"threads_in_process"), "{}", c.id);
        } else {
            let k = c
                .checks
                .iter()
                .find(|k| k.name == "distinct_tasks")
                .unwrap();
            assert_eq!(k.counted, n as f64, "{}", c.id);
        }
        let runs = c.series.iter().find(|s| s.name == "runs").unwrap();
        assert_eq!(runs.points.len(), 2, "{}", c.id);
        let col = |name: &str| runs.columns.iter().position(|c| c == name).unwrap();
        for r in &runs.points {
            assert_eq!(r[col("units")], units as f64, "{}", c.id);
            // The run contains its work; creation and joining only add to it.
            assert!(r[col("total_ns")] >= r[col("work_ns")], "{}: {r:?}", c.id);
            assert!(r[col("cpu_ns")] > 0.0, "{}", c.id);
        }
        // Every task yielded after every step, so a task with company switched.
        assert!(c.counters["steps"] >= n as f64, "{}", c.id);
    }
    assert!(
        stdout.contains("split on one CPU: time against the ideal"),
        "{stdout}"
    );
    assert!(stdout.contains("T1 = "), "{stdout}");
    assert_nothing_left(&dir.path().to_string_lossy());
}

/// The online CPUs, in order.
fn online_cpus() -> Vec<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let mut out = Vec::new();
    for part in text.trim().split(',') {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<usize>().unwrap()..=b.parse().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out
}

/// A tiny yielding threads run of `--sets one,two` with the given `--cpus`, if any.
fn run_two(cpus: Option<&str>) -> oscost_model::ExperimentResult {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut cmd = oscost();
    cmd.env("TMPDIR", dir.path()).arg("--quiet");
    if let Some(c) = cpus {
        cmd.args(["--cpus", c]);
    }
    let out = cmd
        .args(["split", "--form", "threads", "--yield", "--sets", "one,two"])
        .args(["--tasks", "1,2,4", "--work", "4ms", "--step", "100us"])
        .args(["--repeats", "1", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_nothing_left(&dir.path().to_string_lossy());
    let doc: ResultDoc = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    doc.experiments.into_iter().next().unwrap()
}

#[test]
fn the_two_set_runs_on_the_first_two_cpus_or_says_why_not() {
    let online = online_cpus();
    if online.len() >= 2 {
        let e = run_two(None);
        let first_two = format!("{}-{}", online[0], online[1]);
        let first_two_listed = format!("{},{}", online[0], online[1]);
        for n in [1, 2, 4] {
            let id = format!("split.threads.two.{n}.yield");
            let c = e.cases.iter().find(|c| c.id == id).unwrap_or_else(|| {
                panic!(
                    "{id} missing: {:?}",
                    e.cases.iter().map(|c| &c.id).collect::<Vec<_>>()
                )
            });
            assert_eq!(c.params["set"], "two", "{id}");
            assert_eq!(c.params["cpu_count"], 2, "{id}");
            let cpus = c.params["cpus"].as_str().unwrap();
            assert!(
                cpus == first_two || cpus == first_two_listed,
                "{id}: {cpus}"
            );
            assert!(c.checks_passed, "{id}: {:?}", c.checks);
        }
        assert!(e.unavailable.is_empty(), "{:?}", e.unavailable);
    }
    // One CPU: every `two` point is named unavailable with one line why; `one` still runs.
    let e = run_two(Some(&online[0].to_string()));
    assert!(!e.cases.iter().any(|c| c.params["set"] == "two"));
    assert!(e.cases.iter().any(|c| c.id == "split.threads.one.2.yield"));
    let ids: Vec<&str> = e.unavailable.iter().map(|u| u.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "split.threads.two.1.yield",
            "split.threads.two.2.yield",
            "split.threads.two.4.yield"
        ]
    );
    for u in &e.unavailable {
        assert_eq!(u.reason.lines().count(), 1, "{}", u.reason);
        assert!(u.reason.contains("needs two CPUs"), "{}", u.reason);
    }
}

/// A failed run: [`common::assert_refused`], no warning either, and no process of it left.
fn assert_refused(args: &[&str], needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let err = common::assert_refused(
        oscost().env("TMPDIR", dir.path()).arg("--quiet").args(args),
        needle,
    );
    assert_eq!(err.lines().count(), 1, "{args:?}: one line expected: {err}");
    assert_nothing_left(&dir.path().to_string_lossy());
}

#[test]
fn bad_input_gets_one_line_and_exit_2() {
    let cases: [(&[&str], &str); 7] = [
        (&["split", "--tasks", "0"], "--tasks 0"),
        (&["split", "--work", "0"], "--work"),
        (
            &["split", "--work", "1ms", "--step", "2ms"],
            "--step 2ms is larger",
        ),
        (&["split", "--form", "fibers"], "--form"),
        (&["split", "--repeats", "0"], "--repeats"),
        (&["split", "--tasks", "8..2"], "--tasks"),
        (&["--cpus", "4095", "split"], "4095"),
    ];
    for (args, needle) in cases {
        assert_refused(args, needle);
    }
}

/// RLIMIT_NPROC counts every process and thread of the user, so a limit that leaves room
/// when the run starts can be reached while the tasks are created, when other processes of
/// the same user appear meanwhile. As root the run and those processes drop to `nobody`
/// (root is exempt from the limit).
#[test]
fn a_process_limit_hit_while_creating_tasks_is_named_and_everything_is_reaped() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let json = dir.path().join("r.json");
    // A normal user's own processes and threads (these tests') count against the limit too,
    // and vary while the tests run: only root can run oscost as a user whose count it knows.
    if !is_root() {
        return common::skip("needs root to run oscost as nobody under a process limit");
    }
    let unprivileged = is_root();
    let mut cmd = common::limited("--nproc=48:48", unprivileged);
    // The baseline and one thread run first (about 2 s of work), then 40 threads: room for
    // them when the run starts, none once the sleepers below exist.
    let run = common::isolate_in(&mut cmd, dir.path())
        .arg(common::bin_for_nobody(dir.path()))
        .args([
            "--quiet",
            "split",
            "--work",
            "1s",
            "--tasks",
            "1,40",
            "--sets",
            "one",
            "--form",
            "threads",
            "--repeats",
            "1",
            "--json",
        ])
        .arg(&json)
        .env("TMPDIR", dir.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("prlimit (util-linux) must be installed");
    std::thread::sleep(Duration::from_millis(400));
    let mut sleepers: Vec<std::process::Child> = (0..20)
        .map(|_| {
            let mut s = common::limited("--nproc=1000:1000", unprivileged);
            s.args(["sleep", "30"]).spawn().unwrap()
        })
        .collect();
    let out = run.wait_with_output().unwrap();
    for s in &mut sleepers {
        let _ = s.kill();
        let _ = s.wait();
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("split.threads.one.40")
            && err.contains("the process limit was reached (RLIMIT_NPROC soft=48")
            && err.contains("ulimit -u"),
        "{err}"
    );
    assert!(!json.exists());
    assert_nothing_left(&dir.path().to_string_lossy());
}

#[test]
fn help_names_the_forms_sets_and_yield() {
    let out = oscost().args(["split", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for word in [
        "--form", "--tasks", "--work", "--step", "--yield", "--sets", "balanced", "two",
    ] {
        assert!(help.contains(word), "{word}: {help}");
    }
}

/// SIGTERM to oscost while 16 worker processes share the work: exit 130, and neither the
/// measuring process nor any worker is left, not even as a zombie.
#[test]
fn sigterm_mid_split_interrupts_and_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().to_string_lossy().into_owned();
    let child = common::oscost_std()
        .args([
            "--quiet",
            "split",
            "--form",
            "processes",
            "--tasks",
            "16",
            "--sets",
            "one",
            "--work",
            "2s",
            "--repeats",
            "1",
        ])
        .env("TMPDIR", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // oscost, the measuring process and the 16 workers (after the 2 s baseline).
    let deadline = Instant::now() + Duration::from_secs(60);
    while processes_with(&marker).len() < 18 {
        assert!(Instant::now() < deadline, "the workers never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert_nothing_left(&marker);
}
