//! `oscost spawn` as a user drives it: a tiny run with every case and its counts, bad input,
//! and the process limit hit before and during the run. No timing assertions: only what was
//! created, reaped and counted, and what the command did.

mod common;
use common::is_root;
use common::oscost;
use common::{read_doc, run_limited};

use oscost_model::case::SINGLE_THREAD_CHECK;
use std::path::Path;
use std::time::{Duration, Instant};

/// Processes (thread-group leaders) whose `TMPDIR` is `dir` or a directory in it: the oscost
/// processes of one test's run (the coordinator hands each measuring process a private
/// directory inside its own TMPDIR; the programs the exec cases start get an empty
/// environment and are waited for by the measuring process).
fn processes_with_tmpdir(dir: &Path) -> Vec<i32> {
    let exact = format!("TMPDIR={}", dir.display());
    let inside = format!("{exact}/");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .any(|v| v == exact.as_bytes() || v.starts_with(inside.as_bytes()))
            })
        })
        .collect()
}

/// A private TMPDIR that `nobody` may use too.
fn open_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

#[test]
fn a_tiny_run_has_every_case_with_sane_figures_and_passed_checks() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    oscost()
        .env("TMPDIR", tmp.path())
        .args(["--quick", "--quiet", "--samples", "5", "spawn"])
        .args(["--parent-mib", "1,2", "--json"])
        .arg(&json)
        .assert()
        .success();
    let doc = read_doc(&json);
    let e = &doc.experiments[0];
    assert_eq!(e.name, "spawn");
    let mut expected: Vec<String> = Vec::new();
    for mib in [1, 2] {
        for op in [
            "fork",
            "vfork",
            "posix-spawn.static",
            "posix-spawn.dynamic",
            "fork-exec.static",
            "fork-exec.dynamic",
        ] {
            expected.push(format!("spawn.{op}.p{mib}mib"));
        }
    }
    expected.push("spawn.thread".into());
    // A case is measured, or not measured with its reason (a toolchain that cannot build the
    // static helper, a machine without /bin/true); never missing.
    let measured: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    for id in &expected {
        let unavailable = e.unavailable.iter().find(|u| &u.id == id);
        assert!(
            measured.contains(&id.as_str()) != unavailable.is_some(),
            "{id}: measured {measured:?}, unavailable {:?}",
            e.unavailable
        );
        if let Some(u) = unavailable {
            assert!(
                id.contains(".static.") || id.contains(".dynamic."),
                "{id}: {}",
                u.reason
            );
            assert!(!u.reason.is_empty());
        }
    }
    assert_eq!(measured.len() + e.unavailable.len(), expected.len());
    let helper = e.params["static_helper"].as_str().unwrap();
    assert!(
        helper.contains("bytes, static)") || helper.starts_with("none: "),
        "{helper}"
    );
    for c in &e.cases {
        assert!(c.samples >= 5, "{}: {} samples", c.id, c.samples);
        assert!(
            c.median_ns > 0.0 && c.min_ns > 0.0 && c.ci95_ns[0] <= c.median_ns,
            "{}: {c:?}",
            c.id
        );
        assert!(c.checks_passed, "{}: {:?}", c.id, c.checks);
        let names: Vec<&str> = c.checks.iter().map(|k| k.name.as_str()).collect();
        assert!(names.contains(&SINGLE_THREAD_CHECK), "{}: {names:?}", c.id);
        assert!(
            names.contains(&"switches_per_creation"),
            "{}: {names:?}",
            c.id
        );
        let created = c.counters["creations"];
        assert!(created >= c.samples as f64, "{}", c.id);
        if c.id == "spawn.thread" {
            assert!(names.contains(&"threads_joined"), "{names:?}");
            continue;
        }
        // Every child created was reaped, and none was left after the cases of its size.
        let reaped = c
            .checks
            .iter()
            .find(|k| k.name == "children_reaped")
            .unwrap();
        assert_eq!((reaped.expected, reaped.counted), (created, created));
        let left = c
            .checks
            .iter()
            .find(|k| k.name == "unreaped_children")
            .unwrap();
        assert_eq!(left.counted, 0.0, "{}", c.id);
        assert!(c.counters["vm_pte_kib"] > 0.0 && c.counters["rss_kib"] > 0.0);
        let mib = c.params["parent_mib"].as_u64().unwrap();
        assert!(c.id.ends_with(&format!(".p{mib}mib")), "{}", c.id);
        if c.id.contains(".static.") {
            assert_eq!(c.params["program_linking"], "static", "{}", c.id);
            assert!(c.params["program_bytes"].as_u64().unwrap() > 0);
        }
        if c.id.contains(".dynamic.") {
            assert_eq!(c.params["program"], "/bin/true");
        }
    }
    // What the larger parent adds to a fork.
    assert_eq!(e.derived.len(), 1);
    assert_eq!(e.derived[0].id, "spawn.fork.p2mib.over_p1mib");
    // The helper went with the run's private directory.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    assert!(processes_with_tmpdir(tmp.path()).is_empty());
}

#[test]
fn fork_against_mappings_counts_them_and_says_what_the_kernel_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let max: u64 = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // More than the kernel's limit allows, where it is the default (65 530) or near it.
    let too_many = (max < 1_000_000).then(|| max + 1);
    let list = match too_many {
        Some(n) => format!("50,{n}"),
        None => "50".to_owned(),
    };
    oscost()
        .args(["--quick", "--quiet", "--samples", "5", "spawn"])
        .args(["--ops", "fork", "--parent-mib", "1", "--mappings", &list])
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let doc = read_doc(&json);
    let e = &doc.experiments[0];
    let ids: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["spawn.fork.p1mib", "spawn.fork.maps50"]);
    let maps = &e.cases[1];
    assert!(maps.checks_passed, "{:?}", maps.checks);
    let added = maps
        .checks
        .iter()
        .find(|k| k.name == "mappings_added")
        .unwrap();
    // The measuring process is single-threaded: nothing else maps or unmaps meanwhile.
    assert_eq!(added.counted, 50.0, "{added:?}");
    assert!(maps.counters["map_count"] >= 50.0);
    assert_eq!(maps.params["base_parent_mib"], 1);
    let per: Vec<&str> = e.derived.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(per, ["spawn.fork.maps50.per_mapping"]);
    if let Some(n) = too_many {
        assert_eq!(e.unavailable.len(), 1, "{:?}", e.unavailable);
        let u = &e.unavailable[0];
        assert_eq!(u.id, format!("spawn.fork.maps{n}"));
        assert!(
            u.reason.contains("vm.max_map_count") && u.reason.contains("fewer --mappings"),
            "{}",
            u.reason
        );
    }
}

/// Every bad input: exit 2, one `oscost:` line naming the problem, no result file, nothing left
/// running.
#[test]
fn bad_input_exits_2_with_one_line_and_no_result() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let cases: &[(&[&str], &[&str])] = &[
        (&["--ops", "fork,teleport"], &["'teleport'", "--ops"]),
        (&["--targets", "wasm"], &["'wasm'", "--targets"]),
        (
            &["--parent-mib", "0"],
            &["`0` is not a size in MiB from 1 to 1048576"],
        ),
        (
            &["--parent-mib", "-3"],
            &["`-3` is not a size in MiB from 1 to 1048576"],
        ),
        (
            &["--parent-mib", "1,2000000"],
            &["`2000000` is not a size in MiB"],
        ),
        (
            &["--mappings", "0"],
            &["`0` is not a number of mappings from 1 to 1048576"],
        ),
        // Accepted by the parser, refused before measuring: more than the machine has.
        (
            &["--parent-mib", "1,1048576"],
            &["--parent-mib 1048576", "smaller --parent-mib"],
        ),
    ];
    for (args, needles) in cases {
        let out = oscost()
            .env("TMPDIR", tmp.path())
            .args(["--quick", "--quiet", "spawn"])
            .args(*args)
            .arg("--json")
            .arg(&json)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("oscost: "), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        for n in *needles {
            assert!(err.contains(n), "{args:?}: `{n}` missing from {err}");
        }
        assert!(!json.exists(), "{args:?} wrote a result file");
        assert!(processes_with_tmpdir(tmp.path()).is_empty(), "{args:?}");
    }
}

/// Held by every test that runs processes as `nobody`: RLIMIT_NPROC counts all of that
/// user's tasks, so one such test would use up another's slots.
static AS_NOBODY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn as_nobody() -> std::sync::MutexGuard<'static, ()> {
    AS_NOBODY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn a_process_limit_too_low_is_refused_before_measuring() {
    let _nobody = as_nobody();
    let (code, err, written) = run_limited(
        "--nproc=2:2",
        is_root(),
        &["--quiet", "spawn", "--ops", "fork"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("oscost: spawn needs about")
            && err.contains("RLIMIT_NPROC is 2 (hard 2)")
            && err.contains("ulimit -u"),
        "{err}"
    );
    assert!(!written);
}

/// Processes and threads whose real user is `uid` now.
fn user_tasks(uid: u32) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if e.file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
            .is_none()
        {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        };
        if field("Uid:") == Some(u64::from(uid)) {
            n += field("Threads:").unwrap_or(1);
        }
    }
    n
}

/// Kills and reaps a process when dropped, so a failed assertion leaves nothing running.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The limit fits when the run starts (the pre-flight check passes), then other processes of
/// the same user take the last slots: the next fork fails with EAGAIN, which names
/// RLIMIT_NPROC and how to raise it, exit 2, no result file, nothing left running. Needs root
/// to run oscost and the extra process as `nobody` (RLIMIT_NPROC counts a user's tasks, and a
/// test run as an ordinary user cannot hold its own count still).
#[test]
fn a_process_limit_hit_mid_run_names_the_limit_and_leaves_nothing() {
    if !is_root() {
        return common::skip("needs root to run oscost and a second process as nobody");
    }
    const NOBODY: u32 = 65534;
    let _nobody = as_nobody();
    let dir = open_tempdir();
    let json = dir.path().join("r.json");
    // The coordinator and its signal thread, the measuring process and one child at a time,
    // and a few slots to spare: other test runs on the machine may start processes as nobody
    // too (the blockers below outnumber the spare slots).
    const SPARE: u64 = 4;
    const BLOCKERS: u64 = 10;
    let limit = user_tasks(NOBODY) + 4 + SPARE;
    let mut limited = common::limited(&format!("--nproc={limit}:{limit}"), true);
    let oscost = common::isolate_in(&mut limited, dir.path())
        .arg(common::bin_for_nobody(dir.path()))
        .args(["--quiet", "--samples", "100000", "spawn"])
        .args(["--ops", "fork,vfork", "--parent-mib", "1", "--json"])
        .arg(&json)
        .env("TMPDIR", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("prlimit (util-linux) must be installed");
    let mut oscost = KillOnDrop(oscost);
    // prlimit and setpriv exec oscost in place: the measuring process is its child, `oscost
    // __measure`. Once it exists, the pre-flight check has passed.
    let deadline = Instant::now() + Duration::from_secs(30);
    let measuring = loop {
        // By its command line: the coordinator runs other programs first (gzip for the
        // kernel's configuration), with the same TMPDIR.
        let found = processes_with_tmpdir(dir.path()).into_iter().find(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == b"__measure"))
        });
        if let Some(pid) = found {
            break pid;
        }
        if let Some(status) = oscost.0.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            let _ = oscost.0.stderr.take().unwrap().read_to_string(&mut err);
            panic!("oscost ended before measuring: {status}: {err}");
        }
        assert!(
            Instant::now() < deadline,
            "the measuring process never started"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    let _blockers: Vec<KillOnDrop> = (0..BLOCKERS)
        .map(|_| {
            KillOnDrop(
                std::process::Command::new("setpriv")
                    .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                    .args(["sleep", "60"])
                    .spawn()
                    .expect("setpriv (util-linux) must be installed"),
            )
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = oscost.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "oscost did not stop");
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    use std::io::Read;
    oscost
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("oscost: ")
            && err.contains("the process limit was reached (RLIMIT_NPROC soft=")
            && err.contains("`ulimit -u`"),
        "{err}"
    );
    assert!(!json.exists(), "a result file was written");
    assert!(
        !Path::new(&format!("/proc/{measuring}")).exists(),
        "the measuring process {measuring} is left"
    );
    assert!(processes_with_tmpdir(dir.path()).is_empty());
}
