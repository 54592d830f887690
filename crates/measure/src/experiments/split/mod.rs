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

use crate::context::Context;
use crate::cpuset::{self, AffinityRestore};
use crate::engine;
use crate::engine::work::{calibrate, Form};
use crate::engine::{parse_tasks, TaskList};
use crate::limits::{Limits, Needs};
use crate::sampler::{median_of, single_task_check, whole_runs};
use anyhow::Context as _;
use oscost_model::case::{Case, Check, ExperimentOutput, Series, Unavailable};
use oscost_model::{Message, MessageKind};
use oscost_sys::clock::Clock;
use oscost_sys::split::Plan;
use serde_json::json;
use std::time::Duration;

mod runs;
mod seen;

use runs::{read_cpu_ticks, run_point, CpuTicks, RunStats};
use seen::{seen, seen_counters, shared_runs, speedup_withheld, Seen};

/// Subcommand name and id prefix.
pub const NAME: &str = oscost_model::ids::split::NAME;

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
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Split;
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

/// What a run measures at its size (`--quick`, the suite's or the stand-alone one), chosen once
/// for both the preflight check and the run.
struct Sizes {
    /// The task counts of the sweep.
    tasks: Vec<usize>,
    /// The whole work W, ns.
    work_ns: u64,
    /// Runs of each point.
    repeats: u32,
    /// The shortest pause before a run.
    settle_min: Duration,
}

fn plan(opts: &Options, quick: bool) -> Sizes {
    Sizes {
        tasks: sweep(opts, quick),
        work_ns: work_ns(opts, quick),
        repeats: repeats(opts, quick),
        settle_min: if quick { QUICK_SETTLE_MIN } else { SETTLE_MIN },
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
    let n = plan(opts, quick).tasks.into_iter().max()?;
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
        address_space_kib: threads.then(|| crate::limits::thread_stacks(n64)),
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
        oscost_model::ids::split::Case {
            form: &engine::value_name(&self.form),
            set: &engine::value_name(&self.set),
            tasks: self.tasks,
            yield_each,
        }
        .to_string()
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
fn validate(opts: &Options, sizes: &Sizes, ctx: &Context) -> anyhow::Result<()> {
    let (Some(&min), Some(&max)) = (sizes.tasks.iter().min(), sizes.tasks.iter().max()) else {
        anyhow::bail!("--tasks: no task count given");
    };
    if min == 0 {
        anyhow::bail!("--tasks 0: at least one task must do the work");
    }
    if max > MAX_TASKS {
        anyhow::bail!("--tasks {max}: at most {MAX_TASKS} tasks");
    }
    let work = sizes.work_ns;
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
    Ok(())
}

fn show_ns(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000_000 && n % 1_000_000 == 0 => format!("{}s", n as f64 / 1e9),
        n if n >= 1_000_000 && n % 1_000 == 0 => format!("{}ms", n as f64 / 1e6),
        n if n >= 1_000 => format!("{}us", n as f64 / 1e3),
        n => format!("{n}ns"),
    }
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    let plan = plan(opts, ctx.quick);
    validate(opts, &plan, ctx)?;
    let sizes = &plan.tasks;
    let clock = Clock::from_info(ctx.clock.info());
    let one = vec![ctx.first_cpu()];
    let all = ctx.cpus.clone();
    let two: Vec<usize> = all.iter().copied().take(2).collect();
    let cpus_of = |set: CpuSet| match set {
        CpuSet::One => &one,
        CpuSet::Two => &two,
        CpuSet::All | CpuSet::Balanced => &all,
    };
    let points = points(opts, sizes, all.len());
    let rounds = plan.repeats;
    let runs_total = points.len() as u64 * u64::from(rounds);
    let settle_min = plan.settle_min;

    let rate = {
        let _pin = AffinityRestore::pin(&one)?;
        calibrate(&clock)
    };
    let work = plan.work_ns;
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
        out.notes.push(
            format!(
                "only one CPU is allowed ({}), so the `all` and `balanced` sets were not run",
                cpuset::format(&all)
            )
            .into(),
        );
    }
    for p in unrunnable(opts, sizes, all.len()) {
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
        case.warnings
            .extend(shared_runs(&seen, &place).map(Message::from));
        if let Some(w) = speedup_withheld(p, &points, &results, &seen, cpus, &clock) {
            case.warnings.push(w.into());
        }
        out.cases.push(case);
    }
    Ok(out)
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
        case.notes.push(Message::new(
            MessageKind::MigrationsNotCounted,
            ": se.nr_migrations is missing from /proc/<pid>/sched",
        ));
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
mod tests;
