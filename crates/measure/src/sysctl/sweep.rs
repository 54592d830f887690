//! Putting back what killed runs left: every record of the settings directory whose
//! holders are all gone is undone (a setting written back, a mount unmounted, an ftrace
//! instance or a cgroup removed) and the record removed.

use super::*;

/// A cgroup record whose holder is gone: the directory removed if it is still there, then the
/// record.
fn sweep_cgroup(file: &Path, only_sys_fs_cgroup: bool) -> Option<Swept> {
    let record = read_record(file).ok()??;
    if record.holders.iter().any(Holder::alive) {
        return None;
    }
    let dead = record.holders.iter().map(|h| h.pid).collect();
    let still = record.path.is_dir();
    let result = if !oscost_cgroup(&record.path, !only_sys_fs_cgroup) {
        Err("not a cgroup oscost makes".to_owned())
    } else if still {
        remove_cgroup(&record.path).map_err(|e| e.to_string())
    } else {
        Ok(())
    };
    if result.is_ok() {
        let _ = remove_record(file);
    }
    (still || result.is_err()).then(|| Swept {
        path: record.path,
        original: record.original,
        dead,
        error: result.err(),
        mount: false,
        cgroup: true,
    })
}

/// What one [`sweep`] did about one record.
#[derive(Debug, PartialEq, Eq)]
pub struct Swept {
    /// The setting.
    pub path: PathBuf,
    /// Its value before, now written back.
    pub original: String,
    /// The pids of the holders that had died without putting it back.
    pub dead: Vec<u32>,
    /// Why it could not be put back, if it could not (the record is kept for the next sweep).
    pub error: Option<String>,
    /// A mount left by a killed run (of the file system type in `original`), not a setting.
    pub mount: bool,
    /// A cgroup directory a killed run made (`original` is `cgroup`), not a setting.
    pub cgroup: bool,
}

impl Swept {
    /// One line saying what was done.
    pub fn summary(&self) -> String {
        let pids = self
            .dead
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        if self.cgroup {
            return match &self.error {
                None => format!(
                    "removed the cgroup {} (the oscost process that made it, pid {pids}, ended \
                     before it could)",
                    self.path.display()
                ),
                Some(e) => format!(
                    "cannot remove the cgroup {} that a killed oscost left: {e}; `rmdir {}` by \
                     hand once its processes have ended",
                    self.path.display(),
                    self.path.display()
                ),
            };
        }
        if self.mount && self.original == FTRACE_INSTANCE {
            return match &self.error {
                None => format!(
                    "removed the ftrace instance {} (the oscost process that made it, pid \
                     {pids}, ended before it could)",
                    self.path.display()
                ),
                Some(e) => format!(
                    "cannot remove the ftrace instance {} that a killed oscost left: {e}; \
                     `rmdir` it by hand",
                    self.path.display()
                ),
            };
        }
        if self.mount {
            return match &self.error {
                None => format!(
                    "unmounted the {} on {} (the oscost process that mounted it, pid {pids}, \
                     ended before it could)",
                    self.original,
                    self.path.display()
                ),
                Some(e) => format!(
                    "cannot unmount the {} on {} that a killed oscost left: {e}; `umount {}` \
                     by hand",
                    self.original,
                    self.path.display(),
                    self.path.display()
                ),
            };
        }
        match &self.error {
            None => format!(
                "put {} back to {} (the oscost process that changed it, pid {pids}, ended \
                 before it could)",
                self.path.display(),
                self.original
            ),
            Some(e) => format!(
                "cannot put {} back to {}: {e}; set it by hand",
                self.path.display(),
                self.original
            ),
        }
    }
}

/// Puts back every setting of the settings directory `dir` that no live oscost process holds
/// any more, and drops the dead holders of the others. Only files under `/proc/sys` are
/// written, whatever a record says.
pub fn sweep(dir: &Path) -> Vec<Swept> {
    sweep_in(dir, true)
}

pub(super) fn sweep_in(dir: &Path, only_proc_sys: bool) -> Vec<Swept> {
    let mut swept = Vec::new();
    let Ok(Some(_lock)) = lock_dir(dir, false) else {
        return swept;
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return swept;
    };
    for entry in entries.flatten() {
        let file = entry.path();
        if file.extension() == Some("mount".as_ref()) {
            swept.extend(sweep_mount(&file));
            continue;
        }
        if file.extension() == Some("cgroup".as_ref()) {
            swept.extend(sweep_cgroup(&file, only_proc_sys));
            continue;
        }
        if file.extension() != Some("setting".as_ref()) {
            continue;
        }
        let Ok(Some(mut record)) = read_record(&file) else {
            continue;
        };
        let dead: Vec<u32> = record
            .holders
            .iter()
            .filter(|h| !h.alive())
            .map(|h| h.pid)
            .collect();
        record.holders.retain(Holder::alive);
        if !record.holders.is_empty() {
            if !dead.is_empty() {
                let _ = write_record(&file, &record);
            }
            continue;
        }
        let path = &record.path;
        let valid = !only_proc_sys
            || (path.starts_with("/proc/sys")
                && path
                    .components()
                    .all(|c| c != std::path::Component::ParentDir));
        let result = if !valid {
            Err("not a /proc/sys setting".to_owned())
        } else if read_trim(path).as_deref() == Some(record.original.as_str()) {
            Ok(false)
        } else {
            write_setting(path, &record.original)
                .map(|()| true)
                .map_err(|e| e.to_string())
        };
        if result.is_ok() {
            let _ = remove_record(&file);
        }
        if result != Ok(false) {
            swept.push(Swept {
                path: record.path,
                original: record.original,
                dead,
                error: result.err(),
                mount: false,
                cgroup: false,
            });
        }
    }
    swept.sort_by(|a, b| a.path.cmp(&b.path));
    swept
}

/// A mount record whose holder is gone: the mount unmounted if it is still there (only a
/// tracefs, whatever the record says), or the ftrace instance removed, the record removed.
fn sweep_mount(file: &Path) -> Option<Swept> {
    let record = read_record(file).ok()??;
    if record.holders.iter().any(Holder::alive) {
        return None;
    }
    let dead = record.holders.iter().map(|h| h.pid).collect();
    if record.original == FTRACE_INSTANCE {
        // Looked for by name under tracefs wherever it is (mounted for the look if it is
        // mounted nowhere, and unmounted after).
        let result = oscost_sys::ktrace::Tracefs::open()
            .map_err(|u| u.0)
            .and_then(|fs| {
                oscost_sys::ftrace::remove_instance(&fs, &record.path).map_err(|e| e.to_string())
            });
        if result.is_ok() {
            let _ = remove_record(file);
        }
        return (result != Ok(false)).then(|| Swept {
            path: record.path,
            original: record.original,
            dead,
            error: result.err(),
            mount: true,
            cgroup: false,
        });
    }
    let still =
        record.original == "tracefs" && oscost_sys::ktrace::tracefs_mounted_on(&record.path);
    let result = if still {
        oscost_sys::ktrace::unmount_tracefs(&record.path).map_err(|e| e.to_string())
    } else {
        Ok(())
    };
    if result.is_ok() {
        let _ = remove_record(file);
    }
    still.then(|| Swept {
        path: record.path,
        original: record.original,
        dead,
        error: result.err(),
        mount: true,
        cgroup: false,
    })
}
