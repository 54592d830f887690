//! Running `timeline`'s rounds: the workers' chunks of work on one CPU, the scheduling policy
//! applied to each and read back, the calibration of a chunk and the policy's base slice.

use super::kernel;
use super::{case_id, Options, Plan, NAME, SETUP_DEADLINE};
use crate::context::Context;
use crate::cpuset::{self, AffinityRestore};
use crate::kview::{Pass, Session};
use crate::sysctl::read_trim;
use anyhow::Context as _;
use oscost_model::case::ExperimentOutput;
use oscost_stats::sched::{default_base_slice_ns, parse_release};
use oscost_sys::clock::Clock;
use oscost_sys::task::{CpuMask, Kind, Team};
use oscost_sys::timeline::{self, TraceBoard, TraceRecord};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The chunk every worker does, as run.
#[derive(Debug, Clone, Copy)]
pub(super) struct Chunk {
    /// Iterations of the busy loop.
    pub(super) iterations: u64,
    /// Given with --chunk-iterations rather than sized from --chunk-us.
    pub(super) given_in_iterations: bool,
    /// Its CPU time, µs: --chunk-us, or what the calibration says the iterations take.
    pub(super) us: u64,
}

// ---------------------------------------------------------------------------------------
// One round.

/// What the kernel showed of one worker after its settings and before the start.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Applied {
    pub(super) nice: Option<i32>,
    pub(super) policy: Option<i32>,
    /// `se.load.weight`, as the kernel prints it.
    pub(super) weight: Option<u64>,
    /// `se.slice`, ns.
    pub(super) slice_ns: Option<u64>,
    pub(super) autogroup: Option<String>,
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
    pub(super) applied: Vec<Applied>,
}

impl Round {
    pub(super) fn from_record(
        rec: &TraceRecord,
        go: u64,
        clock: &Clock,
        applied: Vec<Applied>,
    ) -> Round {
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
pub(super) fn traced_rounds(
    opts: &Options,
    plan: &Plan,
    ctx: &Context,
    clock: &Clock,
    chunk: &Chunk,
    out: &mut ExperimentOutput,
) -> anyhow::Result<Vec<Option<(Round, kernel::Traced)>>> {
    let mut traced: Vec<Option<(Round, kernel::Traced)>> =
        plan.sizes.iter().map(|_| None).collect();
    if opts.kernel_view.no_kernel_view {
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
        let order = opts.kernel_view.order();
        let mut session = match Session::open(&Pass::new(kernel::EVENTS, &on, &order)) {
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
                    id: oscost_model::ids::timeline::Id::Kernel.to_string(),
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
pub(super) fn run_round(
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
        mechanism: raw.mechanism,
    });
    Ok((Round::from_record(&rec, go, clock, applied), traced))
}

/// Gives worker `i` (task `tid`) its nice value and the policy.
pub(super) fn apply(opts: &Options, plan: &Plan, i: usize, tid: i32) -> anyhow::Result<()> {
    if let Some(nice) = plan.nice.as_ref().and_then(|v| v.get(i)).copied() {
        timeline::set_nice_of(tid, nice).map_err(|e| {
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
    if timeline::scheduler_of(tid).ok() == Some(p.number()) {
        return Ok(());
    }
    timeline::set_scheduler_of(tid, p).map_err(|e| {
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
pub(super) fn read_applied(kind: Kind, tid: i32) -> Applied {
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
        nice: timeline::nice_of(tid).ok(),
        policy: field("policy").map(|v| v as i32),
        weight: field("se.load.weight").map(|v| v as u64),
        slice_ns: field("se.slice").map(|v| v as u64),
        autogroup,
    }
}

// ---------------------------------------------------------------------------------------
// The chunk.

/// The busy loop's speed on the workers' CPU.
pub(super) struct Calibration {
    pub(super) iterations: u64,
    pub(super) ns_per_iteration: f64,
}

/// Times the busy loop on `cpu` (the measuring thread pinned there meanwhile) and sizes a
/// chunk to `target_ns` of CPU time. The loop is timed by the thread's own CPU clock, which
/// stops while another task has the CPU, so a busy machine does not shrink the chunk; the
/// fastest of five timings counts.
pub(super) fn calibrate(target_ns: f64, cpu: usize) -> anyhow::Result<Calibration> {
    let _pin = AffinityRestore::pin(&[cpu])?;
    let time = |n: u64| -> anyhow::Result<f64> {
        let c0 = timeline::thread_cpu_ns()?;
        timeline::busy(n);
        Ok(timeline::thread_cpu_ns()?.saturating_sub(c0) as f64)
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
pub(super) fn base_slice(rounds: &[Vec<Round>]) -> Option<(u64, String)> {
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
