//! `switch`: a ping-pong between two tasks, its control and what is derived from it.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Switch.as_str();

/// A ping-pong: `switch.<via>.<kind>.<placement>`, e.g. `switch.pipe.threads.same`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case<'a> {
    /// The primitive (`pipe`, `futex`, …).
    pub via: &'a str,
    /// `threads` or `processes`.
    pub kind: &'a str,
    /// `same`, `cross` or `free`.
    pub placement: &'a str,
}

/// A figure derived from a ping-pong and its control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Derived {
    /// `<case>.one_way`: half a round trip.
    OneWay,
    /// `<case>.switch_cost`: half a round trip less the control.
    SwitchCost,
}

impl Derived {
    const ALL: [Derived; 2] = [Derived::OneWay, Derived::SwitchCost];

    fn name(self) -> &'static str {
        match self {
            Derived::OneWay => "one_way",
            Derived::SwitchCost => "switch_cost",
        }
    }
}

/// Every id `switch` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// A ping-pong.
    Case(Case<'a>),
    /// `switch.<via>.control`: the primitive's post + wait in one task.
    Control {
        /// The primitive.
        via: &'a str,
    },
    /// `<case>.stages`: the traced pass of a ping-pong, its hand-over split into stages.
    Stages(Case<'a>),
    /// `switch.stages`: the traced passes as a whole, when they could not run.
    AllStages,
    /// A figure derived from a ping-pong.
    Derived(Case<'a>, Derived),
}

impl fmt::Display for Case<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{NAME}.{}.{}.{}", self.via, self.kind, self.placement)
    }
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Case(c) => write!(f, "{c}"),
            Id::Control { via } => write!(f, "{NAME}.{via}.control"),
            Id::Stages(c) => write!(f, "{c}.stages"),
            Id::AllStages => write!(f, "{NAME}.stages"),
            Id::Derived(c, d) => write!(f, "{c}.{}", d.name()),
        }
    }
}

impl<'a> Id<'a> {
    /// The id's parts, or `None` for an id `switch` never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        let case = |p: &[&'a str]| {
            Some(Case {
                via: super::name(p[0])?,
                kind: super::name(p[1])?,
                placement: super::name(p[2])?,
            })
        };
        match super::parts(NAME, id)?.as_slice() {
            ["stages"] => Some(Id::AllStages),
            [via, "control"] => Some(Id::Control {
                via: super::name(via)?,
            }),
            p @ [_, _, _] => Some(Id::Case(case(p)?)),
            [p @ .., "stages"] if p.len() == 3 => Some(Id::Stages(case(p)?)),
            [p @ .., last] if p.len() == 3 => {
                let d = Derived::ALL.into_iter().find(|d| d.name() == *last)?;
                Some(Id::Derived(case(p)?, d))
            }
            _ => None,
        }
    }
}

/// `switch.pipe.threads.same.switch_cost`: a switch between threads on one CPU, over a pipe
/// (the datasheet's and the bill's switch).
pub const PIPE_SAME_SWITCH_COST: &str = "switch.pipe.threads.same.switch_cost";
/// `switch.futex.threads.same.switch_cost`: the same over a futex.
pub const FUTEX_SAME_SWITCH_COST: &str = "switch.futex.threads.same.switch_cost";
/// `switch.pipe.threads.same.one_way`: a wake-up of a blocked thread on the same CPU, over a
/// pipe (one post, one wait, one hand-over).
pub const PIPE_SAME_ONE_WAY: &str = "switch.pipe.threads.same.one_way";
/// `switch.futex.threads.same.one_way`: the same over a futex.
pub const FUTEX_SAME_ONE_WAY: &str = "switch.futex.threads.same.one_way";
/// `switch.pipe.threads.cross.one_way`: a wake-up of a thread on another CPU, over a pipe.
pub const PIPE_CROSS_ONE_WAY: &str = "switch.pipe.threads.cross.one_way";
/// `switch.futex.threads.cross.one_way`: the same over a futex.
pub const FUTEX_CROSS_ONE_WAY: &str = "switch.futex.threads.cross.one_way";

/// The id of a ping-pong.
pub fn case(via: &str, kind: &str, placement: &str) -> String {
    Case {
        via,
        kind,
        placement,
    }
    .to_string()
}

/// The id of a primitive's control.
pub fn control(via: &str) -> String {
    Id::Control { via }.to_string()
}

/// The id of the traced pass of the ping-pong `case_id`.
pub fn stages(case_id: &str) -> String {
    format!("{case_id}.stages")
}

/// The id of figure `d` derived from the ping-pong `case_id`.
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
            placement: "same",
        };
        for (id, text) in [
            (Id::Case(c), "switch.pipe.threads.same"),
            (Id::Control { via: "futex" }, "switch.futex.control"),
            (Id::Stages(c), "switch.pipe.threads.same.stages"),
            (Id::AllStages, "switch.stages"),
            (
                Id::Derived(c, Derived::OneWay),
                "switch.pipe.threads.same.one_way",
            ),
            (
                Id::Derived(c, Derived::SwitchCost),
                "switch.pipe.threads.same.switch_cost",
            ),
        ] {
            assert_eq!(id.to_string(), text);
            assert_eq!(Id::parse(text), Some(id), "{text}");
        }
        assert_eq!(case("pipe", "threads", "same"), "switch.pipe.threads.same");
        assert_eq!(control("pipe"), "switch.pipe.control");
        assert_eq!(stages(&c.to_string()), "switch.pipe.threads.same.stages");
        assert_eq!(
            derived(&c.to_string(), Derived::SwitchCost),
            "switch.pipe.threads.same.switch_cost"
        );
    }

    #[test]
    fn the_named_ids_are_built_ids() {
        for (via, placement, d, text) in [
            ("pipe", "same", Derived::SwitchCost, PIPE_SAME_SWITCH_COST),
            ("futex", "same", Derived::SwitchCost, FUTEX_SAME_SWITCH_COST),
            ("pipe", "same", Derived::OneWay, PIPE_SAME_ONE_WAY),
            ("futex", "same", Derived::OneWay, FUTEX_SAME_ONE_WAY),
            ("pipe", "cross", Derived::OneWay, PIPE_CROSS_ONE_WAY),
            ("futex", "cross", Derived::OneWay, FUTEX_CROSS_ONE_WAY),
        ] {
            assert_eq!(derived(&case(via, "threads", placement), d), text);
        }
    }

    #[test]
    fn other_ids_do_not_parse() {
        for id in [
            "switch",
            "switch.pipe",
            "ring.pipe.threads.same",
            "switch.pipe.threads.same.other",
            "switch..threads.same",
        ] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
    }
}
