//! `tick --rr-slices`: the second knob of the QNX study, a shorter round-robin interval. N
//! SCHED_RR threads share one CPU and the same work W under each value of
//! `sched_rr_timeslice_ms`; one SCHED_RR thread doing all of W alone under the same value is
//! the reference. The extra time over the reschedulings the kernel counted (involuntary
//! switches of the threads) is the cost of one rescheduling. The setting is put back after
//! each value, on every way out; its old value is recorded first (`crate::sysctl`), so the
//! coordinator or the next run puts it back if this process is killed.

use super::work;
use crate::context::Context;
use crate::sampler::{median_of, whole_runs};
use crate::sysctl::{read_trim, set_sysctl, RR_TIMESLICE};
use oscost_model::case::{Case, Check, DerivedSpec, ExperimentOutput, Unavailable};
use oscost_sys::clock::Clock;
use oscost_sys::timeline::{set_scheduler_of, Sched};
use serde_json::json;
use std::path::Path;
use std::sync::Barrier;

const RT_RUNTIME: &str = "/proc/sys/kernel/sched_rt_runtime_us";
const RT_PERIOD: &str = "/proc/sys/kernel/sched_rt_period_us";

/// Reschedulings counted must be within this share of run time / slice.
const RESCHED_TOLERANCE: f64 = 0.25;

/// One run: the span from the first thread's start to the last one's finish, and the
/// involuntary switches of all the threads over their work.
#[derive(Debug, Clone, Copy)]
struct RrRun {
    ticks: u64,
    reschedulings: u64,
}

/// `tasks` SCHED_RR threads pinned to `cpu`, each doing `iterations` of the work after a
/// common start. An error when the policy is refused.
fn one_run(clock: &Clock, tasks: usize, iterations: u64, cpu: usize) -> anyhow::Result<RrRun> {
    let barrier = Barrier::new(tasks);
    let results: Vec<anyhow::Result<(u64, u64, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                s.spawn(|| -> anyhow::Result<(u64, u64, u64)> {
                    let pinned = oscost_sys::set_affinity(&[cpu]);
                    let policy = set_scheduler_of(oscost_sys::gettid(), Sched::Rr);
                    // Every thread reaches the barrier, failed or not, so none waits for ever.
                    barrier.wait();
                    pinned?;
                    policy.map_err(|e| anyhow::anyhow!("--rr-slices: SCHED_RR refused: {e}"))?;
                    let sw0 = oscost_sys::thread_switches();
                    let start = clock.now();
                    std::hint::black_box(work(iterations));
                    let finish = clock.now();
                    let sw = oscost_sys::thread_switches().since(sw0);
                    Ok((start, finish, sw.involuntary))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("an RR thread panicked")))
            })
            .collect()
    });
    let results: Vec<(u64, u64, u64)> = results.into_iter().collect::<anyhow::Result<_>>()?;
    let start = results.iter().map(|r| r.0).min().unwrap_or(0);
    let finish = results.iter().map(|r| r.1).max().unwrap_or(start);
    Ok(RrRun {
        ticks: finish.saturating_sub(start),
        reschedulings: results.iter().map(|r| r.2).sum(),
    })
}

/// Sleeps as long as the run lasted. Real-time tasks may use only
/// `sched_rt_runtime_us` of every `sched_rt_period_us` (0.95 s of each second by default);
/// back-to-back runs would cross that and be stopped for the rest of the period, a random
/// 50 ms in some runs. Resting as long as each run keeps the share near half.
fn rest(clock: &Clock, run: &RrRun) {
    let ns = clock.ticks_to_ns(run.ticks as f64).clamp(0.0, 5e9);
    std::thread::sleep(std::time::Duration::from_nanos(ns as u64));
}

/// The slice the kernel gives for `ms`: whole ticks, at least one.
pub(super) fn effective_slice_ns(ms: u64, tick_ns: Option<f64>) -> f64 {
    let ns = ms as f64 * 1e6;
    match tick_ns {
        Some(t) if t > 0.0 => (ns / t).ceil().max(1.0) * t,
        _ => ns,
    }
}

/// Measures every value of `slices` (ms) with `tasks` threads sharing `iterations` of work on
/// `cpu`, `runs` times each, and adds the cases (or why they could not be measured) to `out`.
#[allow(clippy::too_many_arguments)]
pub(super) fn measure(
    slices: &[u64],
    tasks: usize,
    iterations: u64,
    runs: usize,
    cpu: usize,
    clock: &Clock,
    tick_ns: Option<f64>,
    ctx: &Context,
    out: &mut ExperimentOutput,
) -> anyhow::Result<()> {
    let per_task = (iterations / tasks as u64).max(1);
    let total = per_task * tasks as u64;
    out.params.insert(
        "rr".into(),
        json!({
            "tasks": tasks,
            "iterations_per_task": per_task,
            "sched_rr_timeslice_ms_before": read_trim(Path::new(RR_TIMESLICE)),
            "sched_rt_runtime_us": read_trim(Path::new(RT_RUNTIME)),
            "sched_rt_period_us": read_trim(Path::new(RT_PERIOD)),
        }),
    );
    let setting = Setting {
        tasks,
        cpu,
        tick_ns,
        runtime_us: read_trim(Path::new(RT_RUNTIME)).and_then(|v| v.parse().ok()),
    };
    for &ms in slices {
        ctx.check_cancel()?;
        ctx.progress.message(&format!(
            "{tasks} SCHED_RR threads, sched_rr_timeslice_ms = {ms}"
        ));
        let mut warnings = Vec::new();
        let mut scratch = ExperimentOutput::default();
        let guard = set_sysctl(
            Path::new(RR_TIMESLICE),
            ms,
            "--rr-slices",
            ctx,
            &mut scratch,
        );
        warnings.append(&mut scratch.warnings);
        if guard.is_none() {
            unavailable(out, tasks, ms, warnings.join("; "));
            continue;
        }
        let sampled = sample(clock, tasks, per_task, total, runs, cpu, ctx)?;
        drop(guard);
        match sampled {
            Ok((alone, crowd)) => {
                record(out, clock, &setting, ms, &crowd, &alone, warnings);
            }
            Err(reason) => unavailable(out, tasks, ms, reason),
        }
    }
    Ok(())
}

/// What stays the same for every slice length measured.
struct Setting {
    tasks: usize,
    cpu: usize,
    /// The kernel's tick, which rounds the slice up, when known.
    tick_ns: Option<f64>,
    /// sched_rt_runtime_us, when readable.
    runtime_us: Option<f64>,
}

/// Says why both cases of one slice length have no figure.
fn unavailable(out: &mut ExperimentOutput, tasks: usize, ms: u64, reason: String) {
    let id = oscost_model::ids::tick::case(oscost_model::ids::tick::RR, ms * 1_000_000);
    for (id, what) in [
        (
            id.clone(),
            format!("{tasks} SCHED_RR threads sharing the work, {ms} ms slices"),
        ),
        (
            oscost_model::ids::tick::alone(&id),
            format!("one SCHED_RR thread doing the work alone, {ms} ms slices"),
        ),
    ] {
        out.unavailable.push(Unavailable {
            id,
            description: what,
            reason: reason.clone(),
        });
    }
}

/// `runs` pairs of runs at the slice length set: the work alone, then shared by `tasks`
/// threads; the first refusal's reason instead when a run could not be made.
#[allow(clippy::type_complexity)]
fn sample(
    clock: &Clock,
    tasks: usize,
    per_task: u64,
    total: u64,
    runs: usize,
    cpu: usize,
    ctx: &Context,
) -> anyhow::Result<Result<(Vec<RrRun>, Vec<RrRun>), String>> {
    let mut crowd = Vec::with_capacity(runs);
    let mut alone = Vec::with_capacity(runs);
    for _ in 0..runs {
        ctx.check_cancel()?;
        match one_run(clock, 1, total, cpu)
            .inspect(|r| rest(clock, r))
            .and_then(|a| Ok((a, one_run(clock, tasks, per_task, cpu)?)))
            .inspect(|(_, r)| rest(clock, r))
        {
            Ok((a, c)) => {
                alone.push(a);
                crowd.push(c);
            }
            Err(e) => return Ok(Err(e.to_string())),
        }
    }
    Ok(Ok((alone, crowd)))
}

/// Milliseconds to three decimals.
fn fmt_ms(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}

/// The shared and the alone case of one slice length, the reschedulings checked against the
/// run's time over the slice, and the cost of one rescheduling when any was counted.
fn record(
    out: &mut ExperimentOutput,
    clock: &Clock,
    s: &Setting,
    ms: u64,
    crowd: &[RrRun],
    alone: &[RrRun],
    mut warnings: Vec<oscost_model::Message>,
) {
    let (tasks, cpu) = (s.tasks, s.cpu);
    let id = oscost_model::ids::tick::case(oscost_model::ids::tick::RR, ms * 1_000_000);
    let resched = median_of(crowd.iter().map(|r| r.reschedulings as f64));
    let crowd_ns = median_of(crowd.iter().map(|r| clock.ticks_to_ns(r.ticks as f64)));
    let alone_ns = median_of(alone.iter().map(|r| clock.ticks_to_ns(r.ticks as f64)));
    let slice_ns = effective_slice_ns(ms, s.tick_ns);
    let expected = crowd_ns / slice_ns;
    let mut case = Case::new(
        id.clone(),
        format!(
            "{tasks} SCHED_RR threads sharing the work on CPU {cpu}, sched_rr_timeslice_ms = {ms}"
        ),
        "run",
        whole_runs(clock, crowd.iter().map(|r| r.ticks)),
    )
    .param("cpu", cpu)
    .param("tasks", tasks)
    .param("sched_rr_timeslice_ms", ms)
    .param("effective_slice_ns", slice_ns);
    case.counters.insert("reschedulings".into(), resched);
    case.counters.insert("alone_ns".into(), alone_ns);
    case.counters.insert("extra_ns".into(), crowd_ns - alone_ns);
    // A shared run no slower than the work alone (few reschedulings, a long slice, runs that
    // vary more than they cost) gives no cost per rescheduling: a negative one cannot be.
    let told = resched > 0.0 && crowd_ns > alone_ns;
    if told {
        case.counters.insert(
            "ns_per_rescheduling".into(),
            (crowd_ns - alone_ns) / resched,
        );
    } else if resched > 0.0 {
        out.notes.push(
            format!(
                "{id}: the shared runs were no slower than the work alone ({} ms against {} \
                 ms, {resched:.0} reschedulings): their cost is below what the runs vary by, \
                 so no cost per rescheduling is given; a shorter slice or a longer --work \
                 counts more of them",
                fmt_ms(crowd_ns),
                fmt_ms(alone_ns)
            )
            .into(),
        );
    }
    let tolerance = (RESCHED_TOLERANCE * expected).max(tasks as f64);
    case.checks.push(Check {
        name: "reschedulings_vs_time_over_slice".into(),
        expected,
        counted: resched,
        // Each thread's last slice is cut short by its finish, so a few runs' worth of
        // slices can be missing whatever the length: at least one per thread is allowed.
        passed: (resched - expected).abs() <= tolerance,
        bound: Some(oscost_model::case::Bound::Within(tolerance)),
        detail: format!(
            "involuntary switches of the threads (getrusage) per run, against the run's \
             time / the slice in whole ticks ({:.2} ms); within ±{:.0} % or ±{tasks}",
            slice_ns / 1e6,
            RESCHED_TOLERANCE * 100.0
        ),
    });
    if let Some(r) = s.runtime_us.filter(|&r| r >= 0.0 && crowd_ns / 1e3 > r) {
        warnings.push(
            format!(
                "a run lasted {:.0} ms, longer than sched_rt_runtime_us ({:.0} ms): real-time \
             throttling stopped the threads for part of it; use a shorter --work",
                crowd_ns / 1e6,
                r / 1e3
            )
            .into(),
        );
    }
    case.warnings.extend(warnings);
    let alone_case = Case::new(
        oscost_model::ids::tick::alone(&id),
        format!("one SCHED_RR thread doing the same work alone on CPU {cpu}, sched_rr_timeslice_ms = {ms}"),
        "run",
        whole_runs(clock, alone.iter().map(|r| r.ticks)),
    )
    .param("cpu", cpu)
    .param("sched_rr_timeslice_ms", ms);
    if told {
        out.derived.push(DerivedSpec {
            id: oscost_model::ids::tick::derived(
                &id,
                oscost_model::ids::tick::Derived::PerRescheduling,
            ),
            description: "(shared run − the same work alone) / the reschedulings counted: \
                          what one round-robin rescheduling costs the work"
                .into(),
            terms: vec![
                (id.clone(), 1.0 / resched),
                (alone_case.id.clone(), -1.0 / resched),
            ],
            flagged: crate::engine::failed_checks(&case),
        });
    }
    out.cases.push(case);
    out.cases.push(alone_case);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slice_is_counted_in_whole_ticks() {
        let tick = Some(4e6);
        assert_eq!(effective_slice_ns(1, tick), 4e6);
        assert_eq!(effective_slice_ns(4, tick), 4e6);
        assert_eq!(effective_slice_ns(5, tick), 8e6);
        assert_eq!(effective_slice_ns(100, tick), 100e6);
        assert_eq!(effective_slice_ns(3, None), 3e6);
    }
}
