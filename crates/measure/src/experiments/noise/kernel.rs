//! `noise`'s traced pass: the same spin again with the kernel's tracepoints recorded, each gap
//! matched with the kernel events inside it, and the local timer's rate counted from the
//! kernel's own events.

use super::{read_interrupts, spin_all, Interrupts};
use crate::engine::spin::{ticks, CpuNoise, CpuSpin, PERIOD_EVENTS, SEARCH};
use crate::kview::{self, Event, Kind, Pass, Session, LOCAL_TIMER, NOISE_EVENTS, OUTSIDE};
use oscost_model::case::{Case, Check, Samples};
use oscost_sys::clock::Clock;
use oscost_sys::kseam::Mechanism;
use oscost_sys::ktrace::Unavailable;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

/// The traced timer count must be within this of `/proc/interrupts`' over the same window.
const TIMER_TOLERANCE: f64 = 0.02;
/// Windows of the spin whose shares give the interval of each share of the time lost.
const SHARE_WINDOWS: usize = 20;
/// Samples handed up at most (as for the untraced pass).
const MAX_SAMPLES: usize = 20_000;

/// Steal ticks per CPU before and after a spin, and USER_HZ.
type StealAcross = (BTreeMap<usize, u64>, BTreeMap<usize, u64>, u64);

/// What the traced pass recorded.
pub(super) struct Traced {
    pub spins: Vec<CpuSpin>,
    events: Vec<Event>,
    counts: BTreeMap<(u32, String), u64>,
    window_s: f64,
    lost: u64,
    /// Those of them the kernel counted by tracepoint (BPF programs it did not run).
    lost_by_event: BTreeMap<String, u64>,
    /// How the tracepoints were recorded.
    mechanism: Mechanism,
    /// Events the kernel counted but did not sample (an interrupt of an idle CPU).
    unsampled: u64,
    /// Local timer entries the kernel counted but did not sample, by CPU.
    timer_unsampled: BTreeMap<u32, u64>,
    /// `/proc/interrupts` before and after, with the counter readings beside them.
    loc: Option<(Interrupts, Interrupts, u64, u64)>,
    /// Steal time per CPU before and after the spin (USER_HZ ticks), and USER_HZ.
    steal: Option<StealAcross>,
    /// What was changed on the machine (tracefs mounted), and the tracepoints missing.
    pub notes: Vec<oscost_model::Message>,
}

/// Spins again on `cpus` with the tracepoints on. `Ok(Err(_))`: tracing is not to be had here,
/// in one line that says why and how to get it.
pub(super) fn traced_pass(
    clock: &Clock,
    cpus: &[usize],
    mechanisms: &[Mechanism],
    duration_ns: u64,
    threshold: u64,
    capacity: usize,
    cancel: &AtomicBool,
) -> anyhow::Result<Result<Traced, Unavailable>> {
    let (mut session, notes) = match Session::open(&Pass::new(NOISE_EVENTS, cpus, mechanisms)) {
        Ok(s) => s,
        Err(u) => return Ok(Err(u)),
    };
    session.start(clock)?;
    let before = read_interrupts();
    let steal_before = super::read_steal();
    let t0 = clock.now();
    let until = clock.now() + ticks(clock, duration_ns as f64);
    let spins = spin_all(clock, cpus, until, threshold, capacity, cancel);
    let t1 = clock.now();
    let after = read_interrupts();
    let steal_after = super::read_steal();
    // Stopped on every path, so the rings are read and closed even when the spin failed.
    let stopped = session.stop(clock)?;
    Ok(Ok(Traced {
        spins: spins?,
        events: stopped.events,
        counts: stopped.counts,
        window_s: stopped.window_ns as f64 / 1e9,
        lost: stopped.lost,
        lost_by_event: stopped.lost_by_event.clone(),
        mechanism: stopped.mechanism,
        unsampled: stopped.unsampled,
        timer_unsampled: stopped
            .unsampled_by
            .iter()
            .filter(|((_, name), _)| name == kview::LOCAL_TIMER_ENTRY)
            .map(|((cpu, _), n)| (*cpu, *n))
            .collect(),
        loc: before.zip(after).map(|(a, b)| (a, b, t0, t1)),
        steal: steal_before
            .zip(steal_after)
            .zip(oscost_sys::sysinfo::user_hz())
            .map(|((a, b), hz)| (a, b, hz)),
        notes,
    }))
}

fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole * 100.0
    } else {
        0.0
    }
}

/// The case of one CPU's traced spin: its gaps by source, the timer's rate from the kernel's
/// events against `/proc/interrupts`, and what tracing cost against the untraced spin `plain`.
pub(super) fn kernel_case(
    n: &CpuNoise,
    s: &CpuSpin,
    t: &Traced,
    clock: &Clock,
    iteration: f64,
    plain: Option<&CpuNoise>,
) -> Case {
    let cpu = n.cpu;
    let start = s.spin.start;
    let to_ns = |ticks: f64| clock.ticks_to_ns(ticks - start as f64);
    let mine: Vec<(f64, &Kind)> = t
        .events
        .iter()
        .filter(|e| e.cpu as usize == cpu)
        .map(|e| (to_ns(e.ticks), &e.kind))
        .collect();
    let segs = kview::segments(&mine, i64::from(s.tid));
    let gaps: Vec<(f64, f64)> = s
        .gaps
        .iter()
        .map(|g| (to_ns(g.at as f64), clock.ticks_to_ns(g.len as f64)))
        .collect();
    // The loop's readings bracket an interruption to within one iteration on each side.
    let tol = clock.ticks_to_ns(iteration) + 100.0;
    let views = kview::attribute(&gaps, &segs, tol);
    let rows = kview::table(&n.lens_ns, &views);
    let lost: f64 = n.lens_ns.iter().sum();
    let span_s = n.span_s();

    let mut case = Case::new(
        oscost_model::ids::noise::Id::Traced(cpu).to_string(),
        format!(
            "the loop spun again on CPU {cpu} for {span_s:.2} s with the kernel's tracepoints \
             recorded by {} ({}): each gap matched with the kernel events inside it",
            t.mechanism.describe(),
            t.mechanism.name()
        ),
        "interruption",
        Samples {
            per_op_ns: super::spread(&n.lens_ns, MAX_SAMPLES),
            per_op_ticks: super::spread(&n.lens_ticks, MAX_SAMPLES),
            iterations_per_sample: 1,
            loop_overhead_ns: clock.ticks_to_ns(iteration),
        },
    )
    .param("cpu", cpu as u64)
    .param("kernel_view", true)
    .param("trace_mechanism", t.mechanism.name());
    let labels: BTreeMap<String, String> = rows
        .iter()
        .map(|r| (kview::key(&r.source), r.source.clone()))
        .collect();
    case.params.insert("sources".into(), json!(labels));
    let c = &mut case.counters;
    c.insert("gaps".into(), n.gaps_seen as f64);
    c.insert("gaps_per_s".into(), n.gaps_per_s());
    c.insert("span_s".into(), span_s);
    c.insert("cpu_lost_pct".into(), pct(lost, n.span_ns));
    let outside: f64 = rows
        .iter()
        .filter(|r| r.source == OUTSIDE)
        .map(|r| r.lost)
        .sum();
    let explained: f64 = rows.iter().map(|r| r.explained).sum();
    // The same loss split by whose time it was, each share with the interval of 20 windows'
    // shares: the datasheet says what the OS did apart from what other programs and the host
    // took.
    let tasks = kview::whose_sources(mine.iter().map(|(_, k)| *k));
    // Each gap once: whose it was, its start, and its length as the loss counts it (the
    // loop's own iteration taken off).
    let judged: Vec<(kview::Whose, (f64, f64))> = gaps
        .iter()
        .zip(&n.lens_ns)
        .zip(&views)
        .map(|((g, len), v)| {
            let w = kview::whose(v.source.as_deref().unwrap_or(OUTSIDE), &tasks);
            (w, (g.0, *len))
        })
        .collect();
    for (key, w) in [
        ("os", kview::Whose::Os),
        ("programs", kview::Whose::Programs),
        ("outside", kview::Whose::Outside),
    ] {
        let theirs: Vec<(f64, f64)> = judged
            .iter()
            .filter(|(of, _)| *of == w)
            .map(|(_, g)| *g)
            .collect();
        if let Some(s) = oscost_stats::share::covered_share(&theirs, n.span_ns, SHARE_WINDOWS) {
            c.insert(format!("{key}_lost_pct"), s.share * 100.0);
            c.insert(format!("{key}_lost_ci95_lo_pct"), s.ci95[0] * 100.0);
            c.insert(format!("{key}_lost_ci95_hi_pct"), s.ci95[1] * 100.0);
        }
    }
    // The host's share of what the guest kernel did not see: the steal clock counts the time
    // the host ran something else in this vCPU's place (in USER_HZ ticks, so only over the
    // whole spin); the rest of that time is the host handling the guest itself (VM exits, its
    // own timer), which steal accounting does not count.
    if let Some(steal) = t
        .steal
        .as_ref()
        .and_then(|(a, b, hz)| Some(super::delta(a, b, cpu)? as f64 * 1e9 / *hz as f64))
    {
        c.insert("steal_ms".into(), steal / 1e6);
        c.insert("outside_steal_ms".into(), steal.min(outside) / 1e6);
        c.insert(
            "outside_unstolen_ms".into(),
            (outside - steal).max(0.0) / 1e6,
        );
    }
    c.insert("attributed_pct".into(), pct(lost - outside, lost));
    c.insert("outside_pct".into(), pct(outside, lost));
    c.insert("in_events_pct".into(), pct(explained, lost));
    // What the kernel cannot see may still keep a rhythm of its own (a host's timer).
    let outside_starts: Vec<f64> = gaps
        .iter()
        .zip(&views)
        .filter(|(_, v)| v.source.is_none())
        .map(|(g, _)| g.0)
        .take(PERIOD_EVENTS)
        .collect();
    if let Some(p) = oscost_stats::periodic::dominant_period(&outside_starts, SEARCH) {
        c.insert("outside_period_ns".into(), p.period);
        c.insert(
            "outside_periodic_share_pct".into(),
            pct(p.members.len() as f64, outside_starts.len() as f64),
        );
    }
    for r in &rows {
        let k = format!("source.{}", kview::key(&r.source));
        c.insert(format!("{k}.count"), r.count as f64);
        c.insert(format!("{k}.per_s"), r.count as f64 / span_s);
        c.insert(format!("{k}.median_ns"), r.median);
        c.insert(format!("{k}.p99_ns"), r.p99);
        c.insert(format!("{k}.cpu_lost_pct"), pct(r.lost, n.span_ns));
        c.insert(format!("{k}.in_events_ns"), r.explained / r.count as f64);
    }
    // Every record of each tracepoint, so the counts can be held against `perf stat`.
    for ((on, name), n) in &t.counts {
        if *on as usize == cpu {
            let key = format!("events.{}", name.replace(':', "."));
            case.counters.insert(key.clone(), *n as f64);
            case.counters
                .insert(format!("{key}.per_s"), *n as f64 / t.window_s);
        }
    }
    case.counters.insert("trace_window_s".into(), t.window_s);
    // Timer interrupts the kernel counted that left no record are lost records too, counted
    // from /proc/interrupts.
    let unrecorded = timer_figures(&mut case, &mine, &segs, &gaps, &views, n, t, clock, start);
    let lost_here = t.lost + unrecorded;
    if let Some(p) = plain {
        let lost_plain = pct(p.lens_ns.iter().sum(), p.span_ns);
        let c = &mut case.counters;
        c.insert("untraced_cpu_lost_pct".into(), lost_plain);
        c.insert("untraced_gaps_per_s".into(), p.gaps_per_s());
        c.insert(
            "trace_cost_cpu_lost_pct".into(),
            pct(lost, n.span_ns) - lost_plain,
        );
        // The same spin's loss untraced and traced, per second spun: the ratio is how far
        // the traced CPU is from the untraced one.
        case.trace = Some(oscost_model::TraceCost {
            mechanism: t.mechanism.name().into(),
            per: "second spun (CPU time lost)".into(),
            untraced_ns: p.lens_ns.iter().sum::<f64>() / p.span_ns * 1e9,
            traced_ns: lost / n.span_ns * 1e9,
            lost: lost_here,
        });
    }
    case.counters
        .insert("trace_events_unsampled".into(), t.unsampled as f64);
    // Always counted, so a lost record is never taken for one that was not there.
    case.counters
        .insert("trace_records_lost".into(), lost_here as f64);
    case.counters.extend(kview::lost_counters(&t.lost_by_event));
    if t.lost > 0 {
        case.warnings.push(
            format!(
                "{} trace records were lost ({} could not keep them){}: some gaps lack their \
                 events and the timer's count falls short",
                t.lost,
                t.mechanism,
                kview::lost_words(&t.lost_by_event)
            )
            .into(),
        );
    }
    if unrecorded > 0 {
        let (n, them, s) = if unrecorded == 1 {
            ("1 local timer interrupt".to_owned(), "it", "")
        } else {
            (format!("{unrecorded} local timer interrupts"), "them", "s")
        };
        let why = if t.mechanism == Mechanism::Bpf {
            format!("the kernel ran no BPF program for {them} and counted no miss")
        } else {
            format!("the mechanism counted no loss for {them}")
        };
        case.warnings.push(
            format!(
                "{n} /proc/interrupts counted on CPU {cpu} left no record ({why}): counted as \
                 lost record{s}; the gaps made are given to another source or to none"
            )
            .into(),
        );
    }
    case
}

/// The local timer from the kernel's own events: its rate against `/proc/interrupts` over
/// the same window (a check), its handler's length, and the timer gaps' length beside it.
#[allow(clippy::too_many_arguments)]
fn timer_figures(
    case: &mut Case,
    mine: &[(f64, &Kind)],
    segs: &[kview::Segment],
    gaps: &[(f64, f64)],
    views: &[kview::GapView],
    n: &CpuNoise,
    t: &Traced,
    clock: &Clock,
    start: u64,
) -> u64 {
    let cpu = n.cpu;
    let entries: Vec<f64> = mine
        .iter()
        .filter(|(_, k)| matches!(k, Kind::Enter(_, l) if l == LOCAL_TIMER))
        .map(|(at, _)| *at)
        .collect();
    if entries.is_empty() {
        case.warnings.push(
            format!(
                "no local timer event on CPU {cpu} in the trace: the timer's rate is not checked \
             against the kernel's events"
            )
            .into(),
        );
        return 0;
    }
    let mut handler: Vec<f64> = segs
        .iter()
        .filter(|s| s.label == LOCAL_TIMER)
        .map(|s| s.to - s.from)
        .collect();
    handler.sort_by(f64::total_cmp);
    let mut intervals: Vec<f64> = entries.windows(2).map(|w| w[1] - w[0]).collect();
    intervals.sort_by(f64::total_cmp);
    let mut timer_gaps: Vec<f64> = gaps
        .iter()
        .zip(views)
        .filter(|(_, v)| v.source.as_deref() == Some(LOCAL_TIMER))
        .map(|(g, _)| g.1)
        .collect();
    timer_gaps.sort_by(f64::total_cmp);
    let c = &mut case.counters;
    c.insert("timer_events".into(), entries.len() as f64);
    c.insert(
        "timer_events_per_s".into(),
        entries.len() as f64 / n.span_s(),
    );
    c.insert(
        "timer_period_ns".into(),
        oscost_stats::percentile(&intervals, 50.0),
    );
    if !handler.is_empty() {
        c.insert(
            "timer_handler_median_ns".into(),
            oscost_stats::percentile(&handler, 50.0),
        );
    }
    let in_gaps = views.iter().filter(|v| v.timer).count();
    c.insert("timer_events_in_gaps".into(), in_gaps as f64);
    if !timer_gaps.is_empty() {
        c.insert(
            "timer_gap_median_ns".into(),
            oscost_stats::percentile(&timer_gaps, 50.0),
        );
    }
    let Some((before, after, t0, t1)) = &t.loc else {
        case.warnings.push(
            "/proc/interrupts could not be read around the traced pass: the timer events are \
             not checked against its LOC count"
                .into(),
        );
        return 0;
    };
    let (Some(a), Some(b)) = (before.local_timer.get(&cpu), after.local_timer.get(&cpu)) else {
        case.warnings.push(
            format!(
                "/proc/interrupts has no local timer (LOC) count for CPU {cpu}: its timer events \
             are not checked against it"
            )
            .into(),
        );
        return 0;
    };
    let loc = b.saturating_sub(*a) as f64;
    let (w0, w1) = (
        clock.ticks_to_ns(t0.wrapping_sub(start) as i64 as f64),
        clock.ticks_to_ns(t1.wrapping_sub(start) as i64 as f64),
    );
    let window_s = (w1 - w0) / 1e9;
    let traced = entries.iter().filter(|&&e| e >= w0 && e <= w1).count() as f64;
    // The kernel counts, but never samples, a timer interrupt taken while the CPU idles (as
    // it does between this CPU's spin and the other's): those are counted over the whole
    // traced pass, so they may make up a shortfall in the window, never more.
    let unsampled = t.timer_unsampled.get(&(cpu as u32)).copied().unwrap_or(0) as f64;
    let seen = if traced < loc {
        (traced + unsampled).min(loc)
    } else {
        traced
    };
    c.insert("local_timer_interrupts".into(), loc);
    c.insert("local_timer_per_s".into(), loc / window_s);
    c.insert("timer_events_in_window".into(), traced);
    c.insert("timer_events_unsampled".into(), unsampled);
    let unrecorded = (loc - seen).max(0.0);
    c.insert("timer_events_unrecorded".into(), unrecorded);
    let idle = if unsampled > 0.0 {
        format!(
            ", with the {unsampled:.0} the kernel counted but did not sample over the traced \
             pass (taken while the CPU idled) making up any shortfall"
        )
    } else {
        String::new()
    };
    case.checks.push(Check::near(
        "timer_events_vs_local_timer",
        loc,
        seen,
        (TIMER_TOLERANCE * loc).max(1.0),
        &format!(
            "local timer entries the kernel traced on CPU {cpu} between the two readings of \
             /proc/interrupts ({window_s:.2} s){idle}, against its LOC count; within ±2 % \
             (any it falls short is counted as lost records)"
        ),
    ));
    unrecorded as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(cpu: usize) -> CpuNoise {
        CpuNoise {
            cpu,
            span_ns: 10_000.0,
            iterations: 1,
            gaps_seen: 0,
            starts_ns: Vec::new(),
            lens_ns: Vec::new(),
            lens_ticks: Vec::new(),
            periodic: None,
            period_span_ns: 0.0,
        }
    }

    fn traced(loc_before: u64, loc_after: u64, unsampled: u64) -> Traced {
        let counts = |n: u64| Interrupts {
            local_timer: BTreeMap::from([(0, n)]),
            all: BTreeMap::from([(0, n)]),
        };
        Traced {
            spins: Vec::new(),
            events: Vec::new(),
            counts: BTreeMap::new(),
            window_s: 1e-5,
            lost: 0,
            lost_by_event: BTreeMap::new(),
            mechanism: Mechanism::Bpf,
            unsampled: 0,
            timer_unsampled: BTreeMap::from([(0, unsampled)]),
            loc: Some((counts(loc_before), counts(loc_after), 0, 10_000)),
            steal: None,
            notes: Vec::new(),
        }
    }

    fn case() -> Case {
        Case::new(
            "noise.cpu0.kernel",
            "a test",
            "interruption",
            oscost_model::example::samples(&[1.0]),
        )
    }

    /// Local timer interrupts `/proc/interrupts` counted that left no record are counted as
    /// lost records (what BPF shows when the kernel runs no program for them), entries the
    /// kernel counted but did not sample making up a shortfall first.
    #[test]
    fn timer_interrupts_left_unrecorded_are_counted_as_lost() {
        let clock = Clock::monotonic("a test".into());
        let timer = Kind::Enter("local_timer".into(), LOCAL_TIMER.into());
        let mine: Vec<(f64, &Kind)> = (1..=8).map(|i| (i as f64 * 1000.0, &timer)).collect();
        let n = noise(0);
        let run = |t: &Traced| {
            let mut c = case();
            let lost = timer_figures(&mut c, &mine, &[], &[], &[], &n, t, &clock, 0);
            (lost, c)
        };
        // Ten counted, eight recorded: two lost.
        let (lost, c) = run(&traced(100, 110, 0));
        assert_eq!(lost, 2);
        assert_eq!(c.counters["timer_events_unrecorded"], 2.0);
        assert_eq!(c.counters["timer_events_in_window"], 8.0);
        // Every one recorded: none lost.
        let (lost, c) = run(&traced(100, 108, 0));
        assert_eq!(lost, 0);
        assert_eq!(c.counters["timer_events_unrecorded"], 0.0);
        assert!(c.checks.iter().all(|k| k.passed), "{:?}", c.checks);
        // One counted but not sampled (perf, an idle CPU) makes up one of the two.
        let (lost, _) = run(&traced(100, 110, 1));
        assert_eq!(lost, 1);
    }
}
