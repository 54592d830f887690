//! `fs`: the file calls of Herder, Bos, Gras, Homburg and Tanenbaum, "MINIX 3: A Highly
//! Reliable, Self-Repairing Operating System" (2006), served by a file system in the kernel
//! (tmpfs) against the same calls served by a program in user space (FUSE).
//!
//! The study timed each call in a loop, loop overhead subtracted, with its drivers in the
//! kernel and in user space, and printed the difference. Here the user-space side is a
//! minimal in-memory file system ([`server`]) run as `oscost __fuse-serve DIR` in a process of
//! its own, pinned to the measuring CPU, with every kernel cache that could answer in its
//! place turned off (entry and attribute timeouts 0, `direct_io`). Each call is measured on
//! both sides in interleaved rounds (tmpfs, FUSE, tmpfs, FUSE, ...), and the requests the
//! server answered during the FUSE case are counted against the calls made.
//!
//! Mounts never outlive the run: as root the measuring process first moves into a mount
//! namespace of its own (its mounts vanish with it, however it ends), and on every way out
//! the FUSE server is told to unmount (its standard input closes) and is waited for.

pub mod server;

use crate::context::Context;
use crate::engine;
use crate::sampler::{measure_interleaved, Job};
use crate::scratch::ScratchDir;
use anyhow::Context as _;
use oscost_model::case::{Case, Check, DerivedSpec, ExperimentOutput, Unavailable};
use oscost_sys::buf::PageBuffer;
use oscost_sys::calls;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::CString;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

/// Subcommand name and id prefix.
pub const NAME: &str = oscost_model::ids::fs::NAME;

/// Bytes moved by one `read64k` or `write64k` call.
const BIG: usize = 64 * 1024;
/// Bytes written by `creat-write1k-unlink`.
const SMALL: usize = 1024;
/// The file `read64k` and `write64k` walk through, 64 KiB at a time, wrapping at its end.
pub const FILE_BYTES: usize = 4 * 1024 * 1024;
/// How long the FUSE server may take to mount and say so.
const MOUNT_PATIENCE: Duration = Duration::from_secs(10);
/// How long it may take to answer a request for its counts (it answers at once).
const COUNT_PATIENCE: Duration = Duration::from_secs(5);

/// The size limit of the tmpfs mounted for the kernel side.
const TMPFS_BYTES: u64 = 16 * 1024 * 1024;

/// The calls, in the study's order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Call {
    /// syscall(SYS_getpid): the control no file system serves
    Getpid,
    /// lseek(fd, 0, SEEK_SET) on an open file
    Lseek,
    /// open(O_RDONLY) + close of a file
    OpenClose,
    /// pread of the next 64 KiB of a 4 MiB file, wrapping at its end
    Read64k,
    /// pwrite of the next 64 KiB of a 4 MiB file, wrapping at its end
    Write64k,
    /// creat + write 1 KiB + close + unlink
    CreatWrite1kUnlink,
}

impl Call {
    fn id(self) -> String {
        engine::value_name(&self)
    }

    fn description(self) -> &'static str {
        match self {
            Call::Getpid => "syscall(SYS_getpid): the control, served by no file system",
            Call::Lseek => "lseek(fd, 0, SEEK_SET) on an open 4 MiB file",
            Call::OpenClose => "open(O_RDONLY) + close of a file (2 calls)",
            Call::Read64k => {
                "pread of the next 64 KiB of a 4 MiB file into a page-aligned buffer, wrapping \
                 at its end"
            }
            Call::Write64k => {
                "pwrite of the next 64 KiB of a 4 MiB file from a page-aligned buffer, wrapping \
                 at its end (never synced)"
            }
            Call::CreatWrite1kUnlink => "creat + write 1 KiB + close + unlink (4 calls)",
        }
    }

    /// The fewest requests the FUSE server must answer per call, and whether that is also the
    /// most (the calls the kernel answers alone must reach it never).
    fn fuse_requests(self) -> (f64, &'static str) {
        match self {
            Call::Getpid => (0.0, "no file system serves getpid"),
            Call::Lseek => (
                0.0,
                "the kernel keeps the file position: FUSE is asked only for SEEK_DATA and \
                 SEEK_HOLE",
            ),
            Call::OpenClose => (2.0, "at least an OPEN and a RELEASE"),
            Call::Read64k => (1.0, "at least one READ (direct_io: no page cache)"),
            Call::Write64k => (1.0, "at least one WRITE (direct_io: no page cache)"),
            Call::CreatWrite1kUnlink => (3.0, "at least a CREATE, a WRITE and an UNLINK"),
        }
    }

    fn uses_buffer(self) -> bool {
        matches!(
            self,
            Call::Read64k | Call::Write64k | Call::CreatWrite1kUnlink
        )
    }
}

/// Options of `oscost fs`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Calls to measure, comma-separated (default: all, in the study's order)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CALL,...")]
    pub calls: Vec<Call>,

    /// Call rate for the "share of a second" figures: at this many calls per second, what part
    /// of each second goes to the call (the MINIX 3 study priced its differences at 10 000/s)
    #[arg(long, default_value_t = 10_000.0, value_name = "CALLS_PER_S", allow_negative_numbers = true,
          value_parser = engine::parse_rate)]
    pub rate: f64,

    /// Measure the kernel side only, as if FUSE could not be mounted here (for tests)
    #[arg(long, hide = true)]
    pub no_fuse: bool,
}

/// The two sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Tmpfs,
    Fuse,
}

impl Side {
    fn id(self) -> &'static str {
        match self {
            Side::Tmpfs => "tmpfs",
            Side::Fuse => "fuse",
        }
    }

    fn about(self) -> &'static str {
        match self {
            Side::Tmpfs => "served by the kernel (tmpfs)",
            Side::Fuse => "served by a program in user space (FUSE)",
        }
    }
}

/// The kernel side's directory: a tmpfs mounted for the run (root), else one in /dev/shm.
struct KernelDir {
    dir: ScratchDir,
    mounted: bool,
    how: String,
}

impl KernelDir {
    fn new() -> Result<KernelDir, String> {
        if oscost_sys::mount::effective_uid() == 0 {
            let dir = ScratchDir::new("oscost-fs-tmpfs-")
                .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
            if oscost_sys::mount::mount_tmpfs(dir.path(), TMPFS_BYTES).is_ok() {
                return Ok(KernelDir {
                    dir,
                    mounted: true,
                    how: "a tmpfs mounted for the run".into(),
                });
            }
        }
        let shm = Path::new("/dev/shm");
        match oscost_sys::mount::fs_type(shm) {
            Ok(oscost_sys::mount::TMPFS_MAGIC) => {}
            Ok(_) => {
                return Err(
                    "/dev/shm is not a tmpfs and no tmpfs could be mounted (needs root)".into(),
                )
            }
            Err(e) => {
                return Err(format!(
                    "no tmpfs: cannot mount one (needs root) and /dev/shm is unusable ({e})"
                ))
            }
        }
        // Named as a run directory of this run's coordinator: if the whole run is killed, the
        // next run sees its creator gone and removes it (`leftovers::remove_earlier_runs`).
        let dir = ScratchDir::new_in(shm, &crate::leftovers::shm_dir_prefix())
            .map_err(|e| format!("cannot create a directory in /dev/shm: {e}"))?;
        Ok(KernelDir {
            dir,
            mounted: false,
            how: "a private directory in /dev/shm (a tmpfs)".into(),
        })
    }
}

impl Drop for KernelDir {
    fn drop(&mut self) {
        if self.mounted {
            let _ = oscost_sys::mount::unmount(self.dir.path());
        }
    }
}

/// The FUSE server process and its mount point. Dropping it closes the server's standard
/// input, which makes it unmount and exit, and waits for it (killing it if it will not go).
struct FuseServer {
    child: Child,
    input: Option<ChildStdin>,
    output: BufReader<ChildStdout>,
    dir: ScratchDir,
}

/// A directory in `PATH` holding an executable `name`.
fn in_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Why FUSE cannot be mounted here, if something it needs is plainly missing.
fn fuse_missing(opts: &Options) -> Option<String> {
    if opts.no_fuse {
        return Some("FUSE ruled out by --no-fuse".into());
    }
    let dev = Path::new("/dev/fuse");
    if !dev.exists() {
        return Some(
            "/dev/fuse does not exist: load the fuse module (modprobe fuse), or in a container \
             pass the device in (e.g. --device /dev/fuse)"
                .into(),
        );
    }
    // Anything else there (a bind mount of /dev/null, a file) opens, and mount(2) then fails
    // with a bare EINVAL: say it before.
    if !dev_is_fuse() {
        return Some(not_fuse_device());
    }
    if let Err(e) = std::fs::OpenOptions::new().read(true).write(true).open(dev) {
        return Some(format!(
            "cannot open /dev/fuse ({e}): run as root or give this user access to the device"
        ));
    }
    if oscost_sys::mount::effective_uid() != 0 && in_path("fusermount3").is_none() {
        return Some(
            "fusermount3 not found, which mounts FUSE for a user who is not root: install it \
             (Debian and Ubuntu: apt-get install fuse3) or run as root"
                .into(),
        );
    }
    None
}

impl FuseServer {
    /// Starts `oscost __fuse-serve DIR` and waits until it has mounted; the error is the
    /// reason the FUSE cases are unavailable.
    fn start() -> Result<FuseServer, String> {
        let dir = ScratchDir::new("oscost-fs-fuse-")
            .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find the oscost executable to start the server: {e}"))?;
        let mut child = std::process::Command::new(&exe)
            .arg(server::ROLE)
            .arg(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the FUSE server ({}): {e}", exe.display()))?;
        oscost_sys::count_started_tasks(1);
        let input = child.stdin.take();
        let output = BufReader::new(child.stdout.take().expect("piped"));
        let mut server = FuseServer {
            child,
            input,
            output,
            dir,
        };
        let line = match server.answer(MOUNT_PATIENCE, "to say it had mounted") {
            Ok(line) => line,
            Err(e) => return Err(format!("{e:#}")),
        };
        let line = line.trim_end();
        if line == server::READY {
            return Ok(server);
        }
        Err(match line.strip_prefix(server::FAILED) {
            Some(why) => format!(
                "mounting the FUSE file system failed: {}",
                mount_failure(why)
            ),
            None => "the FUSE server ended before it had mounted".into(),
        })
    }

    /// The server's next line, waited for at most `patience`: a server that does not answer
    /// (stopped, deadlocked) ends the exchange with one line naming it, not the run's life.
    fn answer(&mut self, patience: Duration, what: &str) -> anyhow::Result<String> {
        let pid = self.child.id();
        let mut line = String::new();
        if self.output.buffer().is_empty()
            && !oscost_sys::readiness::wait_readable(self.output.get_ref(), patience)
                .context("waiting for the FUSE server")?
        {
            // Ended before any file on its mount is closed: a close waits for the server's
            // answer, which a stopped server never gives; its end aborts the connection.
            let _ = self.child.kill();
            let _ = self.child.wait();
            anyhow::bail!(
                "the FUSE server (oscost {}, pid {pid}) did not answer within {} s {what}: it \
                 is stopped or stuck; it was ended",
                server::ROLE,
                patience.as_secs()
            );
        }
        self.output
            .read_line(&mut line)
            .with_context(|| format!("reading the FUSE server's answer {what}"))?;
        Ok(line)
    }

    /// `e` with its cause first when it is the server's end: a call on its mount then fails
    /// with whatever the kernel makes of a dead connection, which does not name the server.
    fn explain(&mut self, e: anyhow::Error) -> anyhow::Error {
        use std::os::unix::process::ExitStatusExt;
        // A server told to stop aborts its connection first and exits moments later.
        let deadline = Instant::now() + server::STOP_PATIENCE + Duration::from_secs(1);
        let ended = loop {
            match self.child.try_wait() {
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                r => break r,
            }
        };
        match ended {
            Ok(Some(status)) => {
                let how = match status.signal() {
                    Some(sig) => format!("killed by signal {sig}"),
                    None => format!("exit status {}", status.code().unwrap_or(-1)),
                };
                e.context(format!(
                    "the FUSE server (oscost {}, pid {}) ended mid-run ({how})",
                    server::ROLE,
                    self.child.id()
                ))
            }
            _ => e,
        }
    }

    /// The requests the server has answered so far, by kind.
    fn counts(&mut self) -> anyhow::Result<BTreeMap<String, u64>> {
        let input = self
            .input
            .as_mut()
            .context("the FUSE server's input is closed")?;
        writeln!(input, "{}", server::COUNT).context("asking the FUSE server for its counts")?;
        input.flush()?;
        let line = self.answer(COUNT_PATIENCE, "with its request counts")?;
        serde_json::from_str(&line)
            .with_context(|| format!("the FUSE server's counts are unreadable: {line:?}"))
    }
}

impl Drop for FuseServer {
    fn drop(&mut self) {
        drop(self.input.take());
        // It exits STOP_PATIENCE after its input closed at the latest; a stopped one is killed.
        let deadline = Instant::now() + server::STOP_PATIENCE + Duration::from_secs(1);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() >= deadline => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
        // A server killed before it unmounted, or one that ended before its unmount reached
        // the mount table: take the mount down here (lazily; through fusermount3 for a user
        // who is not root).
        server::lazy_unmount(self.dir.path());
    }
}

/// Why mounting failed, with the fix where the kernel's error alone does not say it: a device
/// at /dev/fuse that is not the FUSE device makes mount(2) fail with EINVAL.
fn mount_failure(why: &str) -> String {
    if dev_is_fuse() {
        why.to_owned()
    } else {
        format!("{why}: {}", not_fuse_device())
    }
}

/// Whether /dev/fuse is the FUSE device, the character device 10:229.
fn dev_is_fuse() -> bool {
    std::fs::metadata("/dev/fuse").is_ok_and(|m| {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        m.file_type().is_char_device() && m.rdev() == libc::makedev(10, 229)
    })
}

/// What is wrong when /dev/fuse is another file, and the fix.
fn not_fuse_device() -> String {
    "/dev/fuse is not the FUSE device (character device 10:229): recreate it (`mknod /dev/fuse \
     c 10 229`), or in a container pass the host's in (e.g. --device /dev/fuse)"
        .into()
}

/// One side's files and buffers: the 4 MiB file (open), its path, the churn file's path.
struct Files {
    side: Side,
    how: String,
    file: std::fs::File,
    path: CString,
    churn: CString,
    read_buf: PageBuffer,
    write_buf: PageBuffer,
    small: PageBuffer,
}

impl Files {
    fn new(side: Side, dir: &Path, how: String) -> anyhow::Result<Files> {
        let data = dir.join("data");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&data)
            .with_context(|| format!("creating {}", data.display()))?;
        file.write_all(&vec![0x5a; FILE_BYTES])
            .with_context(|| format!("writing {}", data.display()))?;
        let c = |p: PathBuf| CString::new(p.into_os_string().into_encoded_bytes());
        let mut write_buf = PageBuffer::new(BIG).context("mapping a write buffer")?;
        write_buf.as_mut_slice().fill(0x5a);
        let mut small = PageBuffer::new(SMALL).context("mapping a write buffer")?;
        small.as_mut_slice().fill(0xa5);
        Ok(Files {
            side,
            how,
            file,
            path: c(data)?,
            churn: c(dir.join("churn"))?,
            read_buf: PageBuffer::new(BIG).context("mapping a read buffer")?,
            write_buf,
            small,
        })
    }
}

/// The timed loop of `call` on `f`'s side.
fn job<'a>(ctx: &Context<'a>, call: Call, f: &'a mut Files) -> Job<'a> {
    let fd = f.file.as_fd();
    match call {
        Call::Getpid => Job::new(ctx, || Ok::<_, anyhow::Error>(calls::raw_getpid())),
        Call::Lseek => Job::new(ctx, move || calls::lseek_start(fd)),
        Call::OpenClose => {
            let path = &f.path;
            Job::new(ctx, move || calls::open_close(path))
        }
        Call::Read64k => {
            let buf = f.read_buf.as_mut_slice();
            let mut at = 0u64;
            Job::new(ctx, move || {
                let n = calls::pread_at(fd, buf, at)?;
                at = (at + BIG as u64) % FILE_BYTES as u64;
                ok_if(n == BIG, "short read of 64 KiB")
            })
        }
        Call::Write64k => {
            let buf = f.write_buf.as_slice();
            let mut at = 0u64;
            Job::new(ctx, move || {
                let n = calls::pwrite_at(fd, buf, at)?;
                at = (at + BIG as u64) % FILE_BYTES as u64;
                ok_if(n == BIG, "short write of 64 KiB")
            })
        }
        Call::CreatWrite1kUnlink => {
            let (churn, small) = (&f.churn, f.small.as_slice());
            Job::new(ctx, move || calls::create_write_unlink(churn, small))
        }
    }
}

fn ok_if(cond: bool, what: &str) -> anyhow::Result<()> {
    if cond {
        Ok(())
    } else {
        Err(anyhow::anyhow!("{what}"))
    }
}

fn case_id(side: Side, call: Call) -> String {
    oscost_model::ids::fs::case(side.id(), &call.id())
}

/// The counters and the check of a FUSE case: requests per call, in all and by kind.
fn fuse_evidence(
    case: &mut Case,
    call: Call,
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
    calls_made: u64,
) {
    let n = calls_made.max(1) as f64;
    let mut total = 0u64;
    for (op, &a) in after {
        let d = a.saturating_sub(before.get(op).copied().unwrap_or(0));
        total += d;
        if d > 0 {
            case.counters
                .insert(format!("fuse_{op}_per_call"), d as f64 / n);
        }
    }
    let per_call = total as f64 / n;
    case.counters
        .insert("fuse_requests_per_call".into(), per_call);
    case.counters
        .insert("calls_counted".into(), calls_made as f64);
    let (expected, why) = call.fuse_requests();
    let detail = format!(
        "requests the FUSE server answered while the case ran ({total}) over the calls made \
         ({calls_made}, warm-up included): {why}"
    );
    case.checks.push(if expected == 0.0 {
        // A RELEASE of an earlier case's close may still arrive: a few per thousand calls.
        Check::near("fuse_requests_per_call", 0.0, per_call, 0.01, &detail)
    } else {
        Check::at_least("fuse_requests_per_call", expected, per_call, 0.01, &detail)
    });
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Fs;
    const SUMMARY: &'static str =
        "File calls served by the kernel (tmpfs) against a program in user space (FUSE)";
    const ABOUT: &'static str = "File calls served by the kernel (tmpfs) against a program in \
user space (FUSE), as the MINIX 3 study of Herder, Bos, Gras, Homburg and Tanenbaum (2006) \
compared kernel-mode and user-mode drivers.

Each call (getpid as the control, lseek, open + close, a 64 KiB read and write walking a 4 MiB \
file, creat + write 1 KiB + unlink) is timed in loops, loop overhead subtracted, on a tmpfs and \
on a minimal in-memory file system that a separate oscost process serves through FUSE, in \
interleaved rounds; `fs.diff.CALL` is the difference. The FUSE side has no kernel caching \
(entry and attribute timeouts 0, direct_io), and the requests its server answers are counted \
against the calls made. Root mounts both sides in a mount namespace of its own; another user \
needs /dev/fuse and fusermount3 (Debian: fuse3), and gets /dev/shm as the tmpfs. Where FUSE \
cannot be mounted, its cases say why and the tmpfs side is still measured.\n\nTakes about 5 s; --quick about 0.6 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = false;

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    use clap::ValueEnum;
    let calls: Vec<Call> = if opts.calls.is_empty() {
        Call::value_variants().to_vec()
    } else {
        engine::first_occurrences(&opts.calls)
    };
    ctx.pin_first_cpu()?;
    let mut out = ExperimentOutput::default();
    out.params.insert("rate_per_s".into(), opts.rate.into());
    out.params
        .insert("file_bytes".into(), (FILE_BYTES as u64).into());
    // As root: a mount namespace of this process's own, so no mount can outlive it.
    let private = oscost_sys::mount::effective_uid() == 0
        && oscost_sys::mount::private_mount_namespace().is_ok();
    out.params
        .insert("private_mount_namespace".into(), private.into());

    // The server inherits the pinning: it runs on the measuring CPU, as the study's
    // user-space drivers shared its one CPU.
    let kernel = KernelDir::new();
    let fuse = match fuse_missing(opts) {
        Some(why) => Err(why),
        None => FuseServer::start(),
    };
    // Declared before the files, so that on every way out (an error returns early) the files
    // are closed before the server is told to unmount: an open file keeps a lazily unmounted
    // FUSE mount, and so the server, alive.
    let mut server: Option<FuseServer> = None;
    let mut sides: Vec<Files> = Vec::new();
    let mut missing: Vec<(Side, String)> = Vec::new();
    match &kernel {
        Ok(k) => sides.push(Files::new(Side::Tmpfs, k.dir.path(), k.how.clone())?),
        Err(why) => missing.push((Side::Tmpfs, why.clone())),
    }
    match fuse {
        Ok(s) => {
            let how = "an in-memory file system served by a separate oscost process through \
                       FUSE (entry and attribute timeouts 0, direct_io)"
                .to_owned();
            let dir = s.dir.path().to_owned();
            server = Some(s);
            sides.push(Files::new(Side::Fuse, &dir, how)?);
        }
        Err(why) => missing.push((Side::Fuse, why)),
    }
    if let Some(s) = &server {
        out.params.insert(
            "fuse_caching".into(),
            "none: entry and attribute timeouts 0, every open direct_io".into(),
        );
        let t = oscost_sys::mount::fs_type(s.dir.path()).unwrap_or(0);
        if t != oscost_sys::mount::FUSE_MAGIC {
            anyhow::bail!(
                "{} is not a FUSE mount after the server said it was",
                s.dir.path().display()
            );
        }
    }
    for (side, why) in &missing {
        for &call in &calls {
            out.unavailable.push(Unavailable {
                id: case_id(*side, call),
                description: format!("{}, {}", call.description(), side.about()),
                reason: why.clone(),
            });
        }
    }

    ctx.progress.start(
        (calls.len() * (sides.len() + ctx.sampler.samples)) as u64,
        NAME,
    );
    for &call in &calls {
        ctx.progress.message(&call.id());
        let made = Cell::new(0u64);
        let before = match server.as_mut() {
            Some(s) => Some(s.counts().map_err(|e| s.explain(e))?),
            None => None,
        };
        let mut jobs = Vec::with_capacity(sides.len());
        let mut meta = Vec::with_capacity(sides.len());
        for f in sides.iter_mut() {
            meta.push((f.side, f.how.clone(), f.read_buf.alignment()));
            let j = job(ctx, call, f);
            jobs.push(if meta.last().map(|m| m.0) == Some(Side::Fuse) {
                j.counting_ops(&made)
            } else {
                j
            });
        }
        let (results, threads) = crate::sampler::counting_threads(|| {
            measure_interleaved(ctx, jobs, &|| ctx.progress.inc(1))
        });
        let results = match (results, server.as_mut()) {
            (Err(e), Some(s)) => return Err(s.explain(e)),
            (r, _) => r?,
        };
        let after = match server.as_mut() {
            Some(s) => Some(s.counts().map_err(|e| s.explain(e))?),
            None => None,
        };
        let mut ids = Vec::new();
        for ((side, how, align), (samples, warnings)) in meta.into_iter().zip(results) {
            let mut case = Case::new(
                case_id(side, call),
                format!("{}, {}", call.description(), side.about()),
                "call",
                samples,
            )
            .param("call", call.id())
            .param("side", side.id())
            .param("file_system", how)
            .param("cpu", ctx.first_cpu() as u64)
            .param("threads_in_process", 1u64);
            if call.uses_buffer() {
                case = case.param("buffer_alignment_bytes", align as u64);
            }
            case.checks
                .extend(crate::sampler::single_task_check(threads));
            if let (Side::Fuse, Some(b), Some(a)) = (side, &before, &after) {
                fuse_evidence(&mut case, call, b, a, made.get());
            }
            case.add_messages(warnings);
            ids.push(case.id.clone());
            out.cases.push(case);
        }
        if ids.len() == 2 {
            let (k, u) = (
                &out.cases[out.cases.len() - 2],
                &out.cases[out.cases.len() - 1],
            );
            out.derived.push(DerivedSpec {
                id: oscost_model::ids::fs::diff(&call.id()),
                description: format!(
                    "{}: what serving it from a program in user space (FUSE) adds over the \
                     kernel's tmpfs",
                    call.description()
                ),
                terms: vec![(u.id.clone(), 1.0), (k.id.clone(), -1.0)],
                flagged: engine::failed_checks(u).or_else(|| engine::failed_checks(k)),
            });
        }
    }
    ctx.progress.finish();
    // Files first (an open file keeps a lazily unmounted FUSE mount alive), then the server
    // (it unmounts and exits), then the kernel side's mount.
    drop(sides);
    drop(server.take());
    drop(kernel);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{FromArgMatches, ValueEnum};

    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        let cmd =
            <Options as clap::Args>::augment_args(clap::Command::new("fs").no_binary_name(true));
        Options::from_arg_matches(&cmd.try_get_matches_from(args)?)
    }

    #[test]
    fn call_names_are_the_studys() {
        let names: Vec<String> = Call::value_variants().iter().map(|c| c.id()).collect();
        assert_eq!(
            names,
            [
                "getpid",
                "lseek",
                "open-close",
                "read64k",
                "write64k",
                "creat-write1k-unlink"
            ]
        );
        assert_eq!(case_id(Side::Fuse, Call::Read64k), "fs.fuse.read64k");
    }

    #[test]
    fn options_parse_and_bad_values_are_refused() {
        let o = parse(&["--calls", "lseek,read64k", "--rate", "50000"]).unwrap();
        assert_eq!(o.calls, [Call::Lseek, Call::Read64k]);
        assert_eq!(o.rate, 50000.0);
        assert!(parse(&["--calls", "fsync"]).is_err());
        assert!(parse(&["--rate", "0"]).is_err());
        assert!(parse(&["--rate", "-5"]).is_err());
        assert!(!parse(&[]).unwrap().no_fuse);
    }

    #[test]
    fn requests_are_checked_against_calls() {
        let before: BTreeMap<String, u64> = [("read".to_owned(), 10u64)].into();
        let after: BTreeMap<String, u64> = [("read".to_owned(), 1010u64)].into();
        let mut c = Case::new("fs.fuse.read64k", "", "call", Default::default());
        fuse_evidence(&mut c, Call::Read64k, &before, &after, 1000);
        assert_eq!(c.counters["fuse_read_per_call"], 1.0);
        assert!(c.checks[0].passed);
        let mut c = Case::new("fs.fuse.read64k", "", "call", Default::default());
        fuse_evidence(&mut c, Call::Read64k, &before, &before, 1000);
        assert!(!c.checks[0].passed, "no request reached the server");
        let mut c = Case::new("fs.fuse.getpid", "", "call", Default::default());
        fuse_evidence(&mut c, Call::Getpid, &before, &after, 1000);
        assert!(!c.checks[0].passed, "getpid must not reach the server");
    }
}
