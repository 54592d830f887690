//! Private temporary directories that are removed on every way out: drop (normal end, errors,
//! a first Ctrl-C) and [`remove_all`] (an abrupt exit after a second Ctrl-C, where no drop runs).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A temporary directory known to [`remove_all`] while it exists.
pub struct ScratchDir {
    dir: tempfile::TempDir,
}

impl ScratchDir {
    /// Creates `$TMPDIR/<prefix>XXXXXX`, mode 0700: readable by this user only.
    pub fn new(prefix: &str) -> std::io::Result<ScratchDir> {
        Self::new_in(&std::env::temp_dir(), prefix)
    }

    /// Creates `<base>/<prefix>XXXXXX`, mode 0700 (the `fs` experiment's directory in
    /// /dev/shm, a tmpfs, when it cannot mount one of its own).
    pub fn new_in(base: &Path, prefix: &str) -> std::io::Result<ScratchDir> {
        use std::os::unix::fs::PermissionsExt;
        let owner_only = || std::fs::Permissions::from_mode(0o700);
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .permissions(owner_only())
            .tempdir_in(base)?;
        // The umask can only take bits away; set it exactly either way.
        std::fs::set_permissions(dir.path(), owner_only())?;
        live().push(dir.path().to_owned());
        Ok(ScratchDir { dir })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // Removed under the lock, so `remove_all` never sees it registered but half gone.
        let mut live = live();
        let _ = std::fs::remove_dir_all(self.dir.path());
        live.retain(|p| p != self.dir.path());
    }
}

/// Removes every live scratch directory now; for a process about to exit without unwinding.
pub fn remove_all() {
    let mut live = live();
    for p in live.drain(..) {
        // A measuring thread may still be creating files in it: retry a few times.
        for _ in 0..5 {
            if std::fs::remove_dir_all(&p).is_ok() || !p.exists() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The only test in this crate that creates scratch directories: `remove_all` would remove
    // another test's directory too.
    #[test]
    fn dropped_and_removed_directories_are_gone() {
        let a = ScratchDir::new("oscost-test-").unwrap();
        let pa = a.path().to_owned();
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&pa).unwrap().permissions().mode();
            assert_eq!(mode & 0o7777, 0o700, "{mode:o}");
        }
        drop(a);
        assert!(!pa.exists());
        let b = ScratchDir::new("oscost-test-").unwrap();
        let pb = b.path().to_owned();
        std::fs::write(pb.join("f"), "x").unwrap();
        remove_all();
        assert!(!pb.exists());
        drop(b);
    }
}
