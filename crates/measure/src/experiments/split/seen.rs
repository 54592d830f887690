//! What `split`'s runs saw beside their time (CPUs shared with other work, runs slowed), and
//! when a point's speed-up is withheld because of it.

use super::runs::RunStats;
use super::{CpuSet, Point};
use crate::cpuset;
use crate::sampler::median_of;
use oscost_model::case::Case;
use oscost_model::MessageKind;
use oscost_sys::clock::Clock;

/// What one run of a point on several CPUs saw, in ns, for [`withheld`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Seen {
    /// The whole run.
    pub(super) wall_ns: f64,
    /// CPUs of the point's set.
    pub(super) cpus: usize,
    /// Steal on those CPUs during the run.
    pub(super) steal_ns: Option<f64>,
    /// Busy time on those CPUs that was not the tasks' own.
    pub(super) foreign_ns: Option<f64>,
    /// Barrier start to the last finish.
    pub(super) work_ns: f64,
    /// Time at least two tasks worked at once.
    pub(super) overlap_ns: Option<f64>,
    /// Barrier start to the last task starting.
    pub(super) late_start_ns: Option<f64>,
    /// CPU time of all the tasks.
    pub(super) cpu_ns: f64,
    /// The work's speed against the calibrated one: CPU time W should have taken over the CPU
    /// time it took (`None` with --yield, whose CPU time holds the yields too). Well under 1
    /// with no steal: the host ran the vCPU slower than at the start without saying so.
    pub(super) speed: Option<f64>,
}

/// Below this speed against the calibrated one a run counts as slowed by the host.
pub(super) const SLOWED: f64 = 0.8;

/// The prefix of the warning a point carries when its CPUs gave less than half the speed-up
/// they could.
pub(super) const WITHHELD: &str = MessageKind::SpeedUpWithheld.lead();

/// Why a point on several CPUs (`place`, e.g. `CPUs 0-1`) gained `speedup_pct` over one CPU
/// when `possible_pct` was possible, from what its runs saw; `None` when it gained at least
/// half of what was possible. The first cause that holds is named, with what was seen: steal
/// (the host lent the CPUs to someone else), other tasks' busy time, a late start of the last
/// worker, workers that did not overlap; otherwise every figure looked at.
pub(super) fn withheld(
    speedup_pct: f64,
    possible_pct: f64,
    runs: &[Seen],
    place: &str,
) -> Option<String> {
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

/// A run's observations in ns; busy and steal need the length of a USER_HZ tick.
pub(super) fn seen(
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
pub(super) fn seen_counters(case: &mut Case, seen: &[Seen]) {
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
pub(super) const TAKEN_SHARE: f64 = 0.2;

pub(super) const STOLEN_SHARE: f64 = 0.05;

/// The prefix of the warning a point carries when some of its runs shared their CPUs.
pub(super) const SHARED: &str = MessageKind::CpusShared.lead();

/// Shared runs at most this much slower (median) than the others moved nothing.
pub(super) const NO_SLOWER: f64 = 0.05;

/// When other tasks held at least a fifth of the point's CPUs (`place`) during some of its
/// runs, or the host stole at least 5 % of them, a warning saying in how many runs, how much,
/// and what those runs took against the rest: the usual cause of a wide interval here.
pub(super) fn shared_runs(runs: &[Seen], place: &str) -> Option<String> {
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

pub(super) fn ms(ns: f64) -> String {
    format!("{:.1} ms", ns / 1e6)
}

/// For a point of several tasks on several CPUs, the warning that its CPUs gave less than half
/// the speed-up they could over the same point on one CPU, and why.
pub(super) fn speedup_withheld(
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
