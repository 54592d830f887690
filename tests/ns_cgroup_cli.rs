//! `oscost ns` and `oscost cgroup` as a user drives them: tiny runs whose children are checked
//! to be in new namespaces and in the new cgroups, the same runs as `nobody` (what is refused
//! said in one line, every other figure there), a cgroup a killed run left removed by the next
//! run, and bad input refused. No timing assertions.

mod common;
use common::{assert_args_refused, oscost, read_doc, tiny_run};
use oscost_model::ExperimentResult;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every case measured or said, each measured one's checks passed, each derived over the
/// bare child.
fn assert_ns_sound(e: &ExperimentResult, in_user: bool) {
    assert_eq!(e.cases[0].id, "ns.none");
    let all = [
        "mount",
        "uts",
        "ipc",
        "pid",
        "net",
        "net.lo",
        "user",
        "cgroup",
        "time",
        "container",
    ];
    for what in all {
        let id = if in_user && what != "user" {
            format!("ns.{what}.in-user")
        } else {
            format!("ns.{what}")
        };
        let measured = e.cases.iter().any(|c| c.id == id);
        let said = e.unavailable.iter().any(|u| u.id == id);
        assert!(measured != said, "{id}: measured {measured}, said {said}");
        if measured {
            let over = format!("{id}.over_none");
            assert!(e.derived.iter().any(|d| d.id == over), "{over} missing");
        }
    }
    for c in &e.cases {
        for k in &c.checks {
            assert!(k.passed, "{}: {k:?}", c.id);
        }
        assert!(c.median_ns > 0.0, "{}", c.id);
        if c.id != "ns.none" {
            assert!(
                c.checks.iter().any(|k| k.name == "in_new_namespaces"),
                "{}",
                c.id
            );
        }
    }
}

#[test]
fn ns_makes_each_kind_in_a_fresh_child_and_checks_it_is_new() {
    let e = tiny_run(&["ns"]);
    assert_ns_sound(&e, !common::is_root());
    if common::is_root() {
        // As root every kind this kernel has is measured directly; only a kernel without
        // time namespaces lists one.
        assert!(
            e.unavailable.iter().all(|u| u.id == "ns.time"),
            "{:?}",
            e.unavailable
        );
        assert!(e.params["net_namespaces_made"].as_u64().unwrap() > 0);
    }
}

/// Runs oscost as `nobody` with ARGS and returns its one experiment's result and stderr.
fn as_nobody(args: &[&str]) -> (ExperimentResult, String) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let json = dir.path().join("r.json");
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
    let out = common::isolate_in(&mut cmd, dir.path())
        .arg(common::bin_for_nobody(dir.path()))
        .args(["--quick", "--samples", "5"])
        .args(args)
        .arg("--json")
        .arg(&json)
        .env("TMPDIR", dir.path())
        .output()
        .expect("setpriv (util-linux) must be installed");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    (read_doc(&json).experiments.remove(0), err)
}

#[test]
fn nobody_makes_namespaces_through_a_user_namespace_or_is_told_why_not() {
    if !common::is_root() {
        return common::skip("needs root to run oscost as nobody");
    }
    let (e, _) = as_nobody(&["ns", "--cases", "uts,net-lo,user,container"]);
    assert_eq!(e.params["cap_sys_admin"], false);
    let want = [
        "ns.uts.in-user",
        "ns.net.lo.in-user",
        "ns.user",
        "ns.container.in-user",
    ];
    for id in want {
        let measured = e.cases.iter().any(|c| c.id == id);
        let said = e.unavailable.iter().find(|u| u.id == id);
        assert!(measured != said.is_some(), "{id}");
        if let Some(u) = said {
            assert!(u.reason.contains("user namespaces"), "{}", u.reason);
        }
    }
    let said: Vec<String> = e.warnings.iter().map(|w| w.to_string()).collect();
    assert!(
        said.iter().any(|w| w.contains("no CAP_SYS_ADMIN")),
        "{said:?}"
    );
    for c in &e.cases {
        for k in &c.checks {
            assert!(k.passed, "{}: {k:?}", c.id);
        }
    }
}

/// Every cgroup directory named `oscost-<pid>-…` under /sys/fs/cgroup (two levels down).
fn oscost_cgroups(pid: Option<u32>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let prefix = pid.map_or("oscost-".to_owned(), |p| format!("oscost-{p}-"));
    let Ok(top) = std::fs::read_dir("/sys/fs/cgroup") else {
        return found;
    };
    for h in top.flatten() {
        let Ok(inner) = std::fs::read_dir(h.path()) else {
            continue;
        };
        for d in inner.flatten() {
            if d.file_name().to_string_lossy().starts_with(&prefix) {
                found.push(d.path());
            }
        }
    }
    found
}

#[test]
fn cgroup_measures_or_says_why_and_removes_what_it_made() {
    let e = tiny_run(&["cgroup"]);
    let mut ids: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    ids.extend(e.unavailable.iter().map(|u| u.id.as_str()));
    ids.sort_unstable();
    let mut want = oscost_model::ids::cgroup::CASES.to_vec();
    want.sort_unstable();
    assert_eq!(ids, want);
    assert_eq!(e.cases[0].id, "cgroup.fork");
    for c in &e.cases {
        for k in &c.checks {
            assert!(k.passed, "{}: {k:?}", c.id);
        }
    }
    if common::is_root() && e.params["cpu_hierarchy"] != "none" {
        for id in ["cgroup.fork-procs", "cgroup.pipe.same", "cgroup.pipe.cross"] {
            assert!(
                e.cases.iter().any(|c| c.id == id),
                "{id} not measured as root"
            );
        }
        let cross = e
            .cases
            .iter()
            .find(|c| c.id == "cgroup.pipe.cross")
            .unwrap();
        assert!(cross.counters["switches_per_round_trip"] >= 0.9);
        assert!(e
            .derived
            .iter()
            .any(|d| d.id == "cgroup.pipe.cross.over_same"));
    }
}

#[test]
fn nobody_is_told_why_no_cgroup_and_still_gets_the_fork() {
    if !common::is_root() {
        return common::skip("needs root to run oscost as nobody");
    }
    let (e, _) = as_nobody(&["cgroup"]);
    let ids: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["cgroup.fork"]);
    assert!(e.cases[0].checks.iter().all(|k| k.passed));
    assert_eq!(e.unavailable.len(), 4, "{:?}", e.unavailable);
    for u in &e.unavailable {
        assert!(
            u.reason.contains("refused") || u.reason.contains("no cgroup"),
            "{}: {}",
            u.id,
            u.reason
        );
    }
}

/// `kill -9` of a run while its cgroups exist: the next run, of another experiment, removes
/// them and says so in one line; nothing of the killed run is left running.
#[test]
fn a_cgroup_left_by_a_killed_run_is_removed_by_the_next() {
    if !common::is_root() || !Path::new("/sys/fs/cgroup").is_dir() {
        return common::skip("needs root and a cgroup file system");
    }
    let settings = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut run = common::oscost_std()
        .env("OSCOST_SETTINGS_DIR", settings.path())
        .env("TMPDIR", tmp.path())
        .args(["--quiet", "--no-save", "--samples", "200", "cgroup"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A recorded cgroup that exists: the record is written before the mkdir.
    let t0 = Instant::now();
    let made = loop {
        let recorded = std::fs::read_dir(settings.path())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|f| f.path().extension() == Some("cgroup".as_ref()))
            .filter_map(|f| {
                let text = std::fs::read_to_string(f.path()).ok()?;
                let path = text.lines().find_map(|l| l.strip_prefix("path "))?;
                Some(PathBuf::from(path))
            })
            .find(|p| p.is_dir());
        if let Some(p) = recorded {
            break p;
        }
        if let Some(status) = run.try_wait().unwrap() {
            // A machine where no cgroup can be made: the run said why and ended.
            return common::skip(&format!("needs a cgroup the run can make ({status})"));
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "no cgroup made");
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = Command::new("kill")
        .args(["-KILL", &run.id().to_string()])
        .status();
    run.wait().unwrap();
    // The measuring process (whose pid names the cgroup) dies with its coordinator, a moment
    // later: until then it is a live holder, rightly left alone.
    let pid: u32 = made
        .file_name()
        .unwrap()
        .to_string_lossy()
        .split('-')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let gone = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    };
    let t0 = Instant::now();
    while !gone() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "measuring process {pid} lives on"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = oscost()
        .env("OSCOST_SETTINGS_DIR", settings.path())
        .env("TMPDIR", tmp.path())
        .args([
            "--quick",
            "--quiet",
            "--no-save",
            "syscall",
            "--calls",
            "getpid",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{err}");
    assert!(!made.exists(), "{} is still there: {err}", made.display());
    assert!(
        err.contains(&format!("removed the cgroup {}", made.display())),
        "{err}"
    );
    // The killed run's other cgroups went too.
    assert!(oscost_cgroups(Some(pid)).is_empty());
}

#[test]
fn bad_cases_are_refused() {
    assert_args_refused(&["ns", "--cases", "nosuch"], "nosuch");
}
