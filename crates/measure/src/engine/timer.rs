//! Periodic timer events made on purpose (a POSIX timer signalling the working thread, or a
//! helper thread on the same CPU woken by a sleep or a timerfd), each counted where it happens,
//! and the probe that finds which periods this machine can keep: what `tick` and `tick-forms`
//! measure under.

use crate::context::Context;
use crate::engine::fmt_ns;
use crate::engine::work::work;
use anyhow::Context as _;
use oscost_sys::clock::Clock;
use oscost_sys::timer::{EventCounts, Helper, Policy, SignalTimer, Wake};
use oscost_sys::Switches;
use std::hint::black_box;
use std::time::Duration;

/// No period below 1 µs is accepted: an interrupt's entry and exit alone take about that long.
const MIN_PERIOD_NS: u64 = 1_000;
/// Nor above 100 ms: too few events per run to see, and a helper asleep for longer would hold
/// up the end of the run.
const MAX_PERIOD_NS: u64 = 100_000_000;
/// A run must see at least this many events at its longest period.
pub(crate) const MIN_EVENTS_PER_RUN: u64 = 10;
/// A probe arms the source for this long while the working thread spins.
const PROBE_NS: u64 = 20_000_000;
/// A probe's source stops by itself after this long, whatever happens.
const PROBE_LIMIT_NS: u64 = 10 * PROBE_NS;
/// Below this share of its events delivered in a probe, a period cannot be kept here...
const MIN_DELIVERED: f64 = 0.5;
/// ...nor when servicing the events leaves the working thread less than half the CPU: the
/// figure would be the events' cost alone, and a run would take more than twice the work.
const MIN_KEPT: f64 = 0.5;
/// Counted events per run must be within this of time / period...
pub(crate) const EVENTS_TOLERANCE: f64 = 0.05;

/// ...or within one event: a run that starts and ends between two events counts one fewer
/// than time / period, which at 20 events per run (20 ms of work at 1 ms) is already 5 %.
pub(crate) fn events_tolerance(expected: f64) -> f64 {
    (EVENTS_TOLERANCE * expected).max(1.0)
}

/// Where the periodic events come from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Source {
    /// POSIX timer signalling the working thread: an interrupt and a signal delivery
    Signal,
    /// helper thread on the same CPU sleeping to an absolute time: an interrupt and two switches
    Helper,
    /// helper thread on the same CPU blocked on a timerfd: an interrupt and two switches
    Timerfd,
}

impl Source {
    pub(crate) const ALL: [Source; 3] = [Source::Signal, Source::Helper, Source::Timerfd];

    pub(crate) fn name(self) -> String {
        crate::engine::value_name(&self)
    }

    pub(crate) fn describe(self) -> &'static str {
        match self {
            Source::Signal => {
                "a POSIX timer (CLOCK_MONOTONIC) signalling the working thread, whose handler \
                 counts each delivery"
            }
            Source::Helper => {
                "a helper thread on the same CPU that sleeps to the next period with \
                 clock_nanosleep(TIMER_ABSTIME) and counts each wake-up"
            }
            Source::Timerfd => {
                "a helper thread on the same CPU that reads a periodic timerfd and counts each \
                 wake-up"
            }
        }
    }

    /// Switches each event makes: none for a signal, the helper's wake-up and sleep otherwise.
    pub(crate) fn switches_per_event(self) -> f64 {
        match self {
            Source::Signal => 0.0,
            Source::Helper | Source::Timerfd => 2.0,
        }
    }
}

/// A period from the command line: a time from 1 µs to 100 ms.
pub(crate) fn parse_period(s: &str) -> Result<u64, String> {
    match crate::engine::parse_time(s)? {
        ns if ns < MIN_PERIOD_NS => Err(format!(
            "`{s}` is below 1us, shorter than a timer interrupt's own entry and exit: no \
             machine can deliver it"
        )),
        ns if ns > MAX_PERIOD_NS => Err(format!(
            "`{s}` is above 100ms: too few events per run to measure"
        )),
        ns => Ok(ns),
    }
}

/// A period as it appears in case ids and tables: `1ms`, `49us`, `9200ns`.
pub fn period_name(ns: u64) -> String {
    oscost_model::ids::tick::period_name(ns)
}

/// A running source of events, disarmed (timer deleted, helper joined) when dropped, on every
/// way out of a run.
pub(crate) enum Armed {
    // Boxed: the timer holds the saved signal action and mask, four times a helper's size.
    Signal(Box<SignalTimer>),
    Helper(Helper),
}

impl Armed {
    /// Arms `source`, a helper asking for SCHED_FIFO at `priority`; it stops by itself
    /// `limit_ns` from now whatever happens, so a period the machine cannot keep never holds
    /// the working thread for good.
    pub(crate) fn arm(
        source: Source,
        period: u64,
        cpu: usize,
        limit_ns: u64,
        priority: i32,
    ) -> anyhow::Result<Armed> {
        let p = Duration::from_nanos(period);
        let limit = Duration::from_nanos(limit_ns);
        Ok(match source {
            Source::Signal => Armed::Signal(Box::new(
                SignalTimer::arm(p, limit).context("arming the POSIX timer of --source signal")?,
            )),
            Source::Helper => Armed::Helper(
                Helper::start(Wake::Sleep, p, cpu, priority, limit)
                    .context("starting the helper thread of --source helper")?,
            ),
            Source::Timerfd => Armed::Helper(
                Helper::start(Wake::Timerfd, p, cpu, priority, limit)
                    .context("starting the helper thread of --source timerfd")?,
            ),
        })
    }

    pub(crate) fn counts(&self) -> EventCounts {
        match self {
            Armed::Signal(t) => t.counts(),
            Armed::Helper(h) => h.counts(),
        }
    }

    pub(crate) fn helper_switches(&self) -> Option<Switches> {
        match self {
            Armed::Signal(_) => None,
            Armed::Helper(h) => h.switches(),
        }
    }

    /// The helper thread's CPU time so far, ns; none for a signal.
    pub(crate) fn helper_run_ns(&self) -> Option<u64> {
        match self {
            Armed::Signal(_) => None,
            Armed::Helper(h) => h.run_ns(),
        }
    }

    pub(crate) fn policy(&self) -> Option<Policy> {
        match self {
            Armed::Signal(_) => None,
            Armed::Helper(h) => Some(h.policy().clone()),
        }
    }

    /// Disarms, returning the error that ended a helper early, if one did.
    pub(crate) fn disarm(self) -> anyhow::Result<()> {
        match self {
            Armed::Signal(t) => {
                drop(t);
                Ok(())
            }
            Armed::Helper(h) => h.stop().context("the helper thread failed"),
        }
    }
}

/// How long a run's source may fire before it stops by itself: ten times the work's own
/// time, and a second. A period that passed the probe leaves the work at least half the CPU,
/// so a run takes at most about twice the work; this bound only stops a run whose period
/// turned out not to be kept, which the event count then shows.
pub(crate) fn run_limit(work_ns: u64) -> u64 {
    work_ns.saturating_mul(10).saturating_add(1_000_000_000)
}

/// Iterations of [`work`] per chunk of a probe: a few microseconds.
const PROBE_CHUNK: u64 = 1_000;

/// Chunks of work done while spinning for [`PROBE_NS`].
fn work_chunks(clock: &Clock) -> u64 {
    let until = clock.now() + clock.ns_to_ticks(PROBE_NS as f64) as u64;
    let mut chunks = 0u64;
    while clock.now() < until {
        black_box(work(PROBE_CHUNK));
        chunks += 1;
    }
    chunks
}

/// What a period leaves of a probe: the share of its events `source` delivered, and the share
/// of the CPU the working thread kept, each the best of three short probes.
#[derive(Debug, Clone, Copy)]
struct Probe {
    delivered: f64,
    kept: f64,
}

fn probe(
    clock: &Clock,
    source: Source,
    period: u64,
    cpu: usize,
    priority: i32,
) -> anyhow::Result<Probe> {
    let me = oscost_sys::gettid();
    let a = clock.now();
    let waited = Waited::since(me);
    let chunks = work_chunks(clock);
    let ns = clock.ticks_to_ns(clock.now().wrapping_sub(a) as f64);
    let undisturbed = chunks as f64 / waited.own_time(ns, None);
    let mut best = Probe {
        delivered: 0.0,
        kept: 0.0,
    };
    let steal_before = steal_ticks(cpu);
    for tries in 1.. {
        // Everything from the moment of arming counts: at a period shorter than one event,
        // the events can hold the thread before it gets back from arming them.
        let a = clock.now();
        let waited = Waited::since(me);
        let armed = Armed::arm(source, period, cpu, PROBE_LIMIT_NS, priority)?;
        let chunks = work_chunks(clock);
        let ns = clock.ticks_to_ns(clock.now().wrapping_sub(a) as f64);
        let own = waited.own_time(ns, armed.helper_run_ns());
        let got = armed.counts().events as f64;
        armed.disarm()?;
        // A signal waits for its thread to run, so events too are counted against the time
        // the working thread was not kept off its CPU by other programs.
        best.delivered = best.delivered.max(got / (own / period as f64));
        best.kept = best.kept.max(chunks as f64 / (undisturbed * own));
        if best.delivered >= 0.9 && best.kept >= 0.9 {
            break;
        }
        // The host took this CPU meanwhile (steal, which no schedstat wait shows): no reason
        // to refuse a period either, so up to STOLEN_TRIES, a pause before each, while it
        // does. A burst of steal made one event look like a millisecond in all of three.
        let stolen = steal_ticks(cpu)
            .zip(steal_before)
            .is_some_and(|(now, then)| now > then);
        if tries >= if stolen { STOLEN_TRIES } else { 3 } {
            break;
        }
        if stolen {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    Ok(best)
}

/// Probes of a period at most, while the host takes the CPU (steal).
const STOLEN_TRIES: usize = 8;

/// The host's steal time on `cpu` so far, USER_HZ ticks; `None` where `/proc/stat` does not
/// say.
fn steal_ticks(cpu: usize) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    crate::env::parse::parse_proc_stat(&text)
        .steal_ticks
        .get(&cpu)
        .copied()
}

/// The working thread's wait for its CPU from one moment on, so that a probe counts only the
/// time its own events take, not what other programs took: a busy machine is no reason to
/// refuse a period.
struct Waited {
    tid: i32,
    start: Option<u64>,
}

impl Waited {
    fn since(tid: i32) -> Waited {
        Waited {
            tid,
            start: oscost_sys::timer::task_times(tid).ok().map(|t| t.waited_ns),
        }
    }

    /// Of `ns` elapsed, the time that was the working thread's or its own events': less what
    /// it waited runnable, except the helper's run time `helper_ns` (it preempts the working
    /// thread on purpose, one event at a time). Without schedstat, all of `ns`.
    fn own_time(&self, ns: f64, helper_ns: Option<u64>) -> f64 {
        let Some(start) = self.start else { return ns };
        let Ok(now) = oscost_sys::timer::task_times(self.tid) else {
            return ns;
        };
        // The helper was started after `start`: all its run time falls inside.
        let others = now
            .waited_ns
            .saturating_sub(start)
            .saturating_sub(helper_ns.unwrap_or(0));
        (ns - others as f64).max(ns * 0.01)
    }
}

/// The points to measure: each source with each period it can deliver here, a helper at
/// SCHED_FIFO `priority`. A period asked for that cannot be delivered is refused; a default
/// one is left out with a warning.
#[allow(clippy::too_many_arguments)]
pub(crate) fn deliverable(
    clock: &Clock,
    sources: &[Source],
    periods: &[u64],
    explicit: bool,
    cpu: usize,
    priority: i32,
    ctx: &Context,
    notes: &mut Vec<oscost_model::Message>,
) -> anyhow::Result<Vec<(Source, u64)>> {
    let mut ascending = periods.to_vec();
    ascending.sort_unstable();
    let mut points = Vec::new();
    for &source in sources {
        let mut lost = Vec::new();
        for &p in &ascending {
            ctx.check_cancel()?;
            let pr = probe(clock, source, p, cpu, priority)?;
            if pr.delivered >= MIN_DELIVERED && pr.kept >= MIN_KEPT {
                break;
            }
            let why = if pr.delivered < MIN_DELIVERED {
                format!(
                    "the {} source delivered {:.0} % of its events at {} in a {} ms probe (at \
                     best one every {})",
                    source.name(),
                    pr.delivered * 100.0,
                    period_name(p),
                    PROBE_NS / 1_000_000,
                    fmt_ns(p as f64 / pr.delivered.max(1e-9))
                )
            } else {
                format!(
                    "the {} source's events at {} left the working thread {:.0} % of its CPU \
                     (other programs' share aside) in a {} ms probe (each event takes about \
                     {})",
                    source.name(),
                    period_name(p),
                    pr.kept * 100.0,
                    PROBE_NS / 1_000_000,
                    fmt_ns(p as f64 * (1.0 - pr.kept))
                )
            };
            let why = format!("{why}: this machine cannot keep that period");
            if explicit {
                anyhow::bail!("--periods {}: {why}; use a longer period", period_name(p));
            }
            notes.push(format!("{why}; left out of the default periods").into());
            lost.push(p);
        }
        points.extend(
            periods
                .iter()
                .filter(|p| !lost.contains(p))
                .map(|&p| (source, p)),
        );
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{parse_duration, parse_time};

    #[test]
    fn times_parse_with_their_units() {
        assert_eq!(parse_time("9.2us"), Ok(9_200));
        assert_eq!(parse_time("9.2µs"), Ok(9_200));
        assert_eq!(parse_time("49us"), Ok(49_000));
        assert_eq!(parse_time("1ms"), Ok(1_000_000));
        assert_eq!(parse_time("5s"), Ok(5_000_000_000));
        assert_eq!(parse_time("500ns"), Ok(500));
        assert!(parse_time("5").unwrap_err().contains("no unit"));
        assert!(parse_time("5min").is_err());
        assert!(parse_time("-1ms").is_err());
        assert!(parse_duration("0s").unwrap_err().contains("above 0"));
        assert!(parse_period("500ns").unwrap_err().contains("below 1us"));
        assert!(parse_period("1s").is_err());
        assert_eq!(period_name(9_200), "9200ns");
        assert_eq!(period_name(49_000), "49us");
        assert_eq!(period_name(1_000_000), "1ms");
    }
}
