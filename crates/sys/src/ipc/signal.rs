//! The realtime signal [`Via::Signal`](super::Via::Signal) links carry tokens with: blocked
//! in every task that waits on one, and drained before it is unblocked again.

use super::raw::pthread_result;
use std::io;

/// The realtime signal [`Via::Signal`] links use: `SIGRTMIN + 2` (glibc reserves the first
/// two real-time signals below its SIGRTMIN; +2 keeps clear of libraries that take SIGRTMIN
/// itself).
///
/// [`Via::Signal`]: super::Via::Signal
pub fn link_signal_number() -> i32 {
    libc::SIGRTMIN() + 2
}

pub(super) fn link_sigset() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it, sigaddset of a valid signal
    // number cannot fail.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, link_signal_number());
        set
    }
}

/// Blocks the realtime signal used by [`Via::Signal`] in the calling thread. Every task that
/// waits on a signal link calls it before its first wait and before anyone may post to it: an
/// unblocked realtime signal's default action terminates the whole process. The mask is
/// inherited by threads created and processes forked afterwards.
///
/// [`Via::Signal`]: super::Via::Signal
pub fn block_link_signal() -> io::Result<()> {
    let set = link_sigset();
    // SAFETY: set is initialised; a null old-set pointer is allowed.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    pthread_result(r, "pthread_sigmask(SIG_BLOCK)")
}

/// Takes every pending instance of the link signal of the calling thread (and process)
/// without waiting; returns how many there were.
pub fn drain_link_signal() -> usize {
    let set = link_sigset();
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let mut n = 0;
    // SAFETY: set and zero are valid; a null siginfo pointer is allowed. A zero timeout polls.
    while unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &zero) } >= 0 {
        n += 1;
    }
    n
}

/// Blocks the link signal in the calling thread until dropped (see [`block_link_signal_scoped`]).
#[derive(Debug)]
pub struct LinkSignalBlock {
    pub(super) was_blocked: bool,
    // The mask is per thread: the guard must be dropped on the thread that made it.
    _not_send: std::marker::PhantomData<*const ()>,
}

/// Like [`block_link_signal`], but restores the previous mask when the guard drops, after
/// taking any instance still pending (unblocking a pending realtime signal would kill the
/// process). For code that measures a signal link inside a thread it does not own.
pub fn block_link_signal_scoped() -> io::Result<LinkSignalBlock> {
    let set = link_sigset();
    // SAFETY: sigset_t is plain data, filled by pthread_sigmask.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is initialised, old is writable.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) };
    pthread_result(r, "pthread_sigmask(SIG_BLOCK)")?;
    // SAFETY: old was filled by pthread_sigmask; the signal number is valid.
    let was_blocked = unsafe { libc::sigismember(&old, link_signal_number()) } == 1;
    Ok(LinkSignalBlock {
        was_blocked,
        _not_send: std::marker::PhantomData,
    })
}

impl Drop for LinkSignalBlock {
    fn drop(&mut self) {
        if self.was_blocked {
            return;
        }
        drain_link_signal();
        let set = link_sigset();
        // SAFETY: set is initialised; a null old-set pointer is allowed.
        unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
    }
}
