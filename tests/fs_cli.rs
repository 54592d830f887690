//! `oscost fs` as a user drives it: a tiny run whose ids, differences and request counts hang
//! together, the FUSE side ruled out, bad input, an interrupted run, and the serving role on
//! its own. No timing assertions; after every run no mount and no process of it is left.

mod common;
use common::oscost;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Lines of this process's mount table that are oscost's (its FUSE file system or tmpfs).
/// oscost's mounts under `dir` (a run's TMPDIR): another test of this file, running at the
/// same time, may have a mount of its own elsewhere.
fn oscost_mounts_under(dir: &str) -> Vec<String> {
    oscost_mounts()
        .into_iter()
        .filter(|m| {
            m.split_whitespace()
                .nth(4)
                .is_some_and(|p| p.starts_with(dir))
        })
        .collect()
}

fn oscost_mounts() -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains("oscost-fuse") || l.contains("oscost-tmpfs"))
        .map(str::to_owned)
        .collect()
}

/// Whether FUSE can be mounted by this user here (what the experiment itself checks first).
fn fuse_usable() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .is_ok()
        && (common::is_root()
            || std::env::var_os("PATH")
                .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("fusermount3").exists())))
}

const CALLS: [&str; 3] = ["getpid", "open-close", "read64k"];

#[test]
fn a_tiny_run_has_both_sides_their_difference_and_the_requests_counted() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let marker = tmp.path().display().to_string();
    oscost()
        .env("TMPDIR", tmp.path())
        .args(["--quick", "--quiet", "--samples", "5", "fs", "--calls"])
        .arg(CALLS.join(","))
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let doc = common::read_doc(&json);
    let e = &doc.experiments[0];
    assert_eq!(e.name, "fs");
    assert_eq!(e.params["rate_per_s"], 10000.0);
    let fuse = fuse_usable();
    for call in CALLS {
        let k = e.cases.iter().find(|c| c.id == format!("fs.tmpfs.{call}"));
        let k = k.unwrap_or_else(|| panic!("fs.tmpfs.{call} missing"));
        assert!(k.median_ns > 0.0 && k.checks_passed, "{k:?}");
        assert_eq!(k.unit, "call");
        let id = format!("fs.fuse.{call}");
        if !fuse {
            let u = e
                .unavailable
                .iter()
                .find(|u| u.id == id)
                .expect("fuse case");
            assert!(!u.reason.is_empty());
            continue;
        }
        let u = e.cases.iter().find(|c| c.id == id).expect("fuse case");
        assert!(u.checks_passed, "{:?}", u.checks);
        let requests = u.counters["fuse_requests_per_call"];
        match call {
            "getpid" => assert!(requests < 0.01, "{requests}"),
            "read64k" => assert!((u.counters["fuse_read_per_call"] - 1.0).abs() < 0.01),
            _ => assert!(requests >= 2.0, "{requests}"),
        }
        let d = e
            .derived
            .iter()
            .find(|d| d.id == format!("fs.diff.{call}"))
            .expect("difference");
        assert_eq!(d.terms, [(id.clone(), 1.0), (k.id.clone(), -1.0)]);
        let want = u.median_ns - k.median_ns;
        assert!(
            (d.estimate_ns - want).abs() <= 1e-6 * want.abs().max(1.0),
            "{} vs {want}",
            d.estimate_ns
        );
        assert!(d.flagged.is_none());
    }
    if fuse {
        // A request is a round trip to another process: no file call is cheaper through it.
        let m = |id: &str| e.cases.iter().find(|c| c.id == id).unwrap().median_ns;
        assert!(m("fs.fuse.open-close") > m("fs.tmpfs.open-close"));
    }
    assert!(
        oscost_mounts_under(&marker).is_empty(),
        "{:?}",
        oscost_mounts()
    );
    common::assert_nothing_left(&marker);
}

#[test]
fn without_fuse_its_cases_say_why_and_tmpfs_is_still_measured() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    // Its own temporary directory, so that its mounts are told from a parallel test's (a
    // user who is not root mounts in the namespace every test shares).
    let out = oscost()
        .env("TMPDIR", dir.path())
        .args([
            "--quick",
            "--samples",
            "5",
            "fs",
            "--no-fuse",
            "--calls",
            "lseek",
        ])
        .args(["--no-save", "--json"])
        .arg(&json)
        .assert()
        .success()
        .get_output()
        .clone();
    let doc = common::read_doc(&json);
    let e = &doc.experiments[0];
    assert_eq!(
        e.cases.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["fs.tmpfs.lseek"]
    );
    assert_eq!(e.unavailable.len(), 1);
    assert_eq!(e.unavailable[0].id, "fs.fuse.lseek");
    assert!(e.unavailable[0].reason.contains("--no-fuse"));
    assert!(e.derived.is_empty());
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("fs.fuse.lseek"), "{text}");
    let mine = oscost_mounts_under(&dir.path().to_string_lossy());
    assert!(mine.is_empty(), "{mine:?}");
}

#[test]
fn bad_values_are_one_line_and_exit_2() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["--calls", "fsync"], &["fsync"]),
        (&["--calls", ""], &["calls"]),
        (&["--rate", "0"], &["rate", "0"]),
        (&["--rate", "lots"], &["lots"]),
        (&["--rate", "-1"], &["-1"]),
    ];
    for (args, needles) in cases {
        let out = oscost()
            .args(["--quick", "--quiet", "--no-save", "fs"])
            .args(*args)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        for n in *needles {
            assert!(err.contains(n), "{args:?}: `{n}` missing from {err}");
        }
    }
}

#[test]
fn an_interrupted_run_leaves_no_mount_and_no_process() {
    if !fuse_usable() {
        return common::skip("needs /dev/fuse, and root or fusermount3");
    }
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().display().to_string();
    let mut child = common::oscost_std()
        .env("TMPDIR", tmp.path())
        .args(["--quiet", "--no-save", "fs"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Interrupt once the FUSE server is up.
    let deadline = Instant::now() + Duration::from_secs(20);
    let server_up = || {
        common::processes_with(&marker).iter().any(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("__fuse-serve"))
        })
    };
    while !server_up() {
        assert!(Instant::now() < deadline, "the FUSE server never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(
        oscost_mounts_under(&marker).is_empty(),
        "{:?}",
        oscost_mounts()
    );
    common::assert_nothing_left(&marker);
}

#[test]
fn the_serving_role_mounts_and_unmounts_when_its_input_ends() {
    if !fuse_usable() {
        return common::skip("needs /dev/fuse, and root or fusermount3");
    }
    let dir = tempfile::tempdir().unwrap();
    let mut server = common::oscost_std()
        .arg("__fuse-serve")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    let file = dir.path().join("f");
    std::fs::write(&file, b"hello").unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), b"hello");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["f"]);
    std::fs::remove_file(&file).unwrap();
    assert!(oscost_mounts()
        .iter()
        .any(|l| l.contains(&*dir.path().to_string_lossy())));
    {
        use std::io::Write;
        let mut input = server.stdin.take().unwrap();
        writeln!(input, "count").unwrap();
        input.flush().unwrap();
        line.clear();
        out.read_line(&mut line).unwrap();
        let counts: std::collections::BTreeMap<String, u64> = serde_json::from_str(&line).unwrap();
        assert!(counts["write"] >= 1 && counts["read"] >= 1 && counts["unlink"] == 1);
    } // input dropped: the server unmounts and exits
    let status = server.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let mine = oscost_mounts_under(&dir.path().to_string_lossy());
    assert!(mine.is_empty(), "{mine:?}");
    assert!(Path::new(dir.path()).read_dir().unwrap().next().is_none());
}

/// The pid of the FUSE server among the processes carrying `marker`, once it is up.
fn fuse_server(marker: &str) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = common::processes_with(marker).into_iter().find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("__fuse-serve"))
        });
        if let Some(pid) = found {
            return pid;
        }
        assert!(Instant::now() < deadline, "the FUSE server never started");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn kill(sig: &str, pid: impl std::fmt::Display) {
    let sent = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

/// A stopped server (what a deadlocked one looks like) holds the measuring process in an
/// uninterruptible wait: the first Ctrl-C still ends the run, naming the server, and nothing
/// of it is left.
#[test]
fn a_stopped_fuse_server_does_not_hold_the_run() {
    if !fuse_usable() {
        return common::skip("needs /dev/fuse, and root or fusermount3");
    }
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().display().to_string();
    let mut child = common::oscost_std()
        .env("TMPDIR", tmp.path())
        .args(["--quiet", "--no-save", "fs"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let server = fuse_server(&marker);
    std::thread::sleep(Duration::from_millis(300));
    kill("-STOP", server);
    std::thread::sleep(Duration::from_millis(300));
    kill("-INT", child.id());
    // Bounded, not timed: a run held by its server would never end.
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            kill("-KILL", server);
            panic!("the run was still held by its stopped FUSE server 30 s after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}: {err}");
    // Either the count exchange timed out or the grace after Ctrl-C ran out: both name it.
    assert!(
        err.contains("__fuse-serve") && err.contains(&server.to_string()),
        "{err}"
    );
    assert!(
        oscost_mounts_under(&marker).is_empty(),
        "{:?}",
        oscost_mounts()
    );
    common::assert_nothing_left(&marker);
}

/// A server whose file system is busy (a file open on it) when its input ends still unmounts
/// and exits: its stop is not spent on the first, failed unmount.
#[test]
fn a_busy_server_still_ends_when_its_input_ends() {
    if !fuse_usable() {
        return common::skip("needs /dev/fuse, and root or fusermount3");
    }
    let dir = tempfile::tempdir().unwrap();
    let mut server = common::oscost_std()
        .arg("__fuse-serve")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    let file = dir.path().join("f");
    std::fs::write(&file, b"hello").unwrap();
    let open = std::fs::File::open(&file).unwrap();
    drop(server.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.try_wait().unwrap().is_none() {
        if Instant::now() >= deadline {
            let _ = server.kill();
            panic!("the server kept serving a busy file system after its input ended");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(open);
    let mine = oscost_mounts_under(&dir.path().to_string_lossy());
    assert!(mine.is_empty(), "{mine:?}");
}
