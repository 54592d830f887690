//! Writing result files so that a reader never sees half a file.

use anyhow::Context as _;
use std::io::Write;
use std::path::Path;

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Fails now, before any measuring, if `path` could not be written later.
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    if path.is_dir() {
        anyhow::bail!("{} is a directory, not a file", path.display());
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

/// Writes `contents` to a temporary file beside `path` and renames it into place.
pub fn write_atomic(path: &Path, contents: &str) -> anyhow::Result<()> {
    let mut tmp = tempfile::NamedTempFile::new_in(parent_of(path))
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.write_all(contents.as_bytes())
        .and_then(|_| tmp.as_file().sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("replacing {}", path.display()))?;
    Ok(())
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
    fn unwritable_paths_are_refused_up_front() {
        assert!(check_writable(Path::new("/nonexistent-dir/x.json")).is_err());
        let dir = tempfile::tempdir().unwrap();
        assert!(check_writable(dir.path()).is_err());
        assert!(check_writable(&dir.path().join("ok.json")).is_ok());
    }
}
