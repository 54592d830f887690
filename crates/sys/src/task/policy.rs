//! The calling thread's scheduling class (normal or batch).

use crate::last_error;
use std::io;

/// The scheduling class of the calling thread: the normal one, or SCHED_BATCH (no wakeup
/// preemption: a woken task waits for the running one's slice instead of preempting it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// SCHED_OTHER.
    Other,
    /// SCHED_BATCH.
    Batch,
}

/// The calling thread's scheduling policy, when it is one of [`Policy`].
pub fn sched_policy() -> io::Result<Option<Policy>> {
    // SAFETY: 0 is the calling thread; no pointers involved.
    let r = unsafe { libc::sched_getscheduler(0) };
    match r {
        libc::SCHED_OTHER => Ok(Some(Policy::Other)),
        libc::SCHED_BATCH => Ok(Some(Policy::Batch)),
        -1 => Err(last_error("sched_getscheduler")),
        _ => Ok(None),
    }
}

/// Sets the calling thread's policy (priority 0, as both classes require); threads it creates
/// and processes it forks afterwards inherit it. Needs no privilege.
pub fn set_sched_policy(p: Policy) -> io::Result<()> {
    let policy = match p {
        Policy::Other => libc::SCHED_OTHER,
        Policy::Batch => libc::SCHED_BATCH,
    };
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: param is a valid sched_param for the call's duration; 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } == 0 {
        Ok(())
    } else {
        Err(last_error("sched_setscheduler"))
    }
}
