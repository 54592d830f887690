//! Limits checked before measuring, and options a command does not use: refused with one line
//! and exit 2 before anything is measured. No timing assertions.

mod common;
use common::oscost;
use common::{is_root, run_limited};

/// One `oscost: ` line and nothing else: no progress, no table, no warning of an experiment
/// that ran.
fn assert_one_line(err: &str) {
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected: {err}");
    assert!(lines[0].starts_with("oscost: "), "{err}");
}

#[test]
fn open_file_limit_is_refused_before_any_experiment_measures() {
    let (code, err, written) = run_limited(
        "--nofile=60:60",
        false,
        &["--quiet", "run", "syscall", "ring"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert_one_line(&err);
    assert!(
        err.contains("ring --tasks 64 needs about")
            && err.contains("open files")
            && err.contains("RLIMIT_NOFILE is 60 (hard 60)")
            && err.contains("ulimit -n 200")
            && err.contains("use fewer --tasks"),
        "{err}"
    );
    // syscall, first in the run, never started.
    assert!(!err.contains("syscall"), "{err}");
    assert!(!written, "a result file was written");
}

#[test]
fn a_soft_limit_below_the_need_is_not_refused_when_the_hard_one_allows() {
    // The coordinator raises the soft limit to the hard one, so only the hard one counts:
    // the pre-flight passes and the (tiny) ring runs.
    let (code, err, written) = run_limited(
        "--nofile=20:4096",
        false,
        &[
            "--quiet",
            "--quick",
            "--samples",
            "5",
            "ring",
            "--tasks",
            "4",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(written, "{err}");
}

#[test]
fn process_limit_is_refused_before_measuring() {
    // RLIMIT_NPROC counts the user's processes and threads and is not enforced for root, so
    // as root the run drops to `nobody` first.
    for kind in ["threads", "processes"] {
        let (code, err, written) = run_limited(
            "--nproc=48:48",
            is_root(),
            &["--quiet", "ring", "--kind", kind, "--tasks", "2,96"],
        );
        assert_eq!(code, Some(2), "{kind}: {err}");
        assert_one_line(&err);
        assert!(
            err.contains("ring --tasks 96 needs about")
                && err.contains("processes and threads of this user")
                && err.contains("RLIMIT_NPROC is 48 (hard 48)")
                && err.contains("ulimit -u")
                && err.contains("use fewer --tasks"),
            "{kind}: {err}"
        );
        assert!(!written, "{kind}: a result file was written");
    }
}

#[test]
fn options_a_command_does_not_use_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("x");
    let cases: [(&[&str], &str); 4] = [
        (
            &["list", "--json", json.to_str().unwrap()],
            "oscost: list does not use --json (it would be ignored)\n",
        ),
        (
            &["list", "--cpus", "99", "--nice", "5"],
            "oscost: list does not use --cpus, --nice (they would be ignored)\n",
        ),
        (
            &["--quick", "env"],
            "oscost: env does not use --quick (it would be ignored)\n",
        ),
        (
            &["env", "--samples", "9", "--scripted"],
            "oscost: env does not use --samples, --scripted (they would be ignored)\n",
        ),
    ];
    for (args, line) in cases {
        oscost().args(args).assert().code(2).stderr(line).stdout("");
    }
    assert!(!json.exists());
    oscost().args(["list", "--quiet"]).assert().success();
}
