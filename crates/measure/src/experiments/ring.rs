//! `ring`: N tasks in a ring pass K tokens, each waiting for its predecessor's token and
//! passing it on (the csfast5 program of Edward G. Bradford, "Runtime: Context switching",
//! IBM developerWorks, 2002; lmbench `lat_ctx`).
//!
//! The measuring thread is task 0 of the ring, so every hop is a hand-over between ring
//! tasks. The ring is set up once per N and kept while its hops are sampled. This module also
//! holds the token-passing engine the `switch` experiment uses: a ping-pong is a ring of two
//! with one token.

use crate::context::Context;
use crate::cpuset::AffinityRestore;
use crate::engine;
use crate::engine::checks::add_migrations;
use crate::engine::controls;
use crate::engine::parse_count;
use crate::engine::ring::{placement_name, RingPlacement};
use crate::engine::tokens::{sample, Counts, RingSpec};
use crate::engine::TaskList;
use crate::limits::{Limits, Needs, FILES_MARGIN};
use crate::sampler::measure;
use anyhow::Context as _;
use oscost_model::case::{Case, Check, DerivedSpec, ExperimentOutput, Samples, Series};
use oscost_model::{Message, MessageKind};
use oscost_sys::ipc::Via;
use oscost_sys::task::{self, CpuMask, Kind, Policy, WorkingSet};

/// Subcommand name and id prefix.
pub const NAME: &str = oscost_model::ids::ring::NAME;

/// The sweep with `--quick` (and what a suite run should use): small rings only.
const QUICK_SWEEP: [usize; 4] = [2, 4, 16, 64];
/// The default sweep: powers of two from 2 to this.
const FULL_SWEEP_MAX: usize = 1024;
/// A per-task working set above this (1 GiB) is refused as a typo rather than tried.
const MAX_SIZE_KIB: usize = 1 << 20;
/// Rings larger than this are refused as a typo rather than tried.
const MAX_TASKS: usize = 1 << 20;

/// The primitives a ring may use: counting ones with room for any number of queued tokens.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum RingVia {
    /// 1-byte write/read on a pipe (lmbench lat_ctx)
    Pipe,
    /// shared counter with FUTEX_WAKE / FUTEX_WAIT
    Futex,
    /// EFD_SEMAPHORE eventfd write/read
    Eventfd,
    /// process-shared POSIX semaphore
    PosixSem,
}

impl RingVia {
    fn via(self) -> Via {
        match self {
            RingVia::Pipe => Via::Pipe,
            RingVia::Futex => Via::Futex,
            RingVia::Eventfd => Via::Eventfd,
            RingVia::PosixSem => Via::PosixSem,
        }
    }
}

/// Options of `oscost ring`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Ring sizes: a list (`2,4,16`) or a doubling range (`2..1024`) [default: 2..1024, or
    /// 2,4,16,64 with --quick]
    #[arg(long, value_name = "N,...|A..B", value_parser = engine::parse_tasks, allow_hyphen_values = true)]
    pub tasks: Option<TaskList>,

    /// Tokens circulating at once (1 <= K < N)
    #[arg(long, default_value_t = 1, value_name = "K", allow_negative_numbers = true,
          value_parser = parse_count)]
    pub tokens: usize,

    /// Threads of one process, or processes
    #[arg(long, value_parser = engine::kind_parser(), default_value = "threads")]
    pub kind: Kind,

    /// Primitive that carries the token
    #[arg(long, value_enum, default_value = "pipe")]
    pub via: RingVia,

    /// Private working set each task sums on every hop, KiB (lmbench -s)
    #[arg(long, default_value_t = 0, value_name = "KIB", allow_negative_numbers = true,
          value_parser = parse_count)]
    pub size: usize,

    /// Where the tasks run
    #[arg(long, value_enum, default_value = "same")]
    pub placement: RingPlacement,

    /// Record the order tokens visited tasks (series `visit_order`) and check it is the ring
    /// order; the logging adds a shared atomic per hop to the timed path
    #[arg(long)]
    pub verify_order: bool,

    /// Scheduling policy of every task: `batch` (SCHED_BATCH) has no wakeup preemption, so one
    /// token on one CPU makes exactly one switch per hop
    #[arg(long, value_enum, default_value = "other")]
    pub policy: RingPolicy,
}

/// The scheduling policy of the ring's tasks.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum RingPolicy {
    /// SCHED_OTHER: the woken task may preempt the waker before it blocks (about 1.4 switches
    /// per hop for N > 2)
    Other,
    /// SCHED_BATCH: no wakeup preemption, one switch per hop
    Batch,
}

impl RingPolicy {
    fn sys(self) -> Policy {
        match self {
            RingPolicy::Other => Policy::Other,
            RingPolicy::Batch => Policy::Batch,
        }
    }

    fn name(self) -> &'static str {
        match self {
            RingPolicy::Other => "other",
            RingPolicy::Batch => "batch",
        }
    }
}

/// Puts the caller's scheduling policy back when dropped.
struct PolicyRestore(Option<Policy>);

impl Drop for PolicyRestore {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            let _ = task::set_sched_policy(p);
        }
    }
}

/// The ring sizes to sweep, as given or by default.
fn sweep(opts: &Options, quick: bool) -> Vec<usize> {
    match &opts.tasks {
        Some(TaskList(v)) => v.clone(),
        None if quick => QUICK_SWEEP.to_vec(),
        None => std::iter::successors(Some(2usize), |n| Some(n * 2))
            .take_while(|&n| n <= FULL_SWEEP_MAX)
            .collect(),
    }
}

/// What the largest ring of the sweep holds at once, for the pre-flight check: its links'
/// descriptors, its tasks, the mappings of the process that holds most of them, and the
/// working sets. `None` when the options are out of range (`run` refuses them).
fn needs(opts: &Options, quick: bool) -> Option<Needs> {
    let n = sweep(opts, quick).into_iter().max()?;
    if !(2..=MAX_TASKS).contains(&n) || opts.size > MAX_SIZE_KIB {
        return None;
    }
    let n64 = n as u64;
    let (fds, link) = match opts.via {
        RingVia::Pipe => (2, "a pipe (2 descriptors)"),
        RingVia::Eventfd => (1, "an eventfd"),
        RingVia::Futex | RingVia::PosixSem => (0, ""),
    };
    // The links of the ring and of the one-task control.
    let files = (fds > 0).then(|| {
        (
            fds * (n64 + 1) + FILES_MARGIN,
            format!("{link} for each of {n} tasks and for the control, and {FILES_MARGIN} more"),
        )
    });
    let tasks = Some(match opts.kind {
        Kind::Threads => (
            n64,
            format!("{n} threads, the measuring process's own among them"),
        ),
        Kind::Processes => (
            n64 + 1,
            format!("{n} processes, the measuring process among them, and a watchdog thread"),
        ),
    });
    // Mappings: each futex word or semaphore is a shared mapping of its own, and each task
    // maps its own working set; threads add a stack and its guard page each.
    let link_maps = u64::from(matches!(opts.via, RingVia::Futex | RingVia::PosixSem));
    let ws_maps = u64::from(opts.size > 0);
    let mut parts = Vec::new();
    if opts.kind == Kind::Threads {
        parts.push("a thread stack and its guard page (2)");
    }
    if link_maps > 0 {
        parts.push("a shared mapping for its link");
    }
    if ws_maps > 0 {
        parts.push("a working set");
    }
    let maps = match opts.kind {
        // One address space holds every stack, link and working set (plus the shared words,
        // task 0's working set and the control's).
        Kind::Threads => Some((
            n64 * (2 + link_maps + ws_maps) + 1 + 2 * ws_maps,
            format!(
                "{} for each of {n} threads: {}",
                2 + link_maps + ws_maps,
                parts.join(", ")
            ),
        )),
        // Every process inherits all the links; it adds its own working set, and the parent
        // the watchdog thread's stack.
        Kind::Processes => (link_maps > 0).then(|| {
            (
                n64 + 3 + 2 * ws_maps,
                format!("a shared mapping for the link of each of {n} processes"),
            )
        }),
    };
    let memory_kib = (opts.size > 0).then(|| {
        (
            n64 * opts.size as u64,
            format!("a {} KiB working set for each of {n} tasks", opts.size),
        )
    });
    Some(Needs {
        what: format!("{NAME} --tasks {n}"),
        instead: Some("use fewer --tasks".into()),
        files,
        tasks,
        maps,
        memory_kib,
        address_space_kib: (opts.kind == Kind::Threads).then(|| crate::limits::thread_stacks(n64)),
    })
}

/// Checks the options before anything is spawned; returns the sizes to sweep.
fn validate(opts: &Options, ctx: &Context) -> anyhow::Result<Vec<usize>> {
    let sizes = sweep(opts, ctx.quick);
    engine::check_ring_sweep(
        &sizes,
        opts.tokens,
        MAX_TASKS,
        ("a ring", "tasks"),
        "at least one token must circulate",
    )?;
    if ctx.cpus.is_empty() {
        anyhow::bail!("--cpus: the CPU set is empty");
    }
    if opts.size > MAX_SIZE_KIB {
        anyhow::bail!(
            "--size {}: at most {MAX_SIZE_KIB} KiB (1 GiB) per task",
            opts.size
        );
    }
    Ok(sizes)
}

// ---------------------------------------------------------------------------------------
// The experiment.

fn case_id(via: Via, kind: Kind, n: usize, k: usize, size: usize) -> String {
    oscost_model::ids::ring::Case {
        via: via.name(),
        kind: kind.name(),
        tasks: n,
        tokens: k,
        size,
    }
    .to_string()
}

/// Per-turn samples to per-hop samples: one turn of task 0 is N hops.
fn per_hop(mut s: Samples, n: usize) -> Samples {
    let n = n as f64;
    s.per_op_ns.iter_mut().for_each(|v| *v /= n);
    s.per_op_ticks.iter_mut().for_each(|v| *v /= n);
    s.loop_overhead_ns /= n;
    s.iterations_per_sample = s.iterations_per_sample.saturating_mul(n as u64);
    s
}

/// Replays the visit log against the ring: a visit is legal only if a token was waiting at
/// that task. Returns the number of illegal visits and of tasks never visited (when the log
/// is long enough that every task should appear).
fn order_violations(visits: &[u64], n: usize, k: usize) -> (usize, usize) {
    let mut pending = vec![0usize; n];
    pending[0] = 1;
    for j in 1..k {
        pending[j * n / k] += 1;
    }
    let mut seen = vec![false; n];
    let mut bad = 0;
    for &v in visits {
        let t = v as usize;
        if t >= n || pending[t] == 0 {
            bad += 1;
            continue;
        }
        seen[t] = true;
        pending[t] -= 1;
        pending[(t + 1) % n] += 1;
    }
    let unvisited = if visits.len() >= 2 * n {
        seen.iter().filter(|s| !**s).count()
    } else {
        0
    };
    (bad, unvisited)
}

fn order_check(visits: &[u64], n: usize, k: usize) -> Check {
    let (bad, unvisited) = order_violations(visits, n, k);
    Check::near(
        "visit_order_violations",
        0.0,
        (bad + unvisited) as f64,
        0.0,
        &format!(
            "replayed the first {} logged visits against the ring 0 -> 1 -> ... -> {} -> 0 \
             with {k} token(s): {bad} visit(s) found no token waiting, {unvisited} task(s) never \
             visited",
            visits.len(),
            n - 1
        ),
    )
}

fn order_series(visits: &[u64]) -> Series {
    Series {
        name: "visit_order".into(),
        columns: vec!["visit".into(), "task".into()],
        points: visits
            .iter()
            .enumerate()
            .map(|(i, &t)| vec![i as f64, t as f64])
            .collect(),
    }
}

/// Every hop must hand the CPU over at least once; fewer switches than hops means tasks found
/// tokens already waiting (several tokens) or ran side by side on other CPUs, and the per-hop
/// time is then not a switch cost. More than one is normal for N > 2 on one CPU: EEVDF wakeup
/// preemption switches the waker out before it blocks, and it is switched back in later only
/// to block (`docs/methodology.md`, `ring`). Those switches are real and part of the hop time,
/// so they are counted and shown (`involuntary_per_hop`), not treated as a failure.
/// Switches per hop must lie within what the set-up allows. At least one: a hop that did not
/// switch did not measure a switch. At most: under SCHED_BATCH with one token on one CPU,
/// exactly one (± 0.02); otherwise one hand-over plus at most one wakeup preemption, 2.
fn switch_check(opts: &Options, per_hop: f64, counts: &Counts, hops: u64) -> Check {
    let one_cpu_one_token = opts.placement == RingPlacement::Same && opts.tokens == 1;
    let why_more = if one_cpu_one_token {
        "one token on one CPU: one hand-over per hop, plus any wakeup-preemption switches \
         (involuntary) when N > 2"
    } else if opts.tokens > 1 {
        "several tokens: a task may find the next token already waiting and not switch"
    } else {
        "free placement: tasks on different CPUs may pass tokens without switching"
    };
    let (low, high) = if one_cpu_one_token && opts.policy == RingPolicy::Batch {
        (0.98, 1.02)
    } else {
        (0.95, 2.0)
    };
    Check {
        name: "switches_per_hop".into(),
        expected: 1.0,
        counted: per_hop,
        passed: (low..=high).contains(&per_hop),
        bound: Some(oscost_model::case::Bound::Between(low, high)),
        detail: format!(
            "getrusage nvcsw + nivcsw of every task over the measured span ({} voluntary + {} \
             involuntary) / {hops} hops; {why_more}; must lie in {low:.2}..{high:.2} (policy {})",
            counts.switches.voluntary,
            counts.switches.involuntary,
            opts.policy.name()
        ),
    }
}

/// Notes a hop count inflated by wakeup preemption, so the per-hop figure is read correctly.
fn preemption_warning(case: &mut Case, n: usize) {
    let inv = case
        .counters
        .get("involuntary_per_hop")
        .copied()
        .unwrap_or(0.0);
    if n > 2 && inv > 0.05 {
        case.notes.push(Message::new(
            MessageKind::WakeupPreemption,
            format!(
                ": {inv:.2} involuntary switches per hop (the scheduler switches the waker out \
                 before it blocks); the hop time includes them"
            ),
        ));
    }
}

fn ring_case(opts: &Options, ctx: &Context, n: usize, masks: Vec<CpuMask>) -> anyhow::Result<Case> {
    let via = opts.via.via();
    let spec = RingSpec {
        via,
        kind: opts.kind,
        tasks: n,
        tokens: opts.tokens,
        size_kib: opts.size,
        masks,
        verify: opts.verify_order,
    };
    let cpus: Vec<Vec<usize>> = spec.masks.iter().map(|m| m.cpus().to_vec()).collect();
    let id = case_id(via, opts.kind, n, opts.tokens, opts.size);
    let (samples, warnings, counts) = sample(&spec, ctx).with_context(|| id.clone())?;
    let hops = counts.ops.saturating_mul(n as u64).max(1);
    let per = |v: u64| v as f64 / hops as f64;
    let mut case = Case::new(
        id,
        format!(
            "{n} {} pass {} token(s) around a ring via {via}, {} KiB touched per hop",
            opts.kind.name(),
            opts.tokens,
            opts.size
        ),
        "hop",
        per_hop(samples, n),
    )
    .param("tasks", n as u64)
    .param("tokens", opts.tokens as u64)
    .param("size_kib", opts.size as u64)
    .param("kind", opts.kind.name())
    .param("via", via.name())
    .param("placement", placement_name(opts.placement))
    .param("policy", opts.policy.name())
    .param("cpus", serde_json::json!(cpus.first()))
    .param("last_cpus", serde_json::json!(counts.last_cpus));
    case.add_messages(warnings);
    let sw = counts.switches;
    case.counters
        .insert("switches_per_hop".into(), per(sw.total()));
    case.counters
        .insert("voluntary_per_hop".into(), per(sw.voluntary));
    case.counters
        .insert("involuntary_per_hop".into(), per(sw.involuntary));
    case.counters.insert("hops_counted".into(), hops as f64);
    case.counters
        .insert("peak_rss_kib".into(), counts.peak_rss_kib as f64);
    match (opts.kind, counts.rss_before_kib) {
        (Kind::Threads, Some(kib)) => {
            case.counters
                .insert("rss_before_ring_kib".into(), kib as f64);
        }
        (Kind::Threads, None) => case.notes.push(Message::new(
            MessageKind::PeakMemoryNotReset,
            " (/proc/self/clear_refs): it may be an earlier ring's",
        )),
        _ => {}
    }
    let check = switch_check(opts, per(sw.total()), &counts, hops);
    if !check.passed
        && check.counted < 1.0
        && (opts.tokens > 1 || opts.placement == RingPlacement::Free)
    {
        // Expected with this setting: say what happened instead of a switch.
        case.warnings.push(Message::new(
            MessageKind::HopsWithoutSwitch,
            format!(
                "{}: {:.2} switches per hop instead of at least 1 ({}; the hop time is then not \
                 a switch cost, and switch_cost and per_switch are flagged: use --tokens 1 \
                 --placement same for one switch per hop)",
                if opts.tokens > 1 {
                    format!("{} tokens", opts.tokens)
                } else {
                    "free placement".to_owned()
                },
                check.counted,
                if opts.tokens > 1 {
                    "a task often finds the next token already waiting and passes it on without \
                     blocking"
                } else {
                    "tasks on different CPUs pass the token without either one switching"
                }
            ),
        ));
    }
    case.checks.push(check);
    preemption_warning(&mut case, n);
    add_migrations(&mut case, &counts, opts.placement == RingPlacement::Same);
    if opts.verify_order {
        case.checks
            .push(order_check(&counts.visits, n, opts.tokens));
        case.series.push(order_series(&counts.visits));
        case.warnings.push(Message::new(
            MessageKind::VerifyOrder,
            ": every hop also appended to a shared log, which is in the timed path",
        ));
    }
    Ok(case)
}

fn masks_for(opts: &Options, ctx: &Context, n: usize) -> anyhow::Result<Vec<CpuMask>> {
    let cpus = match opts.placement {
        RingPlacement::Same => vec![ctx.first_cpu()],
        RingPlacement::Free => ctx.cpus.clone(),
    };
    let mask = CpuMask::new(&cpus).context("building the CPU mask")?;
    Ok(vec![mask; n])
}

/// The no-switch controls: the primitive's post + wait in one task, and the working-set sum.
fn controls(
    opts: &Options,
    ctx: &Context,
    out: &mut ExperimentOutput,
) -> anyhow::Result<Vec<(String, f64)>> {
    let via = opts.via.via();
    let c = controls::link_control_on(via, ctx, ctx.first_cpu())
        .with_context(|| format!("measuring the {via} control"))?;
    let id = oscost_model::ids::ring::Id::Control { via: via.name() }.to_string();
    let mut case = Case::new(
        id.clone(),
        format!(
            "{}: post + wait in one task, no switch (subtracted per hop)",
            via.describe()
        ),
        "post + wait",
        c.samples.clone(),
    )
    .param("via", via.name())
    .param("cpu", ctx.first_cpu() as u64);
    case.checks.push(c.no_switch_check());
    case.checks
        .extend(crate::sampler::single_task_check(c.threads_in_process));
    case.add_messages(c.said.clone());
    out.cases.push(case);
    let mut terms = vec![(id, -1.0)];
    if opts.size > 0 {
        let tid = oscost_model::ids::ring::Id::Touch { size: opts.size }.to_string();
        out.cases.push(touch_case(&tid, opts.size, ctx)?);
        terms.push((tid, -1.0));
    }
    Ok(terms)
}

fn touch_case(id: &str, kib: usize, ctx: &Context) -> anyhow::Result<Case> {
    let _restore = AffinityRestore::pin(&[ctx.first_cpu()])?;
    let ws = WorkingSet::new(kib).context("mapping the working set")?;
    let (measured, threads) = crate::sampler::counting_threads(|| measure(ctx, || ws.touch()));
    let (samples, warnings) = measured?;
    let mut case = Case::new(
        id,
        format!(
            "summing a private {kib} KiB working set in one task, cache-hot (subtracted per hop)"
        ),
        "sum",
        samples,
    )
    .param("size_kib", kib as u64);
    case.checks
        .extend(crate::sampler::single_task_check(threads));
    case.add_messages(warnings);
    Ok(case)
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Ring;
    const SUMMARY: &'static str = "Per-hop time of N tasks passing K tokens around a ring";
    const ABOUT: &'static str = "Per-hop time of N tasks passing K tokens around a ring.

Each task waits for a token from its predecessor, touches its private working set (--size, \
lmbench lat_ctx -s) and passes the token on. The measuring thread is task 0; one sample is a \
batch of its turns, each worth N hops. The primitive's own post + wait cost (and the \
working-set sum, measured in one task) is subtracted to give a derived switch cost, and the \
switches the kernel counted per hop (getrusage nvcsw + nivcsw of every task) are checked: about \
1 per hop with one token on one CPU. Threads get 64 KiB stacks so 8192 of them fit.\n\nTakes about 7 s for the sweep 2..1024; --quick (2, 4, 16 and 64 tasks) about 0.4 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    const SUITE_ARGS: &'static [&'static str] = &["--tasks", "2,4,16,64"];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }

    fn preflight(&self, quick: bool, limits: &Limits) -> anyhow::Result<()> {
        match needs(self, quick) {
            Some(needs) => limits.check(&needs),
            None => Ok(()),
        }
    }
}

/// Runs the sweep.
fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    let sizes = validate(opts, ctx)?;
    let mut out = ExperimentOutput::default();
    out.params
        .insert("policy".into(), opts.policy.name().into());
    let control_terms = controls(opts, ctx, &mut out)?;
    // After the controls, before any task: every task inherits the policy.
    let _policy = PolicyRestore(task::sched_policy().ok().flatten());
    task::set_sched_policy(opts.policy.sys()).with_context(|| {
        format!(
            "--policy {}: setting the scheduling policy",
            opts.policy.name()
        )
    })?;
    ctx.progress.start(sizes.len() as u64, NAME);
    for &n in &sizes {
        ctx.progress
            .message(&format!("{n} {} via {}", opts.kind.name(), opts.via.via()));
        let case = ring_case(opts, ctx, n, masks_for(opts, ctx, n)?)?;
        out.derived.push(derived(&case, &control_terms));
        out.derived.extend(per_switch(&case, &control_terms));
        out.cases.push(case);
        ctx.progress.inc(1);
    }
    ctx.progress.finish();
    Ok(out)
}

fn derived(case: &Case, control_terms: &[(String, f64)]) -> DerivedSpec {
    let mut terms = vec![(case.id.clone(), 1.0)];
    terms.extend(control_terms.iter().cloned());
    DerivedSpec {
        id: oscost_model::ids::ring::derived(
            &case.id,
            oscost_model::ids::ring::Derived::SwitchCost,
        ),
        description: "per-hop time minus the primitive's own post + wait (and the cache-hot \
                      working-set sum): the hand-over, with any cache refill and any \
                      wakeup-preemption switches (involuntary_per_hop)"
            .into(),
        terms,
        flagged: engine::failed_checks(case),
    }
}

/// `(hop − control) / switches per hop`: what one switch costs, as the kernel counts them. For
/// N > 2 under the normal policy a hop holds about 1.4 switches (the woken task preempts the
/// waker before it blocks), so the hop's switch cost is not one switch's. The count is exact
/// (counted over the very span that was timed), so it scales the terms without adding
/// uncertainty. `None` when no switch was counted.
fn per_switch(case: &Case, control_terms: &[(String, f64)]) -> Option<DerivedSpec> {
    let per_hop = case
        .counters
        .get("switches_per_hop")
        .copied()
        .filter(|&s| s > 0.0 && s.is_finite())?;
    let mut terms = vec![(case.id.clone(), 1.0 / per_hop)];
    terms.extend(
        control_terms
            .iter()
            .map(|(id, c)| (id.clone(), c / per_hop)),
    );
    Some(DerivedSpec {
        id: oscost_model::ids::ring::derived(&case.id, oscost_model::ids::ring::Derived::PerSwitch),
        description: format!(
            "per-hop time minus the primitive's own post + wait, divided by the {per_hop:.3} \
             switches counted per hop: the cost of one switch as the kernel counts them"
        ),
        terms,
        flagged: engine::failed_checks(case),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::testing;
    use crate::engine::tokens::Ring;
    use oscost_model::Samples;
    use oscost_sys::Switches;

    fn with_ctx<T>(f: impl FnOnce(&Context) -> T) -> T {
        testing::with_tiny_ctx(f)
    }

    fn opts(extra: &[&str]) -> Options {
        crate::engine::defaults(extra)
    }

    fn counts(voluntary: u64, involuntary: u64) -> Counts {
        Counts {
            switches: Switches {
                voluntary,
                involuntary,
            },
            ..Counts::default()
        }
    }

    #[test]
    fn switches_per_hop_are_bounded_on_both_sides() {
        let other = opts(&[]);
        let batch = opts(&["--policy", "batch"]);
        // Under the normal policy wakeup preemption adds up to one switch per hop.
        assert!(switch_check(&other, 1.39, &counts(1000, 390), 1000).passed);
        assert!(!switch_check(&other, 0.5, &counts(500, 0), 1000).passed);
        assert!(!switch_check(&other, 3.0, &counts(2000, 1000), 1000).passed);
        // Under SCHED_BATCH one token on one CPU switches exactly once per hop.
        assert!(switch_check(&batch, 1.00, &counts(1000, 0), 1000).passed);
        assert!(!switch_check(&batch, 1.39, &counts(1000, 390), 1000).passed);
    }

    #[test]
    fn per_switch_divides_the_switch_cost_by_the_counted_switches() {
        let mut case = Case::new("ring.x", "x", "hop", Samples::default());
        case.counters.insert("switches_per_hop".into(), 1.25);
        let controls = vec![("ring.pipe.control".to_owned(), -1.0)];
        let d = per_switch(&case, &controls).unwrap();
        assert_eq!(d.id, "ring.x.per_switch");
        assert_eq!(
            d.terms,
            vec![
                ("ring.x".to_owned(), 0.8),
                ("ring.pipe.control".to_owned(), -0.8)
            ]
        );
        case.counters.insert("switches_per_hop".into(), 0.0);
        assert!(per_switch(&case, &controls).is_none());
    }

    fn spec(via: Via, kind: Kind, n: usize, k: usize, verify: bool, cpu: usize) -> RingSpec {
        RingSpec {
            via,
            kind,
            tasks: n,
            tokens: k,
            size_kib: 0,
            masks: vec![CpuMask::new(&[cpu]).unwrap(); n],
            verify,
        }
    }

    /// Turns `ops` turns by hand (no sampler) and returns the counts.
    fn turns(spec: &RingSpec, ctx: &Context, ops: usize) -> Counts {
        let mut ring = Ring::start(spec, ctx).unwrap();
        ring.begin();
        for _ in 0..ops {
            ring.op().unwrap();
        }
        ring.end().unwrap()
    }

    #[test]
    fn preflight_counts_descriptors_tasks_mappings_and_memory() {
        let futex = needs(&opts(&["--tasks", "2,8192", "--via", "futex"]), false).unwrap();
        assert_eq!(futex.what, "ring --tasks 8192");
        assert_eq!(futex.files, None);
        assert_eq!(futex.tasks.as_ref().unwrap().0, 8192);
        // Per thread: stack + guard page + the futex word's shared mapping; + shared words.
        assert_eq!(futex.maps.as_ref().unwrap().0, 8192 * 3 + 1);
        assert_eq!(futex.memory_kib, None);
        let pipe = needs(&opts(&["--tasks", "8192", "--size", "16"]), false).unwrap();
        // 2 per task and 2 for the control's link, plus the margin.
        assert_eq!(pipe.files.as_ref().unwrap().0, 2 * 8193 + FILES_MARGIN);
        // Stack + guard + working set per thread; shared words, task 0's and the control's
        // working sets.
        assert_eq!(pipe.maps.as_ref().unwrap().0, 8192 * 3 + 3);
        assert_eq!(pipe.memory_kib.as_ref().unwrap().0, 8192 * 16);
        let procs = needs(
            &opts(&[
                "--tasks",
                "100",
                "--via",
                "posix-sem",
                "--kind",
                "processes",
            ]),
            false,
        )
        .unwrap();
        assert_eq!(procs.tasks.as_ref().unwrap().0, 101);
        assert_eq!(procs.maps.as_ref().unwrap().0, 103);
        let eventfd = needs(&opts(&["--via", "eventfd"]), true).unwrap();
        assert_eq!(eventfd.what, "ring --tasks 64");
        assert_eq!(eventfd.files.as_ref().unwrap().0, 65 + FILES_MARGIN);
        assert!(needs(&opts(&["--tasks", "1"]), false).is_none());

        // Against vm.max_map_count: 100 mappings now + the margin + 24577 for the ring.
        let limit = 100 + crate::limits::MAPS_MARGIN + 8192 * 3 + 1;
        let limits = |max| Limits {
            max_map_count: Some(max),
            maps_now: 100,
            ..Limits::default()
        };
        assert!(limits(limit).check(&futex).is_ok());
        let e = limits(limit - 1).check(&futex).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "ring --tasks 8192 needs about {limit} memory mappings"
            )) && e.contains(&format!("vm.max_map_count is {}", limit - 1))
                && e.ends_with("or use fewer --tasks"),
            "{e}"
        );
    }

    #[test]
    fn bad_options_are_refused_before_spawning() {
        with_ctx(|ctx| {
            let cases = [
                (
                    vec!["--tasks", "1"],
                    "--tasks 1: a ring needs at least 2 tasks",
                ),
                (vec!["--tokens", "0"], "--tokens 0"),
                (
                    vec!["--tasks", "4,8", "--tokens", "4"],
                    "--tokens 4: must be less",
                ),
                (
                    vec!["--size", "18014398509481984"],
                    "--size 18014398509481984: at most",
                ),
            ];
            for (args, msg) in cases {
                let e = run(&opts(&args), ctx).unwrap_err().to_string();
                assert!(e.starts_with(msg), "{args:?}: {e}");
            }
        });
    }

    #[test]
    fn order_replay_accepts_the_ring_and_rejects_skips() {
        assert_eq!(order_violations(&[0, 1, 2, 0, 1, 2], 3, 1), (0, 0));
        assert_eq!(order_violations(&[0, 2], 3, 1).0, 1);
        // N=5, K=2: tokens start at 0 and 2 and may interleave.
        assert_eq!(order_violations(&[2, 0, 3, 1, 4, 2, 0], 5, 2), (0, 0));
    }

    #[test]
    fn verify_order_passes_for_small_and_larger_rings() {
        with_ctx(|ctx| {
            for (n, k) in [(5, 2), (64, 3)] {
                for kind in [Kind::Threads, Kind::Processes] {
                    let c = turns(&spec(Via::Pipe, kind, n, k, true, ctx.first_cpu()), ctx, 50);
                    // Long enough that every task must appear (the replay checks it).
                    assert!(
                        c.visits.len() >= 2 * n,
                        "{n} {k}: {} visits",
                        c.visits.len()
                    );
                    let (bad, unvisited) = order_violations(&c.visits, n, k);
                    assert_eq!((bad, unvisited), (0, 0), "{kind:?} n={n} k={k}");
                }
            }
        });
    }

    #[test]
    fn one_token_on_one_cpu_switches_once_per_hop() {
        with_ctx(|ctx| {
            for kind in [Kind::Threads, Kind::Processes] {
                for via in [Via::Pipe, Via::Futex, Via::Eventfd, Via::PosixSem] {
                    let n = 8;
                    let c = turns(&spec(via, kind, n, 1, false, ctx.first_cpu()), ctx, 300);
                    let per_hop = c.switches.total() as f64 / (c.ops * n as u64) as f64;
                    assert!(
                        per_hop >= 0.95,
                        "{via} {kind:?}: {per_hop} switches per hop"
                    );
                    assert_eq!(c.migrations, 0, "{via} {kind:?}");
                }
            }
        });
    }

    #[test]
    fn killing_a_worker_process_fails_the_ring_and_reaps_the_rest() {
        with_ctx(|ctx| {
            let mut ring = Ring::start(
                &spec(Via::Pipe, Kind::Processes, 6, 1, false, ctx.first_cpu()),
                ctx,
            )
            .unwrap();
            ring.begin();
            ring.op().unwrap();
            let pids = ring.pids();
            task::send_signal(pids[2], libc::SIGKILL).unwrap();
            let err = (0..1000)
                .find_map(|_| ring.op().err())
                .expect("the ring must fail");
            assert_eq!(
                err.to_string(),
                format!(
                    "worker process {} was killed by signal 9 (SIGKILL)",
                    pids[2]
                )
            );
            drop(ring);
            for pid in pids {
                assert!(
                    std::fs::metadata(format!("/proc/{pid}")).is_err(),
                    "{pid} left"
                );
            }
        });
    }

    #[test]
    fn run_reports_cases_controls_and_derived_figures() {
        with_ctx(|ctx| {
            let out = run(&opts(&["--tasks", "2,4", "--size", "4"]), ctx).unwrap();
            let ids: Vec<&str> = out.cases.iter().map(|c| c.id.as_str()).collect();
            assert_eq!(
                ids,
                [
                    "ring.pipe.control",
                    "ring.touch.s4",
                    "ring.pipe.threads.n2.k1.s4",
                    "ring.pipe.threads.n4.k1.s4"
                ]
            );
            // Per ring: the switch cost and the cost per counted switch.
            let ids: Vec<&str> = out.derived.iter().map(|d| d.id.as_str()).collect();
            assert_eq!(
                ids,
                [
                    "ring.pipe.threads.n2.k1.s4.switch_cost",
                    "ring.pipe.threads.n2.k1.s4.per_switch",
                    "ring.pipe.threads.n4.k1.s4.switch_cost",
                    "ring.pipe.threads.n4.k1.s4.per_switch"
                ]
            );
            assert!(out.derived.iter().all(|d| d.terms.len() == 3));
            for c in &out.cases[2..] {
                assert!(c.counters["peak_rss_kib"] > 0.0);
                assert!(c.counters["switches_per_hop"] > 0.0);
            }
        });
    }
}
