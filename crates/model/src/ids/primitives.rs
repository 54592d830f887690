//! `primitives`: each wake-up and locking primitive, uncontended, in one task; each again
//! with an idle extra thread. The Windows agent writes ids of its own Win32 locks here too.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Primitives.as_str();

/// `primitives.pthread-mutex`: a pthread mutex's lock + unlock.
pub const PTHREAD_MUTEX: &str = "primitives.pthread-mutex";
/// `primitives.posix-sem`: a POSIX semaphore's post + wait.
pub const POSIX_SEM: &str = "primitives.posix-sem";
/// `primitives.sysv-sem`: an SVR5 semaphore's post + wait.
pub const SYSV_SEM: &str = "primitives.sysv-sem";
/// `primitives.win32-mutex`: a Win32 mutex (the Windows agent's).
pub const WIN32_MUTEX: &str = "primitives.win32-mutex";
/// `primitives.win32-semaphore`: a Win32 semaphore (the Windows agent's).
pub const WIN32_SEMAPHORE: &str = "primitives.win32-semaphore";
/// `primitives.critical-section`: a Critical Section's enter + leave (the Windows agent's).
pub const CRITICAL_SECTION: &str = "primitives.critical-section";
/// `primitives.srwlock`: a slim reader/writer lock (the Windows agent's).
pub const SRWLOCK: &str = "primitives.srwlock";

/// The Windows agent's own cases, which oscost on Linux never writes.
pub const WINDOWS_AGENT: [&str; 4] = [WIN32_MUTEX, WIN32_SEMAPHORE, CRITICAL_SECTION, SRWLOCK];

/// Every id `primitives` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// `primitives.<primitive>`: the primitive in a one-thread process.
    Primitive(&'a str),
    /// `primitives.<primitive>.mt`: the same with one idle extra thread in the process.
    WithThread(&'a str),
    /// `primitives.<primitive>.mt_penalty`: derived, what the extra thread adds.
    MtPenalty(&'a str),
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Primitive(c) => write!(f, "{NAME}.{c}"),
            Id::WithThread(c) => write!(f, "{NAME}.{c}.mt"),
            Id::MtPenalty(c) => write!(f, "{NAME}.{c}.mt_penalty"),
        }
    }
}

impl<'a> Id<'a> {
    /// The id's parts, or `None` for an id `primitives` never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        match super::parts(NAME, id)?.as_slice() {
            [c] => Some(Id::Primitive(super::name(c)?)),
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
            (Id::Primitive("pthread-mutex"), PTHREAD_MUTEX),
            (Id::Primitive("posix-sem"), POSIX_SEM),
            (Id::Primitive("sysv-sem"), SYSV_SEM),
            (Id::Primitive("win32-mutex"), WIN32_MUTEX),
            (Id::Primitive("win32-semaphore"), WIN32_SEMAPHORE),
            (Id::Primitive("critical-section"), CRITICAL_SECTION),
            (Id::Primitive("srwlock"), SRWLOCK),
            (Id::WithThread("pipe"), "primitives.pipe.mt"),
            (Id::MtPenalty("pipe"), "primitives.pipe.mt_penalty"),
        ] {
            assert_eq!(id.to_string(), text);
            assert_eq!(Id::parse(text), Some(id), "{text}");
        }
        for id in ["primitives", "primitives.pipe.other", "syscall.pipe"] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
    }
}
