//! `uring`: io_uring's cost per operation, by batch, beside the system call it replaces.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Uring.as_str();

/// `uring.nop.b1`: one no-op per `io_uring_enter`, the datasheet's io_uring figure.
pub const NOP_B1: &str = "uring.nop.b1";
/// `uring.nop.sqpoll`: no-ops through a kernel thread polling the ring.
pub const SQPOLL: &str = "uring.nop.sqpoll";
/// `uring.*`: every case, when io_uring is not there at all.
pub const EVERY: &str = "uring.*";

/// Every case id `uring` writes; operations and system calls named as the command line
/// spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// `uring.<op>.b<batch>`: the op through a plain ring, `batch` per `io_uring_enter`.
    Ring(&'a str, usize),
    /// `uring.<op>.fixed.b<batch>`: the same through a registered file and buffer.
    Fixed(&'a str, usize),
    /// `uring.<syscall>`: the plain system call the op replaces (`syscall-read1`).
    Syscall(&'a str),
    /// `uring.nop.sqpoll`: see [`SQPOLL`].
    Sqpoll,
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Ring(op, b) => write!(f, "{NAME}.{op}.b{b}"),
            Id::Fixed(op, b) => write!(f, "{NAME}.{op}.fixed.b{b}"),
            Id::Syscall(s) => write!(f, "{NAME}.{s}"),
            Id::Sqpoll => f.write_str(SQPOLL),
        }
    }
}

impl<'a> Id<'a> {
    /// The case id's parts, or `None` for an id `uring` never writes as a case.
    pub fn parse(id: &'a str) -> Option<Self> {
        match super::parts(NAME, id)?.as_slice() {
            ["nop", "sqpoll"] => Some(Id::Sqpoll),
            [s] => Some(Id::Syscall(super::name(s)?)),
            [op, b] => Some(Id::Ring(super::name(op)?, super::number(b, "b", "")?)),
            [op, "fixed", b] => Some(Id::Fixed(super::name(op)?, super::number(b, "b", "")?)),
            _ => None,
        }
    }
}

/// The part of a case id after `uring.`, how a figure labels the case (`syscall-read1`).
pub fn label(id: &str) -> &str {
    id.trim_start_matches("uring.")
}

/// `<case>.minus_unregistered`: derived, what registering the file and buffer saves.
pub fn minus_unregistered(case: &str) -> String {
    format!("{case}.minus_unregistered")
}

/// `<case>.minus_syscall`: derived, what the ring's read costs beyond the system call.
pub fn minus_syscall(case: &str) -> String {
    format!("{case}.minus_syscall")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for (id, text) in [
            (Id::Ring("nop", 1), NOP_B1),
            (Id::Fixed("read1", 16), "uring.read1.fixed.b16"),
            (Id::Syscall("syscall-read1"), "uring.syscall-read1"),
            (Id::Sqpoll, SQPOLL),
        ] {
            assert_eq!(id.to_string(), text);
            assert_eq!(Id::parse(text), Some(id), "{text}");
        }
        for id in [
            "uring.nop.b01",
            "uring.nop.fixed",
            "uring.a.b.c.d",
            "poll.nop.b1",
        ] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
        assert_eq!(label("uring.syscall-read1"), "syscall-read1");
        assert_eq!(minus_syscall(NOP_B1), "uring.nop.b1.minus_syscall");
        assert_eq!(
            minus_unregistered(NOP_B1),
            "uring.nop.b1.minus_unregistered"
        );
    }
}
