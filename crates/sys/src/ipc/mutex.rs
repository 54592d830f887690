//! A process-private pthread mutex, as a C program has one: the lock whose cost the mutex
//! cases time, and the lock ring's locks.

use super::raw::pthread_result;
use std::cell::UnsafeCell;
use std::io;

/// A process-private `pthread_mutex_t` with default attributes: what a C program gets from
/// `PTHREAD_MUTEX_INITIALIZER`. (Rust's `std::sync::Mutex` is its own futex lock, not this.)
#[derive(Debug)]
pub struct PthreadMutex {
    // Boxed: a pthread mutex must not move once used. On a cache line of its own: where the
    // 40-byte mutex falls (across two lines or within one) would otherwise change its cost
    // from one run to the next.
    pub(super) m: Box<LineAligned<UnsafeCell<libc::pthread_mutex_t>>>,
}

/// A value that starts on a 64-byte cache line.
#[derive(Debug)]
#[repr(align(64))]
pub(super) struct LineAligned<T>(pub(super) T);

// SAFETY: a pthread mutex is made to be locked and unlocked from any thread.
unsafe impl Send for PthreadMutex {}
// SAFETY: as above; all access goes through pthread_mutex_* which synchronise internally.
unsafe impl Sync for PthreadMutex {}

impl PthreadMutex {
    /// A new, unlocked mutex.
    pub fn new() -> PthreadMutex {
        PthreadMutex {
            m: Box::new(LineAligned(UnsafeCell::new(
                libc::PTHREAD_MUTEX_INITIALIZER,
            ))),
        }
    }

    /// `pthread_mutex_lock` then `pthread_mutex_unlock`: one uncontended lock/unlock pair.
    #[inline]
    pub fn lock_unlock(&self) -> io::Result<()> {
        // SAFETY: m is an initialised mutex at a stable address for self's lifetime.
        let r = unsafe { libc::pthread_mutex_lock(self.m.0.get()) };
        pthread_result(r, "pthread_mutex_lock")?;
        // SAFETY: this thread locked it just above.
        let r = unsafe { libc::pthread_mutex_unlock(self.m.0.get()) };
        pthread_result(r, "pthread_mutex_unlock")
    }

    /// `pthread_mutex_lock` alone, blocking while another thread holds the mutex. For the lock
    /// ring (`crate::lockring`), where a thread keeps a mutex across calls.
    #[inline]
    pub(crate) fn lock(&self) -> io::Result<()> {
        // SAFETY: m is an initialised mutex at a stable address for self's lifetime.
        let r = unsafe { libc::pthread_mutex_lock(self.m.0.get()) };
        pthread_result(r, "pthread_mutex_lock")
    }

    /// `pthread_mutex_unlock` alone.
    ///
    /// # Safety
    ///
    /// The calling thread must hold the mutex (locked it with [`PthreadMutex::lock`] and not
    /// unlocked it since): POSIX leaves unlocking a mutex one does not hold undefined.
    #[inline]
    pub(crate) unsafe fn unlock(&self) -> io::Result<()> {
        // SAFETY: m is initialised and stable; the caller holds it (this function's contract).
        let r = unsafe { libc::pthread_mutex_unlock(self.m.0.get()) };
        pthread_result(r, "pthread_mutex_unlock")
    }
}

impl Default for PthreadMutex {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for PthreadMutex {
    fn drop(&mut self) {
        // SAFETY: nobody can hold the lock: lock_unlock always releases it before returning,
        // and the lock ring shares its mutexes through an Arc that every thread which might
        // still hold one keeps alive, so they are dropped only once every holder has returned
        // (and released them on the way out).
        unsafe { libc::pthread_mutex_destroy(self.m.0.get()) };
    }
}
