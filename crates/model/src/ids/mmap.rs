//! `mmap`: mapping, unmapping, reading and writing memory, by size in pages.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Mmap.as_str();

/// A point: `mmap.<op>.p<pages>`, e.g. `mmap.munmap-touched.p64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case<'a> {
    /// The operation, as the command line spells it.
    pub op: &'a str,
    /// Its size in pages.
    pub pages: u64,
}

impl fmt::Display for Case<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{NAME}.{}.p{}", self.op, self.pages)
    }
}

impl<'a> Case<'a> {
    /// The id's parts, or `None` for an id `mmap` never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        match super::parts(NAME, id)?.as_slice() {
            [op, pages] => Some(Case {
                op: super::name(op)?,
                pages: super::number(pages, "p", "")?,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        let c = Case {
            op: "munmap-touched",
            pages: 64,
        };
        assert_eq!(c.to_string(), "mmap.munmap-touched.p64");
        assert_eq!(Case::parse("mmap.munmap-touched.p64"), Some(c));
        for id in [
            "mmap.mmap",
            "mmap.mmap.64",
            "mmap.mmap.p064",
            "fault.mmap.p1",
        ] {
            assert_eq!(Case::parse(id), None, "{id}");
        }
    }
}
