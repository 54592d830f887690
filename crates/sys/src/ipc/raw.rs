//! The single calls links are made of: futex wait and wake, `sched_yield`, one whole read or
//! write on a descriptor, and the error of a pthread call.

use crate::last_error;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::AtomicU32;

/// `FUTEX_WAIT` on `word` while it holds `expected`, without `FUTEX_PRIVATE_FLAG` so it works
/// on shared memory across processes.
///
/// Returns when woken, at once when the word no longer holds `expected` (EAGAIN), or when a
/// signal interrupts (EINTR): callers re-check the word in a loop, as with any futex.
#[inline]
pub fn futex_wait(word: &AtomicU32, expected: u32) -> io::Result<()> {
    // SAFETY: word is a valid, aligned u32 for the duration of the call; a null timeout means
    // wait forever; the remaining arguments are ignored by FUTEX_WAIT.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if r == 0 {
        return Ok(());
    }
    // last_os_error does not allocate, so the common EAGAIN/EINTR path stays allocation-free.
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(()),
        _ => Err(last_error("futex(FUTEX_WAIT)")),
    }
}

/// `FUTEX_WAIT` (shared, so it works across processes) while `word` holds `expected`, at most
/// `timeout` (none: without end); returns on a wake, a change, a signal or the timeout alike,
/// and on any error: callers re-check the word.
pub(crate) fn futex_wait_for(
    word: &AtomicU32,
    expected: u32,
    timeout: Option<std::time::Duration>,
) {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs() as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let tp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: word is a valid, aligned u32 and tp null or a valid timespec, both for the
    // duration of the call; the remaining arguments are ignored by FUTEX_WAIT.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            tp,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
}

/// Wakes every waiter on `word` (shared); a failure leaves them to their timeouts.
pub(crate) fn wake_all(word: &AtomicU32) {
    let _ = futex_wake(word, i32::MAX);
}

/// `FUTEX_WAKE` of up to `n` waiters on `word` (shared, not private); returns how many woke.
#[inline]
pub fn futex_wake(word: &AtomicU32, n: i32) -> io::Result<i32> {
    // SAFETY: word is a valid, aligned u32; FUTEX_WAKE only reads the address as a key.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            n,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if r < 0 {
        return Err(last_error("futex(FUTEX_WAKE)"));
    }
    Ok(r as i32)
}

/// `sched_yield()`: the [`Via::Yield`] "primitive".
///
/// [`Via::Yield`]: super::Via::Yield
#[inline]
pub fn sched_yield() -> io::Result<()> {
    // SAFETY: no arguments, no memory touched.
    if unsafe { libc::sched_yield() } != 0 {
        return Err(last_error("sched_yield"));
    }
    Ok(())
}

#[inline]
pub(super) fn pthread_result(r: libc::c_int, call: &str) -> io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(pthread_error(r, call))
    }
}

/// Out of line and cold, so the success path of a timed call holds no formatting code.
#[cold]
#[inline(never)]
fn pthread_error(r: libc::c_int, call: &str) -> io::Error {
    // pthread functions return the error number instead of setting errno.
    let e = io::Error::from_raw_os_error(r);
    io::Error::new(e.kind(), format!("{call}: {e}"))
}

pub(crate) fn check_fd(r: libc::c_int, call: &str) -> io::Result<OwnedFd> {
    if r < 0 {
        return Err(last_error(call));
    }
    // SAFETY: r is a descriptor the kernel just returned to us, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(r) })
}

#[inline]
pub(crate) fn write_one(fd: RawFd, buf: &[u8], call: &str) -> io::Result<()> {
    loop {
        // SAFETY: buf is valid for buf.len() bytes; fd is open for the borrow of the Link.
        let r = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if r == buf.len() as isize {
            return Ok(());
        }
        if r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        if r < 0 {
            return Err(last_error(call));
        }
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("{call}: short write ({r})"),
        ));
    }
}

#[inline]
pub(crate) fn read_one(fd: RawFd, buf: &mut [u8], call: &str) -> io::Result<()> {
    loop {
        // SAFETY: buf is valid and writable for buf.len() bytes; fd is open.
        let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if r == buf.len() as isize {
            return Ok(());
        }
        if r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        if r < 0 {
            return Err(last_error(call));
        }
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("{call}: got {r} of {} bytes", buf.len()),
        ));
    }
}

#[inline]
pub(super) fn interrupted() -> bool {
    io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
}
