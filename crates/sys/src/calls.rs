//! The system calls the `syscall` experiment times, each exactly one call path.
//!
//! They go through `libc` (the thing measured is the call as a C program makes it); ids whose
//! library wrapper could hide the kernel (getpid caching) use the raw `syscall()` entry.

use super::last_error;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

#[inline]
fn check(r: libc::c_long, call: &str) -> io::Result<libc::c_long> {
    if r < 0 {
        Err(last_error(call))
    } else {
        Ok(r)
    }
}

/// `syscall(-1)`: the kernel's entry/exit floor, always ENOSYS.
#[inline]
pub fn invalid_syscall() -> i64 {
    // SAFETY: an invalid system call number touches nothing and returns -ENOSYS.
    unsafe { libc::syscall(-1) as i64 }
}

/// `syscall(SYS_getpid)`: never served from a library cache.
#[inline]
pub fn raw_getpid() -> i64 {
    // SAFETY: getpid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_getpid) as i64 }
}

/// `syscall(SYS_getppid)`: lmbench's null call.
#[inline]
pub fn raw_getppid() -> i64 {
    // SAFETY: getppid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_getppid) as i64 }
}

/// `clock_gettime(CLOCK_MONOTONIC)` through the vDSO: no kernel entry, a reference only.
#[inline]
pub fn vdso_clock_gettime() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_nsec
}

/// `syscall(SYS_clock_gettime)`: the same clock read forced through the kernel.
#[inline]
pub fn raw_clock_gettime() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    unsafe {
        libc::syscall(
            libc::SYS_clock_gettime,
            libc::CLOCK_MONOTONIC,
            &mut ts as *mut libc::timespec,
        )
    };
    ts.tv_nsec
}

/// `open(path, flags, 0o600)`.
pub fn open(path: &CStr, flags: i32) -> io::Result<OwnedFd> {
    // SAFETY: path is NUL-terminated; the mode argument is read only with O_CREAT.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            flags | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    };
    check(fd as libc::c_long, "open")?;
    // SAFETY: fd was just returned by open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `open(path, O_RDONLY)` followed by `close`: two calls.
#[inline]
pub fn open_close(path: &CStr) -> io::Result<()> {
    // SAFETY: path is NUL-terminated.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    check(fd as libc::c_long, "open")?;
    // SAFETY: fd was just opened here and is closed exactly once.
    check(unsafe { libc::close(fd) } as libc::c_long, "close")?;
    Ok(())
}

/// `lseek(fd, 0, SEEK_SET)`.
#[inline]
pub fn lseek_start(fd: BorrowedFd) -> io::Result<()> {
    // SAFETY: fd is open for the borrow's lifetime.
    let r = unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_SET) };
    check(r as libc::c_long, "lseek")?;
    Ok(())
}

/// `pread(fd, buf, len, 0)`: one read at offset 0.
#[inline]
pub fn pread_start(fd: BorrowedFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid and writable for buf.len() bytes; fd is open.
    let r = unsafe { libc::pread(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    Ok(check(r as libc::c_long, "pread")? as usize)
}

/// `read(fd, buf, len)`: lmbench's `lat_syscall read` reads 1 byte from `/dev/zero` this way.
#[inline]
pub fn read(fd: BorrowedFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid and writable for buf.len() bytes; fd is open.
    let r = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    Ok(check(r as libc::c_long, "read")? as usize)
}

/// `write(fd, buf, len)`: lmbench's `lat_syscall write` writes 1 byte to `/dev/null` this way.
#[inline]
pub fn write(fd: BorrowedFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes; fd is open.
    let r = unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
    Ok(check(r as libc::c_long, "write")? as usize)
}

/// `pwrite(fd, buf, len, 0)`: one write at offset 0.
#[inline]
pub fn pwrite_start(fd: BorrowedFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes; fd is open.
    let r = unsafe { libc::pwrite(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), 0) };
    Ok(check(r as libc::c_long, "pwrite")? as usize)
}

/// `creat` + `write(len)` + `close` + `unlink`: the file life cycle timed by Herder et al.,
/// "MINIX 3: A Highly Reliable, Self-Repairing Operating System" (2006).
#[inline]
pub fn create_write_unlink(path: &CStr, buf: &[u8]) -> io::Result<()> {
    // A failure names the file: "write: No space left on device" alone says not where.
    let named = |call: &str| {
        let e = io::Error::last_os_error();
        io::Error::new(e.kind(), format!("{call} {}: {e}", path.to_string_lossy()))
    };
    // SAFETY: path is NUL-terminated; mode is read with O_CREAT.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(named("creat"));
    }
    // SAFETY: buf is valid for buf.len() bytes; fd was just opened.
    let w = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    let write_failed = (w < 0).then(|| named("write"));
    // SAFETY: fd was opened here and is closed exactly once.
    unsafe { libc::close(fd) };
    // SAFETY: path is NUL-terminated. The file goes whether or not the write succeeded.
    let unlinked = unsafe { libc::unlink(path.as_ptr()) };
    if let Some(e) = write_failed {
        return Err(e);
    }
    if unlinked < 0 {
        return Err(named("unlink"));
    }
    Ok(())
}

/// `stat(path)`.
#[inline]
pub fn stat(path: &CStr) -> io::Result<i64> {
    // SAFETY: st is plain data, written by the kernel.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: path is NUL-terminated; st is writable.
    let r = unsafe { libc::stat(path.as_ptr(), &mut st) };
    check(r as libc::c_long, "stat")?;
    Ok(st.st_size)
}

/// `fstat(fd)`.
#[inline]
pub fn fstat(fd: BorrowedFd) -> io::Result<i64> {
    // SAFETY: st is plain data, written by the kernel.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open; st is writable.
    let r = unsafe { libc::fstat(fd.as_raw_fd(), &mut st) };
    check(r as libc::c_long, "fstat")?;
    Ok(st.st_size)
}

/// `mmap(len, anonymous private)` + `munmap`, pages never touched.
#[inline]
pub fn mmap_munmap(len: usize) -> io::Result<()> {
    // SAFETY: an anonymous private mapping at a kernel-chosen address aliases nothing.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(last_error("mmap"));
    }
    // SAFETY: p/len is exactly the mapping just created, unmapped once, never referenced again.
    check(unsafe { libc::munmap(p, len) } as libc::c_long, "munmap")?;
    Ok(())
}

/// `pread(fd, buf, len, offset)`: one read at `offset` (the `fs` experiment walks a file).
#[inline]
pub fn pread_at(fd: BorrowedFd, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    // SAFETY: buf is valid and writable for buf.len() bytes; fd is open.
    let r = unsafe {
        libc::pread(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            offset as libc::off_t,
        )
    };
    Ok(check(r as libc::c_long, "pread")? as usize)
}

/// `pwrite(fd, buf, len, offset)`: one write at `offset` (the `fs` experiment walks a file).
#[inline]
pub fn pwrite_at(fd: BorrowedFd, buf: &[u8], offset: u64) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes; fd is open.
    let r = unsafe {
        libc::pwrite(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            offset as libc::off_t,
        )
    };
    Ok(check(r as libc::c_long, "pwrite")? as usize)
}
