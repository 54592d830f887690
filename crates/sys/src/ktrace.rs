//! The kernel's own view: its tracepoints, read through `perf_event_open`.
//!
//! One ring buffer per CPU collects the chosen tracepoints of that CPU (each record carries
//! its time, CPU, pid/tid and the event's raw fields). Times are `CLOCK_MONOTONIC_RAW`
//! nanoseconds (`use_clockid`), the clock oscost's counter is calibrated against, so a caller
//! maps them onto the counter with two anchors ([`anchor`]). Field offsets come from tracefs
//! (`events/<sys>/<event>/format`), never from a guess. Everything opened is closed, and a
//! tracefs mounted here is unmounted, when the [`Tracer`] and [`Tracefs`] are dropped.

use crate::clock::monotonic_raw_ns;
use crate::last_error;
use perf_event_open_sys as perf;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Why the kernel's view cannot be had here, in one line that says how to get it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unavailable {}

mod format;
pub use format::{parse_format, Field, Format};

/// Where tracefs is, and whether this process mounted it (then it is unmounted when the last
/// value of this process that shares the mount is dropped).
///
/// Its files are reached through a descriptor of the mount's root, not through the mount
/// point: a lazy unmount by anyone else (another oscost run that mounted it ending, the sweep
/// after a killed run, a user) detaches the mount point, and the mount lives on, reachable,
/// until the last descriptor of it is closed.
#[derive(Debug)]
pub struct Tracefs {
    mountpoint: PathBuf,
    root: PathBuf,
    /// Holds the mount while this value lives; `root` names it.
    held: Option<OwnedFd>,
    mounted_here: bool,
}

/// The standard mount point of tracefs.
const TRACEFS_DIR: &str = "/sys/kernel/tracing";

/// How many live [`Tracefs`] values of this process share the tracefs it mounted (0: it
/// mounted none). A process may trace from two threads at once (a test binary runs its
/// tests so): the first to drop must not unmount what the other still reads through.
static OWN_MOUNT_USERS: std::sync::Mutex<usize> = std::sync::Mutex::new(0);

fn own_mount_users() -> std::sync::MutexGuard<'static, usize> {
    OWN_MOUNT_USERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn tracefs_mount(mounts: &[crate::mount::MountEntry]) -> Option<PathBuf> {
    mounts
        .iter()
        .find(|m| m.fstype == "tracefs")
        .map(|m| m.dir.clone())
}

impl Tracefs {
    /// Finds tracefs, mounting it on `/sys/kernel/tracing` when it is mounted nowhere (root
    /// only).
    pub fn open() -> Result<Tracefs, Unavailable> {
        // Held until the mount is made and counted, so two threads never both mount it.
        let mut users = own_mount_users();
        let mut tries = 0;
        while let Some(mountpoint) = tracefs_mount(&crate::mount::mounts()) {
            let pinned = match pin_root(&mountpoint) {
                Ok(p) => Some(p),
                // Unmounted between the look and the open: what was opened is the directory
                // under it. Looked for again, and mounted below if it is gone for good.
                Err(e) if e.kind() == io::ErrorKind::NotFound && tries < 3 => {
                    tries += 1;
                    continue;
                }
                // Closed to this user: reached by the mount point, which says so when read.
                Err(_) => None,
            };
            // This process's own mount, while another value holds it: shared, and unmounted
            // by the last of them.
            let mounted_here = *users > 0;
            if mounted_here {
                *users += 1;
            }
            return Ok(Tracefs::held(mountpoint, pinned, mounted_here));
        }
        let supported = std::fs::read_to_string("/proc/filesystems").is_ok_and(|t| {
            t.lines()
                .any(|l| l.split_whitespace().last() == Some("tracefs"))
        });
        if !supported {
            return Err(Unavailable(
                "this kernel has no tracefs (CONFIG_TRACING): no tracepoints to read".into(),
            ));
        }
        let dir = CString::new(TRACEFS_DIR).expect("no NUL");
        // SAFETY: every pointer is a NUL-terminated string that outlives the call.
        let r = unsafe {
            libc::mount(
                c"nodev".as_ptr(),
                dir.as_ptr(),
                c"tracefs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            )
        };
        if r != 0 {
            let e = io::Error::last_os_error();
            return Err(Unavailable(format!(
                "tracefs is not mounted and mounting it on {TRACEFS_DIR} failed ({e}): run as \
                 root, or `mount -t tracefs nodev {TRACEFS_DIR}` first"
            )));
        }
        *users = 1;
        let mountpoint = PathBuf::from(TRACEFS_DIR);
        let pinned = pin_root(&mountpoint).ok();
        Ok(Tracefs::held(mountpoint, pinned, true))
    }

    /// The value for the tracefs mounted on `mountpoint`, reached through `pinned` (a
    /// descriptor of its root and the path naming it) where there is one, else by the mount
    /// point.
    fn held(
        mountpoint: PathBuf,
        pinned: Option<(OwnedFd, PathBuf)>,
        mounted_here: bool,
    ) -> Tracefs {
        let (held, root) = match pinned {
            Some((fd, root)) => (Some(fd), root),
            None => (None, mountpoint.clone()),
        };
        Tracefs {
            mountpoint,
            root,
            held,
            mounted_here,
        }
    }

    /// The path to reach its files by (`/proc/self/fd/N`, the descriptor that holds the
    /// mount): valid in this process, for this value's life, whoever unmounts it meanwhile.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A hold on the mount of its own for a value that may outlive this one, and the root
    /// path it names: `/proc/self/fd/M` of a second descriptor, or the mount point where this
    /// value has none.
    pub fn pin(&self) -> (PathBuf, Option<OwnedFd>) {
        match self.held.as_ref().and_then(|fd| fd.try_clone().ok()) {
            Some(dup) => (fd_path(&dup), Some(dup)),
            None => (self.mountpoint.clone(), None),
        }
    }

    /// Where it is mounted: the path to show and to record.
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// `path` under [`root`](Tracefs::root) as it would read under the mount point, for
    /// messages.
    pub fn shown(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.root)
            .map_or_else(|_| path.to_owned(), |rest| self.mountpoint.join(rest))
    }

    /// Whether this process mounted it (and will unmount it once no value of it is left).
    pub fn mounted_here(&self) -> bool {
        self.mounted_here
    }

    /// The format of tracepoint `sys:event`, or `None` when this kernel lacks it.
    pub fn format(&self, sys: &str, event: &str) -> Option<Format> {
        let path = self
            .root
            .join("events")
            .join(sys)
            .join(event)
            .join("format");
        parse_format(sys, &std::fs::read_to_string(path).ok()?)
    }
}

/// Whether `e` is the lack of a file descriptor (this process's limit or the system's).
/// [`crate::last_error`] keeps the errno only in its text, which ends `(os error N)`.
fn out_of_fds(e: &io::Error) -> bool {
    let text = e.to_string();
    matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
        || [libc::EMFILE, libc::ENFILE]
            .iter()
            .any(|n| text.ends_with(&format!("(os error {n})")))
}

/// Why a trace cannot be opened when descriptors ran out: the limit, and the fix.
fn fds_exhausted(name: &str, e: &io::Error, events: usize, cpus: usize) -> Unavailable {
    Unavailable(format!(
        "opening tracepoint {name} failed for want of file descriptors ({e}): the trace needs \
         one per tracepoint and CPU ({events} x {cpus}); raise the open-file limit (`ulimit \
         -n`)"
    ))
}

/// Whether tracefs is mounted on `dir` now (this process's mount table).
pub fn tracefs_mounted_on(dir: &Path) -> bool {
    crate::mount::mounts()
        .iter()
        .any(|m| m.fstype == "tracefs" && m.dir == dir)
}

/// Unmounts (lazily) the tracefs mounted on `dir`: what a run killed before it could left.
pub fn unmount_tracefs(dir: &Path) -> io::Result<()> {
    let c = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL"))?;
    // SAFETY: c is a NUL-terminated path that outlives the call.
    if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A descriptor of the root of the tracefs on `mountpoint` (a directory opened read-only pins
/// its mount as O_PATH would), and the path naming it. `NotFound` where what was opened has no
/// `events` in it: not tracefs, but the directory under a mount that just went.
fn pin_root(mountpoint: &Path) -> io::Result<(OwnedFd, PathBuf)> {
    let fd = OwnedFd::from(std::fs::File::open(mountpoint)?);
    let root = fd_path(&fd);
    if !root.join("events").is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no events under {}", mountpoint.display()),
        ));
    }
    Ok((fd, root))
}

/// The path that names what `fd` is open on, in this process.
fn fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if !self.mounted_here {
            return;
        }
        let mut users = own_mount_users();
        *users = users.saturating_sub(1);
        if *users == 0 {
            if let Ok(dir) = CString::new(self.mountpoint.as_os_str().as_bytes()) {
                // SAFETY: dir is a NUL-terminated path; a lazy unmount of our own mount.
                unsafe { libc::umount2(dir.as_ptr(), libc::MNT_DETACH) };
            }
        }
    }
}

/// One tracepoint record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// ns on the clock of the mechanism that recorded it (`CLOCK_MONOTONIC_RAW` for perf;
    /// see `kseam::Tracer::clock`).
    pub time_ns: u64,
    /// The CPU it happened on.
    pub cpu: u32,
    /// The process and thread current when it happened.
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// The raw tracepoint record (its first two bytes are the event's id).
    pub raw: Vec<u8>,
}

impl Record {
    /// The tracepoint id (`common_type`).
    pub fn event_id(&self) -> u64 {
        self.raw
            .get(0..2)
            .map_or(0, |b| u16::from_ne_bytes([b[0], b[1]]) as u64)
    }
}

const HEADER: usize = 8;
const RECORD_SAMPLE: u32 = perf::bindings::PERF_RECORD_SAMPLE;
const RECORD_LOST: u32 = perf::bindings::PERF_RECORD_LOST;

/// What one perf record was: a sample, a count of records the ring lost, or another kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// A tracepoint sample.
    Sample(Record),
    /// The kernel dropped this many records (the ring was full).
    Lost(u64),
    /// Any other record.
    Other,
}

/// Decodes one perf record laid out as `PERF_SAMPLE_TID | TIME | CPU | RAW` asks: header,
/// pid, tid, time, cpu, reserved, raw size, raw bytes.
pub fn decode(rec: &[u8]) -> Option<Decoded> {
    let u32_at =
        |o: usize| -> Option<u32> { Some(u32::from_ne_bytes(rec.get(o..o + 4)?.try_into().ok()?)) };
    let u64_at =
        |o: usize| -> Option<u64> { Some(u64::from_ne_bytes(rec.get(o..o + 8)?.try_into().ok()?)) };
    let kind = u32_at(0)?;
    match kind {
        RECORD_SAMPLE => {
            let size = u32_at(32)? as usize;
            Some(Decoded::Sample(Record {
                pid: u32_at(8)?,
                tid: u32_at(12)?,
                time_ns: u64_at(16)?,
                cpu: u32_at(24)?,
                raw: rec.get(36..36 + size)?.to_vec(),
            }))
        }
        RECORD_LOST => Some(Decoded::Lost(u64_at(16)?)),
        _ => Some(Decoded::Other),
    }
}

/// A ring buffer mapped from a perf fd.
struct Ring {
    base: *mut u8,
    len: usize,
    page: usize,
}

impl Ring {
    fn map(fd: &OwnedFd, data_pages: usize) -> io::Result<Ring> {
        let page = crate::sysinfo::page_size();
        let (p, len) = crate::map_shared(std::os::fd::AsFd::as_fd(fd), page * (1 + data_pages))?;
        Ok(Ring {
            base: p.cast(),
            len,
            page,
        })
    }

    /// Copies every record out of the ring and frees its space.
    fn drain(&mut self, out: &mut Vec<Vec<u8>>) {
        let meta = self.base.cast::<perf::bindings::perf_event_mmap_page>();
        // SAFETY: the first page of the mapping is the kernel's perf_event_mmap_page; the
        // head is read with acquire order so the data before it is visible, as the perf ABI
        // asks.
        let (head, tail, off, size) = unsafe {
            let head = std::ptr::addr_of!((*meta).data_head).read_volatile();
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            let tail = std::ptr::addr_of!((*meta).data_tail).read_volatile();
            let off = std::ptr::addr_of!((*meta).data_offset).read_volatile() as usize;
            let size = std::ptr::addr_of!((*meta).data_size).read_volatile() as usize;
            (head, tail, off, size)
        };
        let (off, size) = if size == 0 {
            (self.page, self.len - self.page)
        } else {
            (off, size)
        };
        // SAFETY: off..off + size lies inside the mapping (the kernel says so, or it is
        // the data pages we mapped).
        let data = unsafe { std::slice::from_raw_parts(self.base.add(off), size) };
        let at = |pos: u64, n: usize| -> Vec<u8> {
            (0..n).map(|i| data[((pos as usize) + i) % size]).collect()
        };
        let mut pos = tail;
        while pos + HEADER as u64 <= head {
            let h = at(pos, HEADER);
            let len = u16::from_ne_bytes([h[6], h[7]]) as usize;
            if len < HEADER {
                break;
            }
            out.push(at(pos, len));
            pos += len as u64;
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        // SAFETY: data_tail is ours to write; it tells the kernel the space is free.
        unsafe { std::ptr::addr_of_mut!((*meta).data_tail).write_volatile(head) };
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: base/len are the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// Tracepoints open on a set of CPUs, one ring each; closed on drop.
pub struct Tracer {
    fds: Vec<OwnedFd>,
    rings: Vec<Ring>,
    formats: Vec<Format>,
    missing: Vec<String>,
    lost: u64,
    unsampled: u64,
    /// [`Tracer::unsampled`] by CPU and tracepoint (`sys:event`).
    unsampled_by: std::collections::BTreeMap<(u32, String), u64>,
    /// The CPU of each CPU's group of descriptors, in the order of `fds`.
    cpus: Vec<usize>,
    /// The events were opened with `PERF_FORMAT_LOST` (Linux 6.0 and later): a read gives
    /// the samples each could not write beside its count.
    lost_readable: bool,
}

/// Data pages per CPU ring by default (4 MiB with 4 KiB pages).
pub const DEFAULT_RING_PAGES: usize = 1024;

/// Opens `fmt` on `cpu`, reading its lost samples beside its count where the kernel can
/// (`PERF_FORMAT_LOST`, Linux 6.0); an older kernel refuses that with EINVAL, and the event is
/// opened without it. Says which it got.
fn open_one(fmt: &Format, cpu: usize) -> io::Result<(OwnedFd, bool)> {
    match open_with(fmt, cpu, true) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            Ok((open_with(fmt, cpu, false)?, false))
        }
        r => Ok((r?, true)),
    }
}

fn open_with(fmt: &Format, cpu: usize, lost: bool) -> io::Result<OwnedFd> {
    let mut attr = perf::bindings::perf_event_attr {
        type_: perf::bindings::PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<perf::bindings::perf_event_attr>() as u32,
        config: fmt.id,
        ..Default::default()
    };
    attr.sample_period = 1;
    attr.sample_type = (perf::bindings::PERF_SAMPLE_TID
        | perf::bindings::PERF_SAMPLE_TIME
        | perf::bindings::PERF_SAMPLE_CPU
        | perf::bindings::PERF_SAMPLE_RAW) as u64;
    if lost {
        attr.read_format = perf::bindings::PERF_FORMAT_LOST as u64;
    }
    attr.set_disabled(1);
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC_RAW;
    // SAFETY: attr is a fully initialised perf_event_attr of the size it states.
    let fd = unsafe {
        perf::perf_event_open(
            &mut attr,
            -1,
            cpu as i32,
            -1,
            perf::bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong,
        )
    };
    if fd < 0 {
        return Err(last_error("perf_event_open(tracepoint)"));
    }
    // SAFETY: fd was just returned by the kernel and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn not_permitted(e: &io::Error) -> Unavailable {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "?".into());
    Unavailable(format!(
        "the kernel's tracepoints cannot be read ({e}; perf_event_paranoid is {paranoid}): run \
         as root (or with CAP_PERFMON), or set /proc/sys/kernel/perf_event_paranoid to -1"
    ))
}

impl Tracer {
    /// Opens the tracepoints `events` (`sys`, `event`) on every CPU of `cpus`, disabled, with
    /// a ring of `ring_pages` data pages (a power of two) per CPU. Tracepoints this kernel
    /// lacks are skipped and named by [`Tracer::missing`]; none present, or no permission,
    /// is [`Unavailable`].
    pub fn open(
        fs: &Tracefs,
        events: &[(&str, &str)],
        cpus: &[usize],
        ring_pages: usize,
    ) -> Result<Tracer, Unavailable> {
        let mut formats: Vec<Format> = Vec::new();
        let mut missing = Vec::new();
        for &(sys, ev) in events {
            match fs.format(sys, ev) {
                Some(f) => formats.push(f),
                None => missing.push(format!("{sys}:{ev}")),
            }
        }
        if formats.is_empty() {
            // A tracefs mounted by root is not readable by others: that is no missing event.
            if let Err(e) = std::fs::read_dir(fs.root().join("events")) {
                if e.kind() == io::ErrorKind::PermissionDenied {
                    return Err(Unavailable(format!(
                        "the kernel's tracepoints cannot be read ({}/events: {e}): run as root \
                         (or with CAP_PERFMON and read access to tracefs)",
                        fs.mountpoint().display()
                    )));
                }
            }
            // Their format files are there but cannot be read: a permission, not a kernel.
            let unreadable = events.iter().find_map(|&(sys, ev)| {
                let path = fs.root().join("events").join(sys).join(ev).join("format");
                let e = std::fs::read(&path).err()?;
                path.exists()
                    .then(|| format!("{}: {e}", fs.shown(&path).display()))
            });
            if let Some(why) = unreadable {
                return Err(Unavailable(format!(
                    "the kernel's tracepoints cannot be read ({why}): run as root (or with \
                     CAP_PERFMON and read access to tracefs)"
                )));
            }
            return Err(Unavailable(format!(
                "none of the tracepoints {} exists under {}",
                missing.join(", "),
                fs.mountpoint().display()
            )));
        }
        // Probe each tracepoint on the first CPU: some (irq_work's, on some kernels) are
        // refused to perf alone; they are skipped and named, the rest are kept.
        let probe_cpu = *cpus
            .first()
            .ok_or_else(|| Unavailable("no CPU to trace".into()))?;
        let mut refused = Vec::new();
        let mut kept = Vec::new();
        // The probe's descriptors are kept as the first CPU's: each close of a tracepoint's
        // last descriptor waits for an RCU grace period under a kernel lock (25-35 ms each on
        // a 2-vCPU virtual machine), so a probe closed and opened again cost a second wait.
        let mut probed = Vec::new();
        let mut lost_readable = true;
        for f in formats {
            match open_one(&f, probe_cpu) {
                Ok((fd, readable)) => {
                    lost_readable &= readable;
                    kept.push(f);
                    probed.push(fd);
                }
                Err(e) => refused.push((f.name.clone(), e)),
            }
        }
        let mut probed = probed.into_iter();
        // Refused for want of descriptors: tracing on without one of them (sched_switch) would
        // give a wrong table, not a shorter one.
        if let Some((name, e)) = refused.iter().find(|(_, e)| out_of_fds(e)) {
            return Err(fds_exhausted(name, e, events.len(), cpus.len()));
        }
        if kept.is_empty() {
            let (name, e) = &refused[0];
            return Err(match e.raw_os_error() {
                Some(libc::EACCES) | Some(libc::EPERM) => not_permitted(e),
                _ => Unavailable(format!("opening tracepoint {name} failed: {e}")),
            });
        }
        missing.extend(
            refused
                .iter()
                .map(|(n, e)| format!("{n} (refused: {})", e.kind())),
        );
        let mut t = Tracer {
            fds: Vec::new(),
            rings: Vec::new(),
            formats: kept,
            missing,
            lost: 0,
            unsampled: 0,
            unsampled_by: Default::default(),
            cpus: cpus.to_vec(),
            lost_readable,
        };
        for &cpu in cpus {
            let mut leader: Option<i32> = None;
            for f in &t.formats {
                let reused = if cpu == probe_cpu {
                    probed.next()
                } else {
                    None
                };
                let fd = reused.map_or_else(
                    || {
                        open_one(f, cpu).map(|(fd, readable)| {
                            t.lost_readable &= readable;
                            fd
                        })
                    },
                    Ok,
                );
                let fd = fd.map_err(|e| match e.raw_os_error() {
                    Some(libc::EACCES) | Some(libc::EPERM) => not_permitted(&e),
                    _ if out_of_fds(&e) => fds_exhausted(&f.name, &e, events.len(), cpus.len()),
                    _ => Unavailable(format!(
                        "opening tracepoint {} on CPU {cpu} failed: {e}",
                        f.name
                    )),
                })?;
                match leader {
                    None => {
                        let ring = Ring::map(&fd, ring_pages).map_err(|e| {
                            Unavailable(format!("mapping the trace ring of CPU {cpu}: {e}"))
                        })?;
                        leader = Some(fd.as_raw_fd());
                        t.rings.push(ring);
                    }
                    Some(l) => {
                        // SAFETY: both are perf fds of the same CPU that we hold open.
                        if unsafe { perf::ioctls::SET_OUTPUT(fd.as_raw_fd(), l) } != 0 {
                            let e = last_error("ioctl(PERF_EVENT_IOC_SET_OUTPUT)");
                            return Err(Unavailable(format!(
                                "sharing CPU {cpu}'s trace ring: {e}"
                            )));
                        }
                    }
                }
                t.fds.push(fd);
            }
        }
        Ok(t)
    }

    /// The formats of the tracepoints opened.
    pub fn formats(&self) -> &[Format] {
        &self.formats
    }

    /// Tracepoints asked for that this kernel lacks (`sys:event`).
    pub fn missing(&self) -> &[String] {
        &self.missing
    }

    fn ioctl_all(&self, enable: bool) -> io::Result<()> {
        set_enabled(&self.fds, enable)
    }

    /// Starts recording.
    pub fn enable(&self) -> io::Result<()> {
        self.ioctl_all(true)
    }

    /// Stops recording.
    pub fn disable(&self) -> io::Result<()> {
        self.ioctl_all(false)
    }

    /// Every record in the rings, in time order; the records the kernel dropped are counted
    /// in [`Tracer::lost`].
    pub fn drain(&mut self) -> Vec<Record> {
        let mut raw = Vec::new();
        for r in &mut self.rings {
            r.drain(&mut raw);
        }
        let mut out = Vec::with_capacity(raw.len());
        let mut reported = 0;
        for r in raw {
            match decode(&r) {
                Some(Decoded::Sample(s)) => out.push(s),
                Some(Decoded::Lost(n)) => reported += n,
                _ => {}
            }
        }
        // A ring read only at the end never gets the kernel's LOST record (it is written once
        // space is freed): each event's own tally of the samples it could not write says how
        // many are missing. Its count says more: the kernel counts, but never samples, a
        // tracepoint that fires in an interrupt taken while its CPU idles (perf record misses
        // them too), so the count less the records is not all lost to a full ring.
        let mut records: std::collections::BTreeMap<(u32, u64), u64> = Default::default();
        for r in &out {
            *records.entry((r.cpu, r.event_id())).or_default() += 1;
        }
        let (mut counted, mut dropped) = (0, 0);
        let per_cpu = self.formats.len().max(1);
        for (i, fd) in self.fds.iter().enumerate() {
            let Some((n, l)) = event_count(fd, self.lost_readable) else {
                continue;
            };
            counted += n;
            dropped += l;
            let (Some(&cpu), Some(f)) = (self.cpus.get(i / per_cpu), self.formats.get(i % per_cpu))
            else {
                continue;
            };
            let got = records.get(&(cpu as u32, f.id)).copied().unwrap_or(0);
            let never = n.saturating_sub(got + l);
            if self.lost_readable && never > 0 {
                *self
                    .unsampled_by
                    .entry((cpu as u32, f.name.clone()))
                    .or_default() += never;
            }
        }
        let missing = counted.saturating_sub(out.len() as u64);
        let (lost, unsampled) =
            split_missing(missing, reported, self.lost_readable.then_some(dropped));
        self.lost += lost;
        self.unsampled += unsampled;
        out.sort_by_key(|r| (r.time_ns, r.cpu));
        out
    }

    /// Records the kernel dropped because a ring was full.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Events the kernel counted but never sampled, none of them lost to a full ring: a
    /// tracepoint firing in an interrupt of an idle CPU (a timer waking a sleeper there). Zero
    /// on a kernel older than 6.0, which counts them as lost.
    pub fn unsampled(&self) -> u64 {
        self.unsampled
    }

    /// [`Tracer::unsampled`] by CPU and tracepoint (`sys:event`), where any.
    pub fn unsampled_by(&self) -> &std::collections::BTreeMap<(u32, String), u64> {
        &self.unsampled_by
    }
}

impl Tracer {
    /// Sets the kernel-side filter `filter` (tracefs filter syntax, e.g. `common_pid == 7`)
    /// on the tracepoint `name` (`sys:event`) on every CPU: records it rejects never take ring
    /// space. An unknown name is an error.
    pub fn set_filter(&self, name: &str, filter: &str) -> io::Result<()> {
        let i = self
            .formats
            .iter()
            .position(|f| f.name == name)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{name}: not open")))?;
        let c = CString::new(filter)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the filter"))?;
        // The fds are laid out CPU by CPU, one per format, in the formats' order.
        for fd in self.fds.iter().skip(i).step_by(self.formats.len()) {
            // SAFETY: fd is a perf fd we hold open; c is a NUL-terminated string the kernel
            // only reads during the call.
            if unsafe { perf::ioctls::SET_FILTER(fd.as_raw_fd(), c.as_ptr().cast_mut()) } != 0 {
                return Err(last_error("ioctl(PERF_EVENT_IOC_SET_FILTER)"));
            }
        }
        Ok(())
    }
}

/// Counts the system calls the calling thread enters (the `raw_syscalls:sys_enter`
/// tracepoint as a per-thread perf count, optionally filtered by the kernel): the kernel's own
/// tally, not the caller's. While it is open the kernel takes its slower traced path on every
/// system call of every task, so it is opened around a counted pass, never a timed one.
pub struct SyscallCounter {
    fd: OwnedFd,
    /// Whether every call is counted (the disabling `ioctl` among them).
    unfiltered: bool,
}

impl SyscallCounter {
    /// Opens the count for this thread, disabled; `filter` (tracefs syntax, `id == 426`)
    /// keeps only the calls it matches.
    pub fn open(fs: &Tracefs, filter: Option<&str>) -> Result<SyscallCounter, Unavailable> {
        let fmt = fs.format("raw_syscalls", "sys_enter").ok_or_else(|| {
            Unavailable(format!(
                "the tracepoint raw_syscalls:sys_enter is not under {}",
                fs.mountpoint().display()
            ))
        })?;
        let mut attr = perf::bindings::perf_event_attr {
            type_: perf::bindings::PERF_TYPE_TRACEPOINT,
            size: std::mem::size_of::<perf::bindings::perf_event_attr>() as u32,
            config: fmt.id,
            ..Default::default()
        };
        attr.set_disabled(1);
        // SAFETY: attr is a fully initialised perf_event_attr of the size it states; pid 0 and
        // cpu -1 count the calling thread wherever it runs.
        let fd = unsafe {
            perf::perf_event_open(
                &mut attr,
                0,
                -1,
                -1,
                perf::bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong,
            )
        };
        if fd < 0 {
            let e = last_error("perf_event_open(raw_syscalls:sys_enter)");
            return Err(match e.raw_os_error() {
                Some(libc::EACCES) | Some(libc::EPERM) => not_permitted(&e),
                _ => Unavailable(format!("counting system calls: {e}")),
            });
        }
        // SAFETY: fd was just returned by the kernel and is owned by no one else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        if let Some(f) = filter {
            let c = CString::new(f).map_err(|_| Unavailable("a NUL in the filter".into()))?;
            // SAFETY: fd is the perf fd just opened; c is a NUL-terminated string the kernel
            // only reads during the call.
            if unsafe { perf::ioctls::SET_FILTER(fd.as_raw_fd(), c.as_ptr().cast_mut()) } != 0 {
                let e = last_error("ioctl(PERF_EVENT_IOC_SET_FILTER)");
                return Err(Unavailable(format!("filtering system calls by `{f}`: {e}")));
            }
        }
        Ok(SyscallCounter {
            fd,
            unfiltered: filter.is_none(),
        })
    }

    /// Runs `f` with the count on and returns its result and the calls it made.
    pub fn count<R>(&self, f: impl FnOnce() -> R) -> io::Result<(R, u64)> {
        let raw = self.fd.as_raw_fd();
        // SAFETY: raw is the perf fd we hold open; the argument is unused.
        let reset = unsafe { perf::ioctls::RESET(raw, 0) };
        // SAFETY: as above.
        let enable = unsafe { perf::ioctls::ENABLE(raw, 0) };
        if reset != 0 || enable != 0 {
            return Err(last_error("ioctl(PERF_EVENT_IOC_RESET/ENABLE)"));
        }
        let r = f();
        // SAFETY: as above.
        if unsafe { perf::ioctls::DISABLE(raw, 0) } != 0 {
            return Err(last_error("ioctl(PERF_EVENT_IOC_DISABLE)"));
        }
        let (n, _) = event_count(&self.fd, false)
            .ok_or_else(|| io::Error::other("reading the system-call count"))?;
        // Unfiltered, the disabling ioctl entered the kernel while the count was on.
        Ok((r, n.saturating_sub(u64::from(self.unfiltered))))
    }
}

/// Turns perf events on or off, each of `fds`.
pub(crate) fn set_enabled<'a>(
    fds: impl IntoIterator<Item = &'a OwnedFd>,
    on: bool,
) -> io::Result<()> {
    for fd in fds {
        // SAFETY: fd is a perf event's descriptor the caller holds open; the argument is unused
        // by these two requests.
        let r = unsafe {
            if on {
                perf::ioctls::ENABLE(fd.as_raw_fd(), 0)
            } else {
                perf::ioctls::DISABLE(fd.as_raw_fd(), 0)
            }
        };
        if r != 0 {
            return Err(last_error("ioctl(PERF_EVENT_IOC_ENABLE/DISABLE)"));
        }
    }
    Ok(())
}

/// Splits the `missing` records (the events' counts less the records read) into (lost to a
/// full ring, never sampled), from the kernel's LOST records (`reported`) and the events' own
/// tally of samples they could not write (`dropped`, `None` on a kernel without it, where
/// every missing record counts as lost: the safe side).
fn split_missing(missing: u64, reported: u64, dropped: Option<u64>) -> (u64, u64) {
    match dropped {
        Some(d) => {
            let lost = reported.max(d).min(missing);
            (lost, missing - lost)
        }
        None => (reported.max(missing), 0),
    }
}

/// How many times the event of `fd` fired (the perf count), and, when it was opened with
/// `PERF_FORMAT_LOST` (`lost`), how many of its samples the kernel could not write (else 0).
fn event_count(fd: &OwnedFd, lost: bool) -> Option<(u64, u64)> {
    let mut v = [0u64; 2];
    let want = if lost { 16 } else { 8 };
    // SAFETY: reads at most `want` ≤ 16 bytes into v, which is 16 bytes long and writable.
    let n = unsafe { libc::read(fd.as_raw_fd(), v.as_mut_ptr().cast(), want) };
    (n == want as isize).then_some((v[0], v[1]))
}

/// A reading of the counter `now` and of `CLOCK_MONOTONIC_RAW` at the same moment (the
/// counter read on both sides, the middle kept): two of them map trace times onto the counter.
pub fn anchor(now: impl Fn() -> u64) -> (u64, u64) {
    let a = now();
    let raw = monotonic_raw_ns();
    let b = now();
    (a + (b.wrapping_sub(a)) / 2, raw)
}

/// [`anchor`] on the clock `id` (a mechanism's records may be timed by another clock).
pub fn anchor_on(id: libc::clockid_t, now: impl Fn() -> u64) -> (u64, u64) {
    let a = now();
    let t = crate::clock::clock_ns(id);
    let b = now();
    (a + (b.wrapping_sub(a)) / 2, t)
}

#[cfg(test)]
pub(crate) mod tests;
