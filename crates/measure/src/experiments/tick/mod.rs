//! `tick`: the cycles each timer event costs a running program. The method of a QNX study that
//! shrank the system tick from 1 ms to 9.2 µs under the same work (5929 against 860 977 ticks,
//! about 1256 cycles per extra tick): the same fixed work timed undisturbed and under periodic
//! events at several periods, the events counted, and the extra cycles divided by the extra
//! events, per period and as the slope of a line through every run.
//!
//! Linux cannot change its tick period at run time, so the events are made here: a POSIX timer
//! signalling the working thread, or a helper thread on the same CPU woken by an absolute-time
//! sleep or a timerfd. Every event is counted where it happens; nothing is inferred from the
//! period. Beside the figures, a short spin on the same CPU measures what the kernel's own tick
//! costs the loop (the `noise` experiment's method), for comparison with the slope.

use crate::context::Context;
use crate::cpuset::AffinityRestore;
use crate::engine;
use crate::engine::clock::{kernel_hz, real_clock};
use crate::engine::spin::{natural_tick, NaturalTick};
use crate::engine::timer::{
    deliverable, events_tolerance, parse_period, period_name, run_limit, Armed, Source,
    MIN_EVENTS_PER_RUN,
};
use crate::engine::work::work;
use crate::kview::ViewHelp as _;
use crate::sampler::{median_of, whole_runs};
use oscost_model::case::{Case, Check, DerivedSpec, ExperimentOutput, Series};
use oscost_stats::fit::{least_squares, slope_ci, Point};
use oscost_sys::clock::Clock;
use oscost_sys::timer::{EventCounts, Policy};
use oscost_sys::Switches;
use serde_json::json;
use std::hint::black_box;

mod kernel;
mod rr;

/// Subcommand name and id prefix.
pub const NAME: &str = oscost_model::ids::tick::NAME;

/// The default periods: from the study's 1 ms down to 20 µs, which a virtual machine can still
/// deliver (the study's 9.2 µs can be asked for with `--periods`).
pub(crate) const DEFAULT_PERIODS: [u64; 4] = [1_000_000, 200_000, 50_000, 20_000];
/// The periods with `--quick`: three points still give the slope; 20 µs, which a virtual
/// machine often cannot keep, is left to the full run.
const QUICK_PERIODS: [u64; 3] = [1_000_000, 200_000, 50_000];
const DEFAULT_WORK_NS: u64 = 300_000_000;
const QUICK_WORK_NS: u64 = 20_000_000;
/// How long the kernel's own tick is watched: a second, or 300 ms for work under 100 ms (the
/// suite's size).
const NATURAL_TICK_NS: u64 = 1_000_000_000;
const NATURAL_TICK_SHORT_NS: u64 = 300_000_000;
/// With `--quick`: some 37 ticks at 250 Hz, enough to find the tick and its gap.
const NATURAL_TICK_QUICK_NS: u64 = 150_000_000;
/// Runs of each point with `--quick`, at most.
const QUICK_RUNS: usize = 3;
/// The helper's SCHED_FIFO priority: the lowest real-time one preempts any normal task.
const FIFO_PRIORITY: i32 = 1;

/// Options of `oscost tick`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
#[command(view_help(
    "No traced runs: skip the run per source that records the kernel's tracepoints",
    "How the traced runs record the kernel's tracepoints (default: the lightest this kernel \
     allows, bpf then ftrace then perf); one refused is said, and the next one used"
))]
pub struct Options {
    /// Event sources, comma-separated (default: all)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "SOURCE,...")]
    pub source: Vec<Source>,

    /// Timer periods, comma-separated, each from 1us to 100ms (e.g. 1ms,49us,9.2us) [default:
    /// 1ms,200us,50us,20us, or 1ms,200us,50us with --quick, without those this machine cannot
    /// deliver]
    #[arg(long, value_delimiter = ',', value_name = "PERIOD,...", value_parser = parse_period)]
    pub periods: Option<Vec<u64>>,

    /// How long the fixed work runs undisturbed (its size is calibrated to this), e.g. 300ms
    /// [default: 300ms, or 20ms with --quick]
    #[arg(long = "work", value_name = "TIME", value_parser = engine::parse_duration)]
    pub work_ns: Option<u64>,

    /// Runs of each point: the undisturbed work and each source and period, interleaved (at
    /// most 3 with --quick)
    #[arg(long, default_value_t = 5, value_name = "N", value_parser = parse_runs)]
    pub runs: usize,

    /// Also run --rr-tasks SCHED_RR threads sharing the work on one CPU under each of these
    /// values of /proc/sys/kernel/sched_rr_timeslice_ms (1..1000), and one doing it alone:
    /// the cost of one round-robin rescheduling. Needs root; the setting is put back
    #[arg(long, value_delimiter = ',', value_name = "MS,...", value_parser = parse_rr_ms)]
    pub rr_slices: Vec<u64>,

    /// SCHED_RR threads sharing the work under --rr-slices (2..64)
    #[arg(long, default_value_t = 4, value_name = "N", value_parser = parse_rr_tasks)]
    pub rr_tasks: usize,

    /// `--no-kernel-view` and `--trace-with`, worded for this experiment by `view_help` above
    #[command(flatten)]
    #[serde(flatten)]
    pub kernel_view: crate::kview::ViewArgs,
}

fn parse_rr_ms(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(v) if (1..=1000).contains(&v) => Ok(v),
        _ => Err(format!("`{s}` is not a slice in ms from 1 to 1000")),
    }
}

fn parse_rr_tasks(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(v) if (2..=64).contains(&v) => Ok(v),
        _ => Err(format!("`{s}` is not a number of threads from 2 to 64")),
    }
}

fn parse_runs(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not a number of runs from 1 to 1000")),
    }
}

fn case_id(source: Source, period: u64) -> String {
    oscost_model::ids::tick::case(&source.name(), period)
}

/// The id of the work with no timer.
fn undisturbed_id() -> String {
    oscost_model::ids::tick::Id::Undisturbed.to_string()
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Tick;
    const SUMMARY: &'static str =
        "The cycles each timer event costs a running program, per period and as a fitted slope";
    const ABOUT: &'static str =
        "The cycles each timer event costs a running program, per period and as a fitted slope.

A fixed amount of work (a calibrated busy loop, --work) runs on one pinned CPU undisturbed, \
then under periodic events at each of --periods, in interleaved runs (--runs). The events \
come from --source: `signal`, a POSIX timer signalling the working thread (an interrupt and a \
signal delivery); `helper`, a thread on the same CPU woken by an absolute-time sleep (an \
interrupt and two context switches, SCHED_FIFO where permitted); `timerfd`, the same woken by \
a timerfd. Every event is counted where it happens. Per period: events, time, cycles, extra \
cycles against the undisturbed work, cycles per event, switches per event and overhead; per \
source, the slope of a least-squares line of cycles against events over every run, with a \
bootstrap interval. This repeats the method of a QNX study that shrank the system tick from \
1 ms to 9.2 µs under the same work and found about 1256 cycles per tick. A short spin on the same CPU measures what the \
kernel's own tick costs, for comparison. Periods this machine cannot deliver are refused when \
asked for, and left out of the defaults with a note.

Then, where the kernel's tracepoints can be read (root, or perf_event_paranoid -1), the work \
runs once more per source, at its shortest period of at least 50 µs (apart from the timed runs, \
so tracing never touches their figures), with the local timer interrupt, hrtimer callbacks, \
softirqs, switches and signal deliveries recorded on its CPU: case `.kernel` gives the kernel's \
time per event by part (the interrupt, the callbacks in it, softirqs, the helper task) against \
the time the work lost per event, and the rest, what an event costs outside the kernel's \
handlers (cache and TLB refill, a virtual machine's exit, a signal handler's user time). \
The tracepoints are recorded by the lightest mechanism this kernel allows (BPF programs on raw \
tracepoints, else an ftrace instance of oscost's own, else perf_event_open; --trace-with puts one \
first), named under the table with what it cost: the same measure untraced and traced. --no-kernel-view skips it; without permission one line says what is missing, and every other \
figure still comes.\n\nTakes about 25 s on a 2-vCPU virtual machine; --quick about 2.7 s. Each --rr-slices \
value adds about 11 s at the default --work and --runs (about 0.3 s with --quick), and grows \
with both.";
    const IN_DEFAULT_SUITE: bool = true;
    // Two runs a point: the quick suite's rough slope, its time given to the newer
    // experiments. The periods stay the default ones, which a machine that cannot keep one
    // skips (a period given by name would fail the run there).
    // No --periods: periods asked for are refused when this machine cannot keep them, while
    // the default ones are left out with a note.
    const QUICK_SUITE_ARGS: &'static [&'static str] = &["--no-kernel-view", "--runs", "2"];
    const SUITE_ARGS: &'static [&'static str] = &["--work", "20ms"];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }
}

fn timed_work(clock: &Clock, iterations: u64) -> u64 {
    let a = clock.now();
    black_box(work(iterations));
    clock.now().wrapping_sub(a)
}

/// Iterations of [`work`] that take `target_ns` here: grown until a run is long enough to
/// scale from, then set from the median of three runs.
fn calibrate(clock: &Clock, target_ns: u64, ctx: &Context) -> anyhow::Result<u64> {
    let target = target_ns as f64;
    let mut n: u64 = 1 << 12;
    loop {
        ctx.check_cancel()?;
        let t = clock.ticks_to_ns(timed_work(clock, n) as f64);
        if t >= target / 8.0 || n >= 1 << 40 {
            n = ((n as f64) * target / t.max(1.0)).ceil() as u64;
            break;
        }
        n *= 4;
    }
    let mut t: Vec<f64> = (0..3)
        .map(|_| clock.ticks_to_ns(timed_work(clock, n.max(1)) as f64))
        .collect();
    t.sort_by(f64::total_cmp);
    Ok((((n as f64) * target / t[1].max(1.0)).ceil() as u64).max(1))
}

/// One run of the work: how long it took and what happened meanwhile.
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    ticks: u64,
    events: EventCounts,
    worker: Switches,
    helper: Option<Switches>,
}

impl Run {
    fn switches(&self) -> u64 {
        self.worker.total() + self.helper.map_or(0, |s| s.total())
    }
}

/// Runs the work once, under `source` at `period` if given; the source is armed just before
/// the work starts and disarmed after it ends, and only what happened in between is counted.
fn one_run(
    clock: &Clock,
    iterations: u64,
    point: Option<(Source, u64)>,
    cpu: usize,
    limit: u64,
) -> anyhow::Result<(Run, Option<Policy>)> {
    let armed = point
        .map(|(s, p)| Armed::arm(s, p, cpu, limit, FIFO_PRIORITY))
        .transpose()?;
    let c0 = armed.as_ref().map(Armed::counts).unwrap_or_default();
    let h0 = armed.as_ref().and_then(Armed::helper_switches);
    let w0 = oscost_sys::thread_switches();
    let a = clock.now();
    black_box(work(iterations));
    let b = clock.now();
    let w1 = oscost_sys::thread_switches();
    let c1 = armed.as_ref().map(Armed::counts).unwrap_or_default();
    let h1 = armed.as_ref().and_then(Armed::helper_switches);
    let policy = armed.as_ref().and_then(Armed::policy);
    if let Some(armed) = armed {
        armed.disarm()?;
    }
    Ok((
        Run {
            ticks: b.wrapping_sub(a),
            events: c1.since(c0),
            worker: w1.since(w0),
            helper: h0.zip(h1).map(|(a, b)| b.since(a)),
        },
        policy,
    ))
}

/// Checks the options against each other before anything is armed.
fn validate(opts: &Options, work_ns: u64) -> anyhow::Result<()> {
    if let Some(periods) = &opts.periods {
        if periods.is_empty() {
            anyhow::bail!("--periods: give at least one period, e.g. 1ms,50us");
        }
        for &p in periods {
            if work_ns / p < MIN_EVENTS_PER_RUN {
                anyhow::bail!(
                    "--periods {}: the work (--work {}) would see fewer than {MIN_EVENTS_PER_RUN} \
                     events; lengthen --work or shorten the period",
                    period_name(p),
                    period_name(work_ns)
                );
            }
        }
    }
    Ok(())
}

/// What a run measures at its size (`--quick` or the stand-alone one), chosen in one place.
struct Sizes {
    /// Runs of each point.
    runs: usize,
    /// The fixed work, ns.
    work_ns: u64,
    /// The periods measured when `--periods` is not given.
    default_periods: &'static [u64],
    /// How long the kernel's own tick is watched, ns.
    natural_ns: u64,
}

fn plan(opts: &Options, quick: bool) -> Sizes {
    let work_ns = opts.work_ns.unwrap_or(if quick {
        QUICK_WORK_NS
    } else {
        DEFAULT_WORK_NS
    });
    Sizes {
        runs: if quick {
            opts.runs.min(QUICK_RUNS)
        } else {
            opts.runs
        },
        work_ns,
        default_periods: if quick {
            &QUICK_PERIODS
        } else {
            &DEFAULT_PERIODS
        },
        natural_ns: if quick {
            NATURAL_TICK_QUICK_NS
        } else if work_ns >= 100_000_000 {
            NATURAL_TICK_NS
        } else {
            NATURAL_TICK_SHORT_NS
        },
    }
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    let sizes = plan(opts, ctx.quick);
    let mut opts = opts.clone();
    opts.runs = sizes.runs;
    let opts = &opts;
    let clock = real_clock(ctx, NAME)?;
    let work_ns = sizes.work_ns;
    validate(opts, work_ns)?;
    let sources = engine::first_occurrences(if opts.source.is_empty() {
        &Source::ALL
    } else {
        &opts.source
    });
    let periods = chosen_periods(opts, work_ns, sizes.default_periods)?;
    let cpu = ctx.first_cpu();
    let _pin = AffinityRestore::pin(&[cpu])?;
    let mut out = ExperimentOutput::default();
    let sources = without_refused_helpers(&sources, &periods, &mut out);
    ctx.progress.start(opts.runs as u64 + 3, NAME);
    ctx.progress.message("calibrating the work");
    let iterations = calibrate(&clock, work_ns, ctx)?;
    ctx.progress.inc(1);
    ctx.progress
        .message("probing which periods can be delivered");
    let points = deliverable(
        &clock,
        &sources,
        &periods,
        opts.periods.is_some(),
        cpu,
        FIFO_PRIORITY,
        ctx,
        &mut out.notes,
    )?;
    ctx.progress.inc(1);
    ctx.progress.message("watching the kernel's own tick");
    let natural = natural_tick(&clock, cpu, sizes.natural_ns, ctx.cancel)?;
    ctx.progress.inc(1);

    let sampled = sample(
        &clock,
        &points,
        iterations,
        opts.runs,
        cpu,
        run_limit(work_ns),
        ctx,
    )?;

    out.params.insert("cpu".into(), json!(cpu));
    out.params.insert("work_ns".into(), json!(work_ns));
    out.params
        .insert("work_iterations".into(), json!(iterations));
    out.params.insert("runs".into(), json!(opts.runs));
    if let Some((hz, tick_ns)) = kernel_hz() {
        out.params.insert("kernel_hz".into(), json!(hz));
        out.params.insert("kernel_tick_ns".into(), json!(tick_ns));
    }
    record_natural(&mut out, natural.as_ref(), sizes.natural_ns, cpu);
    record_points(
        &mut out, &clock, &sources, &points, &sampled, cpu, iterations,
    );
    if !opts.kernel_view.no_kernel_view {
        traced(
            &mut out,
            &clock,
            &points,
            iterations,
            cpu,
            run_limit(work_ns),
            spread_ns(&clock, &sampled.undisturbed),
            &opts.kernel_view.order(),
            ctx,
        )?;
    } else {
        out.params
            .insert("kernel_view".into(), json!("off (--no-kernel-view)"));
    }
    if !opts.rr_slices.is_empty() {
        let slices = engine::first_occurrences(&opts.rr_slices);
        let tick_ns = kernel_hz().map(|(_, ns)| ns as f64);
        rr::measure(
            &slices,
            opts.rr_tasks,
            iterations,
            opts.runs,
            cpu,
            &clock,
            tick_ns,
            ctx,
            &mut out,
        )?;
    }
    ctx.progress.finish();
    Ok(out)
}

/// The sources whose set-up this process is allowed: a helper not allowed SCHED_FIFO would
/// wait for the scheduler to preempt the work instead of interrupting it, a different figure,
/// so its cases are "not measured" with the reason rather than measured and failed.
fn without_refused_helpers(
    sources: &[Source],
    periods: &[u64],
    out: &mut ExperimentOutput,
) -> Vec<Source> {
    let helpers = sources.iter().any(|&s| s != Source::Signal);
    let Some(why) = helpers
        .then(|| oscost_sys::timer::fifo_refused(FIFO_PRIORITY))
        .flatten()
    else {
        return sources.to_vec();
    };
    let mut kept = Vec::new();
    for &source in sources {
        if source == Source::Signal {
            kept.push(source);
            continue;
        }
        for &p in periods {
            out.unavailable.push(oscost_model::case::Unavailable {
                id: case_id(source, p),
                description: format!(
                    "the fixed work under an event every {} from {}",
                    period_name(p),
                    source.describe()
                ),
                reason: crate::engine::checks::fifo_refused(
                    FIFO_PRIORITY,
                    &why,
                    &format!(
                        ": run as root, or grant CAP_SYS_NICE or RLIMIT_RTPRIO ≥ \
                         {FIFO_PRIORITY}"
                    ),
                ),
            });
        }
    }
    kept
}

/// The traced period of each source: its shortest of at least 50 µs, else its longest.
fn traced_points(points: &[(Source, u64)]) -> Vec<(Source, u64)> {
    let mut out: Vec<(Source, u64)> = Vec::new();
    for &(s, p) in points {
        let better = |q: u64| match (p >= 50_000, q >= 50_000) {
            (true, true) => p < q,
            (true, false) => true,
            (false, true) => false,
            (false, false) => p > q,
        };
        match out.iter_mut().find(|(o, _)| *o == s) {
            Some(e) if better(e.1) => e.1 = p,
            Some(_) => {}
            None => out.push((s, p)),
        }
    }
    out
}

/// One traced run per source, after the timed ones, each bracketed by traced undisturbed
/// runs (one before the first source, one after each), each a `.kernel` case; or one line
/// saying why there are none. `spread_ns`: the range of the timed undisturbed runs.
#[allow(clippy::too_many_arguments)]
fn traced(
    out: &mut ExperimentOutput,
    clock: &Clock,
    points: &[(Source, u64)],
    iterations: u64,
    cpu: usize,
    limit: u64,
    spread_ns: f64,
    mechanisms: &[oscost_sys::kseam::Mechanism],
    ctx: &Context,
) -> anyhow::Result<()> {
    let mut before: Option<kernel::Traced> = None;
    for (k, (source, period)) in traced_points(points).into_iter().enumerate() {
        ctx.check_cancel()?;
        ctx.progress.message(&format!(
            "the {} source at {}, the kernel's tracepoints recorded",
            source.name(),
            period_name(period)
        ));
        let mut runs = Vec::new();
        // The first undisturbed run first, so the unavailable case returns before any other.
        for point in [None, Some((source, period)), None] {
            if point.is_none() && runs.is_empty() && before.is_some() {
                continue;
            }
            match kernel::traced_run(clock, iterations, point, cpu, limit, mechanisms)? {
                Ok((t, notes)) => {
                    if k == 0 && point.is_none() && runs.is_empty() {
                        out.notes.extend(notes);
                    }
                    runs.push(t);
                }
                Err(why) => {
                    out.params
                        .insert("kernel_view".into(), json!(why.0.clone()));
                    out.unavailable.push(oscost_model::case::Unavailable {
                        id: oscost_model::ids::tick::Id::Kernel.to_string(),
                        description: "the kernel's handler time per event, from its tracepoints"
                            .into(),
                        reason: why.0,
                    });
                    return Ok(());
                }
            }
        }
        let after = runs.pop().expect("the undisturbed run after the source's");
        let t = runs.pop().expect("the source's run");
        let first = runs
            .pop()
            .or(before.take())
            .expect("an undisturbed run before it");
        let u = kernel::Traced::bracket(&first, &after);
        before = Some(after);
        let timed = out
            .cases
            .iter()
            .find(|c| c.id == case_id(source, period))
            .and_then(|c| c.counters.get("ns_per_event").copied());
        out.cases
            .extend(kernel::case(&t, &u, timed, spread_ns, cpu, clock));
    }
    out.params.insert("kernel_view".into(), json!("traced"));
    Ok(())
}

/// The periods asked for, else the defaults that give enough events in a run of `work_ns`.
fn chosen_periods(
    opts: &Options,
    work_ns: u64,
    default_periods: &[u64],
) -> anyhow::Result<Vec<u64>> {
    let periods: Vec<u64> = match &opts.periods {
        Some(p) => engine::first_occurrences(p),
        None => default_periods
            .iter()
            .copied()
            .filter(|&p| work_ns / p >= MIN_EVENTS_PER_RUN)
            .collect(),
    };
    if periods.is_empty() {
        anyhow::bail!(
            "--work {}: too short for any default period to give {MIN_EVENTS_PER_RUN} events a \
             run; lengthen it",
            period_name(work_ns)
        );
    }
    Ok(periods)
}

/// The runs of every round: the undisturbed work, and the work under each point's events.
struct Sampled {
    undisturbed: Vec<Run>,
    /// By point, in the order of the points.
    runs: Vec<Vec<Run>>,
    /// The policy each point's helper ran under, by point.
    policies: Vec<Option<Policy>>,
}

/// Runs the work `rounds` times undisturbed and under each point's events.
fn sample(
    clock: &Clock,
    points: &[(Source, u64)],
    iterations: u64,
    rounds: usize,
    cpu: usize,
    limit: u64,
    ctx: &Context,
) -> anyhow::Result<Sampled> {
    let mut undisturbed: Vec<Run> = Vec::with_capacity(rounds);
    let mut runs: Vec<Vec<Run>> = vec![Vec::with_capacity(rounds); points.len()];
    let mut policies: Vec<Option<Policy>> = vec![None; points.len()];
    for round in 0..rounds {
        ctx.progress
            .message(&format!("run {} of {}", round + 1, rounds));
        ctx.check_cancel()?;
        undisturbed.push(one_run(clock, iterations, None, cpu, limit)?.0);
        // A rotating order, so a drift of the machine's speed touches every point alike.
        for k in 0..points.len() {
            ctx.check_cancel()?;
            let i = (round + k) % points.len();
            let (r, policy) = one_run(clock, iterations, Some(points[i]), cpu, limit)?;
            runs[i].push(r);
            policies[i] = policy;
        }
        ctx.progress.inc(1);
    }
    Ok(Sampled {
        undisturbed,
        runs,
        policies,
    })
}

/// How far apart the undisturbed work's timed runs fell: the largest less the smallest, ns.
fn spread_ns(clock: &Clock, undisturbed: &[Run]) -> f64 {
    let ticks = undisturbed.iter().map(|r| r.ticks);
    match (ticks.clone().min(), ticks.max()) {
        (Some(lo), Some(hi)) => clock.ticks_to_ns((hi - lo) as f64),
        _ => 0.0,
    }
}

/// The kernel's own tick as a parameter, with a warning when none was seen.
fn record_natural(
    out: &mut ExperimentOutput,
    natural: Option<&NaturalTick>,
    natural_ns: u64,
    cpu: usize,
) {
    out.params.insert(
        "natural_tick".into(),
        match natural {
            Some(t) => json!({
                "period_ns": t.period_ns,
                "median_ns": t.median_ns,
                "median_cycles": t.median_ticks,
                "count": t.count,
                "span_s": t.span_ns / 1e9,
            }),
            None => serde_json::Value::Null,
        },
    );
    if natural.is_none() {
        out.warnings.push(
            format!(
            "no periodic interruption was seen in {} ms of spinning on CPU {cpu}: the kernel's \
             own tick has nothing to be compared with",
            natural_ns / 1_000_000
        )
            .into(),
        );
    }
}

/// The undisturbed case, a case and per-event figure for each point, and each source's slope
/// of cycles against events over all its runs.
fn record_points(
    out: &mut ExperimentOutput,
    clock: &Clock,
    sources: &[Source],
    points: &[(Source, u64)],
    sampled: &Sampled,
    cpu: usize,
    iterations: u64,
) {
    let undisturbed = &sampled.undisturbed;
    let base = undisturbed_case(clock, undisturbed, cpu, iterations);
    let base_ticks = median_of(undisturbed.iter().map(|r| r.ticks as f64));
    out.cases.push(base);
    let mut slopes = serde_json::Map::new();
    for &source in sources {
        let mut fit_points: Vec<Point> = undisturbed
            .iter()
            .map(|r| Point {
                events: 0.0,
                cycles: r.ticks as f64,
            })
            .collect();
        for (i, &(s, period)) in points.iter().enumerate() {
            if s != source {
                continue;
            }
            fit_points.extend(sampled.runs[i].iter().map(|r| Point {
                events: r.events.events as f64,
                cycles: r.ticks as f64,
            }));
            let case = point_case(
                clock,
                source,
                period,
                &sampled.runs[i],
                base_ticks,
                cpu,
                sampled.policies[i].as_ref(),
            );
            if let Some(d) = per_event(&case) {
                out.derived.push(d);
            }
            out.cases.push(case);
        }
        if let Some(v) = slope(clock, &fit_points) {
            slopes.insert(source.name(), v);
        }
    }
    out.params
        .insert("slope".into(), serde_json::Value::Object(slopes));
}

fn undisturbed_case(clock: &Clock, runs: &[Run], cpu: usize, iterations: u64) -> Case {
    let mut case = Case::new(
        undisturbed_id(),
        format!(
            "the fixed work ({iterations} dependent multiply-adds) on CPU {cpu}, no event of \
             our own"
        ),
        "run of the work",
        whole_runs(clock, runs.iter().map(|r| r.ticks)),
    )
    .param("cpu", cpu as u64)
    .param("work_iterations", iterations);
    case.counters.insert(
        "switches_per_run".into(),
        median_of(runs.iter().map(|r| r.switches() as f64)),
    );
    case
}

fn point_case(
    clock: &Clock,
    source: Source,
    period: u64,
    runs: &[Run],
    base_ticks: f64,
    cpu: usize,
    policy: Option<&Policy>,
) -> Case {
    let med = |f: &dyn Fn(&Run) -> f64| {
        let v: Vec<f64> = runs.iter().map(f).collect();
        oscost_stats::median(&v)
    };
    let time_ns = |r: &Run| clock.ticks_to_ns(r.ticks as f64);
    let events = med(&|r| r.events.events as f64);
    let expected = med(&|r| time_ns(r) / period as f64);
    let cycles = med(&|r| r.ticks as f64);
    let extra = cycles - base_ticks;
    let per_event_switches = med(&|r| r.switches() as f64 / r.events.events.max(1) as f64);
    let mut case = Case::new(
        case_id(source, period),
        format!(
            "the fixed work under an event every {} from {}",
            period_name(period),
            source.describe()
        ),
        "run of the work",
        whole_runs(clock, runs.iter().map(|r| r.ticks)),
    )
    .param("source", source.name())
    .param("period_ns", period)
    .param("cpu", cpu as u64);
    if let Some(p) = policy {
        let text = match p {
            Policy::Fifo(prio) => format!("SCHED_FIFO {prio}"),
            Policy::Normal(why) => {
                case.warnings.push(
                    format!(
                        "the helper runs under the normal policy ({why}): its wake-ups wait until \
                     the scheduler preempts the working thread"
                    )
                    .into(),
                );
                "SCHED_OTHER".to_owned()
            }
        };
        case = case.param("helper_policy", text);
    }
    let c = &mut case.counters;
    c.insert("events_per_run".into(), events);
    c.insert("expected_events_per_run".into(), expected);
    c.insert(
        "expirations_per_run".into(),
        med(&|r| r.events.expirations as f64),
    );
    c.insert("time_ms".into(), clock.ticks_to_ns(cycles) / 1e6);
    c.insert("cycles".into(), cycles);
    c.insert("extra_cycles".into(), extra);
    if events > 0.0 {
        c.insert("cycles_per_event".into(), extra / events);
        c.insert("ns_per_event".into(), clock.ticks_to_ns(extra) / events);
    }
    c.insert("switches_per_event".into(), per_event_switches);
    c.insert("overhead_pct".into(), extra / base_ticks * 100.0);
    c.insert("kept_pct".into(), events / expected.max(1e-9) * 100.0);
    case.checks.push(Check::near(
        "events_per_run",
        expected,
        events,
        events_tolerance(expected),
        &format!(
            "events counted during each run ({}; median over {} runs, with {} expirations) \
             against the run's time / period; within ±5 % or one event, else the period was \
             not kept",
            match source {
                Source::Signal => "signal handler runs",
                _ => "helper wake-ups",
            },
            runs.len(),
            med(&|r| r.events.expirations as f64)
        ),
    ));
    let expected_switches = source.switches_per_event();
    case.checks.push(Check::near(
        "switches_per_event",
        expected_switches,
        per_event_switches,
        // Plus one switch per run: another task waking once during a run of 20 events is
        // not the source's doing.
        if expected_switches == 0.0 { 0.1 } else { 0.2 } + 1.0 / events.max(1.0),
        &match source {
            Source::Signal => "getrusage switches of the working thread per event (median over \
                               runs): a signal interrupts the thread without a switch; other \
                               tasks preempting it show here; at most 0.1, and one per run"
                .to_owned(),
            _ => "switches of the working thread (getrusage) and of the helper \
                  (/proc/self/task/<tid>/status) per event, median over runs: the helper's \
                  wake-up preempts the working thread and its sleep hands the CPU back; 2 ± 0.2, \
                  and one per run"
                .to_owned(),
        },
    ));
    if events < expected - events_tolerance(expected) {
        case.warnings.push(
            format!(
                // One kind whatever the period (its words before the colon): a brief run says
                // it once for the cases of every period, not a line each.
                "the period was not kept: at {}, {:.0} events per run counted against {:.0} \
             expected ({:.0} %)",
                period_name(period),
                events,
                expected,
                events / expected.max(1e-9) * 100.0
            )
            .into(),
        );
    }
    case.series.push(Series {
        name: "runs".into(),
        columns: vec![
            "events".into(),
            "expirations".into(),
            "cycles".into(),
            "worker_switches".into(),
            "helper_switches".into(),
        ],
        points: runs
            .iter()
            .map(|r| {
                vec![
                    r.events.events as f64,
                    r.events.expirations as f64,
                    r.ticks as f64,
                    r.worker.total() as f64,
                    r.helper.map_or(0.0, |h| h.total() as f64),
                ]
            })
            .collect(),
    });
    case
}

/// The time each event added, per period: (time under events − undisturbed time) / events.
fn per_event(case: &Case) -> Option<DerivedSpec> {
    let events = *case.counters.get("events_per_run")?;
    if events <= 0.0 {
        return None;
    }
    Some(DerivedSpec {
        id: oscost_model::ids::tick::derived(&case.id, oscost_model::ids::tick::Derived::PerEvent),
        description: format!(
            "extra time per event: the run's median time less the undisturbed median, over the \
             {events:.0} events counted per run"
        ),
        terms: vec![
            (case.id.clone(), 1.0 / events),
            (undisturbed_id(), -1.0 / events),
        ],
        flagged: engine::failed_checks(case),
    })
}

/// The least-squares slope of cycles against events over every run of one source (the
/// undisturbed runs at 0 events included), with its bootstrap interval.
fn slope(clock: &Clock, points: &[Point]) -> Option<serde_json::Value> {
    let fit = least_squares(points)?;
    let ci = slope_ci(
        points,
        oscost_stats::DEFAULT_RESAMPLES,
        oscost_stats::DEFAULT_SEED,
    )?;
    Some(json!({
        "cycles_per_event": fit.slope,
        "ci95_cycles": ci,
        "ns_per_event": clock.ticks_to_ns(fit.slope),
        "ci95_ns": [clock.ticks_to_ns(ci[0]), clock.ticks_to_ns(ci[1])],
        "intercept_cycles": fit.intercept,
        "runs": fit.n,
    }))
}

#[cfg(test)]
mod tests;
