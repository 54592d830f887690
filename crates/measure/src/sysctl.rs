//! Settings under /proc/sys that an experiment changes for its run, and how they always go back.
//!
//! Before a setting is written, its value before and the process changing it are recorded in a
//! file of the settings directory ([`settings_dir`]: `/run/oscost`, or a private directory in
//! the temporary directory where `/run` cannot be written), written atomically and synced, so
//! the record survives a `kill -9` of every oscost process. Every change and every restore
//! happens under an exclusive `flock` of the directory's `lock` file.
//!
//! - The record holds the value before the first oscost run changed it, and every live oscost
//!   process that has changed it since ("holders"). A run that changes a setting another live
//!   oscost holds joins the holders: the value before stays the first run's, never the other
//!   run's value.
//! - A holder that is done ([`SysctlRestore`] dropped, on every way out of the experiment)
//!   leaves the holders; the last one out writes the value before back and removes the record.
//! - A holder that died without leaving (it was killed) is dropped by the next [`sweep`]: the
//!   coordinator sweeps after each measuring process ends and when a run starts, so the value
//!   before is back as soon as no live oscost holds the setting.
//!
//! A holder is a pid with its start time, so a pid the kernel handed to another process since
//! does not count as alive.

use crate::context::Context;
use oscost_model::case::ExperimentOutput;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The SCHED_RR time slice, ms.
pub(crate) const RR_TIMESLICE: &str = "/proc/sys/kernel/sched_rr_timeslice_ms";

/// The environment variable that names the settings directory (the coordinator gives its own
/// to each measuring process, whose temporary directory is the run's).
pub const SETTINGS_DIR_ENV: &str = "OSCOST_SETTINGS_DIR";

/// Where records live when `/run` can be written: a machine-wide place, emptied at boot (when
/// every setting is back at its default anyway).
const RUN_SETTINGS_DIR: &str = "/run/oscost";

/// A setting's value, without the trailing newline.
pub(crate) fn read_trim(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_owned())
}

/// The settings directory: [`SETTINGS_DIR_ENV`] if set, else `/run/oscost` when `/run` is
/// writable, else `oscost-settings-<euid>` in the temporary directory. Not created here.
pub fn settings_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(SETTINGS_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let run = Path::new(RUN_SETTINGS_DIR);
    let parent_writable = fs::metadata("/run").is_ok_and(|m| {
        let euid = oscost_sys::sysinfo::uids().1;
        m.is_dir() && (euid == 0 || (m.uid() == euid && m.mode() & 0o200 != 0))
    });
    if run.is_dir() || parent_writable {
        return run.to_owned();
    }
    std::env::temp_dir().join(format!("oscost-settings-{}", oscost_sys::sysinfo::uids().1))
}

/// A process that changed a setting: its pid and its start time (clock ticks after boot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder {
    /// The process id.
    pub pid: u32,
    start: u64,
}

/// A running process's start time, field 22 of `/proc/PID/stat`; `None` for a process that
/// is gone or has ended and waits to be reaped (a zombie).
fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count after the last `)`.
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    if matches!(fields.next()?, "Z" | "X" | "x") {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

impl Holder {
    /// This process.
    pub fn this_process() -> Option<Holder> {
        let pid = std::process::id();
        Some(Holder {
            pid,
            start: start_time(pid)?,
        })
    }

    /// Whether the process still runs (the same process, not a later one with its pid).
    fn alive(&self) -> bool {
        start_time(self.pid) == Some(self.start)
    }
}

/// One record: a setting, its value before any oscost changed it, who holds it now.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    path: PathBuf,
    original: String,
    holders: Vec<Holder>,
}

impl Record {
    fn to_text(&self) -> String {
        let mut s = format!("path {}\noriginal {}\n", self.path.display(), self.original);
        for h in &self.holders {
            s.push_str(&format!("holder {} {}\n", h.pid, h.start));
        }
        s
    }

    fn parse(text: &str) -> Option<Record> {
        let mut path = None;
        let mut original = None;
        let mut holders = Vec::new();
        for line in text.lines() {
            let (key, value) = line.split_once(' ')?;
            match key {
                "path" => path = Some(PathBuf::from(value)),
                "original" => original = Some(value.to_owned()),
                "holder" => {
                    let (pid, start) = value.split_once(' ')?;
                    holders.push(Holder {
                        pid: pid.parse().ok()?,
                        start: start.parse().ok()?,
                    });
                }
                _ => return None,
            }
        }
        Some(Record {
            path: path?,
            original: original?,
            holders,
        })
    }
}

/// The record file of the setting at `path`: its name under `/proc/sys`, dotted the way
/// sysctl(8) names it (`kernel.sched_rr_timeslice_ms.setting`).
fn record_file(dir: &Path, path: &Path) -> PathBuf {
    let name = path
        .strip_prefix("/proc/sys")
        .unwrap_or(path)
        .to_string_lossy()
        .trim_start_matches('/')
        .replace('/', ".");
    dir.join(format!("{name}.setting"))
}

/// The settings directory, created (mode 0700) if `create`, locked until the value is dropped.
/// A directory that is a link, belongs to another user or that others may write is refused:
/// a record there could name a file for oscost to write.
fn lock_dir(dir: &Path, create: bool) -> io::Result<Option<fs::File>> {
    if create {
        match fs::DirBuilder::new().mode(0o700).create(dir) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    let meta = match fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
        Err(e) => return Err(e),
    };
    let euid = oscost_sys::sysinfo::uids().1;
    if !meta.is_dir() || meta.uid() != euid || meta.mode() & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "not a directory of this user's that only it may write",
        ));
    }
    let lock = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(dir.join("lock"))?;
    lock.lock()?;
    Ok(Some(lock))
}

fn read_record(file: &Path) -> io::Result<Option<Record>> {
    match fs::read_to_string(file) {
        Ok(text) => Record::parse(&text)
            .map(Some)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not a record oscost wrote")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes the record whole or not at all, synced before it is in place (and the directory
/// after), so a crash at any instant leaves the old record or the new one.
fn write_record(file: &Path, record: &Record) -> io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let tmp = file.with_extension("setting.tmp");
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    let written = f
        .write_all(record.to_text().as_bytes())
        .and_then(|()| f.sync_all())
        .and_then(|()| fs::rename(&tmp, file));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written?;
    fs::File::open(dir)?.sync_all()
}

fn remove_record(file: &Path) -> io::Result<()> {
    fs::remove_file(file)?;
    if let Some(dir) = file.parent() {
        fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Writes `value` to the setting at `path`.
fn write_setting(path: &Path, value: &str) -> io::Result<()> {
    fs::write(path, format!("{value}\n"))
}

/// What taking a setting found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Taken {
    /// The value before any oscost run changed it.
    pub original: String,
    /// Other live oscost processes that have it changed too.
    pub others: Vec<u32>,
    /// An earlier holder was killed and its change was first put back (its value before).
    pub put_back: bool,
}

/// Records `me` as a holder of the setting at `path` (and its value before, if no live oscost
/// holds it), then writes `value` to it. The record is in place before the write; a write
/// that fails takes `me` out again.
pub(crate) fn take(dir: &Path, path: &Path, value: &str, me: Holder) -> io::Result<Taken> {
    let _lock = lock_dir(dir, true)?;
    let file = record_file(dir, path);
    let mut put_back = false;
    let mut record = match read_record(&file)? {
        Some(mut r) => {
            r.holders.retain(|h| h.alive() && *h != me);
            if r.holders.is_empty() {
                // Left changed by a run that was killed: its value before is the real one.
                write_setting(path, &r.original)?;
                put_back = true;
            }
            r
        }
        None => Record {
            path: path.to_owned(),
            original: read_trim(path).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{} cannot be read", path.display()),
                )
            })?,
            holders: Vec::new(),
        },
    };
    let others = record.holders.iter().map(|h| h.pid).collect();
    record.holders.push(me);
    write_record(&file, &record)?;
    if let Err(e) = write_setting(path, value) {
        record.holders.retain(|h| *h != me);
        if record.holders.is_empty() {
            remove_record(&file)?;
        } else {
            write_record(&file, &record)?;
        }
        return Err(e);
    }
    Ok(Taken {
        original: record.original,
        others,
        put_back,
    })
}

/// Takes `me` out of the holders of the setting at `path`; the last live holder out writes
/// the value before back and removes the record. Returns the value put back, if it was.
pub(crate) fn give_back(dir: &Path, path: &Path, me: Holder) -> io::Result<Option<String>> {
    let Some(_lock) = lock_dir(dir, false)? else {
        return Ok(None);
    };
    let file = record_file(dir, path);
    let Some(mut record) = read_record(&file)? else {
        return Ok(None);
    };
    record.holders.retain(|h| h.alive() && *h != me);
    if record.holders.is_empty() {
        write_setting(path, &record.original)?;
        remove_record(&file)?;
        Ok(Some(record.original))
    } else {
        write_record(&file, &record)?;
        Ok(None)
    }
}

/// The record file of a mount oscost made on `mountpoint`: `sys.kernel.tracing.mount`.
fn mount_file(dir: &Path, mountpoint: &Path) -> PathBuf {
    let name = mountpoint
        .to_string_lossy()
        .trim_start_matches('/')
        .replace('/', ".");
    dir.join(format!("{name}.mount"))
}

/// A record in the settings directory of something this process made (a mount, a cgroup, an
/// ftrace instance), so that if the process is killed before it undoes it, the next oscost run
/// does (see [`sweep`]). Dropped after the undoing: the record goes.
pub struct HeldRecord {
    dir: PathBuf,
    file: PathBuf,
}

impl Drop for HeldRecord {
    fn drop(&mut self) {
        if let Ok(Some(_lock)) = lock_dir(&self.dir, false) {
            let _ = remove_record(&self.file);
        }
    }
}

/// A mount this process made (see [`HeldRecord`]).
pub(crate) type MountRecord = HeldRecord;

/// Writes the record `file` of `path`, whose kind is `original`, held by `me`.
fn hold(
    dir: &Path,
    file: PathBuf,
    path: &Path,
    original: &str,
    me: Holder,
) -> io::Result<HeldRecord> {
    let _lock = lock_dir(dir, true)?;
    let record = Record {
        path: path.to_owned(),
        original: original.to_owned(),
        holders: vec![me],
    };
    write_record(&file, &record)?;
    Ok(HeldRecord {
        dir: dir.to_owned(),
        file,
    })
}

/// Records that `me` mounted a file system of type `fstype` on `mountpoint`.
pub(crate) fn record_mount(
    dir: &Path,
    mountpoint: &Path,
    fstype: &str,
    me: Holder,
) -> io::Result<MountRecord> {
    hold(dir, mount_file(dir, mountpoint), mountpoint, fstype, me)
}

/// The record file of a cgroup oscost made at `path`: `sys.fs.cgroup.cpu.oscost-1-a.cgroup`.
fn cgroup_file(dir: &Path, path: &Path) -> PathBuf {
    let name = path
        .to_string_lossy()
        .trim_start_matches('/')
        .replace('/', ".");
    dir.join(format!("{name}.cgroup"))
}

/// A cgroup directory this process is about to make, recorded in the settings directory
/// before the `mkdir` (see [`HeldRecord`]); dropped after the `rmdir`.
pub type CgroupRecord = HeldRecord;

/// Records that `me` makes the cgroup directory `path`.
pub fn record_cgroup(dir: &Path, path: &Path, me: Holder) -> io::Result<CgroupRecord> {
    hold(dir, cgroup_file(dir, path), path, "cgroup", me)
}

/// Whether `path` may be a cgroup oscost made: a directory named `oscost-…` under
/// `/sys/fs/cgroup`, with no `..` (tests pass `anywhere` for their own directories).
fn oscost_cgroup(path: &Path, anywhere: bool) -> bool {
    (anywhere || path.starts_with("/sys/fs/cgroup"))
        && path
            .components()
            .all(|c| c != std::path::Component::ParentDir)
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("oscost-"))
}

/// Removes cgroup directory `path`, waiting up to a second for the processes still in it to
/// end (a killed run's partners end as they read their pipe's end).
pub fn remove_cgroup(path: &Path) -> io::Result<()> {
    let mut tries = 0;
    loop {
        match fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => return Err(e),
        }
    }
}

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

fn sweep_in(dir: &Path, only_proc_sys: bool) -> Vec<Swept> {
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

/// What a mount record of an ftrace instance says it is (its path is the instance's
/// directory).
pub(crate) const FTRACE_INSTANCE: &str = "ftrace instance";

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

/// Puts a `/proc/sys` setting back when dropped (the last oscost holding it does).
pub(crate) struct SysctlRestore {
    dir: PathBuf,
    path: PathBuf,
    me: Holder,
}

impl Drop for SysctlRestore {
    fn drop(&mut self) {
        // Failing here leaves the record: the coordinator's sweep tries again.
        let _ = give_back(&self.dir, &self.path, self.me);
    }
}

/// Writes `value` to the setting at `path` for the run, its value before recorded first;
/// where that is not possible, records a warning and goes on with the setting as it is.
pub(crate) fn set_sysctl(
    path: &Path,
    value: u64,
    option: &str,
    _ctx: &Context<'_>,
    out: &mut ExperimentOutput,
) -> Option<SysctlRestore> {
    let shown = path.display();
    let Some(original) = read_trim(path) else {
        out.warnings
            .push(format!("{option} {value} not in force: {shown} cannot be read").into());
        return None;
    };
    if !path_writable(path) {
        out.warnings.push(
            format!(
                "{option} {value} not in force: {shown} may not be written by this user (it needs \
             root); the kernel's {original} ms was used"
            )
            .into(),
        );
        return None;
    }
    let Some(me) = Holder::this_process() else {
        out.warnings.push(
            format!(
                "{option} {value} not in force: this process's start time cannot be read, so its \
             change of {shown} could not be put back if it were killed"
            )
            .into(),
        );
        return None;
    };
    let dir = settings_dir();
    match take(&dir, path, &value.to_string(), me) {
        Ok(taken) => {
            if !taken.others.is_empty() {
                let pids = taken
                    .others
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                out.warnings.push(
                    format!(
                        "{option} {value}: another oscost process (pid {pids}) has {shown} \
                     changed too, so the value in force may be the other run's; the last run \
                     to end puts back {}",
                        taken.original
                    )
                    .into(),
                );
            }
            Some(SysctlRestore {
                dir,
                path: path.to_owned(),
                me,
            })
        }
        Err(e) => {
            out.warnings.push(
                format!(
                    "{option} {value} not in force: {shown} was not changed: {e} (recording its \
                 value before in {}); the kernel's {original} ms was used",
                    dir.display()
                )
                .into(),
            );
            None
        }
    }
}

/// Whether this process may write the setting (its mode bits; /proc/sys ignores ACLs).
fn path_writable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| {
        let euid = oscost_sys::sysinfo::uids().1;
        m.permissions().mode() & 0o222 != 0 && (euid == 0 || m.uid() == euid)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skip::skip;

    fn setting(dir: &Path, value: &str) -> PathBuf {
        let p = dir.join("slice");
        fs::write(&p, format!("{value}\n")).unwrap();
        p
    }

    /// A holder no live process matches: a start time this process does not have.
    fn dead() -> Holder {
        let me = Holder::this_process().unwrap();
        Holder {
            pid: me.pid,
            start: me.start + 1,
        }
    }

    #[test]
    fn a_mount_record_goes_with_its_holder_and_a_dead_ones_with_the_sweep() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("s");
        let point = Path::new("/nonexistent/oscost-test");
        let me = Holder::this_process().unwrap();
        let r = record_mount(&d, point, "tracefs", me).unwrap();
        let file = d.join("nonexistent.oscost-test.mount");
        assert!(file.exists());
        // A live holder's mount is not touched.
        assert!(sweep(&d).is_empty());
        drop(r);
        assert!(!file.exists());
        // A killed holder's record of a mount that is gone is removed without a word.
        drop(record_mount(&d, point, "tracefs", dead()).map(std::mem::forget));
        assert!(file.exists());
        assert!(sweep(&d).is_empty());
        assert!(!file.exists());
    }

    /// A killed run's ftrace instance is removed by the sweep (where one can be made here).
    #[test]
    fn a_dead_runs_ftrace_instance_is_swept() {
        let fs = match oscost_sys::ktrace::Tracefs::open() {
            Ok(fs) => fs,
            Err(e) => return skip(&format!("needs tracefs: {e}")),
        };
        let inst = fs.root().join("instances").join("oscost-sweep-test");
        if std::fs::create_dir(&inst).is_err() {
            return skip("needs an ftrace instance, which cannot be made here");
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("s");
        drop(record_mount(&d, &inst, FTRACE_INSTANCE, dead()).map(std::mem::forget));
        let swept = sweep(&d);
        assert_eq!(swept.len(), 1, "{swept:?}");
        assert!(swept[0].error.is_none(), "{swept:?}");
        assert!(swept[0]
            .summary()
            .starts_with("removed the ftrace instance"));
        assert!(!inst.exists());
        assert!(sweep(&d).is_empty());
    }

    #[test]
    fn a_killed_runs_cgroup_is_removed_by_the_sweep_and_said() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("s");
        // A plain directory stands in for the cgroup: rmdir removes both alike.
        let cg = dir.path().join("oscost-1-a");
        let me = Holder::this_process().unwrap();
        let r = record_cgroup(&d, &cg, me).unwrap();
        fs::create_dir(&cg).unwrap();
        assert!(
            sweep_in(&d, false).is_empty(),
            "a live holder's cgroup is kept"
        );
        assert!(cg.exists());
        drop(r);
        drop(record_cgroup(&d, &cg, dead()).map(std::mem::forget));
        let swept = sweep_in(&d, false);
        assert_eq!(swept.len(), 1);
        assert!(swept[0].cgroup && swept[0].error.is_none());
        assert!(
            swept[0].summary().starts_with("removed the cgroup"),
            "{}",
            swept[0].summary()
        );
        assert!(!cg.exists());
        assert!(
            sweep_in(&d, false).is_empty(),
            "the record went with the directory"
        );
        // The real sweep touches only oscost's own cgroups under /sys/fs/cgroup.
        let other = dir.path().join("not-ours");
        fs::create_dir(&other).unwrap();
        drop(record_cgroup(&d, &other, dead()).map(std::mem::forget));
        let swept = sweep(&d);
        assert!(swept[0].error.is_some());
        assert!(other.exists());
    }

    #[test]
    fn records_round_trip() {
        let r = Record {
            path: "/proc/sys/kernel/x".into(),
            original: "100".into(),
            holders: vec![Holder { pid: 7, start: 9 }],
        };
        assert_eq!(Record::parse(&r.to_text()), Some(r));
        assert_eq!(Record::parse("garbage\n"), None);
        assert_eq!(
            record_file(Path::new("/run/oscost"), Path::new(RR_TIMESLICE)),
            Path::new("/run/oscost/kernel.sched_rr_timeslice_ms.setting")
        );
    }

    #[test]
    fn the_holder_puts_it_back_and_leaves_no_record() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        let s = setting(tmp.path(), "100");
        let me = Holder::this_process().unwrap();
        let t = take(&dir, &s, "1", me).unwrap();
        assert_eq!(t.original, "100");
        assert_eq!(read_trim(&s).unwrap(), "1");
        assert!(record_file(&dir, &s).exists());
        assert_eq!(give_back(&dir, &s, me).unwrap().as_deref(), Some("100"));
        assert_eq!(read_trim(&s).unwrap(), "100");
        assert!(!record_file(&dir, &s).exists());
    }

    /// A holder killed before it put the setting back: the next sweep does, once.
    #[test]
    fn a_killed_holders_change_is_put_back_by_the_next_sweep() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        let s = setting(tmp.path(), "100");
        take(&dir, &s, "1", dead()).unwrap();
        assert_eq!(read_trim(&s).unwrap(), "1");
        let swept = sweep_in(&dir, false);
        assert_eq!(swept.len(), 1);
        assert_eq!(swept[0].original, "100");
        assert_eq!(swept[0].error, None);
        assert_eq!(read_trim(&s).unwrap(), "100");
        assert!(sweep_in(&dir, false).is_empty());
        // A record naming a file outside /proc/sys is never written by the real sweep.
        take(&dir, &s, "1", dead()).unwrap();
        let swept = sweep(&dir);
        assert!(swept[0].error.is_some());
        assert_eq!(read_trim(&s).unwrap(), "1");
    }

    /// Two overlapping runs: the second never takes the first's value as the one before,
    /// the first to end leaves it changed for the other, the last puts back the first value.
    #[test]
    fn overlapping_holders_end_at_the_first_value() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        let s = setting(tmp.path(), "100");
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let b = Holder {
            pid: other.id(),
            start: start_time(other.id()).unwrap(),
        };
        let me = Holder::this_process().unwrap();
        take(&dir, &s, "5", me).unwrap();
        let t = take(&dir, &s, "1", b).unwrap();
        assert_eq!(t.original, "100");
        assert_eq!(t.others, vec![me.pid]);
        assert_eq!(give_back(&dir, &s, me).unwrap(), None);
        assert_eq!(read_trim(&s).unwrap(), "1");
        // The other is still alive: a sweep leaves it alone.
        assert!(sweep_in(&dir, false).is_empty());
        assert_eq!(read_trim(&s).unwrap(), "1");
        // It is killed: the setting goes back to the first value.
        other.kill().unwrap();
        other.wait().unwrap();
        let swept = sweep_in(&dir, false);
        assert_eq!(swept[0].dead, vec![b.pid]);
        assert_eq!(read_trim(&s).unwrap(), "100");
    }

    /// A run that starts after a killed one takes the killed run's value before, not the
    /// value the killed run left.
    #[test]
    fn taking_after_a_killed_holder_keeps_the_real_value_before() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        let s = setting(tmp.path(), "100");
        take(&dir, &s, "5", dead()).unwrap();
        let me = Holder::this_process().unwrap();
        let t = take(&dir, &s, "1", me).unwrap();
        assert_eq!(t.original, "100");
        assert!(t.put_back);
        assert!(t.others.is_empty());
        give_back(&dir, &s, me).unwrap();
        assert_eq!(read_trim(&s).unwrap(), "100");
    }

    #[test]
    fn a_directory_others_may_write_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        let s = setting(tmp.path(), "100");
        assert!(take(&dir, &s, "1", Holder::this_process().unwrap()).is_err());
        assert_eq!(read_trim(&s).unwrap(), "100");
    }
}
