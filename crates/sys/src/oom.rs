//! The process's allocator: the system's, except that an allocation the system refuses ends
//! the process with one `oscost:` line and exit status 2 instead of Rust's abort (status 134,
//! no oscost line), as a user who ran oscost under `prlimit --as` or a small cgroup sees.

use std::alloc::{GlobalAlloc, Layout, System};

/// The system allocator, reporting its refusals (install with `#[global_allocator]`).
pub struct Reporting;

/// Writes the line and ends the process. Allocates nothing: the heap is what just failed.
fn refused(size: usize) -> ! {
    const HEAD: &[u8] = b"oscost: out of memory: an allocation of ";
    const TAIL: &[u8] = b" bytes was refused (raise the memory limit: ulimit -v, prlimit --as or \
the cgroup's memory.max)\n";
    let mut digits = [0u8; 20];
    let (mut n, mut i) = (size, digits.len());
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut line = [0u8; 256];
    let mut len = 0;
    for part in [HEAD, &digits[i..], TAIL] {
        line[len..len + part.len()].copy_from_slice(part);
        len += part.len();
    }
    // SAFETY: writes `len` initialised bytes of a stack buffer to stderr; a short or failed
    // write has nothing else to fall back on.
    unsafe { libc::write(2, line.as_ptr().cast(), len) };
    // SAFETY: ends the process at once; nothing may run that could allocate.
    unsafe { libc::_exit(2) }
}

// SAFETY: every call is forwarded to the system allocator with the same arguments; a null
// result never returns to the caller, so the allocator's contract is the system's.
unsafe impl GlobalAlloc for Reporting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            refused(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            refused(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` with `layout`; the caller's contract is unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            refused(new_size);
        }
        p
    }
}

/// Under an address-space limit (RLIMIT_AS), keeps malloc to one arena. glibc gives each new
/// thread that allocates (every Rust thread does, registering its thread-local destructors)
/// an arena of its own, up to 8 per CPU, each reserving 64 MiB of address space: under a
/// limit those reservations take, 64 MiB at a time, the room a run's worker threads need
/// for their stacks, so whether N threads fit would turn on the limit's size modulo 64 MiB
/// and not on N. Call it first in `main`, before any thread starts; without a limit nothing
/// changes.
pub fn one_arena_under_address_limit() {
    #[cfg(target_env = "gnu")]
    if matches!(crate::rlimit(libc::RLIMIT_AS), Ok((Some(_), _))) {
        // SAFETY: mallopt takes plain integers; no other thread exists yet to race with it.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) };
    }
}
