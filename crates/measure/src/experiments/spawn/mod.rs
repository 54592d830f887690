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

mod derived;
mod mappings;
mod options;
mod program;

use crate::context::Context;
use crate::cpuset::AffinityRestore;
use crate::engine;
use crate::limits::{Limits, Needs};
use crate::sampler;
use crate::scratch::ScratchDir;
use anyhow::Context as _;
use anyhow::Result;
use derived::derived;
use mappings::mappings_group;
use oscost_model::case::{
    Case, Check, DerivedSpec, ExperimentOutput, Samples, Unavailable, SINGLE_THREAD_CHECK,
};
use oscost_sys::pages::{Mapping, PAGE};
use oscost_sys::spawn::{self as sys, Creator, Method, ParentMemory, Usage};
use oscost_sys::task::LimitError;
use std::path::{Path, PathBuf};
use std::time::Duration;

use options::{needs, plan, Plan};
pub use options::{Op, Options, Target};
use program::{programs, Program};
// The tests reach these through `use super::*`, as they did when they were defined here.
#[cfg(test)]
use options::{parse_mappings, parse_mib};
#[cfg(test)]
use program::{elf_interpreter, linking_of, probe, write_helper};

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

#[cfg(test)]
mod tests;
