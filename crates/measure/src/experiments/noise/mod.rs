//! `noise`: what interrupts a busy CPU, how often and for how long (the fixed-time-quantum and
//! "selfish detour" approach of the OS-noise benchmarks: Sottile and Minnich, "Analysis of
//! microbenchmarks for performance tuning of clusters", 2004; Beckman et al., "The influence of
//! operating systems on the performance of collective operations at extreme scale", 2006;
//! Linux's osnoise tracer).
//!
//! One thread per selected CPU, pinned, reads the counter in a tight loop and stores every gap
//! between two readings above a threshold into memory prepared beforehand. Per CPU the gaps
//! give the interruption rate, their lengths, the share of the CPU lost, a histogram, the
//! dominant period (the kernel's tick shows up as one) and a timeline; the local timer
//! interrupts the kernel counted over the run (`/proc/interrupts`) and the steal time are read
//! beside them, and the rate of the periodic gaps is checked against the local timer's.

use crate::context::{Cancelled, Context};
use crate::cpuset::{self, AffinityRestore};
use crate::engine::clock::{kernel_hz, real_clock};
use crate::engine::spin::{analyse, default_threshold, iteration_ticks, ticks, CpuNoise, CpuSpin};
use crate::engine::{self, fmt_ns};
use crate::env::parse::parse_proc_stat;
use crate::kview::ViewHelp as _;
use anyhow::Context as _;
use oscost_model::case::{Case, Check, ExperimentOutput, Samples, Series, Unavailable};
use oscost_model::{Message, MessageKind};
use oscost_stats::periodic::log2_histogram;
use oscost_sys::clock::Clock;
use oscost_sys::spin::{gap_buffer, record_gaps, Gap, Spin};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

mod kernel;

/// Subcommand name and id prefix.
pub const NAME: &str = oscost_model::ids::noise::NAME;

const DEFAULT_DURATION_NS: u64 = 5_000_000_000;
const QUICK_DURATION_NS: u64 = 200_000_000;
const DEFAULT_MAX_GAPS: usize = 1_000_000;
/// More gaps than this per CPU would only make a typo eat the memory (16 bytes each).
const MAX_MAX_GAPS: usize = 100_000_000;
/// Gap lengths handed up as a case's samples at most (evenly spread over all of them): the
/// bootstrap interval of the median costs time in proportion; every figure in the counters
/// comes from all stored gaps.
const MAX_SAMPLES: usize = 20_000;
/// Points of the timeline series at most (the first gaps of the run).
const MAX_TIMELINE: usize = 20_000;
/// The periodic gaps' rate must be within this of the local timer's.
const RATE_TOLERANCE: f64 = 0.10;

/// Options of `oscost noise`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
#[command(view_help(
    "No traced pass: skip the second spin that matches each gap with the kernel's tracepoints",
    "How the traced pass records the kernel's tracepoints (default: the lightest this kernel \
     allows, bpf then ftrace then perf); one refused is said, and the next one used"
))]
pub struct Options {
    /// How long each CPU spins, e.g. `5s`, `500ms` [default: 5s, or 200ms with --quick]
    #[arg(long = "duration", value_name = "TIME", value_parser = engine::parse_duration)]
    pub duration_ns: Option<u64>,

    /// Record gaps longer than this between two counter readings [default: 10 iterations of
    /// the loop, at least 1000 ns]
    #[arg(long, value_name = "NS", value_parser = parse_threshold)]
    pub threshold_ns: Option<u64>,

    /// Gaps stored per CPU at most, in memory prepared before the run (16 bytes each); more
    /// are counted but not stored
    #[arg(long, default_value_t = DEFAULT_MAX_GAPS, value_name = "N", value_parser = parse_max_gaps)]
    pub max_gaps: usize,

    /// `--no-kernel-view` and `--trace-with`, worded for this experiment by `view_help` above
    #[command(flatten)]
    #[serde(flatten)]
    pub kernel_view: crate::kview::ViewArgs,
}

fn parse_threshold(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=1_000_000_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}` is not a threshold in ns from 1 to 1000000000"
        )),
    }
}

fn parse_max_gaps(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_MAX_GAPS).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}` is not a number of gaps from 1 to {MAX_MAX_GAPS}"
        )),
    }
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Noise;
    const SUMMARY: &'static str =
        "What interrupts a busy CPU, how often and for how long, beside the kernel's counts";
    const ABOUT: &'static str =
        "What interrupts a busy CPU, how often and for how long, beside the kernel's counts.

One thread per CPU of the set (--cpus), pinned, reads the cycle counter in a tight loop for \
--duration and stores every gap between two readings longer than a threshold (by default ten \
iterations of the loop, at least 1 µs) into memory prepared beforehand. Per CPU: \
interruptions per second, their length (median, p99, max), the share of the CPU lost, a \
histogram, the dominant period (the kernel's tick shows up as one) and its gaps' median length \
(what one tick costs a running program), and a timeline. Beside them: the local timer \
interrupts the kernel counted over the run (/proc/interrupts) and the steal time \
(/proc/stat); the rate of the gaps at one phase of the kernel's tick is checked against the \
local timer's.

Then, where the kernel's tracepoints can be read (root, or perf_event_paranoid -1), the loop \
spins again as long with them recorded (a separate pass, so tracing never touches the first \
one's figures): each gap is matched with the kernel events inside it (the local timer, each \
other interrupt by name, each softirq by kind, another task by name), and what \
no event explains is shown as outside the kernel's view. The local timer's rate is counted \
from the kernel's own events and checked against /proc/interrupts; what tracing cost is the \
share of the CPU lost traced against untraced. The tracepoints are recorded by the lightest mechanism this kernel allows (BPF programs on raw \
tracepoints, else an ftrace instance of oscost's own, else perf_event_open; --trace-with puts one \
first), named under the table with what it cost: the same measure untraced and traced. Without permission: one line says what is \
missing, and every other figure still comes.\n\nTakes about 12 s (two spins of 5 s, the second traced); --quick about 1.5 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    const QUICK_SUITE_ARGS: &'static [&'static str] = &["--no-kernel-view"];
    const SUITE_ARGS: &'static [&'static str] = &["--duration", "1s"];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }
}

/// Spins on every CPU of `cpus` at once, one pinned thread each, until the counter reaches
/// `until`. The calling thread waits in `join` meanwhile, asleep, so it interrupts nobody.
fn spin_all(
    clock: &Clock,
    cpus: &[usize],
    until: u64,
    threshold: u64,
    capacity: usize,
    cancel: &AtomicBool,
) -> anyhow::Result<Vec<CpuSpin>> {
    // Every buffer is written before any thread starts, so no spin takes a page fault on it.
    let mut bufs: Vec<Vec<Gap>> = cpus.iter().map(|_| gap_buffer(capacity)).collect();
    let results: Vec<anyhow::Result<(i32, Spin)>> = std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(cpus.len());
        for (&cpu, buf) in cpus.iter().zip(bufs.iter_mut()) {
            let spawned = std::thread::Builder::new()
                .name("oscost-noise".into())
                .stack_size(64 * 1024)
                .spawn_scoped(s, move || -> anyhow::Result<(i32, Spin)> {
                    oscost_sys::set_affinity(&[cpu])
                        .with_context(|| format!("pinning the spinning thread to CPU {cpu}"))?;
                    let tid = oscost_sys::gettid();
                    Ok((
                        tid,
                        record_gaps(|| clock.now(), until, threshold, buf, cancel),
                    ))
                });
            match spawned {
                Ok(h) => {
                    oscost_sys::count_started_tasks(1);
                    handles.push(Ok(h));
                }
                Err(e) => handles.push(Err(e)),
            }
        }
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a spinning thread panicked"))),
                Err(e) => Err(anyhow::Error::new(e).context("starting a spinning thread")),
            })
            .collect()
    });
    let mut out = Vec::with_capacity(cpus.len());
    for ((&cpu, mut gaps), spin) in cpus.iter().zip(bufs).zip(results) {
        let (tid, spin) = spin?;
        gaps.truncate(spin.stored);
        out.push(CpuSpin {
            cpu,
            tid,
            spin,
            gaps,
        });
    }
    if out.iter().any(|c| c.spin.stopped) {
        return Err(Cancelled.into());
    }
    Ok(out)
}

/// Interrupt counts per CPU from `/proc/interrupts`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Interrupts {
    /// `LOC`, the local timer interrupts, by CPU.
    pub local_timer: BTreeMap<usize, u64>,
    /// Every line with a count per CPU, summed, by CPU.
    pub all: BTreeMap<usize, u64>,
}

/// Parses `/proc/interrupts`: a header of `CPUn` columns, then one line per source with a
/// count per column (lines with fewer counts, such as `ERR`, are not per CPU and are skipped).
pub(crate) fn parse_interrupts(text: &str) -> Option<Interrupts> {
    let mut lines = text.lines();
    let cpus: Vec<usize> = lines
        .next()?
        .split_whitespace()
        .map(|c| c.strip_prefix("CPU").and_then(|n| n.parse().ok()))
        .collect::<Option<_>>()?;
    if cpus.is_empty() {
        return None;
    }
    let mut out = Interrupts::default();
    for line in lines {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let counts: Vec<u64> = rest
            .split_whitespace()
            .take(cpus.len())
            .map_while(|v| v.parse().ok())
            .collect();
        if counts.len() != cpus.len() {
            continue;
        }
        for (&cpu, &n) in cpus.iter().zip(&counts) {
            *out.all.entry(cpu).or_insert(0) += n;
            if name.trim() == "LOC" {
                out.local_timer.insert(cpu, n);
            }
        }
    }
    Some(out)
}

fn read_interrupts() -> Option<Interrupts> {
    parse_interrupts(&std::fs::read_to_string("/proc/interrupts").ok()?)
}

pub(super) fn read_steal() -> Option<BTreeMap<usize, u64>> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    Some(parse_proc_stat(&text).steal_ticks)
}

pub(super) fn delta(
    before: &BTreeMap<usize, u64>,
    after: &BTreeMap<usize, u64>,
    cpu: usize,
) -> Option<u64> {
    Some(after.get(&cpu)?.saturating_sub(*before.get(&cpu)?))
}

/// Steal time per CPU before and after the run, in USER_HZ ticks.
struct Steal {
    before: BTreeMap<usize, u64>,
    after: BTreeMap<usize, u64>,
    user_hz: u64,
}

/// What the kernel counted on each CPU over the run, beside the loop's own figures.
struct Kernel {
    /// Local timer and all interrupts, and how long the window between the two readings was.
    interrupts: Option<(Interrupts, Interrupts, f64)>,
    steal: Option<Steal>,
    /// HZ and the length of one tick, ns, where the kernel says.
    hz: Option<(u32, u64)>,
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    let clock = real_clock(ctx, NAME)?;
    let cpus = ctx.cpus.clone();
    if cpus.is_empty() {
        anyhow::bail!("--cpus: the CPU set is empty");
    }
    let duration_ns = opts.duration_ns.unwrap_or(if ctx.quick {
        QUICK_DURATION_NS
    } else {
        DEFAULT_DURATION_NS
    });
    ctx.progress.start(3, NAME);
    ctx.progress.message("timing the loop's own iteration");
    let iteration = {
        let _pin = AffinityRestore::pin(&cpus[..1])?;
        iteration_ticks(&clock, ctx.cancel)?
    };
    ctx.progress.inc(1);
    let (threshold, threshold_source) = match opts.threshold_ns {
        Some(ns) => (ticks(&clock, ns as f64).max(1), "--threshold-ns"),
        None => (
            default_threshold(&clock, iteration),
            "10 loop iterations, at least 1000 ns",
        ),
    };
    ctx.progress.message(&format!(
        "spinning on CPU {} for {:.1} s",
        cpuset::format(&cpus),
        duration_ns as f64 / 1e9
    ));
    let (spins, kernel) = plain_pass(&clock, &cpus, duration_ns, threshold, opts, ctx)?;
    ctx.progress.inc(1);
    let traced = if opts.kernel_view.no_kernel_view {
        None
    } else {
        ctx.progress.message(&format!(
            "spinning again for {:.1} s, the kernel's tracepoints recorded",
            duration_ns as f64 / 1e9
        ));
        Some(kernel::traced_pass(
            &clock,
            &cpus,
            &opts.kernel_view.order(),
            duration_ns,
            threshold,
            opts.max_gaps,
            ctx.cancel,
        )?)
    };
    ctx.progress.inc(1);
    let mut out = ExperimentOutput::default();
    let threshold_ns = clock.ticks_to_ns(threshold as f64);
    out.params
        .insert("duration_s".into(), json!(duration_ns as f64 / 1e9));
    out.params
        .insert("threshold_ns".into(), json!(threshold_ns));
    out.params
        .insert("threshold_source".into(), json!(threshold_source));
    out.params
        .insert("iteration_ns".into(), json!(clock.ticks_to_ns(iteration)));
    out.params
        .insert("max_gaps_per_cpu".into(), json!(opts.max_gaps as u64));
    if let Some((hz, tick_ns)) = kernel.hz {
        out.params.insert("kernel_hz".into(), json!(hz));
        out.params.insert("kernel_tick_ns".into(), json!(tick_ns));
    }
    if kernel.interrupts.is_none() {
        out.warnings.push(
            "/proc/interrupts could not be read: no local timer count to check the periodic \
             gaps against"
                .into(),
        );
    }
    let traced = match traced {
        Some(Ok(t)) => {
            out.params.insert("kernel_view".into(), json!("traced"));
            out.notes.extend(t.notes.iter().cloned());
            Some(t)
        }
        Some(Err(why)) => {
            out.params
                .insert("kernel_view".into(), json!(why.0.clone()));
            out.unavailable.push(Unavailable {
                id: oscost_model::ids::noise::Id::Kernel.to_string(),
                description: "each gap matched with the kernel's tracepoints".into(),
                reason: why.0,
            });
            None
        }
        None => {
            out.params
                .insert("kernel_view".into(), json!("off (--no-kernel-view)"));
            None
        }
    };
    let plain: Vec<CpuNoise> = spins
        .iter()
        .map(|s| analyse(&clock, s, iteration))
        .collect();
    for n in &plain {
        if n.lens_ns.is_empty() {
            out.warnings.push(
                format!(
                    "{NAME}.cpu{}: no gap above {} in {:.2} s of spinning: nothing to summarise",
                    n.cpu,
                    fmt_ns(threshold_ns),
                    n.span_s()
                )
                .into(),
            );
            continue;
        }
        let checked_by_kernel = traced.is_some();
        out.cases.push(cpu_case(
            n,
            &clock,
            iteration,
            threshold_ns,
            &kernel,
            checked_by_kernel,
        ));
    }
    if let Some(t) = &traced {
        for s in &t.spins {
            let n = analyse(&clock, s, iteration);
            let p = plain.iter().find(|p| p.cpu == n.cpu);
            out.cases
                .push(kernel::kernel_case(&n, s, t, &clock, iteration, p));
        }
    }
    ctx.progress.finish();
    Ok(out)
}

/// The untraced spin, with the kernel's counts read around it.
fn plain_pass(
    clock: &Clock,
    cpus: &[usize],
    duration_ns: u64,
    threshold: u64,
    opts: &Options,
    ctx: &Context,
) -> anyhow::Result<(Vec<CpuSpin>, Kernel)> {
    let irq_before = read_interrupts();
    let steal_before = read_steal();
    let t_before = clock.now();
    let until = clock.now() + ticks(clock, duration_ns as f64);
    let spins = spin_all(clock, cpus, until, threshold, opts.max_gaps, ctx.cancel)?;
    let t_after = clock.now();
    let kernel = Kernel {
        hz: kernel_hz(),
        interrupts: irq_before.zip(read_interrupts()).map(|(a, b)| {
            let window = clock.ticks_to_ns(t_after.wrapping_sub(t_before) as f64) / 1e9;
            (a, b, window)
        }),
        steal: steal_before
            .zip(read_steal())
            .zip(oscost_sys::sysinfo::user_hz())
            .map(|((before, after), user_hz)| Steal {
                before,
                after,
                user_hz,
            }),
    };
    Ok((spins, kernel))
}

/// At most `max` values, evenly spread over `v` (all of them when there are few enough).
fn spread<T: Copy>(v: &[T], max: usize) -> Vec<T> {
    if v.len() <= max {
        return v.to_vec();
    }
    (0..max).map(|i| v[i * v.len() / max]).collect()
}

fn cpu_case(
    n: &CpuNoise,
    clock: &Clock,
    iteration: f64,
    threshold_ns: f64,
    k: &Kernel,
    checked_by_kernel: bool,
) -> Case {
    let cpu = n.cpu;
    let samples = Samples {
        per_op_ns: spread(&n.lens_ns, MAX_SAMPLES),
        per_op_ticks: spread(&n.lens_ticks, MAX_SAMPLES),
        iterations_per_sample: 1,
        loop_overhead_ns: clock.ticks_to_ns(iteration),
    };
    let mut case = Case::new(
        oscost_model::ids::noise::Id::Cpu(cpu).to_string(),
        format!(
            "a loop spinning on CPU {cpu} for {:.2} s: each gap above {} between two counter \
             readings, less one loop iteration",
            n.span_s(),
            fmt_ns(threshold_ns)
        ),
        "interruption",
        samples,
    )
    .param("cpu", cpu as u64)
    .param("threshold_ns", threshold_ns);
    gap_counters(&mut case, n);
    gap_warnings(&mut case, n);
    kernel_counts(&mut case, n, k, checked_by_kernel);
    gap_series(&mut case, n);
    case
}

/// The gaps' counts, lengths, the share of the CPU they took, and their periodic component.
fn gap_counters(case: &mut Case, n: &CpuNoise) {
    let mut sorted = n.lens_ns.clone();
    sorted.sort_by(f64::total_cmp);
    let lost: f64 = n.lens_ns.iter().sum();
    let c = &mut case.counters;
    c.insert("gaps".into(), n.gaps_seen as f64);
    c.insert("gaps_stored".into(), n.lens_ns.len() as f64);
    c.insert("gaps_per_s".into(), n.gaps_per_s());
    c.insert("span_s".into(), n.span_s());
    c.insert("iterations".into(), n.iterations as f64);
    c.insert(
        "length_median_ns".into(),
        oscost_stats::percentile(&sorted, 50.0),
    );
    c.insert(
        "length_p99_ns".into(),
        oscost_stats::percentile(&sorted, 99.0),
    );
    c.insert("length_max_ns".into(), *sorted.last().unwrap_or(&0.0));
    c.insert("cpu_lost_pct".into(), lost / n.span_ns * 100.0);
    // Its interval from 20 windows' shares: interruptions come in bursts, windows vary apart.
    let stretches: Vec<(f64, f64)> = n
        .starts_ns
        .iter()
        .copied()
        .zip(n.lens_ns.iter().copied())
        .collect();
    if let Some(s) = oscost_stats::share::covered_share(&stretches, n.span_ns, 20) {
        c.insert("cpu_lost_ci95_lo_pct".into(), s.ci95[0] * 100.0);
        c.insert("cpu_lost_ci95_hi_pct".into(), s.ci95[1] * 100.0);
    }
    let (pl_ns, pl_ticks) = n.periodic_lens();
    if let Some(p) = &n.periodic {
        c.insert("period_ns".into(), p.period);
        c.insert("periodic_gaps".into(), p.members.len() as f64);
        c.insert("periodic_per_s".into(), n.periodic_per_s());
        c.insert("periodic_median_ns".into(), oscost_stats::median(&pl_ns));
        c.insert(
            "periodic_median_cycles".into(),
            oscost_stats::median(&pl_ticks),
        );
    }
}

/// What the stored gaps, the timeline and the samples leave out.
fn gap_warnings(case: &mut Case, n: &CpuNoise) {
    if n.gaps_seen > n.lens_ns.len() as u64 {
        case.warnings.push(
            format!(
                "the gap buffer filled up: {} gaps stored of {} seen (--max-gaps); lengths, the \
             share of the CPU lost and the period come from the stored ones only",
                n.lens_ns.len(),
                n.gaps_seen
            )
            .into(),
        );
    }
    if n.lens_ns.len() > MAX_TIMELINE {
        case.notes.push(Message::new(
            MessageKind::GapsThinned,
            format!(" {MAX_TIMELINE} gaps of {}", n.lens_ns.len()),
        ));
    }
    if n.lens_ns.len() > MAX_SAMPLES {
        case.notes.push(Message::new(
            MessageKind::SamplesThinned,
            format!(
                "{MAX_SAMPLES} gaps spread evenly over all {} (the counters use every one)",
                n.lens_ns.len()
            ),
        ));
    }
}

/// The kernel's interrupt and steal counts for the CPU, and the check of the periodic gaps
/// against its local timer (or where that check is made instead).
fn kernel_counts(case: &mut Case, n: &CpuNoise, k: &Kernel, checked_by_kernel: bool) {
    let cpu = n.cpu;
    let lost: f64 = n.lens_ns.iter().sum();
    if let Some((before, after, window)) = &k.interrupts {
        if let Some(loc) = delta(&before.local_timer, &after.local_timer, cpu) {
            let loc_per_s = loc as f64 / window;
            case.counters
                .insert("local_timer_interrupts".into(), loc as f64);
            case.counters.insert("local_timer_per_s".into(), loc_per_s);
            let periodic = n.periodic_per_s();
            // A tick that falls inside a longer interruption (the loop preempted by another
            // task) makes no gap of its own: only the share of the run the loop ran can show
            // ticks.
            let running = (1.0 - lost / n.span_ns).clamp(0.0, 1.0);
            let expected = loc_per_s * running;
            let found = match &n.periodic {
                Some(p) => format!(
                    "{} gaps at one phase of the periodic component (every {}) in {:.2} s",
                    p.members.len(),
                    fmt_ns(p.period),
                    n.period_span_ns / 1e9
                ),
                None => "no periodic component was found among the gaps".into(),
            };
            // The traced pass counts the timer from the kernel's own events; the period
            // search, which can lock onto another rhythm, then only informs.
            // A rhythm well faster than the timer's is another one (on a virtual machine the
            // host's own tick, which the guest's interrupt counts never see): the lost time
            // counts it, but it cannot be checked against this kernel's timer.
            let foreign_rhythm = n.periodic.is_some()
                && expected > 0.0
                && periodic > 2.0 * (1.0 + RATE_TOLERANCE) * expected;
            if checked_by_kernel {
                case.params.insert(
                    "timer_rate_checked_by".into(),
                    json!(oscost_model::ids::noise::Id::Traced(cpu).to_string()),
                );
            } else if foreign_rhythm {
                case.notes.push(Message::new(
                    MessageKind::Other,
                    format!(
                        "the periodic gaps are not this kernel's timer: {periodic:.0} a \
                         second ({found}) against {expected:.0} local timer interrupts a second \
                         while the loop ran (LOC in /proc/interrupts), another rhythm, on a \
                         virtual machine most likely the host's; the lost time counts it, and \
                         the timer is not checked against it"
                    ),
                ));
            } else {
                // Where the kernel's tick is known the gaps are counted at it: the search for
                // an unknown period, over the 50 ticks of a short spin among a few hundred
                // other gaps (a virtual machine's host's), can lock onto half the tick or
                // measure it a little off and lose the phase, and then counts too few.
                let (counted, found) = match k.hz {
                    Some((_, tick_ns)) => {
                        let (m, per_s) = n.at_period(tick_ns as f64);
                        (
                            per_s,
                            format!(
                                "{m} gaps at one phase of the kernel's tick (every {}) in \
                                 {:.2} s",
                                fmt_ns(tick_ns as f64),
                                n.period_span_ns / 1e9
                            ),
                        )
                    }
                    None => (periodic, found),
                };
                case.checks.push(Check::near(
                    "periodic_gaps_vs_local_timer_per_s",
                    expected,
                    counted,
                    RATE_TOLERANCE * expected,
                    &format!(
                        "local timer interrupts on CPU {cpu} (LOC in /proc/interrupts: {loc} in \
                     {window:.2} s) while the loop ran ({:.1} % of the time: a tick inside a \
                     longer interruption makes no gap of its own), against {found}; within \
                     ±10 %",
                        running * 100.0
                    ),
                ));
            }
        }
        if let Some(all) = delta(&before.all, &after.all, cpu) {
            case.counters.insert("interrupts_all".into(), all as f64);
            case.counters
                .insert("interrupts_all_per_s".into(), all as f64 / window);
        }
    }
    if let Some(s) = &k.steal {
        if let Some(steal) = delta(&s.before, &s.after, cpu) {
            let ms = steal as f64 * 1000.0 / s.user_hz as f64;
            case.counters.insert("steal_ms".into(), ms);
            case.counters
                .insert("steal_pct".into(), ms / 1e3 / n.span_s() * 100.0);
        }
    }
}

/// The gaps' length histogram and their timeline, periodic ones marked.
fn gap_series(case: &mut Case, n: &CpuNoise) {
    case.series.push(Series {
        name: "histogram".into(),
        columns: vec!["from_ns".into(), "to_ns".into(), "count".into()],
        points: log2_histogram(&n.lens_ns)
            .into_iter()
            .map(|b| vec![b.from, b.to, b.count as f64])
            .collect(),
    });
    case.series.push(Series {
        name: "timeline".into(),
        columns: vec!["at_ms".into(), "length_ns".into(), "periodic".into()],
        points: (0..n.lens_ns.len().min(MAX_TIMELINE))
            .map(|i| {
                let periodic = n.periodic.as_ref().is_some_and(|p| p.is_member(i));
                vec![
                    n.starts_ns[i] / 1e6,
                    n.lens_ns[i],
                    f64::from(u8::from(periodic)),
                ]
            })
            .collect(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::testing;
    use crate::sampler::SamplerConfig;

    const INTERRUPTS: &str = "           CPU0       CPU1       \n\
         24:          1          0  IO-APIC   5-edge      ACPI:Ged\n\
         36:          0     372382 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n\
        NMI:          0          0   Non-maskable interrupts\n\
        LOC:    1181067    1307723   Local timer interrupts\n\
        RES:     202743     179648   Rescheduling interrupts\n\
        ERR:          0\n\
        MIS:          0\n";

    #[test]
    fn interrupts_are_read_per_cpu() {
        let i = parse_interrupts(INTERRUPTS).unwrap();
        assert_eq!(
            i.local_timer,
            BTreeMap::from([(0, 1_181_067), (1, 1_307_723)])
        );
        assert_eq!(
            i.all,
            BTreeMap::from([
                (0, 1 + 1_181_067 + 202_743),
                (1, 372_382 + 1_307_723 + 179_648)
            ])
        );
        assert_eq!(parse_interrupts(""), None);
        assert_eq!(parse_interrupts("garbage\n"), None);
        // The real file parses on any Linux.
        let real = read_interrupts().expect("/proc/interrupts");
        assert!(!real.all.is_empty());
    }

    #[test]
    fn spread_keeps_the_ends_and_the_count() {
        let v: Vec<u32> = (0..100).collect();
        assert_eq!(spread(&v, 200), v);
        let s = spread(&v, 10);
        assert_eq!(s, vec![0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    }

    fn opts(args: &[&str]) -> Options {
        use clap::{Args, FromArgMatches};
        let cmd = Options::augment_args(clap::Command::new("noise").no_binary_name(true));
        Options::from_arg_matches(&cmd.try_get_matches_from(args).unwrap()).unwrap()
    }

    /// A short spin on every allowed CPU: one case per CPU that saw a gap, with its series,
    /// counters that agree with each other and the kernel's counts beside them.
    #[test]
    fn a_short_run_gives_self_consistent_figures() {
        let cpus = oscost_sys::affinity().unwrap();
        testing::with_ctx(SamplerConfig::quick(), cpus.clone(), false, |ctx| {
            let out = run(&opts(&["--duration", "200ms"]), ctx).unwrap();
            assert!(out.params["threshold_ns"].as_f64().unwrap() >= 1000.0);
            let (kernel, plain): (Vec<&Case>, Vec<&Case>) =
                out.cases.iter().partition(|c| c.id.ends_with(".kernel"));
            let empty = out.warnings.iter().filter(|w| w.contains("no gap above"));
            assert_eq!(plain.len() + empty.count(), cpus.len(), "{out:?}");
            // The traced pass gives a case per CPU, or says in one line why it could not.
            match out.params["kernel_view"].as_str() {
                Some("traced") => {
                    assert!(out.unavailable.is_empty());
                    for c in &kernel {
                        let lost = c.counters["cpu_lost_pct"];
                        let by_source: f64 = c
                            .counters
                            .iter()
                            .filter(|(k, _)| {
                                k.starts_with("source.") && k.ends_with(".cpu_lost_pct")
                            })
                            .map(|(_, v)| v)
                            .sum();
                        assert!((by_source - lost).abs() < 1e-6 * lost.max(1.0), "{c:?}");
                        assert!(c.counters["attributed_pct"] <= 100.0);
                        // Whose it was: the OS's, other programs' and the host's shares make
                        // the whole loss, each inside its own interval.
                        let mut whose = 0.0;
                        for k in ["os", "programs", "outside"] {
                            let v = c.counters[&format!("{k}_lost_pct")];
                            let lo = c.counters[&format!("{k}_lost_ci95_lo_pct")];
                            let hi = c.counters[&format!("{k}_lost_ci95_hi_pct")];
                            assert!(lo <= v + 1e-9 && v <= hi + 1e-9, "{k}: {lo} {v} {hi}");
                            whose += v;
                        }
                        assert!((whose - lost).abs() < 1e-6 * lost.max(1.0), "{c:?}");
                        // The time outside the kernel's view is the host's: stolen or not.
                        if let Some(stolen) = c.counters.get("outside_steal_ms") {
                            let rest = c.counters["outside_unstolen_ms"];
                            let outside_ms =
                                c.counters["outside_lost_pct"] / 100.0 * c.counters["span_s"] * 1e3;
                            assert!(stolen + rest >= outside_ms * (1.0 - 1e-6) - 1e-9);
                            assert!(stolen + rest <= outside_ms * (1.0 + 1e-6) + 1e-9);
                        }
                    }
                }
                _ => {
                    assert!(kernel.is_empty());
                    assert_eq!(out.unavailable.len(), 1, "{out:?}");
                    assert!(!out.unavailable[0].reason.contains('\n'));
                }
            }
            for c in &plain {
                let gaps = c.counters["gaps"];
                assert!(gaps >= 1.0);
                assert_eq!(c.counters["gaps_stored"], gaps);
                assert_eq!(c.samples.per_op_ns.len() as f64, gaps);
                let h: f64 = c.series[0].points.iter().map(|p| p[2]).sum();
                assert_eq!(h, gaps, "{}: the histogram counts every gap", c.id);
                assert_eq!(c.series[1].points.len() as f64, gaps);
                assert!(c.counters["length_max_ns"] >= c.counters["length_median_ns"]);
                assert!(c.counters["cpu_lost_pct"] >= 0.0 && c.counters["cpu_lost_pct"] < 100.0);
                let (lo, hi) = (
                    c.counters["cpu_lost_ci95_lo_pct"],
                    c.counters["cpu_lost_ci95_hi_pct"],
                );
                assert!(lo <= c.counters["cpu_lost_pct"] + 1e-9);
                assert!(c.counters["cpu_lost_pct"] <= hi + 1e-9);
                assert!(c.counters.contains_key("local_timer_interrupts"), "{c:?}");
            }
        });
    }

    #[test]
    fn no_kernel_view_means_no_traced_pass() {
        let cpu = oscost_sys::affinity().unwrap()[0];
        testing::with_ctx(SamplerConfig::quick(), vec![cpu], false, |ctx| {
            let out = run(&opts(&["--duration", "20ms", "--no-kernel-view"]), ctx).unwrap();
            assert!(out.cases.iter().all(|c| !c.id.ends_with(".kernel")));
            assert!(out.unavailable.is_empty());
            assert_eq!(out.params["kernel_view"], "off (--no-kernel-view)");
        });
    }

    #[test]
    fn a_full_buffer_is_said_and_counted() {
        let cpu = oscost_sys::affinity().unwrap()[0];
        testing::with_ctx(SamplerConfig::quick(), vec![cpu], false, |ctx| {
            // A 1 ns threshold makes nearly every iteration a gap.
            let out = run(
                &opts(&[
                    "--duration",
                    "100ms",
                    "--threshold-ns",
                    "1",
                    "--max-gaps",
                    "10",
                    "--no-kernel-view",
                ]),
                ctx,
            )
            .unwrap();
            let c = &out.cases[0];
            assert_eq!(c.counters["gaps_stored"], 10.0);
            assert!(c.counters["gaps"] > 10.0);
            assert!(
                c.warnings.iter().any(|w| w.contains("buffer filled up")),
                "{c:?}"
            );
        });
    }

    #[test]
    fn cancel_stops_the_spin() {
        let cpu = oscost_sys::affinity().unwrap()[0];
        testing::with_ctx(SamplerConfig::quick(), vec![cpu], true, |ctx| {
            let e = run(&opts(&["--duration", "3600s"]), ctx).unwrap_err();
            assert!(e.downcast_ref::<Cancelled>().is_some(), "{e}");
        });
    }
}
