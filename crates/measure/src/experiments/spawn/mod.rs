//! `spawn`: what creating a task costs: fork, vfork, posix_spawn and fork + execve of a
//! minimal static helper and of a dynamically linked program, and a thread; each created and
//! waited for, one at a time, from a single-threaded process pinned to one CPU, with the new
//! task on the same CPU. The process cases are repeated with the parent holding more touched
//! memory, so a fork's cost can be read against the page tables it copies, and fork alone with
//! the parent holding thousands of one-page shared mappings, so it can be read against the
//! mappings it duplicates.
//!
//! Each sample is one creation and its wait, timed alone between two counter reads (the ops
//! take microseconds to milliseconds, so the reads' own cost is negligible; it is measured and
//! subtracted anyway). The cases of one parent size are sampled in interleaved rounds, so
//! drift of the machine touches them alike.

mod mappings;

use crate::context::Context;
use crate::cpuset::AffinityRestore;
use crate::engine;
use crate::limits::{Limits, Needs};
use crate::sampler;
use crate::scratch::ScratchDir;
use anyhow::Context as _;
use anyhow::Result;
use mappings::mappings_group;
use oscost_model::case::{
    Case, Check, DerivedSpec, ExperimentOutput, Samples, Unavailable, SINGLE_THREAD_CHECK,
};
use oscost_sys::pages::{Mapping, PAGE};
use oscost_sys::spawn::{self as sys, Creator, Method, ParentMemory, Usage};
use oscost_sys::task::LimitError;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Subcommand name and id prefix.
pub const NAME: &str = oscost_model::ids::spawn::NAME;

/// Parent sizes of a stand-alone run, MiB.
const DEFAULT_PARENT_MIB: [u64; 3] = [1, 64, 1024];
/// Parent sizes with `--quick` (and in the default suite), MiB.
const QUICK_PARENT_MIB: [u64; 2] = [1, 64];
/// One-page shared mappings the parent holds for the mapping cases of a stand-alone run (the
/// "big fork" and "huge fork" of Ren et al., "An Analysis of Performance Evolution of Linux's
/// Core Operations", SOSP 2019).
const DEFAULT_MAPPINGS: [u64; 2] = [6000, 12000];
/// More mappings than this are refused as a typo (the kernel's default limit is 65 530).
const MAX_MAPPINGS: u64 = 1 << 20;
/// A parent size above this (1 TiB) is refused as a typo rather than tried.
const MAX_PARENT_MIB: u64 = 1 << 20;
/// Memory left free beside the parent memory: a size that would leave less is not measured
/// (the child's copied page tables, the programs started and the rest of the machine need it).
const MEMORY_MARGIN_KIB: u64 = 256 << 10;
/// The dynamically linked program the `dynamic` target starts.
const DYNAMIC_TARGET: &str = "/bin/true";
/// The static helper's file name in the run's private directory.
const HELPER_NAME: &str = "oscost-exit0";

/// The ways of creating a task.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Op {
    /// fork; the child calls _exit(0) at once; waitpid
    Fork,
    /// clone(CLONE_VM|CLONE_VFORK), which is vfork on a stack of its own; the child calls
    /// _exit(0); waitpid
    Vfork,
    /// posix_spawn of a program (see --targets); waitpid
    PosixSpawn,
    /// fork; the child calls execve of a program (see --targets); waitpid
    ForkExec,
    /// pthread_create (64 KiB stack) of a thread that returns at once; pthread_join
    Thread,
}

impl Op {
    fn id(self) -> String {
        engine::value_name(&self)
    }

    fn method(self) -> Method {
        match self {
            Op::Fork => Method::Fork,
            Op::Vfork => Method::Vfork,
            Op::PosixSpawn => Method::PosixSpawn,
            Op::ForkExec => Method::ForkExec,
            Op::Thread => Method::Thread,
        }
    }

    fn execs(self) -> bool {
        self.method().execs()
    }

    fn is_process(self) -> bool {
        self != Op::Thread
    }
}

/// The programs the exec ops start.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Target {
    /// oscost's own helper: a static program whose whole code is exit_group(0)
    Static,
    /// /bin/true: a dynamically linked program (the loader and the C library start up)
    Dynamic,
}

impl Target {
    fn id(self) -> String {
        engine::value_name(&self)
    }
}

/// Options of `oscost spawn`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Ways of creating a task, comma-separated (default: all)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "OP,...")]
    pub ops: Vec<Op>,

    /// Programs the posix-spawn and fork-exec ops start, comma-separated (default: both)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "TARGET,...")]
    pub targets: Vec<Target>,

    /// Touched private memory the parent holds while it creates processes, MiB,
    /// comma-separated [default: 1,64,1024, or 1,64 with --quick; a default size the available
    /// memory cannot hold is reported as not measured]
    #[arg(long, value_delimiter = ',', value_name = "MIB,...", allow_hyphen_values = true,
          value_parser = parse_mib)]
    pub parent_mib: Vec<u64>,

    /// Numbers of one-page shared mappings (each written once) the parent holds while it
    /// forks, comma-separated [default: 6000,12000, none with --quick]
    #[arg(long, value_delimiter = ',', value_name = "N,...", allow_hyphen_values = true,
          value_parser = parse_mappings)]
    pub mappings: Vec<u64>,

    /// Advise transparent huge pages for the parent memory (MADV_HUGEPAGE) instead of keeping
    /// it in 4 KiB pages (MADV_NOHUGEPAGE)
    #[arg(long)]
    pub huge_pages: bool,
}

fn parse_mib(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=MAX_PARENT_MIB).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}` is not a size in MiB from 1 to {MAX_PARENT_MIB}"
        )),
    }
}

fn parse_mappings(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=MAX_MAPPINGS).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}` is not a number of mappings from 1 to {MAX_MAPPINGS}"
        )),
    }
}

/// What a run measures, from the options.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    ops: Vec<Op>,
    targets: Vec<Target>,
    /// Parent sizes, MiB, in the order given (empty when no process op is chosen).
    sizes: Vec<u64>,
    /// Numbers of one-page mappings fork runs against (empty without fork).
    mappings: Vec<u64>,
}

fn plan(opts: &Options, quick: bool) -> Plan {
    use clap::ValueEnum;
    let ops = if opts.ops.is_empty() {
        Op::value_variants().to_vec()
    } else {
        engine::first_occurrences(&opts.ops)
    };
    let targets = if !ops.iter().any(|o| o.execs()) {
        Vec::new()
    } else if opts.targets.is_empty() {
        Target::value_variants().to_vec()
    } else {
        engine::first_occurrences(&opts.targets)
    };
    let sizes = if !ops.iter().any(|o| o.is_process()) {
        Vec::new()
    } else if !opts.parent_mib.is_empty() {
        engine::first_occurrences(&opts.parent_mib)
    } else if quick {
        QUICK_PARENT_MIB.to_vec()
    } else {
        DEFAULT_PARENT_MIB.to_vec()
    };
    let mappings = if !ops.contains(&Op::Fork) {
        Vec::new()
    } else if !opts.mappings.is_empty() {
        engine::first_occurrences(&opts.mappings)
    } else if quick {
        Vec::new()
    } else {
        DEFAULT_MAPPINGS.to_vec()
    };
    Plan {
        ops,
        targets,
        sizes,
        mappings,
    }
}

/// What a run needs at once, for the pre-flight check: the measuring process, the
/// coordinator's signal thread and the one task being created (and, for threads, the one just
/// joined, which the kernel may not have released yet); and, when `--parent-mib` was given,
/// the largest parent memory with its margin (a default size that does not fit is reported as
/// not measured instead).
fn needs(opts: &Options, quick: bool) -> Needs {
    let p = plan(opts, quick);
    let thread = p.ops.contains(&Op::Thread);
    let tasks = 3 + u64::from(thread);
    let why = if thread {
        "the measuring process, the coordinator's signal thread, the task being created and \
         a thread just joined that the kernel may still be releasing"
    } else {
        "the measuring process, the coordinator's signal thread and the task being created"
    };
    let largest = p.sizes.iter().copied().max();
    let memory_kib = largest.filter(|_| !opts.parent_mib.is_empty()).map(|mib| {
        (
            mib * 1024 + MEMORY_MARGIN_KIB,
            format!(
                "{mib} MiB of touched parent memory and {} MiB left free",
                MEMORY_MARGIN_KIB / 1024
            ),
        )
    });
    let what = match (&memory_kib, largest) {
        (Some(_), Some(mib)) => format!("{NAME} --parent-mib {mib}"),
        _ => NAME.to_owned(),
    };
    Needs {
        what,
        instead: memory_kib
            .is_some()
            .then(|| "use a smaller --parent-mib".to_owned()),
        tasks: Some((tasks, why.to_owned())),
        memory_kib,
        ..Needs::default()
    }
}

/// A field of `/proc/meminfo`, KiB.
fn meminfo_kib(field: &str) -> Option<u64> {
    kib_field(&std::fs::read_to_string("/proc/meminfo").ok()?, field)
}

/// A `Name:   123 kB` field of a `/proc` file's text, KiB.
fn kib_field(text: &str, field: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The parent's memory as a fork sees it.
#[derive(Debug, Clone, Copy, Default)]
struct ParentState {
    rss_kib: Option<u64>,
    vm_pte_kib: Option<u64>,
    anon_huge_pages_kib: Option<u64>,
}

impl ParentState {
    fn read() -> ParentState {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
        ParentState {
            rss_kib: kib_field(&status, "VmRSS"),
            vm_pte_kib: kib_field(&status, "VmPTE"),
            anon_huge_pages_kib: kib_field(&rollup, "AnonHugePages"),
        }
    }
}

/// A program an exec op starts.
#[derive(Debug, Clone)]
struct Program {
    path: PathBuf,
    bytes: u64,
    linking: String,
}

/// The ELF interpreter named in `bytes` (`Some(None)`: none, a static program), or `None` when
/// `bytes` is not a 64-bit little-endian ELF file.
fn elf_interpreter(bytes: &[u8]) -> Option<Option<String>> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(bytes.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(bytes.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(bytes.get(o..o + 8)?.try_into().ok()?));
    // ELF magic, ELFCLASS64, ELFDATA2LSB.
    if bytes.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let phoff = usize::try_from(u64_at(0x20)?).ok()?;
    let phentsize = usize::from(u16_at(0x36)?);
    let phnum = usize::from(u16_at(0x38)?);
    for i in 0..phnum {
        let ph = phoff.checked_add(i.checked_mul(phentsize)?)?;
        const PT_INTERP: u32 = 3;
        if u32_at(ph)? == PT_INTERP {
            let off = usize::try_from(u64_at(ph + 0x08)?).ok()?;
            let len = usize::try_from(u64_at(ph + 0x20)?).ok()?;
            let raw = bytes.get(off..off.checked_add(len)?)?;
            let name = String::from_utf8_lossy(raw)
                .trim_end_matches('\0')
                .to_owned();
            return Some(Some(name));
        }
    }
    Some(None)
}

fn linking_of(bytes: &[u8]) -> String {
    match elf_interpreter(bytes) {
        Some(None) => "static".into(),
        Some(Some(interp)) => format!("dynamic (interpreter {interp})"),
        None => "unknown (not a 64-bit little-endian ELF file)".into(),
    }
}

/// Writes the static helper into `dir`, owner-only (0700); `Err` is why there is none.
fn write_helper(dir: &Path) -> Result<Program, String> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let bytes = sys::static_helper()
        .map_err(|r| format!("oscost was built without its static helper: {r}"))?;
    let path = dir.join(HELPER_NAME);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o700)
        .open(&path)
        .and_then(|mut f| f.write_all(bytes))
        // The umask may have taken bits away.
        .and_then(|()| std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)));
    written.map_err(|e| format!("writing the helper to {}: {e}", path.display()))?;
    Ok(Program {
        path,
        bytes: bytes.len() as u64,
        linking: linking_of(bytes),
    })
}

/// The dynamically linked program, or why it cannot be used.
fn dynamic_target() -> Result<Program, String> {
    let path = PathBuf::from(DYNAMIC_TARGET);
    let bytes = std::fs::read(&path).map_err(|e| format!("{DYNAMIC_TARGET}: {e}"))?;
    Ok(Program {
        bytes: bytes.len() as u64,
        linking: linking_of(&bytes),
        path,
    })
}

/// Starts `program` once (posix_spawn, waited for): a limit is an error; any other failure
/// (a directory mounted noexec, a program that fails) is the reason it is not measured. A
/// file just written may be busy for a moment if another thread forked while it was open
/// (only in the tests, which run threads side by side): ETXTBSY is retried for a while.
fn probe(program: &Program) -> anyhow::Result<Result<(), String>> {
    let mut c =
        Creator::new(Method::PosixSpawn, Some(&program.path)).context("preparing a probe start")?;
    for _ in 0..200 {
        match c.once(1, 1) {
            Ok(()) => return Ok(Ok(())),
            Err(e) if e.downcast_ref::<LimitError>().is_some() => return Err(e),
            Err(e) => {
                let busy = e
                    .root_cause()
                    .downcast_ref::<std::io::Error>()
                    .and_then(|io| io.raw_os_error())
                    == Some(libc::ETXTBSY);
                if !busy {
                    return Ok(Err(format!(
                        "{} could not be started: {e:#}",
                        program.path.display()
                    )));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    Ok(Err(format!(
        "{} stayed busy (ETXTBSY) for 2 s",
        program.path.display()
    )))
}

/// One case being sampled.
struct Slot {
    id: String,
    description: String,
    op: Op,
    creator: Creator,
    ticks: Vec<f64>,
    parent: Usage,
    children: Usage,
    warnings: Vec<oscost_model::Message>,
}

fn case_id(op: Op, target: Option<Target>, mib: Option<u64>) -> String {
    oscost_model::ids::spawn::case(&op.id(), target.map(Target::id).as_deref(), mib)
}

fn description(op: Op, target: Option<Target>, mib: Option<u64>) -> String {
    let program = match target {
        Some(Target::Static) => "the static helper",
        Some(Target::Dynamic) => DYNAMIC_TARGET,
        None => "a program",
    };
    let mut d = match op {
        Op::Fork => "fork + _exit(0) in the child + waitpid".to_owned(),
        Op::Vfork => "clone(CLONE_VM|CLONE_VFORK|SIGCHLD) (vfork on a stack of its own) + \
                      _exit(0) in the child + waitpid"
            .to_owned(),
        Op::PosixSpawn => format!("posix_spawn of {program} + waitpid"),
        Op::ForkExec => format!("fork + execve of {program} in the child + waitpid"),
        Op::Thread => "pthread_create (64 KiB stack) of a thread that returns at once + \
                       pthread_join"
            .to_owned(),
    };
    if let Some(m) = mib {
        d += &format!("; parent holds {m} MiB of touched memory");
    }
    d
}

/// Samples `slots` in interleaved rounds: a few untimed creations each first, then one timed
/// creation of each per round, in an order rotated every round. Counts what the creating
/// thread and the reaped children used around every timed creation.
fn sample_group(ctx: &Context, slots: &mut [Slot]) -> anyhow::Result<f64> {
    let cfg = ctx.sampler;
    let warm = if ctx.quick { 2 } else { 5 };
    let total = warm + cfg.samples;
    for s in slots.iter_mut() {
        for _ in 0..warm {
            ctx.check_cancel()?;
            let index = s.creator.created() as usize + 1;
            s.creator.once(index, total)?;
        }
    }
    let overhead = engine::clock::clock_overhead(ctx);
    let cut = sampler::rounds(
        ctx,
        slots.len(),
        |k| {
            let s = &mut slots[k];
            let index = s.creator.created() as usize + 1;
            let (p0, c0) = (sys::thread_usage(), sys::children_usage());
            let t0 = ctx.clock.now();
            s.creator.once(index, total)?;
            let t1 = ctx.clock.now();
            let (p1, c1) = (sys::thread_usage(), sys::children_usage());
            s.ticks.push(t1.wrapping_sub(t0) as f64 - overhead);
            s.parent.add(p1.since(p0));
            s.children.add(c1.since(c0));
            Ok(())
        },
        || ctx.progress.inc(1),
    )?;
    if let Some(cut) = cut {
        for s in slots.iter_mut() {
            s.warnings.push(cut.clone());
        }
    }
    for s in slots.iter() {
        oscost_sys::count_started_tasks(s.creator.created());
    }
    Ok(overhead)
}

/// Turns a sampled slot into its case, with its counters and checks.
fn finish(ctx: &Context, s: Slot, overhead: f64, threads: Option<u64>) -> Case {
    let timed = s.ticks.len().max(1) as f64;
    let samples = Samples {
        per_op_ns: s.ticks.iter().map(|&t| ctx.clock.ticks_to_ns(t)).collect(),
        per_op_ticks: s.ticks,
        iterations_per_sample: 1,
        loop_overhead_ns: ctx.clock.ticks_to_ns(overhead),
    };
    let mut case = Case::new(s.id, s.description, "creation", samples)
        .param("op", s.op.id())
        .param("cpu", ctx.first_cpu() as u64);
    case.warnings = s.warnings;
    let per = |v: u64| v as f64 / timed;
    let c = &mut case.counters;
    c.insert("creations".into(), s.creator.created() as f64);
    c.insert(
        "parent_voluntary_switches_per_creation".into(),
        per(s.parent.voluntary),
    );
    c.insert(
        "parent_involuntary_switches_per_creation".into(),
        per(s.parent.involuntary),
    );
    c.insert(
        "parent_minor_faults_per_creation".into(),
        per(s.parent.minor_faults),
    );
    if s.op.is_process() {
        c.insert(
            "child_minor_faults_per_creation".into(),
            per(s.children.minor_faults),
        );
    }
    let (created, waited) = (s.creator.created(), s.creator.waited());
    let (name, detail) = if s.op.is_process() {
        (
            "children_reaped",
            "children created (warm-up included) against children waited for by their own pid, \
             each ended with status 0",
        )
    } else {
        (
            "threads_joined",
            "threads created (warm-up included) against threads joined",
        )
    };
    case.checks.push(Check::near(
        name,
        created as f64,
        waited as f64,
        0.0,
        detail,
    ));
    case.checks.push(Check::at_least(
        "switches_per_creation",
        1.0,
        per(s.parent.voluntary + s.parent.involuntary),
        0.0,
        &format!(
            "getrusage(RUSAGE_THREAD) of the creating thread over the timed creations ({} \
             voluntary + {} involuntary): the new task runs on the creator's only CPU, so the \
             creator must give it up at least once per creation",
            s.parent.voluntary, s.parent.involuntary
        ),
    ));
    if let Some(n) = threads {
        let why = if s.op.is_process() {
            "a fork must come from a single-threaded process (its child may only call \
             async-signal-safe functions otherwise, and the figure would not be the one-task \
             cost)"
        } else {
            "each thread created was joined before the next; the process is single-threaded \
             again after every creation"
        };
        case.checks.push(Check::near(
            SINGLE_THREAD_CHECK,
            1.0,
            n as f64,
            0.0,
            &format!(
                "Threads: in /proc/self/status before and after the samples (most seen: {n}); \
                 {why}"
            ),
        ));
    }
    case
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Spawn;
    const SUMMARY: &'static str =
        "What creating a task costs: fork, vfork, posix_spawn, fork + exec, a thread";
    const ABOUT: &'static str = "What creating a task costs: fork, vfork, posix_spawn, fork + \
exec, a thread.

Each sample is one creation and its wait (waitpid on the child's pid, or pthread_join), timed \
alone, from a single-threaded process pinned to one CPU that the new task shares. The exec ops \
start oscost's own static helper, a program whose whole code is exit_group(0), written to a \
private temporary directory, and /bin/true, a dynamically linked program. The process ops are \
repeated with the parent holding more touched private memory (--parent-mib), so a fork's cost \
can be read against the page tables it copies (VmPTE and RSS are recorded); a default size \
the machine's available memory cannot hold is reported as not measured. Fork alone is repeated \
with the parent holding thousands of one-page shared mappings (--mappings), so its cost can be \
read per mapping (the mappings made are counted from /proc/self/maps; more than the kernel's \
vm.max_map_count allows is reported as not measured). Children reaped and the creator's context \
switches are counted and checked.\n\nTakes about 16 s; --quick about 0.4 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    const WARMS_UP_BY_COUNT: bool = true;
    const SUITE_ARGS: &'static [&'static str] = &["--parent-mib", "1,64", "--mappings", "6000"];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }

    fn preflight(&self, quick: bool, limits: &Limits) -> anyhow::Result<()> {
        limits.check(&needs(self, quick))
    }
}

/// Refuses what cannot be measured anywhere on this machine, before anything is created.
fn validate(p: &Plan, ctx: &Context) -> anyhow::Result<()> {
    if ctx.cpus.is_empty() {
        anyhow::bail!("--cpus: the CPU set is empty");
    }
    if let (Some(total), Some(&max)) = (meminfo_kib("MemTotal"), p.sizes.iter().max()) {
        if max * 1024 >= total {
            anyhow::bail!(
                "--parent-mib {max}: more than this machine's memory (MemTotal {} MiB); use a \
                 smaller --parent-mib",
                total / 1024
            );
        }
    }
    Ok(())
}

/// The programs of the chosen targets, each with its reason when it cannot be used.
fn programs(
    p: &Plan,
    dir: Option<&ScratchDir>,
) -> anyhow::Result<Vec<(Target, Result<Program, String>)>> {
    let mut out = Vec::new();
    for &t in &p.targets {
        let program = match (t, dir) {
            (Target::Static, Some(d)) => write_helper(d.path()),
            (Target::Static, None) => Err("no private directory to write it to".into()),
            (Target::Dynamic, _) => dynamic_target(),
        };
        let program = match program {
            Ok(prog) => probe(&prog)?.map(|()| prog),
            Err(e) => Err(e),
        };
        out.push((t, program));
    }
    Ok(out)
}

/// Runs every chosen op: the process ops at each parent size, then the thread op.
fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    let p = plan(opts, ctx.quick);
    validate(&p, ctx)?;
    // The new tasks inherit the pin: creator and created share one CPU.
    let _pin = AffinityRestore::pin(&[ctx.first_cpu()])?;
    let mut out = ExperimentOutput::default();
    let dir = if p.targets.contains(&Target::Static) {
        Some(ScratchDir::new("oscost-spawn-").context("creating a private temporary directory")?)
    } else {
        None
    };
    let programs = programs(&p, dir.as_ref())?;
    for (t, prog) in &programs {
        let key = match t {
            Target::Static => "static_helper",
            Target::Dynamic => "dynamic_target",
        };
        let text = match prog {
            Ok(prog) => format!(
                "{} ({} bytes, {})",
                prog.path.display(),
                prog.bytes,
                prog.linking
            ),
            Err(reason) => format!("none: {reason}"),
        };
        out.params.insert(key.into(), text.into());
    }
    let process_ops: Vec<Op> = p.ops.iter().copied().filter(|o| o.is_process()).collect();
    let per_size = process_ops
        .iter()
        .map(|o| if o.execs() { p.targets.len() } else { 1 })
        .sum::<usize>();
    let groups = p.sizes.len() * usize::from(per_size > 0)
        + p.mappings.len()
        + usize::from(p.ops.contains(&Op::Thread));
    ctx.progress
        .start((groups * ctx.sampler.samples) as u64, NAME);
    for &mib in &p.sizes {
        ctx.progress.message(&format!("parent holding {mib} MiB"));
        size_group(opts, ctx, &process_ops, &programs, mib, &mut out)?;
    }
    // Beside the smallest parent the process ops ran with, so that the difference is the
    // mappings alone.
    let base_mib = p.sizes.iter().copied().min().unwrap_or(QUICK_PARENT_MIB[0]);
    for &n in &p.mappings {
        ctx.progress
            .message(&format!("parent holding {n} one-page mappings"));
        mappings_group(ctx, n, base_mib, &mut out)?;
    }
    if p.ops.contains(&Op::Thread) {
        ctx.progress.message("threads");
        // Last: glibc's fork takes its multi-threaded path for good once a thread has existed.
        let mut slots = vec![Slot {
            id: case_id(Op::Thread, None, None),
            description: description(Op::Thread, None, None),
            op: Op::Thread,
            creator: Creator::new(Method::Thread, None).context("preparing thread creation")?,
            ticks: Vec::new(),
            parent: Usage::default(),
            children: Usage::default(),
            warnings: Vec::new(),
        }];
        let (overhead, threads) =
            crate::sampler::counting_threads(|| sample_group(ctx, &mut slots));
        let overhead = overhead?;
        for s in slots {
            let mut case = finish(ctx, s, overhead, threads).param(
                "stack_kib",
                (oscost_sys::task::THREAD_STACK_BYTES / 1024) as u64,
            );
            let state = ParentState::read();
            if let Some(kib) = state.rss_kib {
                case.counters.insert("rss_kib".into(), kib as f64);
            }
            out.cases.push(case);
        }
    }
    ctx.progress.finish();
    out.derived = derived(&out.cases);
    Ok(out)
}

/// The program a case starts (none for fork and vfork), or why it cannot be started.
type ProgramFor<'a> = Result<Option<&'a Program>, String>;

/// Every case of one parent size, with its program when it execs (or why it cannot).
fn planned<'a>(
    ops: &[Op],
    programs: &'a [(Target, Result<Program, String>)],
) -> Vec<(Op, Option<Target>, ProgramFor<'a>)> {
    let mut planned = Vec::new();
    for &op in ops {
        if op.execs() {
            for (t, prog) in programs {
                planned.push((op, Some(*t), prog.as_ref().map(Some).map_err(Clone::clone)));
            }
        } else {
            planned.push((op, None, Ok(None)));
        }
    }
    planned
}

/// The parameters a process case of parent size `mib` carries: the parent's memory, and the
/// program it starts.
fn case_params(
    mib: u64,
    thp: &'static str,
    target: Option<Target>,
    prog: Option<&Program>,
) -> Vec<(&'static str, serde_json::Value)> {
    let mut params: Vec<(&str, serde_json::Value)> =
        vec![("parent_mib", mib.into()), ("parent_pages", thp.into())];
    if let (Some(t), Some(prog)) = (target, prog) {
        params.push(("target", t.id().into()));
        params.push(("program", prog.path.display().to_string().into()));
        params.push(("program_bytes", prog.bytes.into()));
        params.push(("program_linking", prog.linking.clone().into()));
        params.push(("program_environment", "empty".into()));
    }
    params
}

/// The process cases at one parent size: measured, or not measured with the reason.
fn size_group(
    opts: &Options,
    ctx: &Context,
    ops: &[Op],
    programs: &[(Target, Result<Program, String>)],
    mib: u64,
    out: &mut ExperimentOutput,
) -> anyhow::Result<()> {
    let planned = planned(ops, programs);
    let unavailable =
        |out: &mut ExperimentOutput, reason: &str, only: Option<(Op, Option<Target>)>| {
            for (op, t, _) in &planned {
                let wanted = match only {
                    Some(o) => o == (*op, *t),
                    None => true,
                };
                if wanted {
                    out.unavailable.push(Unavailable {
                        id: case_id(*op, *t, Some(mib)),
                        description: description(*op, *t, Some(mib)),
                        reason: reason.to_owned(),
                    });
                }
            }
        };
    let need_kib = mib * 1024 + MEMORY_MARGIN_KIB;
    if let Some(avail) = meminfo_kib("MemAvailable").filter(|&a| a < need_kib) {
        unavailable(
            out,
            &format!(
                "the parent memory needs {mib} MiB and {} MiB left free; MemAvailable is {} MiB",
                MEMORY_MARGIN_KIB / 1024,
                avail / 1024
            ),
            None,
        );
        return Ok(());
    }
    let bytes =
        usize::try_from(mib << 20).map_err(|_| anyhow::anyhow!("--parent-mib {mib}: too large"))?;
    let memory = match ParentMemory::new(bytes, opts.huge_pages) {
        Ok(m) => m,
        Err(e) => {
            unavailable(
                out,
                &format!("mapping {mib} MiB of parent memory: {e}"),
                None,
            );
            return Ok(());
        }
    };
    let thp = match (opts.huge_pages, memory.advised()) {
        (false, true) => "4 KiB pages (MADV_NOHUGEPAGE)",
        (true, true) => "transparent huge pages advised (MADV_HUGEPAGE)",
        (false, false) => "MADV_NOHUGEPAGE refused: as the system sets it",
        (true, false) => "MADV_HUGEPAGE refused: as the system sets it",
    };
    let mut slots = Vec::new();
    let mut extra: Vec<Vec<(&str, serde_json::Value)>> = Vec::new();
    for (op, t, prog) in &planned {
        let prog = match prog {
            Ok(prog) => *prog,
            Err(reason) => {
                unavailable(out, reason, Some((*op, *t)));
                continue;
            }
        };
        let creator = Creator::new(op.method(), prog.map(|p| p.path.as_path()))
            .with_context(|| format!("preparing {}", case_id(*op, *t, Some(mib))))?;
        extra.push(case_params(mib, thp, *t, prog));
        slots.push(Slot {
            id: case_id(*op, *t, Some(mib)),
            description: description(*op, *t, Some(mib)),
            op: *op,
            creator,
            ticks: Vec::new(),
            parent: Usage::default(),
            children: Usage::default(),
            warnings: Vec::new(),
        });
    }
    if slots.is_empty() {
        return Ok(());
    }
    let state = ParentState::read();
    let (overhead, threads) = crate::sampler::counting_threads(|| sample_group(ctx, &mut slots));
    let left = sys::has_unwaited_children().ok();
    drop(memory);
    let overhead = match overhead {
        Ok(o) => o,
        // The kernel would not commit memory for a child of a parent this large (strict
        // overcommit): this size cannot be measured here, the others may.
        Err(e)
            if matches!(
                e.downcast_ref::<LimitError>(),
                Some(LimitError::Memory { .. })
            ) =>
        {
            let reason = format!("{e:#}");
            for s in &slots {
                out.unavailable.push(Unavailable {
                    id: s.id.clone(),
                    description: s.description.clone(),
                    reason: reason.clone(),
                });
            }
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    for (s, params) in slots.into_iter().zip(extra) {
        let mut case = finish(ctx, s, overhead, threads);
        for (k, v) in params {
            case.params.insert(k.into(), v);
        }
        for (key, v) in [
            ("rss_kib", state.rss_kib),
            ("vm_pte_kib", state.vm_pte_kib),
            ("anon_huge_pages_kib", state.anon_huge_pages_kib),
        ] {
            if let Some(v) = v {
                case.counters.insert(key.into(), v as f64);
            }
        }
        if let Some(left) = left {
            case.checks
                .push(unreaped_check(left, " of this parent size"));
        }
        out.cases.push(case);
    }
    Ok(())
}

/// Whether a child was `left` after the last creation of a group (`after` names the group).
fn unreaped_check(left: bool, after: &str) -> Check {
    Check::near(
        "unreaped_children",
        0.0,
        f64::from(u8::from(left)),
        0.0,
        &format!(
            "waitid(P_ALL, WNOHANG | WNOWAIT) after the last creation{after}: no child of the \
             measuring process left, running or ended"
        ),
    )
}

/// For every fork case above the smallest parent measured: what the larger parent adds; for
/// every fork with mappings: what each mapping adds.
fn derived(cases: &[Case]) -> Vec<DerivedSpec> {
    let mut out = over_smallest(cases);
    out.extend(per_mapping(cases));
    out
}

/// Fork with mappings less fork with the parent size they were held beside, per mapping.
fn per_mapping(cases: &[Case]) -> Vec<DerivedSpec> {
    let fork_at = |mib: u64| {
        cases
            .iter()
            .find(|c| c.id == case_id(Op::Fork, None, Some(mib)))
    };
    cases
        .iter()
        .filter_map(|c| {
            let n = c.params.get("mappings")?.as_u64()?;
            let base_mib = c.params.get("base_parent_mib")?.as_u64()?;
            let base = fork_at(base_mib)?;
            let w = 1.0 / n as f64;
            Some(DerivedSpec {
                id: oscost_model::ids::spawn::per_mapping(&c.id),
                description: format!(
                    "fork with {n} one-page shared mappings minus fork without them (parent \
                     holding {base_mib} MiB either way), per mapping: duplicating a mapping \
                     for the child and tearing the child's copy down"
                ),
                terms: vec![(c.id.clone(), w), (base.id.clone(), -w)],
                flagged: engine::failed_checks(c).or_else(|| engine::failed_checks(base)),
            })
        })
        .collect()
}

/// For every fork case above the smallest parent measured: what the larger parent adds.
fn over_smallest(cases: &[Case]) -> Vec<DerivedSpec> {
    let forks: Vec<(&Case, u64)> = cases
        .iter()
        .filter(|c| c.params.get("op").and_then(|v| v.as_str()) == Some("fork"))
        .filter_map(|c| Some((c, c.params.get("parent_mib")?.as_u64()?)))
        .collect();
    let Some(&(small, small_mib)) = forks.iter().min_by_key(|(_, m)| *m) else {
        return Vec::new();
    };
    let pte = |c: &Case| {
        c.counters
            .get("vm_pte_kib")
            .map_or_else(|| "?".to_owned(), |v| format!("{v:.0}"))
    };
    forks
        .iter()
        .filter(|(_, m)| *m > small_mib)
        .map(|&(big, mib)| DerivedSpec {
            id: oscost_model::ids::spawn::over(&big.id, small_mib),
            description: format!(
                "fork with {mib} MiB of touched parent memory minus fork with {small_mib} MiB: \
                 copying the larger parent's page tables (VmPTE {} against {} KiB) and \
                 write-protecting its pages for copy-on-write, and tearing the child's copy \
                 down again",
                pte(big),
                pte(small)
            ),
            terms: vec![(big.id.clone(), 1.0), (small.id.clone(), -1.0)],
            flagged: engine::failed_checks(big).or_else(|| engine::failed_checks(small)),
        })
        .collect()
}

#[cfg(test)]
mod tests;
