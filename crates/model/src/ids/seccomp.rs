//! `seccomp`: what filters add to a system call, and a supervisor's round trip.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Seccomp.as_str();

/// `seccomp.allow-1.getpid.over_none`: one filter allowing by call number, over no filter.
pub const ALLOW_1_GETPID_OVER_NONE: &str = "seccomp.allow-1.getpid.over_none";
/// `seccomp.args-1.getpid.over_none`: one filter reading an argument, over no filter.
pub const ARGS_1_GETPID_OVER_NONE: &str = "seccomp.args-1.getpid.over_none";
/// `seccomp.profile.getpid.over_none`: a container runtime's default profile, over no filter.
pub const PROFILE_GETPID_OVER_NONE: &str = "seccomp.profile.getpid.over_none";

/// The set of a profile file's cases (`seccomp --profile FILE`): `seccomp.file.<call>`.
pub const FILE_SET: &str = "file";
/// `seccomp.file.getpid.over_none`: a profile file's filter, over no filter.
pub const FILE_GETPID_OVER_NONE: &str = "seccomp.file.getpid.over_none";
/// The experiment's parameter holding the SHA-256 of the profile file it measured: what a
/// prediction under that file looks its price up by.
pub const PROFILE_DIGEST: &str = "profile_digest";
/// The experiment's parameter holding that file's name.
pub const PROFILE_FILE: &str = "profile_file";

/// Every case id `seccomp` writes; sets, calls and places named as the command line
/// spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// `seccomp.<set>.<call>`: the call under a filter set (`none` for the bare call).
    Filtered {
        /// The filter set.
        set: &'a str,
        /// The system call.
        call: &'a str,
    },
    /// `seccomp.notify.<place>`: getpid handed to a supervisor on the same CPU or another.
    Notify(&'a str),
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Filtered { set, call } => write!(f, "{NAME}.{set}.{call}"),
            Id::Notify(place) => write!(f, "{NAME}.notify.{place}"),
        }
    }
}

impl<'a> Id<'a> {
    /// The case id's parts, or `None` for an id `seccomp` never writes as a case.
    pub fn parse(id: &'a str) -> Option<Self> {
        match super::parts(NAME, id)?.as_slice() {
            ["notify", place] => Some(Id::Notify(super::name(place)?)),
            [set, call] => Some(Id::Filtered {
                set: super::name(set)?,
                call: super::name(call)?,
            }),
            _ => None,
        }
    }
}

/// `<case>.over_none`: derived, what the case's filter (or supervisor) adds over no filter.
pub fn over_none(case: &str) -> String {
    format!("{case}.over_none")
}

/// `<case>.per_filter`: derived, each of the stacked filters.
pub fn per_filter(case: &str) -> String {
    format!("{case}.per_filter")
}

/// `<case>.per_added_filter`: derived, each filter stacked after the first.
pub fn per_added_filter(case: &str) -> String {
    format!("{case}.per_added_filter")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for (id, text) in [
            (
                Id::Filtered {
                    set: "args-8",
                    call: "getpid",
                },
                "seccomp.args-8.getpid",
            ),
            (Id::Notify("cross"), "seccomp.notify.cross"),
        ] {
            assert_eq!(id.to_string(), text);
            assert_eq!(Id::parse(text), Some(id), "{text}");
        }
        for id in ["seccomp.none", "seccomp.none.getpid.over_none", "fault.a.b"] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
        for (set, text) in [
            ("allow-1", ALLOW_1_GETPID_OVER_NONE),
            ("args-1", ARGS_1_GETPID_OVER_NONE),
            ("profile", PROFILE_GETPID_OVER_NONE),
            (FILE_SET, FILE_GETPID_OVER_NONE),
        ] {
            let case = Id::Filtered {
                set,
                call: "getpid",
            };
            assert_eq!(over_none(&case.to_string()), text);
        }
        assert_eq!(
            per_filter("seccomp.args-8.read"),
            "seccomp.args-8.read.per_filter"
        );
        assert_eq!(
            per_added_filter("seccomp.args-8.read"),
            "seccomp.args-8.read.per_added_filter"
        );
    }
}
