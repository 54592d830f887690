//! `fs`: a call served by the kernel's file system or by one in user space, and the difference.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Fs.as_str();

/// The side served by the kernel.
pub const TMPFS: &str = "tmpfs";

/// The side served by a program in user space.
pub const FUSE: &str = "fuse";

/// Every id `fs` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// `fs.<side>.<call>`: a call on one side, e.g. `fs.fuse.read64k`.
    Case {
        /// [`TMPFS`] or [`FUSE`].
        side: &'a str,
        /// The call (`getpid`, `open-close`, …).
        call: &'a str,
    },
    /// `fs.diff.<call>`: the call on FUSE less the same on tmpfs.
    Diff {
        /// The call.
        call: &'a str,
    },
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Case { side, call } => write!(f, "{NAME}.{side}.{call}"),
            Id::Diff { call } => write!(f, "{NAME}.diff.{call}"),
        }
    }
}

impl<'a> Id<'a> {
    /// The id's parts, or `None` for an id `fs` never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        match super::parts(NAME, id)?.as_slice() {
            ["diff", call] => Some(Id::Diff {
                call: super::name(call)?,
            }),
            [side, call] => Some(Id::Case {
                side: super::name(side)?,
                call: super::name(call)?,
            }),
            _ => None,
        }
    }
}

/// The id of `call` on `side`.
pub fn case(side: &str, call: &str) -> String {
    Id::Case { side, call }.to_string()
}

/// The id of the difference between the two sides of `call`.
pub fn diff(call: &str) -> String {
    Id::Diff { call }.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for (id, text) in [
            (
                Id::Case {
                    side: FUSE,
                    call: "read64k",
                },
                "fs.fuse.read64k",
            ),
            (Id::Diff { call: "open-close" }, "fs.diff.open-close"),
        ] {
            assert_eq!(id.to_string(), text);
            assert_eq!(Id::parse(text), Some(id), "{text}");
        }
        assert_eq!(case(TMPFS, "getpid"), "fs.tmpfs.getpid");
        assert_eq!(diff("lseek"), "fs.diff.lseek");
    }

    #[test]
    fn other_ids_do_not_parse() {
        for id in ["fs.tmpfs", "fs.tmpfs.a.b", "fsx.tmpfs.getpid", "fs.diff."] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
    }
}
