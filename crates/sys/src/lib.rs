//! oscost's operating-system layer: the cycle counter and thin, safe wrappers over the Linux
//! calls oscost needs. This is the only crate of oscost where `unsafe` is allowed; every other
//! crate forbids it, so the fence is kept by the compiler rather than by review.
//!
//! Each wrapper does one call and turns its failure into an `io::Error` that names the call.
//! Measured calls live in [`calls`] so that the exact call path timed is visible in one file.
//! Nothing here knows the command line or summarises a figure.
#![warn(missing_docs)]

pub mod bill;
pub mod bpf;
pub mod buf;
pub mod calls;
pub mod cgroup;
pub mod clock;
pub mod ftrace;
pub mod ipc;
pub mod kseam;
pub mod ktrace;
pub mod launch;
pub mod lifetime;
pub mod lockring;
pub mod mount;
pub mod net;
pub mod ns;
pub mod oom;
pub mod pages;
pub mod pmqos;
pub mod raw;
pub mod readiness;
pub mod seccomp;
pub mod shm;
pub mod signals;
pub mod spawn;
pub mod spin;
pub mod split;
pub mod syscount;
pub mod sysinfo;
pub mod task;
pub mod timeline;
pub mod timer;
pub mod token;
pub mod uring;
pub mod usage;
pub mod wakeup;
pub mod work;

/// A test that cannot run here says so, and `cargo xtask test` counts it as skipped.
#[cfg(test)]
#[path = "../../../xtask/src/skip.rs"]
mod skip;

use std::io;

/// Wraps the last OS error with the name of the call that failed. Cold and out of line, so a
/// timed call's success path carries none of it.
#[cold]
#[inline(never)]
pub fn last_error(call: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{call}: {e}"))
}

/// Maps `len` (at least 1) zeroed bytes of anonymous memory at a page boundary, shared with
/// processes forked later when `shared`, else private.
pub(crate) fn map_anonymous(len: usize, shared: bool) -> io::Result<std::ptr::NonNull<u8>> {
    let (kind, name) = if shared {
        (libc::MAP_SHARED, "mmap(MAP_SHARED|MAP_ANONYMOUS)")
    } else {
        (libc::MAP_PRIVATE, "mmap(MAP_PRIVATE|MAP_ANONYMOUS)")
    };
    // SAFETY: an anonymous mapping at a kernel-chosen address aliases nothing of ours.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len.max(1),
            libc::PROT_READ | libc::PROT_WRITE,
            kind | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(last_error(name));
    }
    std::ptr::NonNull::new(p.cast::<u8>()).ok_or_else(|| last_error(name))
}

/// The calling thread's kernel task id.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Pins the calling thread to `cpus`.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    set_affinity_of(0, cpus)
}

/// A kernel CPU set holding `cpus`.
pub(crate) fn cpu_set(cpus: &[usize]) -> io::Result<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond CPU_SETSIZE"),
            ));
        }
        // SAFETY: c < CPU_SETSIZE was checked, set is a valid cpu_set_t.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    Ok(set)
}

/// Pins task `tid` (0 = the calling thread) to `cpus`.
pub fn set_affinity_of(tid: i32, cpus: &[usize]) -> io::Result<()> {
    let set = cpu_set(cpus)?;
    // SAFETY: set is a valid cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(last_error("sched_setaffinity"));
    }
    Ok(())
}

/// The CPUs the calling thread may run on.
pub fn affinity() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid, writable cpu_set_t of the size passed.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Err(last_error("sched_getaffinity"));
    }
    // SAFETY: i < CPU_SETSIZE and set is initialised.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
        .collect())
}

/// Sets the nice value of the calling thread; threads it creates afterwards inherit it.
pub fn set_nice(nice: i32) -> io::Result<()> {
    // SAFETY: PRIO_PROCESS with who=0 is the calling process; no pointers involved.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
    if r != 0 {
        return Err(last_error("setpriority"));
    }
    // On Linux setpriority(PRIO_PROCESS, 0) changes only the calling thread; that is the
    // measuring thread, and threads it creates later inherit it.
    Ok(())
}

/// The calling thread's nice value.
pub fn nice() -> io::Result<i32> {
    // SAFETY: errno is cleared first because -1 is a valid priority.
    unsafe { *libc::__errno_location() = 0 };
    // SAFETY: PRIO_PROCESS with who=0 is the calling thread; no pointers involved.
    let r = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    if r == -1 && io::Error::last_os_error().raw_os_error() != Some(0) {
        return Err(last_error("getpriority"));
    }
    Ok(r)
}

/// Context switches of a task so far: (voluntary, involuntary).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Switches {
    /// Voluntary switches (blocked waiting for something).
    pub voluntary: u64,
    /// Involuntary switches (preempted, or yielded).
    pub involuntary: u64,
}

impl Switches {
    /// Both kinds together: wake-up preemption and yields count as involuntary, so a switch
    /// benchmark must sum them.
    pub fn total(&self) -> u64 {
        self.voluntary + self.involuntary
    }

    /// Switches since `earlier`.
    pub fn since(&self, earlier: Switches) -> Switches {
        Switches {
            voluntary: self.voluntary.saturating_sub(earlier.voluntary),
            involuntary: self.involuntary.saturating_sub(earlier.involuntary),
        }
    }
}

fn rusage(who: i32) -> libc::rusage {
    // SAFETY: rusage is plain data; zeroed is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid, writable rusage; `who` is one of the RUSAGE_* constants.
    unsafe { libc::getrusage(who, &mut ru) };
    ru
}

/// The calling thread's switches (`getrusage(RUSAGE_THREAD)`). Allocation-free and
/// async-signal-safe, so a forked child may call it.
pub fn thread_switches() -> Switches {
    let ru = rusage(libc::RUSAGE_THREAD);
    Switches {
        voluntary: ru.ru_nvcsw as u64,
        involuntary: ru.ru_nivcsw as u64,
    }
}

/// Peak resident memory of this process since start or the last [`reset_peak_rss`], KiB
/// (`VmHWM`; `ru_maxrss`, which cannot be reset, where /proc is not readable).
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or_else(|| rusage(libc::RUSAGE_SELF).ru_maxrss as u64)
}

/// Resident memory of this process now, KiB (`VmRSS`).
pub fn current_rss_kib() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
}

/// Resets the peak-memory mark to the current size (`5` to `/proc/self/clear_refs`, Linux
/// 4.0+), so a later [`peak_rss_kib`] describes one case, not the whole run so far.
pub fn reset_peak_rss() -> io::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5")
}

/// Migrations of task `tid` of this process so far (`se.nr_migrations` in
/// `/proc/self/task/<tid>/sched`), if the kernel exposes it.
pub fn migrations(tid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/sched")).ok()?;
    text.lines()
        .find(|l| l.starts_with("se.nr_migrations"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse().ok())
}

/// A resource limit: (soft, hard), `None` meaning unlimited.
pub fn rlimit(resource: libc::__rlimit_resource_t) -> io::Result<(Option<u64>, Option<u64>)> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: rl is a valid, writable rlimit.
    let r = unsafe { libc::getrlimit(resource, &mut rl) };
    if r != 0 {
        return Err(last_error("getrlimit"));
    }
    let f = |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then_some(v);
    Ok((f(rl.rlim_cur), f(rl.rlim_max)))
}

static TASKS_STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Records that this process started `n` threads or processes, so the load probe does not
/// count them as other programs' forks.
pub fn count_started_tasks(n: u64) {
    TASKS_STARTED.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
}

/// Threads and processes this process started so far (as recorded by [`count_started_tasks`]).
pub fn tasks_started() -> u64 {
    TASKS_STARTED.load(std::sync::atomic::Ordering::Relaxed)
}

/// A shared read-write mapping of `len` bytes of the object behind `fd` (a BPF array, a perf
/// ring) at a kernel-chosen address, `len` rounded up to whole pages; the mapping and its
/// length. The caller unmaps it.
pub fn map_shared(
    fd: std::os::fd::BorrowedFd<'_>,
    len: usize,
) -> io::Result<(*mut libc::c_void, usize)> {
    let page = sysinfo::page_size();
    let len = len.div_ceil(page) * page;
    // SAFETY: a fresh shared mapping at a kernel-chosen address: it aliases no Rust object.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(last_error("mmap"));
    }
    Ok((p, len))
}

/// Raises the soft open-file limit to the hard one: a ring of N pipe-linked tasks needs about
/// 2N descriptors, and the common soft default (1024) would stop a default sweep halfway.
/// Returns the soft limit now in force.
pub fn raise_open_file_limit() -> io::Result<u64> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: rl is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return Err(last_error("getrlimit"));
    }
    if rl.rlim_cur < rl.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: rl.rlim_max,
            rlim_max: rl.rlim_max,
        };
        // SAFETY: raised is a valid rlimit; raising the soft limit up to the hard one needs
        // no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
            return Err(last_error("setrlimit"));
        }
        return Ok(raised.rlim_cur);
    }
    Ok(rl.rlim_cur)
}

/// Whether standard output leads nowhere any more: a pipe whose reader has gone (`oscost |
/// head -3`), which `poll` reports as POLLERR on the write end. A terminal or a file never is.
pub fn stdout_reader_gone() -> bool {
    let mut p = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: p is one valid pollfd for the call's duration; timeout 0 never blocks.
    let r = unsafe { libc::poll(&mut p, 1, 0) };
    r == 1 && p.revents & libc::POLLERR != 0
}

/// What [`wait_writable`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writable {
    /// A write of up to `PIPE_BUF` bytes would not block.
    Ready,
    /// Nothing changed within the time given.
    NotYet,
    /// The reader has gone (POLLERR or POLLHUP): a write would fail with EPIPE.
    Gone,
}

/// Waits up to `timeout_ms` for `fd` to take a write without blocking (`poll` for POLLOUT).
pub fn wait_writable(
    fd: std::os::fd::BorrowedFd<'_>,
    timeout_ms: i32,
) -> std::io::Result<Writable> {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: p is one valid pollfd for the call's duration, the descriptor is borrowed open.
    let r = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        return if e.kind() == std::io::ErrorKind::Interrupted {
            Ok(Writable::NotYet)
        } else {
            Err(e)
        };
    }
    Ok(if r == 0 {
        Writable::NotYet
    } else if p.revents & libc::POLLNVAL != 0 {
        return Err(std::io::Error::from_raw_os_error(libc::EBADF));
    } else if p.revents & libc::POLLOUT != 0 {
        Writable::Ready
    } else {
        Writable::Gone
    })
}
