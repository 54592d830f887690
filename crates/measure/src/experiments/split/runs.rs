//! Running one point of `split`: a single flow or a team of threads or processes doing the
//! work, and what the kernel counted meanwhile (CPU ticks, overlap of the runs, mappings).

use super::{CpuSet, Point};
use crate::context::{Cancelled, Context};
use crate::cpuset::AffinityRestore;
use crate::engine::work::Form;
use crate::env::load::parse_cpu_times;
use crate::sampler::counting_threads;
use anyhow::Context as _;
use oscost_sys::clock::Clock;
use oscost_sys::split::{self as sys_split, Plan, Record, SplitRun};
use oscost_sys::task::{self, CpuMask, Kind, Team};
use std::sync::Arc;
use std::time::Duration;

/// What one run of a point measured.
#[derive(Debug, Clone, Default)]
pub(super) struct RunStats {
    /// Create + work + join, ticks (the parent's reading of /proc between them excluded).
    pub(super) total: u64,
    /// Barrier start to the last finish, ticks.
    pub(super) work: u64,
    /// Start of creation to the barrier start, ticks.
    pub(super) create: u64,
    /// Release to the last task joined, ticks.
    pub(super) join: u64,
    /// Last finish minus first finish, ticks.
    pub(super) spread: u64,
    pub(super) cpu_ns: u64,
    pub(super) voluntary: u64,
    pub(super) involuntary: u64,
    pub(super) migrations: Option<u64>,
    pub(super) minor_faults: u64,
    pub(super) major_faults: u64,
    pub(super) steps: u64,
    pub(super) units: u64,
    pub(super) distinct_tasks: usize,
    pub(super) threads_in_process: Option<u64>,
    /// The measuring process's peak resident memory during the run, KiB.
    pub(super) peak_rss_kib: u64,
    /// Memory mappings of the measuring process when it started creating the tasks: what
    /// each fork copies.
    pub(super) mappings: Option<u64>,
    /// Time at least two tasks were working at once, ticks (teams only).
    pub(super) overlap: Option<u64>,
    /// Barrier start to the last task starting its share, ticks (teams only).
    pub(super) late_start: Option<u64>,
    /// What `/proc/stat` counted on the point's CPUs around the run.
    pub(super) cpu_seen: Option<CpuTicks>,
}

/// Busy and steal time of a set of CPUs, in USER_HZ ticks, from `/proc/stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct CpuTicks {
    /// user, nice, system, irq and softirq.
    pub(super) busy: u64,
    /// Time the hypervisor ran something else on these vCPUs.
    pub(super) steal: u64,
}

/// Sums the busy and steal ticks of `cpus` in the text of `/proc/stat`; `None` when a CPU's
/// line is missing or too short to hold steal.
pub(super) fn cpu_ticks(text: &str, cpus: &[usize]) -> Option<CpuTicks> {
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

pub(super) fn read_cpu_ticks(cpus: &[usize]) -> Option<CpuTicks> {
    cpu_ticks(&std::fs::read_to_string("/proc/stat").ok()?, cpus)
}

/// How long at least two of the `(start, finish)` intervals were open at once.
pub(super) fn overlap_of(spans: &[(u64, u64)]) -> u64 {
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

/// Memory mappings of this process (lines of /proc/self/maps).
pub(super) fn count_mappings() -> Option<u64> {
    std::fs::read_to_string("/proc/self/maps")
        .ok()
        .map(|m| m.lines().count() as u64)
}

/// One run of a point, pinned as its set says; the calling thread's CPU set is restored.
pub(super) fn run_point(
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
pub(super) fn run_single(plan: Plan, clock: &Clock) -> RunStats {
    let tid = oscost_sys::gettid();
    let migrations0 = oscost_sys::migrations(tid);
    let ru0 = sys_split::thread_rusage();
    let cpu0 = oscost_sys::timeline::thread_cpu_ns().unwrap_or(0);
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
    let cpu_ns = oscost_sys::timeline::thread_cpu_ns()
        .unwrap_or(0)
        .saturating_sub(cpu0);
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
pub(super) fn run_team(
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
