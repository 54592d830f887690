//! Calls a forked child may make before it execs or exits: no allocation, no lock, only the
//! system calls themselves, shared by the experiments whose children check their own state.

use std::ffi::CStr;

/// A fork-like `clone` with `flags` besides `SIGCHLD` (namespaces to make, or none): no new
/// stack, nothing shared. Returns 0 in the child, the child's pid in the parent, -1 on
/// failure (errno set).
///
/// # Safety
/// The child must make only async-signal-safe calls and end with `_exit` (the parent may
/// have other threads, whose locks the child inherits held).
pub unsafe fn fork_like(flags: libc::c_long) -> libc::c_long {
    // SAFETY: the arguments are plain values (no stack, no tid pointers, no tls); the caller
    // keeps the child to raw calls.
    unsafe {
        libc::syscall(
            libc::SYS_clone,
            flags | libc::SIGCHLD as libc::c_long,
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::c_int>(),
            std::ptr::null_mut::<libc::c_int>(),
            0 as libc::c_ulong,
        )
    }
}

/// Reads `path` into `buf` with raw `open`, `read` and `close`: as much as fits, `None` when
/// it cannot be opened. Safe in a forked child.
pub fn read_file(path: &CStr, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: path is NUL-terminated; open only reads it.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut len = 0usize;
    while len < buf.len() {
        let rest = &mut buf[len..];
        // SAFETY: rest is writable for rest.len() bytes.
        let r = unsafe { libc::read(fd, rest.as_mut_ptr().cast(), rest.len()) };
        if r <= 0 {
            break;
        }
        len += r as usize;
    }
    // SAFETY: fd was opened above and is closed once.
    unsafe { libc::close(fd) };
    Some(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_whole_or_as_far_as_it_fits() {
        let mut big = [0u8; 4096];
        let n = read_file(c"/proc/self/status", &mut big).unwrap();
        assert!(std::str::from_utf8(&big[..n]).unwrap().starts_with("Name:"));
        let mut small = [0u8; 4];
        assert_eq!(read_file(c"/proc/self/status", &mut small), Some(4));
        assert_eq!(read_file(c"/nonexistent", &mut small), None);
    }

    #[test]
    fn a_fork_like_child_runs_and_is_waited_for() {
        // SAFETY: the child only _exits.
        let pid = unsafe { fork_like(0) };
        if pid == 0 {
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(7) }
        }
        assert!(pid > 0);
        let mut status = 0;
        // SAFETY: status is a writable int; pid is our child.
        let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
        assert_eq!(r, pid as libc::pid_t);
        assert_eq!(libc::WEXITSTATUS(status), 7);
    }
}
