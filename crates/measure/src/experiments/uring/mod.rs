//! `uring`: what an operation costs through io_uring, beside the system call it replaces, in
//! the same interleaved rounds.
//!
//! NOPs and reads are queued 1, 8 or 32 at a time and submitted and reaped with one
//! `io_uring_enter`; the figure is per operation. A 1-byte read of `/dev/zero` stands beside
//! `read(2)` and a 64 KiB read of a page-cached file beside `pread(2)`. The same reads through a
//! registered (fixed) file — and, for 64 KiB, `IORING_OP_READ_FIXED` into a registered buffer —
//! stand beside the unregistered ones, their ratio to them given with its CI. With SQPOLL a kernel
//! thread on another CPU submits for the process, which then makes no call at all, and that
//! thread's own CPU time is reported. The kernel's count of the calls (the `raw_syscalls`
//! tracepoint, over a separate untimed pass of the same code) checks each figure.

use crate::context::Context;
use crate::engine::{self, first_occurrences, value_name};
use crate::sampler::{self, Job};
use crate::scratch::ScratchDir;
use anyhow::Context as _;
use oscost_model::case::{Case, Check, DerivedSpec, ExperimentOutput, Samples, Unavailable};
use oscost_model::ids::uring as ids;
use oscost_model::{Message, MessageKind};
use oscost_sys::buf::PageBuffer;
use oscost_sys::calls;
use oscost_sys::ktrace::{SyscallCounter, Tracefs};
use oscost_sys::uring::{self, Ring};
use std::io::Write as _;
use std::os::fd::AsFd;
use std::time::Duration;

/// Samples per case at most with `--suite-size`.
const SUITE_SAMPLES: usize = 41;

/// Subcommand name and id prefix.
pub const NAME: &str = ids::NAME;

/// Submission slots of every ring: the largest batch.
const RING_ENTRIES: usize = 64;

/// Operations of the counted pass (rounded up to whole batches).
const COUNTED_OPS: usize = 256;

/// How long the SQPOLL thread polls without work before it sleeps.
const SQPOLL_IDLE_MS: u32 = 100;
/// Fresh SQPOLL rings sampled briefly after the case's own: each ring keeps a level of its
/// own (a few per cent apart), which one ring's interval cannot show.
const SQPOLL_MORE_RINGS: usize = 2;

/// Bytes of the large read.
const BIG: usize = 64 * 1024;

/// The operations.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Op {
    /// IORING_OP_NOP: the ring's own cost
    Nop,
    /// read of 1 byte from /dev/zero, beside read(2)
    Read1,
    /// read of 64 KiB at offset 0 of a page-cached file, beside pread(2)
    Read64k,
}

impl Op {
    const ALL: [Op; 3] = [Op::Nop, Op::Read1, Op::Read64k];

    fn default_batches(self) -> &'static [usize] {
        match self {
            Op::Nop => &[1, 8, 32],
            Op::Read1 | Op::Read64k => &[1, 32],
        }
    }

    /// The id and description of the plain system call beside it.
    fn syscall(self) -> Option<(&'static str, &'static str)> {
        match self {
            Op::Nop => None,
            Op::Read1 => Some((
                "syscall-read1",
                "read(2) of 1 byte from /dev/zero into a page-aligned buffer",
            )),
            Op::Read64k => Some((
                "syscall-pread64k",
                "pread(2) of 64 KiB at offset 0 of a page-cached file into a page-aligned buffer",
            )),
        }
    }

    fn description(self, batch: usize) -> String {
        let what = match self {
            Op::Nop => "NOP",
            Op::Read1 => "1-byte read of /dev/zero",
            Op::Read64k => "64 KiB read at offset 0 of a page-cached file",
        };
        format!("io_uring {what}, {batch} submitted and reaped per io_uring_enter")
    }
}

/// Options of `oscost uring`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Operations, comma-separated (default: all)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "OP,...")]
    pub ops: Vec<Op>,

    /// Operations per io_uring_enter, comma-separated, each 1 to 64 [default: 1,8,32 for
    /// nop; 1,32 for the reads]
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub batches: Vec<usize>,

    /// Leave out the SQPOLL case (a kernel thread polling on a second CPU)
    #[arg(long)]
    pub no_sqpoll: bool,

    /// Leave out the reads through a registered file (and, for 64 KiB, a registered buffer)
    #[arg(long)]
    pub no_fixed: bool,

    /// At most 41 samples of 1 ms after at least 10 ms of warm-up, as the default suite takes
    /// them
    #[arg(long)]
    pub suite_size: bool,
}

/// One timed case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `op` through a ring, `batch` per enter.
    Ring(Op, usize),
    /// A read `op` through a ring with the file registered (and for 64 KiB the buffer too,
    /// IORING_OP_READ_FIXED), `batch` per enter.
    Fixed(Op, usize),
    /// The system call `op` replaces.
    Syscall(Op),
}

/// What a run measures, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    kinds: Vec<Kind>,
    sqpoll: bool,
}

fn plan(opts: &Options) -> anyhow::Result<Plan> {
    let ops = if opts.ops.is_empty() {
        Op::ALL.to_vec()
    } else {
        first_occurrences(&opts.ops)
    };
    if let Some(&b) = opts.batches.iter().find(|&&b| b == 0 || b > RING_ENTRIES) {
        anyhow::bail!(
            "--batches {b}: a batch is 1 to {RING_ENTRIES} operations (the ring's size); give \
             batches in that range"
        );
    }
    let mut kinds = Vec::new();
    for &op in &ops {
        let batches = if opts.batches.is_empty() {
            op.default_batches().to_vec()
        } else {
            first_occurrences(&opts.batches)
        };
        kinds.extend(batches.iter().map(|&b| Kind::Ring(op, b)));
        if op != Op::Nop && !opts.no_fixed {
            kinds.extend(batches.iter().map(|&b| Kind::Fixed(op, b)));
        }
        if op.syscall().is_some() {
            kinds.push(Kind::Syscall(op));
        }
    }
    Ok(Plan {
        kinds,
        sqpoll: !opts.no_sqpoll && ops.contains(&Op::Nop),
    })
}

fn case_id(k: Kind) -> String {
    match k {
        Kind::Ring(op, b) => ids::Id::Ring(&value_name(&op), b).to_string(),
        Kind::Fixed(op, b) => ids::Id::Fixed(&value_name(&op), b).to_string(),
        Kind::Syscall(op) => ids::Id::Syscall(op.syscall().map_or("", |s| s.0)).to_string(),
    }
}

const SQPOLL_ID: &str = ids::SQPOLL;

/// The scratch file of the large read, in the page cache; removed on drop.
struct Scratch {
    _dir: ScratchDir,
    file: std::fs::File,
    zero: std::fs::File,
}

impl Scratch {
    fn new() -> anyhow::Result<Scratch> {
        let dir =
            ScratchDir::new("oscost-uring-").context("creating a private temporary directory")?;
        let path = dir.path().join("data");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        file.write_all(&vec![0x5a; BIG])
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(Scratch {
            file,
            zero: std::fs::File::open("/dev/zero").context("opening /dev/zero")?,
            _dir: dir,
        })
    }
}

/// One case's state: its ring (if any) and its own page-aligned buffer.
struct Runner<'a> {
    kind: Kind,
    ring: Option<Ring>,
    buf: PageBuffer,
    s: &'a Scratch,
}

impl<'a> Runner<'a> {
    fn new(kind: Kind, s: &'a Scratch, sqpoll_cpu: Option<usize>) -> anyhow::Result<Runner<'a>> {
        let ring = match (kind, sqpoll_cpu) {
            (Kind::Syscall(_), _) => None,
            (Kind::Ring(..) | Kind::Fixed(..), None) => Some(Ring::new(RING_ENTRIES as u32)?),
            (Kind::Ring(..) | Kind::Fixed(..), Some(cpu)) => {
                Some(Ring::with_sqpoll(RING_ENTRIES as u32, cpu, SQPOLL_IDLE_MS)?)
            }
        };
        let len = match kind {
            Kind::Ring(Op::Read64k, _) | Kind::Syscall(Op::Read64k) => BIG,
            // A registered buffer is the ring's own.
            _ => 1,
        };
        let mut ring = ring;
        if let (Kind::Fixed(op, _), Some(r)) = (kind, ring.as_mut()) {
            let file = if op == Op::Read64k { &s.file } else { &s.zero };
            r.register_file(file.as_fd())?;
            if op == Op::Read64k {
                r.register_buffer(BIG)?;
            }
        }
        Ok(Runner {
            kind,
            ring,
            buf: PageBuffer::new(len).context("mapping a read buffer")?,
            s,
        })
    }

    /// Operations one call of [`Runner::batch`] does.
    fn ops(&self) -> usize {
        match self.kind {
            Kind::Ring(_, b) | Kind::Fixed(_, b) => b,
            Kind::Syscall(_) => 1,
        }
    }

    /// One batch: `b` operations through the ring, or one system call.
    #[inline]
    fn batch(&mut self) -> anyhow::Result<()> {
        let buf = self.buf.as_mut_slice();
        match (self.kind, self.ring.as_mut()) {
            (Kind::Ring(Op::Nop, b), Some(r)) => r.nops(b)?,
            (Kind::Ring(Op::Read1, b), Some(r)) => {
                r.reads(self.s.zero.as_fd(), &mut buf[..1], 0, b)?
            }
            (Kind::Ring(Op::Read64k, b), Some(r)) => {
                r.reads(self.s.file.as_fd(), &mut buf[..BIG], 0, b)?
            }
            (Kind::Fixed(Op::Read1, b), Some(r)) => r.reads_fixed_file(&mut buf[..1], 0, b)?,
            (Kind::Fixed(_, b), Some(r)) => r.reads_fixed(0, b)?,
            (Kind::Syscall(Op::Read64k), _) => {
                let n = calls::pread_start(self.s.file.as_fd(), &mut buf[..BIG])?;
                anyhow::ensure!(n == BIG, "short read of the 64 KiB file: {n} bytes");
            }
            (Kind::Syscall(_), _) => {
                let n = calls::read(self.s.zero.as_fd(), &mut buf[..1])?;
                anyhow::ensure!(n == 1, "short read of /dev/zero");
            }
            (Kind::Ring(..) | Kind::Fixed(..), None) => {
                unreachable!("a ring case has its ring")
            }
        }
        Ok(())
    }
}

/// The kernel's system-call counts, opened after the timing (they slow every call down).
struct Counters {
    all: SyscallCounter,
    enter: SyscallCounter,
    _fs: Tracefs,
}

fn open_counters() -> Result<Counters, String> {
    let fs = Tracefs::open().map_err(|e| e.to_string())?;
    let all = SyscallCounter::open(&fs, None).map_err(|e| e.to_string())?;
    let enter = SyscallCounter::open(&fs, Some(&format!("id == {}", libc::SYS_io_uring_enter)))
        .map_err(|e| e.to_string())?;
    Ok(Counters {
        all,
        enter,
        _fs: fs,
    })
}

/// What the counted pass found: (operations, all calls, io_uring_enter calls).
type Counted = (u64, u64, u64);

fn counted_pass(r: &mut Runner, c: &Counters) -> anyhow::Result<Counted> {
    let per = r.ops();
    let batches = COUNTED_OPS.div_ceil(per);
    let run = |r: &mut Runner| -> anyhow::Result<()> {
        for _ in 0..batches {
            r.batch()?;
        }
        Ok(())
    };
    let (res, all) = c.all.count(|| run(r))?;
    res?;
    let (res, enter) = c.enter.count(|| run(r))?;
    res?;
    Ok(((batches * per) as u64, all, enter))
}

/// Per-operation samples from per-batch ones.
fn per_op(s: Samples, per: usize) -> Samples {
    let d = per as f64;
    Samples {
        per_op_ns: s.per_op_ns.iter().map(|v| v / d).collect(),
        per_op_ticks: s.per_op_ticks.iter().map(|v| v / d).collect(),
        iterations_per_sample: s.iterations_per_sample * per as u64,
        loop_overhead_ns: s.loop_overhead_ns / d,
    }
}

fn add_counts(case: &mut Case, kind: Kind, counted: &Result<Counted, String>) {
    let (ops, all, enter) = match counted {
        Ok((ops, all, enter)) => (*ops as f64, *all as f64, *enter as f64),
        Err(why) => {
            case.notes.push(Message::from(
                format!("system calls not counted: {why}").as_str(),
            ));
            return;
        }
    };
    let (per_all, per_enter) = (all / ops, enter / ops);
    case.counters.insert("system_calls_per_op".into(), per_all);
    case.counters
        .insert("io_uring_enter_per_op".into(), per_enter);
    let how = format!(
        "raw_syscalls:sys_enter counted by the kernel for this thread over {ops} operations of \
         the same code, untimed: {all} calls, {enter} of them io_uring_enter"
    );
    match kind {
        Kind::Ring(_, b) | Kind::Fixed(_, b) => {
            let want = 1.0 / b as f64;
            case.checks.push(Check::near(
                "io_uring_enter_per_op",
                want,
                per_enter,
                1e-9,
                &format!("{how}; {b} operations per enter"),
            ));
            case.checks.push(Check::near(
                "system_calls_per_op",
                want,
                per_all,
                1e-9,
                &format!("{how}; io_uring_enter must be the only call"),
            ));
        }
        Kind::Syscall(_) => case.checks.push(Check::near(
            "system_calls_per_op",
            1.0,
            per_all,
            1e-9,
            &format!("{how}; one call per operation"),
        )),
    }
}

fn k_description(k: Kind) -> String {
    match k {
        Kind::Ring(op, b) => op.description(b),
        Kind::Fixed(Op::Read64k, b) => format!(
            "io_uring READ_FIXED of 64 KiB at offset 0 of a page-cached file, registered file \
             and registered buffer, {b} submitted and reaped per io_uring_enter"
        ),
        Kind::Fixed(op, b) => format!("{}, through a registered file", op.description(b)),
        Kind::Syscall(op) => op.syscall().map_or("", |s| s.1).to_owned(),
    }
}

/// Bootstrap resamples of the ratio of a registered case to its unregistered one.
const RATIO_RESAMPLES: usize = 2000;

/// Each registered case beside the same read unregistered at the same batch, both from the
/// same interleaved rounds: the ratio of their medians with a bootstrap 95 % CI as counters,
/// a note saying whether registering changed the figure, and the difference as a derived
/// figure.
fn registered_ratios(out: &mut ExperimentOutput, kinds: &[Kind]) {
    for &k in kinds {
        let Kind::Fixed(op, b) = k else { continue };
        let (id, base) = (case_id(k), case_id(Kind::Ring(op, b)));
        let Some(plain) = out.cases.iter().find(|c| c.id == base) else {
            continue;
        };
        let plain_ns = plain.samples.per_op_ns.clone();
        let flagged = [&id, &base].iter().find_map(|c| {
            out.cases
                .iter()
                .find(|x| &&x.id == c)
                .and_then(engine::failed_checks)
        });
        let Some(case) = out.cases.iter_mut().find(|c| c.id == id) else {
            continue;
        };
        if let Some(r) = oscost_stats::bootstrap_ratio_ci(
            &plain_ns,
            &case.samples.per_op_ns,
            RATIO_RESAMPLES,
            0x5eed,
        ) {
            let [lo, hi] = r.ci95;
            case.counters
                .insert("ratio_to_unregistered".into(), r.estimate);
            case.counters
                .insert("ratio_to_unregistered_ci_lo".into(), lo);
            case.counters
                .insert("ratio_to_unregistered_ci_hi".into(), hi);
            let verdict = if hi < 1.0 {
                "registering made it cheaper"
            } else if lo > 1.0 {
                "registering made it dearer"
            } else {
                "registering did not change the figure (the interval holds 1)"
            };
            case.notes.push(Message::from(
                format!(
                    "{verdict}: {:.3} × {base} [{lo:.3}, {hi:.3}] (ratio of medians, \
                     bootstrap 95 % CI, same rounds)",
                    r.estimate
                )
                .as_str(),
            ));
        }
        out.derived.push(DerivedSpec {
            id: ids::minus_unregistered(&id),
            description: format!(
                "what registering saves (negative) or costs per operation against {base}"
            ),
            terms: vec![(id, 1.0), (base, -1.0)],
            flagged,
        });
    }
}

fn unavailable_reason(e: &anyhow::Error) -> String {
    format!("{e:#}")
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Uring;
    const SUMMARY: &'static str =
        "io_uring's cost per operation beside the system call it replaces";
    const ABOUT: &'static str = "io_uring's cost per operation beside the system call it \
replaces, in the same interleaved rounds: NOPs and reads queued 1, 8 or 32 at a time and \
submitted and reaped with one io_uring_enter; a 1-byte read of /dev/zero beside read(2), a \
64 KiB read of a page-cached file beside pread(2); the same reads through a registered file \
(and for 64 KiB READ_FIXED into a registered buffer), each with its ratio to the unregistered \
read and that ratio's 95 % CI (--no-fixed leaves them out; the suites do); and NOPs through \
SQPOLL, where a kernel thread polling on the second CPU of the set submits for the process \
(its CPU time reported: it is not free; the figure grows as other work takes the poller's CPU).

Each figure is per operation. A separate untimed pass of the same code counts the calls the \
kernel saw (the raw_syscalls:sys_enter tracepoint, per thread) and checks one io_uring_enter \
per batch; while that count is open every system call takes the kernel's slower traced path, \
so it never runs during timing. A disabled or missing io_uring is said in one line.\n\nTakes \
about 6 s (4 s with --no-fixed; the default suite's five cases about 0.5 s); --quick about \
0.6 s (the quick suite's two cases about 0.15 s) on a quiet 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    const SUITE_ARGS: &'static [&'static str] = &[
        "--suite-size",
        "--ops",
        "nop,read1",
        "--batches",
        "1,32",
        "--no-sqpoll",
        "--no-fixed",
    ];
    const QUICK_SUITE_ARGS: &'static [&'static str] = &[
        "--ops",
        "read1",
        "--batches",
        "32",
        "--no-sqpoll",
        "--no-fixed",
    ];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    let p = plan(opts)?;
    let mut out = ExperimentOutput::default();
    if let Err(e) = Ring::new(1) {
        out.unavailable.push(Unavailable {
            id: ids::EVERY.into(),
            description: "every io_uring case".into(),
            reason: e.to_string(),
        });
        return Ok(out);
    }
    let sampler = if opts.suite_size {
        // No budget of its own: the samples and their length bound the time.
        let s = ctx.sampler;
        s.for_suite(SUITE_SAMPLES, Duration::from_millis(10), s.budget)
    } else {
        ctx.sampler
    };
    let ctx = &ctx.with_sampler(sampler);
    ctx.pin_first_cpu()?;
    let scratch = Scratch::new()?;
    let steps =
        p.kinds.len() + ctx.sampler.samples + if p.sqpoll { 2 + SQPOLL_MORE_RINGS } else { 0 };
    ctx.progress.start(steps as u64, NAME);

    // A ring that cannot register its file or buffer (a locked-memory limit, an old kernel)
    // leaves its case unmeasured and said; every other failure is the run's.
    let mut runners = Vec::new();
    let mut kinds = Vec::new();
    for &k in &p.kinds {
        match Runner::new(k, &scratch, None) {
            Ok(r) => {
                runners.push(r);
                kinds.push(k);
            }
            Err(e) if matches!(k, Kind::Fixed(..)) => out.unavailable.push(Unavailable {
                id: case_id(k),
                description: k_description(k),
                reason: format!("{e:#}"),
            }),
            Err(e) => return Err(e),
        }
    }
    let p = Plan { kinds, ..p };
    let jobs: Vec<Job> = runners
        .iter_mut()
        .map(|r| Job::new(ctx, move || r.batch()))
        .collect();
    let (results, threads) = sampler::counting_threads(|| {
        sampler::measure_interleaved(ctx, jobs, &|| ctx.progress.inc(1))
    });
    let results = results?;
    let counters = open_counters();
    for ((r, (samples, said)), &kind) in runners.iter_mut().zip(results).zip(&p.kinds) {
        let counted = match &counters {
            Ok(c) => counted_pass(r, c).map_err(|e| format!("{e:#}")),
            Err(why) => Err(why.clone()),
        };
        let unit = match kind {
            Kind::Ring(..) | Kind::Fixed(..) => "operation",
            Kind::Syscall(_) => "call",
        };
        let desc = k_description(kind);
        let mut case = Case::new(case_id(kind), desc, unit, per_op(samples, r.ops()))
            .param("cpu", ctx.first_cpu() as u64);
        match kind {
            Kind::Ring(op, b) => {
                case = case
                    .param("op", value_name(&op))
                    .param("batch", b as u64)
                    .param("interface", "io_uring");
            }
            Kind::Fixed(op, b) => {
                case = case
                    .param("op", value_name(&op))
                    .param("batch", b as u64)
                    .param("interface", "io_uring registered")
                    .param(
                        "registered",
                        if op == Op::Read64k {
                            "file and buffer"
                        } else {
                            "file"
                        },
                    );
            }
            Kind::Syscall(op) => {
                case = case
                    .param("op", value_name(&op))
                    .param("batch", 1u64)
                    .param("interface", "system call");
            }
        }
        add_counts(&mut case, kind, &counted);
        case.checks.extend(sampler::single_task_check(threads));
        case.add_messages(said);
        out.cases.push(case);
    }
    drop(runners);
    for k in &p.kinds {
        if let Kind::Ring(op, _) = *k {
            if let Some((sys, _)) = op.syscall() {
                let (id, base) = (case_id(*k), ids::Id::Syscall(sys).to_string());
                let flagged = [&id, &base].iter().find_map(|c| {
                    out.cases
                        .iter()
                        .find(|x| &&x.id == c)
                        .and_then(engine::failed_checks)
                });
                out.derived.push(DerivedSpec {
                    id: ids::minus_syscall(&id),
                    description: format!(
                        "what the io_uring read costs per operation beyond {sys} (negative: \
                         cheaper)"
                    ),
                    terms: vec![(id, 1.0), (base, -1.0)],
                    flagged,
                });
            }
        }
    }
    registered_ratios(&mut out, &p.kinds);
    if p.sqpoll {
        match sqpoll_case(ctx, &scratch, &counters) {
            Ok(c) => out.cases.push(c),
            Err(why) => out.unavailable.push(Unavailable {
                id: SQPOLL_ID.into(),
                description: "io_uring NOPs submitted by an SQPOLL kernel thread".into(),
                reason: why,
            }),
        }
    }
    ctx.progress.finish();
    Ok(out)
}

/// NOPs one at a time through an SQPOLL ring whose thread polls on the second CPU of the set.
/// `Err` is why it cannot be measured here.
fn sqpoll_case(
    ctx: &Context,
    s: &Scratch,
    counters: &Result<Counters, String>,
) -> Result<Case, String> {
    let Some(&cpu) = ctx.cpus.get(1) else {
        return Err(format!(
            "the SQPOLL thread needs a CPU of its own beside the measuring one, and the set has \
             only CPU {}: give --cpus two CPUs",
            ctx.first_cpu()
        ));
    };
    let mut r =
        Runner::new(Kind::Ring(Op::Nop, 1), s, Some(cpu)).map_err(|e| unavailable_reason(&e))?;
    // Starts the thread before it is looked for.
    r.batch().map_err(|e| format!("{e:#}"))?;
    let tid = uring::sqpoll_thread()
        .ok_or("no iou-sqp thread appeared in /proc/self/task after the ring was set up")?;
    let poller = || oscost_sys::timer::task_times(tid).ok().map(|t| t.run_ns);
    let ops = std::cell::Cell::new(0u64);
    let (cpu0, t0) = (poller(), ctx.clock.now());
    let job = Job::new(ctx, || r.batch()).counting_ops(&ops);
    let (results, threads) = sampler::counting_threads(|| {
        sampler::measure_interleaved(ctx, vec![job], &|| ctx.progress.inc(1))
    });
    let (samples, said) = results
        .map_err(|e| format!("{e:#}"))?
        .into_iter()
        .next()
        .ok_or("no samples")?;
    let wall = ctx
        .clock
        .ticks_to_ns(ctx.clock.now().wrapping_sub(t0) as f64);
    let cpu1 = poller();
    let counted = match counters {
        Ok(c) => counted_pass(&mut r, c).map_err(|e| format!("{e:#}")),
        Err(why) => Err(why.clone()),
    };
    // Its poller gone before the next ring's starts.
    drop(r);
    let first = oscost_stats::summarize(&samples.per_op_ns).ok_or("no finite samples")?;
    let more = more_ring_levels(ctx, s, cpu).map_err(|e| format!("{e:#}"))?;
    let mut case = Case::new(
        SQPOLL_ID,
        "io_uring NOP, queued one at a time and submitted by an SQPOLL kernel thread polling \
         on another CPU; completions polled for, no system call",
        "operation",
        samples,
    )
    .param("op", "nop")
    .param("batch", 1u64)
    .param("interface", "io_uring SQPOLL")
    .param("cpu", ctx.first_cpu() as u64)
    .param("poller_cpu", cpu as u64);
    ring_levels(&mut case, &first, &more);
    // Over the whole sampling (calibration and warm-up included, every operation counted):
    // the scheduler updates a running thread's time only at ticks and switches, so a short
    // pass would read nothing.
    if let Some((a, b)) = cpu0.zip(cpu1) {
        let used = b.saturating_sub(a) as f64;
        case.counters
            .insert("poller_cpu_share".into(), used / wall.max(1.0));
        case.counters.insert(
            "poller_cpu_ns_per_op".into(),
            used / ops.get().max(1) as f64,
        );
    }
    match &counted {
        Ok((ops, all, enter)) => {
            let ops_f = *ops as f64;
            case.counters
                .insert("system_calls_per_op".into(), *all as f64 / ops_f);
            case.counters
                .insert("io_uring_enter_per_op".into(), *enter as f64 / ops_f);

            case.checks.push(Check::near(
                "io_uring_enter_per_op",
                0.0,
                *enter as f64 / ops_f,
                0.01,
                &format!(
                    "raw_syscalls:sys_enter counted by the kernel for this thread over {ops} \
                     operations of the same code, untimed: {enter} io_uring_enter ({all} calls \
                     in all); the polling thread submits, so at most one wake-up call per 100 \
                     operations"
                ),
            ));
        }
        Err(why) => case.notes.push(Message::from(
            format!("system calls not counted: {why}").as_str(),
        )),
    }
    // The poller is a thread of this process; the measuring thread is still the only one that
    // user space started.
    case.checks.extend(sampler::thread_check(threads, 2));
    case.add_messages(said);
    Ok(case)
}

/// Each of [`SQPOLL_MORE_RINGS`] fresh SQPOLL rings, one after another, sampled with a
/// quarter of the samples: its summary per operation.
fn more_ring_levels(
    ctx: &Context,
    s: &Scratch,
    cpu: usize,
) -> anyhow::Result<Vec<oscost_stats::Summary>> {
    let sampler = crate::context::SamplerConfig {
        samples: (ctx.sampler.samples / 4).max(crate::context::MIN_SAMPLES),
        ..ctx.sampler
    };
    let ctx = &ctx.with_sampler(sampler);
    let mut levels = Vec::new();
    for _ in 0..SQPOLL_MORE_RINGS {
        let mut r = Runner::new(Kind::Ring(Op::Nop, 1), s, Some(cpu))?;
        r.batch()?;
        let job = Job::new(ctx, || r.batch());
        let (samples, _) = sampler::measure_interleaved(ctx, vec![job], &|| {})?
            .into_iter()
            .next()
            .context("no samples")?;
        ctx.progress.inc(1);
        levels.push(oscost_stats::summarize(&samples.per_op_ns).context("no finite samples")?);
    }
    Ok(levels)
}

/// The medians of the case's ring (`first`) and of the rings after it (`more`), their spread,
/// and a warning where another ring's interval does not meet the case's: the case's interval
/// holds one ring's samples, and a rerun gets a ring of its own.
fn ring_levels(case: &mut Case, first: &oscost_stats::Summary, more: &[oscost_stats::Summary]) {
    let medians: Vec<f64> = std::iter::once(first)
        .chain(more)
        .map(|s| s.median)
        .collect();
    let (lo, hi) = medians
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &m| {
            (l.min(m), h.max(m))
        });
    case.params
        .insert("ring_medians_ns".into(), serde_json::json!(medians));
    let spread = (hi / lo - 1.0) * 100.0;
    case.counters.insert("ring_level_spread_pct".into(), spread);
    let apart = more
        .iter()
        .filter(|s| s.ci95[0] > first.ci95[1] || s.ci95[1] < first.ci95[0])
        .count();
    if apart > 0 {
        case.warnings.push(Message::new(
            MessageKind::LevelMovesBetweenRings,
            format!(
                ": {apart} of {} fresh SQPOLL rings read outside this case's 95 % interval \
                 ({:.1}–{:.1} ns), which holds one ring's samples; the ring medians run from \
                 {lo:.1} to {hi:.1} ns ({spread:+.1} %), where a rerun may land",
                more.len(),
                first.ci95[0],
                first.ci95[1],
            ),
        ));
    }
}

#[cfg(test)]
mod tests;
