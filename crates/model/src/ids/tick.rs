//! `tick`: a working thread interrupted by timer events from one source at one period.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Tick.as_str();

/// The source of the round-robin cases: the kernel's SCHED_RR time slice, no timer of ours.
pub const RR: &str = "rr";

/// A period as it appears in case ids and tables: `1ms`, `49us`, `9200ns`.
pub fn period_name(ns: u64) -> String {
    // `rem_euclid`, not `%`: newer lints ask for `is_multiple_of`, which Rust 1.80 lacks.
    if ns.rem_euclid(1_000_000) == 0 {
        format!("{}ms", ns / 1_000_000)
    } else if ns.rem_euclid(1_000) == 0 {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// The period in ns of a name [`period_name`] wrote, or `None` for any other text.
pub fn parse_period(name: &str) -> Option<u64> {
    let ns = [("ms", 1_000_000), ("us", 1_000), ("ns", 1)]
        .into_iter()
        .find_map(|(unit, scale)| super::number::<u64>(name, "", unit)?.checked_mul(scale))?;
    (period_name(ns) == name).then_some(ns)
}

/// A timed case: `tick.<source>.<period>`, e.g. `tick.timerfd.1ms` or `tick.rr.100ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case<'a> {
    /// `signal`, `helper`, `timerfd`, or [`RR`].
    pub source: &'a str,
    /// The period of the events, ns.
    pub period_ns: u64,
}

/// A figure derived from a timed case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Derived {
    /// `<case>.per_event`: the work's extra time per timer event.
    PerEvent,
    /// `<case>.per_rescheduling`: the work's extra time per round-robin rescheduling.
    PerRescheduling,
}

impl Derived {
    const ALL: [Derived; 2] = [Derived::PerEvent, Derived::PerRescheduling];

    fn name(self) -> &'static str {
        match self {
            Derived::PerEvent => "per_event",
            Derived::PerRescheduling => "per_rescheduling",
        }
    }
}

/// Every id `tick` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// `tick.undisturbed`: the work with no timer.
    Undisturbed,
    /// `tick.kernel`: the traced passes as a whole, when they could not run.
    Kernel,
    /// A timed case.
    Case(Case<'a>),
    /// `<case>.kernel`: the traced pass of a timed case.
    Traced(Case<'a>),
    /// `<case>.alone`: a round-robin case's work done by one thread alone.
    Alone(Case<'a>),
    /// A figure derived from a timed case.
    Derived(Case<'a>, Derived),
}

impl fmt::Display for Case<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{NAME}.{}.{}", self.source, period_name(self.period_ns))
    }
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Undisturbed => write!(f, "{NAME}.undisturbed"),
            Id::Kernel => write!(f, "{NAME}.kernel"),
            Id::Case(c) => write!(f, "{c}"),
            Id::Traced(c) => write!(f, "{c}.kernel"),
            Id::Alone(c) => write!(f, "{}", alone(&c.to_string())),
            Id::Derived(c, d) => write!(f, "{c}.{}", d.name()),
        }
    }
}

impl<'a> Id<'a> {
    /// The id's parts, or `None` for an id `tick` never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        let case = |source: &'a str, period: &str| {
            Some(Case {
                source: super::name(source)?,
                period_ns: parse_period(period)?,
            })
        };
        match super::parts(NAME, id)?.as_slice() {
            ["undisturbed"] => Some(Id::Undisturbed),
            ["kernel"] => Some(Id::Kernel),
            [source, period] => Some(Id::Case(case(source, period)?)),
            [source, period, "kernel"] => Some(Id::Traced(case(source, period)?)),
            [source, period, "alone"] => Some(Id::Alone(case(source, period)?)),
            [source, period, last] => {
                let d = Derived::ALL.into_iter().find(|d| d.name() == *last)?;
                Some(Id::Derived(case(source, period)?, d))
            }
            _ => None,
        }
    }
}

/// The id of a timed case.
pub fn case(source: &str, period_ns: u64) -> String {
    Case { source, period_ns }.to_string()
}

/// The id of the traced pass of the timed case `case_id`.
pub fn traced(case_id: &str) -> String {
    format!("{case_id}.kernel")
}

/// The id of the work of the round-robin case `case_id` done by one thread alone.
pub fn alone(case_id: &str) -> String {
    format!("{case_id}.alone")
}

/// The id of figure `d` derived from the timed case `case_id`.
pub fn derived(case_id: &str, d: Derived) -> String {
    format!("{case_id}.{}", d.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_round_trip() {
        for (ns, name) in [(1_000_000, "1ms"), (49_000, "49us"), (9_200, "9200ns")] {
            assert_eq!(period_name(ns), name);
            assert_eq!(parse_period(name), Some(ns));
        }
        for name in ["1000us", "1s", "ms", "01ms", "1.5ms"] {
            assert_eq!(parse_period(name), None, "{name}");
        }
    }

    #[test]
    fn ids_round_trip() {
        let c = Case {
            source: "timerfd",
            period_ns: 49_000,
        };
        for (id, text) in [
            (Id::Undisturbed, "tick.undisturbed"),
            (Id::Kernel, "tick.kernel"),
            (Id::Case(c), "tick.timerfd.49us"),
            (Id::Traced(c), "tick.timerfd.49us.kernel"),
            (
                Id::Alone(Case {
                    source: RR,
                    period_ns: 10_000_000,
                }),
                "tick.rr.10ms.alone",
            ),
            (
                Id::Derived(c, Derived::PerEvent),
                "tick.timerfd.49us.per_event",
            ),
            (
                Id::Derived(
                    Case {
                        source: RR,
                        period_ns: 100_000_000,
                    },
                    Derived::PerRescheduling,
                ),
                "tick.rr.100ms.per_rescheduling",
            ),
        ] {
            assert_eq!(id.to_string(), text);
            assert_eq!(Id::parse(text), Some(id), "{text}");
        }
        assert_eq!(case("signal", 1_000_000), "tick.signal.1ms");
        assert_eq!(traced("tick.signal.1ms"), "tick.signal.1ms.kernel");
        assert_eq!(
            derived("tick.signal.1ms", Derived::PerEvent),
            "tick.signal.1ms.per_event"
        );
    }

    #[test]
    fn other_ids_do_not_parse() {
        for id in [
            "tick.signal",
            "tick.signal.1s",
            "tick.signal.1ms.other",
            "tick",
        ] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
    }
}
