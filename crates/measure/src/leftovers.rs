//! What an oscost run leaves behind when a process of it is killed, and how it is removed.
//!
//! A run's coordinator makes one private directory, `$TMPDIR/oscost-run-<pid>-XXXXXX` (mode
//! 0700, `<pid>` its own), gives its path to each measuring process in [`RUN_DIR_ENV`], and
//! removes it when the run ends. Files die with the directory, but a SysV semaphore set lives
//! in the kernel until someone removes it: so a measuring process appends `sysv-sem <id>` to
//! the directory's registry file ([`register_from_env`]) before it uses a set it created.
//!
//! - The coordinator removes what the registry lists after each measuring process ends
//!   ([`remove_registered`]): nothing if the process removed its sets itself, the sets of a
//!   measuring process that was killed.
//! - A coordinator that was itself killed leaves its directory behind; its measuring process
//!   dies with it (a parent-death signal). The next run finds the directory, sees from the pid
//!   in its name that its creator is gone (no such process, or one started after the directory
//!   last changed: the pid was reused), removes the sets listed and the directory
//!   ([`remove_earlier_runs`]). The process's name is not looked at: a live oscost run under
//!   another name keeps its directory.
//!
//! A set created and not yet recorded when the process is killed (the instant between `semget`
//! and the write) is the one thing this cannot catch.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The environment variable that gives a measuring process its run's directory.
pub const RUN_DIR_ENV: &str = "OSCOST_RUN_DIR";

/// How every run directory's name begins: then the coordinator's pid, `-`, random characters.
pub const RUN_DIR_PREFIX: &str = "oscost-run-";

/// The registry's file name inside a run directory.
const REGISTRY: &str = "registry";

/// Creates this process's run directory in [`std::env::temp_dir`]:
/// `oscost-run-<pid>-XXXXXX`, mode 0700, removed when the value is dropped.
pub fn new_run_dir() -> io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("{RUN_DIR_PREFIX}{}-", std::process::id()))
        .permissions(fs::Permissions::from_mode(0o700))
        .tempdir()
        // tempfile adds `at path "…"` to the error; the caller names the directory itself.
        .map_err(bare_os_error)?;
    // The umask may have taken bits away; never more than 0700 either way.
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700))?;
    Ok(dir)
}

/// The error without the ` at path "…"` tempfile appends to it.
fn bare_os_error(e: io::Error) -> io::Error {
    let text = e.to_string();
    match text.split_once(" at path \"") {
        Some((bare, _)) => io::Error::new(e.kind(), bare.to_owned()),
        None => e,
    }
}

/// How a directory this run makes outside its run directory begins (the `fs` experiment's in
/// /dev/shm): named as a run directory of the run's coordinator, so that the next run removes
/// it when that coordinator is gone. The coordinator is the one [`RUN_DIR_ENV`] names, else
/// this process.
pub fn shm_dir_prefix() -> String {
    let pid = run_dir_from_env()
        .as_deref()
        .and_then(run_dir_pid)
        .unwrap_or_else(std::process::id);
    format!("{RUN_DIR_PREFIX}{pid}-fs-")
}

/// The pid of the process that created run directory `dir`, from its name.
pub fn run_dir_pid(dir: &Path) -> Option<u32> {
    let name = dir.file_name()?.to_str()?;
    let (pid, rest) = name.strip_prefix(RUN_DIR_PREFIX)?.split_once('-')?;
    if rest.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// The registry file of run directory `dir`.
pub fn registry(dir: &Path) -> PathBuf {
    dir.join(REGISTRY)
}

/// The run directory named by [`RUN_DIR_ENV`], if this process was given one.
pub fn run_dir_from_env() -> Option<PathBuf> {
    std::env::var_os(RUN_DIR_ENV)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// In a measuring process given a run directory: records every SysV semaphore set this
/// process creates from now on in the directory's registry, before the set is used. Without
/// [`RUN_DIR_ENV`] (tests, a bare `oscost __measure`) nothing is recorded.
pub fn register_from_env() -> io::Result<()> {
    let Some(dir) = run_dir_from_env() else {
        return Ok(());
    };
    let path = registry(&dir);
    oscost_sys::ipc::on_sysv_sem_created(Box::new(move |id| append(&path, "sysv-sem", id)))
}

/// Appends one `<kind> <id>` line in a single write.
fn append(path: &Path, kind: &str, id: i32) -> io::Result<()> {
    let mut f = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(format!("{kind} {id}\n").as_bytes())
}

/// What one clean-up removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Removed {
    /// SysV semaphore sets that still existed and were removed.
    pub sysv_sems: usize,
    /// Mounts left under the run's directory (a killed FUSE server's), unmounted.
    pub mounts: usize,
    /// Objects that could not be removed, one line each.
    pub errors: Vec<String>,
}

/// Removes every object listed in the registry of run directory `dir` that still exists,
/// then empties the registry. Call it only when no process of the run still uses them.
pub fn remove_registered(dir: &Path) -> Removed {
    let path = registry(dir);
    let mut removed = Removed::default();
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return removed,
        Err(e) => {
            removed
                .errors
                .push(format!("cannot read {}: {e}", path.display()));
            return removed;
        }
    };
    let mut ids: Vec<i32> = text
        .lines()
        .filter_map(|l| l.strip_prefix("sysv-sem ")?.trim().parse().ok())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        match oscost_sys::ipc::remove_sysv_sem(id) {
            Ok(true) => removed.sysv_sems += 1,
            Ok(false) => {}
            Err(e) => removed
                .errors
                .push(format!("cannot remove SysV semaphore set {id}: {e}")),
        }
    }
    if removed.errors.is_empty() {
        // Emptied, not deleted: the next measuring process of the run appends to it.
        if let Err(e) = fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
        {
            if e.kind() != io::ErrorKind::NotFound {
                removed
                    .errors
                    .push(format!("cannot empty {}: {e}", path.display()));
            }
        }
    }
    removed
}

/// "1 SysV semaphore set", "2 SysV semaphore sets".
pub fn sysv_sets(n: usize) -> String {
    format!("{n} SysV semaphore set{}", if n == 1 { "" } else { "s" })
}

/// What [`remove_earlier_runs`] removed of one run whose coordinator is gone.
#[derive(Debug, PartialEq, Eq)]
pub struct Earlier {
    /// The dead coordinator's pid.
    pub pid: u32,
    /// What its registry listed and was removed.
    pub removed: Removed,
    /// Whether its directory was removed.
    pub dir_removed: bool,
}

impl Earlier {
    /// One line saying what was removed, if anything was.
    pub fn summary(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.removed.sysv_sems > 0 {
            parts.push(sysv_sets(self.removed.sysv_sems));
        }
        if self.removed.mounts > 0 {
            let n = self.removed.mounts;
            parts.push(format!("{n} mount{}", if n == 1 { "" } else { "s" }));
        }
        if self.dir_removed {
            parts.push("its temporary directory".to_owned());
        }
        (!parts.is_empty()).then(|| {
            format!(
                "removed what an earlier oscost run (pid {}, killed) left behind: {}",
                self.pid,
                parts.join(", ")
            )
        })
    }
}

/// Whether the process that made run directory `dir` (last changed at `changed`, seconds since
/// the epoch) may still be alive: `pid` exists and started no later than the directory last
/// changed. A pid reused by a process started after the creator died does not count; the
/// name is not looked at, since an oscost binary may be run under any name (a copy kept for
/// an A/B comparison), and removing a live run's directory would fail that run.
fn creator_alive(pid: u32, changed: i64) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    match process_start(&stat, boot_time(), oscost_sys::sysinfo::user_hz()) {
        // One second of slack for the clocks' resolution: a pid reused within a second of
        // the directory's last change keeps the directory for a later run to remove.
        Some(start) => start <= changed + 1,
        // Alive, with a start time that cannot be read: keep the directory.
        None => true,
    }
}

/// The system's boot time (`btime` of `/proc/stat`), seconds since the epoch.
fn boot_time() -> Option<i64> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// When a process started, seconds since the epoch, from its `/proc/<pid>/stat` text (field 22,
/// clock ticks since boot), the boot time and USER_HZ.
fn process_start(stat: &str, boot: Option<i64>, hz: Option<u64>) -> Option<i64> {
    // The command name (field 2) may hold spaces and parentheses: count from its last `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    let ticks: i64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    Some(boot? + ticks / hz? as i64)
}

/// The places run directories are made: the temporary directory, and /dev/shm (the `fs`
/// experiment's tmpfs directory for a user who is not root, see [`shm_dir_prefix`]).
pub fn run_dir_bases() -> Vec<PathBuf> {
    let mut bases = vec![std::env::temp_dir()];
    let shm = PathBuf::from("/dev/shm");
    if !bases.contains(&shm) {
        bases.push(shm);
    }
    bases
}

/// What a measuring process that ended (killed, or stopped mid-way by a stopped FUSE server)
/// left of `fs` for a user who is not root, whose FUSE mount lives in the machine's mount table
/// and outlives its process: every mount under the run directory `scratch`, unmounted lazily,
/// and the run's `fs` directories in /dev/shm ([`shm_dir_prefix`]), unmounted and removed.
/// Returns how many mounts went. Call it once the measuring process has ended.
pub fn sweep_after_measuring(scratch: &Path) -> usize {
    let mut gone = unmount_under(scratch);
    let prefix = format!(
        "{RUN_DIR_PREFIX}{}-fs-",
        run_dir_pid(scratch).unwrap_or_else(std::process::id)
    );
    if let Ok(entries) = fs::read_dir("/dev/shm") {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                gone += unmount_under(&e.path());
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }
    gone
}

/// Unmounts, lazily, every mount at or under `dir` in this process's mount table (deepest
/// first); returns how many went.
fn unmount_under(dir: &Path) -> usize {
    let mut under: Vec<PathBuf> = oscost_sys::mount::mounts()
        .into_iter()
        .map(|m| m.dir)
        .filter(|d| d.starts_with(dir))
        .collect();
    under.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    under.dedup();
    under.iter().filter(|d| unmount_lazily(d)).count()
}

/// Unmounts whatever is mounted on `dir` lazily (gone from the tree at once, freed when its
/// last user is): with umount2(MNT_DETACH) as root, else through `fusermount3 -u -z`, which
/// unmounts a user's own FUSE mount. Returns whether it is gone.
pub fn unmount_lazily(dir: &Path) -> bool {
    let mounted = || oscost_sys::mount::mounts().iter().any(|m| m.dir == dir);
    if !mounted() {
        return false;
    }
    if oscost_sys::mount::effective_uid() == 0 {
        let _ = oscost_sys::mount::unmount(dir);
    } else {
        let _ = std::process::Command::new("fusermount3")
            .arg("-u")
            .arg("-z")
            .arg(dir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
    !mounted()
}

/// Finds, in `tmp`, the run directories of this user whose coordinator is no longer a live
/// oscost process, removes the objects their registries list, unmounts what is mounted under
/// them (a killed FUSE server's mount) and then removes the directories.
/// Returns one entry per directory found; a directory whose objects could not all be removed
/// is kept (with its registry) for a later run to try again.
pub fn remove_earlier_runs(tmp: &Path) -> Vec<Earlier> {
    let Ok(entries) = fs::read_dir(tmp) else {
        return Vec::new();
    };
    let euid = oscost_sys::sysinfo::uids().1;
    let own = std::process::id();
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(pid) = run_dir_pid(&path) else {
            continue;
        };
        // Never follow a link, never touch another user's directory.
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != euid || pid == own {
            continue;
        }
        if creator_alive(pid, meta.mtime().max(meta.ctime())) {
            continue;
        }
        let mut removed = remove_registered(&path);
        removed.mounts = unmount_under(&path);
        let dir_removed = removed.errors.is_empty() && fs::remove_dir_all(&path).is_ok();
        found.push(Earlier {
            pid,
            removed,
            dir_removed,
        });
    }
    found.sort_by_key(|e| e.pid);
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use oscost_sys::ipc::{Link, Via};

    #[test]
    fn a_start_time_is_read_past_a_command_name_with_spaces() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    12345 1000 100";
        assert_eq!(
            process_start(stat, Some(1_000_000), Some(100)),
            Some(1_000_123)
        );
        assert_eq!(process_start(stat, None, Some(100)), None);
        assert_eq!(process_start("4242 (x) S 1", Some(1), Some(100)), None);
    }

    #[test]
    fn a_live_creator_keeps_its_directory_whatever_its_name() {
        let own = std::process::id();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        // This test process (not called oscost) made a directory just now: alive.
        assert!(creator_alive(own, now));
        // A directory last changed long before this process started: its pid was reused.
        assert!(!creator_alive(own, 0));
        // No such process.
        assert!(!creator_alive(u32::MAX - 1, now));
    }

    #[test]
    fn run_dir_names_carry_the_pid() {
        assert_eq!(
            run_dir_pid(Path::new("/t/oscost-run-123-abcDEF")),
            Some(123)
        );
        assert_eq!(run_dir_pid(Path::new("oscost-run-7-x")), Some(7));
        assert_eq!(run_dir_pid(Path::new("/t/oscost-run-abcDEF")), None);
        assert_eq!(run_dir_pid(Path::new("/t/oscost-run-12-")), None);
        assert_eq!(run_dir_pid(Path::new("/t/oscost-run--12-x")), None);
        assert_eq!(run_dir_pid(Path::new("/t/other-12-x")), None);
    }

    #[test]
    fn summaries_name_what_was_removed() {
        let e = Earlier {
            pid: 42,
            removed: Removed {
                sysv_sems: 1,
                mounts: 1,
                errors: Vec::new(),
            },
            dir_removed: true,
        };
        assert_eq!(
            e.summary().unwrap(),
            "removed what an earlier oscost run (pid 42, killed) left behind: \
             1 SysV semaphore set, 1 mount, its temporary directory"
        );
        let none = Earlier {
            pid: 42,
            removed: Removed::default(),
            dir_removed: false,
        };
        assert_eq!(none.summary(), None);
        assert_eq!(sysv_sets(2), "2 SysV semaphore sets");
    }

    /// The registry records a set before it is used; the clean-up removes the ones still
    /// there, counts only those, and leaves the registry empty. A stale run directory (a pid
    /// that is not a live oscost) goes with its sets; a live one stays.
    #[test]
    fn registered_sets_are_removed_once() {
        let tmp = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let dir = tmp.path().join(format!("{RUN_DIR_PREFIX}{me}-abcdef"));
        fs::create_dir(&dir).unwrap();
        // The hook as a measuring process installs it, without the process-wide slot (other
        // tests in this binary create links too).
        let path = registry(&dir);
        let kept = Link::new(Via::SysvSem).unwrap();
        let dropped = Link::new(Via::SysvSem).unwrap();
        for l in [&kept, &dropped] {
            append(&path, "sysv-sem", l.sysv_sem_id().unwrap()).unwrap();
        }
        drop(dropped);
        let r = remove_registered(&dir);
        assert_eq!(
            r,
            Removed {
                sysv_sems: 1,
                mounts: 0,
                errors: Vec::new()
            }
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), "");
        // Dropping the link after its set was removed is harmless.
        drop(kept);

        let set = Link::new(Via::SysvSem).unwrap();
        append(&path, "sysv-sem", set.sysv_sem_id().unwrap()).unwrap();
        // Our own pid is never stale.
        assert!(remove_earlier_runs(tmp.path()).is_empty());
        // A pid no process has (beyond the kernel's pid_max): its creator is gone.
        let other = tmp
            .path()
            .join(format!("{RUN_DIR_PREFIX}{}-ghijkl", u32::MAX - 1));
        fs::rename(&dir, &other).unwrap();
        let found = remove_earlier_runs(tmp.path());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].removed.sysv_sems, 1);
        assert!(found[0].dir_removed);
        assert!(!other.exists());
        drop(set);
    }
}
