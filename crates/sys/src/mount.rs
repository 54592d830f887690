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

/// Bytes this user may still write on the file system `path` is on (`f_bavail` blocks of
/// `statfs(2)`: without the blocks reserved for root).
pub fn free_bytes(path: &Path) -> io::Result<u64> {
    let p = c_path(path)?;
    // SAFETY: statfs is plain data, written by the kernel.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: p is NUL-terminated; st is writable.
    if unsafe { libc::statfs(p.as_ptr(), &mut st) } != 0 {
        return Err(last_error("statfs"));
    }
    Ok((st.f_bavail as u64).saturating_mul(st.f_bsize as u64))
}

/// One mount of this process's mount table (`/proc/self/mountinfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    /// Where it is mounted, its octal escapes (`\040` for a space, `\011` for a tab) decoded.
    pub dir: std::path::PathBuf,
    /// The file system type, e.g. `tracefs`, `fuse.oscost`.
    pub fstype: String,
    /// The device number of its superblock as the kernel names it (`(major << 20) | minor`):
    /// a FUSE mount's connection is `/sys/fs/fuse/connections/<dev>`.
    pub dev: u64,
}

/// A mount table field with the kernel's octal escapes (`\ooo`, used for a space, tab,
/// newline and backslash) decoded.
pub fn unescape_mount_field(field: &str) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b.get(i + 1..i + 4).filter(|d| {
            b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)) && d[0] <= b'3'
        });
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    std::path::PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// The mounts of a `/proc/PID/mountinfo` text; lines it cannot read are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|l| {
            let (before, after) = l.split_once(" - ")?;
            let mut w = before.split(' ');
            let dev = w.nth(2)?;
            let dir = w.nth(1)?;
            let (major, minor) = dev.split_once(':')?;
            let (major, minor): (u64, u64) = (major.parse().ok()?, minor.parse().ok()?);
            Some(MountEntry {
                dir: unescape_mount_field(dir),
                fstype: after.split(' ').next()?.to_owned(),
                dev: (major << 20) | minor,
            })
        })
        .collect()
}

/// This process's mount table (empty if it cannot be read).
pub fn mounts() -> Vec<MountEntry> {
    parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
}

/// Aborts the FUSE connection of the file system mounted on `dir` (through the fusectl file
/// system, `/sys/fs/fuse/connections/<dev>/abort`): every request waiting on its server fails
/// at once instead of waiting for an answer. `Ok(false)` when fusectl is not mounted or `dir`
/// holds no FUSE mount.
pub fn abort_fuse_connection(dir: &Path) -> io::Result<bool> {
    let Some(m) = mounts()
        .into_iter()
        .rev()
        .find(|m| m.dir == dir && m.fstype.starts_with("fuse"))
    else {
        return Ok(false);
    };
    let abort = Path::new("/sys/fs/fuse/connections")
        .join(m.dev.to_string())
        .join("abort");
    if !abort.exists() {
        return Ok(false);
    }
    std::fs::write(abort, "1")?;
    Ok(true)
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
    fn mount_table_lines_are_read_with_their_escapes() {
        let text = "36 35 0:52 / /sys/kernel/tracing rw,nosuid - tracefs nodev rw\n\
                    40 35 0:61 / /tmp/a\\011b\\040c\\134 rw shared:1 master:2 - fuse.oscost \
                    oscost-fuse rw,user_id=0\n\
                    41 35 259:3 / /boot rw - ext4 /dev/x rw\n\
                    garbage\n";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].dir, Path::new("/sys/kernel/tracing"));
        assert_eq!(m[0].fstype, "tracefs");
        assert_eq!(m[1].dir, Path::new("/tmp/a\tb c\\"));
        assert_eq!(m[1].fstype, "fuse.oscost");
        assert_eq!(m[1].dev, 61);
        assert_eq!(m[2].dev, (259 << 20) | 3);
        assert_eq!(unescape_mount_field("a\\9b\\"), Path::new("a\\9b\\"));
        assert!(mounts().iter().any(|m| m.dir == Path::new("/")));
    }

    #[test]
    fn dev_shm_is_told_apart_from_proc() {
        if let Ok(t) = fs_type(Path::new("/dev/shm")) {
            assert_eq!(t, TMPFS_MAGIC);
        }
        assert_ne!(fs_type(Path::new("/proc")).unwrap(), TMPFS_MAGIC);
        assert!(fs_type(Path::new("/no/such/dir")).is_err());
    }
}
