//! `wakeup`: how late the OS wakes a thread that sleeps until a time (what cyclictest
//! measures). A thread pinned to one CPU sleeps until absolute deadlines on a period
//! (`clock_nanosleep(TIMER_ABSTIME)`, or a timerfd, or a relative sleep), reads the clock as
//! soon as it runs again and stores how late it is; under SCHED_OTHER and, where permitted,
//! SCHED_FIFO (put back after), on an idle CPU or beside a spinning thread on the same CPU.
//! Every wake-up is one sample: the distribution is the figure (min, p50, p90, p99, p99.9,
//! max, a histogram), and the thread's own switch counts prove it slept each time.

mod kernel;

use crate::context::{Cancelled, Context};
use crate::engine::{self, first_occurrences, value_name};
use crate::kview::ViewHelp as _;
use anyhow::Context as _;
use oscost_model::case::{Case, Check, ExperimentOutput, Samples, Series, Unavailable};
use oscost_model::ids::wakeup::{self as ids, period_name};
use oscost_model::{Message, MessageKind};
use oscost_stats::periodic::log2_histogram;
use oscost_sys::wakeup::{wake_periodically_at, PolicyGuard, WakeMode, WakeRun};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Subcommand name and id prefix.
pub const NAME: &str = ids::NAME;

const DEFAULT_WAKEUPS: usize = 10_000;
const QUICK_WAKEUPS: usize = 40;
const MAX_WAKEUPS: usize = 10_000_000;
/// Wake-up lateness handed up as a case's samples at most (evenly spread): the bootstrap
/// interval of the median costs time in proportion; every percentile in the counters comes
/// from all of them.
const MAX_SAMPLES: usize = 20_000;
/// Below this many wake-ups the p99.9 rests on fewer than ten of them.
const P999_MIN_WAKEUPS: usize = 10_000;

/// Scheduling policies of the sleeping thread.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Policy {
    /// SCHED_OTHER, the normal policy
    Other,
    /// SCHED_FIFO at --priority (needs CAP_SYS_NICE or an RLIMIT_RTPRIO that allows it)
    Fifo,
}

/// How the thread waits for its next deadline.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Mode {
    /// clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) until the next deadline (cyclictest's
    /// default)
    Abstime,
    /// a blocking read of a timerfd armed at absolute time, the period its interval
    Timerfd,
    /// clock_nanosleep for one period from just before the call (cyclictest -r)
    Relative,
}

impl Mode {
    fn sys(self) -> WakeMode {
        match self {
            Mode::Abstime => WakeMode::Abstime,
            Mode::Timerfd => WakeMode::Timerfd,
            Mode::Relative => WakeMode::Relative,
        }
    }

    fn description(self) -> &'static str {
        match self {
            Mode::Abstime => "clock_nanosleep(TIMER_ABSTIME) until each deadline",
            Mode::Timerfd => "a blocking read of a periodic timerfd",
            Mode::Relative => "clock_nanosleep for one period from just before the call",
        }
    }
}

/// Options of `oscost wakeup`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
#[command(view_help(
    "No traced pass: skip the second run of each case that splits every wake-up's lateness by \
     the kernel's tracepoints (timer interrupt, switch, return to user space)",
    "How the traced pass records the kernel's tracepoints (default: the lightest this kernel \
     allows for the timer events, ftrace then perf); one refused is said, and the next one used"
))]
pub struct Options {
    /// Time between two deadlines, e.g. `1ms`, `500us`
    #[arg(long = "period", default_value = "1ms", value_name = "TIME", value_parser = parse_period)]
    pub period_ns: u64,

    /// Wake-ups per case [default: 10000, or 40 with --quick]
    #[arg(long, value_name = "N", value_parser = parse_wakeups)]
    pub wakeups: Option<usize>,

    /// Scheduling policies, comma-separated
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "POLICY,...",
        default_value = "other,fifo"
    )]
    pub policies: Vec<Policy>,

    /// SCHED_FIFO priority of the sleeping thread
    #[arg(long, default_value_t = 90, value_name = "1-99", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub priority: i32,

    /// How the thread waits, comma-separated
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "MODE,...",
        default_value = "abstime"
    )]
    pub modes: Vec<Mode>,

    /// Also measure each case with a competing thread spinning on the same CPU
    #[arg(long)]
    #[serde(default)]
    pub load: bool,

    /// Measure on every CPU of the set (--cpus), not only its first
    #[arg(long)]
    #[serde(default)]
    pub each_cpu: bool,

    /// Hold /dev/cpu_dma_latency at 0 during the run so idle CPUs poll instead of halting, as
    /// cyclictest does by default (needs root; a warning is recorded where not permitted)
    #[arg(long)]
    #[serde(default)]
    pub idle_poll: bool,

    /// `--no-kernel-view` and `--trace-with`, worded for this experiment by `view_help` above
    #[command(flatten)]
    #[serde(flatten)]
    pub kernel_view: crate::kview::ViewArgs,
}

fn parse_period(s: &str) -> Result<u64, String> {
    match engine::parse_time(s)? {
        ns if (10_000..=1_000_000_000).contains(&ns) => Ok(ns),
        _ => Err(format!("`{s}` is not a period from 10us to 1s")),
    }
}

fn parse_wakeups(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_WAKEUPS).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}` is not a number of wake-ups from 1 to {MAX_WAKEUPS}"
        )),
    }
}

/// One case to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Point {
    cpu: usize,
    /// With the CPU suffix in the id (more than one CPU measured).
    cpu_in_id: bool,
    load: bool,
    policy: Policy,
    mode: Mode,
}

/// What a run measures, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    points: Vec<Point>,
    wakeups: usize,
    period_ns: u64,
}

fn plan(opts: &Options, cpus: &[usize], quick: bool) -> anyhow::Result<Plan> {
    let Some(&first) = cpus.first() else {
        anyhow::bail!("--cpus: the CPU set is empty");
    };
    let policies = first_occurrences(&opts.policies);
    let modes = first_occurrences(&opts.modes);
    if policies.is_empty() || modes.is_empty() {
        anyhow::bail!("--policies and --modes each need at least one value");
    }
    let on: Vec<usize> = if opts.each_cpu {
        cpus.to_vec()
    } else {
        vec![first]
    };
    let loads: &[bool] = if opts.load { &[false, true] } else { &[false] };
    let mut points = Vec::new();
    for &cpu in &on {
        for &load in loads {
            for &policy in &policies {
                for &mode in &modes {
                    points.push(Point {
                        cpu,
                        cpu_in_id: opts.each_cpu,
                        load,
                        policy,
                        mode,
                    });
                }
            }
        }
    }
    let wakeups = opts.wakeups.unwrap_or(if quick {
        QUICK_WAKEUPS
    } else {
        DEFAULT_WAKEUPS
    });
    Ok(Plan {
        points,
        wakeups,
        period_ns: opts.period_ns,
    })
}

/// `wakeup.POLICY.PERIOD[.MODE][.cpuN][.load]`, the mode only when not `abstime`.
fn case_id(p: Point, period_ns: u64) -> String {
    ids::Case {
        policy: &value_name(&p.policy),
        period_ns,
        mode: &value_name(&p.mode),
        cpu: p.cpu_in_id.then_some(p.cpu),
        load: p.load,
    }
    .to_string()
}

/// What one case's thread measured.
struct Measured {
    lateness: Vec<u64>,
    /// Each wake-up's deadline, `CLOCK_MONOTONIC` ns, when asked for.
    deadlines: Vec<u64>,
    /// The sleeping thread's id.
    tid: i32,
    run: WakeRun,
    /// Time the thread was sleeping on its period, ns: from the first period's start to the
    /// last wake-up, less the other program's turns when taking turns with one.
    active_ns: u64,
    voluntary: u64,
    involuntary: u64,
    minor_faults: u64,
    major_faults: u64,
    /// The policy number the thread had while it slept.
    policy_seen: i32,
    /// The spinner's CPU time over the run, ns, when there was one.
    load_cpu_ns: Option<u64>,
}

/// SCHED_FIFO refused, with the kernel's reason.
struct Refused(String);

/// A refused case's reason in one short line, with the fix.
fn refused_reason(priority: i32, why: &str) -> String {
    crate::engine::checks::fifo_refused(priority, why, ": run as root or with CAP_SYS_NICE")
}

/// Whether this process may give a thread SCHED_FIFO at `priority`: asked once, in a thread
/// of its own that ends with its policy put back.
fn fifo_refusal(priority: i32) -> Option<String> {
    std::thread::spawn(move || PolicyGuard::fifo(priority).err().map(|e| e.to_string()))
        .join()
        .unwrap_or_else(|_| Some("the thread asking for SCHED_FIFO panicked".into()))
}

/// Runs one case: a pinned spinner first when loaded, then the sleeping thread.
fn measure_point(
    p: Point,
    plan: &Plan,
    priority: i32,
    cancel: &AtomicBool,
    keep_deadlines: bool,
) -> anyhow::Result<Result<Measured, Refused>> {
    let stop = AtomicBool::new(false);
    let spinner_cpu = AtomicU64::new(0);
    let spins = AtomicU64::new(0);
    std::thread::scope(|s| {
        let spinner = if p.load {
            let h = std::thread::Builder::new()
                .name("oscost-load".into())
                .spawn_scoped(s, || -> std::io::Result<()> {
                    oscost_sys::set_affinity(&[p.cpu])?;
                    let c0 = oscost_sys::timeline::thread_cpu_ns().unwrap_or(0);
                    while !stop.load(Ordering::Relaxed) {
                        spins.fetch_add(1, Ordering::Relaxed);
                    }
                    spinner_cpu.store(
                        oscost_sys::timeline::thread_cpu_ns().unwrap_or(0) - c0,
                        Ordering::Relaxed,
                    );
                    Ok(())
                })
                .context("starting the spinning thread")?;
            oscost_sys::count_started_tasks(1);
            // The sleeper starts once the spinner runs on its CPU.
            while spins.load(Ordering::Relaxed) == 0 && !h.is_finished() {
                std::thread::yield_now();
            }
            Some(h)
        } else {
            None
        };
        let sleeper = std::thread::Builder::new()
            .name("oscost-wakeup".into())
            .spawn_scoped(s, || -> anyhow::Result<Result<Measured, Refused>> {
                oscost_sys::set_affinity(&[p.cpu])
                    .with_context(|| format!("pinning the sleeping thread to CPU {}", p.cpu))?;
                // Written now, so storing a lateness never faults.
                let mut lateness = vec![1u64; plan.wakeups];
                let mut deadlines = vec![1u64; if keep_deadlines { plan.wakeups } else { 0 }];
                let _guard = match p.policy {
                    Policy::Fifo => match PolicyGuard::fifo(priority) {
                        Ok(g) => Some(g),
                        Err(e) => return Ok(Err(Refused(e.to_string()))),
                    },
                    Policy::Other => None,
                };
                let policy_seen = oscost_sys::wakeup::own_policy()?;
                let u0 = oscost_sys::spawn::thread_usage();
                let (run, active_ns) = wake_in_turns(
                    p.mode.sys(),
                    plan.period_ns,
                    &mut lateness,
                    &mut deadlines,
                    cancel,
                )?;
                let u = oscost_sys::spawn::thread_usage().since(u0);
                lateness.truncate(run.done);
                deadlines.truncate(run.done);
                Ok(Ok(Measured {
                    lateness,
                    deadlines,
                    tid: oscost_sys::gettid(),
                    run,
                    active_ns,
                    voluntary: u.voluntary,
                    involuntary: u.involuntary,
                    minor_faults: u.minor_faults,
                    major_faults: u.major_faults,
                    policy_seen,
                    load_cpu_ns: None,
                }))
            });
        let result = match sleeper {
            Ok(h) => {
                oscost_sys::count_started_tasks(1);
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("the sleeping thread panicked")))
            }
            Err(e) => Err(anyhow::Error::new(e).context("starting the sleeping thread")),
        };
        stop.store(true, Ordering::Relaxed);
        if let Some(h) = spinner {
            h.join()
                .map_err(|_| anyhow::anyhow!("the spinning thread panicked"))?
                .with_context(|| format!("pinning the spinning thread to CPU {}", p.cpu))?;
        }
        let mut m = result?;
        if let Ok(m) = &mut m {
            if p.load {
                m.load_cpu_ns = Some(spinner_cpu.load(Ordering::Relaxed));
            }
        }
        Ok(m)
    })
}

/// Wake-ups a turn holds when taking turns with another program (`cargo xtask vs wakeup
/// --alternate`): 25 periods, so a drift of the machine meets both programs' wake-ups alike.
const WAKEUPS_A_TURN: usize = 25;

/// [`wake_periodically_at`], in turns of [`WAKEUPS_A_TURN`] wake-ups with another program
/// when this process takes turns ([`crate::pace`]), each turn's periods starting afresh;
/// with the time spent sleeping on the period (the turns' own, summed).
fn wake_in_turns(
    mode: WakeMode,
    period_ns: u64,
    lateness: &mut [u64],
    deadlines: &mut [u64],
    cancel: &AtomicBool,
) -> anyhow::Result<(WakeRun, u64)> {
    if !crate::pace::active() {
        let run = wake_periodically_at(mode, period_ns, lateness, deadlines, cancel)?;
        return Ok((run, run.end_ns.saturating_sub(run.start_ns)));
    }
    let mut all: Option<WakeRun> = None;
    let mut active = 0;
    for (k, chunk) in lateness.chunks_mut(WAKEUPS_A_TURN).enumerate() {
        crate::pace::turn()?;
        let from = k * WAKEUPS_A_TURN;
        let to = (from + chunk.len()).min(deadlines.len());
        let at = deadlines.get_mut(from.min(to)..to).unwrap_or_default();
        let run = wake_periodically_at(mode, period_ns, chunk, at, cancel)?;
        active += run.end_ns.saturating_sub(run.start_ns);
        let stop = run.done < chunk.len();
        all = Some(match all {
            None => run,
            Some(a) => WakeRun {
                done: a.done + run.done,
                overruns: a.overruns + run.overruns,
                start_ns: a.start_ns,
                end_ns: run.end_ns,
            },
        });
        if stop {
            break;
        }
    }
    Ok((all.unwrap_or_default(), active))
}

/// At most `max` values, evenly spread over `v` (all of them when there are few enough).
fn spread(v: &[f64], max: usize) -> Vec<f64> {
    if v.len() <= max {
        return v.to_vec();
    }
    (0..max).map(|i| v[i * v.len() / max]).collect()
}

fn description(p: Point, period_ns: u64, priority: i32) -> String {
    let policy = match p.policy {
        Policy::Other => "SCHED_OTHER".to_string(),
        Policy::Fifo => format!("SCHED_FIFO {priority}"),
    };
    format!(
        "how late a {policy} thread on CPU {} wakes, every {}: {}{}",
        p.cpu,
        period_name(period_ns),
        p.mode.description(),
        if p.load {
            ", a thread spinning on the same CPU"
        } else {
            ""
        }
    )
}

/// The lateness percentiles, in the counters and in the order a table shows them.
const PERCENTILES: [(&str, f64); 6] = [
    ("lateness_min_ns", 0.0),
    ("lateness_p50_ns", 50.0),
    ("lateness_p90_ns", 90.0),
    ("lateness_p99_ns", 99.0),
    ("lateness_p99_9_ns", 99.9),
    ("lateness_max_ns", 100.0),
];

fn finish(ctx: &Context, p: Point, plan: &Plan, priority: i32, m: Measured) -> Case {
    let ns: Vec<f64> = m.lateness.iter().map(|&v| v as f64).collect();
    let ticks_per_ns = 1.0 / ctx.clock.ticks_to_ns(1.0);
    let kept = spread(&ns, MAX_SAMPLES);
    let samples = Samples {
        per_op_ticks: kept.iter().map(|v| v * ticks_per_ns).collect(),
        per_op_ns: kept,
        iterations_per_sample: 1,
        loop_overhead_ns: 0.0,
    };
    let mut case = Case::new(
        case_id(p, plan.period_ns),
        description(p, plan.period_ns, priority),
        "wake-up",
        samples,
    )
    .param("policy", value_name(&p.policy))
    .param("mode", value_name(&p.mode))
    .param("period_ns", plan.period_ns)
    .param("cpu", p.cpu as u64)
    .param("load", if p.load { "spin" } else { "idle" });
    if p.policy == Policy::Fifo {
        case = case.param("priority", priority as i64);
    }
    let n = ns.len();
    let mut sorted = ns.clone();
    sorted.sort_by(f64::total_cmp);
    let c = &mut case.counters;
    for (name, pct) in PERCENTILES {
        c.insert(name.into(), oscost_stats::percentile(&sorted, pct));
        // The distribution-free interval where the wake-ups are enough for both its ends (a
        // p99 needs about 600).
        if let Some([lo, hi]) = oscost_stats::percentile_ci95(&sorted, pct) {
            let stem = name.trim_end_matches("_ns");
            c.insert(format!("{stem}_ci95_lo_ns"), lo);
            c.insert(format!("{stem}_ci95_hi_ns"), hi);
        }
    }
    c.insert(
        "lateness_mean_ns".into(),
        ns.iter().sum::<f64>() / n.max(1) as f64,
    );
    c.insert("wakeups".into(), n as f64);
    c.insert("overruns".into(), m.run.overruns as f64);
    let elapsed_ns = m.active_ns as f64;
    c.insert("run_s".into(), elapsed_ns / 1e9);
    c.insert(
        "voluntary_switches_per_wakeup".into(),
        m.voluntary as f64 / n.max(1) as f64,
    );
    c.insert("involuntary_switches".into(), m.involuntary as f64);
    c.insert("minor_faults".into(), m.minor_faults as f64);
    c.insert("major_faults".into(), m.major_faults as f64);
    case.series.push(Series {
        name: "histogram".into(),
        columns: vec!["from_ns".into(), "to_ns".into(), "count".into()],
        points: log2_histogram(&ns)
            .into_iter()
            .map(|b| vec![b.from, b.to, b.count as f64])
            .collect(),
    });
    checks(&mut case, p, plan, &m, n, elapsed_ns);
    if n > MAX_SAMPLES {
        case.notes.push(Message::new(
            MessageKind::SamplesThinned,
            format!(
                "{MAX_SAMPLES} wake-ups spread evenly over all {n} (the percentiles use every one)"
            ),
        ));
    }
    if n < P999_MIN_WAKEUPS {
        case.notes.push(Message::from(format!(
            "the p99.9 rests on fewer than ten wake-ups above it ({n} wake-ups in all; \
             --wakeups {P999_MIN_WAKEUPS} gives it ten)"
        )));
    }
    if m.run.overruns > 0 {
        case.warnings.push(Message::from(format!(
            "deadlines passed with no wake-up of their own, the thread held up past a later one \
             (not in the distribution): {}",
            m.run.overruns
        )));
    }
    case
}

fn checks(case: &mut Case, p: Point, plan: &Plan, m: &Measured, n: usize, elapsed_ns: f64) {
    let per_wakeup = m.voluntary as f64 / n.max(1) as f64;
    case.checks.push(Check::near(
        "voluntary_switches_per_wakeup",
        1.0,
        per_wakeup,
        0.05,
        &format!(
            "getrusage(RUSAGE_THREAD) of the sleeping thread: {} voluntary switches for {n} \
             wake-ups; each wake-up must follow a real sleep (within ±0.05)",
            m.voluntary
        ),
    ));
    // Relative sleeps drift by their own lateness and the time between two sleeps; absolute
    // deadlines do not.
    let mean_lateness = case.counters["lateness_mean_ns"];
    let cycles = n as f64 + m.run.overruns as f64;
    let (expected, how) = match p.mode {
        Mode::Relative => (
            plan.period_ns as f64 + mean_lateness,
            "the period plus the mean lateness (a relative sleep drifts by it)",
        ),
        _ => (plan.period_ns as f64, "the period"),
    };
    case.checks.push(Check::near(
        "run_time_per_period_ns",
        expected,
        elapsed_ns / cycles.max(1.0),
        0.05 * expected,
        &format!(
            "CLOCK_MONOTONIC from the first period's start to the last wake-up, {:.3} s, over \
             {cycles} periods (wake-ups and overruns), against {how}; within ±5 %: the timer \
             really fired once a period",
            elapsed_ns / 1e9
        ),
    ));
    let (want, what) = match p.policy {
        Policy::Fifo => (oscost_sys::wakeup::SCHED_FIFO, "SCHED_FIFO"),
        Policy::Other => (oscost_sys::wakeup::SCHED_OTHER, "SCHED_OTHER"),
    };
    case.checks.push(Check::near(
        "policy_while_sleeping",
        want as f64,
        m.policy_seen as f64,
        0.0,
        &format!("sched_getscheduler of the sleeping thread before its first sleep: {what}"),
    ));
    if let Some(cpu_ns) = m.load_cpu_ns {
        let share = cpu_ns as f64 / elapsed_ns.max(1.0);
        case.counters.insert("load_cpu_share".into(), share);
        case.checks.push(Check::at_least(
            "load_cpu_share",
            0.5,
            share,
            0.0,
            &format!(
                "CPU time of the spinning thread on CPU {} (CLOCK_THREAD_CPUTIME_ID), {:.3} s, \
                 over the run: the load really competed for the CPU (at least half of it)",
                p.cpu,
                cpu_ns as f64 / 1e9
            ),
        ));
    }
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Wakeup;
    const SUMMARY: &'static str =
        "How late a thread sleeping until a time is woken: the lateness distribution, as cyclictest";
    const ABOUT: &'static str = "How late the OS wakes a thread that sleeps until a time, \
as cyclictest measures it.

A thread pinned to the first CPU of the set (every CPU with --each-cpu) sleeps until \
deadlines one --period apart on CLOCK_MONOTONIC - clock_nanosleep(TIMER_ABSTIME) by default, \
a periodic timerfd or a relative clock_nanosleep with --modes - reads the clock as soon as it \
runs again and stores how late it is. Under SCHED_OTHER and SCHED_FIFO (--priority, 90 by \
default); where SCHED_FIFO is refused (a normal user without CAP_SYS_NICE) one line says so and \
SCHED_OTHER is still measured. The policy is the sleeping thread's own and is put back before \
it ends. With --load each case is measured again beside a thread spinning on the same CPU.

Every wake-up is one sample: the lateness min, p50, p90, p99, p99.9 and max, and a histogram \
on power-of-two bins. 10000 wake-ups by default give the p99.9 ten wake-ups above it. Checks: \
the thread's voluntary switches (getrusage) are one per wake-up, so each was a real sleep; \
the run lasted one period per wake-up; the policy was the one asked for; under --load the \
spinner had at least half the CPU.

Case ids: wakeup.POLICY.PERIOD, then .timerfd or .relative for the mode, .cpuN with \
--each-cpu and .load beside the spinner.

The kernel's split (case id + .kernel): after each case, apart from its timed wake-ups, up to \
2000 of them again with the kernel's tracepoints recorded on the thread's CPU (an ftrace \
instance of oscost's own, else perf; --trace-with; --no-kernel-view skips it), as rtla timerlat \
splits the lateness but without its tracer: the deadline to the timer's programmed expiry (the \
thread's timer slack, hrtimer_start), the expiry to the timer interrupt's run of it \
(hrtimer_expire_entry's clock reading), the interrupt to the switch into the thread \
(sched_switch), the switch to its return to user space (sys_exit) and that return to the clock \
read. Each wake-up's parts added up must have a median within ±5 % of the measured median \
lateness (a check); \
the 10 worst wake-ups are explained by what held the CPU from the deadline to the \
return (interrupts, softirqs, timer callbacks, other tasks by name, idle, time no event \
accounts for), and the tracing's cost is the traced median against the timed one. Without \
permission to trace, one line says so and the timed cases stand.\n\nTakes about 25 s (10000 \
wake-ups of 1 ms under each policy, then 2000 of each traced); --quick about 0.6 s (0.3 s with \
--no-kernel-view), as the whole command on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    // 600 wake-ups: the fewest whose p99 has both ends of its interval (the datasheet shows it).
    const SUITE_ARGS: &'static [&'static str] = &["--wakeups", "600"];
    // A quick suite takes no traced pass, as every other experiment's quick share.
    const QUICK_SUITE_ARGS: &'static [&'static str] = &["--no-kernel-view"];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    let p = plan(opts, &ctx.cpus, ctx.quick)?;
    if ctx.clock.scripted().is_some() {
        anyhow::bail!("{NAME} needs the machine's clock and cannot run on the scripted clock");
    }
    let mut out = ExperimentOutput::default();
    out.params.insert("period_ns".into(), json!(p.period_ns));
    out.params.insert("wakeups".into(), json!(p.wakeups as u64));
    // Dropped (the request withdrawn) on every way out of this function.
    let hold = crate::idle::hold(opts.idle_poll, &mut out);
    out.params.insert("idle_poll".into(), json!(hold.is_some()));
    let refusal = if p.points.iter().any(|x| x.policy == Policy::Fifo) {
        fifo_refusal(opts.priority)
    } else {
        None
    };
    let mut view = KernelView {
        passes: opts.kernel_view.passes(),
    };
    ctx.progress.start(p.points.len() as u64, NAME);
    for &point in &p.points {
        ctx.check_cancel()?;
        let id = case_id(point, p.period_ns);
        if point.policy == Policy::Fifo {
            if let Some(why) = &refusal {
                out.unavailable.push(Unavailable {
                    id,
                    description: description(point, p.period_ns, opts.priority),
                    reason: refused_reason(opts.priority, why),
                });
                ctx.progress.inc(1);
                continue;
            }
        }
        ctx.progress.message(&format!(
            "{id}: {} wake-ups, {:.1} s",
            p.wakeups,
            p.wakeups as f64 * p.period_ns as f64 / 1e9
        ));
        match measure_point(point, &p, opts.priority, ctx.cancel, false)? {
            Ok(m) => {
                ctx.check_cancel()?;
                let case = finish(ctx, point, &p, opts.priority, m);
                let split = view.trace(&case, point, &p, opts.priority, ctx)?;
                out.cases.push(case);
                out.cases.extend(split);
            }
            Err(Refused(why)) => out.unavailable.push(Unavailable {
                id,
                description: description(point, p.period_ns, opts.priority),
                reason: refused_reason(opts.priority, &why),
            }),
        }
        ctx.progress.inc(1);
    }
    if ctx.cancel.load(Ordering::Relaxed) {
        return Err(Cancelled.into());
    }
    view.finish(&mut out);
    ctx.progress.finish();
    Ok(out)
}

/// The traced passes of a run.
struct KernelView {
    passes: crate::kview::Passes,
}

impl KernelView {
    /// The split case of `timed` (point `p`), traced after its timed wake-ups, if it can be.
    fn trace(
        &mut self,
        timed: &Case,
        p: Point,
        plan: &Plan,
        priority: i32,
        ctx: &Context,
    ) -> anyhow::Result<Option<Case>> {
        if !self.passes.wanted() {
            return Ok(None);
        }
        let id = &timed.id;
        ctx.progress.message(&format!("{id}: traced pass"));
        let traced_plan = Plan {
            wakeups: plan.wakeups.min(kernel::TRACED_MAX),
            ..plan.clone()
        };
        let events = kernel::events();
        let cpus = [p.cpu];
        // The interrupt vectors only name what held the CPU: one the kernel lacks or refuses
        // (perf and `irq_work_exit` on some kernels) is skipped and said; the split's own
        // tracepoints are needed.
        let pass = crate::kview::Pass {
            each: true,
            fields: kernel::FIELDS,
            ..crate::kview::Pass::new(&events, &cpus, &self.passes.order)
        };
        let (mut session, notes) = match crate::kview::Session::open(&pass) {
            Ok(s) => s,
            Err(why) => {
                self.passes.unavailable = Some(why.0);
                return Ok(None);
            }
        };
        let lacking: Vec<&str> = session
            .missing()
            .iter()
            .map(String::as_str)
            .filter(|m| {
                kernel::NEEDED
                    .iter()
                    .any(|(s, e)| m.starts_with(&format!("{s}:{e}")))
            })
            .collect();
        if !lacking.is_empty() {
            self.passes.unavailable = Some(format!(
                "this kernel lacks the tracepoints {}: a wake-up cannot be split without them",
                lacking.join(", ")
            ));
            return Ok(None);
        }
        let mechanism = session.mechanism();
        let clock = session.clock();
        let mono = oscost_sys::timer::monotonic_ns;
        session.start(ctx.clock)?;
        let a = oscost_sys::ktrace::anchor_on(clock, mono);
        let measured = measure_point(p, &traced_plan, priority, ctx.cancel, true);
        let b = oscost_sys::ktrace::anchor_on(clock, mono);
        let raw = session.stop_raw(ctx.clock)?;
        drop(session);
        let m = match measured.with_context(|| format!("{id}: traced pass"))? {
            Ok(m) => m,
            Err(Refused(why)) => anyhow::bail!("{id}: traced pass: SCHED_FIFO refused ({why})"),
        };
        ctx.check_cancel()?;
        for n in notes {
            self.passes.note(n);
        }
        let events: Vec<kernel::At> = raw
            .records
            .iter()
            .filter_map(|r| kernel::decode(r, &raw))
            .collect();
        let wakes: Vec<kernel::Wake> = m
            .deadlines
            .iter()
            .zip(&m.lateness)
            .map(|(&deadline, &late)| kernel::Wake {
                deadline,
                woke: deadline + late,
            })
            .collect();
        let clocks = kernel::Clocks::new(a, b);
        let found = kernel::split(
            &events,
            &wakes,
            i64::from(m.tid),
            plan.period_ns,
            p.mode != Mode::Relative,
            &clocks,
        );
        let (segments, whose) = kernel::segments_of(&raw);
        let t = kernel::Traced {
            wakes,
            found,
            segments,
            whose,
            lost: raw.lost,
            records: raw.records.len(),
            unsampled: raw.unsampled,
            mechanism,
            start_ns: m.run.start_ns,
        };
        self.passes.traced_with(mechanism);
        let ns_per_tick = ctx.clock.ticks_to_ns(1e6) / 1e6;
        Ok(Some(kernel::split_case(timed, &t, ns_per_tick)))
    }

    /// Says in the output what was traced, or why nothing was, in one line.
    fn finish(self, out: &mut ExperimentOutput) {
        self.passes.finish(
            out,
            (
                ids::KERNEL.to_owned(),
                "each wake-up's lateness split by the kernel's tracepoints",
            ),
            "no case to trace",
            "traced".to_owned(),
        );
    }
}

#[cfg(test)]
mod tests;
