//! Helpers the integration tests share.
#![allow(dead_code)] // each test binary uses a different part

use std::path::Path;

#[path = "../../xtask/src/skip.rs"]
mod skip;

/// A test that cannot run here says so, and `cargo xtask test` counts it as skipped:
/// `return common::skip("needs root");`.
pub fn skip(reason: &str) {
    skip::skip(reason);
}

/// Prefix of the data directories below.
const DATA_HOME_PREFIX: &str = "oscost-tests-data-";

/// The `XDG_DATA_HOME` of every oscost these tests start, so their runs are saved in a
/// history of this test process's own, never the developer's. One directory per test
/// process, named after it; those of test processes that have ended are removed here.
pub fn data_home() -> &'static Path {
    use std::os::unix::fs::PermissionsExt;
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let tmp = std::env::temp_dir();
        for entry in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let pid = name
                .to_str()
                .and_then(|n| n.strip_prefix(DATA_HOME_PREFIX))
                .and_then(|p| p.parse::<u32>().ok());
            if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let dir = tmp.join(format!("{DATA_HOME_PREFIX}{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Tests that run oscost as `nobody` use a directory of their own ([`isolate_in`]);
        // this one only has to be ours.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        dir
    })
}

/// `cmd` (one that starts oscost, directly or through another program) with its history in
/// [`data_home`].
pub fn isolate(cmd: &mut std::process::Command) -> &mut std::process::Command {
    isolate_at(cmd, data_home())
}

/// `cmd` with its history in `dir/data`: for oscost run as another user, given a directory
/// that user may write.
pub fn isolate_in<'a>(
    cmd: &'a mut std::process::Command,
    dir: &Path,
) -> &'a mut std::process::Command {
    isolate_at(cmd, &dir.join("data"))
}

/// `cmd` with its default history under `data`, and none named by the environment of whoever
/// runs the tests: a store they set for their own runs (`OSCOST_HISTORY`, a shared PostgreSQL
/// one) would take precedence and receive the tests' runs. A test that wants one sets it after.
/// Text is laid out to [`WIDE`] columns, the same for whoever runs the tests.
fn isolate_at<'a>(
    cmd: &'a mut std::process::Command,
    data: &Path,
) -> &'a mut std::process::Command {
    cmd.env("XDG_DATA_HOME", data)
        .env("COLUMNS", WIDE)
        .env_remove("OSCOST_HISTORY")
        .env_remove("OSCOST_HISTORY_FILE")
}

/// The `COLUMNS` the tests run oscost with: wider than any table, so that their assertions
/// read rows and sentences whole. A pipe without `COLUMNS` gets 80 columns; the tests of
/// widths set or remove `COLUMNS` themselves.
pub const WIDE: &str = "1000";

/// The oscost binary, its history in [`data_home`].
pub fn oscost_std() -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("oscost"));
    isolate(&mut cmd);
    cmd
}

/// [`oscost_std`] for assertions.
pub fn oscost() -> assert_cmd::Command {
    assert_cmd::Command::from_std(oscost_std())
}

/// Runs `cmd` with `--json FILE` in a fresh directory and asserts a refusal: exit 2, one
/// `oscost: ` line containing `needle` besides any `warning: ` lines, and no result file.
/// Returns standard error whole, for the caller's own assertions.
pub fn assert_refused(cmd: &mut assert_cmd::Command, needle: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = cmd.arg("--json").arg(&json).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("warning: "))
        .collect();
    assert_eq!(lines.len(), 1, "one line expected: {err}");
    assert!(lines[0].starts_with("oscost: "), "{err}");
    assert!(lines[0].contains(needle), "`{needle}` missing from: {err}");
    assert!(!json.exists(), "a result file was written on failure");
    err
}

/// [`assert_refused`] for `oscost --quiet ARGS`.
pub fn assert_args_refused(args: &[&str], needle: &str) -> String {
    assert_refused(oscost().arg("--quiet").args(args), needle)
}

/// Whether the tests run as root (effective uid 0).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        .unwrap_or(false)
}

/// `prlimit LIMIT --` and, when `unprivileged`, `setpriv` to `nobody` (root is exempt from
/// RLIMIT_NPROC), ready for the program and its arguments. Both tools come with util-linux,
/// which `.ci/run` makes sure of; a missing one fails the test that runs it, never skips it.
pub fn limited(limit: &str, unprivileged: bool) -> std::process::Command {
    let mut cmd = std::process::Command::new("prlimit");
    cmd.arg(limit).arg("--");
    if unprivileged {
        cmd.args([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ]);
    }
    cmd
}

/// A copy of the oscost binary in `dir` that `nobody` can run. The build's own copy may sit
/// under a directory only its owner can enter (a clone made in a private temporary
/// directory): setpriv can still start it, but oscost then cannot start its measuring
/// process, which it runs from its own path.
pub fn bin_for_nobody(dir: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let copy = dir.join("oscost");
    std::fs::copy(assert_cmd::cargo::cargo_bin("oscost"), &copy).expect("copying oscost");
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    wait_until_runnable(&copy);
    copy
}

/// Waits until a freshly written executable can be run. While it was written, another test
/// thread may have forked a child that holds it open for writing until that child execs, and
/// exec then fails with ETXTBSY: the test harness's race, not oscost's.
pub fn wait_until_runnable(path: &std::path::Path) {
    for _ in 0..100 {
        match std::process::Command::new(path).arg("--version").output() {
            Err(e) if e.raw_os_error() == Some(ETXTBSY) => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            _ => return,
        }
    }
    panic!("{} stayed busy (ETXTBSY) for 2 s", path.display());
}

/// "Text file busy" on Linux.
const ETXTBSY: i32 = 26;

/// Processes whose environment contains `marker` (a test's own TMPDIR or marker variable,
/// which every process of that test's run inherits): what a run left behind. A zombie shows
/// no environment; its parent, still present, is found instead.
pub fn processes_with(marker: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|b| String::from_utf8_lossy(&b).contains(marker))
                .unwrap_or(false)
        })
        .collect()
}

/// Waits up to 5 s for every process of the run marked `marker` to be gone.
pub fn assert_nothing_left(marker: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let left = processes_with(marker);
        if left.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "left running: {left:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Runs `oscost --quick --quiet --samples 5 ARGS --json FILE` with a private TMPDIR and returns
/// its one experiment's result.
pub fn tiny_run(args: &[&str]) -> oscost_model::ExperimentResult {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    oscost()
        .env("TMPDIR", tmp.path())
        .args(["--quick", "--quiet", "--samples", "5"])
        .args(args)
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    read_doc(&json).experiments.remove(0)
}

/// Every check of every case of `e` passed.
pub fn assert_every_check_passed(e: &oscost_model::ExperimentResult) {
    for c in &e.cases {
        for k in &c.checks {
            assert!(k.passed, "{}: {k:?}", c.id);
        }
    }
}

/// Reads a result file with the typed model, so an unknown or missing field fails the test.
pub fn read_doc(path: &std::path::Path) -> oscost_model::ResultDoc {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: not a result document: {e}", path.display()))
}

/// Fields after the `(comm)` of `/proc/<pid>/stat`: state is [0], ppid [1].
pub fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// Processes (not threads: /proc lists only thread-group leaders) whose parent is `parent`.
pub fn children_of(parent: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| stat_fields(pid).and_then(|f| f.get(1)?.parse::<i32>().ok()) == Some(parent))
        .collect()
}

/// Runs `oscost ARGS` under `prlimit LIMIT` (and, when `unprivileged` is set, `setpriv` to
/// `nobody`, since root is exempt from RLIMIT_NPROC) with `--json FILE` in a fresh directory;
/// returns (exit code, stderr, whether the result file exists). Both tools come with
/// util-linux; a missing one fails the test.
pub fn run_limited(limit: &str, unprivileged: bool, args: &[&str]) -> (Option<i32>, String, bool) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    // Writable for `nobody` too.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let json = dir.path().join("r.json");
    let bin = bin_for_nobody(dir.path());
    let mut attempt = 0;
    let (out, err) = loop {
        let mut cmd = limited(limit, unprivileged);
        let out = isolate_in(&mut cmd, dir.path())
            .arg(&bin)
            .args(args)
            .arg("--json")
            .arg(&json)
            .env("TMPDIR", dir.path())
            .output()
            .expect("prlimit (util-linux) must be installed");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        // The fresh copy can still be open for writing in a child another test thread forked
        // while it was written (until that child execs): exec then fails with ETXTBSY. That is
        // the test harness's race, not oscost's, so try again once the child has gone on.
        attempt += 1;
        if err.contains("Text file busy") && attempt < 20 {
            std::thread::sleep(std::time::Duration::from_millis(50));
            continue;
        }
        break (out, err);
    };
    assert!(
        !err.contains("prlimit:") && !err.contains("setpriv:"),
        "the limit could not be set up: {err}"
    );
    (out.status.code(), err, json.exists())
}
