//! Bad input that needs more than a command line: files in the way, a TMPDIR that cannot be
//! used, limits, another user, documents that cannot be compared. Each refused in one line.

use std::os::unix::fs::PermissionsExt;

use crate::common;
use crate::runner::{case, edited_doc, host_doc, Case, QUICK_SYS};

/// `ARGS` with `--json r.json` after [`QUICK_SYS`].
fn quick_json(extra: &[&str]) -> Vec<String> {
    extra
        .iter()
        .chain(QUICK_SYS)
        .chain(&["--json", "r.json"])
        .map(|s| s.to_string())
        .collect()
}

/// As `nobody` when root (the working directory and TMPDIR theirs), else as this user.
fn unprivileged(c: &mut Case) {
    if common::is_root() {
        c.nobody();
    }
}

/// A file named `x` exists and stays as it is.
fn with_file_x(re: &str, args: &[&str]) {
    case(false, |c| {
        c.write("x", "mine\n");
        c.write("keep.csv", "precious\n");
        c.refused(re, args);
    });
}

#[test]
fn list_json() {
    with_file_x("list does not use --json", &["list", "--json", "x"]);
}

#[test]
fn env_csv() {
    with_file_x("csv", &["env", "--csv", "x"]);
}

#[test]
fn same_file_via_symlink() {
    case(false, |c| {
        c.write("a.json", "old\n");
        std::os::unix::fs::symlink("a.json", c.at("b.csv")).unwrap();
        let mut args = quick_json(&[]);
        args.truncate(args.len() - 2);
        args.extend(["--json", "a.json", "--csv", "b.csv"].map(String::from));
        c.refused("both write", &args);
    });
}

#[test]
fn output_under_a_file() {
    case(false, |c| {
        c.write("file", "a file\n");
        c.refused(
            "Not a directory",
            &["--scripted", "example", "--json", "file/r.json"],
        );
    });
}

#[test]
fn output_dir_0555_unprivileged() {
    case(false, |c| {
        std::fs::create_dir(c.at("ro")).unwrap();
        std::fs::set_permissions(c.at("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
        unprivileged(c);
        c.write("keep.csv", "precious\n");
        let mut args = quick_json(&[]);
        *args.last_mut().unwrap() = "ro/r.json".into();
        c.refused("not writable", &args);
    });
}

/// `TMPDIR=value`: refused naming TMPDIR.
fn tmpdir(value: impl FnOnce(&Case) -> std::path::PathBuf) {
    case(false, |c| {
        let value = value(c);
        c.write("keep.csv", "precious\n");
        let mut cmd = c.oscost();
        cmd.env("TMPDIR", value)
            .args(["--scripted", "example", "--json", "r.json"]);
        c.refused_cmd("TMPDIR", &mut cmd);
    });
}

#[test]
fn tmpdir_proc() {
    tmpdir(|_| "/proc".into());
}

#[test]
fn tmpdir_missing() {
    tmpdir(|_| "/nonexistent/hostile".into());
}

#[test]
fn tmpdir_is_a_file() {
    tmpdir(|c| {
        let f = c.tmp.join("file");
        std::fs::write(&f, "not a directory\n").unwrap();
        f
    });
}

#[test]
fn tmpdir_0555_unprivileged() {
    case(false, |c| {
        unprivileged(c);
        std::fs::set_permissions(&c.tmp, std::fs::Permissions::from_mode(0o555)).unwrap();
        c.write("keep.csv", "precious\n");
        c.refused("TMPDIR", &quick_json(&[]));
    });
}

/// Whether this process may lower its nice value anyway (CAP_SYS_NICE, bit 23 of CapEff).
fn has_sys_nice() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .map(str::trim)
        .unwrap_or("0");
    u64::from_str_radix(hex, 16).unwrap_or(0) >> 23 & 1 == 1
}

#[test]
fn nice_negative_unprivileged() {
    if !common::is_root() && has_sys_nice() {
        return common::skip("this user has CAP_SYS_NICE, so a negative nice is allowed");
    }
    case(false, |c| {
        unprivileged(c);
        c.write("keep.csv", "precious\n");
        c.refused("root|CAP_SYS_NICE", &quick_json(&["--nice", "-5"]));
    });
}

/// `--fds` beyond the open-file limit: refused before anything is opened, naming
/// RLIMIT_NOFILE and the fix.
#[test]
fn poll_fds_beyond_nofile_64() {
    case(false, |c| {
        c.write("keep.csv", "precious\n");
        let mut cmd = c.wrapped(&["prlimit", "--nofile=64:64"]);
        cmd.args(["poll", "--fds", "1000", "--json", "r.json"]);
        c.refused_cmd("RLIMIT_NOFILE is 64.*ulimit -n", &mut cmd);
    });
}

/// RLIMIT_NPROC of 1 stops the coordinator's own signal thread: named with the way to raise
/// it. Root is exempt from the limit, so root runs it as `nobody`.
#[test]
fn nproc_1_signal_thread_unprivileged() {
    case(false, |c| {
        unprivileged(c);
        c.write("keep.csv", "precious\n");
        let mut cmd = c.wrapped(&["prlimit", "--nproc=1"]);
        cmd.args(quick_json(&[]));
        c.refused_cmd(
            r"cannot start the signal thread: the process limit was reached \(RLIMIT_NPROC soft=1, hard=1.*ulimit -u",
            &mut cmd,
        );
    });
}

/// A sweep of 1 to 8192 worker processes under RLIMIT_NPROC 50 (issue 51: once ran past
/// 90 s as root, who is exempt and runs it whole): as a user the limit binds, refused before
/// any worker starts, in one line naming the limit and the fix.
#[test]
fn nproc_50_split_8192_processes_unprivileged() {
    case(false, |c| {
        unprivileged(c);
        c.write("keep.csv", "precious\n");
        let mut cmd = c.wrapped(&["prlimit", "--nproc=50:50"]);
        cmd.args([
            "split",
            "--tasks",
            "1..8192",
            "--form",
            "processes",
            "--quick",
        ]);
        cmd.args(["--json", "r.json"]);
        c.refused_cmd(r"RLIMIT_NPROC is 50.*ulimit -u", &mut cmd);
    });
}

/// An address-space limit of 20 MB stops the signal thread, or an allocation before it (where
/// it stops depends on how much the binary maps): named with the way to raise it.
#[test]
fn as_20mb_signal_thread() {
    // A debug build's binary alone maps more than 20 MB: it dies loading, before oscost runs.
    let probe = std::process::Command::new("prlimit")
        .arg("--as=20000000")
        .arg(crate::runner::bin())
        .arg("--version")
        .output()
        .expect("prlimit (util-linux) must be installed");
    if probe.status.code().is_none() {
        return common::skip("oscost cannot start in 20 MB of address space (a debug build)");
    }
    case(false, |c| {
        c.write("keep.csv", "precious\n");
        let mut cmd = c.wrapped(&["prlimit", "--as=20000000"]);
        cmd.args(quick_json(&[]));
        c.refused_cmd(
            r"(cannot start the signal thread: the address-space limit was reached \(RLIMIT_AS soft=20000000|out of memory: an allocation of \d+ bytes was refused).*ulimit -v",
            &mut cmd,
        );
    });
}

/// 8192 threads' stacks beyond a 300 MB address space (prlimit --as): refused before any
/// worker thread starts, in one line naming RLIMIT_AS, what the run needs and the fix.
#[test]
fn as_300mb_split_8192_threads() {
    case(false, |c| {
        c.write("keep.csv", "precious\n");
        let mut cmd = c.wrapped(&["prlimit", "--as=300000000"]);
        cmd.args(["split", "--quick", "--form", "threads", "--tasks", "8192"]);
        cmd.args(["--json", "r.json"]);
        c.refused_cmd(
            r"^oscost: split --tasks 8192 needs about [\d.]+ MiB of address space \(.* for each of 8192 threads, and about [\d.]+ MiB for the program itself\); RLIMIT_AS is 286\.1 MiB \(hard 286\.1 MiB\): raise it with ulimit -v \d+, or use fewer --tasks\n$",
            &mut cmd,
        );
    });
}

/// `report published:NAME` beside a run that holds none of the study's figures: one line
/// naming the study's experiments and the run to give, no page.
#[test]
fn report_published_without_figures() {
    case(false, |c| {
        c.osc(&[
            "--scripted",
            "-q",
            "--no-save",
            "example",
            "--json",
            "r.json",
        ])
        .rc(0);
        c.refused(
            r"published:qnx-tick: r\.json holds no figure of the study `qnx-tick` \(it reads tick-forms: give a run of `oscost study qnx-tick",
            &["report", "published:qnx-tick", "r.json", "-o", "page.html"],
        );
    });
}

/// `compare --group-by host` refused: a.json is made by `a`, b.json is host h002's.
fn group_by_refused(re: &str, a: impl FnOnce(&Case)) {
    case(false, |c| {
        host_doc(c, "b", "h002", |_| {});
        a(c);
        c.refused(re, &["compare", "--group-by", "host", "a.json", "b.json"]);
    });
}

#[test]
fn group_by_empty_host() {
    group_by_refused(
        r"a\.json: its host \(environment\.fleet\.host_name\) is empty.*correct environment\.fleet\.host_name",
        |c| host_doc(c, "a", "", |_| {}),
    );
}

#[test]
fn group_by_newline_in_host() {
    group_by_refused(
        r"a\.json: its host `h0\\nevil` \(environment\.fleet\.host_name\) holds a control character",
        |c| host_doc(c, "a", "h0\nevil", |_| {}),
    );
}

#[test]
fn group_by_nothing_shared() {
    group_by_refused(
        "group-by host: h001 shares no figure with h002, so there is nothing to compare",
        |c| {
            host_doc(c, "a", "h001", |d| {
                for e in d["experiments"].as_array_mut().unwrap() {
                    for k in ["cases", "derived"] {
                        for x in e[k].as_array_mut().into_iter().flatten() {
                            let id = format!("elsewhere.{}", x["id"].as_str().unwrap());
                            x["id"] = id.into();
                        }
                    }
                }
            })
        },
    );
}

/// A history server that accepts the connection and never answers: one line naming the wait
/// and what to check (after oscost's 30 s timeout), never EAGAIN's words.
#[test]
#[ignore = "slow: waits for oscost's 30 s timeout"]
fn history_server_never_answers() {
    case(false, |c| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // Accepts and holds every connection, answering nothing.
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for s in listener.incoming() {
                held.push(s);
            }
        });
        edited_doc(c, &c.at("r.json"), |_| {});
        let url = format!("postgres://oscost@127.0.0.1:{port}/oscost");
        let out = c.refused(
            &format!(
                r"postgres://oscost@127\.0\.0\.1:{port}/oscost: no answer within 30 s \(is a PostgreSQL server listening there"
            ),
            &["history", "push", "r.json", "--to", &url],
        );
        assert!(!out.err.contains("temporarily unavailable"), "{}", out.err);
    });
}

/// io_uring under a locked-memory limit of 0 (issue 51: "io_uring_setup: Cannot allocate
/// memory"): its cases not measured, the reason naming RLIMIT_MEMLOCK and how to raise it, the
/// run going on (0). Root is not held by the limit, so root runs it as `nobody`.
#[test]
fn uring_memlock_0_unprivileged() {
    case(false, |c| {
        unprivileged(c);
        let mut cmd = c.wrapped(&["prlimit", "--memlock=0"]);
        cmd.args(["--no-save", "uring", "--quick", "--json", "r.json"]);
        let out = c.run(&mut cmd);
        out.rc(0);
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(c.at("r.json")).unwrap()).unwrap();
        let reasons: Vec<&str> = doc["experiments"][0]["unavailable"]
            .as_array()
            .map(|u| u.iter().filter_map(|x| x["reason"].as_str()).collect())
            .unwrap_or_default();
        // A kernel without io_uring (or with it disabled) refuses for another reason first.
        if reasons
            .iter()
            .any(|r| r.contains("io_uring_disabled") || r.contains("ENOSYS"))
        {
            return common::skip("io_uring is not available here");
        }
        assert!(
            !reasons.is_empty()
                && reasons
                    .iter()
                    .all(|r| r.contains("RLIMIT_MEMLOCK") && r.contains("ulimit -l")),
            "{reasons:?}"
        );
    });
}
