//! The user-space side of the `fs` experiment: a minimal in-memory file system served through
//! FUSE, in a process of its own (`oscost __fuse-serve DIR`), so the measuring process stays
//! single-threaded while this one runs the FUSE session's threads.
//!
//! One flat directory of regular files, each a `Vec<u8>`. Nothing is cached by the kernel on
//! its behalf: every entry and attribute reply has a time-to-live of 0 (each path lookup asks
//! again) and every open file is `direct_io` (each read and write is a request, the page cache
//! is bypassed). The server counts the requests it answers, by kind.
//!
//! The process talks to whoever started it through its standard streams, one line each way:
//! it writes `ready` once mounted (or `failed <why>` and exits), answers each `count` line
//! with the counts as one JSON object, and unmounts and exits when its standard input ends
//! (the starter closed it, or died) or when [`Mounted::stopper`] is called (a signal). A stop
//! is never spent: an unmount that fails (the file system busy) is done lazily, and a server
//! whose session has not ended [`STOP_PATIENCE`] later aborts its connection and exits.

use fuser::{
    AccessFlags, Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyLseek, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request,
    Session, SessionUnmounter, TimeOrNow, WriteFlags,
};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// The hidden first argument that selects the serving role: `oscost __fuse-serve DIR`.
pub const ROLE: &str = "__fuse-serve";

/// The line the server writes once the file system is mounted and answering.
pub const READY: &str = "ready";
/// How a line that reports a failure to mount begins.
pub const FAILED: &str = "failed ";
/// The line that asks for the request counts.
pub const COUNT: &str = "count";

/// How long a stopped server waits for its session to end before it aborts the connection and
/// exits.
pub const STOP_PATIENCE: Duration = Duration::from_secs(2);

/// Entries and attributes are never cached by the kernel: every lookup reaches the server.
const TTL: Duration = Duration::ZERO;

macro_rules! ops {
    ($($op:ident => $name:literal),* $(,)?) => {
        /// The kinds of request the server answers and counts.
        #[derive(Debug, Clone, Copy)]
        enum Op { $($op),* }
        /// Their names in the counts, in [`Op`] order.
        pub const OPS: &[&str] = &[$($name),*];
    };
}

ops! {
    Lookup => "lookup",
    Forget => "forget",
    Getattr => "getattr",
    Setattr => "setattr",
    Open => "open",
    Read => "read",
    Write => "write",
    Flush => "flush",
    Release => "release",
    Fsync => "fsync",
    Create => "create",
    Unlink => "unlink",
    Opendir => "opendir",
    Readdir => "readdir",
    Releasedir => "releasedir",
    Statfs => "statfs",
    Getxattr => "getxattr",
    Access => "access",
    Lseek => "lseek",
}

/// Requests answered, by kind.
#[derive(Debug)]
pub struct Counts([AtomicU64; OPS.len()]);

impl Counts {
    fn new() -> Counts {
        Counts(std::array::from_fn(|_| AtomicU64::new(0)))
    }

    fn bump(&self, op: Op) {
        self.0[op as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts so far, by request name (every kind, zeros included).
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        OPS.iter()
            .zip(&self.0)
            .map(|(n, c)| ((*n).to_owned(), c.load(Ordering::Relaxed)))
            .collect()
    }
}

struct Node {
    kind: FileType,
    perm: u16,
    data: Vec<u8>,
    mtime: SystemTime,
}

struct State {
    nodes: HashMap<u64, Node>,
    names: BTreeMap<OsString, u64>,
    next: u64,
}

/// The file system: one root directory of regular files held in memory.
struct MemFs {
    state: Mutex<State>,
    counts: Arc<Counts>,
    uid: u32,
    gid: u32,
}

const ROOT: u64 = 1;

impl MemFs {
    fn new(counts: Arc<Counts>, uid: u32, gid: u32) -> MemFs {
        let mut nodes = HashMap::new();
        nodes.insert(
            ROOT,
            Node {
                kind: FileType::Directory,
                perm: 0o700,
                data: Vec::new(),
                mtime: SystemTime::now(),
            },
        );
        MemFs {
            state: Mutex::new(State {
                nodes,
                names: BTreeMap::new(),
                next: ROOT + 1,
            }),
            counts,
            uid,
            gid,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn attr(&self, ino: u64, n: &Node) -> FileAttr {
        let size = n.data.len() as u64;
        FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: n.mtime,
            mtime: n.mtime,
            ctime: n.mtime,
            crtime: n.mtime,
            kind: n.kind,
            perm: n.perm,
            nlink: if n.kind == FileType::Directory { 2 } else { 1 },
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }
}

impl Filesystem for MemFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        self.counts.bump(Op::Lookup);
        let st = self.state();
        match st.names.get(name).filter(|_| parent.0 == ROOT) {
            Some(&ino) => reply.entry(&TTL, &self.attr(ino, &st.nodes[&ino]), Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn forget(&self, _req: &Request, _ino: INodeNo, _nlookup: u64) {
        self.counts.bump(Op::Forget);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        self.counts.bump(Op::Getattr);
        let st = self.state();
        match st.nodes.get(&ino.0) {
            Some(n) => reply.attr(&TTL, &self.attr(ino.0, n)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        self.counts.bump(Op::Setattr);
        let mut st = self.state();
        let Some(n) = st.nodes.get_mut(&ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        if let Some(size) = size {
            let Ok(size) = usize::try_from(size) else {
                return reply.error(Errno::EFBIG);
            };
            n.data.resize(size, 0);
            n.mtime = SystemTime::now();
        }
        if let Some(mode) = mode {
            n.perm = (mode & 0o7777) as u16;
        }
        reply.attr(&TTL, &self.attr(ino.0, n));
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.counts.bump(Op::Open);
        if self.state().nodes.contains_key(&ino.0) {
            reply.opened(FileHandle(ino.0), FopenFlags::FOPEN_DIRECT_IO);
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.counts.bump(Op::Read);
        let st = self.state();
        let Some(n) = st.nodes.get(&ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        let len = n.data.len();
        let start = usize::try_from(offset).unwrap_or(len).min(len);
        let end = start.saturating_add(size as usize).min(len);
        reply.data(&n.data[start..end]);
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        self.counts.bump(Op::Write);
        let mut st = self.state();
        let Some(n) = st.nodes.get_mut(&ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        let Some(end) = usize::try_from(offset)
            .ok()
            .and_then(|o| o.checked_add(data.len()))
        else {
            return reply.error(Errno::EFBIG);
        };
        if end > n.data.len() {
            n.data.resize(end, 0);
        }
        n.data[end - data.len()..end].copy_from_slice(data);
        n.mtime = SystemTime::now();
        reply.written(data.len() as u32);
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        self.counts.bump(Op::Flush);
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.counts.bump(Op::Release);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.counts.bump(Op::Fsync);
        reply.ok();
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        self.counts.bump(Op::Create);
        if parent.0 != ROOT {
            return reply.error(Errno::ENOENT);
        }
        let mut st = self.state();
        let ino = match st.names.get(name) {
            Some(_) if flags & libc::O_EXCL != 0 => return reply.error(Errno::EEXIST),
            Some(&ino) => {
                let n = st.nodes.get_mut(&ino).expect("every name has its node");
                if flags & libc::O_TRUNC != 0 {
                    n.data.clear();
                }
                ino
            }
            None => {
                let ino = st.next;
                st.next += 1;
                st.nodes.insert(
                    ino,
                    Node {
                        kind: FileType::RegularFile,
                        perm: (mode & !umask & 0o7777) as u16,
                        data: Vec::new(),
                        mtime: SystemTime::now(),
                    },
                );
                st.names.insert(name.to_owned(), ino);
                ino
            }
        };
        let attr = self.attr(ino, &st.nodes[&ino]);
        reply.created(
            &TTL,
            &attr,
            Generation(0),
            FileHandle(ino),
            FopenFlags::FOPEN_DIRECT_IO,
        );
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.counts.bump(Op::Unlink);
        let mut st = self.state();
        match st.names.remove(name).filter(|_| parent.0 == ROOT) {
            Some(ino) => {
                st.nodes.remove(&ino);
                reply.ok();
            }
            None => reply.error(Errno::ENOENT),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.counts.bump(Op::Opendir);
        if ino.0 == ROOT {
            reply.opened(FileHandle(0), FopenFlags::empty());
        } else {
            reply.error(Errno::ENOTDIR);
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        self.counts.bump(Op::Readdir);
        if ino.0 != ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let st = self.state();
        let entries = [
            (ROOT, FileType::Directory, OsStr::new(".")),
            (ROOT, FileType::Directory, OsStr::new("..")),
        ]
        .into_iter()
        .chain(
            st.names
                .iter()
                .map(|(name, &i)| (i, FileType::RegularFile, name.as_os_str())),
        );
        for (k, (i, kind, name)) in entries.enumerate().skip(offset as usize) {
            if reply.add(INodeNo(i), k as u64 + 1, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.counts.bump(Op::Releasedir);
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        self.counts.bump(Op::Statfs);
        reply.statfs(0, 0, 0, 0, 0, 4096, 255, 4096);
    }

    fn getxattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, _size: u32, r: ReplyXattr) {
        // No extended attributes: ENOSYS, and the kernel stops asking.
        self.counts.bump(Op::Getxattr);
        r.error(Errno::ENOSYS);
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        self.counts.bump(Op::Access);
        reply.ok();
    }

    fn lseek(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: i64,
        _whence: i32,
        reply: ReplyLseek,
    ) {
        // Only SEEK_DATA and SEEK_HOLE come here; the kernel answers the other kinds itself.
        self.counts.bump(Op::Lseek);
        reply.error(Errno::ENOSYS);
    }
}

/// Stops a mounted server: unmounts it, which ends its session.
#[derive(Clone)]
pub struct Stopper {
    unmounter: Arc<Mutex<SessionUnmounter>>,
    dir: PathBuf,
}

impl Stopper {
    /// Unmounts the file system. The first call unmounts the usual way; when that fails (the
    /// file system is busy) or did not take, every call unmounts lazily (the mount leaves the
    /// tree at once and the session ends when its last file closes), so a stop is never spent.
    pub fn stop(&self) {
        let mut u = self
            .unmounter
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if u.unmount().is_ok() && !fuse_mounted_on(&self.dir) {
            return;
        }
        lazy_unmount(&self.dir);
    }

    /// Aborts the FUSE connection (every request waiting on this server fails at once, so no
    /// caller is left in an uninterruptible wait), then unmounts. Where the connection
    /// cannot be aborted (fusectl not mounted), the process's exit does it: the kernel aborts
    /// a connection whose device is closed.
    pub fn abort(&self) {
        let _ = oscost_sys::mount::abort_fuse_connection(&self.dir);
        self.stop();
    }
}

/// Whether a FUSE file system is mounted on `dir` in this process's mount table.
fn fuse_mounted_on(dir: &Path) -> bool {
    oscost_sys::mount::mounts()
        .iter()
        .any(|m| m.dir == dir && m.fstype.starts_with("fuse"))
}

/// Unmounts the FUSE file system on `dir` lazily (see [`crate::leftovers::unmount_lazily`]).
/// Nothing mounted there is not an error.
pub fn lazy_unmount(dir: &Path) {
    if fuse_mounted_on(dir) {
        crate::leftovers::unmount_lazily(dir);
    }
}

/// A mounted file system, not yet answering requests beyond the mount's own handshake.
pub struct Mounted {
    session: Session<MemFs>,
    counts: Arc<Counts>,
    stopper: Stopper,
}

/// Whether fusermount3 may be asked to unmount the file system when its server ends, however
/// it ends (`auto_unmount`): fuser asks it only with `allow_root`, which fusermount3 grants a
/// user who is not root only when `/etc/fuse.conf` says `user_allow_other`.
fn auto_unmount_allowed(fuse_conf: &str) -> bool {
    fuse_conf
        .lines()
        .any(|l| l.split('#').next().unwrap_or("").trim() == "user_allow_other")
}

/// Mounts the file system on `dir`: directly with mount(2) as root, else through the
/// `fusermount3` helper (Debian's `fuse3` package), with `auto_unmount` where
/// `/etc/fuse.conf` allows it, so the mount goes with the server even if it is killed.
pub fn mount(dir: &Path) -> io::Result<Mounted> {
    let counts = Arc::new(Counts::new());
    let meta = std::fs::metadata(dir)?;
    let fs = MemFs::new(
        Arc::clone(&counts),
        std::os::unix::fs::MetadataExt::uid(&meta),
        std::os::unix::fs::MetadataExt::gid(&meta),
    );
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("oscost-fuse".into()),
        MountOption::Subtype("oscost".into()),
        MountOption::NoAtime,
    ];
    if oscost_sys::mount::effective_uid() != 0
        && auto_unmount_allowed(&std::fs::read_to_string("/etc/fuse.conf").unwrap_or_default())
    {
        config.mount_options.push(MountOption::AutoUnmount);
        config.acl = fuser::SessionACL::RootAndOwner;
    }
    let mut session = Session::new(fs, dir, &config)?;
    let stopper = Stopper {
        unmounter: Arc::new(Mutex::new(session.unmount_callable())),
        dir: dir.to_owned(),
    };
    Ok(Mounted {
        session,
        counts,
        stopper,
    })
}

impl Mounted {
    /// What unmounts it from another thread (a signal handler's thread).
    pub fn stopper(&self) -> Stopper {
        self.stopper.clone()
    }

    /// Writes [`READY`] to `out`, answers each [`COUNT`] line of `control` with the counts on
    /// `out`, and serves requests until unmounted: by [`Stopper::stop`], or when `control`
    /// ends. Returns once the session has ended; [`STOP_PATIENCE`] after `control` ended,
    /// the process exits whatever the session does.
    pub fn serve(
        self,
        control: impl BufRead + Send + 'static,
        mut out: impl Write + Send + 'static,
    ) -> io::Result<()> {
        writeln!(out, "{READY}")?;
        out.flush()?;
        let (counts, stopper) = (self.counts, self.stopper);
        let control = std::thread::Builder::new()
            .name("oscost-fuse-control".into())
            .spawn({
                let stopper = stopper.clone();
                move || {
                    for line in control.lines() {
                        let Ok(line) = line else { break };
                        if line.trim() == COUNT {
                            let json = serde_json::to_string(&counts.snapshot())
                                .expect("a map of numbers serialises");
                            if writeln!(out, "{json}").and_then(|()| out.flush()).is_err() {
                                break;
                            }
                        }
                    }
                    // Its user is gone (the input closed): an open file that keeps the lazily
                    // unmounted session alive can no longer be closed by it.
                    stopper.stop();
                    std::thread::sleep(STOP_PATIENCE);
                    stopper.abort();
                    std::process::exit(0);
                }
            })?;
        let served = self.session.run();
        // The session ends when the file system is unmounted; a session that failed on its
        // own leaves the mount to be taken down here.
        stopper.stop();
        drop(control); // detached: it ends with the process, blocked on its input or not
        served
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_unmount_follows_user_allow_other() {
        assert!(auto_unmount_allowed("# comment\nuser_allow_other\n"));
        assert!(auto_unmount_allowed("  user_allow_other # yes\n"));
        assert!(!auto_unmount_allowed(
            "#user_allow_other\nmount_max = 1000\n"
        ));
        assert!(!auto_unmount_allowed(""));
    }
}
