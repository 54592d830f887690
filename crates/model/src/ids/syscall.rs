//! `syscall`: common system calls, one case per call, each again with an idle extra thread.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Syscall.as_str();

/// `syscall.getpid`: the raw getpid.
pub const GETPID: &str = "syscall.getpid";
/// `syscall.getppid`: lmbench's null call.
pub const GETPPID: &str = "syscall.getppid";
/// `syscall.lseek`: lseek on a regular file.
pub const LSEEK: &str = "syscall.lseek";
/// `syscall.read1`: a 1-byte read from /dev/zero.
pub const READ1: &str = "syscall.read1";
/// `syscall.clock-gettime-syscall`: clock_gettime as a real system call, past the vDSO.
pub const CLOCK_GETTIME_SYSCALL: &str = "syscall.clock-gettime-syscall";
/// `syscall.enosys`: a system call that does nothing, the kernel's entry and exit.
pub const ENOSYS: &str = "syscall.enosys";

/// Every id `syscall` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// `syscall.<call>`: the call in a one-thread process.
    Call(&'a str),
    /// `syscall.<call>.mt`: the same call with one idle extra thread in the process.
    WithThread(&'a str),
    /// `syscall.<call>.mt_penalty`: derived, what the extra thread adds.
    MtPenalty(&'a str),
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Call(c) => write!(f, "{NAME}.{c}"),
            Id::WithThread(c) => write!(f, "{NAME}.{c}.mt"),
            Id::MtPenalty(c) => write!(f, "{NAME}.{c}.mt_penalty"),
        }
    }
}

impl<'a> Id<'a> {
    /// The id's parts, or `None` for an id `syscall` never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        match super::parts(NAME, id)?.as_slice() {
            [c] => Some(Id::Call(super::name(c)?)),
            [c, "mt"] => Some(Id::WithThread(super::name(c)?)),
            [c, "mt_penalty"] => Some(Id::MtPenalty(super::name(c)?)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for (id, text) in [
            (Id::Call("getpid"), GETPID),
            (Id::Call("getppid"), GETPPID),
            (Id::Call("lseek"), LSEEK),
            (Id::Call("read1"), READ1),
            (Id::Call("clock-gettime-syscall"), CLOCK_GETTIME_SYSCALL),
            (Id::Call("enosys"), ENOSYS),
            (Id::WithThread("read1"), "syscall.read1.mt"),
            (Id::MtPenalty("read1"), "syscall.read1.mt_penalty"),
        ] {
            assert_eq!(id.to_string(), text);
            assert_eq!(Id::parse(text), Some(id), "{text}");
        }
        for id in ["syscall", "syscall.read1.other", "fault.read1"] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
    }
}
