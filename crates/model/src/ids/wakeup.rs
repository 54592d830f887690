//! `wakeup`: how late a thread sleeping until a time is woken.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Wakeup.as_str();

/// `wakeup.other.1ms`: the default policy waking every millisecond, the datasheet's.
pub const OTHER_1MS: &str = "wakeup.other.1ms";
/// `wakeup.kernel`: the kernel's traced passes as a whole, when they could not run.
pub const KERNEL: &str = "wakeup.kernel";

/// The mode a case id leaves out: sleeping until an absolute time.
pub const DEFAULT_MODE: &str = "abstime";

/// A point: `wakeup.<policy>.<period>[.<mode>][.cpu<N>][.load]`, e.g.
/// `wakeup.fifo.500us.timerfd.cpu1.load`; policy and mode as the command line spells them,
/// the mode left out when it is [`DEFAULT_MODE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case<'a> {
    /// The scheduling policy (`other`, `fifo`).
    pub policy: &'a str,
    /// The period between deadlines, ns.
    pub period_ns: u64,
    /// How the thread sleeps.
    pub mode: &'a str,
    /// The CPU, when the run measured each CPU.
    pub cpu: Option<usize>,
    /// Whether the other CPUs were kept busy.
    pub load: bool,
}

/// `1ms`, `500us`, `1500us`, `12345ns`: a period as it appears in a case id.
pub fn period_name(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// A period's ns from its name, only as [`period_name`] writes it.
fn period(part: &str) -> Option<u64> {
    let ns = if let Some(ms) = super::number::<u64>(part, "", "ms") {
        ms.checked_mul(1_000_000)?
    } else if let Some(us) = super::number::<u64>(part, "", "us") {
        us.checked_mul(1_000)?
    } else {
        super::number(part, "", "ns")?
    };
    (period_name(ns) == part).then_some(ns)
}

impl fmt::Display for Case<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{NAME}.{}.{}", self.policy, period_name(self.period_ns))?;
        if self.mode != DEFAULT_MODE {
            write!(f, ".{}", self.mode)?;
        }
        if let Some(cpu) = self.cpu {
            write!(f, ".cpu{cpu}")?;
        }
        if self.load {
            f.write_str(".load")?;
        }
        Ok(())
    }
}

impl<'a> Case<'a> {
    /// The id's parts, or `None` for an id that is no case of `wakeup`.
    pub fn parse(id: &'a str) -> Option<Self> {
        let parts = super::parts(NAME, id)?;
        let [policy, per, rest @ ..] = parts.as_slice() else {
            return None;
        };
        let mut rest = rest;
        let load = rest.last() == Some(&"load");
        if load {
            rest = &rest[..rest.len() - 1];
        }
        let cpu = match rest.last().and_then(|p| super::number(p, "cpu", "")) {
            Some(cpu) => {
                rest = &rest[..rest.len() - 1];
                Some(cpu)
            }
            None => None,
        };
        let mode = match rest {
            [] => DEFAULT_MODE,
            [m] if *m != DEFAULT_MODE => super::name(m)?,
            _ => return None,
        };
        Some(Case {
            policy: super::name(policy)?,
            period_ns: period(per)?,
            mode,
            cpu,
            load,
        })
    }
}

/// `<case>.kernel`: the case's traced pass, its lateness split by the kernel's tracepoints.
pub fn traced(case: &str) -> String {
    format!("{case}.kernel")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for (c, text) in [
            (
                Case {
                    policy: "other",
                    period_ns: 1_000_000,
                    mode: DEFAULT_MODE,
                    cpu: None,
                    load: false,
                },
                OTHER_1MS,
            ),
            (
                Case {
                    policy: "fifo",
                    period_ns: 500_000,
                    mode: "timerfd",
                    cpu: Some(1),
                    load: true,
                },
                "wakeup.fifo.500us.timerfd.cpu1.load",
            ),
            (
                Case {
                    policy: "other",
                    period_ns: 12_345,
                    mode: "relative",
                    cpu: None,
                    load: false,
                },
                "wakeup.other.12345ns.relative",
            ),
        ] {
            assert_eq!(c.to_string(), text);
            assert_eq!(Case::parse(text), Some(c), "{text}");
        }
        for id in [
            "wakeup.other",
            "wakeup.other.1000us",
            "wakeup.other.1ms.abstime",
            "wakeup.other.1ms.a.b",
            KERNEL,
        ] {
            assert_eq!(Case::parse(id), None, "{id}");
        }
        assert_eq!(traced(OTHER_1MS), "wakeup.other.1ms.kernel");
    }
}
