//! `tick-forms`: the grid of a QNX study that ran the same work as one flow, N threads and N
//! forked processes at five clock periods, from 1 ms down to 9.2 µs, and printed each form's
//! time and cycles at each period. Linux cannot change its tick period at run time, so the
//! periods here are timer events made for the purpose (`tick`'s helper on the working CPU),
//! counted where they happen; the forms are `split`'s tasks sharing its work loop, all on one
//! CPU; each form also runs with its workers under SCHED_FIFO and SCHED_RR where permitted.
//!
//! Beside the grid, a futex ping-pong on the same CPU measures what one hand-over costs
//! between two threads and between two processes, the study's other two figures, so that
//! what a rescheduling costs can be set against what servicing an event costs on the same
//! machine.

use crate::context::{Cancelled, Context};
use crate::cpuset::AffinityRestore;
use crate::engine;
use crate::engine::clock::{kernel_hz, real_clock};
use crate::engine::controls::{self, Control};
use crate::engine::timer::{
    self, deliverable, events_tolerance, period_name, run_limit, Armed, Source as EventSource,
    MIN_EVENTS_PER_RUN,
};
use crate::engine::tokens::{self, RingSpec};
use crate::engine::work::{calibrate, Form};
use crate::limits::{Limits, Needs};
use crate::sampler::{median_of, single_task_check, whole_runs};
use anyhow::Context as _;
use oscost_model::case::{Case, Check, DerivedSpec, ExperimentOutput, Series, Unavailable};
use oscost_model::Samples;
use oscost_sys::clock::Clock;
use oscost_sys::ipc::Via;
use oscost_sys::split::{self as sys_split, Plan, Record, SplitRun};
use oscost_sys::task::{CpuMask, Kind, Team};
use oscost_sys::timeline::{scheduler_of, set_scheduler_of, Sched};
use oscost_sys::timer::{EventCounts, Policy as HelperPolicy};
use oscost_sys::Switches;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Subcommand name and id prefix.
pub const NAME: &str = oscost_model::ids::tick_forms::NAME;

/// The default periods: `tick`'s four and 100 µs between them, five as the study had.
const DEFAULT_PERIODS: [u64; 5] = [1_000_000, 200_000, 100_000, 50_000, 20_000];
/// The work W, as the time one flow needs for it undisturbed: with five rounds of the whole
/// grid the run stays near a minute.
const DEFAULT_WORK_NS: u64 = 120_000_000;
const QUICK_WORK_NS: u64 = 30_000_000;
const DEFAULT_ROUNDS: usize = 5;
const QUICK_ROUNDS: usize = 3;
const MAX_TASKS: usize = 256;
/// Work per step of a task: the tasks look at the stop word this often.
const STEP_NS: u64 = 1_000_000;
/// The helper's SCHED_FIFO priority: above the workers' real-time priority (1), so that under
/// `fifo` and `rr` its wake-ups still preempt the work as a clock interrupt would.
const HELPER_PRIORITY: i32 = 2;
/// The pause after every run, untimed: exited tasks leave the kernel deferred work, and
/// real-time runs leave the CPU's other tasks waiting.
const SETTLE: Duration = Duration::from_millis(10);
/// How long the parent sleeps between looks at its tasks while they work.
const PATIENCE: Duration = Duration::from_millis(500);
/// Hand-overs of the ping-pong per switch counted: exactly one on one CPU.
const SWITCH_TOLERANCE: f64 = 0.05;

/// The scheduling policy of the working tasks.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Policy {
    /// SCHED_OTHER (the fair scheduler): a woken helper's sleep may hand the CPU to another task
    Other,
    /// SCHED_FIFO priority 1: a task runs until it finishes or a higher priority preempts it
    Fifo,
    /// SCHED_RR priority 1: as FIFO, and round-robin among equals every sched_rr_timeslice_ms
    Rr,
}

impl Policy {
    fn sched(self) -> Sched {
        match self {
            Policy::Other => Sched::Other,
            Policy::Fifo => Sched::Fifo,
            Policy::Rr => Sched::Rr,
        }
    }
}

/// Where the periodic events come from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Source {
    /// helper thread on the working CPU blocked on a periodic timerfd (the kernel keeps the period)
    Timerfd,
    /// helper thread on the working CPU sleeping to each next deadline with clock_nanosleep
    Helper,
}

impl Source {
    fn event_source(self) -> EventSource {
        match self {
            Source::Timerfd => EventSource::Timerfd,
            Source::Helper => EventSource::Helper,
        }
    }
}

/// Options of `oscost tick-forms`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Who does the work, comma-separated
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "single,threads,processes",
        value_name = "FORM,..."
    )]
    pub form: Vec<Form>,

    /// Threads or processes sharing the work (1..256); one flow does it in as many pieces
    #[arg(long, default_value_t = 4, value_name = "N", value_parser = parse_tasks)]
    pub tasks: usize,

    /// Timer periods, comma-separated, each from 1us to 100ms, besides the undisturbed work
    /// [default: 1ms,200us,100us,50us,20us, without those this machine cannot deliver]
    #[arg(long, value_delimiter = ',', value_name = "PERIOD,...", value_parser = timer::parse_period)]
    pub periods: Option<Vec<u64>>,

    /// Where the events come from
    #[arg(long, value_enum, default_value = "timerfd", value_name = "SOURCE")]
    pub source: Source,

    /// Policies of the working tasks, comma-separated; fifo and rr need CAP_SYS_NICE (else
    /// they are listed as not measured)
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "other,fifo,rr",
        value_name = "POLICY,..."
    )]
    pub policies: Vec<Policy>,

    /// The work W, as the time one flow needs for it undisturbed (turned into a fixed count
    /// of work units at the start) [default: 120ms, or 30ms with --quick]
    #[arg(long, value_name = "TIME", value_parser = engine::parse_duration)]
    pub work: Option<u64>,

    /// Rounds: every point once per round, the order rotated [default: 5, or 3 with --quick]
    #[arg(long, value_name = "N", value_parser = parse_rounds)]
    pub rounds: Option<usize>,
}

fn parse_tasks(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(v) if (1..=MAX_TASKS).contains(&v) => Ok(v),
        _ => Err(format!(
            "`{s}` is not a number of tasks from 1 to {MAX_TASKS}"
        )),
    }
}

fn parse_rounds(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(v) if (1..=1000).contains(&v) => Ok(v),
        _ => Err(format!("`{s}` is not a number of rounds from 1 to 1000")),
    }
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::TickForms;
    const SUMMARY: &'static str =
        "One flow, N threads and N processes under timer events at several periods";
    const ABOUT: &'static str =
        "One flow, N threads and N processes under timer events at several periods.

The same work W (split's work loop, --work says how long one flow needs for it) is done by \
one flow, by --tasks threads and by --tasks processes, all on the first CPU of the set, \
undisturbed and under periodic events at each of --periods: a helper thread on the same CPU, \
SCHED_FIFO above the workers, woken by a timerfd (--source), the closest a program comes to \
a clock interrupt that can also reschedule. Every form runs with its workers under each of \
--policies (fifo and rr need CAP_SYS_NICE). The points are interleaved in --rounds rounds and \
each figure is the median over rounds of the time from the start to the last finish; beside \
it the events counted, the working tasks' switches counted by the kernel, the run in \
reference cycles and the work done, checked to sum to W. A futex ping-pong on the same CPU \
gives the one-way hand-over between two threads and between two processes. This repeats the \
grid of a QNX study that shortened the clock period from 1 ms to 9.2 µs under the same work \
and found about 1256 cycles per extra tick.\n\nTakes about 40 s; --quick about 10 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = false;
    const NO_THREAD_STACK_CACHE: bool = true;

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }

    fn preflight(&self, _quick: bool, limits: &Limits) -> anyhow::Result<()> {
        limits.check(&needs(self))
    }
}

/// What the largest point holds at once: its tasks, the helper and the watchdog.
fn needs(opts: &Options) -> Needs {
    let n = opts.tasks as u64;
    Needs {
        what: format!("{NAME} --tasks {}", opts.tasks),
        instead: Some("use fewer --tasks".into()),
        files: None,
        tasks: Some((
            n + 3,
            format!(
                "{} tasks, the helper, the watchdog thread and the measuring process",
                opts.tasks
            ),
        )),
        maps: Some((2 * n + 2, "a stack and its guard page per thread".into())),
        memory_kib: None,
        address_space_kib: None,
    }
}

/// One point of the grid; `period` `None` is the undisturbed work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Point {
    form: Form,
    policy: Policy,
    period: Option<u64>,
}

fn case_id(form: Form, policy: Policy, period: Option<u64>) -> String {
    oscost_model::ids::tick_forms::case(
        &engine::value_name(&form),
        &engine::value_name(&policy),
        period,
    )
}

impl Point {
    fn id(&self) -> String {
        case_id(self.form, self.policy, self.period)
    }
}

fn switch_id(kind: Kind) -> String {
    oscost_model::ids::tick_forms::switch(kind.name())
}

/// The id of the futex post + wait in one task.
fn control_id() -> String {
    oscost_model::ids::tick_forms::Id::Control.to_string()
}

/// One run of a point: the span of the work, what happened meanwhile.
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    /// First start to last finish, counter ticks.
    ticks: u64,
    events: EventCounts,
    /// Switches of the working tasks over their work.
    switches: Switches,
    units: u64,
    /// Distinct tasks that did a share (1 for one flow).
    tasks_seen: usize,
}

/// The calling thread under a real-time policy until dropped, then back under the one it had
/// (its nice value is kept by the kernel across the change).
struct SelfPolicy {
    tid: i32,
    before: Sched,
}

impl SelfPolicy {
    fn set(p: Sched) -> anyhow::Result<SelfPolicy> {
        let tid = oscost_sys::gettid();
        let number = scheduler_of(tid)?;
        let before = [
            Sched::Other,
            Sched::Batch,
            Sched::Idle,
            Sched::Rr,
            Sched::Fifo,
        ]
        .into_iter()
        .find(|s| s.number() == number)
        .unwrap_or(Sched::Other);
        set_scheduler_of(tid, p)?;
        Ok(SelfPolicy { tid, before })
    }
}

impl Drop for SelfPolicy {
    fn drop(&mut self) {
        let _ = set_scheduler_of(self.tid, self.before);
    }
}

/// Whether this process may give its tasks a real-time policy: tried on the measuring thread
/// itself and undone at once. `None` when permitted, else the reason.
fn realtime_refused() -> Option<String> {
    match SelfPolicy::set(Sched::Fifo) {
        Ok(_undone_on_drop) => None,
        Err(e) => Some(format!(
            "SCHED_FIFO and SCHED_RR need CAP_SYS_NICE (or an RLIMIT_RTPRIO of at least 1): {e:#}; \
             run as root to measure them"
        )),
    }
}

/// What one run needs to know besides the point.
struct Setup<'a> {
    clock: &'a Clock,
    plan: Plan,
    source: EventSource,
    cpu: usize,
    limit_ns: u64,
}

fn arm(s: &Setup, period: Option<u64>) -> anyhow::Result<Option<Armed>> {
    period
        .map(|p| Armed::arm(s.source, p, s.cpu, s.limit_ns, HELPER_PRIORITY))
        .transpose()
}

fn counts(armed: &Option<Armed>) -> EventCounts {
    armed.as_ref().map(Armed::counts).unwrap_or_default()
}

fn disarm(armed: Option<Armed>) -> anyhow::Result<Option<HelperPolicy>> {
    let policy = armed.as_ref().and_then(Armed::policy);
    if let Some(a) = armed {
        a.disarm()?;
    }
    Ok(policy)
}

/// One run of `p`: the source armed just before the work starts and disarmed once it is done.
fn one_run(p: &Point, s: &Setup, ctx: &Context) -> anyhow::Result<(Run, Option<HelperPolicy>)> {
    match p.form {
        Form::Single => run_single(p, s),
        Form::Threads => run_team(Kind::Threads, p, s, ctx),
        Form::Processes => run_team(Kind::Processes, p, s, ctx),
    }
}

/// The measuring thread does the N shares one after another.
fn run_single(p: &Point, s: &Setup) -> anyhow::Result<(Run, Option<HelperPolicy>)> {
    let _policy = match p.policy {
        Policy::Other => None,
        other => Some(SelfPolicy::set(other.sched())?),
    };
    let armed = arm(s, p.period)?;
    let c0 = counts(&armed);
    let sw0 = oscost_sys::thread_switches();
    let a = s.clock.now();
    let mut units = 0;
    for i in 0..s.plan.tasks {
        units += sys_split::do_share(s.plan.share(i), s.plan.step, false, || false).0;
    }
    let b = s.clock.now();
    let sw1 = oscost_sys::thread_switches();
    let c1 = counts(&armed);
    let policy = disarm(armed)?;
    Ok((
        Run {
            ticks: b.wrapping_sub(a),
            events: c1.since(c0),
            switches: sw1.since(sw0),
            units,
            tasks_seen: 1,
        },
        policy,
    ))
}

/// N threads or processes: created, given the policy at the barrier, started together; the
/// span is the start to the last finish.
fn run_team(
    kind: Kind,
    p: &Point,
    s: &Setup,
    ctx: &Context,
) -> anyhow::Result<(Run, Option<HelperPolicy>)> {
    let shared =
        Arc::new(SplitRun::new(s.plan, s.clock.clone()).context("shared memory for the tasks")?);
    let halt = Arc::clone(&shared);
    let mut team = Team::new(kind, s.plan.tasks, 0, move || halt.halt());
    for i in 0..s.plan.tasks {
        team.spawn(None, &shared, i)?;
    }
    team.watch()?;
    while !shared.wait_ready(PATIENCE) {
        team.check()?;
        ctx.check_cancel()?;
    }
    team.check()?;
    if p.policy != Policy::Other {
        // Per task: nothing system-wide changes, and the policy ends with the task.
        for i in 0..s.plan.tasks {
            let tid = shared.record(i).tid;
            set_scheduler_of(tid, p.policy.sched()).with_context(|| {
                format!(
                    "giving task {} (tid {tid}) {}",
                    i + 1,
                    p.policy.sched().kernel_name()
                )
            })?;
        }
    }
    let armed = arm(s, p.period)?;
    let c0 = counts(&armed);
    let t_go = s.clock.now();
    shared.start();
    while !shared.wait_done(PATIENCE) {
        team.check()?;
        if ctx.check_cancel().is_err() {
            return Err(Cancelled.into());
        }
    }
    let c1 = counts(&armed);
    let policy = disarm(armed)?;
    team.check()?;
    let records: Vec<Record> = (0..s.plan.tasks).map(|i| shared.record(i)).collect();
    team.finish()?;
    let last = records.iter().map(|r| r.finish).max().unwrap_or(t_go);
    let mut tids: Vec<i32> = records.iter().map(|r| r.tid).filter(|&t| t > 0).collect();
    tids.sort_unstable();
    tids.dedup();
    let parent = oscost_sys::gettid();
    Ok((
        Run {
            ticks: last.saturating_sub(t_go),
            events: c1.since(c0),
            switches: Switches {
                voluntary: records
                    .iter()
                    .map(|r| r.voluntary.saturating_sub(r.start_voluntary))
                    .sum(),
                involuntary: records
                    .iter()
                    .map(|r| r.involuntary.saturating_sub(r.start_involuntary))
                    .sum(),
            },
            units: records.iter().map(|r| r.units).sum(),
            tasks_seen: tids.iter().filter(|&&t| t != parent).count(),
        },
        policy,
    ))
}

/// What a run measures at its size (`--quick` or the stand-alone one), chosen in one place.
struct Sizes {
    /// The work W, ns.
    work_ns: u64,
    /// Rounds of every point.
    rounds: usize,
}

fn plan(opts: &Options, quick: bool) -> Sizes {
    Sizes {
        work_ns: opts.work.unwrap_or(if quick {
            QUICK_WORK_NS
        } else {
            DEFAULT_WORK_NS
        }),
        rounds: opts
            .rounds
            .unwrap_or(if quick { QUICK_ROUNDS } else { DEFAULT_ROUNDS }),
    }
}

/// Checks the options against each other before anything runs.
fn validate(opts: &Options, work_ns: u64, ctx: &Context) -> anyhow::Result<()> {
    if ctx.cpus.is_empty() {
        anyhow::bail!("--cpus: the CPU set is empty");
    }
    if opts.tasks == 0 {
        anyhow::bail!("--tasks 0: at least one task must do the work");
    }
    if let Some(periods) = &opts.periods {
        if periods.is_empty() {
            anyhow::bail!("--periods: give at least one period, e.g. 1ms,50us");
        }
        for &p in periods {
            if work_ns / p < MIN_EVENTS_PER_RUN {
                anyhow::bail!(
                    "--periods {}: the work (--work {}) would see fewer than {} events; \
                     lengthen --work or shorten the period",
                    period_name(p),
                    period_name(work_ns),
                    MIN_EVENTS_PER_RUN
                );
            }
        }
    }
    Ok(())
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    let sizes = plan(opts, ctx.quick);
    let work_ns = sizes.work_ns;
    validate(opts, work_ns, ctx)?;
    let clock = real_clock(ctx, NAME)?;
    let rounds = sizes.rounds;
    let forms = engine::first_occurrences(&opts.form);
    let asked = engine::first_occurrences(&opts.policies);
    let explicit = opts.periods.is_some();
    let periods = periods_to_try(opts, work_ns)?;
    let cpu = ctx.first_cpu();
    let _pin = AffinityRestore::pin(&[cpu])?;
    let mut out = ExperimentOutput::default();
    ctx.progress.start(6, NAME);

    // One-task figures first: glibc stays in its multi-threaded mode once a thread existed.
    ctx.progress.message("futex post + wait in one task");
    let control = controls::link_control_on(Via::Futex, ctx, cpu)
        .context("measuring the futex post + wait in one task")?;
    ctx.progress.inc(1);

    let policies = policies_to_run(&asked, &forms, &periods, &mut out);

    ctx.progress.message("calibrating the work");
    let rate = calibrate(&clock);
    let units = ((work_ns as f64) * rate).round().max(1.0) as u64;
    let step = ((STEP_NS as f64) * rate).round().max(1.0) as u64;
    ctx.progress.inc(1);

    ctx.progress
        .message("probing which periods can be delivered");
    let source = opts.source.event_source();
    let kept: Vec<u64> = deliverable(
        &clock,
        &[source],
        &periods,
        explicit,
        cpu,
        HELPER_PRIORITY,
        ctx,
        &mut out.notes,
    )?
    .into_iter()
    .map(|(_, p)| p)
    .collect();
    ctx.progress.inc(1);

    let mut switch_cases = Vec::new();
    for kind in Kind::ALL {
        ctx.check_cancel()?;
        ctx.progress
            .message(&format!("futex hand-over between two {}", kind.name()));
        switch_cases.push(handover_case(kind, cpu, ctx)?);
        ctx.progress.inc(1);
    }

    // Policies innermost, so real-time runs never follow each other for long; the order
    // rotates from round to round so a drift of the machine's speed touches every point alike.
    let mut points = Vec::new();
    for &form in &forms {
        for period in std::iter::once(None).chain(kept.iter().map(|&p| Some(p))) {
            for &policy in &policies {
                points.push(Point {
                    form,
                    policy,
                    period,
                });
            }
        }
    }
    let setup = Setup {
        clock: &clock,
        plan: Plan {
            tasks: opts.tasks,
            units,
            step,
            yield_each: false,
        },
        source,
        cpu,
        limit_ns: run_limit(work_ns),
    };
    let mut runs: Vec<Vec<Run>> = vec![Vec::with_capacity(rounds); points.len()];
    let mut helper_policy: Option<HelperPolicy> = None;
    ctx.progress.start((rounds * points.len()) as u64, NAME);
    for round in 0..rounds {
        for k in 0..points.len() {
            ctx.check_cancel()?;
            let i = (round + k) % points.len();
            let p = &points[i];
            ctx.progress.message(&format!(
                "round {}/{rounds}: {}",
                round + 1,
                p.id().trim_start_matches("tick-forms.")
            ));
            let (r, policy) = one_run(p, &setup, ctx)
                .with_context(|| format!("{} (round {})", p.id(), round + 1))?;
            runs[i].push(r);
            if policy.is_some() {
                helper_policy = policy;
            }
            std::thread::sleep(SETTLE);
            ctx.progress.inc(1);
        }
    }
    ctx.progress.finish();

    let helper_text = add_params(
        &mut out,
        opts,
        &setup,
        work_ns,
        rate,
        rounds,
        &kept,
        helper_policy,
    );

    for (p, r) in points.iter().zip(&runs) {
        out.cases.push(point_case(p, r, &setup, opts, &helper_text));
    }
    add_extras(&mut out, &points);
    add_control(&mut out, &control, switch_cases, cpu);
    Ok(out)
}

/// The timer periods to try: those asked for, else the defaults that give the run enough
/// events.
fn periods_to_try(opts: &Options, work_ns: u64) -> anyhow::Result<Vec<u64>> {
    let periods: Vec<u64> = match &opts.periods {
        Some(p) => engine::first_occurrences(p),
        None => DEFAULT_PERIODS
            .iter()
            .copied()
            .filter(|&p| work_ns / p >= MIN_EVENTS_PER_RUN)
            .collect(),
    };
    if periods.is_empty() {
        anyhow::bail!(
            "--work {}: too short for any default period to give {} events a run; lengthen it",
            period_name(work_ns),
            MIN_EVENTS_PER_RUN
        );
    }
    Ok(periods)
}

/// The policies that can run: a real-time one this process may not use is recorded as
/// unavailable, every case of it, with the reason.
fn policies_to_run(
    asked: &[Policy],
    forms: &[Form],
    periods: &[u64],
    out: &mut ExperimentOutput,
) -> Vec<Policy> {
    let refused = asked
        .iter()
        .any(|&p| p != Policy::Other)
        .then(realtime_refused)
        .flatten();
    let mut policies = Vec::new();
    for &policy in asked {
        match (&refused, policy) {
            (Some(why), Policy::Fifo | Policy::Rr) => {
                for &form in forms {
                    for period in std::iter::once(None).chain(periods.iter().map(|&p| Some(p))) {
                        out.unavailable.push(Unavailable {
                            id: case_id(form, policy, period),
                            description: format!(
                                "{} under {}",
                                engine::value_name(&form),
                                policy.sched().kernel_name()
                            ),
                            reason: why.clone(),
                        });
                    }
                }
            }
            _ => policies.push(policy),
        }
    }

    policies
}

/// Records the run's parameters; returns the helper's policy in words.
#[allow(clippy::too_many_arguments)]
fn add_params(
    out: &mut ExperimentOutput,
    opts: &Options,
    setup: &Setup,
    work_ns: u64,
    rate: f64,
    rounds: usize,
    kept: &[u64],
    helper_policy: Option<HelperPolicy>,
) -> String {
    let (cpu, clock) = (setup.cpu, setup.clock);
    let (units, step) = (setup.plan.units, setup.plan.step);
    out.params.insert("cpu".into(), json!(cpu));
    out.params.insert("tasks".into(), json!(opts.tasks));
    out.params
        .insert("work_requested_ns".into(), json!(work_ns));
    out.params.insert("work_units".into(), json!(units));
    out.params.insert("step_units".into(), json!(step));
    out.params.insert("units_per_ns".into(), json!(rate));
    out.params.insert("rounds".into(), json!(rounds));
    out.params
        .insert("source".into(), json!(engine::value_name(&opts.source)));
    out.params
        .insert("helper_fifo_priority".into(), json!(HELPER_PRIORITY));
    out.params.insert("periods_ns".into(), json!(kept));
    out.params
        .insert("tick_unit".into(), json!(clock.info().tick_unit.clone()));
    if let Some((hz, tick_ns)) = kernel_hz() {
        out.params.insert("kernel_hz".into(), json!(hz));
        out.params.insert("kernel_tick_ns".into(), json!(tick_ns));
    }
    if let Some(v) = crate::sysctl::read_trim(std::path::Path::new(crate::sysctl::RR_TIMESLICE)) {
        out.params.insert("sched_rr_timeslice_ms".into(), json!(v));
    }
    let helper_text = match &helper_policy {
        Some(HelperPolicy::Fifo(prio)) => format!("SCHED_FIFO {prio}"),
        Some(HelperPolicy::Normal(why)) => {
            out.warnings.push(
                format!(
                    "the helper runs under the normal policy ({why}): its wake-ups wait until the \
                 scheduler preempts the work, and under fifo and rr they never do"
                )
                .into(),
            );
            "SCHED_OTHER".to_owned()
        }
        None => "none".to_owned(),
    };
    out.params
        .insert("helper_policy".into(), json!(helper_text));

    helper_text
}

/// The time each period's events added: a point's median less its undisturbed run's.
fn add_extras(out: &mut ExperimentOutput, points: &[Point]) {
    for p in points {
        let Some(period) = p.period else { continue };
        let base = case_id(p.form, p.policy, None);
        let flagged = [p.id(), base.clone()]
            .iter()
            .filter_map(|id| out.cases.iter().find(|c| &c.id == id))
            .filter_map(engine::failed_checks)
            .collect::<Vec<_>>();
        out.derived.push(DerivedSpec {
            id: oscost_model::ids::tick_forms::extra(&p.id()),
            description: format!(
                "time the events every {} added to the whole work: the run's median less the \
                 undisturbed run's median, same form and policy",
                period_name(period)
            ),
            terms: vec![(p.id(), 1.0), (base, -1.0)],
            flagged: (!flagged.is_empty()).then(|| flagged.join("; ")),
        });
    }
}

/// The one-task control case and each hand-over's cost against it.
fn add_control(out: &mut ExperimentOutput, control: &Control, switch_cases: Vec<Case>, cpu: usize) {
    let mut control_case = Case::new(
        control_id(),
        "futex post + wait in one task (no switch): what a hand-over does besides switching",
        "post + wait",
        control.samples.clone(),
    )
    .param("via", Via::Futex.name())
    .param("cpu", cpu as u64);
    control_case.checks.push(control.no_switch_check());
    control_case
        .checks
        .extend(single_task_check(control.threads_in_process));
    control_case.add_messages(control.said.clone());
    for c in &switch_cases {
        let flagged = [c, &control_case]
            .into_iter()
            .filter_map(engine::failed_checks)
            .collect::<Vec<_>>();
        out.derived.push(DerivedSpec {
            id: oscost_model::ids::tick_forms::switch_cost(&c.id),
            description: "one-way hand-over less the futex post + wait in one task: the \
                          switch itself, with its wake-up"
                .into(),
            terms: vec![(c.id.clone(), 1.0), (control_id(), -1.0)],
            flagged: (!flagged.is_empty()).then(|| flagged.join("; ")),
        });
    }
    out.cases.extend(switch_cases);
    out.cases.push(control_case);
}

fn point_case(p: &Point, runs: &[Run], s: &Setup, opts: &Options, helper: &str) -> Case {
    let clock = s.clock;
    let med = |f: &dyn Fn(&Run) -> f64| median_of(runs.iter().map(f));
    let who = match p.form {
        Form::Single => format!("one flow doing W in {} pieces", s.plan.tasks),
        Form::Threads => format!("{} threads sharing W", s.plan.tasks),
        Form::Processes => format!("{} processes sharing W", s.plan.tasks),
    };
    let under = match p.period {
        None => "undisturbed".to_owned(),
        Some(period) => format!(
            "under an event every {} (a helper on the same CPU woken by {})",
            period_name(period),
            match opts.source {
                Source::Timerfd => "a timerfd",
                Source::Helper => "clock_nanosleep",
            }
        ),
    };
    let mut case = Case::new(
        p.id(),
        format!(
            "{who} on CPU {}, {}, {under}: start to last finish",
            s.cpu,
            p.policy.sched().kernel_name()
        ),
        "run",
        whole_runs(clock, runs.iter().map(|r| r.ticks)),
    )
    .param("form", engine::value_name(&p.form))
    .param("policy", engine::value_name(&p.policy))
    .param("tasks", s.plan.tasks)
    .param("cpu", s.cpu as u64)
    .param("work_units", s.plan.units);
    if let Some(period) = p.period {
        case = case
            .param("period_ns", period)
            .param("source", engine::value_name(&opts.source))
            .param("helper_policy", helper);
    }
    let events = med(&|r| r.events.events as f64);
    let expected = p.period.map_or(0.0, |period| {
        med(&|r| clock.ticks_to_ns(r.ticks as f64) / period as f64)
    });
    let c = &mut case.counters;
    c.insert("events".into(), events);
    c.insert("expected_events".into(), expected);
    c.insert("expirations".into(), med(&|r| r.events.expirations as f64));
    c.insert("switches".into(), med(&|r| r.switches.total() as f64));
    c.insert(
        "voluntary_switches".into(),
        med(&|r| r.switches.voluntary as f64),
    );
    c.insert(
        "involuntary_switches".into(),
        med(&|r| r.switches.involuntary as f64),
    );
    c.insert("cycles".into(), med(&|r| r.ticks as f64));
    c.insert("work_units".into(), med(&|r| r.units as f64));
    if let Some(period) = p.period {
        case.checks.push(Check::near(
            "events",
            expected,
            events,
            events_tolerance(expected),
            &format!(
                "helper wake-ups counted during each run (median over {} rounds) against the \
                 run's time / {}; within ±5 % or one event, else the period was not kept",
                runs.len(),
                period_name(period)
            ),
        ));
    }
    let wrong = runs.iter().find(|r| r.units != s.plan.units);
    case.checks.push(Check::near(
        "work_units_done",
        s.plan.units as f64,
        wrong.map_or(s.plan.units, |r| r.units) as f64,
        0.0,
        "units of work the tasks reported doing, summed, in the worst run; must be W exactly",
    ));
    if p.form != Form::Single {
        let fewest = runs.iter().map(|r| r.tasks_seen).min().unwrap_or(0);
        case.checks.push(Check::near(
            "distinct_tasks",
            s.plan.tasks as f64,
            fewest as f64,
            0.0,
            "distinct task ids (none the measuring thread's) that did a share, fewest over runs",
        ));
    }
    case.series.push(Series {
        name: "runs".into(),
        columns: [
            "cycles",
            "events",
            "expirations",
            "voluntary_switches",
            "involuntary_switches",
            "units",
        ]
        .map(String::from)
        .to_vec(),
        points: runs
            .iter()
            .map(|r| {
                vec![
                    r.ticks as f64,
                    r.events.events as f64,
                    r.events.expirations as f64,
                    r.switches.voluntary as f64,
                    r.switches.involuntary as f64,
                    r.units as f64,
                ]
            })
            .collect(),
    });
    case
}

/// Two tasks of `kind` on `cpu` passing one token through a futex: each sample a round trip,
/// halved into the one-way hand-over.
fn handover_case(kind: Kind, cpu: usize, ctx: &Context) -> anyhow::Result<Case> {
    let mask = CpuMask::new(&[cpu])?;
    let spec = RingSpec {
        via: Via::Futex,
        kind,
        tasks: 2,
        tokens: 1,
        size_kib: 0,
        masks: vec![mask.clone(), mask],
        verify: false,
    };
    let (rt, warnings, counts) = tokens::sample(&spec, ctx).with_context(|| switch_id(kind))?;
    let half = Samples {
        per_op_ns: rt.per_op_ns.iter().map(|v| v / 2.0).collect(),
        per_op_ticks: rt.per_op_ticks.iter().map(|v| v / 2.0).collect(),
        iterations_per_sample: rt.iterations_per_sample * 2,
        loop_overhead_ns: rt.loop_overhead_ns / 2.0,
    };
    let handovers = (2 * counts.ops).max(1);
    let per = counts.switches.total() as f64 / handovers as f64;
    let mut case = Case::new(
        switch_id(kind),
        format!(
            "futex ping-pong between two {} on CPU {cpu}: one way, half a round trip",
            kind.name()
        ),
        "switch",
        half,
    )
    .param("via", Via::Futex.name())
    .param("kind", kind.name())
    .param("cpu", cpu as u64);
    case.add_messages(warnings);
    case.counters.insert("switches_per_handover".into(), per);
    case.counters
        .insert("handovers_counted".into(), handovers as f64);
    case.checks.push(Check::near(
        "switches_per_handover",
        1.0,
        per,
        SWITCH_TOLERANCE,
        &format!(
            "getrusage nvcsw + nivcsw of both tasks over the measured span ({} voluntary + {} \
             involuntary) / {handovers} hand-overs; one CPU: exactly one switch each (±{SWITCH_TOLERANCE})",
            counts.switches.voluntary, counts.switches.involuntary
        ),
    ));
    Ok(case)
}

#[cfg(test)]
mod tests;
