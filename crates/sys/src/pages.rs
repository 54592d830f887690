//! Mappings whose pages are touched one at a time, for the page-fault experiment: each first
//! touch of a page is a fault the kernel must serve, and what the kernel counted (minor and
//! major faults, resident pages) is read beside it.
//!
//! The touch loops read or write one byte per page through volatile accesses, so the compiler
//! can neither drop nor merge them: the loop timed is the loop written.

use crate::last_error;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;

/// The base page size the loops step by.
pub const PAGE: usize = 4096;

/// A transparent huge page on x86-64 and arm64 with 4 KiB pages.
pub const HUGE_PAGE: usize = 2 * 1024 * 1024;

/// One mapping, unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    /// What was mapped, when larger than `len` (an aligned huge-page region): unmapped whole.
    whole: (NonNull<u8>, usize),
}

// SAFETY: the mapping is memory owned by this value alone.
unsafe impl Send for Mapping {}

fn map(len: usize, flags: i32, fd: i32, what: &str) -> io::Result<NonNull<u8>> {
    // SAFETY: a mapping at a kernel-chosen address aliases nothing of ours; `fd` is either -1
    // with MAP_ANONYMOUS or an open file the caller borrows for the call.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len.max(1),
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(last_error(what));
    }
    NonNull::new(p.cast::<u8>()).ok_or_else(|| last_error(what))
}

impl Mapping {
    /// `len` bytes of private anonymous memory, no page present yet.
    pub fn anonymous(len: usize) -> io::Result<Mapping> {
        let ptr = map(
            len,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            "mmap(MAP_PRIVATE|MAP_ANONYMOUS)",
        )?;
        Ok(Mapping {
            ptr,
            len,
            whole: (ptr, len),
        })
    }

    /// `len` bytes of shared anonymous memory, no page present yet. Each such mapping is a
    /// file of its own to the kernel, so neighbours are never merged into one mapping.
    pub fn shared_anonymous(len: usize) -> io::Result<Mapping> {
        let ptr = map(
            len,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            "mmap(MAP_SHARED|MAP_ANONYMOUS)",
        )?;
        Ok(Mapping {
            ptr,
            len,
            whole: (ptr, len),
        })
    }

    /// `len` bytes of private anonymous memory between two inaccessible guard pages: a
    /// mapping of its own that the kernel never merges with a neighbour, so changing or
    /// removing it never splits or merges another (whose cost would depend on where it
    /// landed).
    pub fn isolated(len: usize) -> io::Result<Mapping> {
        let whole = len + 2 * PAGE;
        // SAFETY: a new mapping at a kernel-chosen address aliases nothing of ours.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                whole,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(last_error("mmap(MAP_PRIVATE|MAP_ANONYMOUS)"));
        }
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(|| last_error("mmap"))?;
        // SAFETY: PAGE < whole: in bounds of the mapping just made.
        let inner = unsafe { base.as_ptr().add(PAGE) };
        let m = Mapping {
            // SAFETY: inside a non-null mapping.
            ptr: unsafe { NonNull::new_unchecked(inner) },
            len,
            whole: (base, whole),
        };
        // SAFETY: the inner range lies inside the mapping just made.
        if unsafe { libc::mprotect(inner.cast(), len, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
            return Err(last_error("mprotect"));
        }
        Ok(m)
    }

    /// Unmaps an [`isolated`](Mapping::isolated) mapping, timing only the unmap of its inner
    /// part with `now` (a counter read); the guard pages go after.
    pub fn time_unmap(self, mut now: impl FnMut() -> u64) -> u64 {
        let me = std::mem::ManuallyDrop::new(self);
        let t0 = now();
        // SAFETY: the inner range of a mapping this value owned and nothing references.
        unsafe { libc::munmap(me.ptr.as_ptr().cast(), me.len) };
        let t1 = now();
        // Each guard page alone, not the whole range: another thread may already have been
        // given the freed inner page for a mapping of its own.
        let (base, whole, inner) = (
            me.whole.0.as_ptr(),
            me.whole.1,
            me.len.next_multiple_of(PAGE),
        );
        // SAFETY: the guard before the inner range, part of the mapping this value owned.
        unsafe { libc::munmap(base.cast(), PAGE) };
        // SAFETY: the guard after it: [base + PAGE + inner, base + whole) is the rest of the
        // mapping this value owned, as isolated() made it (whole = len + 2 pages).
        unsafe { libc::munmap(base.add(PAGE + inner).cast(), whole - PAGE - inner) };
        t1.wrapping_sub(t0)
    }

    /// `len` bytes (a multiple of [`HUGE_PAGE`]) of private anonymous memory starting on a
    /// huge-page boundary, advised `MADV_HUGEPAGE`: a first write may then get a whole huge
    /// page. Whether it did is the kernel's choice, read from `AnonHugePages` by the caller.
    pub fn huge(len: usize) -> io::Result<Mapping> {
        let over = len + HUGE_PAGE;
        let base = map(
            over,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            "mmap(MAP_PRIVATE|MAP_ANONYMOUS)",
        )?;
        let skip = (HUGE_PAGE - base.as_ptr() as usize % HUGE_PAGE) % HUGE_PAGE;
        // SAFETY: skip < HUGE_PAGE and the mapping is len + HUGE_PAGE long: in bounds.
        let start = unsafe { base.as_ptr().add(skip) };
        let m = Mapping {
            // SAFETY: start is inside a non-null mapping.
            ptr: unsafe { NonNull::new_unchecked(start) },
            len,
            whole: (base, over),
        };
        // SAFETY: the advised range lies inside the mapping just made.
        let r = unsafe { libc::madvise(start.cast(), len, libc::MADV_HUGEPAGE) };
        if r != 0 {
            return Err(last_error("madvise(MADV_HUGEPAGE)"));
        }
        Ok(m)
    }

    /// The first `len` bytes of the file `fd`, private (copy on write) or shared.
    pub fn file(fd: BorrowedFd, len: usize, shared: bool) -> io::Result<Mapping> {
        let (flags, what) = if shared {
            (libc::MAP_SHARED, "mmap(MAP_SHARED) of a file")
        } else {
            (libc::MAP_PRIVATE, "mmap(MAP_PRIVATE) of a file")
        };
        let ptr = map(len, flags, fd.as_raw_fd(), what)?;
        Ok(Mapping {
            ptr,
            len,
            whole: (ptr, len),
        })
    }

    /// Asks the kernel to read no page ahead on a fault (`MADV_RANDOM`): each major fault then
    /// reads the one page touched.
    pub fn advise_random(&self) -> io::Result<()> {
        // SAFETY: the range is this mapping.
        let r = unsafe { libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_RANDOM) };
        if r != 0 {
            return Err(last_error("madvise(MADV_RANDOM)"));
        }
        Ok(())
    }

    /// Bytes mapped (the aligned part, for a huge-page mapping).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is mapped (never: a mapping has at least one byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes one byte at the start of every `stride` bytes.
    #[inline(never)]
    pub fn write_each(&mut self, stride: usize, value: u8) {
        let mut off = 0;
        while off < self.len {
            // SAFETY: off < len, inside a writable mapping this value owns exclusively.
            unsafe { self.ptr.as_ptr().add(off).write_volatile(value) };
            off += stride;
        }
    }

    /// Reads one byte at the start of every `stride` bytes; returns their sum, so the reads
    /// have a use.
    #[inline(never)]
    pub fn read_each(&self, stride: usize) -> u64 {
        let (mut off, mut sum) = (0, 0u64);
        while off < self.len {
            // SAFETY: off < len, inside a readable mapping this value owns.
            sum += u64::from(unsafe { self.ptr.as_ptr().add(off).read_volatile() });
            off += stride;
        }
        sum
    }

    /// Drops every page of the mapping (`MADV_DONTNEED`): the next touch faults again, and
    /// every CPU that may hold a translation of the pages must forget it first.
    pub fn dont_need(&self) -> io::Result<()> {
        // SAFETY: the range is this mapping; the pages become zero-fill again, which no
        // reference of ours depends on (the mapping is only reached through volatile accesses).
        let r = unsafe { libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_DONTNEED) };
        if r != 0 {
            return Err(last_error("madvise(MADV_DONTNEED)"));
        }
        Ok(())
    }

    /// Makes the mapping read-only and then writable again, timing only the first call with
    /// `now` (a counter read): what taking write permission away costs, while the mapping is
    /// never left read-only for a later write to fault on.
    pub fn time_write_protect(&self, mut now: impl FnMut() -> u64) -> io::Result<u64> {
        let (p, len) = (self.ptr.as_ptr().cast(), self.len);
        let t0 = now();
        // SAFETY: the range is this mapping; no Rust reference into it exists (every access
        // is volatile through the raw pointer) and it is made writable again below.
        let r = unsafe { libc::mprotect(p, len, libc::PROT_READ) };
        let t1 = now();
        let e = (r != 0).then(|| last_error("mprotect(PROT_READ)"));
        // SAFETY: as above.
        if unsafe { libc::mprotect(p, len, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
            return Err(last_error("mprotect(PROT_READ|PROT_WRITE)"));
        }
        match e {
            Some(e) => Err(e),
            None => Ok(t1.wrapping_sub(t0)),
        }
    }

    /// Pages of the mapping now in memory (`mincore`): 0 before a page was ever touched or read.
    pub fn resident_pages(&self) -> io::Result<usize> {
        let pages = self.len.div_ceil(PAGE);
        let mut vec = vec![0u8; pages];
        // SAFETY: the range is this mapping (page aligned), vec holds one byte per page.
        let r = unsafe { libc::mincore(self.ptr.as_ptr().cast(), self.len, vec.as_mut_ptr()) };
        if r != 0 {
            return Err(last_error("mincore"));
        }
        Ok(vec.iter().filter(|&&b| b & 1 != 0).count())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping made in the constructor, unmapped once.
        unsafe { libc::munmap(self.whole.0.as_ptr().cast(), self.whole.1) };
    }
}

/// Writes the file's dirty pages and asks the kernel to drop its cached pages
/// (`fdatasync` + `POSIX_FADV_DONTNEED`): the next touch of a page must read it from the
/// device. Pages still mapped somewhere stay; the caller unmaps first.
pub fn drop_cached(fd: BorrowedFd) -> io::Result<()> {
    // SAFETY: fd is an open file the caller borrows for the call.
    if unsafe { libc::fdatasync(fd.as_raw_fd()) } != 0 {
        return Err(last_error("fdatasync"));
    }
    // SAFETY: as above; offset 0 and length 0 mean the whole file.
    let r = unsafe { libc::posix_fadvise(fd.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// A forked child that holds this process's private pages copy-on-write until dropped: while
/// it lives, the parent's first write to each such page must copy it. The child only blocks
/// reading a pipe and exits when the pipe closes (this value dropped, or the parent gone).
#[derive(Debug)]
pub struct CowChild {
    pid: libc::pid_t,
    /// The pipe's write end; closing it ends the child.
    release: Option<OwnedFd>,
}

impl CowChild {
    /// Forks the child. Call from a single-threaded process.
    pub fn fork() -> io::Result<CowChild> {
        let mut fds = [0; 2];
        // SAFETY: fds has room for the two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(last_error("pipe2"));
        }
        // SAFETY: both descriptors were just opened and are owned here alone.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: the child calls only close, read and _exit, all async-signal-safe: no
        // allocation, no lock, no unwinding into the parent's code.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let mut b = 0u8;
            // SAFETY: see above. The child's copy of the write end is closed first, so the
            // read ends when the parent's copy closes.
            unsafe {
                libc::close(write.as_raw_fd());
                while libc::read(read.as_raw_fd(), (&mut b as *mut u8).cast(), 1) < 0 {}
                libc::_exit(0)
            }
        }
        if pid < 0 {
            return Err(last_error("fork"));
        }
        crate::count_started_tasks(1);
        drop(read);
        Ok(CowChild {
            pid,
            release: Some(write),
        })
    }
}

impl Drop for CowChild {
    fn drop(&mut self) {
        self.release.take();
        let mut status = 0;
        // SAFETY: pid is our own child, waited for once; status is writable.
        while unsafe { libc::waitpid(self.pid, &mut status, 0) } < 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
    }
}

/// The file system type of the one holding `path` (`statfs`'s `f_type`), by name where known.
pub fn file_system(path: &std::path::Path) -> io::Result<&'static str> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the path"))?;
    // SAFETY: statfs is plain data; zeroed is valid.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a NUL-terminated path, st is writable.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(last_error("statfs"));
    }
    Ok(match st.f_type as u64 {
        0x0102_1994 => "tmpfs",
        0x8584_58f6 => "ramfs",
        0xef53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683e => "btrfs",
        0x794c_7630 => "overlay",
        0x2fc1_2fc1 => "zfs",
        0x6573_5546 => "fuse",
        0x6969 => "nfs",
        _ => "other",
    })
}

/// Whether a file system of that name keeps its files in memory only: a page of it is never
/// read from a device, so it has no major fault to give.
pub fn memory_backed(name: &str) -> bool {
    matches!(name, "tmpfs" | "ramfs")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's (minor, major) faults so far.
    fn faults() -> (u64, u64) {
        let u = crate::spawn::thread_usage();
        (u.minor_faults, u.major_faults)
    }
    use std::io::Write;

    #[test]
    fn a_first_write_faults_each_page_once_and_a_second_does_not() {
        let mut m = Mapping::anonymous(64 * PAGE).unwrap();
        // Other tests of this process fork: a fork between the writes would write-protect the
        // pages and fault the second write again.
        // SAFETY: the range is the mapping's own, alive for the call.
        let r = unsafe { libc::madvise(m.ptr.as_ptr().cast(), m.len(), libc::MADV_DONTFORK) };
        assert_eq!(r, 0);
        assert_eq!(m.resident_pages().unwrap(), 0);
        let (a, _) = faults();
        m.write_each(PAGE, 1);
        let (b, _) = faults();
        m.write_each(PAGE, 2);
        let (c, _) = faults();
        assert!(b - a >= 64, "{a} {b}");
        assert_eq!(c, b);
        assert_eq!(m.resident_pages().unwrap(), 64);
        assert_eq!(m.read_each(PAGE), 128);
    }

    #[test]
    fn an_isolated_mapping_is_writable_and_unmaps_whole() {
        let mut m = Mapping::isolated(2 * PAGE).unwrap();
        m.write_each(PAGE, 5);
        assert_eq!(m.read_each(PAGE), 10);
        assert!(m.time_write_protect(|| 0).is_ok());
        m.write_each(PAGE, 1);
        let mut clock = 0;
        let _ = m.time_unmap(|| {
            clock += 1;
            clock
        });
    }

    #[test]
    fn a_huge_mapping_starts_on_a_huge_page() {
        let m = Mapping::huge(2 * HUGE_PAGE).unwrap();
        assert_eq!(m.ptr.as_ptr() as usize % HUGE_PAGE, 0);
        assert_eq!(m.len(), 2 * HUGE_PAGE);
    }

    #[test]
    fn a_file_mapping_reads_the_file_and_a_cow_child_ends_on_drop() {
        let path = std::env::temp_dir().join(format!("oscost-pages-{}", std::process::id()));
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        f.write_all(&[7u8; 4 * PAGE]).unwrap();
        let m = Mapping::file(std::os::fd::AsFd::as_fd(&f), 4 * PAGE, false).unwrap();
        m.advise_random().unwrap();
        assert_eq!(m.read_each(PAGE), 28);
        drop(m);
        drop_cached(std::os::fd::AsFd::as_fd(&f)).unwrap();
        let mut a = Mapping::anonymous(4 * PAGE).unwrap();
        a.write_each(PAGE, 1);
        let child = CowChild::fork().unwrap();
        let (x, _) = faults();
        a.write_each(PAGE, 2);
        let (y, _) = faults();
        assert!(y - x >= 4, "{x} {y}");
        drop(child);
    }
}
