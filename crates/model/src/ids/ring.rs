//! `ring`: a token passed around N tasks, the primitive's control, the touch of the working set
//! and the costs derived from them.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Ring.as_str();

/// A ring: `ring.<via>.<kind>.n<tasks>.k<tokens>.s<size>`, e.g. `ring.pipe.threads.n4.k1.s4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case<'a> {
    /// The primitive (`pipe`, `futex`, …).
    pub via: &'a str,
    /// `threads` or `processes`.
    pub kind: &'a str,
    /// Tasks in the ring.
    pub tasks: usize,
    /// Tokens going round.
    pub tokens: usize,
    /// KiB each task touches per hop.
    pub size: usize,
}

/// A figure derived from a ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Derived {
    /// `<case>.switch_cost`: a hop less the control.
    SwitchCost,
    /// `<case>.per_switch`: the same per switch the kernel counted.
    PerSwitch,
}

impl Derived {
    const ALL: [Derived; 2] = [Derived::SwitchCost, Derived::PerSwitch];

    fn name(self) -> &'static str {
        match self {
            Derived::SwitchCost => "switch_cost",
            Derived::PerSwitch => "per_switch",
        }
    }
}

/// Every id `ring` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// A ring.
    Case(Case<'a>),
    /// `ring.<via>.control`: the primitive's post + wait in one task.
    Control {
        /// The primitive.
        via: &'a str,
    },
    /// `ring.touch.s<size>`: touching the working set alone.
    Touch {
        /// KiB touched.
        size: usize,
    },
    /// A figure derived from a ring.
    Derived(Case<'a>, Derived),
}

impl fmt::Display for Case<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Case {
            via,
            kind,
            tasks,
            tokens,
            size,
        } = self;
        write!(f, "{NAME}.{via}.{kind}.n{tasks}.k{tokens}.s{size}")
    }
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Case(c) => write!(f, "{c}"),
            Id::Control { via } => write!(f, "{NAME}.{via}.control"),
            Id::Touch { size } => write!(f, "{NAME}.touch.s{size}"),
            Id::Derived(c, d) => write!(f, "{c}.{}", d.name()),
        }
    }
}

impl<'a> Id<'a> {
    /// The id's parts, or `None` for an id `ring` never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        let case = |p: &[&'a str]| {
            Some(Case {
                via: super::name(p[0])?,
                kind: super::name(p[1])?,
                tasks: super::number(p[2], "n", "")?,
                tokens: super::number(p[3], "k", "")?,
                size: super::number(p[4], "s", "")?,
            })
        };
        match super::parts(NAME, id)?.as_slice() {
            ["touch", size] => Some(Id::Touch {
                size: super::number(size, "s", "")?,
            }),
            [via, "control"] => Some(Id::Control {
                via: super::name(via)?,
            }),
            p @ [_, _, _, _, _] => Some(Id::Case(case(p)?)),
            [p @ .., last] if p.len() == 5 => {
                let d = Derived::ALL.into_iter().find(|d| d.name() == *last)?;
                Some(Id::Derived(case(p)?, d))
            }
            _ => None,
        }
    }
}

/// The id of figure `d` derived from the ring `case_id`.
pub fn derived(case_id: &str, d: Derived) -> String {
    format!("{case_id}.{}", d.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        let c = Case {
            via: "pipe",
            kind: "threads",
            tasks: 4,
            tokens: 1,
            size: 4,
        };
        for (id, text) in [
            (Id::Case(c), "ring.pipe.threads.n4.k1.s4"),
            (Id::Control { via: "eventfd" }, "ring.eventfd.control"),
            (Id::Touch { size: 256 }, "ring.touch.s256"),
            (
                Id::Derived(c, Derived::SwitchCost),
                "ring.pipe.threads.n4.k1.s4.switch_cost",
            ),
            (
                Id::Derived(c, Derived::PerSwitch),
                "ring.pipe.threads.n4.k1.s4.per_switch",
            ),
        ] {
            assert_eq!(id.to_string(), text);
            assert_eq!(Id::parse(text), Some(id), "{text}");
        }
        assert_eq!(
            derived("ring.pipe.threads.n2.k1.s4", Derived::PerSwitch),
            "ring.pipe.threads.n2.k1.s4.per_switch"
        );
    }

    #[test]
    fn other_ids_do_not_parse() {
        for id in [
            "ring.pipe.threads.n4.k1",
            "ring.pipe.threads.n4.k1.s4.other",
            "ring.pipe.threads.four.k1.s4",
            "ring.touch.4",
            "lockring.mutex.n2.k1",
        ] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
    }
}
