//! `lockring`: a ring of locks, and its Windows counterpart, a ring of Critical Sections, whose
//! ids differ in the lock's name alone.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Lockring.as_str();

/// The lock of oscost's own ring: a pthread mutex.
pub const MUTEX: &str = "mutex";

/// The lock of the Windows agent's ring: a Critical Section.
pub const CRITICAL_SECTION: &str = "cs";

/// Every id `lockring` (or the Windows agent's ring) writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// `lockring.<lock>.n<tasks>.k<tokens>`: a ring of `tasks` threads and `tokens` free locks.
    Case {
        /// The lock.
        lock: &'a str,
        /// Threads in the ring.
        tasks: usize,
        /// Locks free at a time.
        tokens: usize,
    },
    /// `lockring.<lock>.n<tasks>.k<tokens>.switch_cost`: a hand-over less the lock's own cost.
    SwitchCost {
        /// The lock.
        lock: &'a str,
        /// Threads in the ring.
        tasks: usize,
        /// Locks free at a time.
        tokens: usize,
    },
    /// `lockring.<lock>.own`: taking and releasing the lock in one thread.
    Own {
        /// The lock.
        lock: &'a str,
    },
    /// `lockring.pipe.n<tasks>`: the token passed through pipes instead, as the reference
    /// programs and the Windows agent measure it (the study's cspipe2a).
    Pipe {
        /// Threads passing the token.
        tasks: usize,
    },
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Case {
                lock,
                tasks,
                tokens,
            } => write!(f, "{NAME}.{lock}.n{tasks}.k{tokens}"),
            Id::SwitchCost {
                lock,
                tasks,
                tokens,
            } => write!(f, "{NAME}.{lock}.n{tasks}.k{tokens}.switch_cost"),
            Id::Own { lock } => write!(f, "{NAME}.{lock}.own"),
            Id::Pipe { tasks } => write!(f, "{NAME}.pipe.n{tasks}"),
        }
    }
}

impl<'a> Id<'a> {
    /// The id's parts, or `None` for an id the ring never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        let ring = |lock: &'a str, n: &str, k: &str| {
            Some((
                super::name(lock)?,
                super::number(n, "n", "")?,
                super::number(k, "k", "")?,
            ))
        };
        match super::parts(NAME, id)?.as_slice() {
            ["pipe", n] => Some(Id::Pipe {
                tasks: super::number(n, "n", "")?,
            }),
            [lock, "own"] => Some(Id::Own {
                lock: super::name(lock)?,
            }),
            [lock, n, k] => {
                let (lock, tasks, tokens) = ring(lock, n, k)?;
                Some(Id::Case {
                    lock,
                    tasks,
                    tokens,
                })
            }
            [lock, n, k, "switch_cost"] => {
                let (lock, tasks, tokens) = ring(lock, n, k)?;
                Some(Id::SwitchCost {
                    lock,
                    tasks,
                    tokens,
                })
            }
            _ => None,
        }
    }

    /// The lock the id names; none for the pipe.
    pub fn lock(&self) -> Option<&'a str> {
        match *self {
            Id::Case { lock, .. } | Id::SwitchCost { lock, .. } | Id::Own { lock } => Some(lock),
            Id::Pipe { .. } => None,
        }
    }

    /// The same id with another lock; the pipe's unchanged.
    pub fn with_lock(self, other: &'a str) -> Self {
        match self {
            Id::Case { tasks, tokens, .. } => Id::Case {
                lock: other,
                tasks,
                tokens,
            },
            Id::SwitchCost { tasks, tokens, .. } => Id::SwitchCost {
                lock: other,
                tasks,
                tokens,
            },
            Id::Own { .. } => Id::Own { lock: other },
            Id::Pipe { .. } => self,
        }
    }
}

/// The id of the figure derived from the ring `case_id`: its switch cost.
pub fn switch_cost(case_id: &str) -> String {
    format!("{case_id}.switch_cost")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for (id, text) in [
            (
                Id::Case {
                    lock: MUTEX,
                    tasks: 8,
                    tokens: 1,
                },
                "lockring.mutex.n8.k1",
            ),
            (
                Id::SwitchCost {
                    lock: CRITICAL_SECTION,
                    tasks: 2,
                    tokens: 1,
                },
                "lockring.cs.n2.k1.switch_cost",
            ),
            (Id::Own { lock: MUTEX }, "lockring.mutex.own"),
            (Id::Pipe { tasks: 2 }, "lockring.pipe.n2"),
        ] {
            assert_eq!(id.to_string(), text);
            assert_eq!(Id::parse(text), Some(id), "{text}");
        }
        assert_eq!(
            switch_cost("lockring.mutex.n2.k1"),
            "lockring.mutex.n2.k1.switch_cost"
        );
        let own = Id::parse("lockring.cs.own").unwrap();
        assert_eq!(own.lock(), Some(CRITICAL_SECTION));
        assert_eq!(own.with_lock(MUTEX).to_string(), "lockring.mutex.own");
    }

    #[test]
    fn other_ids_do_not_parse() {
        for id in [
            "lockring.pipe.two",
            "lockring.mutex.n2.k1.other",
            "ring.mutex.own",
        ] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
    }
}
