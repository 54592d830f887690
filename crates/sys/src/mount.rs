//! Mounts for the `fs` experiment: a private mount namespace, a tmpfs, and what file system a
//! directory is on. Everything here needs root (CAP_SYS_ADMIN); callers fall back when it
//! fails.

use crate::last_error;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// `statfs`'s `f_type` of a tmpfs (and of /dev/shm, which is one).
pub const TMPFS_MAGIC: i64 = 0x0102_1994;
/// `statfs`'s `f_type` of a FUSE file system.
pub const FUSE_MAGIC: i64 = 0x6573_5546;

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))
}

/// Moves the calling process into a mount namespace of its own whose mounts propagate
/// nowhere: whatever it (or a child started later) mounts is gone when the last process in
/// the namespace exits, however it exits. Needs CAP_SYS_ADMIN and a single-threaded process.
pub fn private_mount_namespace() -> io::Result<()> {
    // SAFETY: unshare takes a plain flag word.
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
        return Err(last_error("unshare(CLONE_NEWNS)"));
    }
    // SAFETY: the strings are NUL-terminated literals; a null source, type and data are
    // allowed for a propagation change.
    let r = unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(last_error("mount(/, MS_REC|MS_PRIVATE)"));
    }
    Ok(())
}

/// Mounts a tmpfs of at most `size_bytes` on `dir`, mode 0700.
pub fn mount_tmpfs(dir: &Path, size_bytes: u64) -> io::Result<()> {
    let target = c_path(dir)?;
    let data = CString::new(format!("size={size_bytes},mode=0700")).expect("no NUL");
    // SAFETY: every pointer is a NUL-terminated string that outlives the call.
    let r = unsafe {
        libc::mount(
            c"oscost-tmpfs".as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            data.as_ptr().cast(),
        )
    };
    if r != 0 {
        return Err(last_error("mount(tmpfs)"));
    }
    Ok(())
}

/// Unmounts whatever is mounted on `dir`, lazily (`MNT_DETACH`): it is gone from the tree at
/// once and freed when no one uses it any more.
pub fn unmount(dir: &Path) -> io::Result<()> {
    let target = c_path(dir)?;
    // SAFETY: target is a NUL-terminated path.
    if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } != 0 {
        return Err(last_error("umount2"));
    }
    Ok(())
}

/// The `f_type` magic number of the file system `path` is on (see `statfs(2)`).
pub fn fs_type(path: &Path) -> io::Result<i64> {
    let p = c_path(path)?;
    // SAFETY: statfs is plain data, written by the kernel.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: p is NUL-terminated; st is writable.
    if unsafe { libc::statfs(p.as_ptr(), &mut st) } != 0 {
        return Err(last_error("statfs"));
    }
    Ok(st.f_type as i64)
}

/// The effective user id: 0 for root.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid takes no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_shm_is_told_apart_from_proc() {
        if let Ok(t) = fs_type(Path::new("/dev/shm")) {
            assert_eq!(t, TMPFS_MAGIC);
        }
        assert_ne!(fs_type(Path::new("/proc")).unwrap(), TMPFS_MAGIC);
        assert!(fs_type(Path::new("/no/such/dir")).is_err());
    }
}
