//! `split`: one fixed amount of work W done by one flow, by N threads or by N processes, on
//! one CPU, on all the allowed CPUs, or pinned N / CPUs per CPU; optionally with every task
//! giving up the CPU after each step. Reproduces the QNX comparison of one flow, threads and
//! forks, and the Windows study of 1..8192 threads that call Sleep(0) after each step, on one
//! and two CPUs (the `two` set: the first two CPUs of the set, on a machine of any size).
//!
//! Each point (form, CPU set, N) is run `--repeats` times, the points interleaved within each
//! round. A run's figure is its whole time, creating and joining the tasks included; beside it
//! are the time from the barrier start to the last finish, the CPU time, switches, migrations,
//! page faults and the spread of finish times, all counted by the kernel per task. Every run
//! checks that the work done sums to W exactly and that N distinct tasks did it.

use crate::context::{Cancelled, Context};
use crate::cpuset::{self, AffinityRestore};
use crate::engine;
use crate::engine::work::{calibrate, Form};
use crate::engine::{parse_tasks, TaskList};
use crate::env::load::parse_cpu_times;
use crate::limits::{Limits, Needs};
use crate::sampler::{counting_threads, median_of, single_task_check, whole_runs};
use anyhow::Context as _;
use oscost_model::case::{Case, Check, ExperimentOutput, Series, Unavailable};
use oscost_sys::clock::Clock;
use oscost_sys::split::{self as sys_split, Plan, Record, SplitRun};
use oscost_sys::task::{self, CpuMask, Kind, Team};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Subcommand name and id prefix.
pub const NAME: &str = "split";

/// The most tasks one point may have.
const MAX_TASKS: usize = 1 << 16;
/// The pause after a run of N tasks, untimed: a base and a little per task.
const SETTLE_MIN: Duration = Duration::from_millis(20);
const SETTLE_PER_TASK: Duration = Duration::from_micros(20);
/// The stand-alone sweep; the suite's and `--quick`'s: one task, two (the speed-up two CPUs
/// give), and a crowd.
const FULL_SWEEP: &str = "1..1024";
const SMALL_SWEEP: &str = "1,2,8";
/// The work W by default: what one task needs on one CPU.
const DEFAULT_WORK: &str = "1s";
/// In the suite, runs long enough that a tick of steal or a late wake-up moves a run by a few
/// percent, not by a third.
const SUITE_WORK: &str = "30ms";
const QUICK_WORK: &str = "5ms";
/// Rounds: stand-alone, in the suite (enough for a median's interval within a few percent on
/// a machine that lends its CPUs unevenly), with `--quick` (a look, kept near a second).
const DEFAULT_REPEATS: u32 = 5;
const SUITE_REPEATS: u32 = 9;
const QUICK_REPEATS: u32 = 3;
/// The pause after a run with `--quick`: the kernel's deferred work of a few tasks is short.
const QUICK_SETTLE_MIN: Duration = Duration::from_millis(5);

/// Where the tasks may run.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
pub enum CpuSet {
    /// every task on the first CPU of the set
    One,
    /// all CPUs of the set; the scheduler places the tasks
    All,
    /// the first two CPUs of the set; the scheduler places the tasks (the Windows study's two
    /// CPUs, whatever the machine has)
    Two,
    /// all CPUs of the set, task i pinned to CPU i mod CPUs (N / CPUs per CPU): the
    /// pure-overhead reference for N > 1
    Balanced,
}

/// Options of `oscost split`.
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

    /// Numbers of tasks: a list (`1,4,64`) or a doubling range (`1..8192`) [default: 1..1024;
    /// 1,2,8 in the suite and with --quick]
    #[arg(long, value_name = "N,...|A..B", value_parser = parse_tasks, allow_hyphen_values = true)]
    pub tasks: Option<TaskList>,

    /// The total work W, as the time one flow needs for it on one CPU (`1s`, `250ms`); it is
    /// turned into a fixed count of work units at the start [default: 1s; 30ms in the suite,
    /// 5ms with --quick]
    #[arg(long, value_name = "TIME", value_parser = engine::parse_duration)]
    pub work: Option<u64>,

    /// Work per step, as a time (`20us`); with --yield each task gives up the CPU after
    /// every step
    #[arg(long, value_name = "TIME", value_parser = engine::parse_duration, default_value = "20us")]
    pub step: u64,

    /// Every task calls sched_yield() after each step (the Windows study's Sleep(0))
    #[arg(long = "yield")]
    pub yield_each: bool,

    /// CPU sets, comma-separated (within --cpus); `two` is the first two CPUs of --cpus, the
    /// Windows study's two CPUs (its cases are unavailable with fewer than two)
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "one,all,balanced",
        value_name = "SET,..."
    )]
    pub sets: Vec<CpuSet>,

    /// Runs of each point (the points interleaved in each round) [default: 5; 9 in the
    /// suite, 3 with --quick]
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u32).range(1..))]
    pub repeats: Option<u32>,

    /// The suite's sizes for what is not given (`oscost run` passes it)
    #[arg(long, hide = true)]
    pub suite_size: bool,
}

impl engine::Experiment for Options {
    const NAME: &'static str = NAME;
    const SUMMARY: &'static str =
        "The same work as one flow, N threads or N processes, with and without yielding";
    const ABOUT: &'static str =
        "The same work as one flow, N threads or N processes, with and without yielding.

A fixed amount of work W (a calibrated loop of register adds; --work says how long one flow \
needs for it on one CPU) is divided over N tasks. Each point (form, CPU set, N) runs --repeats \
times, interleaved. The figure is the whole run, creating and joining the tasks included; \
beside it: the time from the barrier start to the last finish, CPU time, voluntary and \
involuntary switches, migrations, page faults and the spread of finish times, counted by the \
kernel per task. The overhead table holds each point against the ideal T1 / min(N, CPUs), \
where T1 is one flow on one CPU measured in the same rounds. Every run checks that the work \
done sums to W exactly. --yield makes every task give up the CPU after each --step of work: \
the cost of a crowd of tasks taking turns. --sets one,two runs the Windows study's \
configuration (one CPU and exactly two, whatever the machine has): `oscost split --form \
threads --yield --tasks 1..8192 --sets one,two`.\n\nIn the suite it takes about 7.4 s; --quick about 1 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    const SUITE_ARGS: &'static [&'static str] = &["--suite-size"];
    const NO_THREAD_STACK_CACHE: bool = true;

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }

    fn preflight(&self, quick: bool, limits: &Limits) -> anyhow::Result<()> {
        match needs(self, quick) {
            Some(n) => limits.check(&n),
            None => Ok(()),
        }
    }
}

fn sweep(opts: &Options, quick: bool) -> Vec<usize> {
    match &opts.tasks {
        Some(TaskList(v)) => v.clone(),
        None => parse_tasks(if quick || opts.suite_size {
            SMALL_SWEEP
        } else {
            FULL_SWEEP
        })
        .map(|t| t.0)
        .unwrap_or_default(),
    }
}

fn work_ns(opts: &Options, quick: bool) -> u64 {
    opts.work.unwrap_or_else(|| {
        engine::parse_duration(match (quick, opts.suite_size) {
            (true, _) => QUICK_WORK,
            (false, true) => SUITE_WORK,
            (false, false) => DEFAULT_WORK,
        })
        .unwrap_or(1_000_000_000)
    })
}

fn repeats(opts: &Options, quick: bool) -> u32 {
    opts.repeats.unwrap_or(match (quick, opts.suite_size) {
        (true, _) => QUICK_REPEATS,
        (false, true) => SUITE_REPEATS,
        (false, false) => DEFAULT_REPEATS,
    })
}

/// What the largest point holds at once: its tasks, and for threads their stacks.
fn needs(opts: &Options, quick: bool) -> Option<Needs> {
    let n = sweep(opts, quick).into_iter().max()?;
    if !(1..=MAX_TASKS).contains(&n) {
        return None;
    }
    let n64 = n as u64;
    let threads = opts.form.contains(&Form::Threads);
    let processes = opts.form.contains(&Form::Processes);
    let tasks = if processes {
        Some((
            n64 + 2,
            format!("{n} processes, the measuring process and its watchdog thread"),
        ))
    } else if threads {
        Some((n64 + 1, format!("{n} threads and the measuring thread")))
    } else {
        None
    };
    let maps = threads.then(|| {
        (
            2 * n64,
            format!("a stack and its guard page for each of {n} threads"),
        )
    });
    Some(Needs {
        what: format!("{NAME} --tasks {n}"),
        instead: Some("use fewer --tasks".into()),
        files: None,
        tasks,
        maps,
        memory_kib: None,
    })
}

/// One point of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Point {
    form: Form,
    set: CpuSet,
    tasks: usize,
}

impl Point {
    fn id(&self, yield_each: bool) -> String {
        let mut id = format!(
            "{NAME}.{}.{}.{}",
            engine::value_name(&self.form),
            engine::value_name(&self.set),
            self.tasks
        );
        if yield_each {
            id.push_str(".yield");
        }
        id
    }
}

/// The points to run, the baseline (one flow, N = 1, one CPU) first. One flow is only run on
/// one CPU: it can use no other. The balanced set only differs from `all` for N > 1. With
/// fewer than two CPUs only the `one` set is run (see [`unrunnable`] for `two`).
fn points(opts: &Options, sizes: &[usize], ncpus: usize) -> Vec<Point> {
    let baseline = Point {
        form: Form::Single,
        set: CpuSet::One,
        tasks: 1,
    };
    let mut out = vec![baseline];
    let forms = engine::first_occurrences(&opts.form);
    let sets = engine::first_occurrences(&opts.sets);
    for &set in &sets {
        if set != CpuSet::One && ncpus < 2 {
            continue;
        }
        for &form in &forms {
            if form == Form::Single && set != CpuSet::One {
                continue;
            }
            for &tasks in sizes {
                if set == CpuSet::Balanced && tasks < 2 {
                    continue;
                }
                let p = Point { form, set, tasks };
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// The points of the `two` set when fewer than two CPUs are allowed: they cannot be run, and
/// unlike `all` (which is then the same CPU as `one`) they are named as unavailable, since
/// the study they reproduce asked for two CPUs.
fn unrunnable(opts: &Options, sizes: &[usize], ncpus: usize) -> Vec<Point> {
    if ncpus >= 2 || !opts.sets.contains(&CpuSet::Two) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for &form in &engine::first_occurrences(&opts.form) {
        if form == Form::Single {
            continue;
        }
        for &tasks in sizes {
            let p = Point {
                form,
                set: CpuSet::Two,
                tasks,
            };
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// What a point's tasks do, in words (a case's description begins with it).
fn describe(p: &Point) -> String {
    match p.form {
        Form::Single => format!("one flow doing W in {} pieces", p.tasks),
        Form::Threads => format!("{} threads sharing W", p.tasks),
        Form::Processes => format!("{} processes sharing W", p.tasks),
    }
}

/// Checks every option before anything is spawned; returns the task counts.
fn validate(opts: &Options, ctx: &Context) -> anyhow::Result<Vec<usize>> {
    let sizes = sweep(opts, ctx.quick);
    let (Some(&min), Some(&max)) = (sizes.iter().min(), sizes.iter().max()) else {
        anyhow::bail!("--tasks: no task count given");
    };
    if min == 0 {
        anyhow::bail!("--tasks 0: at least one task must do the work");
    }
    if max > MAX_TASKS {
        anyhow::bail!("--tasks {max}: at most {MAX_TASKS} tasks");
    }
    let work = work_ns(opts, ctx.quick);
    if opts.step > work {
        anyhow::bail!(
            "--step {} is larger than the whole work (--work {}): give a smaller --step",
            show_ns(opts.step),
            show_ns(work)
        );
    }
    if ctx.cpus.is_empty() {
        anyhow::bail!("--cpus: the CPU set is empty");
    }
    Ok(sizes)
}

fn show_ns(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000_000 && n % 1_000_000 == 0 => format!("{}s", n as f64 / 1e9),
        n if n >= 1_000_000 && n % 1_000 == 0 => format!("{}ms", n as f64 / 1e6),
        n if n >= 1_000 => format!("{}us", n as f64 / 1e3),
        n => format!("{n}ns"),
    }
}

/// What one run of a point measured.
#[derive(Debug, Clone, Default)]
struct RunStats {
    /// Create + work + join, ticks (the parent's reading of /proc between them excluded).
    total: u64,
    /// Barrier start to the last finish, ticks.
    work: u64,
    /// Start of creation to the barrier start, ticks.
    create: u64,
    /// Release to the last task joined, ticks.
    join: u64,
    /// Last finish minus first finish, ticks.
    spread: u64,
    cpu_ns: u64,
    voluntary: u64,
    involuntary: u64,
    migrations: Option<u64>,
    minor_faults: u64,
    major_faults: u64,
    steps: u64,
    units: u64,
    distinct_tasks: usize,
    threads_in_process: Option<u64>,
    /// The measuring process's peak resident memory during the run, KiB.
    peak_rss_kib: u64,
    /// Memory mappings of the measuring process when it started creating the tasks: what
    /// each fork copies.
    mappings: Option<u64>,
    /// Time at least two tasks were working at once, ticks (teams only).
    overlap: Option<u64>,
    /// Barrier start to the last task starting its share, ticks (teams only).
    late_start: Option<u64>,
    /// What `/proc/stat` counted on the point's CPUs around the run.
    cpu_seen: Option<CpuTicks>,
}

/// Busy and steal time of a set of CPUs, in USER_HZ ticks, from `/proc/stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct CpuTicks {
    /// user, nice, system, irq and softirq.
    busy: u64,
    /// Time the hypervisor ran something else on these vCPUs.
    steal: u64,
}

/// Sums the busy and steal ticks of `cpus` in the text of `/proc/stat`; `None` when a CPU's
/// line is missing or too short to hold steal.
fn cpu_ticks(text: &str, cpus: &[usize]) -> Option<CpuTicks> {
    let mut sum = CpuTicks::default();
    let mut found = 0;
    for (cpu, t) in parse_cpu_times(text) {
        if !cpus.contains(&cpu) {
            continue;
        }
        sum.busy += t.busy().iter().sum::<u64>();
        sum.steal += t.steal?;
        found += 1;
    }
    (found == cpus.len()).then_some(sum)
}

fn read_cpu_ticks(cpus: &[usize]) -> Option<CpuTicks> {
    cpu_ticks(&std::fs::read_to_string("/proc/stat").ok()?, cpus)
}

/// How long at least two of the `(start, finish)` intervals were open at once.
fn overlap_of(spans: &[(u64, u64)]) -> u64 {
    let mut edges: Vec<(u64, i32)> = spans
        .iter()
        .filter(|(a, b)| b > a)
        .flat_map(|&(a, b)| [(a, 1), (b, -1)])
        .collect();
    // A finish before a start at the same instant: touching intervals do not overlap.
    edges.sort_unstable();
    let (mut open, mut since, mut total) = (0i32, 0u64, 0u64);
    for (at, step) in edges {
        if open >= 2 {
            total += at - since;
        }
        open += step;
        since = at;
    }
    total
}

/// What one run of a point on several CPUs saw, in ns, for [`withheld`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Seen {
    /// The whole run.
    wall_ns: f64,
    /// CPUs of the point's set.
    cpus: usize,
    /// Steal on those CPUs during the run.
    steal_ns: Option<f64>,
    /// Busy time on those CPUs that was not the tasks' own.
    foreign_ns: Option<f64>,
    /// Barrier start to the last finish.
    work_ns: f64,
    /// Time at least two tasks worked at once.
    overlap_ns: Option<f64>,
    /// Barrier start to the last task starting.
    late_start_ns: Option<f64>,
    /// CPU time of all the tasks.
    cpu_ns: f64,
    /// The work's speed against the calibrated one: CPU time W should have taken over the CPU
    /// time it took (`None` with --yield, whose CPU time holds the yields too). Well under 1
    /// with no steal: the host ran the vCPU slower than at the start without saying so.
    speed: Option<f64>,
}

/// Below this speed against the calibrated one a run counts as slowed by the host.
const SLOWED: f64 = 0.8;

/// The prefix of the warning a point carries when its CPUs gave less than half the speed-up
/// they could.
const WITHHELD: &str = "speed-up withheld";

/// Why a point on several CPUs (`place`, e.g. `CPUs 0-1`) gained `speedup_pct` over one CPU
/// when `possible_pct` was possible, from what its runs saw; `None` when it gained at least
/// half of what was possible. The first cause that holds is named, with what was seen: steal
/// (the host lent the CPUs to someone else), other tasks' busy time, a late start of the last
/// worker, workers that did not overlap; otherwise every figure looked at.
fn withheld(speedup_pct: f64, possible_pct: f64, runs: &[Seen], place: &str) -> Option<String> {
    if runs.is_empty() || possible_pct <= 0.0 || speedup_pct >= possible_pct / 2.0 {
        return None;
    }
    let n = runs.len();
    let capacity: f64 = runs.iter().map(|r| r.wall_ns * r.cpus as f64).sum();
    let work: f64 = runs.iter().map(|r| r.work_ns).sum::<f64>().max(1.0);
    let share = |f: &dyn Fn(&Seen) -> Option<f64>| -> Option<f64> {
        let v: Option<Vec<f64>> = runs.iter().map(f).collect();
        v.map(|v| v.iter().sum::<f64>() / capacity.max(1.0) * 100.0)
    };
    let steal = share(&|r| r.steal_ns);
    let foreign = share(&|r| r.foreign_ns);
    let overlap: Option<f64> = runs
        .iter()
        .map(|r| r.overlap_ns)
        .sum::<Option<f64>>()
        .map(|o| o / work * 100.0);
    let late = {
        let v: Option<Vec<f64>> = runs
            .iter()
            .map(|r| r.late_start_ns.map(|l| l / r.work_ns.max(1.0) * 100.0))
            .collect();
        v.map(|v| oscost_stats::median(&v))
    };
    let parallel = runs.iter().map(|r| r.cpu_ns).sum::<f64>() / work;
    let head = format!("{WITHHELD}: {speedup_pct:+.0} % of a possible {possible_pct:+.0} %");
    if let Some(st) = steal.filter(|&s| s >= 5.0) {
        let rounds = runs
            .iter()
            .filter(|r| r.steal_ns.unwrap_or(0.0) > 0.05 * r.wall_ns * r.cpus as f64)
            .count();
        return Some(format!(
            "{head}: the machine withheld the CPUs: steal {st:.0} % of {place} during these \
             runs ({rounds} of {n} over 5 %)"
        ));
    }
    if let Some(f) = foreign.filter(|&f| f >= 10.0) {
        return Some(format!(
            "{head}: other tasks held the CPUs: {f:.0} % of {place} busy with them during these \
             runs"
        ));
    }
    if let Some(l) = late.filter(|&l| l >= 20.0) {
        return Some(format!(
            "{head}: the last worker was slow to start: {l:.0} % of the work time after the \
             start (median of {n} runs)"
        ));
    }
    if let Some(o) = overlap.filter(|&o| o < 60.0) {
        return Some(format!(
            "{head}: the workers ran together for only {o:.0} % of the work time \
             ({parallel:.2} CPUs' worth of time between them)"
        ));
    }
    let speed: Option<Vec<f64>> = runs.iter().map(|r| r.speed).collect();
    if let Some(v) = speed
        .map(|v| oscost_stats::median(&v))
        .filter(|&v| v < SLOWED)
    {
        return Some(format!(
            "{head}: the work ran at {:.0} % of its calibrated speed on CPU time counted as \
             the tasks' own, with no steal to explain it: the host ran the vCPUs slower",
            v * 100.0
        ));
    }
    let pct = |v: Option<f64>| v.map_or("not read".to_string(), |v| format!("{v:.0} %"));
    Some(format!(
        "{head}: no cause seen: steal {}, other tasks {} of {place}, workers together {} of \
         the work time, {parallel:.2} CPUs' worth of time",
        pct(steal),
        pct(foreign),
        pct(overlap)
    ))
}

/// Memory mappings of this process (lines of /proc/self/maps).
fn count_mappings() -> Option<u64> {
    std::fs::read_to_string("/proc/self/maps")
        .ok()
        .map(|m| m.lines().count() as u64)
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    let sizes = validate(opts, ctx)?;
    let clock = Clock::from_info(ctx.clock.info());
    let one = vec![ctx.first_cpu()];
    let all = ctx.cpus.clone();
    let two: Vec<usize> = all.iter().copied().take(2).collect();
    let cpus_of = |set: CpuSet| match set {
        CpuSet::One => &one,
        CpuSet::Two => &two,
        CpuSet::All | CpuSet::Balanced => &all,
    };
    let points = points(opts, &sizes, all.len());
    let rounds = repeats(opts, ctx.quick);
    let runs_total = points.len() as u64 * u64::from(rounds);
    let settle_min = if ctx.quick {
        QUICK_SETTLE_MIN
    } else {
        SETTLE_MIN
    };

    let rate = {
        let _pin = AffinityRestore::pin(&one)?;
        calibrate(&clock)
    };
    let work = work_ns(opts, ctx.quick);
    let units = ((work as f64) * rate).round().max(1.0) as u64;
    let step = ((opts.step as f64) * rate).round().max(1.0) as u64;
    let mut out = ExperimentOutput::default();
    let (fixed, _) = oscost_sys::work::placement();
    out.params.insert("work_units".into(), units.into());
    out.params.insert("step_units".into(), step.into());
    out.params.insert("work_requested_ns".into(), work.into());
    out.params
        .insert("step_requested_ns".into(), opts.step.into());
    out.params.insert("units_per_ns".into(), json!(rate));
    out.params.insert("yield".into(), opts.yield_each.into());
    out.params.insert("repeats".into(), rounds.into());
    out.params
        .insert("baseline".into(), points[0].id(opts.yield_each).into());
    out.params
        .insert("work_loop_aligned_64".into(), fixed.into());
    out.params.insert(
        "glibc_tunables".into(),
        std::env::var("GLIBC_TUNABLES").unwrap_or_default().into(),
    );
    if all.len() < 2
        && opts
            .sets
            .iter()
            .any(|&s| s == CpuSet::All || s == CpuSet::Balanced)
    {
        out.notes.push(format!(
            "only one CPU is allowed ({}), so the `all` and `balanced` sets were not run",
            cpuset::format(&all)
        ));
    }
    for p in unrunnable(opts, &sizes, all.len()) {
        out.unavailable.push(Unavailable {
            id: p.id(opts.yield_each),
            description: format!("{} on the first two CPUs of the set", describe(&p)),
            reason: format!(
                "the `two` set needs two CPUs and only {} is allowed (--cpus or the machine)",
                cpuset::format(&all)
            ),
        });
    }

    let mut results: Vec<Vec<RunStats>> = vec![Vec::new(); points.len()];
    ctx.progress.start(runs_total, NAME);
    for round in 0..rounds {
        for (i, p) in points.iter().enumerate() {
            ctx.check_cancel()?;
            ctx.progress.message(&format!(
                "round {}/{}: {} {} on {}",
                round + 1,
                rounds,
                p.tasks,
                engine::value_name(&p.form),
                engine::value_name(&p.set)
            ));
            let cpus = cpus_of(p.set);
            let plan = Plan {
                tasks: p.tasks,
                units,
                step,
                yield_each: opts.yield_each,
            };
            // Read outside the timed run: what the host and other tasks did with these CPUs.
            let before = read_cpu_ticks(cpus);
            let stats = run_point(p, plan, cpus, &clock, ctx)
                .with_context(|| format!("{} (round {})", p.id(opts.yield_each), round + 1))?;
            let after = read_cpu_ticks(cpus);
            let cpu_seen = before.zip(after).map(|(a, b)| CpuTicks {
                busy: b.busy.saturating_sub(a.busy),
                steal: b.steal.saturating_sub(a.steal),
            });
            results[i].push(RunStats { cpu_seen, ..stats });
            if p.form != Form::Single {
                // Exited tasks leave the kernel deferred work (freeing their memory and page
                // tables) that would otherwise run inside the next point's timing.
                std::thread::sleep(SETTLE_PER_TASK * p.tasks as u32 + settle_min);
            }
            ctx.progress.inc(1);
        }
    }
    ctx.progress.finish();

    let tick_ns = oscost_sys::sysinfo::user_hz().map(|hz| 1e9 / hz as f64);
    let expected_cpu_ns = (!opts.yield_each).then(|| units as f64 / rate);
    for (p, runs) in points.iter().zip(&results) {
        let cpus = cpus_of(p.set);
        let mut case = point_case(p, cpus, runs, units, step, opts, &clock);
        let seen: Vec<Seen> = runs
            .iter()
            .map(|r| seen(r, cpus.len(), &clock, tick_ns, expected_cpu_ns))
            .collect();
        seen_counters(&mut case, &seen);
        let place = match cpus.as_slice() {
            [one] => format!("CPU {one}"),
            _ => format!("CPUs {}", cpuset::format(cpus)),
        };
        case.warnings.extend(shared_runs(&seen, &place));
        if let Some(w) = speedup_withheld(p, &points, &results, &seen, cpus, &clock) {
            case.warnings.push(w);
        }
        out.cases.push(case);
    }
    Ok(out)
}

/// A run's observations in ns; busy and steal need the length of a USER_HZ tick.
fn seen(
    r: &RunStats,
    cpus: usize,
    clock: &Clock,
    tick_ns: Option<f64>,
    expected_cpu_ns: Option<f64>,
) -> Seen {
    let ns = |t: u64| clock.ticks_to_ns(t as f64);
    let ticks = r.cpu_seen.zip(tick_ns);
    Seen {
        wall_ns: ns(r.total),
        cpus,
        steal_ns: ticks.map(|(c, t)| c.steal as f64 * t),
        foreign_ns: ticks.map(|(c, t)| (c.busy as f64 * t - r.cpu_ns as f64).max(0.0)),
        work_ns: ns(r.work),
        overlap_ns: r.overlap.map(ns),
        late_start_ns: r.late_start.map(ns),
        cpu_ns: r.cpu_ns as f64,
        speed: expected_cpu_ns
            .filter(|_| r.cpu_ns > 0)
            .map(|e| e / r.cpu_ns as f64),
    }
}

/// What the runs saw, as counters: shares of the set's CPU time over the runs and of the work
/// time.
fn seen_counters(case: &mut Case, seen: &[Seen]) {
    let capacity: f64 = seen.iter().map(|r| r.wall_ns * r.cpus as f64).sum::<f64>();
    let work: f64 = seen.iter().map(|r| r.work_ns).sum::<f64>();
    if capacity <= 0.0 || work <= 0.0 {
        return;
    }
    let c = &mut case.counters;
    if let Some(st) = seen.iter().map(|r| r.steal_ns).sum::<Option<f64>>() {
        c.insert("steal_pct".into(), st / capacity * 100.0);
    }
    if let Some(f) = seen.iter().map(|r| r.foreign_ns).sum::<Option<f64>>() {
        c.insert("other_tasks_busy_pct".into(), f / capacity * 100.0);
    }
    if let Some(o) = seen.iter().map(|r| r.overlap_ns).sum::<Option<f64>>() {
        c.insert("workers_together_pct".into(), o / work * 100.0);
    }
}

/// How a run's share of its CPUs begins to count as taken: by other tasks, or by the host.
const TAKEN_SHARE: f64 = 0.2;
const STOLEN_SHARE: f64 = 0.05;

/// The prefix of the warning a point carries when some of its runs shared their CPUs.
const SHARED: &str = "CPUs shared during some runs";
/// Shared runs at most this much slower (median) than the others moved nothing.
const NO_SLOWER: f64 = 0.05;

/// When other tasks held at least a fifth of the point's CPUs (`place`) during some of its
/// runs, or the host stole at least 5 % of them, a warning saying in how many runs, how much,
/// and what those runs took against the rest: the usual cause of a wide interval here.
fn shared_runs(runs: &[Seen], place: &str) -> Option<String> {
    let cap = |r: &Seen| (r.wall_ns * r.cpus as f64).max(1.0);
    let taken = |r: &Seen| r.foreign_ns.is_some_and(|f| f / cap(r) >= TAKEN_SHARE);
    let stolen = |r: &Seen| r.steal_ns.is_some_and(|s| s / cap(r) >= STOLEN_SHARE);
    let slowed = |r: &Seen| !taken(r) && !stolen(r) && r.speed.is_some_and(|v| v < SLOWED);
    let hit: Vec<&Seen> = runs
        .iter()
        .filter(|r| taken(r) || stolen(r) || slowed(r))
        .collect();
    if hit.is_empty() {
        return None;
    }
    // How many of the hit runs `is` holds, and the median of `value` over them.
    let among = |is: &dyn Fn(&Seen) -> bool, value: &dyn Fn(&Seen) -> f64| {
        let v: Vec<f64> = hit.iter().filter(|r| is(r)).map(|r| value(r)).collect();
        (!v.is_empty()).then(|| (v.len(), oscost_stats::median(&v)))
    };
    let n = runs.len();
    let mut what = Vec::new();
    if let Some((k, share)) = among(&taken, &|r| r.foreign_ns.unwrap_or(0.0) / cap(r) * 100.0) {
        what.push(format!(
            "in {k} of {n} runs other tasks held {share:.0} % of {place}"
        ));
    }
    if let Some((k, share)) = among(&stolen, &|r| r.steal_ns.unwrap_or(0.0) / cap(r) * 100.0) {
        what.push(format!(
            "in {k} of {n} runs the host stole {share:.0} % of {place}"
        ));
    }
    if let Some((k, speed)) = among(&slowed, &|r| r.speed.unwrap_or(1.0) * 100.0) {
        what.push(format!(
            "in {k} of {n} runs the work ran at {speed:.0} % of its calibrated speed with no \
             steal or other task seen (the host ran {place} slower)"
        ));
    }
    let rest: Vec<f64> = runs
        .iter()
        .filter(|r| !taken(r) && !stolen(r) && !slowed(r))
        .map(|r| r.wall_ns)
        .collect();
    let slow = oscost_stats::median(&hit.iter().map(|r| r.wall_ns).collect::<Vec<_>>());
    // Runs that shared their CPUs and took no longer than the rest did not move the figure:
    // nothing to act on (on a quiet machine a kernel thread's moment touches most points).
    if !rest.is_empty() && slow <= oscost_stats::median(&rest) * (1.0 + NO_SLOWER) {
        return None;
    }
    let times = if rest.is_empty() {
        format!("every run: median {}", ms(slow))
    } else {
        format!(
            "those runs: median {}, the rest {}",
            ms(slow),
            ms(oscost_stats::median(&rest))
        )
    };
    Some(format!("{SHARED}: {} ({times})", what.join("; ")))
}

fn ms(ns: f64) -> String {
    format!("{:.1} ms", ns / 1e6)
}

/// For a point of several tasks on several CPUs, the warning that its CPUs gave less than half
/// the speed-up they could over the same point on one CPU, and why.
fn speedup_withheld(
    p: &Point,
    points: &[Point],
    results: &[Vec<RunStats>],
    seen: &[Seen],
    cpus: &[usize],
    clock: &Clock,
) -> Option<String> {
    if !matches!(p.set, CpuSet::All | CpuSet::Two) || p.tasks < 2 || cpus.len() < 2 {
        return None;
    }
    let one = points
        .iter()
        .position(|q| q.form == p.form && q.tasks == p.tasks && q.set == CpuSet::One)?;
    let this = points.iter().position(|q| q == p)?;
    let med = |i: usize| median_of(results[i].iter().map(|r| clock.ticks_to_ns(r.total as f64)));
    let speedup = (med(one) / med(this) - 1.0) * 100.0;
    let possible = (p.tasks.min(cpus.len()) as f64 - 1.0) * 100.0;
    let place = format!("CPUs {}", cpuset::format(cpus));
    withheld(speedup, possible, seen, &place)
}

/// One run of a point, pinned as its set says; the calling thread's CPU set is restored.
fn run_point(
    p: &Point,
    plan: Plan,
    cpus: &[usize],
    clock: &Clock,
    ctx: &Context,
) -> anyhow::Result<RunStats> {
    let _pin = AffinityRestore::pin(cpus)?;
    // Where the kernel cannot reset the mark, the figure is the process's peak so far.
    let _ = oscost_sys::reset_peak_rss();
    let stats = match p.form {
        Form::Single => {
            let (stats, threads) = counting_threads(|| run_single(plan, clock));
            Ok(RunStats {
                threads_in_process: threads,
                ..stats
            })
        }
        Form::Threads => run_team(Kind::Threads, p.set, plan, cpus, clock, ctx),
        Form::Processes => run_team(Kind::Processes, p.set, plan, cpus, clock, ctx),
    }?;
    Ok(RunStats {
        peak_rss_kib: oscost_sys::peak_rss_kib(),
        ..stats
    })
}

/// One flow does the N shares one after another.
fn run_single(plan: Plan, clock: &Clock) -> RunStats {
    let tid = oscost_sys::gettid();
    let migrations0 = oscost_sys::migrations(tid);
    let ru0 = sys_split::thread_rusage();
    let cpu0 = sys_split::thread_cpu_ns();
    let mut finishes = Vec::with_capacity(plan.tasks);
    let (mut units, mut steps) = (0u64, 0u64);
    let t0 = clock.now();
    for i in 0..plan.tasks {
        let (u, s) = sys_split::do_share(plan.share(i), plan.step, plan.yield_each, || false);
        units += u;
        steps += s;
        finishes.push(clock.now());
    }
    let t1 = clock.now();
    let cpu_ns = sys_split::thread_cpu_ns().saturating_sub(cpu0);
    let ru1 = sys_split::thread_rusage();
    let first = finishes.first().copied().unwrap_or(t1);
    RunStats {
        total: t1 - t0,
        work: t1 - t0,
        create: 0,
        join: 0,
        spread: t1.saturating_sub(first),
        cpu_ns,
        voluntary: (ru1.ru_nvcsw - ru0.ru_nvcsw).max(0) as u64,
        involuntary: (ru1.ru_nivcsw - ru0.ru_nivcsw).max(0) as u64,
        migrations: oscost_sys::migrations(tid)
            .zip(migrations0)
            .map(|(b, a)| b.saturating_sub(a)),
        minor_faults: (ru1.ru_minflt - ru0.ru_minflt).max(0) as u64,
        major_faults: (ru1.ru_majflt - ru0.ru_majflt).max(0) as u64,
        steps,
        units,
        distinct_tasks: 1,
        threads_in_process: None,
        peak_rss_kib: 0,
        mappings: None,
        overlap: None,
        late_start: None,
        cpu_seen: None,
    }
}

/// N threads or processes: create, barrier, work, park, read /proc, release, join.
fn run_team(
    kind: Kind,
    set: CpuSet,
    plan: Plan,
    cpus: &[usize],
    clock: &Clock,
    ctx: &Context,
) -> anyhow::Result<RunStats> {
    let masks: Vec<CpuMask> = if set == CpuSet::Balanced {
        cpus.iter()
            .map(|&c| CpuMask::new(&[c]))
            .collect::<Result<_, _>>()?
    } else {
        Vec::new()
    };
    let mappings = count_mappings();
    let shared =
        Arc::new(SplitRun::new(plan, clock.clone()).context("shared memory for the tasks")?);
    let halt = Arc::clone(&shared);
    let t0 = clock.now();
    let mut team = Team::new(kind, plan.tasks, 0, move || halt.halt());
    for i in 0..plan.tasks {
        let mask = (!masks.is_empty()).then(|| &masks[i % masks.len()]);
        team.spawn(mask, &shared, i)?;
    }
    team.watch()?;
    let patience = Duration::from_millis(100);
    while !shared.wait_ready(patience) {
        team.check()?;
        ctx.check_cancel()?;
    }
    team.check()?;
    let t_go = clock.now();
    shared.start();
    while !shared.wait_done(patience) {
        team.check()?;
        if ctx.check_cancel().is_err() {
            return Err(Cancelled.into());
        }
    }
    team.check()?;
    let t_seen = clock.now();
    let records: Vec<Record> = (0..plan.tasks).map(|i| shared.record(i)).collect();
    // Every task is parked, so each still has its /proc entry.
    let migrations = records
        .iter()
        .map(|r| match kind {
            Kind::Threads => oscost_sys::migrations(r.tid),
            Kind::Processes => task::process_migrations(r.tid),
        })
        .sum::<Option<u64>>();
    let t_release = clock.now();
    team.finish()?;
    let t_joined = clock.now();

    let last = records.iter().map(|r| r.finish).max().unwrap_or(t_go);
    let first = records.iter().map(|r| r.finish).min().unwrap_or(t_go);
    let mut tids: Vec<i32> = records.iter().map(|r| r.tid).filter(|&t| t > 0).collect();
    tids.sort_unstable();
    tids.dedup();
    let parent = oscost_sys::gettid();
    let spans: Vec<(u64, u64)> = records.iter().map(|r| (r.start, r.finish)).collect();
    Ok(RunStats {
        total: (t_seen - t0) + (t_joined - t_release),
        work: last.saturating_sub(t_go),
        create: t_go - t0,
        join: t_joined - t_release,
        spread: last.saturating_sub(first),
        cpu_ns: records.iter().map(|r| r.cpu_ns).sum(),
        voluntary: records.iter().map(|r| r.voluntary).sum(),
        involuntary: records.iter().map(|r| r.involuntary).sum(),
        migrations,
        minor_faults: records.iter().map(|r| r.minor_faults).sum(),
        major_faults: records.iter().map(|r| r.major_faults).sum(),
        steps: records.iter().map(|r| r.steps).sum(),
        units: records.iter().map(|r| r.units).sum(),
        distinct_tasks: tids.iter().filter(|&&t| t != parent).count(),
        threads_in_process: None,
        peak_rss_kib: 0,
        mappings,
        overlap: Some(overlap_of(&spans)),
        late_start: Some(
            records
                .iter()
                .map(|r| r.start)
                .max()
                .unwrap_or(t_go)
                .saturating_sub(t_go),
        ),
        cpu_seen: None,
    })
}

/// The case of one point from its runs.
fn point_case(
    p: &Point,
    cpus: &[usize],
    runs: &[RunStats],
    units: u64,
    step: u64,
    opts: &Options,
    clock: &Clock,
) -> Case {
    let ns = |t: u64| clock.ticks_to_ns(t as f64);
    let samples = whole_runs(clock, runs.iter().map(|r| r.total));
    let what = describe(p);
    let place = match p.set {
        CpuSet::One => "on one CPU".to_string(),
        CpuSet::All => format!("on CPUs {}", cpuset::format(cpus)),
        CpuSet::Two => format!("on the two CPUs {}", cpuset::format(cpus)),
        CpuSet::Balanced => format!("pinned evenly over CPUs {}", cpuset::format(cpus)),
    };
    let yielding = if opts.yield_each {
        ", yielding after each step"
    } else {
        ""
    };
    let mut case = Case::new(
        p.id(opts.yield_each),
        format!("{what} {place}{yielding}: create, work, join"),
        "run",
        samples,
    )
    .param("form", engine::value_name(&p.form))
    .param("set", engine::value_name(&p.set))
    .param("cpus", cpuset::format(cpus))
    .param("cpu_count", cpus.len())
    .param("tasks", p.tasks)
    .param("yield", opts.yield_each)
    .param("work_units", units)
    .param("step_units", step);

    let med = |f: &dyn Fn(&RunStats) -> f64| median_of(runs.iter().map(f));
    let work_s = med(&|r| ns(r.work)) / 1e9;
    let switches = med(&|r| (r.voluntary + r.involuntary) as f64);
    let c = &mut case.counters;
    c.insert("work_ns".into(), med(&|r| ns(r.work)));
    c.insert("create_ns".into(), med(&|r| ns(r.create)));
    c.insert("join_ns".into(), med(&|r| ns(r.join)));
    c.insert("finish_spread_ns".into(), med(&|r| ns(r.spread)));
    c.insert("cpu_ns".into(), med(&|r| r.cpu_ns as f64));
    c.insert("voluntary_switches".into(), med(&|r| r.voluntary as f64));
    c.insert(
        "involuntary_switches".into(),
        med(&|r| r.involuntary as f64),
    );
    c.insert("switches_per_task".into(), switches / p.tasks as f64);
    if work_s > 0.0 {
        c.insert("switches_per_s".into(), switches / work_s);
    }
    c.insert("steps".into(), med(&|r| r.steps as f64));
    if let Some(m) = runs.iter().filter_map(|r| r.mappings).max() {
        c.insert("measuring_process_mappings".into(), m as f64);
    }
    c.insert(
        "measuring_process_peak_rss_kib".into(),
        runs.iter().map(|r| r.peak_rss_kib).max().unwrap_or(0) as f64,
    );
    c.insert("minor_faults".into(), med(&|r| r.minor_faults as f64));
    c.insert("major_faults".into(), med(&|r| r.major_faults as f64));
    if runs.iter().all(|r| r.migrations.is_some()) {
        c.insert(
            "migrations".into(),
            med(&|r| r.migrations.unwrap_or(0) as f64),
        );
    } else {
        case.notes.push(
            "migrations not counted: se.nr_migrations is missing from /proc/<pid>/sched".into(),
        );
    }

    let wrong = runs.iter().find(|r| r.units != units);
    case.checks.push(Check::near(
        "work_units_done",
        units as f64,
        wrong.map_or(units, |r| r.units) as f64,
        0.0,
        "units of work the tasks reported doing, summed, in the worst run; must be W exactly",
    ));
    if p.form == Form::Single {
        let threads = runs.iter().filter_map(|r| r.threads_in_process).max();
        case.checks.extend(single_task_check(threads));
    } else {
        let fewest = runs.iter().map(|r| r.distinct_tasks).min().unwrap_or(0);
        case.checks.push(Check::near(
            "distinct_tasks",
            p.tasks as f64,
            fewest as f64,
            0.0,
            "distinct task ids (none the measuring thread's) that did a share, fewest over runs",
        ));
    }

    case.series.push(Series {
        name: "runs".into(),
        columns: [
            "total_ns",
            "work_ns",
            "create_ns",
            "join_ns",
            "finish_spread_ns",
            "cpu_ns",
            "voluntary_switches",
            "involuntary_switches",
            "migrations",
            "minor_faults",
            "units",
        ]
        .map(String::from)
        .to_vec(),
        points: runs
            .iter()
            .map(|r| {
                vec![
                    ns(r.total),
                    ns(r.work),
                    ns(r.create),
                    ns(r.join),
                    ns(r.spread),
                    r.cpu_ns as f64,
                    r.voluntary as f64,
                    r.involuntary as f64,
                    r.migrations.map_or(f64::NAN, |m| m as f64),
                    r.minor_faults as f64,
                    r.units as f64,
                ]
            })
            .collect(),
    });
    case
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::testing::{tiny_sampler, with_ctx};
    use crate::cpuset::online;

    fn opts(args: &[&str]) -> Options {
        use clap::{Args, FromArgMatches};
        let cmd = Options::augment_args(clap::Command::new("t").no_binary_name(true));
        Options::from_arg_matches(&cmd.try_get_matches_from(args).unwrap()).unwrap()
    }

    #[test]
    fn times_parse_and_bad_ones_are_refused() {
        use crate::engine::parse_duration as parse_time;
        assert_eq!(parse_time("1s"), Ok(1_000_000_000));
        assert_eq!(parse_time("250ms"), Ok(250_000_000));
        assert_eq!(parse_time("20us"), Ok(20_000));
        assert_eq!(parse_time("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_time("7ns"), Ok(7));
        for bad in ["", "0", "0s", "1", "x", "1h", "-1s", "0.1ns"] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn points_start_with_the_baseline_and_skip_what_cannot_differ() {
        let o = opts(&["--tasks", "1,2,4"]);
        let p = points(&o, &[1, 2, 4], 2);
        assert_eq!(
            p[0],
            Point {
                form: Form::Single,
                set: CpuSet::One,
                tasks: 1
            }
        );
        assert!(!p
            .iter()
            .any(|p| p.form == Form::Single && p.set != CpuSet::One));
        assert!(!p.iter().any(|p| p.set == CpuSet::Balanced && p.tasks < 2));
        // single 3 + threads/processes: one 3 + all 3 + balanced 2 each
        assert_eq!(p.len(), 3 + 2 * (3 + 3 + 2));
        let ids: std::collections::BTreeSet<String> = p.iter().map(|p| p.id(false)).collect();
        assert_eq!(ids.len(), p.len());
        // One CPU: only the `one` set.
        assert!(points(&o, &[1, 2, 4], 1)
            .iter()
            .all(|p| p.set == CpuSet::One));
    }

    #[test]
    fn the_two_set_runs_with_two_cpus_and_is_unrunnable_with_one() {
        let o = opts(&["--form", "threads", "--sets", "one,two", "--tasks", "1,2"]);
        let p = points(&o, &[1, 2], 4);
        let ids: Vec<String> = p.iter().map(|p| p.id(true)).collect();
        assert_eq!(
            ids,
            [
                "split.single.one.1.yield",
                "split.threads.one.1.yield",
                "split.threads.one.2.yield",
                "split.threads.two.1.yield",
                "split.threads.two.2.yield"
            ]
        );
        assert!(unrunnable(&o, &[1, 2], 4).is_empty());
        assert!(points(&o, &[1, 2], 1).iter().all(|p| p.set == CpuSet::One));
        let u: Vec<String> = unrunnable(&o, &[1, 2], 1)
            .iter()
            .map(|p| p.id(false))
            .collect();
        assert_eq!(u, ["split.threads.two.1", "split.threads.two.2"]);
        // Without `two` nothing is named unavailable.
        assert!(unrunnable(&opts(&["--sets", "one,all"]), &[1, 2], 1).is_empty());
    }

    #[test]
    fn every_form_does_exactly_the_work() {
        let cpus = online();
        let o = opts(&[
            "--work",
            "2ms",
            "--step",
            "100us",
            "--tasks",
            "1,3",
            "--repeats",
            "2",
            "--yield",
        ]);
        let out = with_ctx(tiny_sampler(), cpus.clone(), false, |ctx| run(&o, ctx)).unwrap();
        let units = out.params["work_units"].as_u64().unwrap();
        assert!(units > 0);
        assert!(!out.cases.is_empty());
        for c in &out.cases {
            // The test harness runs other tests in threads of this process, so the
            // single-thread check cannot pass here; the binary's tests cover it.
            let failed = c
                .checks
                .iter()
                .filter(|k| !k.passed && k.name != oscost_model::case::SINGLE_THREAD_CHECK);
            assert_eq!(failed.count(), 0, "{}: {:?}", c.id, c.checks);
            let runs = &c.series[0];
            assert_eq!(runs.points.len(), 2);
            let col = runs.columns.iter().position(|n| n == "units").unwrap();
            assert!(runs.points.iter().all(|r| r[col] == units as f64));
            assert!(c.samples.per_op_ns.iter().all(|&t| t > 0.0));
            assert!(
                c.counters["work_ns"] <= c.samples.per_op_ns.iter().cloned().fold(0.0, f64::max)
            );
        }
    }

    #[test]
    fn sizes_follow_the_suite_and_quick_unless_given() {
        let plain = opts(&[]);
        let suite = opts(&["--suite-size"]);
        assert_eq!(sweep(&plain, false).len(), 11);
        assert_eq!(sweep(&suite, false), [1, 2, 8]);
        assert_eq!(sweep(&plain, true), [1, 2, 8]);
        assert_eq!(work_ns(&suite, false), 30_000_000);
        assert_eq!(work_ns(&suite, true), 5_000_000);
        assert_eq!(
            (
                repeats(&plain, false),
                repeats(&suite, false),
                repeats(&suite, true)
            ),
            (5, 9, 3)
        );
        let given = opts(&[
            "--suite-size",
            "--repeats",
            "2",
            "--work",
            "5ms",
            "--tasks",
            "4",
        ]);
        assert_eq!(
            (
                repeats(&given, true),
                work_ns(&given, true),
                sweep(&given, true)
            ),
            (2, 5_000_000, vec![4])
        );
    }

    #[test]
    fn proc_stat_gives_busy_and_steal_of_the_chosen_cpus() {
        let text = "cpu  9 9 9 9 9 9 9 9 0 0\n\
                    cpu0 10 1 5 100 2 1 1 7 0 0\n\
                    cpu1 20 0 10 100 0 0 0 30 0 0\n\
                    cpu2 1 1 1\n\
                    cpu3 1 1 1 1 1 1 1\n";
        assert_eq!(
            cpu_ticks(text, &[0, 1]),
            Some(CpuTicks {
                busy: 18 + 30,
                steal: 37
            })
        );
        assert_eq!(cpu_ticks(text, &[1]).map(|c| c.steal), Some(30));
        // Too short for steal, or missing: not invented.
        assert_eq!(cpu_ticks(text, &[2]), None);
        assert_eq!(cpu_ticks(text, &[3]), None);
        assert_eq!(cpu_ticks(text, &[0, 5]), None);
    }

    #[test]
    fn overlap_counts_only_time_with_two_at_work() {
        assert_eq!(overlap_of(&[(0, 10), (5, 20)]), 5);
        assert_eq!(overlap_of(&[(0, 10), (10, 20)]), 0);
        assert_eq!(overlap_of(&[(0, 10), (2, 4), (3, 12)]), 8);
        assert_eq!(overlap_of(&[(0, 10)]), 0);
    }

    /// Two runs of 2 tasks on 2 CPUs, each 100 ms of wall time, 90 ms of work.
    fn runs(steal_ms: f64, foreign_ms: f64, overlap_ms: f64, late_ms: f64) -> Vec<Seen> {
        let ms = 1e6;
        vec![
            Seen {
                wall_ns: 100.0 * ms,
                cpus: 2,
                steal_ns: Some(steal_ms * ms),
                foreign_ns: Some(foreign_ms * ms),
                work_ns: 90.0 * ms,
                overlap_ns: Some(overlap_ms * ms),
                late_start_ns: Some(late_ms * ms),
                cpu_ns: 100.0 * ms,
                speed: Some(1.0),
            };
            2
        ]
    }

    #[test]
    fn runs_that_shared_their_cpus_are_counted_with_their_times() {
        let ms = 1e6;
        let run = |wall: f64, foreign: f64, steal: f64| Seen {
            wall_ns: wall * ms,
            cpus: 1,
            steal_ns: Some(steal * ms),
            foreign_ns: Some(foreign * ms),
            work_ns: wall * ms,
            overlap_ns: None,
            late_start_ns: None,
            cpu_ns: 30.0 * ms,
            speed: Some(30.0 / wall),
        };
        let quiet = vec![run(30.0, 0.0, 0.0); 5];
        assert_eq!(shared_runs(&quiet, "CPU 0"), None);
        // Shared, but no slower than the rest: the figure was not moved.
        let mut runs = quiet.clone();
        runs.push(run(31.0, 9.0, 0.0));
        assert_eq!(shared_runs(&runs, "CPU 0"), None);
        let mut runs = quiet.clone();
        runs.extend([
            run(60.0, 30.0, 0.0),
            run(62.0, 31.0, 0.0),
            run(40.0, 0.0, 4.0),
        ]);
        assert_eq!(
            shared_runs(&runs, "CPU 0").unwrap(),
            "CPUs shared during some runs: in 2 of 8 runs other tasks held 50 % of CPU 0; in 1 \
             of 8 runs the host stole 10 % of CPU 0 (those runs: median 60.0 ms, the rest 30.0 ms)"
        );
        // Twice as long with nothing else seen: the work itself ran at half speed.
        let mut runs = quiet.clone();
        runs.push(run(60.0, 0.0, 0.0));
        assert_eq!(
            shared_runs(&runs, "CPU 0").unwrap(),
            "CPUs shared during some runs: in 1 of 6 runs the work ran at 50 % of its calibrated \
             speed with no steal or other task seen (the host ran CPU 0 slower) (those runs: \
             median 60.0 ms, the rest 30.0 ms)"
        );
    }

    #[test]
    fn a_withheld_speedup_names_what_was_seen() {
        let place = "CPUs 0-1";
        // Half of what was possible or more: nothing to say.
        assert_eq!(
            withheld(60.0, 100.0, &runs(80.0, 0.0, 0.0, 0.0), place),
            None
        );
        let w = withheld(3.0, 100.0, &runs(82.0, 0.0, 10.0, 0.0), place).unwrap();
        assert!(
            w.starts_with("speed-up withheld: +3 % of a possible +100 %"),
            "{w}"
        );
        assert!(w.contains("steal 41 % of CPUs 0-1"), "{w}");
        assert!(w.contains("(2 of 2 over 5 %)"), "{w}");
        let w = withheld(3.0, 100.0, &runs(0.0, 60.0, 10.0, 0.0), place).unwrap();
        assert!(
            w.contains("other tasks held the CPUs: 30 % of CPUs 0-1"),
            "{w}"
        );
        let w = withheld(3.0, 100.0, &runs(0.0, 0.0, 10.0, 45.0), place).unwrap();
        assert!(w.contains("slow to start: 50 %"), "{w}");
        let w = withheld(3.0, 100.0, &runs(0.0, 0.0, 27.0, 0.0), place).unwrap();
        assert!(w.contains("together for only 30 %"), "{w}");
        let w = withheld(3.0, 100.0, &runs(0.0, 0.0, 80.0, 0.0), place).unwrap();
        assert!(w.contains("no cause seen: steal 0 %"), "{w}");
        let mut slow = runs(0.0, 0.0, 80.0, 0.0);
        slow.iter_mut().for_each(|r| r.speed = Some(0.55));
        let w = withheld(3.0, 100.0, &slow, place).unwrap();
        assert!(w.contains("ran at 55 % of its calibrated speed"), "{w}");
        // Unread figures are said to be unread.
        let mut r = runs(0.0, 0.0, 80.0, 0.0);
        r[0].steal_ns = None;
        let w = withheld(3.0, 100.0, &r, place).unwrap();
        assert!(w.contains("steal not read"), "{w}");
    }

    #[test]
    fn bad_options_are_refused_before_any_task() {
        let cpus = online();
        for (args, msg) in [
            (&["--tasks", "0"][..], "--tasks 0"),
            (&["--tasks", "70000"][..], "at most"),
            (
                &["--work", "1ms", "--step", "2ms"][..],
                "--step 2ms is larger",
            ),
        ] {
            let o = opts(args);
            let e = with_ctx(tiny_sampler(), cpus.clone(), false, |ctx| run(&o, ctx))
                .unwrap_err()
                .to_string();
            assert!(e.contains(msg), "{args:?}: {e}");
        }
    }
}
