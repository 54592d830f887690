//! Writing result files so that a reader never sees half a file, and a failed run leaves none.
//!
//! A regular file is written beside its target and renamed over it; a symbolic link is written
//! through (the file it names is replaced in its own directory, the link stays a link); a
//! device, FIFO or open file descriptor (`/dev/stdout`, `/proc/self/fd/N`) is opened once and
//! written in place. [`check_writable`] looks at all of this before anything is measured,
//! without opening anything but a temporary file of its own.

use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The flag set when the run is asked to stop (SIGINT, SIGTERM): output waiting for a reader
/// gives up when it is set.
static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Makes output that waits for a reader (a FIFO, a pipe) give up when `flag` is set.
pub fn stop_waiting_on(flag: Arc<AtomicBool>) {
    let _ = STOP.set(flag);
}

/// Whether the run was asked to stop.
pub fn stop_asked() -> bool {
    STOP.get().is_some_and(|f| f.load(Ordering::SeqCst))
}

/// The environment variable that sets, in seconds, how long output waits for a FIFO or pipe
/// that nobody reads.
pub const TIMEOUT_ENV: &str = "OSCOST_OUTPUT_TIMEOUT";

/// How long output waits for a reader that takes nothing: [`TIMEOUT_ENV`] seconds, else 30 s.
pub fn reader_timeout() -> Duration {
    let secs = std::env::var(TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&s| s > 0)
        .unwrap_or(30);
    Duration::from_secs(secs)
}

/// Output given up while waiting for a reader because the run was asked to stop: the binary
/// exits 130 for it, as for any interruption.
#[derive(Debug)]
pub struct Interrupted(pub String);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "interrupted while writing {} (nobody was reading it)",
            self.0
        )
    }
}

impl std::error::Error for Interrupted {}

/// Why writing to a FIFO or pipe did not finish.
#[derive(Debug)]
pub enum Stall {
    /// An OS error (a reader that went away is `BrokenPipe`).
    Io(io::Error),
    /// The run was asked to stop while waiting for a reader.
    Interrupted,
    /// Nobody read for this long.
    TimedOut(Duration),
}

impl Stall {
    /// The one-line error for output to `shown`.
    pub fn into_error(self, shown: &str) -> anyhow::Error {
        match self {
            Stall::Io(e) => anyhow::anyhow!("writing {shown}: {}", reason(&e)),
            Stall::Interrupted => Interrupted(shown.to_owned()).into(),
            Stall::TimedOut(t) => anyhow::anyhow!(
                "writing {shown}: nobody read it for {} s (a FIFO or pipe without a reader), so \
                 oscost gave up; start its reader first, or set {TIMEOUT_ENV}=SECONDS to wait \
                 longer",
                t.as_secs()
            ),
        }
    }
}

/// Waits (50 ms at a time) until `deadline`, unless the run is asked to stop first.
fn nap(deadline: Instant, timeout: Duration) -> Result<(), Stall> {
    if stop_asked() {
        return Err(Stall::Interrupted);
    }
    if Instant::now() >= deadline {
        return Err(Stall::TimedOut(timeout));
    }
    std::thread::sleep(Duration::from_millis(50));
    Ok(())
}

/// Opens a file that is written in place. A FIFO is opened without blocking: until a reader
/// opens it, the open is tried again, until the run is asked to stop or [`reader_timeout`].
fn open_in_place(p: &Path) -> Result<std::fs::File, Stall> {
    let fifo = std::fs::metadata(p).is_ok_and(|m| m.file_type().is_fifo());
    if !fifo {
        return std::fs::OpenOptions::new()
            .write(true)
            .open(p)
            .map_err(Stall::Io);
    }
    let timeout = reader_timeout();
    let deadline = Instant::now() + timeout;
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(p)
        {
            Ok(f) => return Ok(f),
            // No reader yet.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => nap(deadline, timeout)?,
            Err(e) => return Err(Stall::Io(e)),
        }
    }
}

/// Writes all of `bytes` to a file that may not block (a FIFO opened by [`open_in_place`]):
/// while the reader takes nothing, waits, until the run is asked to stop or nothing was taken
/// for [`reader_timeout`].
fn write_patiently(f: &std::fs::File, mut bytes: &[u8]) -> Result<(), Stall> {
    let timeout = reader_timeout();
    let mut deadline = Instant::now() + timeout;
    while !bytes.is_empty() {
        match (&*f).write(bytes) {
            Ok(0) => return Err(Stall::Io(io::ErrorKind::WriteZero.into())),
            Ok(n) => {
                bytes = &bytes[n..];
                deadline = Instant::now() + timeout;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => nap(deadline, timeout)?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Stall::Io(e)),
        }
    }
    Ok(())
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Why an OS call failed, once, without the paths and prefixes other crates wrap around it.
fn reason(e: &io::Error) -> String {
    if let Some(code) = e.raw_os_error() {
        return io::Error::from_raw_os_error(code).to_string();
    }
    // tempfile names its random file after the reason ("… at path \"/dir/.tmpXYZ\""): the
    // user needs the reason, and the message names the file they gave.
    let text = e.to_string();
    match text.split_once(" at path \"") {
        Some((reason, _)) => reason.to_owned(),
        None => text,
    }
}

/// Where writing a path really goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// This process's standard output (`/dev/stdout`, `/proc/self/fd/1`): the same as `-`.
    Stdout,
    /// A device, FIFO or socket, or another open file descriptor: opened once, written in place.
    InPlace(PathBuf),
    /// A regular file, existing or not, at this path with no symbolic link left in it:
    /// replaced by a rename in its own directory.
    Replace(PathBuf),
}

/// Whether `link` is an entry of a `/proc/PID/fd` directory; returns the canonical directory.
fn fd_dir_of(link: &Path) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(parent_of(link)).ok()?;
    (dir.starts_with("/proc") && dir.file_name() == Some("fd".as_ref())).then_some(dir)
}

/// Follows `path`'s symbolic links, without opening anything. A dangling link resolves to the
/// file it names, when that file's directory exists.
pub fn resolve(path: &Path) -> io::Result<Target> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Some(dir) = fd_dir_of(&p) {
                    let own = Path::new("/proc")
                        .join(std::process::id().to_string())
                        .join("fd");
                    return Ok(if dir == own && p.file_name() == Some("1".as_ref()) {
                        Target::Stdout
                    } else {
                        Target::InPlace(p)
                    });
                }
                p = parent_of(&p).join(std::fs::read_link(&p)?);
            }
            Ok(m) if m.is_file() || m.is_dir() => {
                return std::fs::canonicalize(&p).map(Target::Replace)
            }
            Ok(_) => return Ok(Target::InPlace(p)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let dir = parent_of(&p);
                let missing = || {
                    let what = if p == path {
                        format!("directory {} does not exist", dir.display())
                    } else {
                        format!(
                            "it links to {}, whose directory does not exist",
                            p.display()
                        )
                    };
                    io::Error::new(io::ErrorKind::NotFound, what)
                };
                let name = p.file_name().ok_or_else(missing)?;
                let dir = std::fs::canonicalize(dir).map_err(|_| missing())?;
                if !dir.is_dir() {
                    return Err(missing());
                }
                return Ok(Target::Replace(dir.join(name)));
            }
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// Written in place rather than replaced: an existing target that is not a regular file (a
/// device such as `/dev/null`, a FIFO, a link to one) or an open file descriptor.
pub fn is_special(path: &Path) -> bool {
    matches!(resolve(path), Ok(Target::InPlace(_) | Target::Stdout))
}

/// Whether `path` is this process's standard output (`/dev/stdout`, `/dev/fd/1`).
pub fn is_stdout(path: &Path) -> bool {
    matches!(resolve(path), Ok(Target::Stdout))
}

/// Whether standard output was closed when oscost started (`>&-`). The Rust runtime puts
/// `/dev/null`, opened read-write, in place of a closed standard descriptor, which a shell's
/// `>/dev/null` (write-only) never is: so a document for stdout would vanish without a word.
pub fn stdout_closed() -> bool {
    let Ok(target) = std::fs::read_link("/proc/self/fd/1") else {
        return true;
    };
    if target != Path::new("/dev/null") {
        return false;
    }
    std::fs::read_to_string("/proc/self/fdinfo/1")
        .ok()
        .and_then(|t| {
            let flags = t.lines().find_map(|l| l.strip_prefix("flags:"))?;
            u32::from_str_radix(flags.trim(), 8).ok()
        })
        .is_some_and(|flags| flags & 0o3 == 0o2)
}

/// The file a path stands for, to tell whether two outputs would overwrite each other: the
/// real path when it exists, else the real directory joined with the name (links followed).
pub fn identity(path: &Path) -> PathBuf {
    match resolve(path) {
        Ok(Target::Replace(real)) => real,
        Ok(Target::InPlace(p)) => std::fs::canonicalize(&p).unwrap_or(p),
        Ok(Target::Stdout) => PathBuf::from("/dev/stdout"),
        Err(_) => path.to_owned(),
    }
}

/// The file-system identity of this process (its fs uid and groups), from `/proc/self/status`.
struct Creds {
    uid: u32,
    gids: Vec<u32>,
}

fn creds() -> Option<Creds> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<Vec<u32>> {
        let line = status.lines().find_map(|l| l.strip_prefix(name))?;
        line.split_whitespace().map(|n| n.parse().ok()).collect()
    };
    let uid = *field("Uid:")?.get(3)?;
    let mut gids = field("Groups:").unwrap_or_default();
    gids.push(*field("Gid:")?.get(3)?);
    Some(Creds { uid, gids })
}

/// Whether the permission bits let this process write the file (access(2) without ACLs).
fn may_write(m: &std::fs::Metadata, c: &Creds) -> bool {
    let bits = if c.uid == 0 {
        return true;
    } else if m.uid() == c.uid {
        0o200
    } else if c.gids.contains(&m.gid()) {
        0o020
    } else {
        0o002
    };
    m.mode() & bits != 0
}

/// Fails now, before any measuring, if `path` could not be written at the end; opens nothing
/// but a temporary file of its own (a FIFO's reader would see an end of file).
///
/// A regular file whose mode has no write bit (`0444`) is refused even for root: its owner
/// marked it read-only. [`stage`] (and so [`write_atomic`]) refuses the same paths when it
/// writes, so every file oscost writes is held to the same rules, checked first or not.
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    let shown = path.display();
    let real = match vet(path)? {
        Target::Stdout | Target::InPlace(_) => return Ok(()),
        Target::Replace(real) => real,
    };
    let dir = parent_of(&real);
    // The rename at the end needs what this needs: a file of ours in the target's directory.
    if let Err(e) = tempfile::NamedTempFile::new_in(dir) {
        anyhow::bail!(
            "cannot write {shown}: directory {} is not writable ({})",
            dir.display(),
            reason(&e)
        );
    }
    Ok(())
}

/// A file's identity: device, inode, mode and modification time. Mode and time tell our file
/// from a later one that reuses the inode after ours was removed (the time alone may not: the
/// kernel stamps files at its tick's resolution).
type FileId = (u64, u64, u32, i64, i64);

fn file_id(m: &std::fs::Metadata) -> FileId {
    (m.dev(), m.ino(), m.mode(), m.mtime(), m.mtime_nsec())
}

/// The files this process put in place: its own to replace again.
fn written_here() -> &'static std::sync::Mutex<Vec<FileId>> {
    static WRITTEN: std::sync::OnceLock<std::sync::Mutex<Vec<FileId>>> = std::sync::OnceLock::new();
    WRITTEN.get_or_init(|| std::sync::Mutex::new(Vec::new()))
}

/// Where writing `path` goes, or why it must not be written: a directory, a name ending in
/// `/`, a socket, a file this process may not write, a read-only file, another user's file in
/// a sticky directory.
fn vet(path: &Path) -> anyhow::Result<Target> {
    let shown = path.display();
    if path.is_dir() {
        anyhow::bail!("{shown} is a directory, not a file");
    }
    // `Path` forgets a trailing slash, so `r.json/` would be checked as `r.json` and written as
    // such: a directory name would become a file. Refuse it.
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        anyhow::bail!("cannot write {shown}: a file name cannot end in `/`");
    }
    let target =
        resolve(path).map_err(|e| anyhow::anyhow!("cannot write {shown}: {}", reason(&e)))?;
    let creds = creds();
    let real = match target {
        Target::Stdout => return Ok(Target::Stdout),
        Target::InPlace(p) => {
            let m = std::fs::metadata(&p)
                .map_err(|e| anyhow::anyhow!("cannot write {shown}: {}", reason(&e)))?;
            if m.file_type().is_socket() {
                anyhow::bail!(
                    "cannot write {shown}: it is a socket, which cannot be opened as a file \
                     (choose a file, a FIFO, or `-` for stdout)"
                );
            }
            if creds.as_ref().is_some_and(|c| !may_write(&m, c)) {
                anyhow::bail!("cannot write {shown}: permission denied (choose another path)");
            }
            return Ok(Target::InPlace(p));
        }
        Target::Replace(real) => real,
    };
    let dir = parent_of(&real);
    if let Ok(m) = std::fs::metadata(&real) {
        let mode = m.mode() & 0o7777;
        if m.is_dir() {
            anyhow::bail!("{shown} is a directory, not a file");
        }
        // A file this process wrote itself may be read-only by the user's umask (0277 gives
        // 0400): rewriting it after the next experiment is not overwriting the user's file.
        let ours = written_here()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&file_id(&m));
        if mode & 0o222 == 0 && !ours {
            anyhow::bail!(
                "cannot write {shown}: it is read-only (mode {mode:04o}); remove it or choose \
                 another path"
            );
        }
        if let Some(c) = &creds {
            // Its own file is replaced (a rename in its directory), never written through.
            if !ours && !may_write(&m, c) {
                anyhow::bail!(
                    "cannot write {shown}: you may not write it (owner uid {}, mode {mode:04o}); \
                     remove it or choose another path",
                    m.uid()
                );
            }
            let sticky = std::fs::metadata(dir).is_ok_and(|d| {
                d.mode() & 0o1000 != 0 && c.uid != 0 && m.uid() != c.uid && d.uid() != c.uid
            });
            if sticky {
                anyhow::bail!(
                    "cannot replace {shown}: it belongs to another user (uid {}) in a sticky \
                     directory ({}), where only its owner may replace it; choose another path",
                    m.uid(),
                    dir.display()
                );
            }
        }
    }
    Ok(Target::Replace(real))
}

/// A file written in full but not yet in place: [`Staged::commit`] renames it over its target.
/// Dropped uncommitted, it vanishes, so a run that fails later leaves no result file.
pub struct Staged {
    shown: PathBuf,
    target: PathBuf,
    tmp: Option<tempfile::NamedTempFile>,
}

impl Staged {
    /// Puts the file in place.
    pub fn commit(self) -> anyhow::Result<()> {
        if let Some(tmp) = self.tmp {
            tmp.persist(&self.target).map_err(|e| {
                anyhow::anyhow!(
                    "cannot replace {}: {}",
                    self.shown.display(),
                    reason(&e.error)
                )
            })?;
            if let Ok(m) = std::fs::metadata(&self.target) {
                written_here()
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(file_id(&m));
            }
        }
        Ok(())
    }
}

/// Writes `contents` beside the file `path` names (through any symbolic link), ready to be put
/// in place, with the mode of the file it replaces or, for a new file, `0666` less the umask.
/// A special file (a device, a FIFO, standard output) is written directly instead, since it
/// cannot be replaced and holds no half file. What [`check_writable`] refuses is refused here
/// too, before anything is written.
pub fn stage(path: &Path, contents: &str) -> anyhow::Result<Staged> {
    let shown = path.display();
    let fail = |what: &str, e: &io::Error| anyhow::anyhow!("{what} {shown}: {}", reason(e));
    let target = vet(path)?;
    let real = match target {
        Target::Stdout | Target::InPlace(_) => {
            match &target {
                Target::InPlace(p) => open_in_place(p)
                    .and_then(|f| write_patiently(&f, contents.as_bytes()))
                    .map_err(|e| e.into_error(&shown.to_string()))?,
                _ => {
                    let mut out = io::stdout().lock();
                    out.write_all(contents.as_bytes())
                        .and_then(|_| out.flush())
                        .map_err(|e| fail("writing", &e))?;
                }
            }
            return Ok(Staged {
                shown: path.to_owned(),
                target: path.to_owned(),
                tmp: None,
            });
        }
        Target::Replace(real) => real,
    };
    // Created as any new file would be (0666 less the umask), not tempfile's 0600.
    let mut tmp = tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(parent_of(&real))
        .map_err(|e| fail("cannot write", &e))?;
    if let Some(old) = std::fs::metadata(&real).ok().filter(|m| m.is_file()) {
        // Root keeps the owner of a file it replaces; anyone else cannot, and need not.
        let _ = std::os::unix::fs::fchown(tmp.as_file(), Some(old.uid()), Some(old.gid()));
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o7777))
            .map_err(|e| fail("writing", &e))?;
    }
    tmp.write_all(contents.as_bytes())
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| fail("writing", &e))?;
    Ok(Staged {
        shown: path.to_owned(),
        target: real,
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
    fn links_resolve_to_the_file_they_name_and_fifos_are_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink("a/../named", dir.path().join("dangling")).unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        assert_eq!(
            resolve(&dir.path().join("dangling")).unwrap(),
            Target::Replace(real.join("named"))
        );
        assert_eq!(
            identity(&dir.path().join("dangling")),
            identity(&dir.path().join("a/../named"))
        );
        assert!(is_stdout(Path::new("/dev/stdout")));
        assert!(is_special(Path::new("/dev/null")));
        // A FIFO with no reader: opening it for writing would block; checking must not.
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        check_writable(&fifo).unwrap();
        assert!(is_special(&fifo));
    }

    #[test]
    fn os_errors_are_told_once() {
        let e = io::Error::from_raw_os_error(1);
        assert_eq!(reason(&e), "Operation not permitted (os error 1)");
        let dir = tempfile::tempdir().unwrap();
        let inner = tempfile::NamedTempFile::new_in(dir.path().join("missing")).unwrap_err();
        assert_eq!(reason(&inner), "No such file or directory (os error 2)");
    }

    /// Writing refuses what checking refuses: a read-only file stays as it was, a name ending
    /// in `/` never becomes a file, a directory is never replaced.
    #[test]
    fn writes_refuse_protected_files_and_directory_names() {
        let dir = tempfile::tempdir().unwrap();
        let ro = dir.path().join("ro.json");
        std::fs::write(&ro, "precious").unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
        let e = write_atomic(&ro, "new").unwrap_err().to_string();
        assert!(e.contains("read-only (mode 0444)"), "{e}");
        assert_eq!(std::fs::read_to_string(&ro).unwrap(), "precious");
        // Through a link to it, the same.
        std::os::unix::fs::symlink("ro.json", dir.path().join("link.json")).unwrap();
        assert!(write_atomic(&dir.path().join("link.json"), "new").is_err());
        assert_eq!(std::fs::read_to_string(&ro).unwrap(), "precious");
        let nodir = dir.path().join("nodir/");
        let e = write_atomic(&nodir, "x").unwrap_err().to_string();
        assert!(e.contains("cannot end in `/`"), "{e}");
        assert!(!dir.path().join("nodir").exists());
        assert!(write_atomic(dir.path(), "x").is_err());
        assert!(dir.path().is_dir());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn unwritable_paths_are_refused_up_front() {
        assert!(check_writable(Path::new("/nonexistent-dir/x.json")).is_err());
        let dir = tempfile::tempdir().unwrap();
        assert!(check_writable(dir.path()).is_err());
        assert!(check_writable(&dir.path().join("ok.json")).is_ok());
    }
}
