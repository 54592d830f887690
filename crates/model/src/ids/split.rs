//! `split`: the same work split among N tasks of a form on a set of CPUs.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Split.as_str();

/// A point: `split.<form>.<set>.<tasks>[.yield]`, e.g. `split.threads.two.4.yield`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case<'a> {
    /// `single`, `threads` or `processes`.
    pub form: &'a str,
    /// The CPUs: `one`, `two`, `all`, `balanced`.
    pub set: &'a str,
    /// Tasks sharing the work.
    pub tasks: usize,
    /// Whether each task yields after every piece of work.
    pub yield_each: bool,
}

impl fmt::Display for Case<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{NAME}.{}.{}.{}", self.form, self.set, self.tasks)?;
        if self.yield_each {
            f.write_str(".yield")?;
        }
        Ok(())
    }
}

impl<'a> Case<'a> {
    /// The id's parts, or `None` for an id `split` never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        let (p, yield_each) = match super::parts(NAME, id)?.as_slice() {
            [form, set, tasks] => ([*form, *set, *tasks], false),
            [form, set, tasks, "yield"] => ([*form, *set, *tasks], true),
            _ => return None,
        };
        Some(Case {
            form: super::name(p[0])?,
            set: super::name(p[1])?,
            tasks: super::number(p[2], "", "")?,
            yield_each,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for (c, text) in [
            (
                Case {
                    form: "threads",
                    set: "two",
                    tasks: 4,
                    yield_each: true,
                },
                "split.threads.two.4.yield",
            ),
            (
                Case {
                    form: "single",
                    set: "one",
                    tasks: 1,
                    yield_each: false,
                },
                "split.single.one.1",
            ),
        ] {
            assert_eq!(c.to_string(), text);
            assert_eq!(Case::parse(text), Some(c), "{text}");
        }
    }

    #[test]
    fn other_ids_do_not_parse() {
        for id in [
            "split.threads.two",
            "split.threads.two.n4",
            "split.threads.two.4.other",
        ] {
            assert_eq!(Case::parse(id), None, "{id}");
        }
    }
}
