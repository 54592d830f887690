//! `fault`: a page fault's cost, by kind, in the scratch directory and again on tmpfs.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Fault.as_str();

/// The kind `thp` (a case's `kind` parameter): a 2 MiB huge page, drawn per 4 KiB it maps.
pub const THP: &str = "thp";

/// `fault.anon-write`: the first write to an anonymous page.
pub const ANON_WRITE: &str = "fault.anon-write";
/// `fault.anon-read`: the first read of an anonymous page (the shared zero page).
pub const ANON_READ: &str = "fault.anon-read";
/// `fault.cow`: the first write to a page shared copy-on-write with a parent.
pub const COW: &str = "fault.cow";

/// Every id `fault` writes; kinds are named as the command line spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// `fault.<kind>`: the kind's fault in the scratch directory (or anonymous memory).
    Kind(&'a str),
    /// `fault.<kind>.tmpfs`: the same fault on tmpfs.
    Tmpfs(&'a str),
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Kind(k) => write!(f, "{NAME}.{k}"),
            Id::Tmpfs(k) => write!(f, "{NAME}.{k}.tmpfs"),
        }
    }
}

impl<'a> Id<'a> {
    /// The id's parts, or `None` for an id `fault` never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        match super::parts(NAME, id)?.as_slice() {
            [k] => Some(Id::Kind(super::name(k)?)),
            [k, "tmpfs"] => Some(Id::Tmpfs(super::name(k)?)),
            _ => None,
        }
    }
}

/// `<case>.per_fault`: derived, a file fault's time per fault rather than per page.
pub fn per_fault(case: &str) -> String {
    format!("{case}.per_fault")
}

/// `<case>.per_4k`: derived, a huge-page fault's time per 4 KiB it maps.
pub fn per_4k(case: &str) -> String {
    format!("{case}.per_4k")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for (id, text) in [
            (Id::Kind("anon-write"), ANON_WRITE),
            (Id::Kind("anon-read"), ANON_READ),
            (Id::Kind("cow"), COW),
            (Id::Kind(THP), "fault.thp"),
            (Id::Tmpfs("file-read"), "fault.file-read.tmpfs"),
        ] {
            assert_eq!(id.to_string(), text);
            assert_eq!(Id::parse(text), Some(id), "{text}");
        }
        for id in ["fault", "fault.cow.other", "mmap.cow"] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
        assert_eq!(per_4k("fault.thp"), "fault.thp.per_4k");
        assert_eq!(per_fault("fault.file-read"), "fault.file-read.per_fault");
    }
}
