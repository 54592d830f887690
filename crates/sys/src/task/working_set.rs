//! The private memory a task touches on every hop, and what `/proc` says of a process's
//! memory and migrations.

use std::io;

/// Private memory a task touches on every hop (lmbench `lat_ctx -s`): an anonymous mapping
/// made by the task itself, so a forked child gets its own pages without calling malloc.
pub struct WorkingSet {
    ptr: *mut u64,
    words: usize,
}

impl WorkingSet {
    /// Maps `kib` KiB and writes every word once, so the pages are private to this task (an
    /// untouched mapping reads the shared zero page, which would stay cache-hot). Raw calls
    /// only: safe in a forked child. `kib == 0` maps nothing.
    pub fn new(kib: usize) -> io::Result<WorkingSet> {
        let words = kib.checked_mul(1024 / 8).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "working set size overflows")
        })?;
        if words == 0 {
            return Ok(WorkingSet {
                ptr: std::ptr::NonNull::dangling().as_ptr(),
                words: 0,
            });
        }
        // SAFETY: an anonymous private mapping at a kernel-chosen address aliases nothing.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                words * 8,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut ws = WorkingSet {
            ptr: p.cast(),
            words,
        };
        for (i, w) in ws.words_mut().iter_mut().enumerate() {
            *w = i as u64;
        }
        Ok(ws)
    }

    fn words_mut(&mut self) -> &mut [u64] {
        // SAFETY: ptr is a live mapping of `words` u64s (or dangling with 0 words), page
        // aligned, exclusively borrowed through self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.words) }
    }

    /// Reads every word (lmbench's `sumit`) and returns the sum so the reads stay.
    #[inline]
    pub fn touch(&self) -> u64 {
        // SAFETY: as in words_mut, shared borrow.
        let words = unsafe { std::slice::from_raw_parts(self.ptr, self.words) };
        std::hint::black_box(words.iter().fold(0u64, |a, &w| a.wrapping_add(w)))
    }
}

impl Drop for WorkingSet {
    fn drop(&mut self) {
        if self.words > 0 {
            // SAFETY: exactly the mapping made in `new`, unmapped once.
            unsafe { libc::munmap(self.ptr.cast(), self.words * 8) };
        }
    }
}

/// Migrations of process `pid` (its main thread) so far, from `/proc/<pid>/sched`.
pub fn process_migrations(pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/sched")).ok()?;
    text.lines()
        .find(|l| l.starts_with("se.nr_migrations"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse().ok())
}

/// Proportional resident memory of process `pid` (`Pss` in `/proc/<pid>/smaps_rollup`), KiB:
/// pages shared with other processes (a forked child's copy-on-write pages) are split between
/// them, so a sum over processes counts each page once.
pub fn process_pss_kib(pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    text.lines()
        .find(|l| l.starts_with("Pss:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}
