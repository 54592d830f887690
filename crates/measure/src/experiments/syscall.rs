//! `syscall`: what one system call costs, loop overhead subtracted (as in Herder et al.,
//! "MINIX 3: A Highly Reliable, Self-Repairing Operating System", 2006).
//!
//! Every case is a loop of one call path between two counter reads; the empty loop of the same
//! shape is timed too and subtracted. Files live in a private temporary directory that is
//! removed on every exit path (drop runs on errors and on Ctrl-C, which only sets a flag).

use crate::context::Context;
use crate::engine;
use crate::sampler::{measure_interleaved, Job};
use crate::scratch::ScratchDir;
use anyhow::Context as _;
use engine::Mt;
use oscost_model::case::{Case, DerivedSpec, ExperimentOutput};
use oscost_model::ids::syscall as ids;
use oscost_sys::buf::PageBuffer;
use oscost_sys::calls;
use std::ffi::CString;
use std::io::Write;
use std::os::fd::AsFd;

/// Subcommand name and id prefix.
pub const NAME: &str = ids::NAME;

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
    /// read of 1 byte from /dev/zero (lmbench lat_syscall read)
    Read1,
    /// write of 1 byte to /dev/null (lmbench lat_syscall write)
    Write1,
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
        engine::value_name(&self)
    }

    fn description(self) -> &'static str {
        match self {
            Call::Enosys => "syscall(-1) -> ENOSYS: the kernel's entry/exit floor",
            Call::Getpid => "syscall(SYS_getpid): raw, no library cache",
            Call::Getppid => "syscall(SYS_getppid): lmbench's null call",
            Call::Lseek => "lseek(fd, 0, SEEK_SET) on a regular file",
            Call::OpenClose => "open(O_RDONLY) + close of a regular file (2 calls)",
            Call::Read1 => "read 1 byte from /dev/zero into a page-aligned buffer",
            Call::Write1 => "write 1 byte from a page-aligned buffer to /dev/null",
            Call::Read64k => "pread 64 KiB at offset 0 (page cache) into a page-aligned buffer",
            Call::Write64k => {
                "pwrite 64 KiB from a page-aligned buffer at offset 0 of a temp file (page cache, \
                 never synced)"
            }
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

    /// Whether the call copies to or from a user buffer, whose alignment is then recorded.
    fn uses_buffer(self) -> bool {
        matches!(
            self,
            Call::Read1 | Call::Write1 | Call::Read64k | Call::Write64k
        )
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
          value_parser = engine::parse_rate)]
    pub rate: f64,

    /// Also measure these calls in a process with one idle extra thread, and derive what being
    /// multi-threaded costs each of them (`<case>.mt_penalty`); `none` for none
    #[arg(long, value_name = "CALL,...|none", value_delimiter = ',', default_value = "lseek,fstat",
          value_parser = parse_mt)]
    pub multi_threaded: Vec<Mt<Call>>,
}

fn parse_mt(s: &str) -> Result<Mt<Call>, String> {
    engine::parse_mt(s, "call")
}

const BIG: usize = 64 * 1024;

/// The files and buffers the cases use; the directory goes away on drop.
struct Scratch {
    _dir: ScratchDir,
    file: std::fs::File,
    zero: std::fs::File,
    null: std::fs::File,
    path: CString,
    churn_path: CString,
    write_buf: PageBuffer,
    small: Vec<u8>,
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
        let mut write_buf = PageBuffer::new(BIG).context("mapping a write buffer")?;
        write_buf.as_mut_slice().fill(0x5a);
        Ok(Scratch {
            path: c(file_path)?,
            churn_path: c(dir.path().join("churn"))?,
            file,
            zero: std::fs::File::open("/dev/zero").context("opening /dev/zero")?,
            null: std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/null")
                .context("opening /dev/null")?,
            write_buf,
            small: vec![0xa5u8; 1024],
            _dir: dir,
        })
    }
}

/// The timed loop of `call`. Read buffers are the job's own, page-aligned.
fn job<'a>(ctx: &Context<'a>, call: Call, s: &'a Scratch) -> anyhow::Result<(Job<'a>, usize)> {
    let fd = s.file.as_fd();
    let (path, churn) = (&s.path, &s.churn_path);
    let mut align = 0;
    let job = match call {
        Call::Enosys => Job::new(ctx, || {
            let r = calls::invalid_syscall();
            ok_if(r == -1, "syscall(-1) did not fail with ENOSYS")
        }),
        Call::Getpid => Job::new(ctx, || Ok::<_, anyhow::Error>(calls::raw_getpid())),
        Call::Getppid => Job::new(ctx, || Ok::<_, anyhow::Error>(calls::raw_getppid())),
        Call::Lseek => Job::new(ctx, move || calls::lseek_start(fd)),
        Call::OpenClose => Job::new(ctx, move || calls::open_close(path)),
        Call::Read1 => {
            let mut buf = PageBuffer::new(1).context("mapping a read buffer")?;
            align = buf.alignment();
            let zero = s.zero.as_fd();
            Job::new(ctx, move || {
                let n = calls::read(zero, &mut buf.as_mut_slice()[..1])?;
                ok_if(n == 1, "short read of /dev/zero")
            })
        }
        Call::Write1 => {
            align = s.write_buf.alignment();
            let (null, buf) = (s.null.as_fd(), &s.write_buf.as_slice()[..1]);
            Job::new(ctx, move || {
                let n = calls::write(null, buf)?;
                ok_if(n == 1, "short write to /dev/null")
            })
        }
        Call::Read64k => {
            let mut buf = PageBuffer::new(BIG).context("mapping a read buffer")?;
            align = buf.alignment();
            Job::new(ctx, move || {
                let n = calls::pread_start(fd, buf.as_mut_slice())?;
                ok_if(n == BIG, "short read of the 64 KiB file")
            })
        }
        Call::Write64k => {
            align = s.write_buf.alignment();
            let buf = s.write_buf.as_slice();
            Job::new(ctx, move || {
                let n = calls::pwrite_start(fd, buf)?;
                ok_if(n == BIG, "short write of 64 KiB")
            })
        }
        Call::CreatWriteUnlink => {
            let small = &s.small;
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
    };
    Ok((job, align))
}

/// Samples `calls` in interleaved rounds, so drift in the machine's speed touches every call
/// alike; returns one case per call with its thread-count check (`threads` expected).
fn measure_calls(
    ctx: &Context,
    s: &Scratch,
    calls: &[Call],
    threads_expected: u64,
) -> anyhow::Result<Vec<Case>> {
    let mut jobs = Vec::with_capacity(calls.len());
    let mut aligns = Vec::with_capacity(calls.len());
    for &call in calls {
        let (j, a) = job(ctx, call, s)?;
        jobs.push(j);
        aligns.push(a);
    }
    let (results, threads) = crate::sampler::counting_threads(|| {
        measure_interleaved(ctx, jobs, &|| ctx.progress.inc(1))
    });
    let results = results?;
    let mut cases = Vec::with_capacity(calls.len());
    for ((&call, align), (samples, warnings)) in calls.iter().zip(aligns).zip(results) {
        let description = if threads_expected > 1 {
            format!("{}, with one idle extra thread", call.description())
        } else {
            call.description().to_owned()
        };
        let mut case = Case::new(
            if threads_expected > 1 {
                ids::Id::WithThread(&call.id()).to_string()
            } else {
                ids::Id::Call(&call.id()).to_string()
            },
            description,
            "call",
            samples,
        )
        .param("call", call.id())
        .param("system_call", call.is_syscall())
        .param("cpu", ctx.first_cpu() as u64)
        .param("threads_in_process", threads_expected);
        if call.uses_buffer() {
            case = case.param("buffer_alignment_bytes", align as u64);
        }
        if !call.is_syscall() {
            case = case.user_space();
        }
        case.checks
            .extend(crate::sampler::thread_check(threads, threads_expected));
        case.add_messages(warnings);
        cases.push(case);
    }
    Ok(cases)
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Syscall;
    const SUMMARY: &'static str = "Per-call cost of common system calls, loop overhead subtracted";
    const ABOUT: &'static str = "Per-call cost of common system calls, loop overhead subtracted.

Each case times batches of one call between two counter reads and subtracts the cost of the \
same loop with an empty body. `enosys` (an invalid call number) is the kernel's entry/exit \
floor; `getpid` goes through syscall(SYS_getpid) so no library cache can answer it; \
`clock-gettime-vdso` is a reference that never enters the kernel. Reads and writes hit the \
page cache of a file in a private temporary directory, removed afterwards.\n\nTakes about 6.5 s; --quick about 0.6 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }
}

/// Runs the selected calls: single-threaded first, then the `--multi-threaded` ones again in
/// the same process with one idle extra thread (which cannot be undone: glibc stays in its
/// multi-threaded mode), and the penalty of each.
fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    use clap::ValueEnum;
    let calls: Vec<Call> = if opts.calls.is_empty() {
        Call::value_variants().to_vec()
    } else {
        engine::first_occurrences(&opts.calls)
    };
    // A multi-threaded variant only of a call that is measured; `none` anywhere means none.
    let mt = engine::pick_mt(&opts.multi_threaded, &calls);
    ctx.pin_first_cpu()?;
    let scratch = Scratch::new()?;
    let mut out = ExperimentOutput::default();
    out.params.insert("rate_per_s".into(), opts.rate.into());
    let steps = calls.len()
        + ctx.sampler.samples
        + if mt.is_empty() {
            0
        } else {
            mt.len() + ctx.sampler.samples
        };
    ctx.progress.start(steps as u64, NAME);
    out.cases = measure_calls(ctx, &scratch, &calls, 1)?;
    if !mt.is_empty() {
        let idle = crate::sampler::IdleThread::start().context("starting an idle thread")?;
        ctx.progress.message("with an idle extra thread");
        let mt_cases = measure_calls(ctx, &scratch, &mt, 2)?;
        drop(idle);
        for c in &mt_cases {
            let Some(ids::Id::WithThread(call)) = ids::Id::parse(&c.id) else {
                continue; // every case here is one with the extra thread
            };
            let st = ids::Id::Call(call).to_string();
            out.derived.push(DerivedSpec {
                id: ids::Id::MtPenalty(call).to_string(),
                description: "what one idle extra thread in the process adds to the call (the \
                              kernel takes a file reference on every call while the file table \
                              is shared; glibc leaves its single-thread paths)"
                    .into(),
                terms: vec![(c.id.clone(), 1.0), (st.clone(), -1.0)],
                flagged: engine::failed_checks(c).or_else(|| {
                    out.cases
                        .iter()
                        .find(|x| x.id == st)
                        .and_then(engine::failed_checks)
                }),
            });
        }
        out.cases.extend(mt_cases);
    }
    ctx.progress.finish();
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
