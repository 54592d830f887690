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
use crate::cpuset::{self, AffinityRestore};
use crate::engine;
use crate::kview::{Pass, Session};
use crate::limits::{Limits, Needs, FILES_MARGIN};
use crate::sysctl::{read_trim, set_sysctl, RR_TIMESLICE};
use anyhow::Context as _;
use oscost_model::case::{Case, Check, ExperimentOutput, Samples, Series};
use oscost_stats::sched::{
    default_base_slice_ns, expected_slice, parse_release, predicted_shares, preemptions, slices_ns,
    weight, Policy, SliceRule, IDLE_WEIGHT,
};
use oscost_sys::clock::Clock;
use oscost_sys::task::{CpuMask, Kind, Team};
use oscost_sys::trace::{self, Sched, TraceBoard, TraceRecord};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod kernel;

/// Subcommand name and id prefix.
pub const NAME: &str = "timeline";

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

    /// No traced round: skip the extra round per worker count that records the scheduler's
    /// tracepoints
    #[arg(long)]
    #[serde(default)]
    pub no_kernel_view: bool,
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
    const NAME: &'static str = NAME;
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
under that round's trace. --no-kernel-view skips it; without permission one line says what is \
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
    let mut id = format!("{NAME}.{}", opts.kind.name());
    if opts.policy != TimelinePolicy::Other {
        id += &format!(".{}", opts.policy.name());
    }
    id += &format!(".n{n}");
    if let Some(v) = nice {
        let v: Vec<String> = v.iter().map(i32::to_string).collect();
        id += &format!(".nice{}", v.join("_"));
    }
    id
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

/// The chunk every worker does, as run.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    /// Iterations of the busy loop.
    iterations: u64,
    /// Given with --chunk-iterations rather than sized from --chunk-us.
    given_in_iterations: bool,
    /// Its CPU time, µs: --chunk-us, or what the calibration says the iterations take.
    us: u64,
}

// ---------------------------------------------------------------------------------------
// One round.

/// What the kernel showed of one worker after its settings and before the start.
#[derive(Debug, Clone, Default, PartialEq)]
struct Applied {
    nice: Option<i32>,
    policy: Option<i32>,
    /// `se.load.weight`, as the kernel prints it.
    weight: Option<u64>,
    /// `se.slice`, ns.
    slice_ns: Option<u64>,
    autogroup: Option<String>,
}

/// One round, in ns from its common start.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Round {
    /// Per worker, the time after each chunk.
    pub ends_ns: Vec<Vec<f64>>,
    /// Per worker, the time just before its first chunk: its own first progress record.
    pub starts_ns: Vec<f64>,
    /// Per worker, its CPU time from its start until the first worker finished, ns.
    pub shared_cpu_ns: Vec<f64>,
    /// Per worker, its CPU time per chunk, ns.
    pub chunk_cpu_ns: Vec<f64>,
    /// Per worker, involuntary switches from its start to its last chunk.
    pub involuntary: Vec<u64>,
    /// When the first worker finished.
    pub first_finish_ns: f64,
    applied: Vec<Applied>,
}

impl Round {
    fn from_record(rec: &TraceRecord, go: u64, clock: &Clock, applied: Vec<Applied>) -> Round {
        let ns = |t: u64| clock.ticks_to_ns(t.saturating_sub(go) as f64);
        let chunks = rec.chunks.max(1);
        Round {
            ends_ns: rec
                .ends
                .chunks(chunks)
                .map(|row| row.iter().map(|&t| ns(t)).collect())
                .collect(),
            starts_ns: rec.workers.iter().map(|w| ns(w.start)).collect(),
            shared_cpu_ns: rec
                .workers
                .iter()
                .map(|w| w.cpu_at_first_ns.saturating_sub(w.cpu_start_ns) as f64)
                .collect(),
            chunk_cpu_ns: rec
                .workers
                .iter()
                .map(|w| w.cpu_end_ns.saturating_sub(w.cpu_start_ns) as f64 / chunks as f64)
                .collect(),
            involuntary: rec.workers.iter().map(|w| w.involuntary).collect(),
            first_finish_ns: ns(rec.first_at),
            applied,
        }
    }

    /// Each worker's finish time (its last chunk's end).
    pub fn finishes_ns(&self) -> Vec<f64> {
        self.ends_ns
            .iter()
            .map(|r| r.last().copied().unwrap_or(0.0))
            .collect()
    }

    /// Each worker's latency as the study defined it: from its own first progress record (just
    /// before its first chunk) to its last (after its last chunk), not from the common start.
    pub fn own_latencies_ns(&self) -> Vec<f64> {
        self.finishes_ns()
            .iter()
            .zip(&self.starts_ns)
            .map(|(&f, &s)| f - s)
            .collect()
    }

    /// When the last worker finished.
    pub fn total_ns(&self) -> f64 {
        self.finishes_ns().into_iter().fold(0.0, f64::max)
    }

    /// Each worker's share of the CPU time the workers got while all were runnable, %.
    pub fn shares_pct(&self) -> Vec<f64> {
        let sum: f64 = self.shared_cpu_ns.iter().sum();
        self.shared_cpu_ns
            .iter()
            .map(|&c| if sum > 0.0 { c / sum * 100.0 } else { 0.0 })
            .collect()
    }
}

/// One traced round per worker count, after the timed ones; `None` for each where tracing is
/// off or not to be had (said once in `out`).
fn traced_rounds(
    opts: &Options,
    plan: &Plan,
    ctx: &Context,
    clock: &Clock,
    chunk: &Chunk,
    out: &mut ExperimentOutput,
) -> anyhow::Result<Vec<Option<(Round, kernel::Traced)>>> {
    let mut traced: Vec<Option<(Round, kernel::Traced)>> =
        plan.sizes.iter().map(|_| None).collect();
    if opts.no_kernel_view {
        out.params
            .insert("kernel_view".into(), json!("off (--no-kernel-view)"));
        return Ok(traced);
    }
    // Wake-ups are traced where the waker runs, so every online CPU is traced.
    let mut on = cpuset::online();
    for c in &plan.cpus {
        if !on.contains(c) {
            on.push(*c);
        }
    }
    ctx.progress.start(plan.sizes.len() as u64, NAME);
    for (k, &n) in plan.sizes.iter().enumerate() {
        ctx.check_cancel()?;
        ctx.progress.message(&format!(
            "{n} {}, one more round with the scheduler's tracepoints recorded",
            opts.kind.name()
        ));
        let mut session = match Session::open(&Pass::new(kernel::EVENTS, &on)) {
            Ok((s, notes)) => {
                if k == 0 {
                    out.notes.extend(notes);
                }
                s
            }
            Err(why) => {
                out.params
                    .insert("kernel_view".into(), json!(why.0.clone()));
                out.unavailable.push(oscost_model::case::Unavailable {
                    id: format!("{NAME}.kernel"),
                    description: "who ran when, from the scheduler's tracepoints".into(),
                    reason: why.0,
                });
                ctx.progress.finish();
                return Ok(traced);
            }
        };
        let (round, t) = run_round(opts, plan, ctx, clock, n, chunk, Some(&mut session))
            .with_context(|| {
                format!("{} (traced round)", case_id(opts, n, plan.nice.as_deref()))
            })?;
        traced[k] = t.map(|t| (round, t));
        ctx.progress.inc(1);
    }
    ctx.progress.finish();
    out.params.insert("kernel_view".into(), json!("traced"));
    Ok(traced)
}

#[allow(clippy::too_many_arguments)]
fn run_round(
    opts: &Options,
    plan: &Plan,
    ctx: &Context,
    clock: &Clock,
    n: usize,
    chunk: &Chunk,
    mut session: Option<&mut Session>,
) -> anyhow::Result<(Round, Option<kernel::Traced>)> {
    let board = Arc::new(TraceBoard::new(
        opts.kind,
        n,
        opts.chunks,
        chunk.iterations,
        clock.clone(),
    )?);
    let halt = Arc::clone(&board);
    let mut team = Team::new(opts.kind, n, 0, move || halt.halt());
    let mask = CpuMask::new(&plan.cpus)?;
    for i in 0..n {
        team.spawn(Some(&mask), &board, i)?;
    }
    team.watch()?;
    let deadline = Instant::now() + SETUP_DEADLINE;
    while board.ready() < n {
        team.check()?;
        ctx.check_cancel()?;
        if Instant::now() > deadline {
            anyhow::bail!(
                "the workers did not reach the start within {} s",
                SETUP_DEADLINE.as_secs()
            );
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let mut applied = Vec::with_capacity(n);
    for i in 0..n {
        let tid = board.tid(i);
        apply(opts, plan, i, tid)?;
        applied.push(read_applied(opts.kind, tid));
    }
    if let Some(s) = session.as_deref_mut() {
        s.start(clock)?;
    }
    let go = board.go();
    let deadline = Instant::now()
        + SETUP_DEADLINE.max(Duration::from_micros(
            (opts.chunks as u64 * chunk.us * n as u64).saturating_mul(20),
        ));
    while !board.wait_done(Duration::from_millis(50)) {
        team.check()?;
        ctx.check_cancel()?;
        if Instant::now() > deadline {
            anyhow::bail!("the workers did not finish their chunks in time");
        }
    }
    // On an error above, the caller's session is dropped, which closes its rings.
    let raw = session.map(|s| s.stop_raw(clock)).transpose()?;
    team.check()?;
    let rec = board.record();
    team.finish()?;
    let traced = raw.map(|raw| kernel::Traced {
        tids: (0..n).map(|i| i64::from(board.tid(i))).collect(),
        events: kernel::decode(&raw, |t| clock.ticks_to_ns(t - go as f64)),
        lost: raw.lost,
        unsampled: raw.unsampled,
    });
    Ok((Round::from_record(&rec, go, clock, applied), traced))
}

/// Gives worker `i` (task `tid`) its nice value and the policy.
fn apply(opts: &Options, plan: &Plan, i: usize, tid: i32) -> anyhow::Result<()> {
    if let Some(nice) = plan.nice.as_ref().and_then(|v| v.get(i)).copied() {
        trace::set_nice_of(tid, nice).map_err(|e| {
            let inherited = oscost_sys::nice().unwrap_or(0);
            let hint = if nice < inherited {
                format!(
                    " (the workers inherit nice {inherited}; going below it needs root or \
                     CAP_SYS_NICE: use values of {inherited} or more)"
                )
            } else {
                String::new()
            };
            anyhow::anyhow!(
                "--worker-nice: worker {} may not get nice {nice}: {e}{hint}",
                i + 1
            )
        })?;
    }
    let p = opts.policy.sys();
    // Left alone when already in force: leaving SCHED_IDLE (inherited) would need privilege.
    if trace::scheduler_of(tid).ok() == Some(p.number()) {
        return Ok(());
    }
    trace::set_scheduler_of(tid, p).map_err(|e| {
        let hint = if p.is_realtime() {
            "; real-time policies need root or CAP_SYS_NICE (or an RLIMIT_RTPRIO of at least \
             1): use --policy other, batch or idle"
        } else {
            ""
        };
        anyhow::anyhow!(
            "--policy {}: the kernel refused {} for worker {}: {e}{hint}",
            opts.policy.name(),
            p.kernel_name(),
            i + 1
        )
    })
}

/// The scheduler's view of task `tid`: `/proc/<pid>/sched` for a process, the thread's own
/// file for a thread.
fn read_applied(kind: Kind, tid: i32) -> Applied {
    let (sched, autogroup) = match kind {
        Kind::Processes => (
            PathBuf::from(format!("/proc/{tid}/sched")),
            read_trim(Path::new(&format!("/proc/{tid}/autogroup"))),
        ),
        Kind::Threads => (PathBuf::from(format!("/proc/self/task/{tid}/sched")), None),
    };
    let text = std::fs::read_to_string(sched).unwrap_or_default();
    let field = |name: &str| -> Option<f64> {
        text.lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(name))
            .and_then(|l| l.split(':').nth(1))
            .and_then(|v| v.trim().parse().ok())
    };
    Applied {
        nice: trace::nice_of(tid).ok(),
        policy: field("policy").map(|v| v as i32),
        weight: field("se.load.weight").map(|v| v as u64),
        slice_ns: field("se.slice").map(|v| v as u64),
        autogroup,
    }
}

// ---------------------------------------------------------------------------------------
// The chunk.

/// The busy loop's speed on the workers' CPU.
struct Calibration {
    iterations: u64,
    ns_per_iteration: f64,
}

/// Times the busy loop on `cpu` (the measuring thread pinned there meanwhile) and sizes a
/// chunk to `target_ns` of CPU time. The loop is timed by the thread's own CPU clock, which
/// stops while another task has the CPU, so a busy machine does not shrink the chunk; the
/// fastest of five timings counts.
fn calibrate(target_ns: f64, cpu: usize) -> anyhow::Result<Calibration> {
    let _pin = AffinityRestore::pin(&[cpu])?;
    let time = |n: u64| -> anyhow::Result<f64> {
        let c0 = trace::thread_cpu_ns()?;
        trace::busy(n);
        Ok(trace::thread_cpu_ns()?.saturating_sub(c0) as f64)
    };
    time(10_000)?;
    let mut n: u64 = 10_000;
    while time(n)? < 2e6 && n < 1 << 40 {
        n *= 2;
    }
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        best = best.min(time(n)?);
    }
    let ns_per_iteration = best / n as f64;
    anyhow::ensure!(
        ns_per_iteration.is_finite() && ns_per_iteration > 0.0,
        "calibrating the chunk: the thread's CPU clock did not move"
    );
    Ok(Calibration {
        iterations: (target_ns / ns_per_iteration).round().max(1.0) as u64,
        ns_per_iteration,
    })
}

// ---------------------------------------------------------------------------------------
// The kernel's rules, as this machine shows them.

/// The base slice and where it was read: the debugfs tunable, else the slice the kernel gave
/// the workers (`se.slice`), else the kernel's default rule.
fn base_slice(rounds: &[Vec<Round>]) -> Option<(u64, String)> {
    let debugfs = "/sys/kernel/debug/sched/base_slice_ns";
    if let Some(v) = read_trim(Path::new(debugfs)).and_then(|s| s.parse().ok()) {
        return Some((v, debugfs.into()));
    }
    let seen = rounds
        .iter()
        .flatten()
        .flat_map(|r| r.applied.iter())
        .find_map(|a| a.slice_ns);
    if let Some(v) = seen {
        return Some((v, "se.slice of the workers in /proc/<pid>/sched".into()));
    }
    let release = read_trim(Path::new("/proc/sys/kernel/osrelease"))?;
    let cpus = cpuset::online().len();
    default_base_slice_ns(parse_release(&release)?, cpus).map(|v| {
        (
            v,
            format!(
                "the kernel's default for Linux {release} on {cpus} CPUs (not read: neither \
                 debugfs nor se.slice is available)"
            ),
        )
    })
}

fn ms(ns: f64) -> String {
    format!("{:.2} ms", ns / 1e6)
}

// ---------------------------------------------------------------------------------------
// The cases.

fn p95(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    oscost_stats::percentile(&s, 95.0)
}

fn samples(ns: Vec<f64>, clock: &Clock, per_sample: u64) -> Samples {
    Samples {
        per_op_ticks: ns.iter().map(|&v| clock.ns_to_ticks(v)).collect(),
        per_op_ns: ns,
        iterations_per_sample: per_sample,
        loop_overhead_ns: 0.0,
    }
}

/// The case of `n` workers (total time / N per round, with every figure of the view), its
/// latency case (every worker's finish time in every round) and its own-latency case (every
/// worker's time from its own start to its finish in every round, the study's latency).
fn cases(
    opts: &Options,
    plan: &Plan,
    clock: &Clock,
    n: usize,
    rounds: &[Round],
    rule: &SliceRule,
    chunk: &Chunk,
) -> [Case; 3] {
    let id = case_id(opts, n, plan.nice.as_deref());
    let kind = opts.kind.name();
    let cpus = cpuset::format(&plan.cpus);
    let totals: Vec<f64> = rounds.iter().map(Round::total_ns).collect();
    let chunk_text = if chunk.given_in_iterations {
        format!(
            "{} iterations (about {} µs here)",
            chunk.iterations, chunk.us
        )
    } else {
        format!("{} µs", opts.chunk_us)
    };
    let mut main = Case::new(
        id.clone(),
        format!(
            "{n} {kind} of {} chunks of {chunk_text} on CPU {cpus}: total time / {n} (1 / \
             throughput)",
            opts.chunks
        ),
        "worker",
        samples(
            totals.iter().map(|t| t / n as f64).collect(),
            clock,
            n as u64,
        ),
    )
    .param("workers", n as u64)
    .param("kind", kind)
    .param("policy", opts.policy.name())
    .param("chunks", opts.chunks as u64)
    .param("cpus", json!(plan.cpus))
    .param("rounds", rounds.len() as u64);
    // A chunk given in iterations has no time asked for; its count is the parameter.
    if chunk.given_in_iterations {
        main.params
            .insert("chunk_iterations".into(), json!(chunk.iterations));
    } else {
        main.params.insert("chunk_us".into(), json!(opts.chunk_us));
    }
    let nice: Vec<Option<i32>> = rounds
        .first()
        .map(|r| r.applied.iter().map(|a| a.nice).collect())
        .unwrap_or_default();
    main.params.insert("nice".into(), json!(nice));
    main.params
        .insert("expected_slice".into(), json!(rule.how.clone()));
    let c = &mut main.counters;
    c.insert("total_ns".into(), oscost_stats::median(&totals));
    c.insert(
        "throughput_workers_per_s".into(),
        oscost_stats::median(
            &totals
                .iter()
                .map(|t| n as f64 / t * 1e9)
                .collect::<Vec<_>>(),
        ),
    );
    let finishes: Vec<Vec<f64>> = rounds.iter().map(Round::finishes_ns).collect();
    c.insert(
        "latency_avg_ns".into(),
        oscost_stats::median(
            &finishes
                .iter()
                .map(|f| f.iter().sum::<f64>() / n as f64)
                .collect::<Vec<_>>(),
        ),
    );
    for w in 0..n {
        let of = |f: &Vec<f64>| f.get(w).copied().unwrap_or(f64::NAN);
        c.insert(
            format!("latency_worker{}_ns", w + 1),
            oscost_stats::median(&finishes.iter().map(of).collect::<Vec<_>>()),
        );
    }
    c.insert(
        "chunk_cpu_ns".into(),
        oscost_stats::median(
            &rounds
                .iter()
                .flat_map(|r| r.chunk_cpu_ns.iter().copied())
                .collect::<Vec<_>>(),
        ),
    );
    // Slices, pooled over the rounds; on several CPUs the workers run side by side and the
    // trace's interleaving says nothing about turns.
    let one_cpu = plan.cpus.len() == 1;
    let slices: Vec<f64> = if one_cpu {
        rounds.iter().flat_map(|r| slices_ns(&r.ends_ns)).collect()
    } else {
        Vec::new()
    };
    c.insert("turns_counted".into(), slices.len() as f64);
    if !slices.is_empty() {
        c.insert("slice_median_ns".into(), oscost_stats::median(&slices));
        c.insert("slice_p95_ns".into(), p95(&slices));
    }
    if let Some(e) = rule.expected_ns {
        c.insert("expected_slice_ns".into(), e);
    }
    add_shares(&mut main, opts, plan, n, rounds, rule);
    add_checks(&mut main, opts, n, rounds, one_cpu);
    main.series.push(trace_series(rounds, &totals));
    let mut finish_all: Vec<f64> = finishes.into_iter().flatten().collect();
    finish_all.retain(|v| v.is_finite());
    let latency = Case::new(
        format!("{id}.latency"),
        format!(
            "{n} {kind} on CPU {cpus}: each worker's finish time from the common start (its \
             latency)"
        ),
        "worker",
        samples(finish_all, clock, 1),
    )
    .param("workers", n as u64)
    .param("kind", kind)
    .param("policy", opts.policy.name());
    [
        main,
        latency,
        own_latency_case(opts, clock, n, rounds, &id, &cpus),
    ]
}

/// The study's latency: each worker's time from its own first progress record (just before
/// its first chunk) to its last; samples every worker of every round, counters the average
/// over the workers and each worker's, medians over the rounds.
fn own_latency_case(
    opts: &Options,
    clock: &Clock,
    n: usize,
    rounds: &[Round],
    id: &str,
    cpus: &str,
) -> Case {
    let kind = opts.kind.name();
    let own: Vec<Vec<f64>> = rounds.iter().map(Round::own_latencies_ns).collect();
    let mut all: Vec<f64> = own.iter().flatten().copied().collect();
    all.retain(|v| v.is_finite());
    let mut case = Case::new(
        format!("{id}.own_latency"),
        format!(
            "{n} {kind} on CPU {cpus}: each worker's time from its own start (before its first \
             chunk) to its finish (the study's latency)"
        ),
        "worker",
        samples(all, clock, 1),
    )
    .param("workers", n as u64)
    .param("kind", kind)
    .param("policy", opts.policy.name());
    let c = &mut case.counters;
    c.insert(
        "own_latency_avg_ns".into(),
        oscost_stats::median(
            &own.iter()
                .map(|v| v.iter().sum::<f64>() / n as f64)
                .collect::<Vec<_>>(),
        ),
    );
    for w in 0..n {
        let of = |v: &Vec<f64>| v.get(w).copied().unwrap_or(f64::NAN);
        c.insert(
            format!("own_latency_worker{}_ns", w + 1),
            oscost_stats::median(&own.iter().map(of).collect::<Vec<_>>()),
        );
    }
    case
}

/// Measured shares (median over the rounds) beside the predicted ones, checked ±2 points.
fn add_shares(
    case: &mut Case,
    opts: &Options,
    plan: &Plan,
    n: usize,
    rounds: &[Round],
    rule: &SliceRule,
) {
    if n < 2 {
        return;
    }
    let shares: Vec<Vec<f64>> = rounds.iter().map(Round::shares_pct).collect();
    let measured: Vec<f64> = (0..n)
        .map(|w| oscost_stats::median(&shares.iter().map(|s| s[w]).collect::<Vec<_>>()))
        .collect();
    let common =
        oscost_stats::median(&rounds.iter().map(|r| r.first_finish_ns).collect::<Vec<_>>());
    case.counters.insert("all_runnable_ns".into(), common);
    for (w, m) in measured.iter().enumerate() {
        case.counters
            .insert(format!("share_worker{}_pct", w + 1), *m);
    }
    let nice: Option<Vec<i32>> = match &plan.nice {
        Some(v) => Some(v.clone()),
        None => rounds
            .first()
            .and_then(|r| r.applied.iter().map(|a| a.nice).collect()),
    };
    let predicted = if plan.cpus.len() > 1 {
        case.warnings.push(format!(
            "no share is predicted: the workers had {} CPUs (--spread), and the weights share \
             one CPU",
            plan.cpus.len()
        ));
        None
    } else {
        nice.as_deref()
            .and_then(|v| predicted_shares(opts.policy.rule(), v))
    };
    let Some(predicted) = predicted else {
        return;
    };
    let mut miss: f64 = 0.0;
    for (w, (&p, &m)) in predicted.iter().zip(&measured).enumerate() {
        case.counters
            .insert(format!("share_predicted_worker{}_pct", w + 1), p);
        miss = miss.max((m - p).abs());
    }
    // The kernel keeps each share within about a slice of its weight at any moment, so a share
    // over a few slices says nothing about the weights: it is compared only over enough.
    let slice = rule.expected_ns.filter(|s| *s > 0.0);
    if let Some(slice) = slice.filter(|s| common < MIN_SLICES_FOR_SHARES * s) {
        case.warnings.push(format!(
            "shares not compared with the weights: the workers were all runnable for only {} \
             ({:.1} slices of {}), and a share says something about the weights only over at \
             least {MIN_SLICES_FOR_SHARES:.0} slices; give more --chunks or a longer --chunk-us",
            ms(common),
            common / slice,
            ms(slice)
        ));
        return;
    }
    let pairs: Vec<String> = measured
        .iter()
        .zip(&predicted)
        .map(|(m, p)| format!("{m:.1} % vs {p:.1} %"))
        .collect();
    case.checks.push(Check::near(
        "largest_share_miss_pct",
        0.0,
        miss,
        SHARE_TOLERANCE_PCT,
        &format!(
            "the largest gap, in percentage points, between a worker's measured and predicted \
             CPU share ({}). Measured: its CPU time from its start until the first worker \
             finished (every CPU clock read at that instant), over all the workers' (median of \
             {} rounds); predicted: its weight under {} with nice {:?} (sched_prio_to_weight) \
             over the sum; bound {SHARE_TOLERANCE_PCT} points",
            pairs.join(", "),
            rounds.len(),
            opts.policy.sys().kernel_name(),
            nice.as_deref().unwrap_or_default()
        ),
    ));
    let unequal = predicted.iter().any(|p| (p - predicted[0]).abs() > 1e-9);
    // Equal weights take turns slice by slice; unequal ones can be a slice off at the end.
    if let Some(slice) = slice.filter(|_| unequal) {
        let spread_pct = slice / common * 100.0;
        if spread_pct > SHARE_TOLERANCE_PCT {
            case.warnings.push(format!(
                "the workers were all runnable for only {} ({:.0} slices of {}): shares over \
                 so few slices can miss the kernel's weights by about a slice ({spread_pct:.1} \
                 points); for a ±{SHARE_TOLERANCE_PCT}-point comparison give more --chunks \
                 (e.g. --chunks 500)",
                ms(common),
                common / slice,
                ms(slice)
            ));
        }
    }
}

/// The mechanism checks: the kernel shows every worker with the policy and weight asked
/// for, in one autogroup, and counted at least every switch the trace shows.
fn add_checks(case: &mut Case, opts: &Options, n: usize, rounds: &[Round], one_cpu: bool) {
    let p = opts.policy.sys();
    let readings: Vec<&Applied> = rounds.iter().flat_map(|r| r.applied.iter()).collect();
    if readings.iter().all(|a| a.policy.is_some()) {
        let expected_weight = |a: &Applied| -> Option<u64> {
            match p {
                Sched::Idle => Some(u64::from(IDLE_WEIGHT)),
                Sched::Other | Sched::Batch => a.nice.and_then(weight).map(u64::from),
                Sched::Rr | Sched::Fifo => None,
            }
        };
        // The kernel prints weights scaled by 1024 on 64-bit kernels.
        let weight_ok = |a: &Applied| match (expected_weight(a), a.weight) {
            (None, _) => true,
            (Some(e), Some(w)) => w == e || w == e << 10,
            (Some(_), None) => false,
        };
        let ok = readings
            .iter()
            .filter(|a| a.policy == Some(p.number()) && weight_ok(a))
            .count();
        case.checks.push(Check::near(
            "workers_as_requested",
            readings.len() as f64,
            ok as f64,
            0.0,
            &format!(
                "workers whose `policy` and `se.load.weight` in /proc/<pid>/sched, read after \
                 their settings and before the start, are {} (policy {}) and the weight of their \
                 nice value ({} readings: every worker of every round)",
                p.kernel_name(),
                p.number(),
                readings.len()
            ),
        ));
    } else {
        case.warnings.push(
            "the workers' policy and weight could not be read from /proc/<pid>/sched, so \
             whether the kernel applied them is not checked"
                .into(),
        );
    }
    let groups: std::collections::BTreeSet<&str> = readings
        .iter()
        .filter_map(|a| a.autogroup.as_deref())
        .collect();
    if opts.kind == Kind::Processes && !groups.is_empty() {
        case.checks.push(Check::near(
            "autogroups_of_workers",
            1.0,
            groups.len() as f64,
            0.0,
            "distinct /proc/<pid>/autogroup lines of the workers (one session, one autogroup, \
             so nice values compete with each other instead of being hidden inside groups)",
        ));
    }
    let shown: usize = rounds.iter().map(|r| preemptions(&r.ends_ns)).sum();
    let counted: u64 = rounds.iter().flat_map(|r| r.involuntary.iter()).sum();
    if n >= 2 && one_cpu {
        case.counters
            .insert("involuntary_switches".into(), counted as f64);
        case.checks.push(Check::at_least(
            "involuntary_switches_vs_turns",
            shown as f64,
            counted as f64,
            0.0,
            &format!(
                "involuntary switches the kernel counted (getrusage nivcsw of every worker from \
                 its start to its last chunk) against the switches between workers the traces \
                 show ({shown} over {} rounds): each turn that did not end its worker is a \
                 preemption, so the count must be at least that",
                rounds.len()
            ),
        ));
    }
}

/// The trace of the median round (by total time): (elapsed_ns, worker, chunk) in time order,
/// workers and chunks counted from 1, times in whole ns.
fn trace_series(rounds: &[Round], totals: &[f64]) -> Series {
    let mut order: Vec<usize> = (0..rounds.len()).collect();
    order.sort_by(|&a, &b| totals[a].total_cmp(&totals[b]));
    let pick = order.get(order.len().saturating_sub(1) / 2).copied();
    let mut points: Vec<Vec<f64>> = Vec::new();
    if let Some(r) = pick.and_then(|i| rounds.get(i)) {
        for (w, row) in r.ends_ns.iter().enumerate() {
            for (c, &t) in row.iter().enumerate() {
                points.push(vec![t.round(), (w + 1) as f64, (c + 1) as f64]);
            }
        }
        points.sort_by(|a, b| a[0].total_cmp(&b[0]).then(a[1].total_cmp(&b[1])));
    }
    Series {
        name: "trace".into(),
        columns: vec!["elapsed_ns".into(), "worker".into(), "chunk".into()],
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::testing;
    use oscost_model::case::SINGLE_THREAD_CHECK;

    fn opts(args: &[&str]) -> Options {
        use clap::{Args, FromArgMatches};
        let cmd = Options::augment_args(clap::Command::new("timeline").no_binary_name(true));
        Options::from_arg_matches(&cmd.try_get_matches_from(args).unwrap()).unwrap()
    }

    fn with_ctx<T>(f: impl FnOnce(&Context) -> T) -> T {
        let cpu = oscost_sys::affinity().unwrap()[0];
        testing::with_ctx(testing::tiny_sampler(), vec![cpu], false, f)
    }

    #[test]
    fn bad_options_are_refused_before_anything_starts() {
        with_ctx(|ctx| {
            let e = |args: &[&str]| run(&opts(args), ctx).unwrap_err().to_string();
            assert_eq!(
                e(&["--workers", "2", "--worker-nice", "0,5,7"]),
                "--worker-nice gives 3 values for 2 workers: give one per worker (e.g. \
                 --workers 2 --worker-nice 0,5)"
            );
            assert!(e(&["--worker-nice", "0,5", "--workers", "1,2"])
                .starts_with("--worker-nice needs a single --workers value"));
            assert!(e(&["--rr-slice-ms", "10"]).starts_with("--rr-slice-ms sets"));
        });
        use clap::{Args, FromArgMatches as _};
        let cmd = Options::augment_args(clap::Command::new("timeline").no_binary_name(true));
        for bad in [
            &["--workers", "0"][..],
            &["--chunks", "0"],
            &["--worker-nice", "0,20"],
            &["--worker-nice", "-21"],
        ] {
            let err = cmd.clone().try_get_matches_from(bad);
            assert!(err.is_err(), "{bad:?} accepted");
        }
        let o = opts(&["--worker-nice", "-5,0"]);
        assert_eq!(o.worker_nice, vec![-5, 0]);
        let _ = Options::from_arg_matches(&cmd.try_get_matches_from(["--rounds", "2"]).unwrap());
    }

    #[test]
    fn a_tiny_run_gives_a_whole_trace_and_self_consistent_figures() {
        with_ctx(|ctx| {
            for kind in ["processes", "threads"] {
                let o = opts(&[
                    "--workers",
                    "1,3",
                    "--chunks",
                    "12",
                    "--chunk-us",
                    "200",
                    "--rounds",
                    "2",
                    "--kind",
                    kind,
                ]);
                let out = run(&o, ctx).unwrap();
                let ids: Vec<&str> = out
                    .cases
                    .iter()
                    .map(|c| c.id.as_str())
                    .filter(|id| !id.ends_with(".kernel"))
                    .collect();
                let n3 = format!("timeline.{kind}.n3");
                traced_round_is_consistent(&out, kind);
                assert_eq!(
                    ids,
                    vec![
                        format!("timeline.{kind}.n1"),
                        format!("timeline.{kind}.n1.latency"),
                        format!("timeline.{kind}.n1.own_latency"),
                        n3.clone(),
                        format!("{n3}.latency"),
                        format!("{n3}.own_latency")
                    ]
                );
                let c = out.cases.iter().find(|c| c.id == n3).unwrap();
                assert_eq!(c.samples.per_op_ns.len(), 2);
                let s = &c.series[0];
                assert_eq!(s.columns, ["elapsed_ns", "worker", "chunk"]);
                assert_eq!(s.points.len(), 3 * 12);
                for w in 1..=3 {
                    let row: Vec<&Vec<f64>> =
                        s.points.iter().filter(|p| p[1] == w as f64).collect();
                    assert_eq!(row.len(), 12);
                    assert!(row
                        .windows(2)
                        .all(|p| p[0][0] <= p[1][0] && p[0][2] < p[1][2]));
                }
                let shares: f64 = (1..=3)
                    .map(|w| c.counters[&format!("share_worker{w}_pct")])
                    .sum();
                // Medians of shares need not add up exactly; each round's do.
                assert!((shares - 100.0).abs() < 20.0, "{shares}");
                let tp = c.counters["throughput_workers_per_s"];
                let total = c.counters["total_ns"];
                assert!((tp - 3.0 / total * 1e9).abs() / tp < 0.5, "{tp} {total}");
                assert!(c.counters["latency_avg_ns"] <= total * 1.0001);
                assert!(c
                    .checks
                    .iter()
                    .any(|k| k.name == "workers_as_requested" && k.passed));
                assert!(c
                    .checks
                    .iter()
                    .any(|k| k.name == "involuntary_switches_vs_turns" && k.passed));
                assert!(!c.checks.iter().any(|k| k.name == SINGLE_THREAD_CHECK));
                let lat = out
                    .cases
                    .iter()
                    .find(|c| c.id == format!("{n3}.latency"))
                    .unwrap();
                assert_eq!(lat.samples.per_op_ns.len(), 6);
                // The study's latency starts at each worker's own start, never before the
                // common one: per worker it is at most the latency from the common start.
                let own = out
                    .cases
                    .iter()
                    .find(|c| c.id == format!("{n3}.own_latency"))
                    .unwrap();
                assert_eq!(own.unit, "worker");
                assert_eq!(own.samples.per_op_ns.len(), 6);
                assert!(own.samples.per_op_ns.iter().all(|&v| v > 0.0));
                for w in 1..=3 {
                    let mine = own.counters[&format!("own_latency_worker{w}_ns")];
                    let common = c.counters[&format!("latency_worker{w}_ns")];
                    assert!(
                        mine > 0.0 && mine <= common,
                        "worker {w}: {mine} > {common}"
                    );
                }
                assert!(own.counters["own_latency_avg_ns"] <= c.counters["latency_avg_ns"]);
            }
        });
    }

    /// The traced round gives a `.kernel` case per worker count whose figures agree with the
    /// workers' own, or one line saying why there is none.
    fn traced_round_is_consistent(out: &ExperimentOutput, kind: &str) {
        let kernel: Vec<&Case> = out
            .cases
            .iter()
            .filter(|c| c.id.ends_with(".kernel"))
            .collect();
        if out.params["kernel_view"] != "traced" {
            assert!(kernel.is_empty());
            assert_eq!(out.unavailable.len(), 1, "{out:?}");
            assert!(!out.unavailable[0].reason.contains('\n'));
            return;
        }
        assert_eq!(
            kernel.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            [
                format!("timeline.{kind}.n1.kernel"),
                format!("timeline.{kind}.n3.kernel")
            ]
        );
        for c in kernel {
            let n = c.params["workers"].as_u64().unwrap() as usize;
            assert_eq!(c.samples.per_op_ns.len(), n);
            // The kernel's run time and the worker's CPU clock are two counts of one thing.
            for w in 1..=n {
                let run = c.counters[&format!("run_worker{w}_ns")];
                let cpu = c.counters[&format!("cpu_worker{w}_ns")];
                assert!(run > 0.5 * cpu && run < 2.0 * cpu, "{run} {cpu} {c:?}");
            }
            // A record lost now and then (the kernel's ring) is said on the case, never hidden.
            if c.counters["trace_records_lost"] > 0.0 {
                assert!(
                    c.warnings
                        .iter()
                        .any(|w| w.contains("trace records were lost")),
                    "{c:?}"
                );
            }
            let runs = c.series.iter().find(|s| s.name == "kernel_runs").unwrap();
            assert!(runs.points.iter().any(|p| p[2] >= 1.0));
            assert!(runs.points.iter().all(|p| p[0] <= p[1]));
            let trace = c.series.iter().find(|s| s.name == "trace").unwrap();
            assert_eq!(trace.points.len(), n * 12);
            assert!(c.counters["wakeups"] >= 1.0, "{c:?}");
        }
    }

    #[test]
    fn no_kernel_view_means_no_traced_round() {
        with_ctx(|ctx| {
            let o = opts(&[
                "--workers",
                "2",
                "--chunks",
                "3",
                "--chunk-us",
                "100",
                "--rounds",
                "1",
                "--no-kernel-view",
            ]);
            let out = run(&o, ctx).unwrap();
            assert!(out.cases.iter().all(|c| !c.id.ends_with(".kernel")));
            assert!(out.unavailable.is_empty());
            assert_eq!(out.params["kernel_view"], "off (--no-kernel-view)");
        });
    }

    #[test]
    fn a_chunk_in_iterations_is_run_as_given() {
        with_ctx(|ctx| {
            let o = opts(&[
                "--workers",
                "1",
                "--chunks",
                "4",
                "--chunk-iterations",
                "20000",
                "--rounds",
                "1",
            ]);
            let out = run(&o, ctx).unwrap();
            assert_eq!(out.params["chunk_iterations"], json!(20000));
            let c = &out.cases[0];
            assert_eq!(c.params["chunk_iterations"], json!(20000));
            assert!(!c.params.contains_key("chunk_us"));
            assert!(
                c.description.contains("20000 iterations"),
                "{}",
                c.description
            );
        });
        // Alone, the option gives the study's chunk.
        assert_eq!(
            opts(&["--chunk-iterations"]).chunk_iterations,
            Some(100_000)
        );
        assert_eq!(opts(&[]).chunk_iterations, None);
        use clap::Args;
        let cmd = Options::augment_args(clap::Command::new("timeline").no_binary_name(true));
        for bad in [
            &["--chunk-iterations", "0"][..],
            &["--chunk-iterations", "100", "--chunk-us", "200"],
        ] {
            assert!(cmd.clone().try_get_matches_from(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn nice_values_show_in_the_id_and_in_the_kernel() {
        with_ctx(|ctx| {
            let inherited = oscost_sys::nice().unwrap();
            let a = (inherited + 1).min(19);
            let b = (inherited + 4).min(19);
            let o = opts(&[
                "--worker-nice",
                &format!("{a},{b}"),
                "--chunks",
                "5",
                "--chunk-us",
                "100",
                "--rounds",
                "1",
            ]);
            let out = run(&o, ctx).unwrap();
            let c = &out.cases[0];
            assert_eq!(c.id, format!("timeline.processes.n2.nice{a}_{b}"));
            assert_eq!(c.params["nice"], json!([a, b]));
            let k = c
                .checks
                .iter()
                .find(|k| k.name == "workers_as_requested")
                .unwrap();
            assert!(k.passed, "{k:?}");
            assert!(c.counters.contains_key("share_predicted_worker2_pct"));
        });
    }
}
