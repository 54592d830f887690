//! `spawn`: creating a task, by op, by the program it starts and by the memory its parent holds
//! (touched private memory, or a number of one-page shared mappings).

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Spawn.as_str();

/// A creation: `spawn.<op>[.<target>][.p<mib>mib|.maps<n>]`, e.g. `spawn.fork-exec.static.p64mib`
/// or `spawn.fork.maps6000`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case<'a> {
    /// How the task is created (`fork`, `posix-spawn`, `thread`, …).
    pub op: &'a str,
    /// The program started (`static`, `dynamic`), for the ops that start one.
    pub target: Option<&'a str>,
    /// MiB of touched memory the parent holds, for the ops that create a process.
    pub parent_mib: Option<u64>,
    /// One-page shared mappings the parent holds (instead of a parent size).
    pub mappings: Option<u64>,
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
    /// `<case>.per_mapping`: a creation with many mappings less the same with the smallest
    /// parent, per mapping.
    PerMapping(Case<'a>),
}

impl fmt::Display for Case<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{NAME}.{}", self.operation())?;
        if let Some(m) = self.parent_mib {
            write!(f, ".p{m}mib")?;
        }
        if let Some(n) = self.mappings {
            write!(f, ".maps{n}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Case(c) => write!(f, "{c}"),
            Id::Over { big, small_mib } => write!(f, "{}", over(&big.to_string(), *small_mib)),
            Id::PerMapping(c) => write!(f, "{}", per_mapping(&c.to_string())),
        }
    }
}

impl<'a> Id<'a> {
    /// The id's parts, or `None` for an id `spawn` never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        let mut p = super::parts(NAME, id)?;
        let per = p.last() == Some(&"per_mapping");
        if per {
            p.pop();
        }
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
        let mappings = match p.last() {
            Some(last)
                if parent_mib.is_none()
                    && p.len() > 1
                    && super::number::<u64>(last, "maps", "").is_some() =>
            {
                let n = super::number(last, "maps", "");
                p.pop();
                n
            }
            _ => None,
        };
        let case = match p.as_slice() {
            [op] => Case {
                op: super::name(op)?,
                target: None,
                parent_mib,
                mappings,
            },
            [op, target] => Case {
                op: super::name(op)?,
                target: Some(super::name(target)?),
                parent_mib,
                mappings,
            },
            _ => return None,
        };
        Some(match (over, per) {
            (Some(small_mib), false) => Id::Over {
                big: case,
                small_mib,
            },
            (None, false) => Id::Case(case),
            (None, true) if case.mappings.is_some() => Id::PerMapping(case),
            _ => return None,
        })
    }
}

/// `spawn.thread`: a thread created and joined.
pub const THREAD: &str = "spawn.thread";
/// `spawn.posix-spawn.static.p1mib`: posix_spawn of a static program from a 1 MiB parent.
pub const POSIX_SPAWN_STATIC_P1MIB: &str = "spawn.posix-spawn.static.p1mib";
/// `spawn.fork.p1mib`: fork and wait from a 1 MiB parent.
pub const FORK_P1MIB: &str = "spawn.fork.p1mib";

/// The id of a creation.
pub fn case(op: &str, target: Option<&str>, parent_mib: Option<u64>) -> String {
    Case {
        op,
        target,
        parent_mib,
        mappings: None,
    }
    .to_string()
}

/// The id of a creation by a parent holding `mappings` one-page shared mappings.
pub fn with_mappings(op: &str, mappings: u64) -> String {
    Case {
        op,
        target: None,
        parent_mib: None,
        mappings: Some(mappings),
    }
    .to_string()
}

/// The id of the creation `id` (with mappings) less the same with the smallest parent, per
/// mapping.
pub fn per_mapping(id: &str) -> String {
    format!("{id}.per_mapping")
}

/// The id of the creation `big_id` less the same with a parent of `small_mib` MiB.
pub fn over(big_id: &str, small_mib: u64) -> String {
    format!("{big_id}.over_p{small_mib}mib")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_ids_are_built_ids() {
        assert_eq!(case("thread", None, None), THREAD);
        assert_eq!(
            case("posix-spawn", Some("static"), Some(1)),
            POSIX_SPAWN_STATIC_P1MIB
        );
        assert_eq!(case("fork", None, Some(1)), FORK_P1MIB);
    }

    #[test]
    fn ids_round_trip() {
        let big = Case {
            op: "fork",
            target: None,
            parent_mib: Some(1025),
            mappings: None,
        };
        let maps = Case {
            op: "fork",
            target: None,
            parent_mib: None,
            mappings: Some(6000),
        };
        for (id, text) in [
            (Id::Case(big), "spawn.fork.p1025mib"),
            (
                Id::Case(Case {
                    op: "posix-spawn",
                    target: Some("static"),
                    parent_mib: Some(1),
                    mappings: None,
                }),
                "spawn.posix-spawn.static.p1mib",
            ),
            (
                Id::Case(Case {
                    op: "thread",
                    target: None,
                    parent_mib: None,
                    mappings: None,
                }),
                "spawn.thread",
            ),
            (
                Id::Case(Case {
                    op: "fork-exec",
                    target: Some("dynamic"),
                    parent_mib: None,
                    mappings: None,
                }),
                "spawn.fork-exec.dynamic",
            ),
            (
                Id::Over { big, small_mib: 1 },
                "spawn.fork.p1025mib.over_p1mib",
            ),
            (Id::Case(maps), "spawn.fork.maps6000"),
            (Id::PerMapping(maps), "spawn.fork.maps6000.per_mapping"),
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
        assert_eq!(with_mappings("fork", 6000), "spawn.fork.maps6000");
        assert_eq!(
            per_mapping("spawn.fork.maps6000"),
            "spawn.fork.maps6000.per_mapping"
        );
    }

    #[test]
    fn other_ids_do_not_parse() {
        for id in [
            "spawn",
            "spawn.a.b.c",
            "spawn.fork.p1mib.over_x",
            "spawn.fork.p1mib.per_mapping",
            "spawn.fork.maps6000.over_p1mib.per_mapping",
            "ring.fork",
        ] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
    }
}
