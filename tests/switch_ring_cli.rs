//! `oscost switch` and `oscost ring` as a user drives them: bad input, limits, a worker killed
//! mid-run, and the counted switches. No timing assertions: only what the kernel counted and
//! what the command did.

mod common;
use common::is_root;
use common::{assert_refused, oscost};
use common::{children_of, read_doc, stat_fields};

use oscost_model::case::SINGLE_THREAD_CHECK;
use oscost_model::CaseResult;
use std::path::Path;
use std::time::{Duration, Instant};

fn bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("oscost")
}

/// The command line of `pid`, NULs as spaces (empty once it is gone).
fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// Whether `pid` still exists as something other than a reaped process.
fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn bad_input_exits_2_with_one_line_and_no_result() {
    let cases: [(&[&str], &str); 6] = [
        (&["ring", "--tasks", "1"], "--tasks 1"),
        (&["ring", "--tokens", "0"], "--tokens 0"),
        (&["ring", "--tasks", "4,8", "--tokens", "4"], "--tokens 4"),
        (&["ring", "--via", "signal"], "--via"),
        (&["switch", "--via", "carrier-pigeon"], "--via"),
        (
            &["--cpus", "0", "switch", "--placement", "cross"],
            "--placement cross needs two CPUs in the CPU set (have: 0)",
        ),
    ];
    for (args, needle) in cases {
        assert_refused(oscost().args(["--quick", "--quiet"]).args(args), needle);
    }
}

/// Runs `oscost` under `prlimit` (and, as root, `setpriv` to an unprivileged user, because
/// root is exempt from RLIMIT_NPROC) and returns (exit code, stderr). Both tools come with
/// util-linux, which `.ci/run` makes sure of; a missing tool fails the test, never skips it.
fn run_limited(limit: &str, unprivileged: bool, args: &[&str]) -> (Option<i32>, String) {
    use std::os::unix::fs::PermissionsExt;
    // A history directory the unprivileged user may write.
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut cmd = common::limited(limit, unprivileged);
    let out = common::isolate_in(&mut cmd, dir.path())
        .arg(bin())
        .args(args)
        .output()
        .expect("prlimit (util-linux) must be installed");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !err.contains("prlimit:") && !err.contains("setpriv:"),
        "the limit could not be set up: {err}"
    );
    (out.status.code(), err)
}

#[test]
fn open_file_limit_is_named() {
    let args = [
        "--quick",
        "--quiet",
        "ring",
        "--via",
        "pipe",
        "--kind",
        "processes",
        "--tasks",
        "512",
    ];
    let (code, err) = run_limited("--nofile=256:256", false, &args);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("RLIMIT_NOFILE") && err.contains("ulimit -n"),
        "{err}"
    );
    assert!(err.contains("of 512"), "{err}");
}

#[test]
fn process_limit_is_named() {
    // RLIMIT_NPROC counts the user's processes and is not enforced for root (CAP_SYS_ADMIN /
    // CAP_SYS_RESOURCE), so as root the run drops to `nobody` first.
    let unprivileged = is_root();
    for kind in ["processes", "threads"] {
        let args = [
            "--quick", "--quiet", "ring", "--kind", kind, "--tasks", "96",
        ];
        let (code, err) = run_limited("--nproc=48:48", unprivileged, &args);
        assert_eq!(code, Some(2), "{kind}: {err}");
        // The pre-flight check now refuses the ring before any task starts (tests/limits.rs);
        // the mid-spawn message stays as the backstop.
        assert!(
            err.contains("ring --tasks 96 needs about") && err.contains("RLIMIT_NPROC is 48")
                || err.contains("the process limit was reached (RLIMIT_NPROC soft=48")
                    && err.contains("of 96"),
            "{kind}: {err}"
        );
        assert!(err.contains("ulimit -u"), "{kind}: {err}");
    }
}

/// Starts `oscost --quiet ring --kind processes --tasks TASKS` and waits until its first ring's
/// `want` worker processes exist; returns the running command and their pids. The workers are
/// children of the measuring process, which is oscost's child.
fn start_process_ring(tasks: &str, want: usize) -> (std::process::Child, Vec<i32>) {
    let child = common::oscost_std()
        .args(["--quiet", "ring", "--kind", "processes", "--tasks", tasks])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let oscost_pid = child.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(30);
    let workers = loop {
        let w: Vec<i32> = children_of(oscost_pid)
            .into_iter()
            .flat_map(children_of)
            .collect();
        if w.len() >= want || Instant::now() > deadline {
            break w;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(workers.len() >= want, "workers never appeared: {workers:?}");
    (child, workers)
}

#[test]
fn a_killed_worker_fails_the_run_and_the_rest_are_reaped() {
    // Distinct sizes (repeats collapse into one ring): the run lasts long enough for the kill
    // to land mid-run.
    let (child, workers) = start_process_ring("8,9,10,11,12,13,14,15", 7);
    let victim = workers[3];
    std::process::Command::new("kill")
        .args(["-KILL", &victim.to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "worker process {victim} was killed by signal 9 (SIGKILL)"
        )),
        "{err}"
    );
    for pid in workers {
        assert!(!alive(pid), "worker {pid} outlived oscost");
    }
}

#[test]
fn same_cpu_ping_pong_counts_two_switches_per_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let cpu = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| s.split([',', '-']).next()?.trim().parse::<usize>().ok())
        .unwrap_or(0)
        .to_string();
    oscost()
        .args([
            "--quick",
            "--quiet",
            "--samples",
            "5",
            "--cpus",
            &cpu,
            "switch",
        ])
        .args(["--via", "pipe,futex,yield", "--kind", "threads,processes"])
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let doc = read_doc(&json);
    let all = &doc.experiments[0].cases;
    let cases: Vec<&CaseResult> = all.iter().filter(|c| c.unit == "round trip").collect();
    assert_eq!(cases.len(), 6);
    let cpu_n: u64 = cpu.parse().unwrap();
    for c in cases {
        let per_rt = *c
            .counters
            .get("switches_per_round_trip")
            .unwrap_or_else(|| panic!("{}: no switches_per_round_trip", c.id));
        assert!(per_rt >= 1.9, "{}: {per_rt}", c.id);
        assert_eq!(
            c.params.get("cpus"),
            Some(&serde_json::json!([[cpu_n], [cpu_n]])),
            "{}",
            c.id
        );
    }
    // The one-task controls were timed with one thread in the process, although the same
    // measuring process ran the thread ping-pongs.
    let controls: Vec<&CaseResult> = all.iter().filter(|c| c.id.ends_with(".control")).collect();
    assert_eq!(
        controls.len(),
        3,
        "{:?}",
        all.iter().map(|c| &c.id).collect::<Vec<_>>()
    );
    for c in controls {
        let k = c
            .checks
            .iter()
            .find(|k| k.name == SINGLE_THREAD_CHECK)
            .unwrap_or_else(|| panic!("{}: no {SINGLE_THREAD_CHECK} check", c.id));
        assert!(k.passed && k.counted == 1.0, "{}: {k:?}", c.id);
    }
}

#[test]
fn verify_order_is_recorded_and_passes() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    oscost()
        .args([
            "--quick",
            "--quiet",
            "ring",
            "--tasks",
            "5",
            "--tokens",
            "2",
            "--verify-order",
        ])
        .args(["--kind", "processes"])
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let doc = read_doc(&json);
    let case = doc.experiments[0]
        .cases
        .iter()
        .find(|c| c.id == "ring.pipe.processes.n5.k2.s0")
        .unwrap();
    let check = case
        .checks
        .iter()
        .find(|c| c.name == "visit_order_violations")
        .unwrap();
    assert!(check.passed, "{check:?}");
    assert_eq!(case.series[0].name, "visit_order");
}

/// A repeated value gives one case, never two cases with one id.
#[test]
fn repeated_values_give_unique_case_ids() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    oscost()
        .args(["--quick", "--quiet", "switch", "--via", "pipe,eventfd,pipe"])
        .args(["--kind", "threads,threads", "--json"])
        .arg(&json)
        .assert()
        .success();
    let doc = read_doc(&json);
    let ids: Vec<String> = doc.experiments[0]
        .cases
        .iter()
        .map(|c| c.id.clone())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    assert!(ids.contains(&"switch.pipe.threads.same".to_owned()));
}

/// Two Ctrl-Cs in a row: the second exits at once, but only after killing and reaping every
/// worker process, so none outlives oscost and none is left for init to reap.
#[test]
fn a_second_ctrl_c_kills_and_reaps_every_worker() {
    let (child, workers) = start_process_ring("32,33,34,35", 31);
    let oscost_pid = child.id();
    for _ in 0..2 {
        std::process::Command::new("kill")
            .args(["-INT", &oscost_pid.to_string()])
            .status()
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    for pid in workers {
        assert!(!alive(pid), "worker {pid} outlived oscost");
    }
}

/// The measuring process running the ring: the one child of `oscost_pid` that is
/// `oscost __measure`.
fn measuring_process(oscost_pid: i32) -> i32 {
    let found: Vec<i32> = children_of(oscost_pid)
        .into_iter()
        .filter(|&pid| cmdline(pid).contains("__measure"))
        .collect();
    assert_eq!(found.len(), 1, "one measuring process expected: {found:?}");
    found[0]
}

/// SIGTERM to oscost mid-run: exit 130, and neither the measuring process nor any worker is
/// left, not even as a zombie (the coordinator reaps what it started).
#[test]
fn sigterm_mid_ring_interrupts_and_leaves_no_process() {
    let (child, workers) = start_process_ring("8,9,10,11,12,13,14,15", 7);
    let oscost_pid = child.id() as i32;
    let measuring = measuring_process(oscost_pid);
    // The workers are the measuring process's children (one that already ended with its ring
    // has no parent left to show).
    for &w in &workers {
        if let Some(ppid) = stat_fields(w).and_then(|f| f.get(1)?.parse::<i32>().ok()) {
            assert_eq!(ppid, measuring, "worker {w} is not a child of {measuring}");
        }
    }
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &oscost_pid.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(
        !alive(measuring),
        "the measuring process {measuring} outlived oscost ({:?})",
        stat_fields(measuring)
    );
    for pid in workers {
        assert!(
            !alive(pid),
            "worker {pid} outlived oscost ({:?})",
            stat_fields(pid)
        );
    }
}

/// SIGTERM to one worker: the run fails naming that worker and its signal, and the others are
/// stopped and reaped.
#[test]
fn a_worker_killed_by_sigterm_fails_the_run_and_the_rest_are_reaped() {
    let (child, workers) = start_process_ring("8,9,10,11,12,13,14,15", 7);
    let oscost_pid = child.id() as i32;
    let measuring = measuring_process(oscost_pid);
    let victim = workers[3];
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &victim.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "worker process {victim} was killed by signal 15 (SIGTERM)"
        )),
        "{err}"
    );
    assert!(
        !alive(measuring),
        "the measuring process {measuring} outlived oscost"
    );
    for pid in workers {
        assert!(
            !alive(pid),
            "worker {pid} outlived oscost ({:?})",
            stat_fields(pid)
        );
    }
}

/// Where BPF is refused (here: root without CAP_BPF and CAP_SYS_ADMIN, in a mount namespace of
/// its own with tracefs mounted, so an ftrace instance and perf_event_open still work), the
/// traced pass is made by the next mechanism and one line says so and why; the stages case
/// names its mechanism.
#[test]
fn a_refused_bpf_falls_back_and_says_why() {
    let tools = ["unshare", "setpriv"].iter().all(|t| {
        std::process::Command::new(t)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !is_root() || !tools {
        return common::skip("needs root, unshare and setpriv");
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let script = format!(
        "{{ mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing; }} \
         && exec setpriv --bounding-set \
         -bpf,-sys_admin --inh-caps -bpf,-sys_admin {} --quick --quiet --samples 5 switch \
         --via pipe --kind threads --trace-with bpf --json {}",
        bin().display(),
        json.display()
    );
    // Through unshare and setpriv, oscost still saves into the tests' own history.
    let out = common::isolate(&mut std::process::Command::new("unshare"))
        .args(["-m", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let doc = read_doc(&json);
    let e = &doc.experiments[0];
    let stages = e
        .cases
        .iter()
        .find(|c| c.id.ends_with(".stages"))
        .unwrap_or_else(|| panic!("no stages case: {:?}", e.unavailable));
    let used = &stages.trace.as_ref().unwrap().mechanism;
    assert!(used == "ftrace" || used == "perf", "{used}");
    assert_eq!(e.params["kernel_view_mechanism"], used.as_str());
    let said: Vec<String> = e
        .notes
        .iter()
        .map(|n| n.to_string())
        .filter(|n| n.contains("not by BPF"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", e.notes);
    assert!(
        !said[0].contains('\n') && said[0].contains("refused"),
        "{}",
        said[0]
    );
}
