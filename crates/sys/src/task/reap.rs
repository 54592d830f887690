//! Ending and reaping: this process as the reaper of its orphans, and signals to a worker.

use crate::last_error;
use std::io;
use std::time::{Duration, Instant};

/// Makes this process the reaper of its orphaned descendants: a worker whose measuring
/// process was killed is reparented here instead of to init, so [`reap_orphans`] can wait
/// for it and nothing is left behind.
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) takes plain integers.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } == 0 {
        Ok(())
    } else {
        Err(last_error("prctl(PR_SET_CHILD_SUBREAPER)"))
    }
}

/// Reaps every child of this process that has ended, waiting up to `patience` for the rest
/// (killed workers end within moments of their parent's death). Returns how many are left.
/// Call it only when no child is expected to be running.
pub fn reap_orphans(patience: Duration) -> usize {
    let deadline = Instant::now() + patience;
    loop {
        let mut st = 0;
        // SAFETY: st is writable; -1 waits for any child of this process.
        let r = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
        if r > 0 {
            continue;
        }
        if r < 0 {
            return 0; // ECHILD: none left
        }
        if Instant::now() >= deadline {
            return 1;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Sends signal `sig` to process `pid` (tests use it to kill one worker of a running team).
pub fn send_signal(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: plain integers; kill has no memory effects on this process.
    if unsafe { libc::kill(pid, sig) } == 0 {
        Ok(())
    } else {
        Err(last_error("kill"))
    }
}
