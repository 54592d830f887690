//! `switch`'s traced pass: the same ping-pong again, apart from the timed rounds, with the
//! kernel's tracepoints recorded on the tasks' CPU, and each one-way hand-over (a task's turn,
//! from the switch into it to the switch out) split into stages by the kernel's own
//! timestamps: the switch to its return to user space, user space to its post's entry, the
//! entry to the wake-up of the other task, the wake-up to the switch.

use crate::context::Context;
use crate::engine::tokens::{Ring, RingSpec};
use crate::kview::{self, Pass, Session};
use oscost_model::case::{Case, Check, Samples};
use oscost_sys::kseam::Mechanism;
use oscost_sys::ktrace::{Record, Unavailable};
use std::collections::BTreeMap;

/// The fields the split reads, by tracepoint (a mechanism leaving any at zero is not used).
const FIELDS: &[(&str, &[&str])] = &[
    ("sched:sched_waking", &["pid"]),
    ("sched:sched_switch", &["prev_pid", "next_pid"]),
];

/// The tracepoints read.
pub(super) const EVENTS: &[(&str, &str)] = &[
    ("raw_syscalls", "sys_enter"),
    ("raw_syscalls", "sys_exit"),
    ("sched", "sched_waking"),
    ("sched", "sched_switch"),
];

/// Round trips traced (and as many timed untraced just before, in the same loop).
const ROUND_TRIPS: usize = 2000;
/// With `--quick`.
const ROUND_TRIPS_QUICK: usize = 400;
/// Round trips run before either, so both start warm.
const WARM_UP: usize = 200;
/// The stages must cover the traced one-way time within this share.
pub(super) const COVER_TOLERANCE: f64 = 0.05;

/// The stages of a hand-over, in order: `(key, label)`. A hand-over is the time one task holds
/// the CPU between two switches: switched in, it returns to user space, runs until it posts,
/// its post wakes the other task, and the CPU switches to that one. Their sum is the time from
/// switch to switch: one one-way hand-over.
pub const STAGES: [(&str, &str); 4] = [
    ("switch_to_return", "switch to return to user"),
    ("user", "user space to the post"),
    ("post_to_wake", "post's entry to wake-up"),
    ("wake_to_switch", "wake-up to switch"),
];

/// One traced event as the splitter reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ev {
    /// Task `tid` entered a system call.
    Enter(i64),
    /// Task `tid` returned from one.
    Exit(i64),
    /// Task `waker` woke task `target`.
    Waking {
        /// The task current when the wake-up happened.
        waker: i64,
        /// The task woken.
        target: i64,
    },
    /// The CPU switched from `prev` to `next`.
    Switch {
        /// Leaving.
        prev: i64,
        /// Coming in.
        next: i64,
    },
}

/// An event at a time, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct At {
    pub ns: u64,
    pub ev: Ev,
}

/// One hand-over's stages, ns, in the order of [`STAGES`].
pub(crate) type Stages = [f64; 4];

/// The hand-overs found in a trace.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Split {
    /// Each whole hand-over's stages, in time order.
    pub hand_overs: Vec<Stages>,
    /// Half of each round trip: two hand-overs in a row, one each way.
    pub halves: Vec<f64>,
    /// Hand-overs whose post woke the other task (it slept in its wait).
    pub woken: usize,
    /// Of those, the ones where the wake-up switched at once: the poster was preempted on its
    /// way back to user space, before its wait (the other task then posts without a wake-up).
    pub preempted: usize,
    /// Hand-overs cut short: the task was switched out to a third task, a record was lost, or
    /// no post could be told apart.
    pub broken: usize,
}

/// What the task holding the CPU did since it was switched in.
struct Turn {
    tid: i64,
    from: u64,
    /// The first event after the switch in was its return from a system call.
    ret: Option<u64>,
    seen: bool,
    /// Entries of its system calls; whether the last is still open.
    entries: Vec<u64>,
    open: bool,
    /// The wake-up of the other task, and the entry of the call it came from.
    wake: Option<(u64, u64)>,
}

/// Splits the hand-overs between tasks `a` and `b` on one CPU out of `events` (in time order;
/// other tasks' events may be among them). Each turn of a task, from the switch into it from
/// the other to the switch back, is one hand-over: the switch to its return from a system call
/// (its wait; none when it was preempted, not asleep), user space to the entry of its post,
/// the entry to the wake-up of the other task, and the wake-up to the switch. Without a
/// wake-up (the other was preempted, not waiting) the post is the call before the one it
/// blocked in (or, when that is its only call, a post made in user space), and the
/// post-to-wake stage is 0. A turn cut by a third task, or out of that
/// order (a lost record), is counted as broken, never split.
pub(crate) fn split(events: &[At], a: i64, b: i64) -> Split {
    let other = |t: i64| if t == a { b } else { a };
    let ours = |t: i64| t == a || t == b;
    let mut s = Split::default();
    let mut turn: Option<Turn> = None;
    // The previous hand-over's length, while the chain of hand-overs is unbroken.
    let mut pending: Option<f64> = None;
    for e in events {
        match e.ev {
            Ev::Enter(t) => {
                if let Some(u) = turn.as_mut().filter(|u| u.tid == t) {
                    u.seen = true;
                    u.entries.push(e.ns);
                    u.open = true;
                }
            }
            Ev::Exit(t) => {
                if let Some(u) = turn.as_mut().filter(|u| u.tid == t) {
                    if !u.seen {
                        u.ret = Some(e.ns);
                    }
                    u.seen = true;
                    u.open = false;
                }
            }
            Ev::Waking { waker, target } => {
                if let Some(u) = turn
                    .as_mut()
                    .filter(|u| u.tid == waker && target == other(waker))
                {
                    u.wake = match (u.open, u.entries.last()) {
                        (true, Some(&entry)) => Some((e.ns, entry)),
                        _ => None,
                    };
                }
            }
            Ev::Switch { prev, next } => {
                if let Some(u) = turn.take() {
                    match (u.tid == prev && next == other(prev)).then(|| finish(&u, e.ns)) {
                        Some(Some((stages, woken, preempted))) => {
                            s.woken += usize::from(woken);
                            s.preempted += usize::from(preempted);
                            let len: f64 = stages.iter().sum();
                            match pending.take() {
                                Some(p) => s.halves.push((p + len) / 2.0),
                                None => pending = Some(len),
                            }
                            s.hand_overs.push(stages);
                        }
                        _ => {
                            s.broken += 1;
                            pending = None;
                        }
                    }
                } else if ours(prev) && ours(next) {
                    // A turn whose start is unknown (the first, or after a broken one).
                    pending = None;
                }
                if ours(next) && prev == other(next) {
                    turn = Some(Turn {
                        tid: next,
                        from: e.ns,
                        ret: None,
                        seen: false,
                        entries: Vec::new(),
                        open: false,
                        wake: None,
                    });
                } else if ours(next) {
                    pending = None;
                }
            }
        }
    }
    s
}

/// The stages of turn `u` ended by a switch at `end`, whether it woke the other task and
/// whether that wake-up preempted it; `None` when its post cannot be told apart.
fn finish(u: &Turn, end: u64) -> Option<(Stages, bool, bool)> {
    let ret = u.ret.unwrap_or(u.from);
    let (post, wake) = match u.wake {
        Some((at, entry)) => (entry, at),
        None if u.open && u.entries.len() >= 2 => {
            let post = u.entries[u.entries.len() - 2];
            (post, post)
        }
        // A post that needed no system call (a semaphore's user-space fast path with nobody
        // waiting): the one call is the wait it blocked in.
        None if u.open && u.entries.len() == 1 => (u.entries[0], u.entries[0]),
        None => return None,
    };
    if post < ret || wake > end {
        return None;
    }
    let d = |x: u64, y: u64| (y - x) as f64;
    let stages = [d(u.from, ret), d(ret, post), d(post, wake), d(wake, end)];
    Some((stages, u.wake.is_some(), u.wake.is_some() && !u.open))
}

/// The traced pass of one case.
pub(super) struct Traced {
    /// Round trips timed by the loop while traced, ns.
    pub traced_ns: Vec<f64>,
    /// The same loop just before, untraced, ns.
    pub plain_ns: Vec<f64>,
    /// The hand-overs found.
    pub split: Split,
    /// Records the kernel dropped.
    pub lost: u64,
    /// Those of them the kernel counted by tracepoint (BPF programs it did not run).
    pub lost_by_event: BTreeMap<String, u64>,
    /// Records of the two tasks read.
    pub records: usize,
    /// Switches from one task to the other the trace holds.
    pub switches: usize,
    /// What was changed on the machine for the pass.
    pub notes: Vec<oscost_model::Message>,
    /// How the tracepoints were recorded.
    pub mechanism: Mechanism,
}

/// Turns a record into an event, by the format of its tracepoint.
fn decode(r: &Record, raw: &crate::kview::Raw) -> Option<At> {
    let f = raw.format(r)?;
    let tid = i64::from(r.tid);
    let ev = match f.name.as_str() {
        "raw_syscalls:sys_enter" => Ev::Enter(tid),
        "raw_syscalls:sys_exit" => Ev::Exit(tid),
        "sched:sched_waking" => Ev::Waking {
            waker: tid,
            target: f.int(&r.raw, "pid")?,
        },
        "sched:sched_switch" => Ev::Switch {
            prev: f.int(&r.raw, "prev_pid")?,
            next: f.int(&r.raw, "next_pid")?,
        },
        _ => return None,
    };
    Some(At { ns: r.time_ns, ev })
}

/// Runs the ping-pong `spec` again: warm-up, `n` round trips untraced, `n` traced on `cpus`
/// by the first of `mechanisms` this kernel allows.
/// `Ok(Err(_))`: tracing is not to be had here, in one line saying why and how to get it.
pub(super) fn traced_pass(
    spec: &RingSpec,
    cpus: &[usize],
    mechanisms: &[Mechanism],
    ctx: &Context,
) -> anyhow::Result<Result<Traced, Unavailable>> {
    let n = if ctx.quick {
        ROUND_TRIPS_QUICK
    } else {
        ROUND_TRIPS
    };
    let pass = Pass {
        each: true,
        needs_all: Some("a hand-over cannot be split without them"),
        fields: FIELDS,
        ..Pass::new(EVENTS, cpus, mechanisms)
    };
    let (mut session, notes) = match Session::open(&pass) {
        Ok(s) => s,
        Err(u) => return Ok(Err(u)),
    };
    let mut ring = Ring::start(spec, ctx)?;
    let (a, b) = (ring.tids()[0], ring.tids()[1]);
    // Only the two tasks' system calls: every other task's on the CPU would fill the ring.
    session.keep_threads(&[a as u32, b as u32])?;
    let mechanism = session.mechanism();
    ring.begin();
    for _ in 0..WARM_UP {
        ring.op()?;
    }
    ctx.check_cancel()?;
    let clock = ctx.clock;
    let timed = |ring: &mut Ring| -> anyhow::Result<Vec<f64>> {
        let mut v = Vec::with_capacity(n);
        let mut last = clock.now();
        for _ in 0..n {
            ring.op()?;
            let now = clock.now();
            v.push(clock.ticks_to_ns(now.wrapping_sub(last) as f64));
            last = now;
        }
        Ok(v)
    };
    let plain_ns = timed(&mut ring)?;
    session.start(clock)?;
    let traced_ns = timed(&mut ring);
    let raw = session.stop_raw(clock)?;
    let traced_ns = traced_ns?;
    ring.end()?;
    let events: Vec<At> = raw.records.iter().filter_map(|r| decode(r, &raw)).collect();
    let count = raw
        .records
        .iter()
        .filter(|r| r.tid as i32 == a || r.tid as i32 == b)
        .count();
    let pair = |t: i64| t == i64::from(a) || t == i64::from(b);
    let switches = events
        .iter()
        .filter(|e| matches!(e.ev, Ev::Switch { prev, next } if pair(prev) && pair(next)))
        .count();
    Ok(Ok(Traced {
        switches,
        traced_ns,
        plain_ns,
        split: split(&events, i64::from(a), i64::from(b)),
        lost: raw.lost,
        lost_by_event: raw.lost_by_event.clone(),
        records: count,
        notes,
        mechanism,
    }))
}

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

fn median(v: &[f64]) -> f64 {
    oscost_stats::percentile(&sorted(v), 50.0)
}

/// Hand-overs longer than this percentile of their lengths (an interrupt, a tick inside) are
/// left out of the stages' means, so a rare long one does not move them.
const TRIM_PERCENTILE: f64 = 99.0;

/// Each stage's mean over the hand-overs up to the [`TRIM_PERCENTILE`] of their lengths (so
/// the means add up to those hand-overs' mean length), and how many were kept.
pub(crate) fn stage_means(hand_overs: &[Stages]) -> (Stages, usize) {
    let lens: Vec<f64> = hand_overs.iter().map(|h| h.iter().sum()).collect();
    let cut = oscost_stats::percentile(&sorted(&lens), TRIM_PERCENTILE);
    let kept: Vec<&Stages> = hand_overs
        .iter()
        .zip(&lens)
        .filter(|(_, &l)| l <= cut)
        .map(|(h, _)| h)
        .collect();
    let mut m = [0.0; 4];
    for h in &kept {
        for (m, v) in m.iter_mut().zip(h.iter()) {
            *m += v;
        }
    }
    for v in &mut m {
        *v /= kept.len().max(1) as f64;
    }
    (m, kept.len())
}

/// The mean of `v` up to its [`TRIM_PERCENTILE`].
fn trimmed_mean(v: &[f64]) -> f64 {
    let v = sorted(v);
    let cut = oscost_stats::percentile(&v, TRIM_PERCENTILE);
    let kept: Vec<f64> = v.into_iter().filter(|&x| x <= cut).collect();
    kept.iter().sum::<f64>() / kept.len().max(1) as f64
}

/// The case of one traced pass: each stage's mean (the figure that adds up) with its median,
/// p10 and p90 where it happened, their sum against the one-way time the loop timed while
/// traced (a check, within ±5 %) and against the timed case's, and what tracing cost.
pub(super) fn stages_case(timed: &Case, t: &Traced, ns_per_tick: f64) -> Case {
    let s = &t.split;
    let samples = Samples {
        per_op_ticks: s.halves.iter().map(|v| v / ns_per_tick).collect(),
        per_op_ns: s.halves.clone(),
        iterations_per_sample: 1,
        loop_overhead_ns: 0.0,
    };
    let mut case = Case::new(
        oscost_model::ids::switch::stages(&timed.id),
        format!(
            "the same ping-pong again, traced: {} round trips with the kernel's system call, \
             wake-up and switch events recorded by {} ({}); half of each round trip as the \
             kernel's switches time it",
            t.traced_ns.len(),
            t.mechanism.describe(),
            t.mechanism.name()
        ),
        "one-way hand-over",
        samples,
    )
    .param("kernel_view", true)
    .param(
        "stages",
        serde_json::json!(STAGES.iter().map(|(k, l)| [k, l]).collect::<Vec<_>>()),
    );
    for k in ["via", "kind", "placement", "cpus"] {
        if let Some(v) = timed.params.get(k) {
            case.params.insert(k.into(), v.clone());
        }
    }
    let c = &mut case.counters;
    c.insert("hand_overs".into(), s.hand_overs.len() as f64);
    c.insert("hand_overs_woken".into(), s.woken as f64);
    c.insert("hand_overs_preempted".into(), s.preempted as f64);
    c.insert("hand_overs_broken".into(), s.broken as f64);
    c.insert("trace_records".into(), t.records as f64);
    c.insert("round_trips_traced".into(), t.traced_ns.len() as f64);
    c.insert(
        "switches_per_round_trip_traced".into(),
        t.switches as f64 / t.traced_ns.len().max(1) as f64,
    );
    let traced_rt = median(&t.traced_ns);
    let plain_rt = median(&t.plain_ns);
    c.insert("traced_round_trip_ns".into(), traced_rt);
    c.insert("untraced_round_trip_ns".into(), plain_rt);
    c.insert("trace_cost_ns".into(), traced_rt - plain_rt);
    c.insert(
        "trace_cost_pct".into(),
        (traced_rt - plain_rt) / plain_rt * 100.0,
    );
    c.insert("traced_vs_untraced".into(), traced_rt / plain_rt);
    case.trace = Some(oscost_model::TraceCost {
        mechanism: t.mechanism.name().into(),
        per: "round trip".into(),
        untraced_ns: plain_rt,
        traced_ns: traced_rt,
        lost: t.lost,
    });
    if t.lost > 0 {
        case.warnings.push(
            format!(
                "{} trace records were lost{}: the hand-overs around them were left out",
                t.lost,
                kview::lost_words(&t.lost_by_event)
            )
            .into(),
        );
        case.counters
            .insert("trace_records_lost".into(), t.lost as f64);
        case.counters.extend(kview::lost_counters(&t.lost_by_event));
    }
    if s.hand_overs.is_empty() {
        case.warnings.push(
            format!(
                "{}: no whole hand-over in the trace ({} broken): no stages",
                case.id, s.broken
            )
            .into(),
        );
        return case;
    }
    let (means, kept) = stage_means(&s.hand_overs);
    let c = &mut case.counters;
    c.insert("hand_overs_in_means".into(), kept as f64);
    for (i, ((key, _), mean)) in STAGES.iter().zip(means).enumerate() {
        c.insert(format!("stage.{key}.mean_ns"), mean);
        let there = sorted(
            &s.hand_overs
                .iter()
                .map(|h| h[i])
                .filter(|&v| v > 0.0)
                .collect::<Vec<_>>(),
        );
        c.insert(format!("stage.{key}.count"), there.len() as f64);
        if !there.is_empty() {
            let p = |q| oscost_stats::percentile(&there, q);
            c.insert(format!("stage.{key}.median_ns"), p(50.0));
            c.insert(format!("stage.{key}.p10_ns"), p(10.0));
            c.insert(format!("stage.{key}.p90_ns"), p(90.0));
        }
    }
    let sum: f64 = means.iter().sum();
    c.insert("stages_sum_ns".into(), sum);
    // Means against a mean: both keep the same share of their slowest, so a tail counts alike.
    let one_way = trimmed_mean(&t.traced_ns) / 2.0;
    c.insert("traced_one_way_ns".into(), one_way);
    c.insert("traced_one_way_median_ns".into(), traced_rt / 2.0);
    if !s.halves.is_empty() {
        let k = median(&s.halves);
        c.insert("kernel_one_way_median_ns".into(), k);
        c.insert("kernel_vs_loop_median".into(), k / (traced_rt / 2.0));
    }
    c.insert("stages_vs_traced_one_way".into(), sum / one_way);
    if !timed.samples.per_op_ns.is_empty() {
        let w = median(&timed.samples.per_op_ns) / 2.0;
        c.insert("timed_one_way_ns".into(), w);
        c.insert("stages_vs_timed_one_way".into(), sum / w);
    }
    let check = Check::near(
        "stages_cover_one_way",
        one_way,
        sum,
        COVER_TOLERANCE * one_way,
        &format!(
            "sum of the stages' means (over {kept} hand-overs, up to their p99) against half \
             the mean round trip the loop timed while traced ({} round trips, up to their \
             p99); within ±5 %",
            t.traced_ns.len()
        ),
    );
    if !check.passed {
        let per_rt = t.switches as f64 / t.traced_ns.len().max(1) as f64;
        let (short, missing) =
            if per_rt > 2.1 {
                (
                if sum < one_way { "short of" } else { "more than" },
                "a round trip here is more than two turns (the trace holds more than 2 switches \
                 between the tasks per round trip, as in a lock hand-off), so one turn is not \
                 one one-way hand-over",
            )
            } else if sum < one_way {
                (
                "short of",
                "the rest is time between the hand-overs the trace split: turns cut by a third \
                 task or a lost record, left out",
            )
            } else {
                (
                "more than",
                "the kernel's hand-overs are longer than the loop's round trips: time the loop \
                 did not see, or a turn counted twice",
            )
            };
        case.warnings.push(
            format!(
            "the stages sum to {sum:.0} ns, {short} the traced one-way time {one_way:.0} ns by \
             {:.1} %: {missing}",
            (sum - one_way).abs() / one_way * 100.0,
        )
            .into(),
        );
    }
    case.checks.push(check);
    case
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: i64 = 10;
    const B: i64 = 20;

    fn at(ns: u64, ev: Ev) -> At {
        At { ns, ev }
    }

    /// A turn of `p` (waking `w`), switched in at `t`: its wait returns at +50, it posts at
    /// +200, wakes `w` at +300, its post returns at +350, it waits at +400 and the CPU switches
    /// to `w` at +500.
    fn turn(p: i64, w: i64, t: u64) -> Vec<At> {
        vec![
            at(t, Ev::Switch { prev: w, next: p }),
            at(t + 50, Ev::Exit(p)),
            at(t + 200, Ev::Enter(p)),
            at(
                t + 300,
                Ev::Waking {
                    waker: p,
                    target: w,
                },
            ),
            at(t + 350, Ev::Exit(p)),
            at(t + 400, Ev::Enter(p)),
        ]
    }

    /// `n` turns, one every 500 ns, and the switch that ends the last.
    fn pingpong(n: usize) -> Vec<At> {
        let mut v: Vec<At> = (0..n)
            .flat_map(|i| {
                let (p, w) = if i.is_multiple_of(2) { (A, B) } else { (B, A) };
                turn(p, w, 500 * i as u64)
            })
            .collect();
        let (p, w) = if n.is_multiple_of(2) { (A, B) } else { (B, A) };
        v.push(at(500 * n as u64, Ev::Switch { prev: w, next: p }));
        v
    }

    #[test]
    fn known_times_give_known_stages() {
        let s = split(&pingpong(6), A, B);
        assert_eq!(s.hand_overs, vec![[50.0, 150.0, 100.0, 200.0]; 6]);
        assert_eq!((s.woken, s.preempted, s.broken), (6, 0, 0));
        assert_eq!(s.halves, vec![500.0; 3]);
        let (m, kept) = stage_means(&s.hand_overs);
        assert_eq!((m, kept), ([50.0, 150.0, 100.0, 200.0], 6));
    }

    /// The wake-up preempts the poster on its way back to user space; the woken task posts
    /// back without a wake-up (the first is runnable, not waiting) and blocks in its wait.
    #[test]
    fn a_preempting_wake_up_and_a_post_without_one_are_split() {
        let ev = vec![
            at(0, Ev::Switch { prev: B, next: A }),
            at(100, Ev::Enter(A)),
            at(
                200,
                Ev::Waking {
                    waker: A,
                    target: B,
                },
            ),
            at(300, Ev::Exit(A)),
            at(400, Ev::Switch { prev: A, next: B }),
            at(450, Ev::Exit(B)),
            at(600, Ev::Enter(B)),
            at(700, Ev::Exit(B)),
            at(800, Ev::Enter(B)),
            at(1000, Ev::Switch { prev: B, next: A }),
            // A resumes in user space: its wait finds the token.
            at(1100, Ev::Enter(A)),
            at(1150, Ev::Exit(A)),
            at(1300, Ev::Switch { prev: A, next: B }),
        ];
        let s = split(&ev, A, B);
        assert_eq!(
            s.hand_overs,
            vec![[0.0, 100.0, 100.0, 200.0], [50.0, 150.0, 0.0, 400.0]]
        );
        assert_eq!((s.woken, s.preempted, s.broken), (1, 1, 1));
        assert_eq!(s.halves, vec![500.0]);
    }

    /// A post made in user space (nobody waiting): the turn's one call is the wait it
    /// blocks in.
    #[test]
    fn a_post_without_a_system_call_is_split_at_the_wait() {
        let ev = vec![
            at(0, Ev::Switch { prev: B, next: A }),
            at(100, Ev::Exit(A)),
            at(400, Ev::Enter(A)),
            at(700, Ev::Switch { prev: A, next: B }),
        ];
        let s = split(&ev, A, B);
        assert_eq!(s.hand_overs, vec![[100.0, 300.0, 0.0, 300.0]]);
        assert_eq!((s.woken, s.broken), (0, 0));
    }

    #[test]
    fn other_tasks_events_are_ignored_and_a_third_task_breaks_a_turn() {
        let mut ev = pingpong(5);
        ev.push(at(120, Ev::Enter(99)));
        ev.push(at(
            130,
            Ev::Waking {
                waker: 99,
                target: A,
            },
        ));
        ev.push(at(
            260,
            Ev::Waking {
                waker: A,
                target: 98,
            },
        ));
        // The third turn (A's, from 1000) is cut by another task, which hands back to A.
        ev.push(at(1220, Ev::Switch { prev: A, next: 99 }));
        ev.push(at(1240, Ev::Switch { prev: 99, next: A }));
        ev.sort_by_key(|e| e.ns);
        let s = split(&ev, A, B);
        assert_eq!(s.hand_overs.len(), 4);
        assert_eq!(s.broken, 1);
        assert!(s
            .hand_overs
            .iter()
            .all(|h| *h == [50.0, 150.0, 100.0, 200.0]));
        // The turn after the cut starts a new pair.
        assert_eq!(s.halves, vec![500.0, 500.0]);
    }

    #[test]
    fn a_lost_record_breaks_its_turn_only() {
        // The wake-up of the second turn is lost, and its post cannot be told apart either
        // (its wait entry is lost too).
        let mut ev = pingpong(5);
        ev.retain(|e| e.ns != 800 && e.ns != 900);
        let s = split(&ev, A, B);
        assert_eq!((s.hand_overs.len(), s.broken), (4, 1));
        // The switch that ends the third turn is lost: it runs into the fourth.
        let mut ev = pingpong(5);
        ev.retain(|e| e.ns != 1500);
        let s = split(&ev, A, B);
        assert_eq!(s.hand_overs.len(), 3);
        assert!(s
            .hand_overs
            .iter()
            .all(|h| *h == [50.0, 150.0, 100.0, 200.0]));
    }

    #[test]
    fn garbled_order_is_broken_not_measured() {
        // A wake-up outside any system call, then a wake-up past the switch's time.
        let ev = vec![
            at(0, Ev::Switch { prev: B, next: A }),
            at(
                100,
                Ev::Waking {
                    waker: A,
                    target: B,
                },
            ),
            at(200, Ev::Switch { prev: A, next: B }),
        ];
        let s = split(&ev, A, B);
        assert_eq!((s.hand_overs.len(), s.broken), (0, 1));
        assert_eq!(split(&[], A, B), Split::default());
    }

    #[test]
    fn a_long_hand_over_is_left_out_of_the_means() {
        let mut h = vec![[50.0, 150.0, 100.0, 200.0]; 199];
        h.push([50.0, 150.0, 100.0, 90_000.0]);
        let (m, kept) = stage_means(&h);
        assert_eq!(kept, 199);
        assert_eq!(m.iter().sum::<f64>(), 500.0);
    }

    fn traced(split: Split, traced_rt: f64, plain_rt: f64) -> Traced {
        Traced {
            traced_ns: vec![traced_rt; 9],
            plain_ns: vec![plain_rt; 9],
            split,
            lost: 0,
            lost_by_event: BTreeMap::new(),
            records: 0,
            switches: 18,
            notes: Vec::new(),
            mechanism: Mechanism::Bpf,
        }
    }

    fn timed(rt: f64) -> Case {
        Case::new(
            "switch.pipe.threads.same",
            "x",
            "round trip",
            oscost_model::example::samples(&[rt; 5]),
        )
        .param("via", "pipe")
    }

    #[test]
    fn the_case_holds_the_sum_against_the_one_way_times() {
        let s = split(&pingpong(8), A, B);
        let c = stages_case(&timed(800.0), &traced(s.clone(), 1000.0, 800.0), 1.0);
        assert_eq!(c.id, "switch.pipe.threads.same.stages");
        assert_eq!(c.params["via"], "pipe");
        assert_eq!(c.samples.per_op_ns, vec![500.0; 4]);
        assert_eq!(c.counters["stages_sum_ns"], 500.0);
        assert_eq!(c.counters["stages_vs_traced_one_way"], 1.0);
        assert_eq!(c.counters["stages_vs_timed_one_way"], 1.25);
        assert_eq!(c.counters["trace_cost_ns"], 200.0);
        assert_eq!(c.counters["trace_cost_pct"], 25.0);
        let cost = c.trace.as_ref().unwrap();
        assert_eq!((cost.mechanism.as_str(), cost.ratio()), ("bpf", 1.25));
        assert!(c.description.contains("BPF"), "{}", c.description);
        assert_eq!(c.counters["switches_per_round_trip_traced"], 2.0);
        assert_eq!(c.counters["stage.wake_to_switch.mean_ns"], 200.0);
        assert_eq!(c.counters["stage.post_to_wake.median_ns"], 100.0);
        assert!(c.checks.iter().all(|k| k.passed), "{:?}", c.checks);
        assert!(c.warnings.is_empty());
        // A traced round trip the stages cover only 80 % of is flagged, with why.
        let c = stages_case(&timed(800.0), &traced(s, 1250.0, 800.0), 1.0);
        assert!(!c.checks[0].passed);
        assert!(c.warnings[0].contains("short of"), "{:?}", c.warnings);
        // No whole hand-over: no stages, and a line says so.
        let c = stages_case(&timed(800.0), &traced(Split::default(), 1000.0, 800.0), 1.0);
        assert!(!c.counters.contains_key("stages_sum_ns"));
        assert!(c.warnings[0].contains("no whole hand-over"));
    }
}
