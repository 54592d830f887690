//! Result files as the file system sees them: links written through, modes kept, FIFOs opened
//! once, paths refused before anything is measured, and no command line that makes oscost
//! panic. Every run is on the scripted clock (`--scripted example`), so nothing real is
//! measured and nothing depends on the machine's speed.

mod common;
use common::oscost;

use assert_cmd::Command;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn exe() -> PathBuf {
    assert_cmd::cargo::cargo_bin("oscost")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// The Markdown document of the scripted run, written to a plain new file.
fn markdown_document() -> String {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("r.md");
    oscost()
        .args(["--scripted", "-q", "example", "--markdown"])
        .arg(&md)
        .assert()
        .success();
    std::fs::read_to_string(&md).unwrap()
}

/// Asserts a refusal before measuring: exit 2, one line naming the problem, no table printed.
fn assert_refused_before_measuring(c: &mut Command, needles: &[&str]) -> String {
    let out = c.assert().code(2).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("oscost: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} not in {err}");
    }
    assert!(
        out.stdout.is_empty(),
        "it measured: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    err
}

#[test]
fn a_symlink_is_written_through_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let real_dir = dir.path().join("real");
    std::fs::create_dir(&real_dir).unwrap();
    let target = real_dir.join("r.md");
    std::fs::write(&target, "old").unwrap();
    let link = dir.path().join("link.md");
    std::os::unix::fs::symlink("real/r.md", &link).unwrap();
    oscost()
        .args(["--scripted", "-q", "example", "--markdown"])
        .arg(&link)
        .assert()
        .success();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("real/r.md"));
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        markdown_document()
    );
    // The temporary file went where the target is, and nowhere is one left.
    assert_eq!(std::fs::read_dir(&real_dir).unwrap().count(), 1);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn a_dangling_symlink_writes_the_file_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("link.md");
    std::os::unix::fs::symlink("named.md", &link).unwrap();
    oscost()
        .args(["--scripted", "-q", "example", "--markdown"])
        .arg(&link)
        .assert()
        .success();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let named = dir.path().join("named.md");
    assert_eq!(std::fs::read_to_string(named).unwrap(), markdown_document());

    // A link into a directory that does not exist: refused before measuring.
    let nowhere = dir.path().join("nowhere.md");
    std::os::unix::fs::symlink("no/such/dir/r.md", &nowhere).unwrap();
    let mut c = oscost();
    c.args(["--scripted", "example", "--markdown"])
        .arg(&nowhere);
    assert_refused_before_measuring(&mut c, &["--markdown", "does not exist"]);
}

#[test]
fn a_replaced_file_keeps_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("r.csv");
    std::fs::write(&csv, "old").unwrap();
    std::fs::set_permissions(&csv, std::fs::Permissions::from_mode(0o640)).unwrap();
    oscost()
        .args(["--scripted", "-q", "example", "--csv"])
        .arg(&csv)
        .assert()
        .success();
    assert_ne!(std::fs::read_to_string(&csv).unwrap(), "old");
    assert_eq!(mode(&csv), 0o640);
}

#[test]
fn a_new_file_gets_the_mode_the_umask_allows() {
    let dir = tempfile::tempdir().unwrap();
    for (umask, expected) in [("022", 0o644), ("027", 0o640)] {
        let json = dir.path().join(format!("r{umask}.json"));
        let status = common::isolate(&mut std::process::Command::new("sh"))
            .arg("-c")
            .arg(format!("umask {umask}; exec \"$0\" \"$@\""))
            .arg(exe())
            .args(["--scripted", "-q", "example", "--json"])
            .arg(&json)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(mode(&json), expected, "umask {umask}");
    }
}

#[test]
fn one_file_for_two_formats_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let same = dir.path().join("same.out");
    let mut c = oscost();
    c.args(["--scripted", "example", "--json"])
        .arg(&same)
        .arg("--csv")
        .arg(&same);
    assert_refused_before_measuring(&mut c, &["--json", "--csv", "same.out"]);
    assert!(!same.exists());

    // The same file by another name: `./`, and a link to it.
    std::fs::write(&same, "kept").unwrap();
    let link = dir.path().join("link.out");
    std::os::unix::fs::symlink("same.out", &link).unwrap();
    let mut c = oscost();
    c.current_dir(dir.path())
        .args([
            "--scripted",
            "example",
            "--markdown",
            "./same.out",
            "--json",
        ])
        .arg(&link);
    assert_refused_before_measuring(&mut c, &["--json", "--markdown"]);
    assert_eq!(std::fs::read_to_string(&same).unwrap(), "kept");
}

#[test]
fn a_fifo_is_opened_once_and_its_reader_gets_the_whole_document() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let reader_path = fifo.clone();
    std::thread::spawn(move || {
        // Blocks until oscost opens the FIFO; a premature open would end this read early.
        let text = std::fs::read_to_string(&reader_path);
        let _ = tx.send(text);
    });
    // Bounded: an oscost that opened the FIFO early would block at the end with no reader.
    oscost()
        .args(["--scripted", "-q", "example", "--markdown"])
        .arg(&fifo)
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let got = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("oscost never opened the FIFO")
        .unwrap();
    assert_eq!(got, markdown_document());
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn a_read_only_target_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    std::fs::write(&json, "precious").unwrap();
    std::fs::set_permissions(&json, std::fs::Permissions::from_mode(0o444)).unwrap();
    // Refused by its mode bits even for root: its owner marked it read-only.
    for flag in ["--json", "--csv", "--markdown"] {
        let mut c = oscost();
        c.args(["--scripted", "example", flag]).arg(&json);
        let err = assert_refused_before_measuring(
            &mut c,
            &[
                flag,
                "r.json",
                "read-only",
                "remove it or choose another path",
            ],
        );
        assert!(!err.contains("os error 1): "), "{err}");
        assert_eq!(std::fs::read_to_string(&json).unwrap(), "precious");
        assert_eq!(mode(&json), 0o444);
    }
    // Through a link, too.
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&json, &link).unwrap();
    let mut c = oscost();
    c.args(["--scripted", "example", "--json"]).arg(&link);
    assert_refused_before_measuring(&mut c, &["read-only"]);
    assert_eq!(std::fs::read_to_string(&json).unwrap(), "precious");
}

/// As another user (root runs the test as `nobody` through `setpriv`; anyone else skips it):
/// root's file in a sticky directory cannot be replaced, nor a file they may not write, and
/// each is one line before measuring, the file untouched.
#[test]
fn another_users_file_is_refused_before_measuring() {
    let setpriv = std::process::Command::new("setpriv")
        .arg("--help")
        .output()
        .is_ok_and(|o| o.status.success());
    if !common::is_root() || !setpriv {
        return common::skip("needs root and setpriv");
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    // A copy that `nobody` may run, wherever the build directory is.
    let copy = dir.path().join("oscost");
    std::fs::copy(exe(), &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    common::wait_until_runnable(&copy);
    for (name, file_mode, needle) in [
        ("sticky.json", 0o666, "sticky directory"),
        ("theirs.json", 0o644, "you may not write it"),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, "root's").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(file_mode)).unwrap();
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .arg(&copy)
            .args(["--scripted", "example", "--json"])
            .arg(&file);
        let err = assert_refused_before_measuring(&mut c, &[name, needle, "choose another path"]);
        assert!(!err.contains("os error 1): "), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "root's");
    }
}

/// A small deterministic generator (xorshift64*), so every run tries the same vectors.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One random argument: a real flag, a plausible value, or random bytes (often not UTF-8), so
/// every file lands in the run's own directory.
fn random_arg(rng: &mut Rng) -> OsString {
    const WORDS: &[&str] = &[
        "--json",
        "--csv",
        "--markdown",
        "--quick",
        "--samples",
        "--cpus",
        "--nice",
        "--quiet",
        "-q",
        "--verbose",
        "-v",
        "--cost",
        "--scripted",
        "--calls",
        "--help",
        "--version",
        "-",
        "--",
        "run",
        "example",
        "example-more",
        "list",
        "0",
        "5",
        "-1",
        "-20",
        "19",
        "100000",
        "0-1",
        "1,0",
        "99",
        "r.json",
        "r.csv",
    ];
    match rng.below(3) {
        0 | 1 => WORDS[rng.below(WORDS.len())].into(),
        _ => random_bytes(rng),
    }
}

/// Up to 8 random bytes, never NUL (no argument can hold one) nor `/`.
fn random_bytes(rng: &mut Rng) -> OsString {
    let len = rng.below(9);
    let bytes = (0..len)
        .map(|_| match rng.next() as u8 {
            0 | b'/' => 0xff,
            b => b,
        })
        .collect();
    OsString::from_vec(bytes)
}

#[test]
fn random_argument_vectors_never_panic() {
    const CASES: usize = 200;
    const THREADS: usize = 8;
    let exe = exe();
    let failures: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let exe = &exe;
                s.spawn(move || {
                    let cwd = tempfile::tempdir().unwrap();
                    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t as u64 + 1));
                    let mut failures = Vec::new();
                    for case in 0..CASES / THREADS {
                        let mut args: Vec<OsString> =
                            (0..rng.below(7)).map(|_| random_arg(&mut rng)).collect();
                        // One case in five describes the real machine (`env` measures nothing
                        // and records its command line, random bytes included).
                        let base: &[&str] = if case % 5 == 0 {
                            args.splice(0..0, ["--json".into(), random_bytes(&mut rng)]);
                            &["env"]
                        } else {
                            &["--scripted", "--quiet", "example"]
                        };
                        if let Some(f) = run_bounded(exe, cwd.path(), base, &args) {
                            failures.push(format!("{args:?}: {f}"));
                        }
                    }
                    failures
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs `oscost BASE ARGS` in `cwd`; says what went wrong, if anything.
fn run_bounded(exe: &Path, cwd: &Path, base: &[&str], args: &[OsString]) -> Option<String> {
    let mut child = common::isolate(&mut std::process::Command::new(exe))
        .current_dir(cwd)
        .env_remove("COLUMNS")
        .args(base)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stderr, &mut text);
        text
    });
    // A bound against a hang, not a timing: the scripted example takes a fraction of a second.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Some("did not finish (killed)".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let err = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    if status.code() == Some(101) || err.contains("panicked") {
        return Some(format!("{status}: {err}"));
    }
    None
}

/// A path ending in `/` names no file: refused before anything is measured, and nothing is
/// written under the name without the slash.
#[test]
fn a_path_ending_in_a_slash_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let err = assert_refused_before_measuring(
        oscost()
            .current_dir(dir.path())
            .args(["--scripted", "example", "--json", "r.json/"]),
        &["--json", "r.json/", "cannot end in `/`"],
    );
    assert!(!err.contains("example"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A FIFO nobody opens: the run does not wait forever, it gives up after the time set and
/// names the FIFO in one line; the FIFO stays a FIFO.
#[test]
fn a_fifo_nobody_reads_times_out_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.md");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let out = oscost()
        .env("OSCOST_OUTPUT_TIMEOUT", "1")
        .args(["--scripted", "-q", "--no-save", "example", "--markdown"])
        .arg(&fifo)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("pipe.md: nobody read it for 1 s"), "{err}");
    assert!(err.contains("OSCOST_OUTPUT_TIMEOUT"), "{err}");
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

/// `--json -` with standard output closed: refused before measuring, not a silent success.
#[test]
fn a_document_for_a_closed_stdout_is_refused() {
    let mut cmd = std::process::Command::new("sh");
    common::isolate(&mut cmd);
    let out = cmd
        .args(["-c", "exec \"$0\" \"$@\" >&-"])
        .arg(exe())
        .args(["--scripted", "-q", "--no-save", "example", "--json", "-"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("standard output is closed"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
