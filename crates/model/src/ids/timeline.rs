//! `timeline`: N workers sharing one CPU, under a policy and nice values, and the readings of
//! their finish times.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Timeline.as_str();

/// A run of workers: `timeline.<kind>[.<policy>].n<workers>[.nice<v>_<v>…]`, e.g.
/// `timeline.processes.n2` or `timeline.threads.fifo.n3.nice0_5_-5`; the policy is left out when
/// it is the default one (`other`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case<'a> {
    /// `threads` or `processes`.
    pub kind: &'a str,
    /// The scheduling policy, `None` for the default one.
    pub policy: Option<&'a str>,
    /// Workers sharing the CPU.
    pub workers: usize,
    /// Each worker's nice value, when they were set.
    pub nice: Option<Vec<i32>>,
}

/// A reading of a run that has an id of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// `<case>.latency`: each worker's finish time from the common start.
    Latency,
    /// `<case>.own_latency`: each worker's time from its own start to its finish.
    OwnLatency,
    /// `<case>.kernel`: the traced round, read with the kernel's tracepoints.
    Kernel,
}

impl Reading {
    const ALL: [Reading; 3] = [Reading::Latency, Reading::OwnLatency, Reading::Kernel];

    fn name(self) -> &'static str {
        match self {
            Reading::Latency => "latency",
            Reading::OwnLatency => "own_latency",
            Reading::Kernel => "kernel",
        }
    }
}

/// Every id `timeline` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Id<'a> {
    /// A run of workers.
    Case(Case<'a>),
    /// A reading of a run.
    Of(Case<'a>, Reading),
    /// `timeline.kernel`: the traced rounds as a whole, when they could not run.
    Kernel,
}

impl fmt::Display for Case<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{NAME}.{}", self.kind)?;
        if let Some(p) = self.policy {
            write!(f, ".{p}")?;
        }
        write!(f, ".n{}", self.workers)?;
        if let Some(v) = &self.nice {
            let v: Vec<String> = v.iter().map(i32::to_string).collect();
            write!(f, ".nice{}", v.join("_"))?;
        }
        Ok(())
    }
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Case(c) => write!(f, "{c}"),
            Id::Of(c, r) => write!(f, "{c}.{}", r.name()),
            Id::Kernel => write!(f, "{NAME}.kernel"),
        }
    }
}

/// The nice values of a `nice<v>_<v>…` part, only as the builder writes them.
fn nice(part: &str) -> Option<Vec<i32>> {
    part.strip_prefix("nice")?
        .split('_')
        .map(|v| v.parse::<i32>().ok().filter(|n| n.to_string() == v))
        .collect()
}

impl<'a> Id<'a> {
    /// The id's parts, or `None` for an id `timeline` never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        let p = super::parts(NAME, id)?;
        if p == ["kernel"] {
            return Some(Id::Kernel);
        }
        let mut rest = p.into_iter();
        let kind = super::name(rest.next()?)?;
        let mut next = rest.next()?;
        let policy = match super::number::<usize>(next, "n", "") {
            Some(_) => None,
            None => {
                let p = super::name(next)?;
                next = rest.next()?;
                Some(p)
            }
        };
        let workers = super::number(next, "n", "")?;
        let mut next = rest.next();
        let nice = match next.and_then(nice) {
            Some(v) => {
                next = rest.next();
                Some(v)
            }
            None => None,
        };
        let case = Case {
            kind,
            policy,
            workers,
            nice,
        };
        let reading = match next {
            None => return Some(Id::Case(case)),
            Some(r) => Reading::ALL.into_iter().find(|x| x.name() == r)?,
        };
        rest.next().is_none().then_some(Id::Of(case, reading))
    }
}

/// The id of reading `r` of the run `case_id`.
pub fn reading(case_id: &str, r: Reading) -> String {
    format!("{case_id}.{}", r.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        let plain = Case {
            kind: "processes",
            policy: None,
            workers: 2,
            nice: None,
        };
        let full = Case {
            kind: "threads",
            policy: Some("fifo"),
            workers: 3,
            nice: Some(vec![0, 5, -5]),
        };
        for (id, text) in [
            (Id::Case(plain.clone()), "timeline.processes.n2"),
            (
                Id::Case(full.clone()),
                "timeline.threads.fifo.n3.nice0_5_-5",
            ),
            (
                Id::Of(plain.clone(), Reading::OwnLatency),
                "timeline.processes.n2.own_latency",
            ),
            (
                Id::Of(full.clone(), Reading::Kernel),
                "timeline.threads.fifo.n3.nice0_5_-5.kernel",
            ),
            (
                Id::Of(plain.clone(), Reading::Latency),
                "timeline.processes.n2.latency",
            ),
            (Id::Kernel, "timeline.kernel"),
        ] {
            assert_eq!(id.to_string(), text);
            assert_eq!(Id::parse(text), Some(id), "{text}");
        }
        assert_eq!(
            reading(&plain.to_string(), Reading::Latency),
            "timeline.processes.n2.latency"
        );
    }

    #[test]
    fn other_ids_do_not_parse() {
        for id in [
            "timeline.processes",
            "timeline.processes.fifo",
            "timeline.processes.n2.other",
            "timeline.processes.n2.nice0_+1",
            "timeline.processes.n2.latency.kernel",
        ] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
    }
}
