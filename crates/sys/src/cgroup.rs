//! Cgroups: a child started inside one (by `clone3(CLONE_INTO_CGROUP)`, or forked and writing
//! itself into `cgroup.procs`), and a pipe partner process that lives in one.
//!
//! Every child is a fork-like clone of a single-threaded process that makes raw calls only and
//! `_exit`s: it never allocates or locks.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// `CLONE_INTO_CGROUP` (Linux 5.7): the child starts in the cgroup `clone_args.cgroup` names.
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// `struct clone_args` up to its `cgroup` member (`CLONE_ARGS_SIZE_VER2`).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// Exit code of a checking child that did not find itself in the cgroup.
const NOT_IN_CGROUP: i32 = 200;

/// How a child gets into the cgroup.
#[derive(Debug, Clone, Copy)]
pub enum Into<'a> {
    /// It does not: a plain fork-like child.
    Stays,
    /// It writes `0` (itself) into this open `cgroup.procs` first.
    WritesProcs(BorrowedFd<'a>),
    /// `clone3(CLONE_INTO_CGROUP)` with this open cgroup directory.
    Clone3(BorrowedFd<'a>),
}

/// What became of a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It got into the cgroup (and, when checking, found itself there) and ended.
    Done,
    /// The write or the clone was refused with this errno.
    Refused(i32),
    /// A checking child's `/proc/self/cgroup` did not name the cgroup.
    NotThere,
    /// It ended another way: the raw wait status.
    Other(i32),
}

/// Whether the calling process's `/proc/self/cgroup` has a line ending in `/<name>`. Raw calls
/// and a stack buffer only.
fn in_cgroup(name: &[u8]) -> bool {
    let mut buf = [0u8; 4096];
    let Some(len) = crate::raw::read_file(c"/proc/self/cgroup", &mut buf) else {
        return false;
    };
    buf[..len].split(|&b| b == b'\n').any(|line| {
        line.len() > name.len() && line.ends_with(name) && line[line.len() - name.len() - 1] == b'/'
    })
}

/// Writes `0` (the caller) into an open `cgroup.procs`; the errno when refused.
fn write_self(procs: i32) -> Result<(), i32> {
    // SAFETY: the buffer is one readable byte.
    let r = unsafe { libc::write(procs, b"0".as_ptr().cast(), 1) };
    if r == 1 {
        Ok(())
    } else {
        Err(io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO))
    }
}

fn wait(pid: libc::pid_t) -> io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: status is writable; pid is the caller's child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
        if r == pid {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(io::Error::new(e.kind(), format!("waitpid: {e}")));
        }
    }
}

fn fork_like() -> libc::c_long {
    // SAFETY: the child runs only raw calls and _exit in its callers.
    unsafe { crate::raw::fork_like(0) }
}

/// Makes one child that gets into a cgroup `into` says and ends at once, and waits for it;
/// with `check`, the child first looks for the cgroup's directory name in its
/// `/proc/self/cgroup`. Call it from a single-threaded process.
pub fn run_child(into: Into<'_>, check: Option<&[u8]>) -> io::Result<Outcome> {
    let pid = match into {
        Into::Clone3(dir) => {
            let mut args = CloneArgs {
                flags: CLONE_INTO_CGROUP,
                exit_signal: libc::SIGCHLD as u64,
                cgroup: dir.as_raw_fd() as u64,
                ..CloneArgs::default()
            };
            // SAFETY: args is a valid clone_args of the size given; no new stack, so the
            // child returns here on a copy of this stack, like fork.
            unsafe {
                libc::syscall(
                    libc::SYS_clone3,
                    &mut args as *mut CloneArgs,
                    std::mem::size_of::<CloneArgs>(),
                )
            }
        }
        _ => fork_like(),
    };
    if pid < 0 {
        let e = io::Error::last_os_error();
        return match (into, e.raw_os_error()) {
            (Into::Clone3(_), Some(errno)) if errno != libc::EAGAIN && errno != libc::ENOMEM => {
                Ok(Outcome::Refused(errno))
            }
            _ => Err(io::Error::new(e.kind(), format!("clone: {e}"))),
        };
    }
    if pid == 0 {
        let mut code = 0;
        if let Into::WritesProcs(procs) = into {
            if let Err(errno) = write_self(procs.as_raw_fd()) {
                code = errno.clamp(1, 127);
            }
        }
        if let (0, Some(name)) = (code, check) {
            if !in_cgroup(name) {
                code = NOT_IN_CGROUP;
            }
        }
        // SAFETY: _exit ends the child without the parent's exit handlers.
        unsafe { libc::_exit(code) }
    }
    let status = wait(pid as libc::pid_t)?;
    Ok(if libc::WIFEXITED(status) {
        match libc::WEXITSTATUS(status) {
            0 => Outcome::Done,
            NOT_IN_CGROUP => Outcome::NotThere,
            errno => Outcome::Refused(errno),
        }
    } else {
        Outcome::Other(status)
    })
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is writable for two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(crate::last_error("pipe2"));
    }
    // SAFETY: pipe2 returned two new descriptors this process owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A process that answers each byte written to it with one byte, living in the cgroup whose
/// `cgroup.procs` it was given (it writes itself in before answering). Dropped: its pipe is
/// closed, it reads the end and exits, and it is waited for.
pub struct Partner {
    pid: libc::pid_t,
    to: Option<OwnedFd>,
    from: OwnedFd,
}

impl Partner {
    /// Starts it; it runs on the caller's CPUs. `Err` when it could not be made, `Ok(Err)`
    /// with the errno when it could not write itself into the cgroup.
    pub fn start(procs: BorrowedFd<'_>) -> io::Result<Result<Partner, i32>> {
        let (req_r, req_w) = pipe()?;
        let (ans_r, ans_w) = pipe()?;
        let pid = fork_like();
        if pid < 0 {
            return Err(crate::last_error("clone"));
        }
        if pid == 0 {
            // The child: in the cgroup, then one byte back for each byte in; the first byte
            // back says whether it got in.
            let (r, w) = (req_r.as_raw_fd(), ans_w.as_raw_fd());
            // Another partner's request pipe kept open here would never let it read its end.
            let keep = [r, w, procs.as_raw_fd()];
            for fd in 3..1024 {
                if !keep.contains(&fd) {
                    // SAFETY: closing a descriptor of this child's own table, never used after.
                    unsafe { libc::close(fd) };
                }
            }
            let said: u8 = if write_self(procs.as_raw_fd()).is_ok() {
                b'y'
            } else {
                b'n'
            };
            let mut b = [said];
            // SAFETY: b is one byte; w is the answer pipe's write end.
            unsafe { libc::write(w, b.as_ptr().cast(), 1) };
            loop {
                // SAFETY: b is one writable byte.
                if unsafe { libc::read(r, b.as_mut_ptr().cast(), 1) } != 1 {
                    break;
                }
                // SAFETY: as above.
                if unsafe { libc::write(w, b.as_ptr().cast(), 1) } != 1 {
                    break;
                }
            }
            // SAFETY: _exit ends the child.
            unsafe { libc::_exit(0) }
        }
        drop((req_r, ans_w));
        let p = Partner {
            pid: pid as libc::pid_t,
            to: Some(req_w),
            from: ans_r,
        };
        let mut b = [0u8];
        // SAFETY: b is one writable byte.
        let r = unsafe { libc::read(p.from.as_raw_fd(), b.as_mut_ptr().cast(), 1) };
        if r != 1 {
            return Err(crate::last_error("read (the partner's first answer)"));
        }
        if b[0] != b'y' {
            // It could not join: the cause is what the parent's own write would meet.
            return Ok(Err(libc::EPERM));
        }
        Ok(Ok(p))
    }

    /// The partner's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// One round trip: a byte to it, its byte back.
    #[inline]
    pub fn round_trip(&self) -> io::Result<()> {
        let b = [1u8];
        let to = self.to.as_ref().map_or(-1, |f| f.as_raw_fd());
        // SAFETY: b is one readable byte.
        if unsafe { libc::write(to, b.as_ptr().cast(), 1) } != 1 {
            return Err(crate::last_error("write (to the partner)"));
        }
        let mut back = [0u8];
        // SAFETY: back is one writable byte.
        if unsafe { libc::read(self.from.as_raw_fd(), back.as_mut_ptr().cast(), 1) } != 1 {
            return Err(crate::last_error("read (from the partner)"));
        }
        Ok(())
    }
}

impl Drop for Partner {
    fn drop(&mut self) {
        self.to = None;
        let _ = wait(self.pid);
    }
}

/// Writes `0` (the calling process) into the open `cgroup.procs` `procs`: moves it there.
pub fn move_self(procs: BorrowedFd<'_>) -> io::Result<()> {
    write_self(procs.as_raw_fd()).map_err(|errno| {
        let e = io::Error::from_raw_os_error(errno);
        io::Error::new(e.kind(), format!("writing cgroup.procs: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_child_ends_and_finds_its_own_cgroup() {
        assert_eq!(run_child(Into::Stays, None).unwrap(), Outcome::Done);
        // Every process is in some cgroup of a name no test uses.
        assert_eq!(
            run_child(Into::Stays, Some(b"oscost-no-such-cgroup")).unwrap(),
            Outcome::NotThere
        );
    }
}
