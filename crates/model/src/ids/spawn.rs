//! `spawn`: creating a task, by op, by the program it starts and by the memory its parent holds.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = "spawn";

/// A creation: `spawn.<op>[.<target>][.p<mib>mib]`, e.g. `spawn.fork-exec.static.p64mib`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case<'a> {
    /// How the task is created (`fork`, `posix-spawn`, `thread`, …).
    pub op: &'a str,
    /// The program started (`static`, `dynamic`), for the ops that start one.
    pub target: Option<&'a str>,
    /// MiB of touched memory the parent holds, for the ops that create a process.
    pub parent_mib: Option<u64>,
}

impl Case<'_> {
    /// The creation without the parent's size, as tables and legends name it: `fork-exec.static`.
    pub fn operation(&self) -> String {
        match self.target {
            Some(t) => format!("{}.{t}", self.op),
            None => self.op.to_owned(),
        }
    }
}

/// Every id `spawn` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// A creation.
    Case(Case<'a>),
    /// `<case>.over_p<mib>mib`: a creation with a big parent less the same with a small one.
    Over {
        /// The creation with the big parent.
        big: Case<'a>,
        /// MiB the small parent holds.
        small_mib: u64,
    },
}

impl fmt::Display for Case<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{NAME}.{}", self.operation())?;
        if let Some(m) = self.parent_mib {
            write!(f, ".p{m}mib")?;
        }
        Ok(())
    }
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Case(c) => write!(f, "{c}"),
            Id::Over { big, small_mib } => write!(f, "{}", over(&big.to_string(), *small_mib)),
        }
    }
}

impl<'a> Id<'a> {
    /// The id's parts, or `None` for an id `spawn` never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        let mut p = super::parts(NAME, id)?;
        let over = match p.last() {
            Some(last) if last.starts_with("over_") => {
                let m = super::number(last, "over_p", "mib")?;
                p.pop();
                Some(m)
            }
            _ => None,
        };
        let parent_mib = match p.last() {
            Some(last) if p.len() > 1 && super::number::<u64>(last, "p", "mib").is_some() => {
                let m = super::number(last, "p", "mib");
                p.pop();
                m
            }
            _ => None,
        };
        let case = match p.as_slice() {
            [op] => Case {
                op: super::name(op)?,
                target: None,
                parent_mib,
            },
            [op, target] => Case {
                op: super::name(op)?,
                target: Some(super::name(target)?),
                parent_mib,
            },
            _ => return None,
        };
        Some(match over {
            Some(small_mib) => Id::Over {
                big: case,
                small_mib,
            },
            None => Id::Case(case),
        })
    }
}

/// The id of a creation.
pub fn case(op: &str, target: Option<&str>, parent_mib: Option<u64>) -> String {
    Case {
        op,
        target,
        parent_mib,
    }
    .to_string()
}

/// The id of the creation `big_id` less the same with a parent of `small_mib` MiB.
pub fn over(big_id: &str, small_mib: u64) -> String {
    format!("{big_id}.over_p{small_mib}mib")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        let big = Case {
            op: "fork",
            target: None,
            parent_mib: Some(1025),
        };
        for (id, text) in [
            (Id::Case(big), "spawn.fork.p1025mib"),
            (
                Id::Case(Case {
                    op: "posix-spawn",
                    target: Some("static"),
                    parent_mib: Some(1),
                }),
                "spawn.posix-spawn.static.p1mib",
            ),
            (
                Id::Case(Case {
                    op: "thread",
                    target: None,
                    parent_mib: None,
                }),
                "spawn.thread",
            ),
            (
                Id::Case(Case {
                    op: "fork-exec",
                    target: Some("dynamic"),
                    parent_mib: None,
                }),
                "spawn.fork-exec.dynamic",
            ),
            (
                Id::Over { big, small_mib: 1 },
                "spawn.fork.p1025mib.over_p1mib",
            ),
        ] {
            assert_eq!(id.to_string(), text);
            assert_eq!(Id::parse(text), Some(id), "{text}");
        }
        assert_eq!(case("fork", None, Some(64)), "spawn.fork.p64mib");
        assert_eq!(
            case("posix-spawn", Some("static"), Some(1)),
            "spawn.posix-spawn.static.p1mib"
        );
        assert_eq!(big.operation(), "fork");
    }

    #[test]
    fn other_ids_do_not_parse() {
        for id in [
            "spawn",
            "spawn.a.b.c",
            "spawn.fork.p1mib.over_x",
            "ring.fork",
        ] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
    }
}
