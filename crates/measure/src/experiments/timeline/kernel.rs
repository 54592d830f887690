//! `timeline`'s traced round: one more round per worker count, apart from the timed ones, with
//! the scheduler's tracepoints recorded (`sched_switch`, `sched_wakeup`, `sched_waking`). From
//! them: who ran when on the workers' CPU, the kernel's slice lengths, whether each run ended
//! preempted or asleep, the wake-up latency, and each worker's run time, each held against the
//! workers' own trace of the same round.

use super::Round;
use crate::kview::Raw;
use oscost_model::case::{Case, Check, Samples, Series};
use oscost_stats::sched::turns;
use serde_json::json;

/// The tracepoints the traced round reads (those a kernel lacks are skipped).
pub(super) const EVENTS: &[(&str, &str)] = &[
    ("sched", "sched_switch"),
    ("sched", "sched_wakeup"),
    ("sched", "sched_waking"),
];

/// A worker's run time from the switches may differ from its CPU clock by this, relative.
const RUN_TOLERANCE: f64 = 0.05;

/// Points of the `kernel_runs` series at most (a figure needs no more).
const MAX_RUN_POINTS: usize = 20_000;

/// The bits of `sched_switch`'s `prev_state` that name a sleep (`TASK_REPORT`): none set is
/// `R`, still runnable, so preempted (`R+` sets a bit above them).
const SLEEP_STATES: i64 = 0xff;

/// One scheduler event of the traced round.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ev {
    /// The CPU went from `prev` to `next`; `prev_state` as the tracepoint gives it.
    Switch {
        /// The task leaving.
        prev: i64,
        /// Its state: no sleep bit set means it was preempted.
        prev_state: i64,
        /// The task coming in.
        next: i64,
    },
    /// `sched_wakeup`: `tid` became runnable.
    Wakeup(i64),
    /// `sched_waking`: the wake-up of `tid` began.
    Waking(i64),
}

/// An event at `ns` (from the round's common start) on `cpu`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct At {
    /// ns from the round's common start.
    pub ns: f64,
    /// The CPU it happened on.
    pub cpu: u32,
    /// What it was.
    pub ev: Ev,
}

/// The scheduler events of `raw`, their times mapped by `to_ns` (counter ticks to ns from the
/// round's start).
pub(crate) fn decode(raw: &Raw, to_ns: impl Fn(f64) -> f64) -> Vec<At> {
    raw.records
        .iter()
        .filter_map(|r| {
            let f = raw.format(r)?;
            let ev = match f.name.as_str() {
                "sched:sched_switch" => Ev::Switch {
                    prev: f.int(&r.raw, "prev_pid")?,
                    prev_state: f.int(&r.raw, "prev_state")?,
                    next: f.int(&r.raw, "next_pid")?,
                },
                "sched:sched_wakeup" => Ev::Wakeup(f.int(&r.raw, "pid")?),
                "sched:sched_waking" => Ev::Waking(f.int(&r.raw, "pid")?),
                _ => return None,
            };
            Some(At {
                ns: to_ns(raw.map.ticks(r.time_ns)),
                cpu: r.cpu,
                ev,
            })
        })
        .collect()
}

/// A stretch one task held a CPU.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Run {
    /// The task (0: idle).
    pub tid: i64,
    /// The CPU.
    pub cpu: u32,
    /// From (the switch in, or the trace's start).
    pub from: f64,
    /// To (the switch out, or the trace's end).
    pub to: f64,
    /// Whether it began at a traced switch.
    pub begun: bool,
    /// How it ended: `Some(true)` preempted, `Some(false)` asleep (or gone), `None` not seen.
    pub preempted: Option<bool>,
}

/// Switches on `cpu` whose leaving task is not the one the switch before brought in: each is
/// a switch (or more) the trace is missing there.
pub(crate) fn chain_breaks(evs: &[At], cpu: u32) -> usize {
    let mut last: Option<i64> = None;
    let mut breaks = 0;
    for a in evs.iter().filter(|a| a.cpu == cpu) {
        if let Ev::Switch { prev, next, .. } = a.ev {
            if last.is_some_and(|l| l != prev) {
                breaks += 1;
            }
            last = Some(next);
        }
    }
    breaks
}

/// Every run the switches `evs` (in time order) show, per CPU, within `window`.
pub(crate) fn runs(evs: &[At], window: (f64, f64)) -> Vec<Run> {
    let mut on: std::collections::BTreeMap<u32, (i64, f64, bool)> = Default::default();
    let mut out = Vec::new();
    for a in evs {
        let Ev::Switch {
            prev,
            prev_state,
            next,
        } = a.ev
        else {
            continue;
        };
        let (tid, from, begun) = on.get(&a.cpu).copied().unwrap_or((prev, window.0, false));
        out.push(Run {
            tid,
            cpu: a.cpu,
            from,
            to: a.ns,
            begun,
            preempted: Some(prev_state & SLEEP_STATES == 0),
        });
        on.insert(a.cpu, (next, a.ns, true));
    }
    for (cpu, (tid, from, begun)) in on {
        out.push(Run {
            tid,
            cpu,
            from,
            to: window.1.max(from),
            begun,
            preempted: None,
        });
    }
    out.sort_by(|a, b| a.from.total_cmp(&b.from).then(a.cpu.cmp(&b.cpu)));
    out
}

/// A turn as the kernel saw it: consecutive runs of one worker on the CPU, no other worker's
/// between them (another task's may be).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KTurn {
    /// The worker (0-based).
    pub worker: usize,
    /// Its first run's switch in.
    pub from: f64,
    /// Its last run's switch out.
    pub to: f64,
    /// The previous worker's turn's switch out (`from` for the first turn): where the workers'
    /// own trace, which cannot see other tasks, starts the turn.
    pub after: f64,
    /// Began after another worker's turn and ended before its worker's last: a whole slice.
    pub whole: bool,
}

/// The workers' turns in the runs of one CPU; `tids[w]` is worker `w`'s task.
pub(crate) fn kernel_turns(runs: &[Run], tids: &[i64]) -> Vec<KTurn> {
    let mut out: Vec<KTurn> = Vec::new();
    for r in runs {
        let Some(w) = tids.iter().position(|&t| t == r.tid) else {
            continue;
        };
        match out.last_mut() {
            Some(t) if t.worker == w => t.to = r.to,
            last => {
                let after = last.map_or(r.from, |t| t.to);
                out.push(KTurn {
                    worker: w,
                    from: r.from,
                    to: r.to,
                    after,
                    whole: r.begun,
                })
            }
        }
    }
    let n = out.len();
    for i in 0..n {
        let later = out[i + 1..].iter().any(|t| t.worker == out[i].worker);
        out[i].whole &= i > 0 && later;
    }
    out
}

/// Each of the workers' own whole turns (from their trace `ends_ns`) beside the kernel's turn
/// of the same worker that overlaps it most, measured as the workers measure theirs (from the
/// previous worker's switch out, other tasks' time included): `(own length, kernel length)`.
pub(crate) fn matched_slices(ends_ns: &[Vec<f64>], kt: &[KTurn]) -> Vec<(f64, f64)> {
    turns(ends_ns)
        .iter()
        .filter(|t| t.whole())
        .filter_map(|t| {
            let overlap = |k: &KTurn| k.to.min(t.to_ns) - k.from.max(t.from_ns);
            let best = kt
                .iter()
                .filter(|k| k.worker == t.worker && overlap(k) > 0.0)
                .max_by(|a, b| overlap(a).total_cmp(&overlap(b)))?;
            Some((t.len_ns(), best.to - best.after))
        })
        .collect()
}

/// The time each worker held a CPU between its own start and finish, ns.
pub(crate) fn run_time(runs: &[Run], tids: &[i64], starts: &[f64], finishes: &[f64]) -> Vec<f64> {
    tids.iter()
        .enumerate()
        .map(|(w, &tid)| {
            let (a, b) = (starts[w], finishes[w]);
            runs.iter()
                .filter(|r| r.tid == tid)
                .map(|r| (r.to.min(b) - r.from.max(a)).max(0.0))
                .sum()
        })
        .collect()
}

/// From each wake-up of a worker to its next switch in, ns: `sched_wakeup`'s, or
/// `sched_waking`'s where the kernel gave no `sched_wakeup`.
pub(crate) fn wake_latencies(evs: &[At], runs: &[Run], tids: &[i64]) -> Vec<f64> {
    let woken = |want_wakeup: bool| -> Vec<(f64, i64)> {
        evs.iter()
            .filter_map(|a| match a.ev {
                Ev::Wakeup(t) if want_wakeup => Some((a.ns, t)),
                Ev::Waking(t) if !want_wakeup => Some((a.ns, t)),
                _ => None,
            })
            .filter(|(_, t)| tids.contains(t))
            .collect()
    };
    let mut w = woken(true);
    if w.is_empty() {
        w = woken(false);
    }
    w.iter()
        .filter_map(|&(at, tid)| {
            runs.iter()
                .filter(|r| r.tid == tid && r.begun && r.from >= at)
                .map(|r| r.from - at)
                .min_by(f64::total_cmp)
        })
        .collect()
}

/// What the traced round recorded, on the round's time line.
pub(crate) struct Traced {
    /// The workers' tasks, by worker.
    pub tids: Vec<i64>,
    /// The scheduler's events.
    pub events: Vec<At>,
    /// Records the kernel dropped.
    pub lost: u64,
    /// Events the kernel counted but did not sample (a wake-up in an idle CPU's interrupt).
    pub unsampled: u64,
    /// How the tracepoints were recorded.
    pub mechanism: oscost_sys::kseam::Mechanism,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    oscost_stats::percentile(&s, 50.0)
}

fn pctl(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    oscost_stats::percentile(&s, p)
}

/// What the figures of the case are drawn from.
pub(super) struct Input<'a> {
    /// The case id of the worker count.
    pub id: &'a str,
    /// Workers.
    pub n: usize,
    /// The workers' CPUs.
    pub cpus: &'a [usize],
    /// The traced round, as the workers saw it.
    pub round: &'a Round,
    /// What the kernel recorded in it.
    pub traced: &'a Traced,
    /// Chunks per worker.
    pub chunks: usize,
    /// The timed rounds' total times, ns.
    pub untraced_totals: &'a [f64],
}

/// The case of one traced round: the kernel's run time per worker (its samples), its slices
/// against the workers' own, how runs ended, the wake-up latency, and who ran when.
pub(super) fn case(i: &Input, clock: &oscost_sys::clock::Clock) -> Case {
    let r = i.round;
    let t = i.traced;
    let total = r.total_ns();
    let cpus: Vec<u32> = i.cpus.iter().map(|&c| c as u32).collect();
    // Before its first switch, a CPU's task is known only from the trace's first event on.
    let start = t.events.first().map_or(0.0, |e| e.ns.min(0.0));
    let all = runs(&t.events, (start, total));
    let mine: Vec<Run> = all
        .iter()
        .filter(|x| cpus.contains(&x.cpu))
        .cloned()
        .collect();
    let finishes = r.finishes_ns();
    let run_ns = run_time(&mine, &t.tids, &r.starts_ns, &finishes);
    let cpu_ns: Vec<f64> = r.chunk_cpu_ns.iter().map(|c| c * i.chunks as f64).collect();
    let mut case = Case::new(
        oscost_model::ids::timeline::reading(i.id, oscost_model::ids::timeline::Reading::Kernel),
        format!(
            "{} worker{} on CPU {}, one more round with the scheduler's tracepoints recorded \
             by {} ({}): each worker's run time from its start to its finish as the kernel's \
             switches give it",
            i.n,
            if i.n == 1 { "" } else { "s" },
            crate::cpuset::format(i.cpus),
            t.mechanism.describe(),
            t.mechanism.name()
        ),
        "worker",
        Samples {
            per_op_ticks: run_ns.iter().map(|&v| clock.ns_to_ticks(v)).collect(),
            per_op_ns: run_ns.clone(),
            iterations_per_sample: 1,
            loop_overhead_ns: 0.0,
        },
    )
    .param("workers", i.n as u64)
    .param("kernel_view", true)
    .param("tids", json!(t.tids));
    let c = &mut case.counters;
    // Every run in the trace, from the common start to the worker's exit: what a tool that
    // sees only the kernel's switches (`perf sched timehist`) gives the task.
    let traced_ns = run_time(&mine, &t.tids, &vec![start; i.n], &vec![f64::INFINITY; i.n]);
    for w in 0..i.n {
        c.insert(format!("run_worker{}_ns", w + 1), run_ns[w]);
        c.insert(format!("cpu_worker{}_ns", w + 1), cpu_ns[w]);
        c.insert(format!("run_traced_worker{}_ns", w + 1), traced_ns[w]);
        // The most the worker could have run: a run longer than this is the trace's error.
        c.insert(
            format!("wall_worker{}_ns", w + 1),
            finishes[w] - r.starts_ns[w],
        );
    }
    let ratios: Vec<f64> = run_ns
        .iter()
        .zip(&cpu_ns)
        .filter(|(_, c)| **c > 0.0)
        .map(|(r, c)| r / c)
        .collect();
    if !ratios.is_empty() {
        c.insert("run_vs_cpu_ratio_median".into(), median(&ratios));
        // A trace that lost its end keeps a whole chain of switches but gives a worker too
        // little run time: the worker's own CPU clock catches it.
        let worst = ratios
            .iter()
            .copied()
            .max_by(|a, b| (a - 1.0).abs().total_cmp(&(b - 1.0).abs()))
            .unwrap_or(1.0);
        case.checks.push(Check::near(
            "kernel_run_vs_cpu_clock",
            1.0,
            worst,
            RUN_TOLERANCE,
            &format!(
                "each worker's run time from the kernel's switches (its own start to its \
                 finish) over its CPU clock over the same stretch, the one farthest from 1 of \
                 {} workers; two counts of one thing, within ±{:.0} %",
                ratios.len(),
                RUN_TOLERANCE * 100.0
            ),
        ));
    }
    // Slices and their ends only mean turns on one CPU.
    let chunk_ns = median(&r.chunk_cpu_ns);
    c.insert("chunk_ns".into(), chunk_ns);
    if i.cpus.len() == 1 {
        let kt = kernel_turns(&mine, &t.tids);
        let slices: Vec<f64> = kt
            .iter()
            .filter(|k| k.whole)
            .map(|k| k.to - k.from)
            .collect();
        c.insert("kernel_slices".into(), slices.len() as f64);
        if !slices.is_empty() {
            c.insert("kernel_slice_median_ns".into(), median(&slices));
            c.insert("kernel_slice_p95_ns".into(), pctl(&slices, 95.0));
        }
        let pairs = matched_slices(&r.ends_ns, &kt);
        c.insert("slices_matched".into(), pairs.len() as f64);
        if !pairs.is_empty() {
            let own: Vec<f64> = pairs.iter().map(|p| p.0).collect();
            let diffs: Vec<f64> = pairs.iter().map(|p| (p.1 - p.0).abs()).collect();
            let within = diffs.iter().filter(|&&d| d <= chunk_ns).count();
            c.insert("own_slice_median_ns".into(), median(&own));
            c.insert(
                "slice_ratio_median".into(),
                median(&pairs.iter().map(|p| p.1 / p.0).collect::<Vec<_>>()),
            );
            c.insert("slice_diff_median_ns".into(), median(&diffs));
            c.insert(
                "slices_within_chunk_pct".into(),
                within as f64 / pairs.len() as f64 * 100.0,
            );
            case.checks.push(Check::near(
                "kernel_slice_vs_own_ns",
                0.0,
                median(&diffs),
                chunk_ns,
                &format!(
                    "median difference between each whole turn in the workers' own trace and \
                     the kernel's turn of the same worker over it (switch in to switch out), \
                     over {} turns; the workers note the time only after a chunk, so the two \
                     agree within one chunk ({:.0} ns of CPU time)",
                    pairs.len(),
                    chunk_ns
                ),
            ));
        }
    }
    let c = &mut case.counters;
    // How the workers' runs ended while they had work.
    let (mut preempted, mut slept) = (0usize, 0usize);
    for x in &mine {
        let Some(w) = t.tids.iter().position(|&tid| tid == x.tid) else {
            continue;
        };
        if x.to > r.starts_ns[w] && x.to < finishes[w] {
            match x.preempted {
                Some(true) => preempted += 1,
                Some(false) => slept += 1,
                None => {}
            }
        }
    }
    c.insert("runs_preempted".into(), preempted as f64);
    c.insert("runs_slept".into(), slept as f64);
    let wakes = wake_latencies(&t.events, &all, &t.tids);
    c.insert("wakeups".into(), wakes.len() as f64);
    if !wakes.is_empty() {
        c.insert("wake_latency_median_ns".into(), median(&wakes));
        c.insert(
            "wake_latency_max_ns".into(),
            wakes.iter().copied().fold(0.0, f64::max),
        );
    }
    // The CPU's time in the round given to tasks other than the workers.
    let (mut other, mut idle) = (0.0, 0.0);
    for x in mine.iter().filter(|x| !t.tids.contains(&x.tid)) {
        let d = (x.to.min(total) - x.from.max(0.0)).max(0.0);
        if x.tid == 0 {
            idle += d;
        } else {
            other += d;
        }
    }
    c.insert("other_tasks_ns".into(), other);
    c.insert("idle_ns".into(), idle);
    c.insert("traced_total_ns".into(), total);
    if !i.untraced_totals.is_empty() {
        let m = median(i.untraced_totals);
        c.insert("untraced_total_median_ns".into(), m);
        c.insert(
            "untraced_total_min_ns".into(),
            i.untraced_totals
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min),
        );
        c.insert(
            "untraced_total_max_ns".into(),
            i.untraced_totals.iter().copied().fold(0.0, f64::max),
        );
        c.insert("trace_cost_total_pct".into(), (total / m - 1.0) * 100.0);
        case.trace = Some(oscost_model::TraceCost {
            mechanism: t.mechanism.name().into(),
            per: "round (its total time)".into(),
            untraced_ns: m,
            traced_ns: total,
            lost: t.lost,
        });
    }
    case.params
        .insert("trace_mechanism".into(), json!(t.mechanism.name()));
    let c = &mut case.counters;
    c.insert("trace_records_lost".into(), t.lost as f64);
    c.insert("trace_events_unsampled".into(), t.unsampled as f64);
    let breaks: usize = cpus.iter().map(|&cpu| chain_breaks(&t.events, cpu)).sum();
    case.counters
        .insert("switch_chain_breaks".into(), breaks as f64);
    case.checks.push(Check::near(
        "switch_chain_breaks",
        0.0,
        breaks as f64,
        0.0,
        "switches on the workers' CPU whose leaving task is not the one the switch before \
         brought in (each a switch the trace is missing there)",
    ));
    if t.lost > 0 {
        case.warnings.push(
            format!(
            "{} trace records were lost over the traced CPUs ({breaks} switch{} missing on the \
             workers' CPU)",
            t.lost,
            if breaks == 1 { " is" } else { "es are" }
        )
            .into(),
        );
    }
    case.series
        .push(super::trace_series(std::slice::from_ref(r), &[total]));
    case.series.push(runs_series(&mine, &t.tids, total));
    case
}

/// Who ran when on the workers' CPU within the round: `(from_ns, to_ns, worker, ended)`,
/// worker from 1 (0: another task, -1: idle), ended 1 preempted, 2 asleep, 0 not seen.
fn runs_series(runs: &[Run], tids: &[i64], total: f64) -> Series {
    let points = runs
        .iter()
        .filter(|x| x.to > 0.0 && x.from < total)
        .take(MAX_RUN_POINTS)
        .map(|x| {
            let w = match tids.iter().position(|&t| t == x.tid) {
                Some(w) => (w + 1) as f64,
                None if x.tid == 0 => -1.0,
                None => 0.0,
            };
            let ended = match x.preempted {
                Some(true) => 1.0,
                Some(false) => 2.0,
                None => 0.0,
            };
            vec![x.from.max(0.0).round(), x.to.min(total).round(), w, ended]
        })
        .collect();
    Series {
        name: "kernel_runs".into(),
        columns: vec![
            "from_ns".into(),
            "to_ns".into(),
            "worker".into(),
            "ended".into(),
        ],
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sw(ns: f64, prev: i64, state: i64, next: i64) -> At {
        At {
            ns,
            cpu: 0,
            ev: Ev::Switch {
                prev,
                prev_state: state,
                next,
            },
        }
    }

    /// Two workers (tids 10 and 20) taking turns, another task between, a wake-up at the
    /// start: known times give known runs, turns, slices and latency.
    #[test]
    fn known_switches_give_known_runs_and_slices() {
        const R_PLUS: i64 = 0x100;
        let evs = vec![
            At {
                ns: -5.0,
                cpu: 1,
                ev: Ev::Wakeup(10),
            },
            sw(0.0, 1, 1, 10),
            sw(300.0, 10, R_PLUS, 20),
            sw(600.0, 20, 0, 10),
            sw(700.0, 10, R_PLUS, 99),
            sw(750.0, 99, 1, 10),
            sw(900.0, 10, R_PLUS, 20),
            sw(1200.0, 20, R_PLUS, 10),
            sw(1300.0, 10, 0x10, 20),
        ];
        let r = runs(&evs, (-10.0, 1500.0));
        assert_eq!(r.len(), 9);
        assert!(!r[0].begun && r[0].tid == 1 && r[0].preempted == Some(false));
        let w10: Vec<&Run> = r.iter().filter(|x| x.tid == 10).collect();
        assert_eq!(w10.len(), 4);
        assert_eq!((w10[0].from, w10[0].to), (0.0, 300.0));
        assert_eq!(w10[0].preempted, Some(true));
        assert_eq!(w10[3].preempted, Some(false), "exit is not a preemption");
        assert_eq!(r.last().unwrap().preempted, None);
        let tids = [10, 20];
        let kt = kernel_turns(&r, &tids);
        // 10 | 20 | 10 (with 99 inside) | 20 | 10 | 20
        assert_eq!(kt.len(), 6);
        assert_eq!((kt[2].from, kt[2].to), (600.0, 900.0));
        assert!(!kt[0].whole && kt[1].whole && kt[2].whole && kt[3].whole);
        assert!(!kt[4].whole && !kt[5].whole, "last turns are no slices");
        assert_eq!(
            run_time(&r, &tids, &[0.0, 0.0], &[1300.0, 1200.0]),
            vec![300.0 + 100.0 + 150.0 + 100.0, 300.0 + 300.0]
        );
        assert_eq!(wake_latencies(&evs, &r, &tids), vec![5.0]);
        // The workers' own trace of the same: chunk ends of 100 ns each.
        let ends = vec![
            vec![100.0, 200.0, 300.0, 700.0, 850.0, 900.0, 1300.0],
            vec![400.0, 500.0, 600.0, 1000.0, 1100.0, 1200.0, 1400.0],
        ];
        let m = matched_slices(&ends, &kt);
        // Own whole turns: w2 300..600, w1 600..900, w2 900..1200.
        assert_eq!(m, vec![(300.0, 300.0), (300.0, 300.0), (300.0, 300.0)]);
        assert_eq!(chain_breaks(&evs, 0), 0);
        // Without the switch 99 -> 10, the next leaving task (10) was never brought in.
        let gap: Vec<At> = evs.iter().filter(|a| a.ns != 750.0).cloned().collect();
        assert_eq!(chain_breaks(&gap, 0), 1);
    }

    /// Another task between two workers' turns is in the workers' own turn (they cannot see
    /// it) and in the kernel's turn as measured for the comparison, not in its slice.
    #[test]
    fn another_task_between_turns_is_counted_as_the_workers_count_it() {
        let evs = vec![
            sw(0.0, 0, 0, 10),
            sw(300.0, 10, 0x100, 99),
            sw(400.0, 99, 1, 20),
            sw(600.0, 20, 0x100, 10),
            sw(900.0, 10, 0x100, 20),
            sw(1000.0, 20, 0x10, 10),
        ];
        let r = runs(&evs, (0.0, 1100.0));
        let kt = kernel_turns(&r, &[10, 20]);
        assert_eq!((kt[1].from, kt[1].after, kt[1].to), (400.0, 300.0, 600.0));
        let ends = vec![
            vec![100.0, 200.0, 300.0, 700.0, 800.0, 900.0, 1050.0],
            vec![500.0, 600.0, 1000.0],
        ];
        // The own turn of worker 2, 300..600, holds the other task's 100 ns.
        assert_eq!(matched_slices(&ends, &kt)[0], (300.0, 300.0));
    }

    #[test]
    fn waking_stands_in_for_a_missing_wakeup() {
        let evs = vec![
            At {
                ns: 10.0,
                cpu: 0,
                ev: Ev::Waking(7),
            },
            sw(40.0, 0, 0, 7),
        ];
        let r = runs(&evs, (0.0, 100.0));
        assert_eq!(wake_latencies(&evs, &r, &[7]), vec![30.0]);
        assert!(wake_latencies(&evs, &r, &[8]).is_empty());
    }
}
