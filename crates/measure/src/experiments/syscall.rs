//! `syscall`: what one system call costs, loop overhead subtracted (as in Herder et al.,
//! "MINIX 3: A Highly Reliable, Self-Repairing Operating System", 2006).
//!
//! Every case is a loop of one call path between two counter reads; the empty loop of the same
//! shape is timed too and subtracted. Files live in a private temporary directory that is
//! removed on every exit path (drop runs on errors and on Ctrl-C, which only sets a flag).

use crate::context::Context;
use crate::sampler::{measure_interleaved, Job};
use crate::scratch::ScratchDir;
use anyhow::Context as _;
use oscost_model::case::{Case, ExperimentOutput};
use oscost_sys::calls;
use std::ffi::CString;
use std::io::Write;
use std::os::fd::AsFd;

/// Subcommand name and id prefix.
pub const NAME: &str = "syscall";
/// One line for `oscost list`.
pub const SUMMARY: &str = "Per-call cost of common system calls, loop overhead subtracted";
/// `--help` text.
pub const ABOUT: &str = "Per-call cost of common system calls, loop overhead subtracted.

Each case times batches of one call between two counter reads and subtracts the cost of the \
same loop with an empty body. `enosys` (an invalid call number) is the kernel's entry/exit \
floor; `getpid` goes through syscall(SYS_getpid) so no library cache can answer it; \
`clock-gettime-vdso` is a reference that never enters the kernel. Reads and writes hit the \
page cache of a file in a private temporary directory, removed afterwards.";
/// Part of the default suite.
pub const IN_DEFAULT_SUITE: bool = true;

/// The measurable calls.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Call {
    /// syscall(-1) returning ENOSYS: kernel entry/exit floor
    Enosys,
    /// syscall(SYS_getpid), never cached
    Getpid,
    /// syscall(SYS_getppid), lmbench's null call
    Getppid,
    /// lseek(fd, 0, SEEK_SET)
    Lseek,
    /// open(O_RDONLY) + close
    OpenClose,
    /// pread of 64 KiB from a page-cached file
    Read64k,
    /// pwrite of 64 KiB to a temp file (page cache, never synced)
    Write64k,
    /// creat + write 1 KiB + close + unlink
    CreatWriteUnlink,
    /// stat(path)
    Stat,
    /// fstat(fd)
    Fstat,
    /// mmap + munmap of 64 KiB anonymous memory, untouched
    MmapMunmap,
    /// clock_gettime(CLOCK_MONOTONIC) through the kernel (syscall(SYS_clock_gettime))
    ClockGettimeSyscall,
    /// clock_gettime(CLOCK_MONOTONIC) via the vDSO: not a system call, reference only
    ClockGettimeVdso,
}

impl Call {
    fn id(self) -> String {
        super::value_name(&self)
    }

    fn description(self) -> &'static str {
        match self {
            Call::Enosys => "syscall(-1) -> ENOSYS: the kernel's entry/exit floor",
            Call::Getpid => "syscall(SYS_getpid): raw, no library cache",
            Call::Getppid => "syscall(SYS_getppid): lmbench's null call",
            Call::Lseek => "lseek(fd, 0, SEEK_SET) on a regular file",
            Call::OpenClose => "open(O_RDONLY) + close of a regular file (2 calls)",
            Call::Read64k => "pread 64 KiB at offset 0 (page cache)",
            Call::Write64k => "pwrite 64 KiB at offset 0 of a temp file (page cache, never synced)",
            Call::CreatWriteUnlink => "creat + write 1 KiB + close + unlink (4 calls)",
            Call::Stat => "stat(path) of a regular file",
            Call::Fstat => "fstat(fd) of a regular file",
            Call::MmapMunmap => "mmap + munmap of 64 KiB anonymous memory, untouched (2 calls)",
            Call::ClockGettimeSyscall => "clock_gettime(CLOCK_MONOTONIC) forced through the kernel",
            Call::ClockGettimeVdso => {
                "clock_gettime(CLOCK_MONOTONIC) via the vDSO: NOT a system call"
            }
        }
    }

    fn is_syscall(self) -> bool {
        self != Call::ClockGettimeVdso
    }
}

/// Options of `oscost syscall`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Calls to measure, comma-separated (default: all)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CALL,...")]
    pub calls: Vec<Call>,

    /// Call rate for the "share of a second" figure: at this many calls per second, what part
    /// of each second goes to the call (the MINIX 3 study of Herder et al., 2006, used 10 000/s)
    #[arg(long, default_value_t = 10_000.0, value_name = "CALLS_PER_S", allow_negative_numbers = true,
          value_parser = parse_rate)]
    pub rate: f64,
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 && r <= 1e9 => Ok(r),
        _ => Err(format!(
            "`{s}` is not a number of calls per second above 0 and at most 1e9"
        )),
    }
}

const BIG: usize = 64 * 1024;

/// The temp files the cases use; the directory goes away on drop.
struct Scratch {
    _dir: ScratchDir,
    file: std::fs::File,
    path: CString,
    churn_path: CString,
}

impl Scratch {
    fn new() -> anyhow::Result<Scratch> {
        let dir =
            ScratchDir::new("oscost-syscall-").context("creating a private temporary directory")?;
        let file_path = dir.path().join("data");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&file_path)
            .with_context(|| format!("creating {}", file_path.display()))?;
        file.write_all(&vec![0x5a; BIG])
            .with_context(|| format!("writing {}", file_path.display()))?;
        let c = |p: std::path::PathBuf| CString::new(p.into_os_string().into_encoded_bytes());
        Ok(Scratch {
            path: c(file_path)?,
            churn_path: c(dir.path().join("churn"))?,
            file,
            _dir: dir,
        })
    }
}

impl super::Experiment for Options {
    const NAME: &'static str = NAME;
    const SUMMARY: &'static str = SUMMARY;
    const ABOUT: &'static str = ABOUT;
    const IN_DEFAULT_SUITE: bool = IN_DEFAULT_SUITE;

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }
}

/// Runs the selected calls.
fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    use clap::ValueEnum;
    let calls: Vec<Call> = if opts.calls.is_empty() {
        Call::value_variants().to_vec()
    } else {
        super::first_occurrences(&opts.calls)
    };
    oscost_sys::set_affinity(&[ctx.first_cpu()])
        .with_context(|| format!("pinning to CPU {}", ctx.first_cpu()))?;
    let scratch = Scratch::new()?;
    let mut out = ExperimentOutput::default();
    out.params.insert("rate_per_s".into(), opts.rate.into());
    let write_buf = vec![0x5au8; BIG];
    let small = vec![0xa5u8; 1024];
    let fd = scratch.file.as_fd();
    let (path, churn) = (&scratch.path, &scratch.churn_path);
    let mut jobs = Vec::with_capacity(calls.len());
    for &call in &calls {
        jobs.push(match call {
            Call::Enosys => Job::new(ctx, || {
                let r = calls::invalid_syscall();
                ok_if(r == -1, "syscall(-1) did not fail with ENOSYS")
            }),
            Call::Getpid => Job::new(ctx, || Ok::<_, anyhow::Error>(calls::raw_getpid())),
            Call::Getppid => Job::new(ctx, || Ok::<_, anyhow::Error>(calls::raw_getppid())),
            Call::Lseek => Job::new(ctx, move || calls::lseek_start(fd)),
            Call::OpenClose => Job::new(ctx, move || calls::open_close(path)),
            Call::Read64k => {
                let mut buf = vec![0u8; BIG];
                Job::new(ctx, move || {
                    let n = calls::pread_start(fd, &mut buf)?;
                    ok_if(n == BIG, "short read of the 64 KiB file")
                })
            }
            Call::Write64k => {
                let buf = &write_buf;
                Job::new(ctx, move || {
                    let n = calls::pwrite_start(fd, buf)?;
                    ok_if(n == BIG, "short write of 64 KiB")
                })
            }
            Call::CreatWriteUnlink => {
                let small = &small;
                Job::new(ctx, move || calls::create_write_unlink(churn, small))
            }
            Call::Stat => Job::new(ctx, move || calls::stat(path)),
            Call::Fstat => Job::new(ctx, move || calls::fstat(fd)),
            Call::MmapMunmap => Job::new(ctx, || calls::mmap_munmap(BIG)),
            Call::ClockGettimeSyscall => {
                Job::new(ctx, || Ok::<_, anyhow::Error>(calls::raw_clock_gettime()))
            }
            Call::ClockGettimeVdso => {
                Job::new(ctx, || Ok::<_, anyhow::Error>(calls::vdso_clock_gettime()))
            }
        });
    }
    // Cases are sampled in interleaved rounds so that drift in the machine's speed touches
    // every call alike; a failing call's error names the call.
    ctx.progress
        .start((calls.len() + ctx.sampler.samples) as u64, NAME);
    let threads_before = crate::sampler::threads_in_process();
    let results = measure_interleaved(ctx, jobs, &|| ctx.progress.inc(1))?;
    let threads = crate::sampler::threads_in_process().max(threads_before);
    ctx.progress.finish();
    for (call, (samples, warnings)) in calls.into_iter().zip(results) {
        let mut case = Case::new(
            format!("{NAME}.{}", call.id()),
            call.description(),
            "call",
            samples,
        )
        .param("call", call.id())
        .param("system_call", call.is_syscall())
        .param("cpu", ctx.first_cpu() as u64);
        case.checks
            .extend(crate::sampler::single_task_check(threads));
        case.warnings = warnings;
        out.cases.push(case);
    }
    Ok(out)
}

fn ok_if(cond: bool, what: &str) -> anyhow::Result<()> {
    if cond {
        Ok(())
    } else {
        Err(anyhow::anyhow!(
            "{what}: {}",
            std::io::Error::last_os_error()
        ))
    }
}
