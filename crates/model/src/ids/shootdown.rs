//! `shootdown`: invalidating a page while other threads of the process run on other CPUs.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Shootdown.as_str();

/// `shootdown.madvise.others1.spin`: `madvise(MADV_DONTNEED)` with one other CPU spinning in
/// the process, the datasheet's shootdown.
pub const MADVISE_ONE_SPINNING: &str = "shootdown.madvise.others1.spin";

/// A point: `shootdown.<op>.others0` with no other thread, or
/// `shootdown.<op>.others<N>.<mode>` with N other CPUs each running a thread that spins or
/// sleeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case<'a> {
    /// The operation, as the command line spells it (`madvise`, `munmap`, `mprotect`).
    pub op: &'a str,
    /// The other CPUs and what their threads do, `None` for no other thread.
    pub others: Option<(usize, &'a str)>,
}

impl fmt::Display for Case<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.others {
            None => write!(f, "{NAME}.{}.others0", self.op),
            Some((n, mode)) => write!(f, "{NAME}.{}.others{n}.{mode}", self.op),
        }
    }
}

impl<'a> Case<'a> {
    /// The id's parts, or `None` for an id `shootdown` never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        match super::parts(NAME, id)?.as_slice() {
            [op, "others0"] => Some(Case {
                op: super::name(op)?,
                others: None,
            }),
            [op, n, mode] => {
                let n = super::number(n, "others", "")?;
                (n > 0).then_some(())?;
                Some(Case {
                    op: super::name(op)?,
                    others: Some((n, super::name(mode)?)),
                })
            }
            _ => None,
        }
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
                    op: "madvise",
                    others: Some((1, "spin")),
                },
                MADVISE_ONE_SPINNING,
            ),
            (
                Case {
                    op: "munmap",
                    others: None,
                },
                "shootdown.munmap.others0",
            ),
        ] {
            assert_eq!(c.to_string(), text);
            assert_eq!(Case::parse(text), Some(c), "{text}");
        }
        for id in [
            "shootdown.madvise",
            "shootdown.madvise.others0.spin",
            "shootdown.madvise.others1",
        ] {
            assert_eq!(Case::parse(id), None, "{id}");
        }
    }
}
