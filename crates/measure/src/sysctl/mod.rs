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

mod sweep;

use crate::context::Context;
use oscost_model::case::ExperimentOutput;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub use sweep::{sweep, Swept};
// The tests sweep directories of their own, outside /proc/sys.
#[cfg(test)]
use sweep::sweep_in;

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

/// What a mount record of an ftrace instance says it is (its path is the instance's
/// directory).
pub(crate) const FTRACE_INSTANCE: &str = "ftrace instance";

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
mod tests;
