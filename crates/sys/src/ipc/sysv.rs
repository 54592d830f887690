//! SysV semaphore sets outlive the process that made them: a hook records each one a link
//! creates, and whoever cleans up after a killed run removes it.

use crate::last_error;
use std::io;
use std::sync::OnceLock;

/// What [`on_sysv_sem_created`] installs: called with a SysV semaphore set's id.
pub type SysvSemHook = Box<dyn Fn(libc::c_int) -> io::Result<()> + Send + Sync>;

pub(super) static SYSV_SEM_CREATED: OnceLock<SysvSemHook> = OnceLock::new();

/// Installs `hook`, called with the id of every SysV semaphore set [`Link::new`] creates in
/// this process from now on, right after `semget` and before the set is used. A SysV set
/// outlives the process that made it: the hook lets the caller record it somewhere that
/// survives a `kill -9`, and [`remove_sysv_sem`] removes it later. If the hook fails, the set
/// is removed at once and `Link::new` returns the error. One hook per process; a second
/// call returns `Err(AlreadyExists)` and leaves the first in place.
///
/// [`Link::new`]: super::Link::new
pub fn on_sysv_sem_created(hook: SysvSemHook) -> io::Result<()> {
    SYSV_SEM_CREATED.set(hook).map_err(|_| {
        io::Error::new(
            io::ErrorKind::AlreadyExists,
            "a SysV semaphore hook is already installed",
        )
    })
}

/// Removes SysV semaphore set `id` if it still exists and is a private (`IPC_PRIVATE`) set
/// created by this effective user, as every set [`Link::new`] makes is. `Ok(true)`: removed;
/// `Ok(false)`: already gone (`EINVAL`, `EIDRM`), or the id now names a set that is not one of
/// ours (the kernel reused it), which is left alone.
///
/// [`Link::new`]: super::Link::new
pub fn remove_sysv_sem(id: libc::c_int) -> io::Result<bool> {
    if id < 0 {
        return Ok(false);
    }
    let gone = |e: &io::Error| matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EIDRM));
    // SAFETY: semid_ds is plain data; zeroed is a valid value for IPC_STAT to overwrite.
    let mut ds: libc::semid_ds = unsafe { std::mem::zeroed() };
    // SAFETY: IPC_STAT's fourth argument is a pointer to a semid_ds, valid and writable for
    // the call's duration.
    let r = unsafe { libc::semctl(id, 0, libc::IPC_STAT, &mut ds as *mut libc::semid_ds) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if gone(&e) || e.raw_os_error() == Some(libc::EACCES) {
            // Gone, or readable only by someone else: not a set this user made.
            return Ok(false);
        }
        return Err(last_error("semctl(IPC_STAT)"));
    }
    // SAFETY: geteuid has no arguments and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if ds.sem_perm.__key != libc::IPC_PRIVATE || ds.sem_perm.cuid != euid {
        return Ok(false);
    }
    // SAFETY: plain integers; IPC_RMID takes no fourth argument.
    if unsafe { libc::semctl(id, 0, libc::IPC_RMID) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if gone(&e) {
        Ok(false)
    } else {
        Err(last_error("semctl(IPC_RMID)"))
    }
}
