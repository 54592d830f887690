//! Memory shared with forked children: made before the fork, so a child only uses it.

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// `MAP_SHARED | MAP_ANONYMOUS` memory: zero-filled, shared with every process forked after it
/// was made, unmapped (in this process only) on drop.
#[derive(Debug)]
pub(crate) struct SharedMap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; everything placed in it is either
// an atomic or a process-shared pthread/semaphore object, all of which are designed to be used
// from several threads (and processes) at once.
unsafe impl Send for SharedMap {}
// SAFETY: as above; shared references only ever hand out atomics or pointers to objects whose
// own API synchronises.
unsafe impl Sync for SharedMap {}

impl SharedMap {
    pub(crate) fn new(len: usize) -> io::Result<SharedMap> {
        let len = len.max(1);
        let ptr = crate::map_anonymous(len, true)?;
        Ok(SharedMap { ptr, len })
    }

    /// The start of the mapping as a `*mut T`. The mapping is page-aligned, so any `T` fits its
    /// alignment at offset 0.
    pub(crate) fn at<T>(&self) -> *mut T {
        debug_assert!(std::mem::size_of::<T>() <= self.len);
        self.ptr.as_ptr().cast()
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        // SAFETY: ptr/len is exactly the mapping made in `new`, unmapped once; no reference into
        // it outlives `self` (every accessor borrows `self`). Other processes keep their own
        // mapping of the same pages.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Anonymous shared memory that survives fork (`MAP_SHARED | MAP_ANONYMOUS`), for words both
/// tasks spin or count on. Zero-filled at creation.
///
/// It holds `n` 64-bit words ([`SharedWords::get`]) and, separately, `n` 32-bit words
/// ([`SharedWords::get32`]) for futexes (a futex is 32 bits). The two arrays do not overlap.
#[derive(Debug)]
pub struct SharedWords {
    map: SharedMap,
    n: usize,
}

impl SharedWords {
    /// Maps `n` zeroed 64-bit words and `n` zeroed 32-bit words.
    pub fn new(n: usize) -> io::Result<SharedWords> {
        let map = SharedMap::new(n * (8 + 4))?;
        Ok(SharedWords { map, n })
    }

    /// Number of words of each width.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether there are no words at all.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The `i`-th 64-bit word. Panics if `i >= len()`; a forked child uses
    /// [`SharedWords::try_get`] instead.
    pub fn get(&self, i: usize) -> &AtomicU64 {
        match self.try_get(i) {
            Some(w) => w,
            None => panic!("shared word {i} of {}", self.n),
        }
    }

    /// The `i`-th 64-bit word, or `None` if `i >= len()`: no panic, so safe on a forked
    /// child's path.
    #[inline]
    pub fn try_get(&self, i: usize) -> Option<&AtomicU64> {
        if i >= self.n {
            return None;
        }
        // SAFETY: i < n and the mapping holds n u64s at offset 0, page-aligned so 8-aligned;
        // the memory lives as long as the borrow of self and is only accessed atomically.
        Some(unsafe { &*self.map.at::<AtomicU64>().add(i) })
    }

    /// The `i`-th 32-bit word (not an alias of [`SharedWords::get`]`(i)`), for
    /// [`futex_wait`]/[`futex_wake`]. Panics if `i >= len()`.
    pub fn get32(&self, i: usize) -> &AtomicU32 {
        assert!(i < self.n, "shared 32-bit word {i} of {}", self.n);
        // SAFETY: the u32 array starts after n u64s (so 4-aligned) and holds n entries within
        // the mapping; lives as long as the borrow of self; only accessed atomically.
        unsafe {
            &*self
                .map
                .at::<u8>()
                .add(self.n * 8)
                .cast::<AtomicU32>()
                .add(i)
        }
    }
}
