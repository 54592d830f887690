//! Output files as a careless user names them: names that are not UTF-8, /dev/stdout, `-`,
//! existing files, a umask, FIFOs, /dev/null and /dev/full, a closed or vanished stdout.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};

use crate::common;
use crate::runner::{arg, case, case_messages, expect_json, kill, names, Case, QUICK_SYS};

/// Files in the working directory.
fn files(c: &Case) -> Vec<std::path::PathBuf> {
    c.snapshot().into_keys().collect()
}

/// A name that is not UTF-8: written under exactly that name, or refused cleanly. `want`:
/// the experiments the result document holds (None: any JSON document, as `env` writes).
fn non_utf8(name: &str, want: Option<&str>, args: &[&str]) {
    case(want == Some("syscall"), |c| {
        let file = arg(name);
        let before = c.snapshot();
        let mut cmd = c.oscost();
        cmd.args(args).arg("--json").arg(&file);
        let out = c.run(&mut cmd);
        match out.rc {
            0 => {
                let text = std::fs::read(c.at(&file)).unwrap();
                let doc = serde_json::from_slice::<serde_json::Value>(&text);
                assert!(doc.is_ok(), "{name} is not a JSON document");
                if let Some(w) = want {
                    assert_eq!(names(&c.at(&file)).as_deref(), Some(w));
                }
                assert_eq!(
                    files(c),
                    vec![std::path::PathBuf::from(&file)],
                    "other files written"
                );
            }
            2 => {
                out.one_line();
                assert_eq!(c.snapshot(), before, "refused but wrote");
            }
            rc => panic!("exit {rc}: {}", out.err),
        }
    });
}

/// `syscall -q` with a name that is not UTF-8.
fn quick_q() -> Vec<&'static str> {
    QUICK_SYS.iter().copied().chain(["-q"]).collect()
}

#[test]
fn non_utf8_syscall_xff() {
    non_utf8(r"\xff.json", Some("syscall"), &quick_q());
}

#[test]
fn non_utf8_syscall_oxe9() {
    non_utf8(r"o\xe9.json", Some("syscall"), &quick_q());
}

#[test]
fn non_utf8_env_xff() {
    non_utf8(r"\xff.json", None, &["env"]);
}

#[test]
fn non_utf8_env_oxe9() {
    non_utf8(r"o\xe9.json", None, &["env"]);
}

#[test]
fn non_utf8_csv_markdown() {
    case(false, |c| {
        let (csv, md) = (arg(r"\xfe.csv"), arg(r"m\xe9.md"));
        let mut cmd = c.oscost();
        cmd.args(["--scripted", "-q", "example", "--csv"])
            .arg(&csv)
            .arg("--markdown")
            .arg(&md);
        c.run(&mut cmd).rc(0);
        for f in [&csv, &md] {
            assert!(std::fs::metadata(c.at(f)).unwrap().len() > 0, "{f:?} empty");
        }
        assert_eq!(files(c).len(), 2, "other files: {:?}", files(c));
    });
}

#[test]
fn json_dev_stdout_to_file() {
    case(false, |c| {
        let before = std::fs::read_link("/dev/stdout").unwrap();
        let file = std::fs::File::create(c.at("out.txt")).unwrap();
        let mut cmd = c.oscost();
        cmd.args(["--scripted", "example", "--json", "/dev/stdout"]);
        let out = c.run_to(&mut cmd, file.into());
        out.rc(0);
        expect_json(&c.at("out.txt"), "example");
        assert!(
            out.err.contains("example.cost100"),
            "the tables did not go to stderr"
        );
        let meta = std::fs::symlink_metadata("/dev/stdout").unwrap();
        assert!(meta.file_type().is_symlink());
        assert_eq!(
            std::fs::read_link("/dev/stdout").unwrap(),
            before,
            "/dev/stdout changed"
        );
        let tmp_in_dev = std::fs::read_dir("/dev")
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(".tmp"));
        assert!(!tmp_in_dev, "temporary file left in /dev");
    });
}

#[test]
fn json_dash() {
    case(false, |c| {
        let out = c.osc(&["--scripted", "example", "--json", "-"]);
        out.rc(0);
        std::fs::write(c.io.join("stdout.json"), &out.out).unwrap();
        expect_json(&c.io.join("stdout.json"), "example");
        assert!(
            out.err.contains("example.cost100"),
            "the tables did not go to stderr"
        );
    });
}

/// An existing r.json of mode `mode` is replaced and keeps it.
fn mode_kept(mode: u32) {
    case(false, |c| {
        c.write("r.json", "old\n");
        std::fs::set_permissions(c.at("r.json"), std::fs::Permissions::from_mode(mode)).unwrap();
        c.osc(&["--scripted", "-q", "example", "--json", "r.json"])
            .rc(0);
        expect_json(&c.at("r.json"), "example");
        assert_eq!(
            std::fs::metadata(c.at("r.json")).unwrap().mode() & 0o7777,
            mode
        );
    });
}

#[test]
fn existing_0644_kept() {
    mode_kept(0o644);
}

#[test]
fn existing_0600_kept() {
    mode_kept(0o600);
}

#[test]
#[ignore = "needs root: replacing another user's file"]
fn existing_owner_kept() {
    if !common::is_root() {
        return common::skip(
            "needs root: only root can replace another user's file and keep its owner",
        );
    }
    case(false, |c| {
        c.write("r.json", "old\n");
        std::os::unix::fs::chown(c.at("r.json"), Some(65534), Some(65534)).unwrap();
        c.osc(&["--scripted", "-q", "example", "--json", "r.json"])
            .rc(0);
        expect_json(&c.at("r.json"), "example");
        let m = std::fs::metadata(c.at("r.json")).unwrap();
        assert_eq!((m.uid(), m.gid()), (65534, 65534));
    });
}

/// A new file under umask `umask` gets mode `want`.
fn new_file_umask(umask: &str, want: u32) {
    case(false, |c| {
        let mut cmd = c.sh(&format!("umask {umask}; exec \"$0\" \"$@\""));
        cmd.args(["--scripted", "-q", "example", "--json", "new.json"]);
        c.run(&mut cmd).rc(0);
        expect_json(&c.at("new.json"), "example");
        assert_eq!(
            std::fs::metadata(c.at("new.json")).unwrap().mode() & 0o777,
            want
        );
    });
}

#[test]
fn new_file_umask_022() {
    new_file_umask("022", 0o644);
}

#[test]
fn new_file_umask_077() {
    new_file_umask("077", 0o600);
}

/// Output to a FIFO nobody opens: `sig` ends the wait with exit 130, the FIFO stays one.
fn fifo_no_reader(sig: &str) {
    case(false, |c| {
        assert!(std::process::Command::new("mkfifo")
            .arg(c.at("pipe.md"))
            .status()
            .unwrap()
            .success());
        let bg = c.spawn_osc(&[
            "--scripted",
            "-q",
            "--no-save",
            "example",
            "--markdown",
            "pipe.md",
        ]);
        // It gets to the FIFO: a signal before would test the start, not the wait.
        std::thread::sleep(std::time::Duration::from_secs(1));
        kill(sig, bg.pid());
        let out = bg.collect();
        out.rc(130);
        assert!(
            out.err.contains("interrupted"),
            "stderr does not say interrupted: {}",
            out.err
        );
        assert!(std::fs::metadata(c.at("pipe.md"))
            .unwrap()
            .file_type()
            .is_fifo());
    });
}

#[test]
fn markdown_fifo_no_reader_sigint() {
    fifo_no_reader("INT");
}

#[test]
fn markdown_fifo_no_reader_sigterm() {
    fifo_no_reader("TERM");
}

/// `--json -` into a pipe whose reader takes nothing (its buffer already full): SIGTERM ends
/// the wait with exit 130.
#[test]
fn json_dash_stalled_pipe_sigterm() {
    case(false, |c| {
        let q = c.io.join("q");
        assert!(std::process::Command::new("mkfifo")
            .arg(&q)
            .status()
            .unwrap()
            .success());
        // Read and write: opening does not wait for a reader, and the pipe is never read.
        let mut pipe = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&q)
            .unwrap();
        std::io::Write::write_all(&mut pipe, &[0; 65536]).unwrap();
        let mut cmd = c.oscost();
        cmd.args(["--scripted", "-q", "--no-save", "example", "--json", "-"]);
        let bg = c.spawn_to(&mut cmd, Some(pipe.try_clone().unwrap().into()));
        std::thread::sleep(std::time::Duration::from_secs(1));
        kill("TERM", bg.pid());
        let out = bg.collect();
        drop(pipe);
        out.rc(130).err_matches("interrupted");
    });
}

#[test]
fn json_dev_null() {
    case(false, |c| {
        let before = std::fs::metadata("/dev/null").unwrap();
        c.osc(&["--scripted", "-q", "example", "--json", "/dev/null"])
            .rc(0);
        let after = std::fs::metadata("/dev/null").unwrap();
        assert!(
            after.file_type().is_char_device(),
            "/dev/null is no longer a device"
        );
        assert_eq!(after.rdev(), before.rdev());
    });
}

#[test]
fn json_dev_full() {
    case(false, |c| {
        let out = c.osc(&["--scripted", "-q", "example", "--json", "/dev/full"]);
        out.rc(2).one_line().err_matches("/dev/full");
    });
}

#[test]
fn stdout_dev_full() {
    case(false, |c| {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let mut cmd = c.oscost();
        cmd.args(["--scripted", "-q", "example", "--json", "r.json"]);
        c.run_to(&mut cmd, full.into()).rc(2).one_line();
    });
}

#[test]
fn stdout_closed() {
    case(false, |c| {
        let mut cmd = c.sh("exec \"$0\" \"$@\" >&-");
        cmd.args(["--scripted", "-q", "example", "--json", "r.json"]);
        let out = c.run(&mut cmd);
        match out.rc {
            0 => {}
            2 => {
                out.one_line();
            }
            rc => panic!("exit {rc}: {}", out.err),
        }
        expect_json(&c.at("r.json"), "example");
    });
}

#[test]
fn rate_1e9_warns() {
    case(true, |c| {
        let mut args = QUICK_SYS.to_vec();
        args.extend(["--rate", "1e9", "-q", "--json", "r.json"]);
        c.osc(&args).rc(0);
        expect_json(&c.at("r.json"), "syscall");
        let said = case_messages(&c.at("r.json"), true);
        assert!(
            said.iter()
                .any(|m| m.contains("cannot run 1000000000 times a second")),
            "no case says that it cannot run 1e9 times a second: {said:?}"
        );
    });
}

#[test]
fn failed_after_good() {
    case(false, |c| {
        let out = c.osc(&[
            "--scripted",
            "-q",
            "run",
            "example",
            "example-fails",
            "--json",
            "r.json",
        ]);
        out.rc(2).one_line().err_matches(r"r\.json");
        expect_json(&c.at("r.json"), "example");
    });
}

/// Exit 0, 2 (in one line) or 141 (SIGPIPE) when the reader of stdout goes away.
fn reader_gone_ok(out: &crate::runner::Out) {
    assert!(
        [0, 2, 141].contains(&out.rc),
        "exit {}: {}",
        out.rc,
        out.err
    );
    if out.rc == 2 {
        out.one_line();
    }
}

#[test]
fn stdout_reader_gone() {
    case(true, |c| {
        let mut cmd = c.sh("\"$0\" \"$@\" | head -n 1 >/dev/null; exit ${PIPESTATUS[0]}");
        cmd.arg("--quick");
        reader_gone_ok(&c.run(&mut cmd));
    });
}

#[test]
fn json_dash_reader_gone() {
    case(true, |c| {
        let mut cmd = c.sh("\"$0\" \"$@\" | true; exit ${PIPESTATUS[0]}");
        cmd.args(QUICK_SYS).args(["-q", "--json", "-"]);
        reader_gone_ok(&c.run(&mut cmd));
    });
}

#[test]
fn two_runs_at_once() {
    case(true, |c| {
        let a = c.spawn_osc(&["ring", "--quick", "-q", "--json", "a.json"]);
        let b = c.spawn_osc(&["ring", "--quick", "-q", "--json", "b.json"]);
        let (pa, pb) = (a.pid(), b.pid());
        let oa = a.collect();
        assert_eq!(oa.rc, 0, "first run: {}", oa.err);
        let ob = b.collect();
        assert_eq!(ob.rc, 0, "second run: {}", ob.err);
        expect_json(&c.at("a.json"), "ring");
        expect_json(&c.at("b.json"), "ring");
        let ta = std::fs::read_to_string(c.at("a.json")).unwrap();
        let tb = std::fs::read_to_string(c.at("b.json")).unwrap();
        assert!(
            ta.contains(&format!("another oscost (pid {pb})")),
            "a.json does not warn about pid {pb}"
        );
        assert!(
            tb.contains(&format!("another oscost (pid {pa})")),
            "b.json does not warn about pid {pa}"
        );
    });
}

/// Under umask 0277 a run's own result file is made 0400; rewriting it after the next
/// experiment is the run's own business, not overwriting a protected file.
#[test]
fn umask_0277_own_file() {
    case(false, |c| {
        let mut cmd = c.sh("umask 0277; exec \"$0\" \"$@\"");
        cmd.args([
            "--scripted",
            "-q",
            "run",
            "example",
            "example-more",
            "--json",
            "r.json",
        ]);
        c.run(&mut cmd).rc(0);
        expect_json(&c.at("r.json"), "example,example-more");
    });
}

/// A report too large for the memory it may use (prlimit --as): one line saying the
/// allocation was refused, exit 2, not an abort (134), and no page.
#[test]
fn report_out_of_memory() {
    case(false, |c| {
        crate::runner::edited_doc(c, &c.at("big.json"), |d| {
            let first = d["experiments"][0]["cases"][0].clone();
            let raw: Vec<serde_json::Value> = first["raw_ns"]
                .as_array()
                .unwrap()
                .iter()
                .cycle()
                .take(first["raw_ns"].as_array().unwrap().len() * 20)
                .cloned()
                .collect();
            let cases: Vec<serde_json::Value> = (0..2000)
                .map(|i| {
                    let mut x = first.clone();
                    x["id"] = format!("{}.x{i}", first["id"].as_str().unwrap()).into();
                    x["samples"] = raw.len().into();
                    x["raw_ns"] = raw.clone().into();
                    x
                })
                .collect();
            d["experiments"][0]["cases"] = cases.into();
        });
        let mut cmd = c.wrapped(&["prlimit", "--as=40000000"]);
        cmd.args(["report", "big.json", "-o", "big.html"]);
        c.run(&mut cmd)
            .rc(2)
            .one_line()
            .err_matches("out of memory");
        assert!(!c.at("big.html").exists(), "a page was written");
    });
}
