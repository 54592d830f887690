//! Tying a process's life to its parent's.

use crate::last_error;
use std::io;

/// Asks the kernel to SIGKILL this process when `parent`, the process that started it, dies,
/// so a `kill -9` of the parent never leaves it running on its own. Fails if `parent` is
/// already gone (this process was reparented before the signal was armed).
///
/// The signal comes when the thread that started this process exits; a parent that starts
/// children from its main thread, as oscost's coordinator does, is covered for its whole life.
pub fn die_with_parent(parent: u32) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes plain integers.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    if r != 0 {
        return Err(last_error("prctl(PR_SET_PDEATHSIG)"));
    }
    // Checked after arming: a parent that dies from here on sends the signal.
    if std::os::unix::process::parent_id() != parent {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            format!("the process that started this one (pid {parent}) has ended"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_parent_is_an_error() {
        let parent = std::os::unix::process::parent_id();
        die_with_parent(parent).unwrap();
        let e = die_with_parent(parent.wrapping_add(1)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotConnected);
        // SAFETY: plain integers; signal 0 disarms it again for the rest of the tests.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, 0 as libc::c_ulong, 0, 0, 0) };
    }
}
