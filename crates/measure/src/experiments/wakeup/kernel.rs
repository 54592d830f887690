//! `wakeup`'s traced pass: the same wake-ups again, apart from the timed ones, with the
//! kernel's tracepoints recorded on the thread's CPU, and each wake-up's lateness split by the
//! kernel's own timestamps, as `rtla timerlat` splits it but without its tracer: the deadline
//! to the timer's programmed expiry (timer slack), the expiry to the timer interrupt's run of
//! it (`hrtimer_expire_entry`'s `now`), the interrupt to the switch into the thread, the switch
//! to its return to user space (`sys_exit`), and that return to the clock read. The worst
//! wake-ups are explained by what held the CPU in between.

use crate::kview::{self, Decoder, Kind, Segment, TimeMap};
use oscost_model::case::{Case, Check, Samples, Series};
use oscost_sys::kseam::Mechanism;
use oscost_sys::ktrace::Record;
use serde_json::json;
use std::collections::BTreeMap;

/// The tracepoints the split needs (the others only explain the worst wake-ups further).
pub(super) const NEEDED: &[(&str, &str)] = &[
    ("timer", "hrtimer_start"),
    ("timer", "hrtimer_expire_entry"),
    ("timer", "hrtimer_expire_exit"),
    ("sched", "sched_switch"),
    ("raw_syscalls", "sys_exit"),
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
    ("irq", "softirq_entry"),
    ("irq", "softirq_exit"),
];

/// The fields the split reads, by tracepoint: a mechanism whose records would leave any of
/// them at zero is not used for the pass (BPF's programs record no timer's expiry or clock).
pub(super) const FIELDS: &[(&str, &[&str])] = &[
    (
        "timer:hrtimer_start",
        &["hrtimer", "softexpires", "expires"],
    ),
    ("timer:hrtimer_expire_entry", &["hrtimer", "now"]),
    ("sched:sched_switch", &["next_pid"]),
];

/// The tracepoints read: those the split needs, and on x86 the interrupt vectors' entries
/// and exits (the local timer's among them), which explain the worst wake-ups further.
pub(super) fn events() -> Vec<(&'static str, &'static str)> {
    let mut v = NEEDED.to_vec();
    if cfg!(target_arch = "x86_64") {
        v.extend(
            kview::NOISE_EVENTS
                .iter()
                .filter(|(s, _)| *s == "irq_vectors")
                .copied(),
        );
    }
    v
}

/// Wake-ups traced at most per case (the buffers hold every record of this many).
pub(super) const TRACED_MAX: usize = 2000;
/// The wake-ups explained one by one.
pub(super) const WORST: usize = 10;
/// The median of each wake-up's parts added up must be within this share of the measured
/// median lateness.
pub(super) const SUM_TOLERANCE: f64 = 0.05;

/// The parts of a wake-up's lateness, in order: `(key, label)`. They add up to the lateness
/// the thread measured: deadline, programmed expiry, interrupt, switch, return, clock read.
pub const PARTS: [(&str, &str); 5] = [
    ("slack", "deadline to the timer's expiry (slack)"),
    ("interrupt", "expiry to the timer interrupt"),
    ("to_switch", "interrupt to the switch into the thread"),
    ("to_return", "switch to the return to user space"),
    ("user", "return to the clock read"),
];

/// One wake-up's parts, ns, in the order of [`PARTS`].
pub(crate) type Parts = [f64; 5];

/// One traced event as the splitter reads it; times of the timers' own clock
/// (`CLOCK_MONOTONIC`) where the event carries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ev {
    /// Task `tid` started timer `timer`, due at `soft` and programmed for `hard` (soft plus
    /// the task's timer slack).
    Start {
        tid: i64,
        timer: u64,
        soft: i64,
        hard: i64,
    },
    /// The timer interrupt ran timer `timer`, its clock reading `now`.
    Expire { timer: u64, now: i64 },
    /// The CPU switched to task `next`.
    Switch { next: i64 },
    /// Task `tid` returned from a system call.
    Exit { tid: i64 },
}

/// An event at a time of the tracer's clock, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct At {
    pub ns: u64,
    pub ev: Ev,
}

/// Maps `CLOCK_MONOTONIC` onto the tracer's clock and back, by two anchors
/// `(monotonic, tracer)` taken around the pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Clocks {
    a: (f64, f64),
    /// Tracer ns per monotonic ns.
    rate: f64,
}

impl Clocks {
    pub fn new(a: (u64, u64), b: (u64, u64)) -> Clocks {
        let dm = (b.0 as f64 - a.0 as f64).max(1.0);
        Clocks {
            a: (a.0 as f64, a.1 as f64),
            rate: (b.1 as f64 - a.1 as f64) / dm,
        }
    }

    /// The tracer's time at monotonic `ns`.
    pub fn tracer(&self, mono: f64) -> f64 {
        self.a.1 + (mono - self.a.0) * self.rate
    }

    /// The monotonic time at tracer time `ns`.
    pub fn mono(&self, tracer: f64) -> f64 {
        self.a.0 + (tracer - self.a.1) / self.rate
    }
}

/// One wake-up as the thread saw it, `CLOCK_MONOTONIC` ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wake {
    pub deadline: u64,
    pub woke: u64,
}

/// How far a tracer time mapped onto the monotonic clock may land after the thread's own
/// reading and still be the event before it (the anchors' own uncertainty).
const MAP_SLOP_NS: f64 = 2_000.0;

/// One wake-up split: its parts, and the stretch from its deadline to its return to user
/// space on the tracer's clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Found {
    pub parts: Parts,
    pub from: f64,
    pub to: f64,
}

/// Splits each wake-up of task `tid` (in order) by `events` (in time order, one CPU): the
/// timer the task started for the wake-up's deadline (its soft expiry the deadline itself when
/// `exact`, as an absolute deadline is handed to the kernel; else within half a period after
/// it, as a relative sleep's is reckoned from the kernel's reading), the interrupt's run of that timer, the first switch into the task after it and
/// the task's first return from a system call after that switch, none of them after the
/// thread's own reading. A wake-up without all four, or with them out of order, is `None`.
pub(crate) fn split(
    events: &[At],
    wakes: &[Wake],
    tid: i64,
    period_ns: u64,
    exact: bool,
    clocks: &Clocks,
) -> Vec<Option<Found>> {
    let mut cursor = 0;
    let window = if exact { 1 } else { (period_ns / 2) as i64 };
    wakes
        .iter()
        .map(|w| {
            let found = one(events, cursor, w, tid, window, clocks);
            if let Some((_, after)) = found {
                cursor = after;
            }
            found.map(|(f, _)| f)
        })
        .collect()
}

/// [`split`] of one wake-up, searching from event `from`: the split and the index of the
/// timer's start (the next wake-up's start comes after it).
fn one(
    events: &[At],
    from: usize,
    w: &Wake,
    tid: i64,
    window: i64,
    clocks: &Clocks,
) -> Option<(Found, usize)> {
    let d = w.deadline as i64;
    let latest = clocks.tracer(w.woke as f64 + MAP_SLOP_NS);
    let (si, timer, hard) = events[from..]
        .iter()
        .enumerate()
        .find_map(|(i, e)| match e.ev {
            Ev::Start {
                tid: t,
                timer,
                soft,
                hard,
            } if t == tid && soft >= d && soft < d + window => Some((from + i, timer, hard)),
            _ => None,
        })?;
    let rest = &events[si + 1..];
    let (ei, now) = rest.iter().enumerate().find_map(|(i, e)| match e.ev {
        Ev::Expire { timer: t, now } if t == timer => Some((i, now)),
        _ => None,
    })?;
    let rest = &rest[ei + 1..];
    let (wi, switch) = rest
        .iter()
        .enumerate()
        .find(|(_, e)| e.ev == Ev::Switch { next: tid })?;
    let exit = rest[wi + 1..].iter().find(|e| e.ev == Ev::Exit { tid })?;
    if now < d || exit.ns as f64 > latest {
        return None;
    }
    let (s, x) = (clocks.mono(switch.ns as f64), clocks.mono(exit.ns as f64));
    let now = now as f64;
    let expiry = (hard as f64).min(now);
    let parts = [
        expiry - d as f64,
        now - expiry,
        s - now,
        x - s,
        w.woke as f64 - x,
    ];
    Some((
        Found {
            parts,
            from: clocks.tracer(d as f64),
            to: exit.ns as f64,
        },
        si,
    ))
}

/// Turns a record into an event of the splitter, by the format of its tracepoint.
pub(super) fn decode(r: &Record, raw: &kview::Raw) -> Option<At> {
    let f = raw.format(r)?;
    let ev = match f.name.as_str() {
        "timer:hrtimer_start" => Ev::Start {
            tid: i64::from(r.tid),
            timer: f.int(&r.raw, "hrtimer")? as u64,
            soft: f.int(&r.raw, "softexpires")?,
            hard: f.int(&r.raw, "expires")?,
        },
        "timer:hrtimer_expire_entry" => Ev::Expire {
            timer: f.int(&r.raw, "hrtimer")? as u64,
            now: f.int(&r.raw, "now")?,
        },
        "sched:sched_switch" => Ev::Switch {
            next: f.int(&r.raw, "next_pid")?,
        },
        "raw_syscalls:sys_exit" => Ev::Exit {
            tid: i64::from(r.tid),
        },
        _ => return None,
    };
    Some(At { ns: r.time_ns, ev })
}

/// What held the CPU in `[from, to)`: each label's time in it, the largest first, and the
/// time no event accounts for.
pub(crate) fn between(segs: &[Segment], from: f64, to: f64) -> (Vec<(String, f64)>, f64) {
    let first = segs.partition_point(|s| s.to <= from);
    let mut by: BTreeMap<&str, f64> = BTreeMap::new();
    for s in segs[first..].iter().take_while(|s| s.from < to) {
        let t = s.to.min(to) - s.from.max(from);
        if t > 0.0 {
            *by.entry(&s.label).or_insert(0.0) += t;
        }
    }
    let seen: f64 = by.values().sum();
    let mut v: Vec<(String, f64)> = by.into_iter().map(|(l, t)| (l.to_owned(), t)).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    (v, (to - from - seen).max(0.0))
}

/// The stretches of the CPU's time the kernel's events give to a handler, a task (this
/// thread's among them, by its name) or idle, on the tracer's clock; and whose each task's
/// time is ([`kview::whose_sources`]).
pub(super) fn segments_of(raw: &kview::Raw) -> (Vec<Segment>, BTreeMap<String, kview::Whose>) {
    // The identity: the tracer's ns are the segments' unit.
    let same = TimeMap::new((0, 0), (1 << 40, 1 << 40));
    let dec = Decoder::new(&raw.formats);
    let evs: Vec<(f64, Kind)> = raw
        .records
        .iter()
        .filter_map(|r| dec.decode(r, &same))
        .map(|e| (e.ticks, e.kind))
        .collect();
    let refs: Vec<(f64, &Kind)> = evs.iter().map(|(t, k)| (*t, k)).collect();
    let whose = kview::whose_sources(evs.iter().map(|(_, k)| k));
    // No task is left unnamed: the thread's own time is its name's.
    (kview::segments(&refs, -1), whose)
}

/// Whose time the slowest wake-ups were late by, each a share of its own lateness: the slack
/// (deadline to the timer's expiry), the return to user space and the clock read are the
/// OS's; from the expiry to the switch into the thread, each stretch by what ran
/// ([`kview::whose`]: the OS's handlers and kernel threads, other programs' tasks) and what
/// did not: nothing recorded, or the CPU idle while its timer was due, is time outside the
/// guest kernel's view (a virtual CPU whose host delivers its timer late idles meanwhile).
/// The slowest 1 % of the split wake-ups, at least two: the p99's company.
fn tail_whose(
    case: &mut Case,
    split: &[(usize, &Found)],
    lateness: &[f64],
    segments: &[Segment],
    whose: &BTreeMap<String, kview::Whose>,
) {
    let mut order: Vec<&(usize, &Found)> = split.iter().collect();
    order.sort_by(|a, b| lateness[b.0].total_cmp(&lateness[a.0]));
    let n = (split.len() / 100).max(2);
    let mut shares: [Vec<f64>; 3] = Default::default();
    let mut late = Vec::new();
    for (i, f) in order.into_iter().take(n) {
        let total: f64 = f.parts.iter().sum();
        if total <= 0.0 {
            continue;
        }
        let expiry = f.from + f.parts[0];
        let switch_in = expiry + f.parts[1] + f.parts[2];
        let (labels, unseen) = between(segments, expiry, switch_in);
        // The OS's, other programs', outside the guest kernel's view.
        let mut by = [f.parts[0] + f.parts[3] + f.parts[4], 0.0, unseen];
        for (label, d) in &labels {
            by[match kview::whose(label, whose) {
                _ if label == kview::IDLE => 2,
                kview::Whose::Os => 0,
                kview::Whose::Programs => 1,
                kview::Whose::Outside => 2,
            }] += d;
        }
        for (v, b) in shares.iter_mut().zip(by) {
            v.push(b / total);
        }
        late.push(lateness[*i]);
    }
    let c = &mut case.counters;
    for (key, v) in ["os", "programs", "outside"].into_iter().zip(&shares) {
        if let Some(s) = oscost_stats::share::mean_share(v) {
            c.insert(format!("tail.{key}_pct"), s.share * 100.0);
            c.insert(format!("tail.{key}_ci95_lo_pct"), s.ci95[0] * 100.0);
            c.insert(format!("tail.{key}_ci95_hi_pct"), s.ci95[1] * 100.0);
        }
    }
    if late.len() >= 2 {
        c.insert("tail.wakeups".into(), late.len() as f64);
        c.insert(
            "tail.lateness_mean_ns".into(),
            late.iter().sum::<f64>() / late.len() as f64,
        );
    }
}

fn us(ns: f64) -> String {
    format!("{:.1} µs", ns / 1e3)
}

/// The sentence saying what held the CPU over a worst wake-up.
pub(crate) fn explain(labels: &[(String, f64)], unseen: f64) -> String {
    let mut parts: Vec<String> = labels
        .iter()
        .map(|(l, t)| format!("{l} {}", us(*t)))
        .collect();
    if unseen > 0.0 {
        parts.push(format!("nothing recorded {}", us(unseen)));
    }
    if parts.is_empty() {
        "no event".into()
    } else {
        parts.join(", ")
    }
}

/// What one traced pass gave.
pub(super) struct Traced {
    /// Every wake-up the thread measured, `CLOCK_MONOTONIC` ns.
    pub wakes: Vec<Wake>,
    /// Each one's split, where it could be made.
    pub found: Vec<Option<Found>>,
    /// The CPU's stretches, for the worst wake-ups.
    pub segments: Vec<Segment>,
    /// Whose each task's stretches are.
    pub whose: BTreeMap<String, kview::Whose>,
    /// Records the mechanism lost.
    pub lost: u64,
    /// Records read.
    pub records: usize,
    /// Events the kernel counted but did not sample (perf, in an idle CPU's interrupts).
    pub unsampled: u64,
    /// How the tracepoints were recorded.
    pub mechanism: Mechanism,
    /// When the first period began, `CLOCK_MONOTONIC` ns.
    pub start_ns: u64,
}

/// The median of each wake-up's parts added up, and the median of the lateness measured on
/// the same wake-ups: what `parts_vs_measured` holds against each other.
fn sums_against_measured(parts: &[Parts], measured: &[f64]) -> (f64, f64) {
    let whole = sorted(parts.iter().map(|p| p.iter().sum::<f64>()).collect());
    (
        oscost_stats::percentile(&whole, 50.0),
        oscost_stats::percentile(&sorted(measured.to_vec()), 50.0),
    )
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

/// The case of one traced pass: each part's mean (the means add up to the mean lateness),
/// median and p99; the parts' medians against the median lateness the thread measured, as a
/// check within ±5 %, and the kernel's own parts (deadline to return) against it; the worst wake-ups explained; what tracing
/// cost against the timed case's median.
pub(super) fn split_case(timed: &Case, t: &Traced, ns_per_tick: f64) -> Case {
    let lateness: Vec<f64> = t
        .wakes
        .iter()
        .map(|w| w.woke.saturating_sub(w.deadline) as f64)
        .collect();
    let samples = Samples {
        per_op_ticks: lateness.iter().map(|v| v / ns_per_tick).collect(),
        per_op_ns: lateness.clone(),
        iterations_per_sample: 1,
        loop_overhead_ns: 0.0,
    };
    let mut case = Case::new(
        oscost_model::ids::wakeup::traced(&timed.id),
        format!(
            "the same wake-ups again, traced: {} of them with the kernel's timer, switch, \
             system call and interrupt events recorded by {} ({}), each one's lateness split \
             by them",
            t.wakes.len(),
            t.mechanism.describe(),
            t.mechanism.name()
        ),
        "wake-up",
        samples,
    )
    .param("kernel_view", true)
    .param(
        "parts",
        json!(PARTS.iter().map(|(k, l)| [k, l]).collect::<Vec<_>>()),
    );
    for k in ["policy", "mode", "period_ns", "cpu", "load", "priority"] {
        if let Some(v) = timed.params.get(k) {
            case.params.insert(k.into(), v.clone());
        }
    }
    let all = sorted(lateness.clone());
    let split: Vec<(usize, &Found)> = t
        .found
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.as_ref().map(|f| (i, f)))
        .collect();
    split_share(&mut case, lateness.len(), split.len(), t.unsampled);
    let c = &mut case.counters;
    c.insert("wakeups".into(), lateness.len() as f64);
    c.insert("wakeups_split".into(), split.len() as f64);
    c.insert(
        "wakeups_unsplit".into(),
        (lateness.len() - split.len()) as f64,
    );
    c.insert("trace_records".into(), t.records as f64);
    c.insert(
        "lateness_p50_ns".into(),
        oscost_stats::percentile(&all, 50.0),
    );
    c.insert(
        "lateness_p99_ns".into(),
        oscost_stats::percentile(&all, 99.0),
    );
    c.insert(
        "lateness_max_ns".into(),
        oscost_stats::percentile(&all, 100.0),
    );
    let traced = c["lateness_p50_ns"];
    let untraced = timed.counters.get("lateness_p50_ns").copied();
    if let Some(untraced) = untraced {
        c.insert("untraced_lateness_p50_ns".into(), untraced);
        c.insert("trace_cost_ns".into(), traced - untraced);
        c.insert(
            "trace_cost_pct".into(),
            (traced - untraced) / untraced * 100.0,
        );
        case.trace = Some(oscost_model::TraceCost {
            mechanism: t.mechanism.name().into(),
            per: "wake-up lateness (median)".into(),
            untraced_ns: untraced,
            traced_ns: traced,
            lost: t.lost,
        });
    }
    if t.lost > 0 {
        case.warnings.push(
            format!(
                "{} trace records were lost (a buffer filled up): the wake-ups around them \
                 were not split",
                t.lost
            )
            .into(),
        );
        case.counters
            .insert("trace_records_lost".into(), t.lost as f64);
    }
    if split.is_empty() {
        case.warnings.push(
            format!(
                "{}: no wake-up could be split ({} traced): no parts",
                case.id,
                lateness.len()
            )
            .into(),
        );
        return case;
    }
    let n = split.len() as f64;
    let mut medians = 0.0;
    for (i, (key, _)) in PARTS.iter().enumerate() {
        let v = sorted(split.iter().map(|(_, f)| f.parts[i]).collect());
        let c = &mut case.counters;
        c.insert(format!("part.{key}.mean_ns"), v.iter().sum::<f64>() / n);
        let median = oscost_stats::percentile(&v, 50.0);
        medians += median;
        c.insert(format!("part.{key}.median_ns"), median);
        c.insert(
            format!("part.{key}.p99_ns"),
            oscost_stats::percentile(&v, 99.0),
        );
    }
    // The kernel's share: deadline to return to user space, the parts the trace times.
    let kernel = sorted(
        split
            .iter()
            .map(|(_, f)| f.parts[..4].iter().sum::<f64>())
            .collect(),
    );
    // Each wake-up's five parts added up: the median of those sums is what the measured
    // median is held to. The sum of the parts' medians is not a median of anything where a
    // part is skewed (a SCHED_FIFO wake-up's interrupt: median 5.9 µs, mean 8.1 µs), and
    // held to the measured median it failed a split that was whole.
    let parts: Vec<Parts> = split.iter().map(|(_, f)| f.parts).collect();
    let measured: Vec<f64> = split.iter().map(|(i, _)| lateness[*i]).collect();
    let (wm, mm) = sums_against_measured(&parts, &measured);
    let km = oscost_stats::percentile(&kernel, 50.0);
    let c = &mut case.counters;
    c.insert("kernel_median_ns".into(), km);
    c.insert("measured_median_ns".into(), mm);
    c.insert("kernel_vs_measured".into(), km / mm);
    c.insert("parts_median_sum_ns".into(), medians);
    c.insert("parts_sum_median_ns".into(), wm);
    c.insert("parts_vs_measured".into(), wm / mm);
    case.checks.push(Check::near(
        "parts_vs_measured",
        1.0,
        wm / mm,
        SUM_TOLERANCE,
        &format!(
            "each of the {} wake-ups split, its five parts added up: their median {}, \
             against the median lateness the thread measured on them, {}; within ±5 % (the \
             kernel's own parts, deadline to sys_exit, are {} of it)",
            split.len(),
            us(wm),
            us(mm),
            format_args!("{:.1} %", km / mm * 100.0)
        ),
    ));
    if (wm / mm - 1.0).abs() > SUM_TOLERANCE {
        case.warnings.push(
            format!(
                "{}: the wake-ups' parts add up to a median of {:.0} % of the measured median \
                 lateness: the split does not account for it",
                case.id,
                wm / mm * 100.0
            )
            .into(),
        );
    }
    // The worst wake-ups split, explained.
    let mut order: Vec<&(usize, &Found)> = split.iter().collect();
    order.sort_by(|a, b| lateness[b.0].total_cmp(&lateness[a.0]));
    let worst: Vec<serde_json::Value> = order
        .iter()
        .take(WORST)
        .map(|(i, f)| {
            let (labels, unseen) = between(&t.segments, f.from, f.to);
            let at = t.wakes[*i].deadline.saturating_sub(t.start_ns) as f64 / 1e9;
            json!({
                "lateness_ns": lateness[*i],
                "at_s": at,
                "parts_ns": f.parts,
                "between": explain(&labels, unseen),
                "unseen_ns": unseen,
            })
        })
        .collect();
    case.params.insert("worst".into(), json!(worst));
    tail_whose(&mut case, &split, &lateness, &t.segments, &t.whose);
    case.series.push(Series {
        name: "worst".into(),
        columns: std::iter::once("lateness_ns".to_string())
            .chain(PARTS.iter().map(|(k, _)| format!("{k}_ns")))
            .collect(),
        points: order
            .iter()
            .take(WORST)
            .map(|(i, f)| std::iter::once(lateness[*i]).chain(f.parts).collect())
            .collect(),
    });
    case
}

/// The share of wake-ups split, as a check (at least 90 %): the split of a few says nothing of
/// the rest; with a warning naming the likely cause.
fn split_share(case: &mut Case, n: usize, split: usize, unsampled: u64) {
    let share = split as f64 / n.max(1) as f64;
    case.counters.insert("split_share".into(), share);
    case.checks.push(Check::at_least(
        "split_share",
        0.9,
        share,
        0.0,
        &format!(
            "{split} of {n} traced wake-ups found whole in the trace (their timer, its \
             interrupt, the switch and the return); at least 90 %"
        ),
    ));
    if share < 0.9 {
        let why = if unsampled > 0 {
            format!(
                " ({unsampled} events counted but not sampled: perf does not sample a \
                 tracepoint in an interrupt taken while the CPU idles; --trace-with ftrace)"
            )
        } else {
            " (an event of theirs missing)".to_owned()
        };
        case.warnings.push(
            format!(
                "{}: {} of {n} wake-ups could not be split{why}",
                case.id,
                n - split
            )
            .into(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowest_wake_ups_are_split_by_whose_time_they_waited() {
        let seg = |from: f64, to: f64, label: &str| Segment {
            from,
            to,
            label: label.into(),
        };
        // Two wake-ups due at 0 and 10 000, each 50 of slack, then: the first's timer
        // interrupt 200 late while the CPU idled, the second's after 100 of another program
        // and 100 of nothing recorded; 10 of the local timer, 10 to return, 10 to read.
        let segments = vec![
            seg(50.0, 250.0, kview::IDLE),
            seg(250.0, 260.0, kview::LOCAL_TIMER),
            seg(10_050.0, 10_150.0, "task grep"),
            seg(10_250.0, 10_260.0, kview::LOCAL_TIMER),
        ];
        let whose: BTreeMap<String, kview::Whose> =
            [("task grep".to_string(), kview::Whose::Programs)].into();
        let found = [
            Found {
                parts: [50.0, 200.0, 10.0, 10.0, 10.0],
                from: 0.0,
                to: 280.0,
            },
            Found {
                parts: [50.0, 200.0, 10.0, 10.0, 10.0],
                from: 10_000.0,
                to: 10_280.0,
            },
        ];
        let split: Vec<(usize, &Found)> = found.iter().enumerate().collect();
        let mut case = Case::new(
            "wakeup.other.1ms.kernel",
            "wake-up",
            "wake-up",
            oscost_model::example::samples(&[280.0]),
        );
        tail_whose(&mut case, &split, &[280.0, 280.0], &segments, &whose);
        let c = &case.counters;
        assert_eq!(c["tail.wakeups"], 2.0);
        assert_eq!(c["tail.lateness_mean_ns"], 280.0);
        // The OS: slack, the timer's handler, the return and the read: 80 of 280 in each.
        assert!(
            (c["tail.os_pct"] - 80.0 / 280.0 * 100.0).abs() < 1e-9,
            "{c:?}"
        );
        // Other programs: 100 of the second's 280.
        assert!(
            (c["tail.programs_pct"] - 50.0 * 100.0 / 280.0).abs() < 1e-9,
            "{c:?}"
        );
        // The idle CPU's 200 and the 100 nothing recorded: outside the guest's view.
        assert!(
            (c["tail.outside_pct"] - 150.0 * 100.0 / 280.0).abs() < 1e-9,
            "{c:?}"
        );
        let sum = c["tail.os_pct"] + c["tail.programs_pct"] + c["tail.outside_pct"];
        assert!((sum - 100.0).abs() < 1e-9);
    }

    const T: i64 = 42;
    const TIMER: u64 = 0xffff_8000_1234;

    fn at(ns: u64, ev: Ev) -> At {
        At { ns, ev }
    }

    /// Wake-up `i` of a 1 ms period from 1 s: timer started 900 µs before, slack 50 µs,
    /// interrupt 3 µs after the expiry, switch 2 µs later, return 1 µs later, clock read
    /// 0.5 µs later; the tracer's clock 1000 ns ahead of the monotonic one.
    fn wake(i: u64) -> (Vec<At>, Wake) {
        let d = 1_000_000_000 + i * 1_000_000;
        let off = 1000;
        let hard = d + 50_000;
        let now = hard + 3_000;
        let ev = vec![
            at(
                d - 900_000 + off,
                Ev::Start {
                    tid: T,
                    timer: TIMER,
                    soft: d as i64,
                    hard: hard as i64,
                },
            ),
            at(d - 900_000 + off + 100, Ev::Switch { next: 0 }),
            at(
                now + off + 200,
                Ev::Expire {
                    timer: TIMER,
                    now: now as i64,
                },
            ),
            at(now + 2_000 + off, Ev::Switch { next: T }),
            at(now + 3_000 + off, Ev::Exit { tid: T }),
        ];
        (
            ev,
            Wake {
                deadline: d,
                woke: now + 3_500,
            },
        )
    }

    fn clocks() -> Clocks {
        Clocks::new((0, 1000), (10_000_000_000, 10_000_001_000))
    }

    /// Wake-ups whose parts add up to their lateness exactly, one part skewed (an interrupt
    /// of 5 most of the time, 40 now and then): the median of the sums is the measured median,
    /// while the sum of the parts' medians falls short of it by far more than 5 %.
    #[test]
    fn the_parts_are_held_to_the_measured_median_as_sums_not_as_a_sum_of_medians() {
        let mut parts: Vec<Parts> = Vec::new();
        for i in 0..9 {
            let interrupt = if i % 3 == 0 { 40.0 } else { 5.0 };
            let to_switch = if i % 3 == 1 { 30.0 } else { 4.0 };
            parts.push([0.0, interrupt, to_switch, 1.0, 1.0]);
        }
        let measured: Vec<f64> = parts.iter().map(|p| p.iter().sum()).collect();
        let (sums, m) = sums_against_measured(&parts, &measured);
        assert_eq!(sums, m);
        let of_medians: f64 = (0..5)
            .map(|k| oscost_stats::percentile(&sorted(parts.iter().map(|p| p[k]).collect()), 50.0))
            .sum();
        assert!(
            (of_medians / m - 1.0).abs() > SUM_TOLERANCE,
            "{of_medians} {m}"
        );
    }

    #[test]
    fn known_times_give_known_parts_that_add_up() {
        let (mut ev, mut wakes) = (Vec::new(), Vec::new());
        for i in 0..5 {
            let (e, w) = wake(i);
            ev.extend(e);
            wakes.push(w);
        }
        // Another task's timer and system calls change nothing.
        ev.push(at(1_000_500_000, Ev::Expire { timer: 7, now: 1 }));
        ev.push(at(1_000_500_001, Ev::Exit { tid: 9 }));
        ev.sort_by_key(|e| e.ns);
        let f = split(&ev, &wakes, T, 1_000_000, true, &clocks());
        assert_eq!(f.len(), 5);
        for (w, f) in wakes.iter().zip(&f) {
            let f = f.unwrap();
            assert_eq!(f.parts, [50_000.0, 3_000.0, 2_000.0, 1_000.0, 500.0]);
            assert_eq!(f.parts.iter().sum::<f64>(), (w.woke - w.deadline) as f64);
            assert_eq!(f.from, w.deadline as f64 + 1000.0);
        }
    }

    #[test]
    fn a_wake_up_missing_an_event_is_not_split_and_the_next_one_is() {
        let (mut ev, mut wakes) = (Vec::new(), Vec::new());
        for i in 0..3 {
            let (mut e, w) = wake(i);
            if i == 1 {
                // Its switch in was lost.
                e.retain(|a| a.ev != Ev::Switch { next: T });
            }
            ev.extend(e);
            wakes.push(w);
        }
        let f = split(&ev, &wakes, T, 1_000_000, true, &clocks());
        assert!(f[0].is_some() && f[1].is_none() && f[2].is_some(), "{f:?}");
    }

    #[test]
    fn an_interrupt_before_the_hard_expiry_has_no_interrupt_part() {
        // Another interrupt ran the timer inside its slack: the slack part ends there.
        let d = 5_000_000u64;
        let ev = vec![
            at(
                4_000_000,
                Ev::Start {
                    tid: T,
                    timer: TIMER,
                    soft: d as i64,
                    hard: (d + 50_000) as i64,
                },
            ),
            at(
                d + 20_000,
                Ev::Expire {
                    timer: TIMER,
                    now: (d + 20_000) as i64,
                },
            ),
            at(d + 21_000, Ev::Switch { next: T }),
            at(d + 22_000, Ev::Exit { tid: T }),
        ];
        let same = Clocks::new((0, 0), (1 << 40, 1 << 40));
        let w = Wake {
            deadline: d,
            woke: d + 22_400,
        };
        let f = split(&ev, &[w], T, 1_000_000, true, &same)[0].unwrap();
        assert_eq!(f.parts, [20_000.0, 0.0, 1_000.0, 1_000.0, 400.0]);
    }

    #[test]
    fn a_return_after_the_threads_own_reading_is_not_its_wake_up() {
        let (ev, mut w) = wake(0);
        // The thread read the clock 10 µs before the traced return: out of order.
        w.woke -= 10_000;
        assert_eq!(split(&ev, &[w], T, 1_000_000, true, &clocks()), vec![None]);
    }

    fn seg(from: f64, to: f64, label: &str) -> Segment {
        Segment {
            from,
            to,
            label: label.into(),
        }
    }

    #[test]
    fn what_held_the_cpu_is_summed_by_label_and_the_rest_is_unseen() {
        let segs = vec![
            seg(0.0, 100.0, "idle"),
            seg(100.0, 104.0, "local timer"),
            seg(104.0, 130.0, "task kworker/0:1"),
            seg(130.0, 131.0, "local timer"),
            seg(135.0, 150.0, "task oscost-wakeup"),
        ];
        let (v, unseen) = between(&segs, 90.0, 140.0);
        assert_eq!(
            v,
            vec![
                ("task kworker/0:1".to_string(), 26.0),
                ("idle".to_string(), 10.0),
                ("local timer".to_string(), 5.0),
                ("task oscost-wakeup".to_string(), 5.0),
            ]
        );
        assert_eq!(unseen, 4.0);
        let text = explain(&v, unseen);
        assert!(text.starts_with("task kworker/0:1 0.0 µs"), "{text}");
        assert!(text.ends_with("nothing recorded 0.0 µs"), "{text}");
        assert_eq!(explain(&[], 0.0), "no event");
    }

    #[test]
    fn too_few_wake_ups_split_fail_their_check_and_say_why() {
        let empty = Samples {
            per_op_ns: Vec::new(),
            per_op_ticks: Vec::new(),
            iterations_per_sample: 1,
            loop_overhead_ns: 0.0,
        };
        let mut c = Case::new("wakeup.fifo.1ms.kernel", "x", "wake-up", empty.clone());
        split_share(&mut c, 1000, 3, 1990);
        assert!(!c.checks[0].passed);
        assert!(
            c.warnings[0].contains("perf does not sample"),
            "{:?}",
            c.warnings
        );
        let mut c = Case::new("wakeup.fifo.1ms.kernel", "x", "wake-up", empty);
        split_share(&mut c, 1000, 995, 0);
        assert!(c.checks[0].passed && c.warnings.is_empty());
    }

    #[test]
    fn the_clocks_map_both_ways() {
        let c = Clocks::new((1000, 5000), (2000, 7000));
        assert_eq!(c.tracer(1500.0), 6000.0);
        assert_eq!(c.mono(6000.0), 1500.0);
    }
}
