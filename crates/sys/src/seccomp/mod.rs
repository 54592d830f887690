//! seccomp filters and the forked children that time system calls under them.
//!
//! A filter, once installed, cannot be removed, so each filter set runs in a child of its own:
//! the child sets `no_new_privs` (which lets an unprivileged process install filters), installs
//! its set, reads back from `/proc/self/status` how many filters it runs under, and then times
//! batches of one system call when the parent asks, reading the counter itself. The parent
//! only says which call and how many; the timing never includes the hand-over.
//!
//! The filters are a few lines of classic BPF over `struct seccomp_data` (system call number
//! at offset 0, architecture at 4, arguments from 16), built before the fork.

mod docker;
#[cfg(test)]
mod docker_tests;
mod profile;

pub use docker::*;
pub use profile::*;

use crate::clock::Clock;
use crate::ipc::{futex_wait_for, wake_all};
use crate::shm::SharedMap;
use crate::task::{Failure, TaskBody};
use std::hint::black_box;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The audit architecture of this build, which every filter checks first as real ones do.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
/// The audit architecture of this build, which every filter checks first as real ones do.
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// The argument value the argument-reading filter refuses: no call oscost times passes it.
pub const REFUSED_ARGUMENT: u32 = 0x5ec0_5ec0;

const LD_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const JSET: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
/// The low 32 bits of the first argument (little-endian).
const OFF_ARG0: u32 = 16;
const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;
const DENY: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
/// System call numbers at or above this are the x32 ABI's, which profiles refuse.
const X32_BIT: u32 = 0x4000_0000;

fn op(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    op(code, 0, 0, k)
}

/// One seccomp filter: a classic BPF program.
#[derive(Debug, Clone)]
pub struct Program(Vec<libc::sock_filter>);

impl Program {
    /// Instructions in the program.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it has no instruction (never true of the filters built here).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The architecture check every filter starts with: another architecture's call kills.
    fn arch_check() -> Vec<libc::sock_filter> {
        vec![
            stmt(LD_ABS, OFF_ARCH),
            op(JEQ, 1, 0, AUDIT_ARCH),
            stmt(RET, KILL),
        ]
    }

    /// Checks the architecture and allows every call: the result depends only on the call
    /// number, so the kernel's per-call action cache (Linux 5.11 and later) can answer it.
    pub fn allow_all() -> Program {
        let mut p = Self::arch_check();
        p.push(stmt(RET, ALLOW));
        Program(p)
    }

    /// Checks the architecture, then reads the first argument of every call and refuses
    /// [`REFUSED_ARGUMENT`]: reading an argument keeps the kernel from caching the result, so
    /// the filter runs on every call.
    pub fn reads_argument() -> Program {
        let mut p = Self::arch_check();
        p.extend([
            stmt(LD_ABS, OFF_ARG0),
            op(JEQ, 0, 1, REFUSED_ARGUMENT),
            stmt(RET, DENY),
            stmt(RET, ALLOW),
        ]);
        Program(p)
    }

    /// Checks the architecture and hands every `getpid` to a supervisor
    /// (`SECCOMP_RET_USER_NOTIF`), allowing every other call: what a container runtime's
    /// supervisor (an emulated `mount`, a `mknod`) costs each call it answers.
    pub fn notify_getpid() -> Program {
        let mut p = Self::arch_check();
        p.extend([
            stmt(LD_ABS, OFF_NR),
            op(JEQ, 0, 1, libc::SYS_getpid as u32),
            stmt(RET, libc::SECCOMP_RET_USER_NOTIF),
            stmt(RET, ALLOW),
        ]);
        Program(p)
    }

    /// A runtime-like profile as one filter: the architecture check, x32 calls refused, then
    /// each call of [`PROFILE_CALLS`] compared in turn and allowed, three of them only with
    /// arguments a runtime allows (`personality` to the usual personas, `clone` without
    /// namespace flags, `socket` outside `AF_VSOCK`), `clone3` answered `ENOSYS`, and every
    /// other call refused with `EPERM`. `None` on an architecture without a list.
    pub fn profile() -> Option<Program> {
        #[cfg(target_arch = "x86_64")]
        {
            let mut p = Self::arch_check();
            p.extend([
                stmt(LD_ABS, OFF_NR),
                op(JGE, 0, 1, X32_BIT),
                stmt(RET, DENY),
            ]);
            for &name in PROFILE_CALLS {
                let nr = call_number(name)?;
                let checked = argument_check(name);
                // Skip this call's block when the number differs; the accumulator still
                // holds the number afterwards, since every block ends in returns.
                p.push(op(JEQ, 0, (checked.len() + 1) as u8, nr));
                p.extend(checked);
                p.push(stmt(RET, ALLOW));
            }
            // As runtimes answer it: clone3 "does not exist", so that C libraries fall back to
            // clone, whose flags the filter can read (a refusal would fail every new thread).
            p.push(op(JEQ, 0, 1, libc::SYS_clone3 as u32));
            p.push(stmt(RET, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32));
            p.push(stmt(RET, DENY));
            Some(Program(p))
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }
}

/// The argument test a runtime's profile puts on `name`, ending in a refusal or a jump past
/// it to the allow that follows; empty for calls allowed whatever their arguments.
#[cfg(target_arch = "x86_64")]
fn argument_check(name: &str) -> Vec<libc::sock_filter> {
    match name {
        "personality" => {
            let allowed = [0x0, 0x8, 0x2_0000, 0x2_0008, 0xffff_ffff];
            let mut p = vec![stmt(LD_ABS, OFF_ARG0)];
            let n = allowed.len();
            for (i, v) in allowed.into_iter().enumerate() {
                // Equal: jump over the remaining tests and the refusal.
                p.push(op(JEQ, (n - i) as u8, 0, v));
            }
            p.push(stmt(RET, DENY));
            p
        }
        "clone" => {
            let namespaces = (libc::CLONE_NEWNS
                | libc::CLONE_NEWUTS
                | libc::CLONE_NEWIPC
                | libc::CLONE_NEWUSER
                | libc::CLONE_NEWPID
                | libc::CLONE_NEWNET
                | libc::CLONE_NEWCGROUP) as u32;
            vec![
                stmt(LD_ABS, OFF_ARG0),
                op(JSET, 0, 1, namespaces),
                stmt(RET, DENY),
            ]
        }
        "socket" => vec![
            stmt(LD_ABS, OFF_ARG0),
            op(JEQ, 0, 1, libc::AF_VSOCK as u32),
            stmt(RET, DENY),
        ],
        _ => Vec::new(),
    }
}

/// What `/proc/self/status` says of a process's seccomp state and threads. Each is `None`
/// when the kernel does not show the field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Status {
    /// `Seccomp:`: 0 none, 1 strict, 2 filter.
    pub mode: Option<u64>,
    /// `Seccomp_filters:`: filters the process runs under (Linux 5.9 and later).
    pub filters: Option<u64>,
    /// `Threads:`.
    pub threads: Option<u64>,
}

/// Reads the calling process's [`Status`] with raw calls into a buffer on the stack: safe in
/// a forked child.
pub fn read_status() -> Status {
    let mut buf = [0u8; 8192];
    let Some(len) = crate::raw::read_file(c"/proc/self/status", &mut buf) else {
        return Status::default();
    };
    let text = &buf[..len];
    Status {
        mode: status_field(text, b"Seccomp:"),
        filters: status_field(text, b"Seccomp_filters:"),
        threads: status_field(text, b"Threads:"),
    }
}

/// The number after `name` at the start of a line of `text`, without allocating.
fn status_field(text: &[u8], name: &[u8]) -> Option<u64> {
    let mut rest = text;
    loop {
        if let Some(after) = rest.strip_prefix(name) {
            let mut v: Option<u64> = None;
            for &b in after {
                match b {
                    b' ' | b'\t' if v.is_none() => {}
                    b'0'..=b'9' => {
                        v = Some(v.unwrap_or(0).checked_mul(10)? + u64::from(b - b'0'));
                    }
                    _ => break,
                }
            }
            return v;
        }
        let next = rest.iter().position(|&b| b == b'\n')?;
        rest = rest.get(next + 1..)?;
    }
}

/// The system call a batch times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Call {
    /// The loop alone: what the sampler subtracts.
    Empty = 0,
    /// `getpid`: the kernel's shortest path.
    Getpid = 1,
    /// `fstat` of `/dev/null`, opened before the fork: a call that does some work.
    Fstat = 2,
}

impl Call {
    fn from_code(c: u32) -> Option<Call> {
        [Call::Empty, Call::Getpid, Call::Fstat]
            .into_iter()
            .find(|k| *k as u32 == c)
    }
}

/// What a child found when it set itself up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    /// Its seccomp state and threads after installing its filters.
    pub status: Status,
    /// The errno of the step that failed, and which: `no_new_privs` or filter `k` (1-based).
    pub failed: Option<(i32, SetupStep)>,
}

/// A step of a child's set-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupStep {
    /// `prctl(PR_SET_NO_NEW_PRIVS)`.
    NoNewPrivs,
    /// Installing the filter of this number (1-based).
    Filter(u32),
    /// Installing the supervisor's filter or starting the supervisor.
    Supervisor,
}

/// One timed batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Batch {
    /// Counter ticks the batch took.
    pub ticks: u64,
    /// Calls that returned an error (a filter refused them).
    pub failed: u64,
    /// Voluntary switches of the timing child during the batch.
    pub voluntary: u64,
    /// Involuntary switches (preemptions) of the timing child during the batch.
    pub involuntary: u64,
}

const NOT_READ: u64 = u64::MAX;

/// What one child installs.
#[derive(Debug, Clone)]
pub struct Child {
    /// Its filters, installed in order.
    pub filters: Vec<Program>,
    /// A last filter handing calls to a supervisor, and the CPUs of that supervisor: a process
    /// the child forks once the filter is in, which answers each call it is handed.
    pub notify: Option<(Program, crate::task::CpuMask)>,
}

/// A child's words in the shared mapping, one cache line each group.
#[repr(C, align(64))]
struct Slot {
    /// 0 while setting up, 1 ready, 2 failed.
    state: AtomicU32,
    /// Bumped by the parent for each request (and by the halt).
    cmd: AtomicU32,
    /// The request last answered.
    done: AtomicU32,
    call: AtomicU32,
    n: AtomicU64,
    ticks: AtomicU64,
    failed: AtomicU64,
    errno: AtomicU32,
    step: AtomicU32,
    /// Voluntary and involuntary switches of the child during the batches.
    voluntary: AtomicU64,
    involuntary: AtomicU64,
    /// Calls the supervisor answered.
    answered: AtomicU64,
    mode: AtomicU64,
    filters: AtomicU64,
    threads: AtomicU64,
}

#[repr(C, align(64))]
struct Header {
    stop: AtomicU32,
}

/// The children of one run: the filters each installs, the shared words through which the
/// parent asks for batches, and the file `fstat` reads. It is the [`TaskBody`] of a process
/// team, child `i` running under `children[i]`.
pub struct Board {
    map: SharedMap,
    sets: Vec<Child>,
    clock: Clock,
    file: OwnedFd,
}

impl Board {
    /// Prepares one child per entry (no filter: a bare child) before any is forked.
    pub fn new(sets: Vec<Child>, clock: Clock) -> io::Result<Board> {
        let len = std::mem::size_of::<Header>() + sets.len() * std::mem::size_of::<Slot>();
        let file = std::fs::File::open("/dev/null")
            .map_err(|e| io::Error::new(e.kind(), format!("opening /dev/null: {e}")))?;
        Ok(Board {
            map: SharedMap::new(len)?,
            sets,
            clock,
            file: file.into(),
        })
    }

    /// Children the board holds.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    fn header(&self) -> &Header {
        // SAFETY: the mapping starts with a zeroed Header (atomics, valid when zero),
        // page-aligned, and lives as long as self.
        unsafe { &*self.map.at::<Header>() }
    }

    fn slot(&self, i: usize) -> Option<&Slot> {
        if i >= self.sets.len() {
            return None;
        }
        // SAFETY: i < len and the mapping holds len zeroed Slots right after the Header
        // (whose size is a multiple of 64, so each is aligned); lives as long as self; only
        // accessed atomically.
        Some(unsafe {
            &*self
                .map
                .at::<u8>()
                .add(std::mem::size_of::<Header>())
                .cast::<Slot>()
                .add(i)
        })
    }

    fn stopped(&self) -> bool {
        self.header().stop.load(Ordering::Acquire) != 0
    }

    /// Makes every child return and wakes a parent waiting on one: the team's halt.
    pub fn halt(&self) {
        self.header().stop.store(1, Ordering::Release);
        for i in 0..self.sets.len() {
            if let Some(s) = self.slot(i) {
                // A changed word also frees a child about to sleep on it.
                s.cmd.fetch_add(1, Ordering::AcqRel);
                wake_all(&s.cmd);
                wake_all(&s.state);
                wake_all(&s.done);
            }
        }
    }

    /// Waits, at most `patience`, until child `i` has set itself up; what it found.
    pub fn wait_ready(&self, i: usize, patience: Duration) -> io::Result<Setup> {
        let s = self.slot(i).ok_or_else(|| no_child(i))?;
        let deadline = Instant::now() + patience;
        loop {
            let state = s.state.load(Ordering::Acquire);
            if state != 0 {
                let get =
                    |w: &AtomicU64| Some(w.load(Ordering::Relaxed)).filter(|&v| v != NOT_READ);
                let status = Status {
                    mode: get(&s.mode),
                    filters: get(&s.filters),
                    threads: get(&s.threads),
                };
                let failed = (state == 2).then(|| {
                    let step = match s.step.load(Ordering::Relaxed) {
                        0 => SetupStep::NoNewPrivs,
                        u32::MAX => SetupStep::Supervisor,
                        k => SetupStep::Filter(k),
                    };
                    (s.errno.load(Ordering::Relaxed) as i32, step)
                });
                return Ok(Setup { status, failed });
            }
            if self.stopped() {
                return Err(halted());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "seccomp child {i} did not set itself up within {} s",
                        patience.as_secs()
                    ),
                ));
            }
            futex_wait_for(&s.state, 0, Some(left.min(Duration::from_millis(100))));
        }
    }

    /// Has child `i` time `n` calls of `call` and returns the batch; gives up (an
    /// `Interrupted` error) within 20 ms of `cancel` being set, so that a child that never
    /// answers (its supervisor stopped with SIGSTOP) does not hold a run after Ctrl-C.
    pub fn time(
        &self,
        i: usize,
        call: Call,
        n: u64,
        cancel: &std::sync::atomic::AtomicBool,
    ) -> io::Result<Batch> {
        let s = self.slot(i).ok_or_else(|| no_child(i))?;
        s.call.store(call as u32, Ordering::Relaxed);
        s.n.store(n, Ordering::Relaxed);
        let want = s.cmd.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
        wake_all(&s.cmd);
        loop {
            let done = s.done.load(Ordering::Acquire);
            if done == want {
                return Ok(Batch {
                    ticks: s.ticks.load(Ordering::Relaxed),
                    failed: s.failed.load(Ordering::Relaxed),
                    voluntary: s.voluntary.load(Ordering::Relaxed),
                    involuntary: s.involuntary.load(Ordering::Relaxed),
                });
            }
            if self.stopped() {
                return Err(halted());
            }
            if cancel.load(Ordering::Relaxed) {
                return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
            }
            futex_wait_for(&s.done, done, Some(Duration::from_millis(20)));
        }
    }

    /// Calls child `i`'s supervisor has answered so far.
    pub fn answered(&self, i: usize) -> u64 {
        self.slot(i)
            .map_or(0, |s| s.answered.load(Ordering::Acquire))
    }

    /// Sets the child up; the supervisor's pid when it has one.
    fn set_up(&self, index: usize, s: &Slot) -> Result<Option<i32>, ()> {
        let fail = |step: u32| {
            let e = io::Error::last_os_error().raw_os_error().unwrap_or(0);
            s.errno.store(e as u32, Ordering::Relaxed);
            s.step.store(step, Ordering::Relaxed);
        };
        // SAFETY: prctl with plain integers.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            fail(0);
            return Err(());
        }
        let Some(child) = self.sets.get(index) else {
            return Err(());
        };
        for (k, p) in child.filters.iter().enumerate() {
            if install(p, 0) != 0 {
                fail(k as u32 + 1);
                return Err(());
            }
        }
        let Some((p, mask)) = &child.notify else {
            return Ok(None);
        };
        let fd = install(p, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER);
        if fd < 0 {
            fail(u32::MAX);
            return Err(());
        }
        let fd = fd as i32;
        // The supervisor checks its parent against this id: in this single-threaded child
        // the thread id is the process id, and getpid would now be handed to a supervisor
        // that does not exist yet.
        // SAFETY: gettid takes no arguments.
        let me = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
        // SAFETY: fork in a single-threaded child; the new process runs only supervise,
        // allocation-free raw calls, and leaves with _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            supervise(fd, me, mask, s);
        }
        // SAFETY: fd is the listener returned above, closed once here; the supervisor holds
        // its own copy.
        unsafe { libc::close(fd) };
        if pid < 0 {
            fail(u32::MAX);
            return Err(());
        }
        Ok(Some(pid))
    }
}

fn no_child(i: usize) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("no seccomp child {i}"))
}

fn halted() -> io::Error {
    io::Error::new(
        io::ErrorKind::Interrupted,
        "the seccomp children were halted",
    )
}

/// Installs `p` with `flags`: 0, or the listener's descriptor with
/// `SECCOMP_FILTER_FLAG_NEW_LISTENER`; -1 on failure (errno set).
/// Sets `no_new_privs` and installs `p` on the calling thread: raw calls only, so a child
/// between fork and exec may make it. Returns 0, or -1 with `errno` set.
pub fn install_now(p: &Program) -> libc::c_long {
    // SAFETY: prctl with plain integers.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return -1;
    }
    install(p, 0)
}

fn install(p: &Program, flags: libc::c_ulong) -> libc::c_long {
    let prog = libc::sock_fprog {
        len: p.0.len() as u16,
        filter: p.0.as_ptr().cast_mut(),
    };
    // SAFETY: prog points at p's instructions, alive for the call; the kernel copies them.
    unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &prog as *const libc::sock_fprog,
        )
    }
}

/// The supervisor: answers every call handed to the listener `fd` with the caller's pid (what
/// `getpid` would have returned), counting each in `s.answered`, until its parent `target`
/// ends. Raw calls only, then `_exit`: never returns.
fn supervise(fd: i32, target: i32, mask: &crate::task::CpuMask, s: &Slot) -> ! {
    // SAFETY: prctl with plain integers: killed when the target exits, whatever way.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    // SAFETY: no arguments.
    if unsafe { libc::getppid() } != target {
        // SAFETY: _exit ends this forked process at once.
        unsafe { libc::_exit(1) };
    }
    // Out of the team's process group: the team waits for its own children only, and this one
    // is reaped by the target (or, if the target is killed, by whoever inherits it).
    // SAFETY: setpgid on ourselves with plain integers.
    unsafe { libc::setpgid(0, 0) };
    if mask.apply().is_err() {
        // SAFETY: as above.
        unsafe { libc::_exit(1) };
    }
    loop {
        // SAFETY: seccomp_notif is plain data; the kernel wants it zeroed.
        let mut req: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: req is a writable seccomp_notif for the kernel to fill.
        let r = unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut req) };
        if r != 0 {
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) | Some(libc::ENOENT) => continue,
                // SAFETY: as above; the listener is gone, so is the target.
                _ => unsafe { libc::_exit(0) },
            }
        }
        let resp = libc::seccomp_notif_resp {
            id: req.id,
            val: i64::from(req.pid),
            error: 0,
            flags: 0,
        };
        // Counted before it is sent: the caller's call returns as soon as the answer lands,
        // and a reader after its last call must find it counted even when this process is
        // switched out before it could count it.
        s.answered.fetch_add(1, Ordering::Release);
        // SAFETY: resp is a valid seccomp_notif_resp; the kernel only reads it. ENOENT (the
        // caller was killed meanwhile) is no answer and is taken back.
        let r = unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_SEND, &resp) };
        if r != 0 {
            s.answered.fetch_sub(1, Ordering::Release);
        }
    }
}

/// Times `n` calls of `call` (or the empty loop) on `clock`. Not inlined, so every call's loop
/// and the empty one have the same shape and placement.
#[inline(never)]
fn batch(clock: &Clock, call: Call, n: u64, fd: i32) -> Batch {
    let mut failed = 0u64;
    // SAFETY: stat is plain data; zeroed is a valid value for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let st_ptr: *mut libc::stat = &mut st;
    let t0 = clock.now();
    match call {
        Call::Empty => {
            for _ in 0..n {
                failed += u64::from(black_box(0i64) < 0);
            }
        }
        Call::Getpid => {
            for _ in 0..n {
                // SAFETY: getpid takes no arguments and touches no memory.
                let r = unsafe { libc::syscall(libc::SYS_getpid) };
                failed += u64::from(r < 0);
            }
        }
        Call::Fstat => {
            for _ in 0..n {
                // SAFETY: st_ptr points at a writable stat on this stack that outlives the
                // call; fd is a plain integer (a bad one gives EBADF, counted).
                let r = unsafe { libc::syscall(libc::SYS_fstat, fd, st_ptr) };
                failed += u64::from(r < 0);
            }
        }
    }
    let ticks = clock.now().wrapping_sub(t0);
    black_box(&st);
    Batch {
        ticks,
        failed,
        ..Batch::default()
    }
}

// SAFETY: run makes only raw calls (prctl, seccomp, open/read/close into a stack buffer,
// futex, the timed calls), reads the filter programs and clock made before the fork and
// atomics on the shared mapping; it never allocates, locks or panics (every index is
// checked), and returns once `halt` has run (it bumps the word the child sleeps on).
unsafe impl TaskBody for Board {
    fn run(&self, index: usize) -> Result<(), Failure> {
        let s = self.slot(index).ok_or(Failure::Setup)?;
        let set_up = self.set_up(index, s);
        let ok = set_up.is_ok();
        let supervisor = set_up.ok().flatten();
        let st = read_status();
        s.mode.store(st.mode.unwrap_or(NOT_READ), Ordering::Relaxed);
        s.filters
            .store(st.filters.unwrap_or(NOT_READ), Ordering::Relaxed);
        s.threads
            .store(st.threads.unwrap_or(NOT_READ), Ordering::Relaxed);
        s.state.store(if ok { 1 } else { 2 }, Ordering::Release);
        wake_all(&s.state);
        let fd = self.file.as_raw_fd();
        let mut last = 0u32;
        loop {
            let c = s.cmd.load(Ordering::Acquire);
            if self.stopped() {
                if let Some(pid) = supervisor {
                    // SAFETY: pid is this process's own child, not yet reaped; a null status
                    // pointer is allowed.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                        libc::waitpid(pid, std::ptr::null_mut(), 0);
                    }
                }
                return Ok(());
            }
            if c == last {
                futex_wait_for(&s.cmd, c, None);
                continue;
            }
            last = c;
            if !ok {
                continue;
            }
            let call = Call::from_code(s.call.load(Ordering::Relaxed)).ok_or(Failure::Setup)?;
            let ru0 = crate::split::thread_rusage();
            let b = batch(&self.clock, call, s.n.load(Ordering::Relaxed), fd);
            let ru1 = crate::split::thread_rusage();
            let d = |a: libc::c_long, b: libc::c_long| (b - a).max(0) as u64;
            s.voluntary
                .store(d(ru0.ru_nvcsw, ru1.ru_nvcsw), Ordering::Relaxed);
            s.involuntary
                .store(d(ru0.ru_nivcsw, ru1.ru_nivcsw), Ordering::Relaxed);
            s.ticks.store(b.ticks, Ordering::Relaxed);
            s.failed.store(b.failed, Ordering::Relaxed);
            s.done.store(c, Ordering::Release);
            wake_all(&s.done);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_read_at_line_starts() {
        let text = b"Name:\toscost\nThreads:\t3\nSeccomp:\t2\nSeccomp_filters:\t9\nX:\t1\n";
        assert_eq!(status_field(text, b"Seccomp:"), Some(2));
        assert_eq!(status_field(text, b"Seccomp_filters:"), Some(9));
        assert_eq!(status_field(text, b"Threads:"), Some(3));
        assert_eq!(status_field(text, b"Missing:"), None);
        assert_eq!(status_field(b"Seccomp:\t\n", b"Seccomp:"), None);
        let own = read_status();
        assert!(own.threads.unwrap_or(1) >= 1);
    }

    #[test]
    fn programs_fit_the_kernel_and_jump_inside_themselves() {
        let mut all = vec![Program::allow_all(), Program::reads_argument()];
        all.extend(Program::profile());
        for p in &all {
            // BPF_MAXINSNS
            assert!(!p.is_empty() && p.len() <= 4096, "{}", p.len());
            for (i, ins) in p.0.iter().enumerate() {
                if ins.code & 0x07 == libc::BPF_JMP as u16 {
                    let far = i + 1 + usize::from(ins.jt.max(ins.jf));
                    assert!(far < p.len(), "jump at {i} leaves the program");
                }
            }
            assert_eq!(p.0.last().map(|l| l.code), Some(RET));
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_profile_allows_what_the_children_need_and_refuses_what_runtimes_refuse() {
        let names: Vec<&str> = PROFILE_CALLS.to_vec();
        assert!((280..=320).contains(&names.len()), "{}", names.len());
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, names, "alphabetical, each once");
        for need in [
            "getpid",
            "fstat",
            "futex",
            "exit_group",
            "openat",
            "read",
            "close",
        ] {
            assert!(names.contains(&need), "{need}");
        }
        for refused in ["mount", "ptrace", "bpf", "unshare", "setns", "kexec_load"] {
            assert!(!names.contains(&refused), "{refused}");
        }
    }
}
