//! `tick-forms`: the same work as one flow, threads or processes, under a scheduling policy and
//! a timer period, and the hand-overs between its tasks.

use std::fmt;

use super::tick::{parse_period, period_name};

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::TickForms.as_str();

/// A point: `tick-forms.<form>.<policy>.<period>`, e.g. `tick-forms.single.other.1ms`, the
/// period `none` when no timer ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case<'a> {
    /// `single`, `threads` or `processes`.
    pub form: &'a str,
    /// The scheduling policy (`other`, `fifo`, `rr`).
    pub policy: &'a str,
    /// The timer's period in ns, `None` with no timer.
    pub period_ns: Option<u64>,
}

/// Every id `tick-forms` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// A point.
    Case(Case<'a>),
    /// `<case>.extra`: the time the timer's events added to the point's work.
    Extra(Case<'a>),
    /// `tick-forms.switch.<kind>`: a one-way hand-over between two tasks of a kind.
    Switch {
        /// `threads` or `processes`.
        kind: &'a str,
    },
    /// `tick-forms.switch.<kind>.cost`: a hand-over less the control.
    SwitchCost {
        /// `threads` or `processes`.
        kind: &'a str,
    },
    /// `tick-forms.switch.control`: the futex post + wait in one task.
    Control,
}

/// The period part of a point's id.
fn period_part(period_ns: Option<u64>) -> String {
    period_ns.map_or_else(|| "none".to_owned(), period_name)
}

impl fmt::Display for Case<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let period = period_part(self.period_ns);
        write!(f, "{NAME}.{}.{}.{period}", self.form, self.policy)
    }
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Case(c) => write!(f, "{c}"),
            Id::Extra(c) => write!(f, "{c}.extra"),
            Id::Switch { kind } => write!(f, "{NAME}.switch.{kind}"),
            Id::SwitchCost { kind } => write!(f, "{NAME}.switch.{kind}.cost"),
            Id::Control => write!(f, "{NAME}.switch.control"),
        }
    }
}

impl<'a> Id<'a> {
    /// The id's parts, or `None` for an id `tick-forms` never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        let case = |form: &'a str, policy: &'a str, period: &str| {
            Some(Case {
                form: super::name(form)?,
                policy: super::name(policy)?,
                period_ns: match period {
                    "none" => None,
                    p => Some(parse_period(p)?),
                },
            })
        };
        match super::parts(NAME, id)?.as_slice() {
            ["switch", "control"] => Some(Id::Control),
            ["switch", kind] => Some(Id::Switch {
                kind: super::name(kind)?,
            }),
            ["switch", kind, "cost"] => Some(Id::SwitchCost {
                kind: super::name(kind)?,
            }),
            [form, policy, period] => Some(Id::Case(case(form, policy, period)?)),
            [form, policy, period, "extra"] => Some(Id::Extra(case(form, policy, period)?)),
            _ => None,
        }
    }
}

/// The id of a point.
pub fn case(form: &str, policy: &str, period_ns: Option<u64>) -> String {
    Case {
        form,
        policy,
        period_ns,
    }
    .to_string()
}

/// The id of the time the timer added to the point `case_id`.
pub fn extra(case_id: &str) -> String {
    format!("{case_id}.extra")
}

/// The id of a hand-over between two tasks of `kind`.
pub fn switch(kind: &str) -> String {
    Id::Switch { kind }.to_string()
}

/// The id of the cost derived from the hand-over `switch_id`.
pub fn switch_cost(switch_id: &str) -> String {
    format!("{switch_id}.cost")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        let c = Case {
            form: "processes",
            policy: "fifo",
            period_ns: Some(9_200),
        };
        let none = Case {
            form: "single",
            policy: "other",
            period_ns: None,
        };
        for (id, text) in [
            (Id::Case(c), "tick-forms.processes.fifo.9200ns"),
            (Id::Case(none), "tick-forms.single.other.none"),
            (Id::Extra(c), "tick-forms.processes.fifo.9200ns.extra"),
            (Id::Switch { kind: "threads" }, "tick-forms.switch.threads"),
            (
                Id::SwitchCost { kind: "processes" },
                "tick-forms.switch.processes.cost",
            ),
            (Id::Control, "tick-forms.switch.control"),
        ] {
            assert_eq!(id.to_string(), text);
            assert_eq!(Id::parse(text), Some(id), "{text}");
        }
        assert_eq!(
            case("threads", "rr", Some(200_000)),
            "tick-forms.threads.rr.200us"
        );
        assert_eq!(
            extra(&c.to_string()),
            "tick-forms.processes.fifo.9200ns.extra"
        );
        assert_eq!(
            switch_cost(&switch("threads")),
            "tick-forms.switch.threads.cost"
        );
    }

    #[test]
    fn other_ids_do_not_parse() {
        for id in [
            "tick-forms.single.other",
            "tick-forms.single.other.soon",
            "tick-forms.single.other.1ms.other",
            "tick.single.other.1ms",
        ] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
    }
}
