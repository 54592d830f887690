//! The wake-up primitives the context-switch experiments pass tokens through, and the shared
//! memory they spin or count on.
//!
//! A [`Link`] is one direction of wake-ups between two tasks: every [`Link::post`] leaves one
//! token, every [`Link::wait`] takes one, blocking until one is there. Links are created before
//! tasks are spawned and work unchanged between threads and between forked processes: their
//! file descriptors are inherited across `fork`, and any state both sides touch lives in a
//! `MAP_SHARED | MAP_ANONYMOUS` mapping that the child shares with its parent.
//!
//! `post` and `wait` are the code the switch benchmarks time, so on their success path they
//! allocate nothing and take no lock but the primitive's own: a child forked from a
//! multithreaded parent may call them (only the error path formats a message).
//!
//! This is the only place where IPC uses `unsafe`; everything above it calls these safe
//! functions.

mod link;
mod mutex;
mod raw;
mod signal;
mod sysv;
#[cfg(test)]
mod tests;

pub use crate::pmqos::IdlePoll;
pub use crate::shm::SharedWords;
pub use link::{Link, WithOps};
pub use mutex::PthreadMutex;
pub(crate) use raw::{check_fd, futex_wait_for, read_one, wake_all, write_one};
pub use raw::{futex_wait, futex_wake, sched_yield};
pub use signal::{
    block_link_signal, block_link_signal_scoped, drain_link_signal, link_signal_number,
    LinkSignalBlock,
};
pub use sysv::{on_sysv_sem_created, remove_sysv_sem, SysvSemHook};

/// How one task wakes another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Via {
    /// 1-byte write/read on a pipe
    Pipe,
    /// 1-byte write/read on an AF_UNIX stream socketpair
    Socketpair,
    /// write/read of 1 on an EFD_SEMAPHORE eventfd
    Eventfd,
    /// shared counter: fetch_add + FUTEX_WAKE / CAS-decrement or FUTEX_WAIT
    Futex,
    /// process-shared POSIX semaphore: sem_post / sem_wait
    PosixSem,
    /// SysV semaphore: semop +1 / -1
    SysvSem,
    /// process-shared pthread mutex + condvar + count
    Condvar,
    /// POSIX message queue: mq_send / mq_receive of 1 byte
    Mqueue,
    /// realtime signal: tkill to the waiter / sigwaitinfo with it blocked
    Signal,
    /// sched_yield: no link, each task yields the CPU to the other
    Yield,
}

impl Via {
    /// Every kind that is a [`Link`] (all but [`Via::Yield`]), in display order.
    pub const LINKS: [Via; 9] = [
        Via::Pipe,
        Via::Socketpair,
        Via::Eventfd,
        Via::Futex,
        Via::PosixSem,
        Via::SysvSem,
        Via::Condvar,
        Via::Mqueue,
        Via::Signal,
    ];

    /// Every kind, in display order.
    pub const ALL: [Via; 10] = [
        Via::Pipe,
        Via::Socketpair,
        Via::Eventfd,
        Via::Futex,
        Via::PosixSem,
        Via::SysvSem,
        Via::Condvar,
        Via::Mqueue,
        Via::Signal,
        Via::Yield,
    ];

    /// The kind called `name` ([`Via::name`]).
    pub fn from_name(name: &str) -> Option<Via> {
        Via::ALL.into_iter().find(|v| v.name() == name)
    }

    /// A few words for a list of choices.
    pub fn summary(self) -> &'static str {
        match self {
            Via::Pipe => "1-byte write/read on a pipe",
            Via::Socketpair => "1-byte write/read on an AF_UNIX stream socketpair",
            Via::Eventfd => "write/read of 1 on an EFD_SEMAPHORE eventfd",
            Via::Futex => "shared counter: fetch_add + FUTEX_WAKE / CAS-decrement or FUTEX_WAIT",
            Via::PosixSem => "process-shared POSIX semaphore: sem_post / sem_wait",
            Via::SysvSem => "SysV semaphore: semop +1 / -1",
            Via::Condvar => "process-shared pthread mutex + condvar + count",
            Via::Mqueue => "POSIX message queue: mq_send / mq_receive of 1 byte",
            Via::Signal => "realtime signal: tkill to the waiter / sigwaitinfo with it blocked",
            Via::Yield => "sched_yield: no link, each task yields the CPU to the other",
        }
    }

    /// Kebab-case name, as on the command line, in case ids and in the serde form.
    pub fn name(self) -> &'static str {
        match self {
            Via::Pipe => "pipe",
            Via::Socketpair => "socketpair",
            Via::Eventfd => "eventfd",
            Via::Futex => "futex",
            Via::PosixSem => "posix-sem",
            Via::SysvSem => "sysv-sem",
            Via::Condvar => "condvar",
            Via::Mqueue => "mqueue",
            Via::Signal => "signal",
            Via::Yield => "yield",
        }
    }

    /// One line saying what one post and one wait do.
    pub fn describe(self) -> &'static str {
        match self {
            Via::Pipe => "1-byte write/read on a pipe",
            Via::Socketpair => "1-byte write/read on an AF_UNIX SOCK_STREAM socketpair",
            Via::Eventfd => "8-byte write of 1 / read on an EFD_SEMAPHORE eventfd",
            Via::Futex => {
                "shared u32 counter: fetch_add + FUTEX_WAKE(1) always / CAS-decrement, \
                 FUTEX_WAIT while 0"
            }
            Via::PosixSem => {
                "process-shared POSIX semaphore (sem_init pshared=1): sem_post / sem_wait"
            }
            Via::SysvSem => "SysV semaphore (semget IPC_PRIVATE): semop +1 / semop -1",
            Via::Condvar => {
                "robust process-shared pthread mutex + condvar + count: lock, count+1, signal, \
                 unlock / lock, cond_wait while 0, count-1, unlock"
            }
            Via::Mqueue => {
                "POSIX message queue (maxmsg 8, msgsize 1): mq_send / mq_receive of 1 byte"
            }
            Via::Signal => {
                "realtime signal SIGRTMIN+2: tkill to the waiting thread / sigwaitinfo with the \
                 signal blocked"
            }
            Via::Yield => "sched_yield: no link, each task yields the CPU to the other",
        }
    }

    /// Whether [`Link::new`] can build this kind (everything but [`Via::Yield`]).
    pub fn is_link(self) -> bool {
        self != Via::Yield
    }
}

impl std::fmt::Display for Via {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
