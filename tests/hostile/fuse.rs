//! The FUSE server of `fs` (a helper the measuring process starts) stopped, signalled or killed,
//! and what a killed run leaves: each run ends, says why, and leaves no mount, no /dev/shm
//! directory, no process.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common;
use crate::runner::{case, kill, measuring_of, wait_for, Case};

/// `fs` long enough to be interrupted, its server busy with two of its calls.
const FS_LONG: &[&str] = &[
    "fs",
    "--calls",
    "getpid,open-close,read64k",
    "--no-save",
    "-q",
];

/// How long a run may take to end after the first signal while its server is stopped: well
/// under the 30 s it would wait for the server's answer, so a run that ended only when that
/// wait timed out fails.
const ENDS_WITHIN: Duration = Duration::from_secs(10);

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

/// The FUSE server among the case's processes, once it is up (20 s at most).
fn fuse_server(c: &Case) -> u32 {
    let mut srv = None;
    assert!(
        wait_for(20, || {
            srv = c.process_with("__fuse-serve");
            srv.is_some()
        }),
        "the FUSE server never started"
    );
    srv.unwrap()
}

/// Mount points of oscost's FUSE file systems under the case's TMPDIR visible here (a user's;
/// root's live in a namespace of their own).
fn case_fuse_mounts(c: &Case) -> Vec<String> {
    let tmp = c.tmp.to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<_> = l.split_whitespace().collect();
            (f.get(2) == Some(&"fuse.oscost") && f[1].starts_with(&tmp)).then(|| f[1].to_owned())
        })
        .collect()
}

/// The /dev/shm directories of the run whose coordinator is `pid`.
fn shm_dirs(pid: u32) -> Vec<std::path::PathBuf> {
    let prefix = format!("oscost-run-{pid}-");
    std::fs::read_dir("/dev/shm")
        .map(|r| {
            r.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// No FUSE mount of the case and no /dev/shm directory of the run `pid`; what there is, is
/// removed before failing, so the machine is left as found.
fn no_fuse_leftovers(c: &Case, pid: u32) {
    let mounts = case_fuse_mounts(c);
    for m in &mounts {
        let ok = std::process::Command::new("fusermount3")
            .args(["-u", "-z", m])
            .status();
        if !ok.is_ok_and(|s| s.success()) {
            let _ = std::process::Command::new("umount")
                .args(["-l", m])
                .status();
        }
    }
    let shm = shm_dirs(pid);
    for d in &shm {
        let _ = std::fs::remove_dir_all(d);
    }
    assert!(mounts.is_empty(), "left mounted: {mounts:?}");
    assert!(shm.is_empty(), "left in /dev/shm: {shm:?}");
}

/// A stopped server (what a deadlocked one looks like) and Ctrl-C twice: the run ends (130)
/// soon after the first, leaving nothing.
#[test]
fn fs_stopped_server_sigint_twice() {
    if !fuse_usable() {
        return common::skip("needs /dev/fuse, and root or fusermount3");
    }
    case(true, |c| {
        let bg = c.spawn_osc(FS_LONG);
        let srv = fuse_server(c);
        std::thread::sleep(Duration::from_millis(500));
        kill("STOP", srv);
        std::thread::sleep(Duration::from_millis(300));
        let t0 = Instant::now();
        kill("INT", bg.pid());
        std::thread::sleep(Duration::from_millis(300));
        kill("INT", bg.pid());
        let pid = bg.pid();
        let out = bg.collect();
        let took = t0.elapsed();
        out.rc(130);
        assert!(took < ENDS_WITHIN, "ended {took:?} after the first signal");
        no_fuse_leftovers(c, pid);
    });
}

/// A stopped server and no signal: the exchange with it times out with one line naming it.
#[test]
#[ignore = "slow: waits for the exchange with the stopped server to time out"]
fn fs_stopped_server_exchange_times_out() {
    if !fuse_usable() {
        return common::skip("needs /dev/fuse, and root or fusermount3");
    }
    case(true, |c| {
        // getpid never reaches the server: only the count exchange after its rounds does.
        let bg = c.spawn_osc(&[
            "fs",
            "--calls",
            "getpid",
            "--samples",
            "400",
            "--no-save",
            "-q",
        ]);
        let srv = fuse_server(c);
        std::thread::sleep(Duration::from_secs(1));
        kill("STOP", srv);
        let pid = bg.pid();
        let out = bg.collect();
        out.rc(2);
        let said = format!("FUSE server (oscost __fuse-serve, pid {srv}) did not answer");
        assert!(
            out.err.contains(&said),
            "stderr does not say the server did not answer: {}",
            out.err
        );
        no_fuse_leftovers(c, pid);
    });
}

/// A signal to the server alone: the run ends with an error naming it (or had finished).
fn server_signal(sig: &str) {
    if !fuse_usable() {
        return common::skip("needs /dev/fuse, and root or fusermount3");
    }
    case(true, |c| {
        let bg = c.spawn_osc(FS_LONG);
        let srv = fuse_server(c);
        std::thread::sleep(Duration::from_millis(500));
        kill(sig, srv);
        let pid = bg.pid();
        let out = bg.collect();
        assert!(
            [0, 2].contains(&out.rc),
            "exit {}, expected 2 (failed) or 0 (it had finished): {}",
            out.rc,
            out.err
        );
        if out.rc == 2 {
            let said = format!("FUSE server (oscost __fuse-serve, pid {srv}) ended mid-run");
            assert!(
                out.err.contains(&said),
                "stderr does not say the server ended mid-run: {}",
                out.err
            );
        }
        no_fuse_leftovers(c, pid);
    });
}

#[test]
fn fs_sigterm_server() {
    server_signal("TERM");
}

#[test]
fn fs_sigint_server() {
    server_signal("INT");
}

#[test]
fn fs_sigkill_server() {
    server_signal("KILL");
}

/// kill -9 of the measuring process: the server dies with it, the run says so, nothing left.
#[test]
fn fs_kill9_measuring() {
    if !fuse_usable() {
        return common::skip("needs /dev/fuse, and root or fusermount3");
    }
    case(true, |c| {
        let bg = c.spawn_osc(FS_LONG);
        fuse_server(c);
        let m = measuring_of(bg.pid()).expect("no measuring process");
        std::thread::sleep(Duration::from_millis(300));
        kill("KILL", m);
        let pid = bg.pid();
        let out = bg.collect();
        out.rc(2);
        assert!(
            out.err.contains("killed by signal 9"),
            "stderr does not say the measuring process was killed: {}",
            out.err
        );
        no_fuse_leftovers(c, pid);
    });
}

/// Every process of the run killed at once: the next run removes what is left (a user's FUSE
/// mount, the /dev/shm and run directories) and says so.
fn kill9_all(nobody: bool) {
    if !fuse_usable() {
        return common::skip("needs /dev/fuse, and root or fusermount3");
    }
    if nobody && !common::is_root() {
        return common::skip("needs root: to run oscost as nobody");
    }
    case(true, |c| {
        if nobody {
            c.nobody();
        }
        let bg = c.spawn_osc(FS_LONG);
        fuse_server(c);
        std::thread::sleep(Duration::from_millis(500));
        // setpriv execs: the pid is oscost's.
        let pid = bg.pid();
        for p in c.processes() {
            kill("KILL", p as u32);
        }
        bg.collect();
        assert!(
            wait_for(5, || c.processes().is_empty()),
            "processes of the killed run still running 5 s later"
        );
        let left = !case_fuse_mounts(c).is_empty() || !shm_dirs(pid).is_empty();
        let out = c.osc(&["--scripted", "--quiet", "--no-save", "example"]);
        out.rc(0);
        if left {
            assert!(
                out.err.contains("removed what an earlier oscost run"),
                "the next run did not say what it removed: {}",
                out.err
            );
        }
        no_fuse_leftovers(c, pid);
    });
}

#[test]
fn fs_kill9_all_next_run() {
    kill9_all(false);
}

#[test]
#[ignore = "needs root: runs oscost as nobody"]
fn fs_kill9_all_next_run_unprivileged() {
    kill9_all(true);
}

/// As a user who is not root (fusermount3): Ctrl-C mid-run, or the server killed alone.
fn unprivileged(kill_server: bool) {
    if !fuse_usable() {
        return common::skip("needs /dev/fuse, and root or fusermount3");
    }
    if !common::is_root() {
        return common::skip("needs root: to run oscost as nobody");
    }
    case(true, |c| {
        c.nobody();
        let bg = c.spawn_osc(FS_LONG);
        let srv = fuse_server(c);
        std::thread::sleep(Duration::from_millis(500));
        let pid = bg.pid();
        if kill_server {
            kill("KILL", srv);
            let out = bg.collect();
            assert!(
                [0, 2].contains(&out.rc),
                "exit {}, expected 2 (failed) or 0: {}",
                out.rc,
                out.err
            );
        } else {
            kill("INT", pid);
            bg.collect().rc(130);
        }
        no_fuse_leftovers(c, pid);
    });
}

#[test]
#[ignore = "needs root: runs oscost as nobody"]
fn fs_sigint_unprivileged() {
    unprivileged(false);
}

#[test]
#[ignore = "needs root: runs oscost as nobody"]
fn fs_kill_server_unprivileged() {
    unprivileged(true);
}

/// The serving role on its own, its file system busy (a file open on it): a SIGTERM still
/// ends it, and its mount goes.
#[test]
fn fuse_serve_busy_sigterm() {
    if !fuse_usable() {
        return common::skip("needs /dev/fuse, and root or fusermount3");
    }
    case(false, |c| {
        let d = c.tmp.join("mnt");
        std::fs::create_dir(&d).unwrap();
        let mut cmd = c.oscost();
        cmd.arg("__fuse-serve").arg(&d).stdin(Stdio::piped());
        let mut bg = c.spawn(&mut cmd);
        // Held open: its end would stop the server, and this case is about SIGTERM.
        let input = bg.take_stdin();
        assert!(
            wait_for(10, || !bg.stdout_so_far().is_empty()),
            "the server never said ready"
        );
        assert_eq!(bg.stdout_so_far().lines().next(), Some("ready"));
        std::fs::write(d.join("f"), "data\n").expect("cannot write a file on the mount");
        let open = std::fs::File::open(d.join("f")).expect("cannot open a file on the mount");
        kill("TERM", bg.pid());
        let ended = wait_for(10, || bg.ended());
        drop(open);
        drop(input);
        if !ended {
            kill("KILL", bg.pid());
        }
        bg.collect();
        let mounted = std::process::Command::new("findmnt")
            .arg("-rn")
            .arg(&d)
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success();
        if mounted {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&d)
                .status();
        }
        assert!(
            ended,
            "the server still runs 10 s after its SIGTERM, its file system busy"
        );
        assert!(!mounted, "still mounted on {}", d.display());
    });
}

/// The serving role's own bad input: exit 2, one line.
fn fuse_serve_bad(args: &[&str]) {
    case(false, |c| {
        let mut all = vec!["__fuse-serve"];
        all.extend(args);
        let out = c.osc(&all);
        out.rc(2);
        let lines = out.err.lines().count() + out.stdout().lines().count();
        assert_eq!(lines, 1, "expected one line: {} {}", out.err, out.stdout());
    });
}

#[test]
fn fuse_serve_no_directory() {
    fuse_serve_bad(&[]);
}

#[test]
fn fuse_serve_missing_directory() {
    fuse_serve_bad(&["/nonexistent/hostile"]);
}

#[test]
fn fuse_serve_two_directories() {
    fuse_serve_bad(&["a", "b"]);
}

/// A device at /dev/fuse that is not FUSE's (/dev/null bound over it in a mount namespace of
/// the case's own): the FUSE cases are not measured, each naming the device and the fix, never
/// a bare EINVAL from mount(2).
#[test]
#[ignore = "needs root: binds over /dev/fuse in a mount namespace"]
fn fs_dev_fuse_not_fuse() {
    if !common::is_root() || !std::path::Path::new("/dev/fuse").exists() {
        return common::skip("needs root and /dev/fuse: binding over /dev/fuse");
    }
    case(true, |c| {
        let mut cmd = c.wrapped(&[
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            "mount --bind /dev/null /dev/fuse && exec \"$@\"",
            "sh",
        ]);
        cmd.args([
            "--no-save",
            "fs",
            "--quick",
            "--samples",
            "3",
            "--calls",
            "getpid",
        ]);
        let out = c.run(&mut cmd);
        out.rc(0);
        assert!(
            out.either_matches(r"not measured: fs\.fuse\.getpid: /dev/fuse is not the FUSE device \(character device 10:229\): recreate it"),
            "the FUSE case does not name the device and the fix: {}",
            out.err
        );
        assert!(
            !out.either_matches("EINVAL"),
            "mount(2)'s bare EINVAL is shown"
        );
        let leaked = std::process::Command::new("findmnt")
            .args(["-n", "/dev/fuse"])
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(
            !leaked,
            "the bind mount over /dev/fuse leaked out of the case's namespace"
        );
    });
}

/// The server stopped while the measuring process waits in a FUSE file call (every call of
/// open-close goes to the server): the run still ends soon after the first Ctrl-C.
#[test]
fn fs_stopped_server_blocked_call() {
    if !fuse_usable() {
        return common::skip("needs /dev/fuse, and root or fusermount3");
    }
    case(true, |c| {
        let bg = c.spawn_osc(&[
            "fs",
            "--calls",
            "open-close",
            "--samples",
            "400",
            "--no-save",
            "-q",
        ]);
        let srv = fuse_server(c);
        let m = measuring_of(bg.pid()).expect("no measuring process");
        std::thread::sleep(Duration::from_millis(500));
        kill("STOP", srv);
        // Blocked in the call: the kernel waits for the server's answer.
        let blocked = || {
            std::fs::read_dir(format!("/proc/{m}/task"))
                .into_iter()
                .flatten()
                .flatten()
                .any(|t| {
                    let w = std::fs::read_to_string(t.path().join("wchan")).unwrap_or_default();
                    w.contains("fuse") || w == "request_wait_answer"
                })
        };
        assert!(
            wait_for(5, blocked),
            "the measuring process was never seen waiting in a FUSE call"
        );
        let t0 = Instant::now();
        kill("INT", bg.pid());
        let pid = bg.pid();
        let out = bg.collect();
        let took = t0.elapsed();
        out.rc(130);
        assert!(took < ENDS_WITHIN, "ended {took:?} after the first signal");
        no_fuse_leftovers(c, pid);
    });
}
