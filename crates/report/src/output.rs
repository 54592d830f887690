//! Writing result files so that a reader never sees half a file, and a failed run leaves none.

use anyhow::Context as _;
use std::io::Write;
use std::path::{Path, PathBuf};

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// An existing target that is not a regular file (a device such as `/dev/null`, a FIFO, a
/// link to one): written in place, never replaced by a rename.
pub fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Fails now, before any measuring, if `path` could not be written later.
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    if path.is_dir() {
        anyhow::bail!("{} is a directory, not a file", path.display());
    }
    if is_special(path) {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        return Ok(());
    }
    let dir = parent_of(path);
    if !dir.is_dir() {
        anyhow::bail!(
            "cannot write {}: directory {} does not exist",
            path.display(),
            dir.display()
        );
    }
    if let Err(e) = tempfile::NamedTempFile::new_in(dir) {
        // tempfile's error names its random file; the user needs the directory and the reason.
        let reason = e.raw_os_error().map_or(e.kind().to_string(), |c| {
            std::io::Error::from_raw_os_error(c).to_string()
        });
        anyhow::bail!(
            "cannot write {}: directory {} is not writable ({reason})",
            path.display(),
            dir.display()
        );
    }
    Ok(())
}

/// A file written in full but not yet in place: [`Staged::commit`] renames it over its target.
/// Dropped uncommitted, it vanishes, so a run that fails later leaves no result file.
pub struct Staged {
    target: PathBuf,
    tmp: Option<tempfile::NamedTempFile>,
}

impl Staged {
    /// Puts the file in place.
    pub fn commit(self) -> anyhow::Result<()> {
        if let Some(tmp) = self.tmp {
            tmp.persist(&self.target)
                .with_context(|| format!("replacing {}", self.target.display()))?;
        }
        Ok(())
    }
}

/// Writes `contents` beside `path`, ready to be put in place. A special file (a device, a
/// FIFO) is written directly instead, since it cannot be replaced and holds no half file.
pub fn stage(path: &Path, contents: &str) -> anyhow::Result<Staged> {
    if is_special(path) {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| f.write_all(contents.as_bytes()))
            .with_context(|| format!("writing {}", path.display()))?;
        return Ok(Staged {
            target: path.to_owned(),
            tmp: None,
        });
    }
    let mut tmp = tempfile::NamedTempFile::new_in(parent_of(path))
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.write_all(contents.as_bytes())
        .and_then(|_| tmp.as_file().sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(Staged {
        target: path.to_owned(),
        tmp: Some(tmp),
    })
}

/// Writes `contents` to a temporary file beside `path` and renames it into place.
pub fn write_atomic(path: &Path, contents: &str) -> anyhow::Result<()> {
    stage(path, contents)?.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        write_atomic(&p, "first").unwrap();
        write_atomic(&p, "second").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "second");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_uncommitted_stage_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        drop(stage(&p, "never").unwrap());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn special_files_are_written_in_place_not_replaced() {
        let null = Path::new("/dev/null");
        check_writable(null).unwrap();
        write_atomic(null, "discarded").unwrap();
        assert!(!std::fs::metadata(null).unwrap().is_file());
        // /dev/full accepts the open but fails the write: an error, not a replaced device.
        let full = Path::new("/dev/full");
        assert!(write_atomic(full, "x").is_err());
        assert!(!std::fs::metadata(full).unwrap().is_file());
    }

    #[test]
    fn unwritable_paths_are_refused_up_front() {
        assert!(check_writable(Path::new("/nonexistent-dir/x.json")).is_err());
        let dir = tempfile::tempdir().unwrap();
        assert!(check_writable(dir.path()).is_err());
        assert!(check_writable(&dir.path().join("ok.json")).is_ok());
    }
}
