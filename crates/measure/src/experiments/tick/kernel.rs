//! `tick`'s traced runs: the work once more under each source at one period, apart from the
//! timed runs, with the kernel's tracepoints recorded on the working CPU. The kernel's time per
//! event (the local timer interrupt, the hrtimer callbacks inside it, the softirqs, the helper
//! task and the switches to it) is held against the time the work lost per event; the rest is
//! what an event costs outside the kernel's handlers (cache and TLB refill, a virtual
//! machine's exit, a signal handler's own user time).

use super::{period_name, work, Armed, Source, FIFO_PRIORITY};
use crate::kview::{self, Event, Kind, Pass, Segment, Session, CALLBACKS, LOCAL_TIMER};
use oscost_model::case::{Case, Check, Samples};
use oscost_sys::clock::Clock;
use oscost_sys::kseam::Mechanism;
use std::hint::black_box;

/// The tracepoints of a traced run (those a kernel lacks are skipped).
pub(super) const EVENTS: &[(&str, &str)] = &[
    ("irq_vectors", "local_timer_entry"),
    ("irq_vectors", "local_timer_exit"),
    ("timer", "hrtimer_expire_entry"),
    ("timer", "hrtimer_expire_exit"),
    ("irq", "softirq_entry"),
    ("irq", "softirq_exit"),
    ("sched", "sched_switch"),
    ("signal", "signal_deliver"),
];

/// The parts of the kernel's time per event, in drawing order, and what each takes in.
pub const PARTS: &[(&str, &str)] = &[
    (
        "interrupt",
        "the local timer interrupt's entry, exit and own work",
    ),
    (
        "callbacks",
        "hrtimer callbacks inside it (the POSIX timer's, the helper's wake-up)",
    ),
    ("softirq", "softirqs run on the way out of it"),
    (
        "helper",
        "the helper thread, and the switches to it and back",
    ),
];

/// The label `kview::segments` gives the helper thread's time.
const HELPER_LABEL: &str = "task oscost-tick";

/// One event of the traced run as [`kernel_time`] reads it: the handlers, callbacks and switches
/// make up the kernel's time, a signal's delivery is only counted.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ev {
    /// A handler, a callback or a switch.
    Kind(Kind),
    /// `signal:signal_deliver`.
    Signal,
}

/// The events on `cpu`, at ns from `start` (counter ticks) by `clock`.
fn on_cpu(events: Vec<Event>, cpu: usize, start: u64, clock: &Clock) -> Vec<(f64, Ev)> {
    events
        .into_iter()
        .filter(|e| e.cpu as usize == cpu)
        .map(|e| {
            let ev = match e.kind {
                Kind::Signal => Ev::Signal,
                k => Ev::Kind(k),
            };
            (clock.ticks_to_ns(e.ticks - start as f64), ev)
        })
        .collect()
}

/// The part of the kernel's time a segment's label belongs to; `None`: another task (or idle),
/// no part of an event.
fn part(label: &str) -> Option<&'static str> {
    if label == LOCAL_TIMER {
        Some("interrupt")
    } else if label == CALLBACKS {
        Some("callbacks")
    } else if label.starts_with("softirq") {
        Some("softirq")
    } else if label == HELPER_LABEL {
        Some("helper")
    } else {
        None
    }
}

/// What the kernel did on the working CPU within `[0, span]`, ns by part, and each local timer
/// interrupt's whole length (entry to exit, callbacks included).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct KernelTime {
    /// ns per part of [`PARTS`], in its order.
    pub parts: Vec<f64>,
    /// ns other tasks (or idle) had the CPU: none of the work's, nor of an event's.
    pub others: f64,
    /// Each local timer interrupt, entry to exit.
    pub interrupts: Vec<f64>,
    /// Signals delivered.
    pub signals: usize,
}

/// The kernel's time in `events` (in time order, one CPU, ns) within `[0, span]`; `worker` is
/// the working thread.
pub(crate) fn kernel_time(events: &[(f64, Ev)], worker: i64, span: f64) -> KernelTime {
    let kinds: Vec<(f64, &Kind)> = events
        .iter()
        .filter_map(|(t, e)| match e {
            Ev::Kind(k) => Some((*t, k)),
            Ev::Signal => None,
        })
        .collect();
    let segs: Vec<Segment> = kview::segments(&kinds, worker);
    let mut parts = vec![0.0; PARTS.len()];
    let mut others = 0.0;
    for s in &segs {
        let d = (s.to.min(span) - s.from.max(0.0)).max(0.0);
        match part(&s.label).and_then(|p| PARTS.iter().position(|(k, _)| *k == p)) {
            Some(i) => parts[i] += d,
            None => others += d,
        }
    }
    let mut interrupts = Vec::new();
    let mut open: Option<f64> = None;
    for (t, k) in &kinds {
        match k {
            Kind::Enter(key, _) if key == "local_timer" => open = Some(*t),
            Kind::Exit(key) if key == "local_timer" => {
                if let Some(a) = open.take().filter(|&a| a >= 0.0 && *t <= span) {
                    interrupts.push(t - a);
                }
            }
            _ => {}
        }
    }
    let signals = events
        .iter()
        .filter(|(t, e)| matches!(e, Ev::Signal) && *t >= 0.0 && *t <= span)
        .count();
    KernelTime {
        parts,
        others,
        interrupts,
        signals,
    }
}

/// One traced run of the work, under a source or undisturbed.
pub(super) struct Traced {
    /// The source and period, if any.
    pub point: Option<(Source, u64)>,
    /// How long the work took, ns.
    pub span_ns: f64,
    /// Events the source counted during it.
    pub events: u64,
    /// What the kernel did meanwhile.
    pub kernel: KernelTime,
    /// Records the mechanism lost.
    pub lost: u64,
    /// How the tracepoints were recorded.
    pub mechanism: Mechanism,
}

/// Runs the work once, under `point`'s events if given, with the tracepoints recorded; `Err`
/// of the outer result: the run failed; of the inner: tracing is not to be had, in one line.
pub(super) fn traced_run(
    clock: &Clock,
    iterations: u64,
    point: Option<(Source, u64)>,
    cpu: usize,
    limit: u64,
    mechanisms: &[Mechanism],
) -> anyhow::Result<Result<(Traced, Vec<oscost_model::Message>), oscost_sys::ktrace::Unavailable>> {
    let (mut session, notes) = match Session::open(&Pass::new(EVENTS, &[cpu], mechanisms)) {
        Ok(s) => s,
        Err(u) => return Ok(Err(u)),
    };
    let armed = point
        .map(|(s, p)| Armed::arm(s, p, cpu, limit, FIFO_PRIORITY))
        .transpose()?;
    session.start(clock)?;
    let c0 = armed.as_ref().map(Armed::counts).unwrap_or_default();
    let a = clock.now();
    black_box(work(iterations));
    let b = clock.now();
    let c1 = armed.as_ref().map(Armed::counts).unwrap_or_default();
    let raw = session.stop_raw(clock)?;
    if let Some(armed) = armed {
        armed.disarm()?;
    }
    let span = clock.ticks_to_ns(b.wrapping_sub(a) as f64);
    let events = on_cpu(raw.events(), cpu, a, clock);
    Ok(Ok((
        Traced {
            point,
            span_ns: span,
            events: c1.since(c0).events,
            kernel: kernel_time(&events, i64::from(oscost_sys::gettid()), span),
            lost: raw.lost,
            mechanism: raw.mechanism,
        },
        notes,
    )))
}

impl Traced {
    /// The undisturbed runs before and after a source's run as one: their mean span, kernel
    /// time and other tasks' time, which cancels a drift of the machine's speed that runs
    /// evenly across the three (the source's run is what is measured, not these).
    pub(super) fn bracket(before: &Traced, after: &Traced) -> Traced {
        let mean = |a: f64, b: f64| (a + b) / 2.0;
        Traced {
            point: before.point,
            span_ns: mean(before.span_ns, after.span_ns),
            events: (before.events + after.events) / 2,
            kernel: KernelTime {
                parts: before
                    .kernel
                    .parts
                    .iter()
                    .zip(&after.kernel.parts)
                    .map(|(a, b)| mean(*a, *b))
                    .collect(),
                others: mean(before.kernel.others, after.kernel.others),
                interrupts: Vec::new(),
                signals: (before.kernel.signals + after.kernel.signals) / 2,
            },
            lost: before.lost + after.lost,
            mechanism: before.mechanism,
        }
    }
}

/// One event's cost from two traced runs: under the source, and undisturbed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PerEvent {
    /// The time the work lost per event: both runs' time less other tasks' (which are no part
    /// of the work nor of an event), the difference over the events.
    pub lost: f64,
    /// The kernel's extra time per event by part of [`PARTS`]: the source run's less the
    /// undisturbed run's, scaled to the source run's length (its own tick runs longer).
    pub parts: Vec<f64>,
    /// Their sum.
    pub kernel: f64,
    /// `lost - kernel`: what an event costs outside the kernel's handlers.
    pub outside: f64,
}

/// The cost per event of `t` (under the source, `t.events` events) against `u` (undisturbed).
pub(crate) fn per_event(t: &Traced, u: &Traced) -> PerEvent {
    let events = t.events.max(1) as f64;
    let own = |r: &Traced| r.span_ns - r.kernel.others;
    let lost = (own(t) - own(u)) / events;
    let scale = if u.span_ns > 0.0 {
        t.span_ns / u.span_ns
    } else {
        1.0
    };
    let parts: Vec<f64> = t
        .kernel
        .parts
        .iter()
        .zip(&u.kernel.parts)
        .map(|(a, b)| (a - b * scale) / events)
        .collect();
    let kernel = parts.iter().sum();
    PerEvent {
        lost,
        parts,
        kernel,
        outside: lost - kernel,
    }
}

/// The case of a traced run `t` against the undisturbed traced run `u`: the kernel's time per
/// event by part against the time the work lost per event; beside it the timed figure
/// (`timed_ns_per_event`), untraced. `spread_ns`: how far apart the undisturbed work's own
/// timed runs fell (their range), the noise a difference of two runs carries.
pub(super) fn case(
    t: &Traced,
    u: &Traced,
    timed_ns_per_event: Option<f64>,
    spread_ns: f64,
    cpu: usize,
    clock: &Clock,
) -> Option<Case> {
    let (source, period) = t.point?;
    let mut ints = t.kernel.interrupts.clone();
    ints.sort_by(f64::total_cmp);
    let pe = per_event(t, u);
    let mut case = Case::new(
        oscost_model::ids::tick::traced(&super::case_id(source, period)),
        format!(
            "the work once more under an event every {} from the {} source, and once \
             undisturbed, the kernel's tracepoints recorded on CPU {cpu} by {} ({}): each \
             local timer interrupt under the source, entry to exit",
            period_name(period),
            source.name(),
            t.mechanism.describe(),
            t.mechanism.name()
        ),
        "timer interrupt",
        Samples {
            per_op_ticks: ints.iter().map(|&v| clock.ns_to_ticks(v)).collect(),
            per_op_ns: ints.clone(),
            iterations_per_sample: 1,
            loop_overhead_ns: 0.0,
        },
    )
    .param("traced_source", source.name())
    .param("period_ns", period)
    .param("cpu", cpu as u64)
    .param("kernel_view", true)
    .param("trace_mechanism", t.mechanism.name());
    if let Some(v) = timed_ns_per_event {
        // The time an event costs the work, timed untraced and traced.
        case.trace = Some(oscost_model::TraceCost {
            mechanism: t.mechanism.name().into(),
            per: "event (the work's time lost)".into(),
            untraced_ns: v,
            traced_ns: pe.lost,
            lost: t.lost + u.lost,
        });
    }
    let c = &mut case.counters;
    c.insert("events".into(), t.events as f64);
    c.insert("work_ns".into(), t.span_ns);
    c.insert("undisturbed_work_ns".into(), u.span_ns);
    c.insert("other_tasks_ns".into(), t.kernel.others);
    c.insert("undisturbed_other_tasks_ns".into(), u.kernel.others);
    c.insert("lost_ns_per_event".into(), pe.lost);
    if let Some(v) = timed_ns_per_event {
        c.insert("untraced_lost_ns_per_event".into(), v);
        c.insert("trace_cost_ns_per_event".into(), pe.lost - v);
    }
    for ((k, _), v) in PARTS.iter().zip(&pe.parts) {
        c.insert(format!("{k}_ns_per_event"), *v);
    }
    c.insert("kernel_ns_per_event".into(), pe.kernel);
    c.insert("outside_ns_per_event".into(), pe.outside);
    c.insert(
        "timer_interrupts_per_event".into(),
        t.kernel.interrupts.len() as f64 / t.events.max(1) as f64,
    );
    if !ints.is_empty() {
        c.insert(
            "interrupt_median_ns".into(),
            oscost_stats::percentile(&ints, 50.0),
        );
    }
    c.insert(
        "signals_per_event".into(),
        t.kernel.signals as f64 / t.events.max(1) as f64,
    );
    c.insert("trace_records_lost".into(), (t.lost + u.lost) as f64);
    // The lost time is a difference of two runs, so it carries their run-to-run noise: a
    // floor of the kernel's time alone fails on a machine whose speed wavers by a few per cent
    // between runs although nothing is wrong with either figure.
    let slack = spread_ns / t.events.max(1) as f64;
    c.insert("undisturbed_spread_ns_per_event".into(), slack);
    case.checks.push(Check::at_least_floor(
        "lost_covers_kernel_ns",
        pe.kernel,
        pe.lost,
        pe.kernel * 0.9 - slack,
        &format!(
            "the time the work lost per event (the traced run's time less the mean of the \
             traced undisturbed runs just before and after it, other tasks' time taken out, \
             over {} events) against the kernel's extra time per event on its CPU: whatever \
             the kernel did there the work lost, so at least that, within 10 % and the \
             undisturbed work's own spread between runs ({} a run, {} per event)",
            t.events,
            crate::engine::fmt_ns(spread_ns),
            crate::engine::fmt_ns(slack)
        ),
    ));
    if t.lost + u.lost > 0 {
        case.warnings.push(
            format!(
                "{} trace records were lost ({} could not keep them): the kernel's time falls \
                 short",
                t.lost + u.lost,
                t.mechanism
            )
            .into(),
        );
    }
    Some(case)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(kind: Kind) -> Ev {
        Ev::Kind(kind)
    }

    fn enter(key: &str, label: &str) -> Ev {
        k(Kind::Enter(key.into(), label.into()))
    }

    fn exit(key: &str) -> Ev {
        k(Kind::Exit(key.into()))
    }

    fn switch(prev: i64, next: i64, comm: &str) -> Ev {
        k(Kind::Switch {
            prev_tid: prev,
            prev_state: 0,
            next_tid: next,
            next_comm: comm.into(),
        })
    }

    /// Two events of known times: an interrupt of 3 with a callback of 1 inside, a softirq of
    /// 2 after it; then one that wakes a helper for 10 (a switch away and back); one signal.
    #[test]
    fn known_events_give_known_kernel_time() {
        let evs = vec![
            (-5.0, enter("local_timer", LOCAL_TIMER)),
            (-4.0, exit("local_timer")),
            (100.0, enter("local_timer", LOCAL_TIMER)),
            (101.0, enter("hrtimer", CALLBACKS)),
            (102.0, exit("hrtimer")),
            (103.0, exit("local_timer")),
            (103.5, Ev::Signal),
            (104.0, enter("softirq", "softirq TIMER")),
            (106.0, exit("softirq")),
            (200.0, enter("local_timer", LOCAL_TIMER)),
            (202.0, exit("local_timer")),
            (203.0, switch(7, 9, "oscost-tick")),
            (213.0, switch(9, 7, "oscost-work")),
            (900.0, enter("local_timer", LOCAL_TIMER)),
        ];
        let kt = kernel_time(&evs, 7, 500.0);
        // Interrupt: 2 (100..101, 102..103) + 2 (200..202); callbacks 1; softirq 2; helper 10.
        assert_eq!(kt.parts, vec![4.0, 1.0, 2.0, 10.0]);
        assert_eq!(kt.others, 0.0);
        assert_eq!(
            kt.interrupts,
            vec![3.0, 2.0],
            "the one before the work is not in it"
        );
        assert_eq!(kt.signals, 1);
    }

    #[test]
    fn the_parts_are_named_once() {
        for (i, (k, _)) in PARTS.iter().enumerate() {
            assert!(PARTS[i + 1..].iter().all(|(o, _)| o != k));
        }
        assert_eq!(part("task kworker/0:1"), None);
        assert_eq!(part("idle"), None);
        assert_eq!(part(HELPER_LABEL), Some("helper"));
        assert_eq!(part("softirq RCU"), Some("softirq"));
    }

    fn traced(span: f64, events: u64, parts: [f64; 4], others: f64) -> Traced {
        Traced {
            point: Some((Source::Helper, 50_000)),
            span_ns: span,
            events,
            kernel: KernelTime {
                parts: parts.to_vec(),
                others,
                interrupts: Vec::new(),
                signals: 0,
            },
            lost: 0,
            mechanism: Mechanism::Bpf,
        }
    }

    /// 100 events lengthen the work from 1000 to 3000 (another task's 500 taken out); the
    /// undisturbed run's own tick (40 of interrupt) scales with the length.
    #[test]
    fn the_cost_per_event_is_against_the_undisturbed_run() {
        let u = traced(1000.0, 0, [40.0, 0.0, 0.0, 0.0], 0.0);
        let t = traced(3500.0, 100, [440.0, 100.0, 50.0, 800.0], 500.0);
        let pe = per_event(&t, &u);
        assert_eq!(pe.lost, 20.0);
        // Interrupt: (440 - 40 x 3.5) / 100 = 3.
        assert_eq!(pe.parts, vec![3.0, 1.0, 0.5, 8.0]);
        assert_eq!(pe.kernel, 12.5);
        assert_eq!(pe.outside, 7.5);
    }

    /// The runs before and after a source's run count as their mean: a machine that slowed
    /// evenly across the three leaves the lost time as if it had not.
    #[test]
    fn a_bracketed_undisturbed_run_cancels_an_even_drift() {
        let before = traced(1000.0, 0, [40.0, 0.0, 0.0, 0.0], 10.0);
        let after = traced(1200.0, 0, [60.0, 0.0, 0.0, 0.0], 30.0);
        let u = Traced::bracket(&before, &after);
        assert_eq!(u.span_ns, 1100.0);
        assert_eq!(u.kernel.parts, vec![50.0, 0.0, 0.0, 0.0]);
        assert_eq!(u.kernel.others, 20.0);
        // The source's run, in the middle, lost 20 per event to 100 events.
        let t = traced(3100.0, 100, [0.0; 4], 20.0);
        assert_eq!(per_event(&t, &u).lost, 20.0);
    }

    /// The work lost less than the kernel's time: within the undisturbed runs' spread the
    /// check holds (the difference is noise), beyond it the case is flagged.
    #[test]
    fn lost_below_the_kernel_fails_only_beyond_the_runs_spread() {
        let clock = Clock::monotonic("test".into());
        let u = traced(1000.0, 0, [0.0; 4], 0.0);
        // 100 events, 10 of kernel time each, 5 lost each (500 in all).
        let t = traced(1500.0, 100, [1000.0, 0.0, 0.0, 0.0], 0.0);
        let check = |spread: f64| {
            let case = case(&t, &u, None, spread, 0, &clock).expect("a case");
            let c = case
                .checks
                .iter()
                .find(|c| c.name == "lost_covers_kernel_ns")
                .expect("the check")
                .clone();
            assert_eq!(
                case.counters["undisturbed_spread_ns_per_event"],
                spread / 100.0
            );
            c
        };
        // Floor 0.9 x 10 - 0 = 9: fails.
        assert!(!check(0.0).passed);
        // Floor 9 - 400/100 = 5: holds, just.
        let c = check(400.0);
        assert!(c.passed, "{c:?}");
        assert_eq!(c.bound, Some(oscost_model::case::Bound::AtLeast(5.0)));
        // Floor 9 - 300/100 = 6: fails.
        assert!(!check(300.0).passed);
    }
}
