//! What a killed oscost leaves behind is removed: by the coordinator when its measuring process
//! is killed, by the next run when the coordinator itself is killed. No timing is asserted:
//! the runs only have to last long enough to be stopped and looked at.
//!
//! Each test has a private TMPDIR, so it sees only its own run directories. The processes are
//! stopped (SIGSTOP) while they are looked at, so what they have created cannot change between
//! the look and the kill.

mod common;

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The ids of every SysV semaphore set on the machine. Unreadable is a failure: the test
/// cannot see what it checks.
fn sysv_sems() -> BTreeSet<i32> {
    let text = std::fs::read_to_string("/proc/sysvipc/sem")
        .unwrap_or_else(|e| panic!("cannot read /proc/sysvipc/sem: {e}"));
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect()
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig} {pid}");
}

/// The state letter of `pid` in `/proc/PID/stat` (`T`: stopped), if it still exists.
fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].chars().next()
}

/// Stops `pid` and waits until it is stopped: a signal sent before that could still be
/// handled (SIGTERM is taken before SIGSTOP), and a set could still be created.
fn stop(pid: u32) {
    signal(pid, "STOP");
    let t0 = Instant::now();
    while state(pid) != Some('T') {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{pid} never stopped"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// If the test fails, ends the run it started so nothing is left stopped or running: the
/// measuring process if known (the coordinator then removes its sets and exits), else the
/// coordinator (its measuring process dies with it). Declared after the TempDir, so it runs
/// first and waits for the coordinator to end before the directory is removed.
struct EndOnPanic {
    coordinator: u32,
    measuring: std::cell::Cell<Option<u32>>,
}

impl EndOnPanic {
    fn new(run: &Child) -> EndOnPanic {
        EndOnPanic {
            coordinator: run.id(),
            measuring: std::cell::Cell::new(None),
        }
    }
}

impl Drop for EndOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let pid = self.measuring.get().unwrap_or(self.coordinator);
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            // The coordinator needs its directory to clean up: wait before the TempDir goes.
            let t0 = Instant::now();
            while !ended(self.coordinator) && t0.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// Waits up to 60 s for `what` to hold while `run` is running, failing with `why`.
fn wait_for<T>(run: &mut Child, why: &str, mut what: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = what() {
            return v;
        }
        if let Some(status) = run.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = run.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("{why}: oscost ended first ({status}): {err}");
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{why}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The run directories (`oscost-run-*`) in `tmp`.
fn run_dirs(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("oscost-run-"))
        })
        .collect()
}

/// The SysV set ids a run directory's registry lists.
fn registered(dir: &Path) -> BTreeSet<i32> {
    std::fs::read_to_string(dir.join("registry"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("sysv-sem ")?.trim().parse().ok())
        .collect()
}

/// The pid of `parent`'s child whose command line contains `__measure`.
fn measuring_process(parent: u32) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let ppid = stat
                .rfind(')')
                .and_then(|i| stat[i + 2..].split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == Some(parent) && String::from_utf8_lossy(&cmdline).contains("__measure")
        })
}

/// Whether `pid` has ended (gone, or a zombie nobody has reaped yet).
fn ended(pid: u32) -> bool {
    matches!(state(pid), None | Some('Z'))
}

fn sets(n: usize) -> String {
    format!("{n} SysV semaphore set{}", if n == 1 { "" } else { "s" })
}

/// A SysV ping-pong between processes, long enough to be killed in the middle.
fn start_sysv_run(tmp: &Path) -> Child {
    common::oscost_std()
        .env("TMPDIR", tmp)
        .args([
            "switch",
            "--via",
            "sysv-sem",
            "--kind",
            "processes",
            "--samples",
            "3000",
            "-q",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A run in the middle of measuring with SysV sets, its measuring process stopped: returns the
/// measuring pid, the run directory and the registered sets that exist (all created by it).
fn stopped_mid_run(
    tmp: &Path,
    run: &mut Child,
    guard: &EndOnPanic,
) -> (u32, PathBuf, BTreeSet<i32>) {
    let coordinator = run.id();
    let dir = wait_for(run, "oscost never registered a SysV set", || {
        run_dirs(tmp)
            .into_iter()
            .find(|d| !registered(d).is_empty())
    });
    let measuring = wait_for(run, "no measuring process found", || {
        measuring_process(coordinator)
    });
    guard.measuring.set(Some(measuring));
    stop(measuring);
    // Stopped: it creates nothing more, so what the registry lists now is all there is.
    let live: BTreeSet<i32> = registered(&dir)
        .intersection(&sysv_sems())
        .copied()
        .collect();
    assert!(!live.is_empty(), "none of the registered sets exists");
    (measuring, dir, live)
}

/// `kill -9` of the measuring process: the coordinator removes the sets it left, says so,
/// and the run fails with exit status 2.
#[test]
fn a_killed_measuring_process_leaves_no_sysv_set() {
    let before = sysv_sems();
    let tmp = tempfile::tempdir().unwrap();
    let mut child = start_sysv_run(tmp.path());
    let guard = EndOnPanic::new(&child);
    let (measuring, _dir, live) = stopped_mid_run(tmp.path(), &mut child, &guard);
    assert!(live.is_disjoint(&before), "registered sets predate the run");
    signal(measuring, "KILL");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let said = format!(
        "oscost: removed {} the interrupted measuring process left behind",
        sets(live.len())
    );
    assert!(stderr.contains(&said), "{stderr}");
    let after = sysv_sems();
    assert!(live.is_disjoint(&after), "{live:?} still exist: {after:?}");
    assert!(run_dirs(tmp.path()).is_empty());
}

/// Whether signal `sig` is pending for process `pid` (its own or its thread's queue).
fn pending(pid: u32, sig: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .filter_map(|l| {
            l.strip_prefix("ShdPnd:")
                .or_else(|| l.strip_prefix("SigPnd:"))
        })
        .filter_map(|v| u64::from_str_radix(v.trim(), 16).ok())
        .any(|mask| mask & (1 << (sig - 1)) != 0)
}

/// Two Ctrl-Cs: the second kills the measuring process (it was stopped, so the first could
/// not end it), and the run still removes its sets before it ends as interrupted (130).
#[test]
fn a_second_ctrl_c_leaves_no_sysv_set() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = start_sysv_run(tmp.path());
    let guard = EndOnPanic::new(&child);
    let (measuring, _dir, live) = stopped_mid_run(tmp.path(), &mut child, &guard);
    signal(child.id(), "INT");
    // The coordinator passed it on as a SIGTERM, which waits while the process is stopped.
    wait_for(&mut child, "the first Ctrl-C was not passed on", || {
        pending(measuring, 15).then_some(())
    });
    signal(child.id(), "INT");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let said = format!(
        "oscost: removed {} the interrupted measuring process left behind",
        sets(live.len())
    );
    assert!(stderr.contains(&said), "{stderr}");
    assert!(live.is_disjoint(&sysv_sems()));
    assert!(run_dirs(tmp.path()).is_empty());
}

/// `kill -9` of the coordinator: its measuring process dies with it, the sets and the run
/// directory stay; the next run, of any kind, removes them and says so.
#[test]
fn the_next_run_removes_what_a_killed_coordinator_left() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = start_sysv_run(tmp.path());
    let coordinator = child.id();
    let guard = EndOnPanic::new(&child);
    let (measuring, dir, live) = stopped_mid_run(tmp.path(), &mut child, &guard);
    signal(coordinator, "KILL");
    child.wait().unwrap();
    // It goes with the coordinator (a parent-death signal), stopped or not.
    let t0 = Instant::now();
    while !ended(measuring) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the measuring process outlived its coordinator"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(dir.exists());
    assert!(
        live.is_subset(&sysv_sems()),
        "the sets went before the next run"
    );

    let out = common::oscost_std()
        .env("TMPDIR", tmp.path())
        .args(["--scripted", "--quiet", "example"])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert!(out.status.success(), "{stderr}");
    let said = format!(
        "oscost: removed what an earlier oscost run (pid {coordinator}, killed) left behind: \
         {}, its temporary directory",
        sets(live.len())
    );
    assert!(stderr.contains(&said), "{stderr}");
    assert!(live.is_disjoint(&sysv_sems()));
    assert!(!dir.exists());
    assert!(run_dirs(tmp.path()).is_empty());
}

/// The run directory and the measuring process's scratch directories in it are 0700.
#[test]
fn scratch_directories_are_private() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = common::oscost_std()
        .env("TMPDIR", tmp.path())
        .args([
            "syscall",
            "--calls",
            "creat-write-unlink",
            "--samples",
            "3000",
            "-q",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let scratch = wait_for(&mut child, "no scratch directory appeared", || {
        run_dirs(tmp.path()).into_iter().find_map(|d| {
            std::fs::read_dir(&d)
                .ok()?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.is_dir())
        })
    });
    let guard = EndOnPanic::new(&child);
    let coordinator = child.id();
    let measuring = wait_for(&mut child, "no measuring process found", || {
        measuring_process(coordinator)
    });
    guard.measuring.set(Some(measuring));
    stop(measuring);
    let run_dir = scratch.parent().unwrap().to_owned();
    for d in [&run_dir, &scratch] {
        let mode = std::fs::metadata(d).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o700, "{}: {mode:o}", d.display());
    }
    signal(measuring, "CONT");
    signal(child.id(), "INT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(run_dirs(tmp.path()).is_empty());
}

/// A tracefs that a killed run mounted (its record names a holder that is gone) is unmounted by
/// the next run of any experiment, which says so in one line. As root, and only where tracefs
/// is mounted nowhere to begin with (the test must not take away someone's mount).
#[test]
fn a_tracefs_left_mounted_by_a_killed_run_is_unmounted_by_the_next() {
    const DIR: &str = "/sys/kernel/tracing";
    let mounted = || {
        std::fs::read_to_string("/proc/self/mounts")
            .unwrap()
            .lines()
            .any(|l| l.split_whitespace().nth(2) == Some("tracefs"))
    };
    if !common::is_root() || mounted() {
        return common::skip("needs root and tracefs mounted nowhere");
    }
    let ok = Command::new("mount")
        .args(["-t", "tracefs", "nodev", DIR])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return common::skip("needs tracefs, which this kernel cannot mount here");
    }
    // The mount's id: another test's traced pass may mount tracefs anew meanwhile, and that
    // mount is not the one to be gone.
    let tracefs_ids = || -> Vec<String> {
        std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .lines()
            .filter(|l| l.contains(" - tracefs "))
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .collect()
    };
    let ours = tracefs_ids();
    // The record a killed run leaves: a holder whose process is gone.
    let settings = tempfile::tempdir().unwrap();
    std::fs::set_permissions(settings.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let record = settings.path().join("sys.kernel.tracing.mount");
    std::fs::write(
        &record,
        format!("path {DIR}\noriginal tracefs\nholder {pid} 1\n"),
    )
    .unwrap();
    let out = common::oscost()
        .env("OSCOST_SETTINGS_DIR", settings.path())
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
    let now = tracefs_ids();
    let still = ours.iter().any(|id| now.contains(id));
    if still {
        let _ = Command::new("umount").arg(DIR).status();
    }
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{err}");
    assert!(!still, "tracefs is still mounted: {err}");
    assert!(
        err.contains(&format!(
            "unmounted the tracefs on {DIR} (the oscost process that mounted it, pid {pid}, \
             ended before it could)"
        )),
        "{err}"
    );
    assert!(!record.exists());
}

/// An ftrace instance a killed run made (its record names a holder that is gone) is removed by
/// the next run of any experiment, which says so in one line. As root, in a mount namespace of
/// its own (the instance itself is the kernel's, seen from every namespace).
#[test]
fn an_ftrace_instance_left_by_a_killed_run_is_removed_by_the_next() {
    let unshare = Command::new("unshare")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !common::is_root() || !unshare {
        return common::skip("needs root and unshare");
    }
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let dir = format!("/sys/kernel/tracing/instances/oscost-{pid}");
    let settings = tempfile::tempdir().unwrap();
    std::fs::set_permissions(settings.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let record = settings
        .path()
        .join(format!("sys.kernel.tracing.instances.oscost-{pid}.mount"));
    std::fs::write(
        &record,
        format!("path {dir}\noriginal ftrace instance\nholder {pid} 1\n"),
    )
    .unwrap();
    let script = format!(
        "{{ grep -q ' /sys/kernel/tracing tracefs ' /proc/self/mounts || \
         mount -t tracefs nodev /sys/kernel/tracing; }} && mkdir {dir} || exit 77; \
         OSCOST_SETTINGS_DIR={} {} --quick --quiet --no-save syscall --calls getpid || exit 1; \
         if test -e {dir}; then rmdir {dir}; exit 3; fi",
        settings.path().display(),
        assert_cmd::cargo::cargo_bin("oscost").display()
    );
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(77) {
        return common::skip(&format!(
            "needs an ftrace instance, which cannot be made here: {err}"
        ));
    }
    assert!(out.status.success(), "{:?}: {err}", out.status);
    assert!(
        err.contains(&format!(
            "removed the ftrace instance {dir} (the oscost process that made it, pid {pid}, \
             ended before it could)"
        )),
        "{err}"
    );
    assert!(!record.exists());
}

/// A setting's record whose holder was killed is swept by the next oscost run of any kind,
/// one that measures nothing (`list`, `history list`) included. The record names the RR slice
/// at the value it reads now, so the sweep has nothing to write: the machine is not touched,
/// and the record going shows the command swept.
#[test]
fn a_command_that_measures_nothing_sweeps_the_settings_too() {
    const RR: &str = "/proc/sys/kernel/sched_rr_timeslice_ms";
    let Ok(now) = std::fs::read_to_string(RR) else {
        return common::skip(&format!("needs {RR} to read"));
    };
    let settings = tempfile::tempdir().unwrap();
    std::fs::set_permissions(settings.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let record = settings.path().join("kernel.sched_rr_timeslice_ms.setting");
    for args in [&["list"][..], &["history", "list"]] {
        std::fs::write(
            &record,
            format!("path {RR}\noriginal {}\nholder {pid} 1\n", now.trim()),
        )
        .unwrap();
        let data = tempfile::tempdir().unwrap();
        let out = common::oscost()
            .env("OSCOST_SETTINGS_DIR", settings.path())
            .env("XDG_DATA_HOME", data.path())
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert!(!record.exists(), "{args:?} left the killed run's record");
    }
}
