//! `timeline`: N workers on one CPU, each doing equal chunks of busy work and noting the time
//! after every chunk: who ran when, the time slices, throughput and latency, and the CPU shares
//! nice values and policies give, each beside the kernel's own rule (the process-scheduler
//! experiments of Satoru Takeuchi, "[試して理解] Linuxのしくみ", Gijutsu-Hyoron, 2018: 1, 2
//! and 4 processes pinned to one CPU, each recording its progress, drawn against time).
//!
//! One round forks (or starts) N workers, which wait at a barrier until every one is ready and
//! has its nice value and policy; one futex wake releases them all at the round's common
//! start. Each does its chunks and writes the counter's reading after each into shared memory
//! made before it started (no I/O while measuring); the first to finish reads every worker's
//! CPU clock, which gives the CPU shares over the time all of them were runnable. Rounds of
//! every worker count are interleaved, so a slow second of the machine touches each alike.

use crate::context::Context;
use crate::engine;
use crate::kview::ViewHelp as _;
use crate::limits::{Limits, Needs, FILES_MARGIN};
use crate::sysctl::{read_trim, set_sysctl, RR_TIMESLICE};
use anyhow::Context as _;
use oscost_model::case::ExperimentOutput;
use oscost_stats::sched::{expected_slice, weight, Policy};
use oscost_sys::clock::Clock;
use oscost_sys::task::Kind;
use oscost_sys::timeline::Sched;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

mod cases;
mod kernel;
mod rounds;

use cases::{cases, trace_series};
use rounds::{base_slice, calibrate, run_round, traced_rounds, Chunk, Round};

/// Subcommand name and id prefix.
pub const NAME: &str = oscost_model::ids::timeline::NAME;

/// The default sweep of worker counts (the study's 1, 2 and 4).
const DEFAULT_WORKERS: [usize; 3] = [1, 2, 4];
/// More workers than this on one CPU are refused as a typo rather than tried.
const MAX_WORKERS: usize = 256;
/// A trace longer than this per worker is refused as a typo.
const MAX_CHUNKS: usize = 100_000;
/// Longest chunk accepted, µs (one second).
const MAX_CHUNK_US: u64 = 1_000_000;
/// The study's chunk: an empty C loop of `LOOP_COUNT 100000` iterations, what
/// `--chunk-iterations` alone gives.
const STUDY_CHUNK_ITERATIONS: &str = "100000";
/// Most iterations of one chunk accepted (some seconds of the busy loop).
const MAX_CHUNK_ITERATIONS: u64 = 10_000_000_000;
/// Rounds beyond this are refused as a typo.
const MAX_ROUNDS: usize = 1000;
/// Rounds with `--quick`, at most.
const QUICK_ROUNDS: usize = 2;
/// Chunks per worker with `--quick`, at most: 4 workers still share the CPU over some 20
/// slices or more, what the share check needs.
const QUICK_CHUNKS: usize = 40;
/// The tolerance of every share check, percentage points.
const SHARE_TOLERANCE_PCT: f64 = 2.0;
/// Shares are compared with the weights only over at least this many slices.
const MIN_SLICES_FOR_SHARES: f64 = 20.0;
/// The sysctl `--rr-slice-ms` sets.
/// How long workers may take to reach the start barrier, and a round to finish, before the
/// run is abandoned as stuck.
const SETUP_DEADLINE: Duration = Duration::from_secs(30);

/// The scheduling policy of every worker.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum TimelinePolicy {
    /// SCHED_OTHER: the CPU shared by weight (nice), in slices of the base slice
    Other,
    /// SCHED_BATCH: shared as `other`, without wakeup preemption
    Batch,
    /// SCHED_IDLE: every worker at the lowest weight, nice ignored
    Idle,
    /// SCHED_RR at priority 1: equal turns of sched_rr_timeslice_ms (needs root or
    /// CAP_SYS_NICE)
    Rr,
    /// SCHED_FIFO at priority 1: each worker runs until it finishes (needs root or
    /// CAP_SYS_NICE)
    Fifo,
}

impl TimelinePolicy {
    /// The rules of [`oscost_stats::sched`] that apply.
    fn rule(self) -> Policy {
        match self {
            TimelinePolicy::Other => Policy::Other,
            TimelinePolicy::Batch => Policy::Batch,
            TimelinePolicy::Idle => Policy::Idle,
            TimelinePolicy::Rr => Policy::Rr,
            TimelinePolicy::Fifo => Policy::Fifo,
        }
    }

    fn sys(self) -> Sched {
        match self {
            TimelinePolicy::Other => Sched::Other,
            TimelinePolicy::Batch => Sched::Batch,
            TimelinePolicy::Idle => Sched::Idle,
            TimelinePolicy::Rr => Sched::Rr,
            TimelinePolicy::Fifo => Sched::Fifo,
        }
    }

    fn name(self) -> String {
        engine::value_name(&self)
    }
}

/// Options of `oscost timeline`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
#[command(view_help(
    "No traced round: skip the extra round per worker count that records the scheduler's \
     tracepoints",
    "How the traced round records the scheduler's tracepoints (default: the lightest this \
     kernel allows, bpf then ftrace then perf); one refused is said, and the next one used"
))]
pub struct Options {
    /// Workers sharing the CPU, a list [default: 1,2,4, or one per --worker-nice value]
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = parse_workers)]
    pub workers: Vec<usize>,

    /// Chunks of work per worker; the time is noted after each (at most 40 with --quick)
    #[arg(long, default_value_t = 100, value_name = "N", value_parser = parse_chunks)]
    pub chunks: usize,

    /// CPU time of one chunk, µs (the work is calibrated on the workers' CPU before the run)
    #[arg(long, default_value_t = 1000, value_name = "US", value_parser = parse_chunk_us)]
    pub chunk_us: u64,

    /// Size one chunk in iterations of oscost's busy loop instead of by time, as the study
    /// did (its chunk: an empty C loop of 100000 iterations, what the option alone gives). An
    /// iteration of oscost's loop need not take the time of an iteration of the study's
    /// unoptimised C loop, so the same count can be a longer or shorter chunk; the CPU time
    /// a chunk took is recorded (`chunk_cpu_ns`). Not with --chunk-us
    #[arg(long, value_name = "N", value_parser = parse_chunk_iterations,
          num_args = 0..=1, default_missing_value = STUDY_CHUNK_ITERATIONS,
          conflicts_with = "chunk_us")]
    pub chunk_iterations: Option<u64>,

    /// Forked processes, or threads of the measuring process
    #[arg(long, value_parser = engine::kind_parser(), default_value = "processes")]
    pub kind: Kind,

    /// One nice value per worker, e.g. `0,5` (-20..19; going below the inherited value needs
    /// root or CAP_SYS_NICE) [default: the inherited value for every worker]
    #[arg(long, value_name = "N,...", value_delimiter = ',', allow_hyphen_values = true,
          value_parser = parse_nice)]
    pub worker_nice: Vec<i32>,

    /// Scheduling policy of every worker
    #[arg(long, value_enum, default_value = "other")]
    pub policy: TimelinePolicy,

    /// With --policy rr: the round-robin slice, ms, set in
    /// /proc/sys/kernel/sched_rr_timeslice_ms for the run and put back afterwards (root only;
    /// elsewhere the kernel's slice is used and a warning recorded)
    #[arg(long, value_name = "MS", value_parser = parse_rr_ms)]
    pub rr_slice_ms: Option<u64>,

    /// Rounds: every worker count runs this many times, interleaved (at most 2 with --quick)
    #[arg(long, default_value_t = 5, value_name = "N", value_parser = parse_rounds)]
    pub rounds: usize,

    /// Let the workers use every CPU of the --cpus set instead of only its first (they then
    /// run side by side: no slice is read from the trace and no share predicted)
    #[arg(long)]
    pub spread: bool,

    /// `--no-kernel-view` and `--trace-with`, worded for this experiment by `view_help` above
    #[command(flatten)]
    #[serde(flatten)]
    pub kernel_view: crate::kview::ViewArgs,
}

fn parse_in(s: &str, what: &str, min: u64, max: u64) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not {what} from {min} to {max}")),
    }
}

fn parse_workers(s: &str) -> Result<usize, String> {
    parse_in(s, "a number of workers", 1, MAX_WORKERS as u64).map(|n| n as usize)
}

fn parse_chunks(s: &str) -> Result<usize, String> {
    parse_in(s, "a number of chunks", 1, MAX_CHUNKS as u64).map(|n| n as usize)
}

fn parse_chunk_us(s: &str) -> Result<u64, String> {
    parse_in(s, "a chunk length in µs", 1, MAX_CHUNK_US)
}

fn parse_chunk_iterations(s: &str) -> Result<u64, String> {
    parse_in(
        s,
        "a number of iterations per chunk",
        1,
        MAX_CHUNK_ITERATIONS,
    )
}

fn parse_rr_ms(s: &str) -> Result<u64, String> {
    parse_in(s, "a round-robin slice in ms", 1, 10_000)
}

fn parse_rounds(s: &str) -> Result<usize, String> {
    parse_in(s, "a number of rounds", 1, MAX_ROUNDS as u64).map(|n| n as usize)
}

fn parse_nice(s: &str) -> Result<i32, String> {
    match s.trim().parse::<i32>() {
        Ok(n) if (-20..=19).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not a nice value from -20 to 19")),
    }
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Timeline;
    const SUMMARY: &'static str =
        "Who ran when on one CPU: time slices, throughput, latency and CPU shares by nice value";
    const ABOUT: &'static str =
        "Who ran when on one CPU: time slices, throughput, latency and CPU shares by nice value.

N workers (forked processes, or threads with --kind threads) pinned to the first CPU of the set \
each do --chunks equal chunks of calibrated busy work (--chunk-us of CPU time, or \
--chunk-iterations of the loop, as the study sized its chunk) and note the time after every \
chunk in memory prepared beforehand. Per worker count: throughput (workers/s), each worker's \
latency (finish time from the common start) and their average, the study's latency (from the \
worker's own start to its finish: case `.own_latency`), the time slices seen in the trace \
(median and p95) beside the slice this kernel is expected to give (and how that expectation is \
derived), and each worker's CPU share while all were runnable beside the share the kernel's \
nice-to-weight table predicts (within ±2 percentage points, checked). --worker-nice gives each \
worker a nice value, --policy a scheduling policy. The trace is kept as the series `trace`: \
--series DIR writes it as CSV, --svg DIR draws progress against time, one line per worker, with \
a strip of who ran when.

Then, where the kernel's tracepoints can be read (root, or perf_event_paranoid -1), one more \
round per worker count runs with sched_switch, sched_wakeup and sched_waking recorded (apart \
from the timed rounds, so tracing never touches their figures; its total time beside theirs \
says what tracing cost): case `.kernel` gives who ran when from the kernel's switches, each \
worker's run time against its own CPU clock, the kernel's slice lengths against the workers' \
own (they agree within one chunk, checked), how many runs ended preempted and how many asleep, \
and the wake-up latency (sched_wakeup to the switch in). --svg draws the kernel's who-ran-when \
under that round's trace. The tracepoints are recorded by the lightest mechanism this kernel allows (BPF programs on raw \
tracepoints, else an ftrace instance of oscost's own, else perf_event_open; --trace-with puts one \
first), named under the table with what it cost: the same measure untraced and traced. --no-kernel-view skips it; without permission one line says what is \
missing, and every other figure still comes.\n\nTakes about 5 s; --quick about 1.5 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    const QUICK_SUITE_ARGS: &'static [&'static str] = &["--no-kernel-view"];
    const SUITE_ARGS: &'static [&'static str] = &["--rounds", "3"];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }

    fn preflight(&self, _quick: bool, limits: &Limits) -> anyhow::Result<()> {
        let n = self.workers.iter().copied().max().unwrap_or_else(|| {
            if self.worker_nice.is_empty() {
                DEFAULT_WORKERS[2]
            } else {
                self.worker_nice.len()
            }
        });
        if n > MAX_WORKERS {
            return Ok(()); // refused by `run` with its own message
        }
        limits.check(&Needs {
            what: format!("{NAME} --workers {n}"),
            instead: Some("use fewer --workers".into()),
            files: Some((FILES_MARGIN, format!("{FILES_MARGIN} for the run itself"))),
            tasks: Some((
                n as u64 + 2,
                format!("{n} workers, a watchdog thread and the measuring process"),
            )),
            maps: None,
            memory_kib: None,
            address_space_kib: None,
        })
    }
}

// ---------------------------------------------------------------------------------------
// What is run.

/// The options, checked and resolved.
#[derive(Debug, Clone)]
struct Plan {
    /// Worker counts, in order.
    sizes: Vec<usize>,
    /// The nice value asked for each worker (only with one size), or none.
    nice: Option<Vec<i32>>,
    /// The CPUs the workers may use.
    cpus: Vec<usize>,
    rounds: usize,
}

fn validate(opts: &Options, ctx: &Context) -> anyhow::Result<Plan> {
    if ctx.cpus.is_empty() {
        anyhow::bail!("--cpus: the CPU set is empty");
    }
    let mut sizes = if opts.workers.is_empty() {
        if opts.worker_nice.is_empty() {
            DEFAULT_WORKERS.to_vec()
        } else {
            vec![opts.worker_nice.len()]
        }
    } else {
        engine::first_occurrences(&opts.workers)
    };
    sizes.retain(|&n| n >= 1);
    if let Some(&bad) = opts.workers.iter().find(|&&n| n == 0 || n > MAX_WORKERS) {
        anyhow::bail!("--workers {bad}: give 1 to {MAX_WORKERS} workers");
    }
    if opts.chunks == 0 || opts.chunks > MAX_CHUNKS {
        anyhow::bail!("--chunks {}: give 1 to {MAX_CHUNKS} chunks", opts.chunks);
    }
    let nice = if opts.worker_nice.is_empty() {
        None
    } else {
        if let Some(bad) = opts.worker_nice.iter().find(|v| weight(**v).is_none()) {
            anyhow::bail!("--worker-nice {bad}: a nice value is -20 to 19");
        }
        match sizes.as_slice() {
            [n] if *n == opts.worker_nice.len() => Some(opts.worker_nice.clone()),
            [n] => anyhow::bail!(
                "--worker-nice gives {} value{} for {n} worker{}: give one per worker \
                 (e.g. --workers 2 --worker-nice 0,5)",
                opts.worker_nice.len(),
                plural(opts.worker_nice.len()),
                plural(*n)
            ),
            _ => anyhow::bail!(
                "--worker-nice needs a single --workers value (it gives one nice value per \
                 worker; --workers is {})",
                sizes
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        }
    };
    if opts.rr_slice_ms.is_some() && opts.policy != TimelinePolicy::Rr {
        anyhow::bail!(
            "--rr-slice-ms sets the round-robin slice, which only --policy rr uses: add \
             --policy rr or drop it"
        );
    }
    let cpus = if opts.spread {
        ctx.cpus.clone()
    } else {
        vec![ctx.first_cpu()]
    };
    let rounds = if ctx.quick {
        opts.rounds.min(QUICK_ROUNDS)
    } else {
        opts.rounds
    };
    Ok(Plan {
        sizes,
        nice,
        cpus,
        rounds,
    })
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The case id of `n` workers under the plan's policy and nice values.
fn case_id(opts: &Options, n: usize, nice: Option<&[i32]>) -> String {
    let policy = opts.policy.name();
    oscost_model::ids::timeline::Case {
        kind: opts.kind.name(),
        policy: (opts.policy != TimelinePolicy::Other).then_some(policy.as_str()),
        workers: n,
        nice: nice.map(<[i32]>::to_vec),
    }
    .to_string()
}

/// Runs every round of every worker count.
fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    let mut opts = opts.clone();
    if ctx.quick {
        opts.chunks = opts.chunks.min(QUICK_CHUNKS);
    }
    let opts = &opts;
    let plan = validate(opts, ctx)?;
    if ctx.clock.scripted().is_some() {
        anyhow::bail!("{NAME} needs the real clock: its workers read the counter themselves");
    }
    let clock = Clock::from_info(ctx.clock.info());
    let mut out = ExperimentOutput::default();
    // Put back on every way out, an error or Ctrl-C included; the value before is recorded
    // first, and the coordinator or the next run puts it back if this process is killed.
    let rr = match opts.rr_slice_ms {
        Some(ms) => set_sysctl(Path::new(RR_TIMESLICE), ms, "--rr-slice-ms", ctx, &mut out),
        None => None,
    };
    let rr_ms: Option<u64> = read_trim(Path::new(RR_TIMESLICE)).and_then(|s| s.parse().ok());
    let tick_ns = oscost_sys::sysinfo::coarse_clock_resolution_ns()
        .filter(|&ns| crate::env::parse::hz_from_tick_ns(ns).is_some());
    out.params.insert(
        "sched_autogroup_enabled".into(),
        json!(read_trim(Path::new(
            "/proc/sys/kernel/sched_autogroup_enabled"
        ))),
    );
    out.params
        .insert("sched_rr_timeslice_ms".into(), json!(rr_ms));
    out.params.insert(
        "hz".into(),
        json!(tick_ns.and_then(crate::env::parse::hz_from_tick_ns)),
    );
    out.params
        .insert("policy".into(), json!(opts.policy.name()));
    out.params.insert("kind".into(), json!(opts.kind.name()));
    out.params.insert("rounds".into(), json!(plan.rounds));
    ctx.progress.start(1, NAME);
    ctx.progress.message("calibrating the chunk");
    let cal = calibrate(opts.chunk_us as f64 * 1e3, plan.cpus[0])?;
    ctx.progress.finish();
    // A count given in iterations is run as given; the calibration then only tells how long a
    // chunk of it lasts (for the deadline and the description).
    let iterations = opts.chunk_iterations.unwrap_or(cal.iterations);
    let chunk = Chunk {
        iterations,
        given_in_iterations: opts.chunk_iterations.is_some(),
        us: opts.chunk_iterations.map_or(opts.chunk_us, |i| {
            (i as f64 * cal.ns_per_iteration / 1e3).ceil().max(1.0) as u64
        }),
    };
    out.params
        .insert("chunk_iterations".into(), json!(iterations));
    out.params.insert(
        "calibrated_ns_per_iteration".into(),
        json!(cal.ns_per_iteration),
    );
    let mut rounds: Vec<Vec<Round>> = vec![Vec::new(); plan.sizes.len()];
    ctx.progress
        .start((plan.rounds * plan.sizes.len()) as u64, NAME);
    for r in 0..plan.rounds {
        for (k, &n) in plan.sizes.iter().enumerate() {
            ctx.check_cancel()?;
            ctx.progress.message(&format!(
                "{n} {} round {} of {}",
                opts.kind.name(),
                r + 1,
                plan.rounds
            ));
            let (round, _) = run_round(opts, &plan, ctx, &clock, n, &chunk, None)
                .with_context(|| case_id(opts, n, plan.nice.as_deref()))?;
            rounds[k].push(round);
            ctx.progress.inc(1);
        }
    }
    ctx.progress.finish();
    let traced = traced_rounds(opts, &plan, ctx, &clock, &chunk, &mut out)?;
    let base = base_slice(&rounds);
    let hrtick = read_trim(Path::new("/sys/kernel/debug/sched/features"))
        .map(|f| f.split_whitespace().any(|w| w == "HRTICK"));
    let rule = expected_slice(opts.policy.rule(), base, tick_ns, hrtick, rr_ms);
    out.params.insert("expected_slice".into(), json!(rule.how));
    for (k, &n) in plan.sizes.iter().enumerate() {
        let [main, latency, own] = cases(opts, &plan, &clock, n, &rounds[k], &rule, &chunk);
        out.cases.push(main);
        out.cases.push(latency);
        out.cases.push(own);
        if let Some((round, t)) = &traced[k] {
            let totals: Vec<f64> = rounds[k].iter().map(Round::total_ns).collect();
            let id = case_id(opts, n, plan.nice.as_deref());
            out.cases.push(kernel::case(
                &kernel::Input {
                    id: &id,
                    n,
                    cpus: &plan.cpus,
                    round,
                    traced: t,
                    chunks: opts.chunks,
                    untraced_totals: &totals,
                },
                &clock,
            ));
        }
    }
    drop(rr);
    Ok(out)
}

#[cfg(test)]
mod tests;
