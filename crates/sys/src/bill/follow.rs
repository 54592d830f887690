//! The attached process's descendants already running when the probe was attached, followed
//! from user space: each thread group id put in the hash of followed processes, with its
//! threads alive, as the programs put a process the program made once they ran — so its
//! threads' events are the program's from then on, and its id is forgotten with its last
//! thread's final switch, as theirs is.

use super::{Probe, Scope, CTL_BYTES, C_ANY};
use crate::bpf::{bpf, put32, put64};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

const MAP_UPDATE_ELEM: libc::c_long = 2;
const MAP_DELETE_ELEM: libc::c_long = 3;
const NOEXIST: u64 = 1;

/// Puts `key` → `value` in hash map `fd` unless it has `key` already: false then.
fn map_insert(fd: &OwnedFd, key: u32, value: u64) -> io::Result<bool> {
    let k = key.to_ne_bytes();
    let v = value.to_ne_bytes();
    let mut attr = [0u8; 128];
    put32(&mut attr, 0, fd.as_raw_fd() as u32);
    put64(&mut attr, 8, k.as_ptr() as u64);
    put64(&mut attr, 16, v.as_ptr() as u64);
    put64(&mut attr, 24, NOEXIST);
    match bpf(MAP_UPDATE_ELEM, &mut attr) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Removes `key` from hash map `fd` (gone already: nothing to do).
fn map_delete(fd: &OwnedFd, key: u32) -> io::Result<()> {
    let k = key.to_ne_bytes();
    let mut attr = [0u8; 128];
    put32(&mut attr, 0, fd.as_raw_fd() as u32);
    put64(&mut attr, 8, k.as_ptr() as u64);
    match bpf(MAP_DELETE_ELEM, &mut attr) {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The threads of process `tgid` that have not exited (a zombie thread group leader, gone
/// through its final switch already, is not one); None when there is no such process.
fn live_threads(tgid: u32) -> Option<u64> {
    let dir = std::fs::read_dir(format!("/proc/{tgid}/task")).ok()?;
    let live = dir
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("stat")).is_ok_and(|s| {
                s.rfind(')')
                    .and_then(|i| s[i + 1..].split_whitespace().next())
                    .is_some_and(|st| st != "Z" && st != "X")
            })
        })
        .count();
    Some(live as u64)
}

impl Probe {
    /// Follows process `tgid`, a descendant of the attached process already running when the
    /// probe was attached, as the programs follow one the program makes: its threads' events,
    /// and those of the processes it makes from now on, are the program's, until its last
    /// thread ends. Called after [`Probe::attach`], on each descendant before its children are
    /// looked for: a child made after this call is followed as any newborn is, one made before
    /// is in its parent's list. True when it is followed now; false when it was already (a
    /// process made since attaching, or given twice), or has ended. Only a probe of
    /// [`Scope::Process`] follows processes.
    pub fn follow(&self, tgid: u32) -> io::Result<bool> {
        let Scope::Process(pid) = self.scope else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "only a probe of a process follows other processes",
            ));
        };
        if tgid == pid || tgid == 0 {
            return Ok(false);
        }
        // Its threads alive, each one counted down at its final switch (the key deleted at
        // zero, as for a process the programs adopted); a thread it makes from the insertion
        // on is counted up by the programs.
        let Some(threads) = live_threads(tgid).filter(|&n| n > 0) else {
            return Ok(false);
        };
        if !map_insert(&self.followed, tgid, threads)? {
            return Ok(false);
        }
        self.any_followed()?;
        // Ended between the count and the insertion, its last switch went unseen: its key would
        // outlive it, and bill a process given its id afterwards.
        if live_threads(tgid).is_none_or(|n| n == 0) {
            map_delete(&self.followed, tgid)?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Sets the word that makes the programs look a foreign task up in the followed ones
    /// (they skip the lookup while no process but the attached one is followed). Written in
    /// place through a mapping of the array, one atomic store: the word beside it is counted
    /// up and down by the programs meanwhile, and an update of the whole value could lose one
    /// of their counts.
    fn any_followed(&self) -> io::Result<()> {
        use std::os::fd::AsFd;
        // The one-entry array `ctl`, mmap-able, whole pages of it (what the kernel allows).
        let (p, len) = crate::map_shared(self.ctl.as_fd(), CTL_BYTES)?;
        // SAFETY: the word at C_ANY lies within the mapping (CTL_BYTES ≤ len), 8-byte aligned
        // (the mapping is page-aligned, C_ANY a multiple of 8) and valid for as long as the
        // mapping, which outlives this use; the programs access it only as a whole 8-byte word.
        let any = unsafe { AtomicU64::from_ptr(p.cast::<u8>().add(C_ANY as usize).cast()) };
        any.store(1, Ordering::SeqCst);
        // SAFETY: p and len are the mapping made above, unmapped once, no reference to it left.
        unsafe { libc::munmap(p, len) };
        Ok(())
    }

    /// The processes followed now besides the attached one.
    #[cfg(test)]
    pub(super) fn followed_now(&self) -> io::Result<Vec<u32>> {
        let mut keys = Vec::new();
        let mut key = None;
        while let Some(k) = super::next_key(&self.followed, key)? {
            keys.push(k);
            key = Some(k);
        }
        Ok(keys)
    }
}
