//! The one runner every case goes through: a private TMPDIR and working directory, a time
//! limit on every oscost invocation, and the checks every case gets besides its own.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use predicates::Predicate as _;

use crate::common;

/// How long one oscost invocation may take before it counts as a hang: far above what any case
/// needs (the slowest waits for oscost's own 30 s timeout), so only a real hang reaches it.
pub const LIMIT: Duration = Duration::from_secs(60);

/// `syscall --quick --samples 5 --calls getpid`: the smallest real measurement, for the bad
/// options around it.
pub const QUICK_SYS: &[&str] = &["syscall", "--quick", "--samples", "5", "--calls", "getpid"];

/// Cases share this machine's SysV sets, processes and settings. A case that measures for
/// real, or changes a setting, runs alone (write); the others (refusals, scripted runs, which
/// create no set) run beside each other (read), so a set that appears during a case is its own.
static MACHINE: RwLock<()> = RwLock::new(());

/// The ids of every SysV semaphore set on the machine.
pub fn sysv_sems() -> BTreeSet<i32> {
    let text = std::fs::read_to_string("/proc/sysvipc/sem")
        .unwrap_or_else(|e| panic!("cannot read /proc/sysvipc/sem: {e}"));
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect()
}

/// An argument written with `\xHH` escapes for bytes that are not UTF-8 (`r"\xff.json"`).
pub fn arg(s: &str) -> OsString {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') && i + 4 <= b.len() {
            let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(hex, 16) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    OsString::from_vec(out)
}

/// Whether `text` matches the regular expression `re` (the regex crate's syntax, which reads
/// the extended regular expressions of the cases as grep did).
pub fn matches(re: &str, text: &str) -> bool {
    predicates::str::is_match(re)
        .unwrap_or_else(|e| panic!("bad regex {re}: {e}"))
        .eval(text)
}

/// What one invocation did.
#[derive(Debug)]
pub struct Out {
    /// The exit status as a shell gives it: the code, or 128 + the signal that ended it.
    pub rc: i32,
    /// Standard output.
    pub out: Vec<u8>,
    /// Standard error, lossily decoded.
    pub err: String,
}

impl Out {
    /// Standard output, lossily decoded.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out).into_owned()
    }

    /// Asserts the exit status.
    pub fn rc(&self, want: i32) -> &Self {
        assert_eq!(
            self.rc, want,
            "exit {}, expected {want}: {}",
            self.rc, self.err
        );
        self
    }

    /// Exactly one line on standard error, starting `oscost: `.
    pub fn one_line(&self) -> &Self {
        assert_eq!(
            self.err.lines().count(),
            1,
            "stderr has not one line: {}",
            self.err
        );
        assert!(
            self.err.starts_with("oscost: "),
            "stderr does not start with `oscost: `: {}",
            self.err
        );
        self
    }

    /// Standard error matches `re`.
    pub fn err_matches(&self, re: &str) -> &Self {
        assert!(
            matches(re, &self.err),
            "stderr does not match /{re}/: {}",
            self.err
        );
        self
    }

    /// Standard output or standard error matches `re`.
    pub fn either_matches(&self, re: &str) -> bool {
        matches(re, &self.err) || matches(re, &self.stdout())
    }
}

/// The exit status of `status` as a shell gives it.
fn shell_rc(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// The check every invocation gets once it has ended: no panic (a hang is [`wait_bounded`]'s).
fn vet(label: &str, rc: i32, err: &str) {
    assert_ne!(rc, 101, "{label}panic: exit 101: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{label}panic: {err}"
    );
}

/// A command started in the background ([`Case::spawn`]).
pub struct Bg {
    child: Child,
    out: PathBuf,
    err: PathBuf,
    started: Instant,
    label: String,
}

impl Bg {
    /// Its pid (oscost's own when the command execs it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it has ended.
    pub fn ended(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Its standard input, if it was piped.
    pub fn take_stdin(&mut self) -> Option<std::process::ChildStdin> {
        self.child.stdin.take()
    }

    /// What it has written on standard output so far.
    pub fn stdout_so_far(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.out).unwrap_or_default()).into_owned()
    }

    /// Waits for it (within [`LIMIT`] of its start, else a hang) and vets it.
    pub fn collect(mut self) -> Out {
        let status = wait_bounded(&mut self.child, self.started, &self.label);
        let out = Out {
            rc: shell_rc(status),
            out: std::fs::read(&self.out).unwrap_or_default(),
            err: String::from_utf8_lossy(&std::fs::read(&self.err).unwrap_or_default())
                .into_owned(),
        };
        vet(&self.label, out.rc, &out.err);
        out
    }
}

/// Waits for `child`; at [`LIMIT`] after `started` kills it and fails the case as a hang.
fn wait_bounded(child: &mut Child, started: Instant, label: &str) -> std::process::ExitStatus {
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if started.elapsed() >= LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{label}hang: still running after {} s", LIMIT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `what` every 50 ms for up to `secs` seconds.
pub fn wait_for(secs: u64, mut what: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if what() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `sig` (a name kill(1) knows) to `pid`; whether it was delivered.
pub fn kill(sig: &str, pid: u32) -> bool {
    Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The command line of `pid`, NULs as spaces.
pub fn cmdline(pid: i32) -> String {
    let b = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&b).replace('\0', " ")
}

/// The measuring process (`oscost __measure`) of the oscost process `pid`.
pub fn measuring_of(pid: u32) -> Option<u32> {
    common::children_of(pid as i32)
        .into_iter()
        .find(|&c| cmdline(c).contains("__measure"))
        .map(|c| c as u32)
}

/// The workers of the measuring process of oscost process `pid`.
pub fn workers_of(pid: u32) -> Vec<u32> {
    measuring_of(pid)
        .map(|m| {
            common::children_of(m as i32)
                .into_iter()
                .map(|c| c as u32)
                .collect()
        })
        .unwrap_or_default()
}

/// A copy of oscost that `nobody` can run, made once for the whole test binary.
pub fn nobody_bin() -> &'static Path {
    static BIN: std::sync::OnceLock<(tempfile::TempDir, PathBuf)> = std::sync::OnceLock::new();
    &BIN.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let bin = common::bin_for_nobody(dir.path());
        (dir, bin)
    })
    .1
}

/// The oscost binary under test.
pub fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("oscost")
}

/// One entry of a [`Snapshot`]: type, mode, owner, link target, contents.
type Entry = (char, u32, u32, Option<PathBuf>, Option<Vec<u8>>);

/// Names, types, modes, owners, link targets and contents of everything in a directory.
pub type Snapshot = BTreeMap<PathBuf, Entry>;

/// A [`Snapshot`] of `dir`.
pub fn snapshot(dir: &Path) -> Snapshot {
    let mut snap = Snapshot::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let t = m.file_type();
            let kind = if t.is_symlink() {
                'l'
            } else if t.is_dir() {
                todo.push(p.clone());
                'd'
            } else if t.is_file() {
                'f'
            } else {
                'o'
            };
            let link = t.is_symlink().then(|| std::fs::read_link(&p).unwrap());
            let body = t.is_file().then(|| std::fs::read(&p).unwrap_or_default());
            let rel = p.strip_prefix(dir).unwrap().to_path_buf();
            snap.insert(rel, (kind, m.mode(), m.uid(), link, body));
        }
    }
    snap
}

/// One case: its directories, its marker, and what the machine held when it began.
pub struct Case {
    /// The case's directory, holding the others; removed at the end.
    root: tempfile::TempDir,
    /// The TMPDIR every process of the case gets.
    pub tmp: PathBuf,
    /// The working directory every process of the case starts in.
    pub work: PathBuf,
    /// The case's own files, outside the working directory.
    pub io: PathBuf,
    /// `HOSTILE_CASE=<root>`, in the environment of every process of the case.
    marker: String,
    sems_before: BTreeSet<i32>,
    /// Whether oscost runs as `nobody` ([`Case::nobody`]).
    nobody: bool,
    /// The invocations so far, for their file names.
    n: std::cell::Cell<u32>,
    _shared: Option<RwLockReadGuard<'static, ()>>,
    _alone: Option<RwLockWriteGuard<'static, ()>>,
}

/// The name of the marker variable.
const MARK: &str = "HOSTILE_CASE";

impl Case {
    /// A fresh case; `alone` when it measures for real or changes a setting.
    pub fn new(alone: bool) -> Case {
        // A case that failed poisons nothing the others need.
        let (shared, excl) = if alone {
            (
                None,
                Some(MACHINE.write().unwrap_or_else(|e| e.into_inner())),
            )
        } else {
            (
                Some(MACHINE.read().unwrap_or_else(|e| e.into_inner())),
                None,
            )
        };
        let root = tempfile::Builder::new()
            .prefix("hostile.")
            .tempdir()
            .unwrap();
        // `nobody` may reach the directories it is given, nothing else.
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        let tmp = root.path().join("tmp");
        let work = root.path().join("work");
        let io = root.path().join("io");
        for d in [&tmp, &work, &io] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::set_permissions(&io, std::fs::Permissions::from_mode(0o711)).unwrap();
        let marker = format!("{MARK}={}", root.path().display());
        Case {
            root,
            tmp,
            work,
            io,
            marker,
            sems_before: sysv_sems(),
            nobody: false,
            n: std::cell::Cell::new(0),
            _shared: shared,
            _alone: excl,
        }
    }

    /// From now on oscost runs as `nobody`, the working directory, TMPDIR and data directory
    /// theirs. Needs root (the caller checks).
    pub fn nobody(&mut self) {
        self.nobody = true;
        let data = self.root.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        for d in [&self.work, &self.tmp, &data] {
            std::os::unix::fs::chown(d, Some(65534), Some(65534)).unwrap();
        }
    }

    /// `cmd` set up as every process of the case: working directory, TMPDIR, marker, a history
    /// of the case's own.
    pub fn prepare<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        common::isolate_in(cmd, self.root.path())
            .current_dir(&self.work)
            .env("TMPDIR", &self.tmp)
            .env(MARK, self.root.path())
            .stdin(Stdio::null())
    }

    /// oscost as the case runs it (as `nobody` after [`Case::nobody`]).
    pub fn oscost(&self) -> Command {
        self.wrapped(&[])
    }

    /// oscost behind the wrapper `pre` (`prlimit --nofile=64`, `unshare -n`).
    pub fn wrapped(&self, pre: &[&str]) -> Command {
        let mut words: Vec<OsString> = pre.iter().map(OsString::from).collect();
        if self.nobody {
            words.splice(
                0..0,
                [
                    "setpriv",
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                ]
                .map(OsString::from),
            );
            words.push(nobody_bin().into());
        } else {
            words.push(bin().into());
        }
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..]);
        self.prepare(&mut cmd);
        cmd
    }

    /// `bash -c SCRIPT` set up as the case's processes, oscost as its `$0`: for what a shell
    /// does best (a closed descriptor, a pipeline, a umask).
    pub fn sh(&self, script: &str) -> Command {
        let mut cmd = Command::new("bash");
        cmd.arg("-c").arg(script).arg(bin());
        self.prepare(&mut cmd);
        cmd
    }

    /// Runs `cmd` bounded by [`LIMIT`], its output in files of the case, and vets it.
    pub fn run(&self, cmd: &mut Command) -> Out {
        let bg = self.spawn(cmd);
        bg.collect()
    }

    /// `oscost ARGS`.
    pub fn osc<S: AsRef<OsStr>>(&self, args: &[S]) -> Out {
        self.run(self.oscost().args(args))
    }

    /// Starts `cmd` in the background, its output in files of the case.
    pub fn spawn(&self, cmd: &mut Command) -> Bg {
        self.spawn_to(cmd, None)
    }

    /// [`Case::run`] with standard output going to `stdout`.
    pub fn run_to(&self, cmd: &mut Command, stdout: Stdio) -> Out {
        self.spawn_to(cmd, Some(stdout)).collect()
    }

    /// [`Case::spawn`] with standard output going to `stdout` if given.
    pub fn spawn_to(&self, cmd: &mut Command, stdout: Option<Stdio>) -> Bg {
        let n = self.n.get() + 1;
        self.n.set(n);
        let out = self.io.join(format!("{n}.out"));
        let err = self.io.join(format!("{n}.err"));
        let stdout = stdout.unwrap_or_else(|| std::fs::File::create(&out).unwrap().into());
        let child = cmd
            .stdout(stdout)
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        Bg {
            child,
            out,
            err,
            started: Instant::now(),
            label: format!("{:?}: ", cmd.get_program()),
        }
    }

    /// Starts `oscost ARGS` in the background.
    pub fn spawn_osc<S: AsRef<OsStr>>(&self, args: &[S]) -> Bg {
        self.spawn(self.oscost().args(args))
    }

    /// A path in the working directory.
    pub fn at(&self, name: impl AsRef<Path>) -> PathBuf {
        self.work.join(name)
    }

    /// Writes `text` to `name` in the working directory.
    pub fn write(&self, name: &str, text: &str) {
        std::fs::write(self.at(name), text).unwrap();
    }

    /// The working directory's [`Snapshot`].
    pub fn snapshot(&self) -> Snapshot {
        snapshot(&self.work)
    }

    /// Bad input: runs `oscost ARGS` and asserts a refusal matching `re`: exit 2, one
    /// `oscost: ` line, nothing on stdout, the working directory exactly as it was.
    pub fn refused<S: AsRef<OsStr>>(&self, re: &str, args: &[S]) -> Out {
        let mut cmd = self.oscost();
        cmd.args(args);
        self.refused_cmd(re, &mut cmd)
    }

    /// [`Case::refused`] for a command of the caller's.
    pub fn refused_cmd(&self, re: &str, cmd: &mut Command) -> Out {
        let before = self.snapshot();
        let out = self.run(cmd);
        assert_refusal(&out, re);
        let after = self.snapshot();
        let changed: Vec<_> = before
            .keys()
            .chain(after.keys())
            .filter(|k| before.get(*k) != after.get(*k))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        assert!(changed.is_empty(), "working directory changed: {changed:?}");
        out
    }

    /// The pid of the case's process whose command line contains `word`.
    pub fn process_with(&self, word: &str) -> Option<u32> {
        self.processes()
            .into_iter()
            .find(|&p| cmdline(p).contains(word))
            .map(|p| p as u32)
    }

    /// Processes of the case still running.
    pub fn processes(&self) -> Vec<i32> {
        common::processes_with(&self.marker)
    }

    /// The SysV sets made since the case began.
    pub fn new_sems(&self) -> BTreeSet<i32> {
        sysv_sems().difference(&self.sems_before).copied().collect()
    }

    /// The leftover checks, once the case's own expectations have passed: no process of the
    /// case (helpers that exit on their own get 3 s), no new SysV set, no `oscost-*` in its
    /// TMPDIR, no `.tmp*` file in its working directory.
    pub fn finish(self) {
        let mut problems = Vec::new();
        wait_for(3, || {
            self.processes().is_empty() && self.new_sems().is_empty()
        });
        let left = self.processes();
        if !left.is_empty() {
            let rows: Vec<_> = left
                .iter()
                .map(|p| format!("{p} {}", cmdline(*p)))
                .collect();
            problems.push(format!("left processes running: {}", rows.join("; ")));
        }
        let sems = self.new_sems();
        if !sems.is_empty() {
            problems.push(format!("left SysV semaphore sets: {sems:?}"));
            for s in &sems {
                let _ = Command::new("ipcrm").args(["-s", &s.to_string()]).status();
            }
        }
        let dirs: Vec<_> = std::fs::read_dir(&self.tmp)
            .map(|r| {
                r.flatten()
                    .map(|e| e.file_name())
                    .filter(|n| n.as_bytes().starts_with(b"oscost-"))
                    .collect()
            })
            .unwrap_or_default();
        if !dirs.is_empty() {
            problems.push(format!("left in TMPDIR: {dirs:?}"));
        }
        let tmps: Vec<_> = self
            .snapshot()
            .into_keys()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.as_bytes().starts_with(b".tmp"))
            })
            .collect();
        if !tmps.is_empty() {
            problems.push(format!(
                "left temporary files in the working directory: {tmps:?}"
            ));
        }
        assert!(problems.is_empty(), "{}", problems.join("; "));
    }
}

impl Drop for Case {
    /// Whatever happened, nothing of the case stays running, and its directory can be removed.
    fn drop(&mut self) {
        for p in self.processes() {
            kill("KILL", p as u32);
        }
        let _ = Command::new("chmod")
            .arg("-R")
            .arg("u+rwX")
            .arg(self.root.path())
            .status();
    }
}

/// Exit 2, one `oscost: ` line matching `re`, nothing on stdout.
pub fn assert_refusal(out: &Out, re: &str) {
    out.rc(2).one_line();
    assert!(
        out.out.is_empty(),
        "printed on stdout before refusing: {}",
        out.stdout()
    );
    out.err_matches(re);
}

/// Runs `body` as one case (see [`Case::new`]) and the leftover checks after it.
pub fn case(alone: bool, body: impl FnOnce(&mut Case)) {
    let mut c = Case::new(alone);
    body(&mut c);
    c.finish();
}

/// Runs every row of a table, each a case of its own, and fails naming every row that failed
/// (a failing row does not hide the rows after it).
pub fn table<R>(rows: &[R], name: impl Fn(&R) -> &str, run: impl Fn(&R)) {
    let mut failed = Vec::new();
    for r in rows {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(r)));
        if let Err(e) = result {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failed.push(format!("{}: {msg}", name(r)));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} failed:\n{}",
        failed.len(),
        rows.len(),
        failed.join("\n")
    );
}

/// The experiments' names in the result document `path`, comma-separated, or None if it is
/// not one.
pub fn names(path: &Path) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let names: Vec<_> = v["experiments"]
        .as_array()?
        .iter()
        .map(|e| e["name"].as_str().unwrap_or("?").to_owned())
        .collect();
    Some(names.join(","))
}

/// Asserts `path` is a result document holding the experiments `want` (comma-separated).
pub fn expect_json(path: &Path, want: &str) {
    assert_eq!(names(path).as_deref(), Some(want), "{}", path.display());
}

/// Every case's warnings (and notes, with `notes`) in the document `path`, as `ID: TEXT`.
pub fn case_messages(path: &Path, notes: bool) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut out = Vec::new();
    for e in v["experiments"].as_array().into_iter().flatten() {
        for c in e["cases"].as_array().into_iter().flatten() {
            for k in ["warnings", "notes"].iter().take(if notes { 2 } else { 1 }) {
                for w in c[*k].as_array().into_iter().flatten() {
                    out.push(format!(
                        "{}: {}",
                        c["id"].as_str().unwrap_or("?"),
                        w.as_str().unwrap_or("")
                    ));
                }
            }
        }
    }
    out
}

/// A scripted result document of `example` (not saved), edited by `edit`, written to `dest`;
/// the unedited one stays in the case's `io/r.json`.
pub fn edited_doc(c: &Case, dest: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let orig = c.io.join("r.json");
    let out = c.osc(&[
        OsStr::new("--scripted"),
        "-q".as_ref(),
        "--no-save".as_ref(),
        "example".as_ref(),
        "--json".as_ref(),
        orig.as_os_str(),
    ]);
    out.rc(0);
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&orig).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(dest, serde_json::to_vec(&v).unwrap()).unwrap();
}

/// NAME.json: a run of its own (its own id) of host `host`, further edited by `edit`.
pub fn host_doc(c: &Case, name: &str, host: &str, edit: impl FnOnce(&mut serde_json::Value)) {
    edited_doc(c, &c.at(format!("{name}.json")), |d| {
        d["run_id"] = uuid::Uuid::new_v4().to_string().into();
        d["environment"]["fleet"] = serde_json::json!({"host_name": host, "runner": null});
        edit(d);
    });
}
