//! The wake-up primitives the context-switch experiments pass tokens through, and the shared
//! memory they spin or count on.
//!
//! A [`Link`] is one direction of wake-ups between two tasks: every [`Link::post`] leaves one
//! token, every [`Link::wait`] takes one, blocking until one is there. Links are created before
//! tasks are spawned and work unchanged between threads and between forked processes: their
//! file descriptors are inherited across `fork`, and any state both sides touch lives in a
//! `MAP_SHARED | MAP_ANONYMOUS` mapping that the child shares with its parent.
//!
//! `post` and `wait` are the code the switch benchmarks time, so on their success path they
//! allocate nothing and take no lock but the primitive's own: a child forked from a
//! multithreaded parent may call them (only the error path formats a message).
//!
//! This is the only place where IPC uses `unsafe`; everything above it calls these safe
//! functions.

use super::last_error;
pub use crate::pmqos::IdlePoll;
use crate::shm::SharedMap;
pub use crate::shm::SharedWords;
use std::cell::UnsafeCell;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;

/// How one task wakes another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Via {
    /// 1-byte write/read on a pipe
    Pipe,
    /// 1-byte write/read on an AF_UNIX stream socketpair
    Socketpair,
    /// write/read of 1 on an EFD_SEMAPHORE eventfd
    Eventfd,
    /// shared counter: fetch_add + FUTEX_WAKE / CAS-decrement or FUTEX_WAIT
    Futex,
    /// process-shared POSIX semaphore: sem_post / sem_wait
    PosixSem,
    /// SysV semaphore: semop +1 / -1
    SysvSem,
    /// process-shared pthread mutex + condvar + count
    Condvar,
    /// POSIX message queue: mq_send / mq_receive of 1 byte
    Mqueue,
    /// realtime signal: tkill to the waiter / sigwaitinfo with it blocked
    Signal,
    /// sched_yield: no link, each task yields the CPU to the other
    Yield,
}

impl Via {
    /// Every kind that is a [`Link`] (all but [`Via::Yield`]), in display order.
    pub const LINKS: [Via; 9] = [
        Via::Pipe,
        Via::Socketpair,
        Via::Eventfd,
        Via::Futex,
        Via::PosixSem,
        Via::SysvSem,
        Via::Condvar,
        Via::Mqueue,
        Via::Signal,
    ];

    /// Every kind, in display order.
    pub const ALL: [Via; 10] = [
        Via::Pipe,
        Via::Socketpair,
        Via::Eventfd,
        Via::Futex,
        Via::PosixSem,
        Via::SysvSem,
        Via::Condvar,
        Via::Mqueue,
        Via::Signal,
        Via::Yield,
    ];

    /// The kind called `name` ([`Via::name`]).
    pub fn from_name(name: &str) -> Option<Via> {
        Via::ALL.into_iter().find(|v| v.name() == name)
    }

    /// A few words for a list of choices.
    pub fn summary(self) -> &'static str {
        match self {
            Via::Pipe => "1-byte write/read on a pipe",
            Via::Socketpair => "1-byte write/read on an AF_UNIX stream socketpair",
            Via::Eventfd => "write/read of 1 on an EFD_SEMAPHORE eventfd",
            Via::Futex => "shared counter: fetch_add + FUTEX_WAKE / CAS-decrement or FUTEX_WAIT",
            Via::PosixSem => "process-shared POSIX semaphore: sem_post / sem_wait",
            Via::SysvSem => "SysV semaphore: semop +1 / -1",
            Via::Condvar => "process-shared pthread mutex + condvar + count",
            Via::Mqueue => "POSIX message queue: mq_send / mq_receive of 1 byte",
            Via::Signal => "realtime signal: tkill to the waiter / sigwaitinfo with it blocked",
            Via::Yield => "sched_yield: no link, each task yields the CPU to the other",
        }
    }

    /// Kebab-case name, as on the command line, in case ids and in the serde form.
    pub fn name(self) -> &'static str {
        match self {
            Via::Pipe => "pipe",
            Via::Socketpair => "socketpair",
            Via::Eventfd => "eventfd",
            Via::Futex => "futex",
            Via::PosixSem => "posix-sem",
            Via::SysvSem => "sysv-sem",
            Via::Condvar => "condvar",
            Via::Mqueue => "mqueue",
            Via::Signal => "signal",
            Via::Yield => "yield",
        }
    }

    /// One line saying what one post and one wait do.
    pub fn describe(self) -> &'static str {
        match self {
            Via::Pipe => "1-byte write/read on a pipe",
            Via::Socketpair => "1-byte write/read on an AF_UNIX SOCK_STREAM socketpair",
            Via::Eventfd => "8-byte write of 1 / read on an EFD_SEMAPHORE eventfd",
            Via::Futex => {
                "shared u32 counter: fetch_add + FUTEX_WAKE(1) always / CAS-decrement, \
                 FUTEX_WAIT while 0"
            }
            Via::PosixSem => {
                "process-shared POSIX semaphore (sem_init pshared=1): sem_post / sem_wait"
            }
            Via::SysvSem => "SysV semaphore (semget IPC_PRIVATE): semop +1 / semop -1",
            Via::Condvar => {
                "robust process-shared pthread mutex + condvar + count: lock, count+1, signal, \
                 unlock / lock, cond_wait while 0, count-1, unlock"
            }
            Via::Mqueue => {
                "POSIX message queue (maxmsg 8, msgsize 1): mq_send / mq_receive of 1 byte"
            }
            Via::Signal => {
                "realtime signal SIGRTMIN+2: tkill to the waiting thread / sigwaitinfo with the \
                 signal blocked"
            }
            Via::Yield => "sched_yield: no link, each task yields the CPU to the other",
        }
    }

    /// Whether [`Link::new`] can build this kind (everything but [`Via::Yield`]).
    pub fn is_link(self) -> bool {
        self != Via::Yield
    }
}

impl std::fmt::Display for Via {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `FUTEX_WAIT` on `word` while it holds `expected`, without `FUTEX_PRIVATE_FLAG` so it works
/// on shared memory across processes.
///
/// Returns when woken, at once when the word no longer holds `expected` (EAGAIN), or when a
/// signal interrupts (EINTR): callers re-check the word in a loop, as with any futex.
#[inline]
pub fn futex_wait(word: &AtomicU32, expected: u32) -> io::Result<()> {
    // SAFETY: word is a valid, aligned u32 for the duration of the call; a null timeout means
    // wait forever; the remaining arguments are ignored by FUTEX_WAIT.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if r == 0 {
        return Ok(());
    }
    // last_os_error does not allocate, so the common EAGAIN/EINTR path stays allocation-free.
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(()),
        _ => Err(last_error("futex(FUTEX_WAIT)")),
    }
}

/// `FUTEX_WAKE` of up to `n` waiters on `word` (shared, not private); returns how many woke.
#[inline]
pub fn futex_wake(word: &AtomicU32, n: i32) -> io::Result<i32> {
    // SAFETY: word is a valid, aligned u32; FUTEX_WAKE only reads the address as a key.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            n,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if r < 0 {
        return Err(last_error("futex(FUTEX_WAKE)"));
    }
    Ok(r as i32)
}

/// `sched_yield()`: the [`Via::Yield`] "primitive".
#[inline]
pub fn sched_yield() -> io::Result<()> {
    // SAFETY: no arguments, no memory touched.
    if unsafe { libc::sched_yield() } != 0 {
        return Err(last_error("sched_yield"));
    }
    Ok(())
}

/// The realtime signal [`Via::Signal`] links use: `SIGRTMIN + 2` (glibc reserves the first
/// two real-time signals below its SIGRTMIN; +2 keeps clear of libraries that take SIGRTMIN
/// itself).
pub fn link_signal_number() -> i32 {
    libc::SIGRTMIN() + 2
}

fn link_sigset() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it, sigaddset of a valid signal
    // number cannot fail.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, link_signal_number());
        set
    }
}

#[inline]
fn pthread_result(r: libc::c_int, call: &str) -> io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(pthread_error(r, call))
    }
}

/// Out of line and cold, so the success path of a timed call holds no formatting code.
#[cold]
#[inline(never)]
fn pthread_error(r: libc::c_int, call: &str) -> io::Error {
    // pthread functions return the error number instead of setting errno.
    let e = io::Error::from_raw_os_error(r);
    io::Error::new(e.kind(), format!("{call}: {e}"))
}

/// Blocks the realtime signal used by [`Via::Signal`] in the calling thread. Every task that
/// waits on a signal link calls it before its first wait and before anyone may post to it: an
/// unblocked realtime signal's default action terminates the whole process. The mask is
/// inherited by threads created and processes forked afterwards.
pub fn block_link_signal() -> io::Result<()> {
    let set = link_sigset();
    // SAFETY: set is initialised; a null old-set pointer is allowed.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    pthread_result(r, "pthread_sigmask(SIG_BLOCK)")
}

/// Takes every pending instance of the link signal of the calling thread (and process)
/// without waiting; returns how many there were.
pub fn drain_link_signal() -> usize {
    let set = link_sigset();
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let mut n = 0;
    // SAFETY: set and zero are valid; a null siginfo pointer is allowed. A zero timeout polls.
    while unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &zero) } >= 0 {
        n += 1;
    }
    n
}

/// Blocks the link signal in the calling thread until dropped (see [`block_link_signal_scoped`]).
#[derive(Debug)]
pub struct LinkSignalBlock {
    was_blocked: bool,
    // The mask is per thread: the guard must be dropped on the thread that made it.
    _not_send: std::marker::PhantomData<*const ()>,
}

/// Like [`block_link_signal`], but restores the previous mask when the guard drops, after
/// taking any instance still pending (unblocking a pending realtime signal would kill the
/// process). For code that measures a signal link inside a thread it does not own.
pub fn block_link_signal_scoped() -> io::Result<LinkSignalBlock> {
    let set = link_sigset();
    // SAFETY: sigset_t is plain data, filled by pthread_sigmask.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is initialised, old is writable.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) };
    pthread_result(r, "pthread_sigmask(SIG_BLOCK)")?;
    // SAFETY: old was filled by pthread_sigmask; the signal number is valid.
    let was_blocked = unsafe { libc::sigismember(&old, link_signal_number()) } == 1;
    Ok(LinkSignalBlock {
        was_blocked,
        _not_send: std::marker::PhantomData,
    })
}

impl Drop for LinkSignalBlock {
    fn drop(&mut self) {
        if self.was_blocked {
            return;
        }
        drain_link_signal();
        let set = link_sigset();
        // SAFETY: set is initialised; a null old-set pointer is allowed.
        unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
    }
}

/// What [`Link::with_ops`] calls with a link's post and wait.
pub trait WithOps<R> {
    /// Uses `post` and `wait`, which stay valid for the duration of the call only.
    fn call<P, W>(self, post: P, wait: W) -> R
    where
        P: FnMut() -> io::Result<()>,
        W: FnMut() -> io::Result<()>;
}

// One post and one wait of each kind whose own cost is small enough that a dispatch around it
// shows: `Link::post`/`wait` and `Link::with_ops` both call these.

#[inline(always)]
fn stream_post(wr: RawFd) -> io::Result<()> {
    write_one(wr, &[1u8], "write")
}

#[inline(always)]
fn stream_wait(rd: RawFd) -> io::Result<()> {
    read_one(rd, &mut [0u8], "read")
}

#[inline(always)]
fn eventfd_post(fd: RawFd) -> io::Result<()> {
    write_one(fd, &1u64.to_ne_bytes(), "write(eventfd)")
}

#[inline(always)]
fn eventfd_wait(fd: RawFd) -> io::Result<()> {
    read_one(fd, &mut [0u8; 8], "read(eventfd)")
}

/// `map` holds the link's semaphore, initialised in `Link::new`.
#[inline(always)]
fn posix_sem_post(map: &SharedMap) -> io::Result<()> {
    // SAFETY: the sem_t was initialised in `new` and lives as long as the mapping.
    if unsafe { libc::sem_post(map.at::<libc::sem_t>()) } != 0 {
        return Err(last_error("sem_post"));
    }
    Ok(())
}

/// `map` holds the link's semaphore, initialised in `Link::new`.
#[inline(always)]
fn posix_sem_wait(map: &SharedMap) -> io::Result<()> {
    loop {
        // SAFETY: the sem_t was initialised in `new` and lives as long as the mapping.
        if unsafe { libc::sem_wait(map.at::<libc::sem_t>()) } == 0 {
            return Ok(());
        }
        if !interrupted() {
            return Err(last_error("sem_wait"));
        }
    }
}

/// A process-private `pthread_mutex_t` with default attributes: what a C program gets from
/// `PTHREAD_MUTEX_INITIALIZER`. (Rust's `std::sync::Mutex` is its own futex lock, not this.)
#[derive(Debug)]
pub struct PthreadMutex {
    // Boxed: a pthread mutex must not move once used. On a cache line of its own: where the
    // 40-byte mutex falls (across two lines or within one) would otherwise change its cost
    // from one run to the next.
    m: Box<LineAligned<UnsafeCell<libc::pthread_mutex_t>>>,
}

/// A value that starts on a 64-byte cache line.
#[derive(Debug)]
#[repr(align(64))]
struct LineAligned<T>(T);

// SAFETY: a pthread mutex is made to be locked and unlocked from any thread.
unsafe impl Send for PthreadMutex {}
// SAFETY: as above; all access goes through pthread_mutex_* which synchronise internally.
unsafe impl Sync for PthreadMutex {}

impl PthreadMutex {
    /// A new, unlocked mutex.
    pub fn new() -> PthreadMutex {
        PthreadMutex {
            m: Box::new(LineAligned(UnsafeCell::new(
                libc::PTHREAD_MUTEX_INITIALIZER,
            ))),
        }
    }

    /// `pthread_mutex_lock` then `pthread_mutex_unlock`: one uncontended lock/unlock pair.
    #[inline]
    pub fn lock_unlock(&self) -> io::Result<()> {
        // SAFETY: m is an initialised mutex at a stable address for self's lifetime.
        let r = unsafe { libc::pthread_mutex_lock(self.m.0.get()) };
        pthread_result(r, "pthread_mutex_lock")?;
        // SAFETY: this thread locked it just above.
        let r = unsafe { libc::pthread_mutex_unlock(self.m.0.get()) };
        pthread_result(r, "pthread_mutex_unlock")
    }

    /// `pthread_mutex_lock` alone, blocking while another thread holds the mutex. For the lock
    /// ring (`crate::lockring`), where a thread keeps a mutex across calls.
    #[inline]
    pub(crate) fn lock(&self) -> io::Result<()> {
        // SAFETY: m is an initialised mutex at a stable address for self's lifetime.
        let r = unsafe { libc::pthread_mutex_lock(self.m.0.get()) };
        pthread_result(r, "pthread_mutex_lock")
    }

    /// `pthread_mutex_unlock` alone.
    ///
    /// # Safety
    ///
    /// The calling thread must hold the mutex (locked it with [`PthreadMutex::lock`] and not
    /// unlocked it since): POSIX leaves unlocking a mutex one does not hold undefined.
    #[inline]
    pub(crate) unsafe fn unlock(&self) -> io::Result<()> {
        // SAFETY: m is initialised and stable; the caller holds it (this function's contract).
        let r = unsafe { libc::pthread_mutex_unlock(self.m.0.get()) };
        pthread_result(r, "pthread_mutex_unlock")
    }
}

impl Default for PthreadMutex {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for PthreadMutex {
    fn drop(&mut self) {
        // SAFETY: nobody can hold the lock: lock_unlock always releases it before returning,
        // and the lock ring shares its mutexes through an Arc that every thread which might
        // still hold one keeps alive, so they are dropped only once every holder has returned
        // (and released them on the way out).
        unsafe { libc::pthread_mutex_destroy(self.m.0.get()) };
    }
}

/// The shared part of a [`Via::Condvar`] link.
#[repr(C)]
struct CondShared {
    mutex: libc::pthread_mutex_t,
    cond: libc::pthread_cond_t,
    /// Tokens posted and not yet taken; only touched with `mutex` held.
    count: u64,
}

/// `maxmsg` of a [`Via::Mqueue`] link (10 is the default `fs.mqueue.msg_max` for an
/// unprivileged user, so 8 always fits).
const MQ_MAXMSG: libc::c_long = 8;

/// Makes each message queue name unique within the process.
static MQ_SERIAL: AtomicU64 = AtomicU64::new(0);

#[derive(Debug)]
enum Kind {
    /// Pipe and socketpair: post writes `wr`, wait reads `rd`.
    Stream {
        rd: OwnedFd,
        wr: OwnedFd,
    },
    Eventfd(OwnedFd),
    /// An AtomicU32 counter at offset 0.
    Futex(SharedMap),
    /// A sem_t at offset 0.
    PosixSem(SharedMap),
    SysvSem(libc::c_int),
    /// A CondShared at offset 0.
    Condvar(SharedMap),
    /// The message queue descriptor (an fd on Linux, closed with mq_close).
    Mqueue(libc::mqd_t),
    /// The waiter's tid, an AtomicI32 at offset 0 (0 = not set yet).
    Signal(SharedMap),
}

/// One direction of wake-ups: any number of posts, each consumed by one wait.
///
/// Create it before spawning threads or forking; it then works between threads and between
/// processes. Dropping it releases what this process holds: descriptors are closed, shared
/// memory unmapped, and a SysV semaphore removed (`IPC_RMID`) if this process created it (a
/// killed creator cannot: [`on_sysv_sem_created`] lets it record the set first). A
/// message queue's name is unlinked right after creation, so no name outlives the run even
/// after a crash. Process-shared mutex/condvar/semaphore objects are not destroyed, only
/// unmapped: glibc's `pthread_cond_destroy` waits for waiters, which could hang if a forked
/// peer were still blocked, and none of them holds a kernel resource.
#[derive(Debug)]
pub struct Link {
    via: Via,
    creator: libc::pid_t,
    kind: Kind,
}

pub(crate) fn check_fd(r: libc::c_int, call: &str) -> io::Result<OwnedFd> {
    if r < 0 {
        return Err(last_error(call));
    }
    // SAFETY: r is a descriptor the kernel just returned to us, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(r) })
}

#[inline]
pub(crate) fn write_one(fd: RawFd, buf: &[u8], call: &str) -> io::Result<()> {
    loop {
        // SAFETY: buf is valid for buf.len() bytes; fd is open for the borrow of the Link.
        let r = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if r == buf.len() as isize {
            return Ok(());
        }
        if r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        if r < 0 {
            return Err(last_error(call));
        }
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("{call}: short write ({r})"),
        ));
    }
}

#[inline]
pub(crate) fn read_one(fd: RawFd, buf: &mut [u8], call: &str) -> io::Result<()> {
    loop {
        // SAFETY: buf is valid and writable for buf.len() bytes; fd is open.
        let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if r == buf.len() as isize {
            return Ok(());
        }
        if r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        if r < 0 {
            return Err(last_error(call));
        }
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("{call}: got {r} of {} bytes", buf.len()),
        ));
    }
}

#[inline]
fn interrupted() -> bool {
    io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
}

impl Link {
    /// Creates a link of kind `via`. [`Via::Yield`] is not a link: `Err(Unsupported)`. Any other
    /// failure (a primitive missing from this kernel, a limit, a permission) is returned as
    /// the error naming the call; callers report it as an unavailable case.
    pub fn new(via: Via) -> io::Result<Link> {
        // SAFETY: getpid has no arguments and cannot fail.
        let creator = unsafe { libc::getpid() };
        let kind = match via {
            Via::Yield => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "sched_yield is not a link: nothing carries a token",
                ))
            }
            Via::Pipe => {
                let mut fds = [0; 2];
                // SAFETY: fds is a writable array of two ints.
                let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
                if r != 0 {
                    return Err(last_error("pipe2"));
                }
                // SAFETY: both fds were just returned by pipe2 and are owned by nobody else.
                let (rd, wr) =
                    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
                Kind::Stream { rd, wr }
            }
            Via::Socketpair => {
                let mut fds = [0; 2];
                // SAFETY: fds is a writable array of two ints.
                let r = unsafe {
                    libc::socketpair(
                        libc::AF_UNIX,
                        libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                        0,
                        fds.as_mut_ptr(),
                    )
                };
                if r != 0 {
                    return Err(last_error("socketpair(AF_UNIX, SOCK_STREAM)"));
                }
                // SAFETY: both fds were just returned by socketpair and are owned by nobody else.
                let (rd, wr) =
                    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
                Kind::Stream { rd, wr }
            }
            Via::Eventfd => {
                // SAFETY: no pointers involved.
                let fd = unsafe { libc::eventfd(0, libc::EFD_SEMAPHORE | libc::EFD_CLOEXEC) };
                Kind::Eventfd(check_fd(fd, "eventfd(EFD_SEMAPHORE)")?)
            }
            Via::Futex => Kind::Futex(SharedMap::new(std::mem::size_of::<AtomicU32>())?),
            Via::Signal => Kind::Signal(SharedMap::new(std::mem::size_of::<AtomicI32>())?),
            Via::PosixSem => {
                let map = SharedMap::new(std::mem::size_of::<libc::sem_t>())?;
                // SAFETY: the mapping is large enough and aligned for a sem_t, and not yet
                // shared with anyone; pshared=1 because forked children will use it.
                if unsafe { libc::sem_init(map.at::<libc::sem_t>(), 1, 0) } != 0 {
                    return Err(last_error("sem_init(pshared=1)"));
                }
                Kind::PosixSem(map)
            }
            Via::SysvSem => {
                // SAFETY: no pointers involved. A fresh semaphore's value is 0 on Linux.
                let id = unsafe { libc::semget(libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600) };
                if id < 0 {
                    return Err(last_error("semget(IPC_PRIVATE)"));
                }
                // Told before anything uses the set, so a process killed from here on leaves a
                // record of it for whoever cleans up.
                if let Some(hook) = SYSV_SEM_CREATED.get() {
                    if let Err(e) = hook(id) {
                        // SAFETY: id is the set semget just created here, used by nobody yet;
                        // IPC_RMID takes no fourth argument.
                        unsafe { libc::semctl(id, 0, libc::IPC_RMID) };
                        return Err(io::Error::new(
                            e.kind(),
                            format!("recording SysV semaphore set {id} for removal: {e}"),
                        ));
                    }
                }
                Kind::SysvSem(id)
            }
            Via::Condvar => Kind::Condvar(new_condvar()?),
            Via::Mqueue => Kind::Mqueue(new_mqueue(creator)?),
        };
        Ok(Link { via, creator, kind })
    }

    /// The kind of this link.
    pub fn via(&self) -> Via {
        self.via
    }

    /// The id of the SysV semaphore set behind a [`Via::SysvSem`] link.
    pub fn sysv_sem_id(&self) -> Option<libc::c_int> {
        match self.kind {
            Kind::SysvSem(id) => Some(id),
            _ => None,
        }
    }

    /// Calls `f` with this link's post and wait as closures of their own types. A loop that
    /// `f` builds around them is compiled for this kind alone, so for a POSIX semaphore the
    /// timed loop holds `sem_post` and `sem_wait` and nothing else, as a C loop would, instead
    /// of a call into a dispatcher over every kind (the same for pipes, socketpairs and
    /// eventfds). Other kinds get [`Link::post`] and [`Link::wait`].
    pub fn with_ops<R>(&self, f: impl WithOps<R>) -> R {
        match &self.kind {
            Kind::PosixSem(map) => f.call(|| posix_sem_post(map), || posix_sem_wait(map)),
            Kind::Stream { rd, wr } => {
                let (rd, wr) = (rd.as_raw_fd(), wr.as_raw_fd());
                f.call(move || stream_post(wr), move || stream_wait(rd))
            }
            Kind::Eventfd(fd) => {
                let fd = fd.as_raw_fd();
                f.call(move || eventfd_post(fd), move || eventfd_wait(fd))
            }
            _ => f.call(|| self.post(), || self.wait()),
        }
    }

    /// Gives one token. Never blocks for long (a [`Via::Mqueue`] link blocks only with 8
    /// tokens already unconsumed). Allocation-free on success; callable from any thread or
    /// forked process at any time, e.g. by a watchdog waking a blocked waiter.
    // Always inlined: a call and a return around every post in the timed loop are harness
    // cost a C loop calling the primitive directly does not pay.
    #[inline(always)]
    pub fn post(&self) -> io::Result<()> {
        match &self.kind {
            Kind::Stream { wr, .. } => stream_post(wr.as_raw_fd()),
            Kind::Eventfd(fd) => eventfd_post(fd.as_raw_fd()),
            Kind::Futex(map) => {
                let word = futex_word(map);
                word.fetch_add(1, Ordering::Release);
                // Always wake, even if nobody can be waiting: that is the measured mechanism
                // (a wake that always enters the kernel), and it keeps post a fixed call path.
                futex_wake(word, 1)?;
                Ok(())
            }
            Kind::PosixSem(map) => posix_sem_post(map),
            Kind::SysvSem(id) => semop(*id, 1, "semop(+1)"),
            Kind::Condvar(map) => {
                let p = map.at::<CondShared>();
                // SAFETY: p points at the CondShared initialised in `new`; count is only touched
                // with the mutex held, and the mutex is released on every path below.
                unsafe {
                    lock_robust(p)?;
                    (*p).count += 1;
                    let r = libc::pthread_cond_signal(std::ptr::addr_of_mut!((*p).cond));
                    libc::pthread_mutex_unlock(std::ptr::addr_of_mut!((*p).mutex));
                    pthread_result(r, "pthread_cond_signal")
                }
            }
            Kind::Mqueue(mqd) => loop {
                let b = 1u8;
                // SAFETY: b is one readable byte, the queue's msgsize is 1.
                let r = unsafe { libc::mq_send(*mqd, (&b as *const u8).cast(), 1, 0) };
                if r == 0 {
                    return Ok(());
                }
                if !interrupted() {
                    return Err(last_error("mq_send"));
                }
            },
            Kind::Signal(map) => {
                let tid = signal_waiter(map).load(Ordering::Acquire);
                if tid <= 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::NotConnected,
                        "signal link: post before set_waiter",
                    ));
                }
                // tkill reaches one thread by tid alone, which works the same for a thread of
                // this process and for a forked child (whose only thread's tid is its pid), and
                // from either side. Realtime signals queue, so each post is one token.
                // SAFETY: no pointers; tid is a task the link's owner named.
                let r = unsafe { libc::syscall(libc::SYS_tkill, tid, link_signal_number()) };
                if r != 0 {
                    return Err(last_error("tkill"));
                }
                Ok(())
            }
        }
    }

    /// Takes one token, blocking until one is there. Retries on EINTR. Allocation-free on
    /// success, like [`Link::post`]. For [`Via::Signal`] the calling thread must have blocked
    /// the signal ([`block_link_signal`]) and be the waiter named by [`Link::set_waiter`].
    // Always inlined, as `post`.
    #[inline(always)]
    pub fn wait(&self) -> io::Result<()> {
        match &self.kind {
            Kind::Stream { rd, .. } => stream_wait(rd.as_raw_fd()),
            Kind::Eventfd(fd) => eventfd_wait(fd.as_raw_fd()),
            Kind::Futex(map) => {
                let word = futex_word(map);
                loop {
                    let v = word.load(Ordering::Acquire);
                    if v > 0 {
                        if word
                            .compare_exchange_weak(v, v - 1, Ordering::Acquire, Ordering::Relaxed)
                            .is_ok()
                        {
                            return Ok(());
                        }
                        continue;
                    }
                    futex_wait(word, 0)?;
                }
            }
            Kind::PosixSem(map) => posix_sem_wait(map),
            Kind::SysvSem(id) => semop(*id, -1, "semop(-1)"),
            Kind::Condvar(map) => {
                let p = map.at::<CondShared>();
                // SAFETY: as in post; the mutex is held whenever count is read or written, and
                // released on every path out.
                unsafe {
                    let m = std::ptr::addr_of_mut!((*p).mutex);
                    lock_robust(p)?;
                    while (*p).count == 0 {
                        let r = libc::pthread_cond_wait(std::ptr::addr_of_mut!((*p).cond), m);
                        if r == libc::EOWNERDEAD {
                            // The lock came back from a task that died holding it; the count
                            // is a plain integer, consistent whatever it did.
                            libc::pthread_mutex_consistent(m);
                        } else if r != 0 {
                            libc::pthread_mutex_unlock(m);
                            return pthread_result(r, "pthread_cond_wait");
                        }
                    }
                    (*p).count -= 1;
                    libc::pthread_mutex_unlock(m);
                }
                Ok(())
            }
            Kind::Mqueue(mqd) => loop {
                let mut b = 0u8;
                let mut prio = 0;
                // SAFETY: b is one writable byte, equal to the queue's msgsize.
                let r = unsafe { libc::mq_receive(*mqd, (&mut b as *mut u8).cast(), 1, &mut prio) };
                if r >= 0 {
                    return Ok(());
                }
                if !interrupted() {
                    return Err(last_error("mq_receive"));
                }
            },
            Kind::Signal(_) => {
                let set = link_sigset();
                loop {
                    // SAFETY: set is initialised; a null siginfo pointer is allowed.
                    let r = unsafe { libc::sigwaitinfo(&set, std::ptr::null_mut()) };
                    if r >= 0 {
                        return Ok(());
                    }
                    if !interrupted() {
                        return Err(last_error("sigwaitinfo"));
                    }
                }
            }
        }
    }

    /// For [`Via::Signal`] only: the task that receives the posts (a tid for a thread, the pid
    /// of a process whose only thread waits). The waiter must also block the signal before the
    /// first post. Kept in shared memory, so a forked child may set it itself; other kinds
    /// ignore it.
    ///
    /// Posts go to whatever task has that id: after the waiter has exited *and been reaped*
    /// (its id may then be reused), do not post. Between exit and `waitpid` the id is held by
    /// the zombie, so a watchdog that kills a child and posts before reaping is safe.
    pub fn set_waiter(&self, tid: i32) {
        if let Kind::Signal(map) = &self.kind {
            signal_waiter(map).store(tid, Ordering::Release);
        }
    }
}

#[inline]
fn futex_word(map: &SharedMap) -> &AtomicU32 {
    // SAFETY: the mapping is at least 4 bytes, page-aligned, lives as long as the borrow, and
    // is only accessed atomically.
    unsafe { &*map.at::<AtomicU32>() }
}

#[inline]
fn signal_waiter(map: &SharedMap) -> &AtomicI32 {
    // SAFETY: as for futex_word.
    unsafe { &*map.at::<AtomicI32>() }
}

#[inline]
fn semop(id: libc::c_int, op: libc::c_short, call: &str) -> io::Result<()> {
    let mut sb = libc::sembuf {
        sem_num: 0,
        sem_op: op,
        // No SEM_UNDO: tokens belong to the link, not to the task that posted them.
        sem_flg: 0,
    };
    loop {
        // SAFETY: sb is one valid sembuf.
        if unsafe { libc::semop(id, &mut sb, 1) } == 0 {
            return Ok(());
        }
        if !interrupted() {
            return Err(last_error(call));
        }
    }
}

/// Locks the condvar link's robust mutex, repairing it if its owner died holding it.
///
/// # Safety
/// `p` must point at an initialised `CondShared`.
unsafe fn lock_robust(p: *mut CondShared) -> io::Result<()> {
    let m = std::ptr::addr_of_mut!((*p).mutex);
    // SAFETY: the caller guarantees m is an initialised robust mutex.
    let r = unsafe { libc::pthread_mutex_lock(m) };
    if r == libc::EOWNERDEAD {
        // A peer was killed inside post or wait. The only state is the count, which a dead
        // owner leaves consistent; without this the lock would be unusable forever and a
        // watchdog's post would hang.
        // SAFETY: this thread now owns the mutex in the EOWNERDEAD state.
        return pthread_result(
            unsafe { libc::pthread_mutex_consistent(m) },
            "pthread_mutex_consistent",
        );
    }
    pthread_result(r, "pthread_mutex_lock")
}

fn new_condvar() -> io::Result<SharedMap> {
    let map = SharedMap::new(std::mem::size_of::<CondShared>())?;
    let p = map.at::<CondShared>();
    // SAFETY: attribute objects are plain data initialised by their *_init calls and destroyed
    // before returning; p points at zeroed shared memory large and aligned enough for a
    // CondShared that nobody else uses yet.
    unsafe {
        let mut ma: libc::pthread_mutexattr_t = std::mem::zeroed();
        pthread_result(
            libc::pthread_mutexattr_init(&mut ma),
            "pthread_mutexattr_init",
        )?;
        let mut ca: libc::pthread_condattr_t = std::mem::zeroed();
        let r = libc::pthread_condattr_init(&mut ca);
        let result = pthread_result(r, "pthread_condattr_init")
            .and_then(|()| {
                let r = libc::pthread_mutexattr_setpshared(&mut ma, libc::PTHREAD_PROCESS_SHARED);
                pthread_result(r, "pthread_mutexattr_setpshared")
            })
            .and_then(|()| {
                // Robust, so a task killed while holding the lock (a child the watchdog ended)
                // leaves it usable instead of hanging every later post and wait.
                let r = libc::pthread_mutexattr_setrobust(&mut ma, libc::PTHREAD_MUTEX_ROBUST);
                pthread_result(r, "pthread_mutexattr_setrobust")
            })
            .and_then(|()| {
                let r = libc::pthread_condattr_setpshared(&mut ca, libc::PTHREAD_PROCESS_SHARED);
                pthread_result(r, "pthread_condattr_setpshared")
            })
            .and_then(|()| {
                let r = libc::pthread_mutex_init(std::ptr::addr_of_mut!((*p).mutex), &ma);
                pthread_result(r, "pthread_mutex_init")
            })
            .and_then(|()| {
                let r = libc::pthread_cond_init(std::ptr::addr_of_mut!((*p).cond), &ca);
                pthread_result(r, "pthread_cond_init")
            });
        libc::pthread_mutexattr_destroy(&mut ma);
        libc::pthread_condattr_destroy(&mut ca);
        result?;
        std::ptr::addr_of_mut!((*p).count).write(0);
    }
    Ok(map)
}

fn new_mqueue(pid: libc::pid_t) -> io::Result<libc::mqd_t> {
    let serial = MQ_SERIAL.fetch_add(1, Ordering::Relaxed);
    let name = CString::new(format!("/oscost-{pid}-{serial}")).expect("no NUL in the name");
    // SAFETY: mq_attr is plain data; zero is a valid starting point.
    let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
    attr.mq_maxmsg = MQ_MAXMSG;
    attr.mq_msgsize = 1;
    // SAFETY: name is NUL-terminated; with O_CREAT mq_open reads a mode_t and an mq_attr
    // pointer, both passed with the types it expects. Linux makes the descriptor close-on-exec.
    let mqd = unsafe {
        libc::mq_open(
            name.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL,
            0o600 as libc::mode_t,
            &mut attr as *mut libc::mq_attr,
        )
    };
    if mqd < 0 {
        return Err(last_error("mq_open"));
    }
    // Unlink the name at once: the queue lives while a descriptor (ours or an inherited one)
    // is open, and no name can outlive the run, even if it is killed.
    // SAFETY: name is NUL-terminated.
    if unsafe { libc::mq_unlink(name.as_ptr()) } != 0 {
        let e = last_error("mq_unlink");
        // SAFETY: mqd was just opened and is closed once.
        unsafe { libc::mq_close(mqd) };
        return Err(e);
    }
    Ok(mqd)
}

/// What [`on_sysv_sem_created`] installs: called with a SysV semaphore set's id.
pub type SysvSemHook = Box<dyn Fn(libc::c_int) -> io::Result<()> + Send + Sync>;

static SYSV_SEM_CREATED: OnceLock<SysvSemHook> = OnceLock::new();

/// Installs `hook`, called with the id of every SysV semaphore set [`Link::new`] creates in
/// this process from now on, right after `semget` and before the set is used. A SysV set
/// outlives the process that made it: the hook lets the caller record it somewhere that
/// survives a `kill -9`, and [`remove_sysv_sem`] removes it later. If the hook fails, the set
/// is removed at once and `Link::new` returns the error. One hook per process; a second
/// call returns `Err(AlreadyExists)` and leaves the first in place.
pub fn on_sysv_sem_created(hook: SysvSemHook) -> io::Result<()> {
    SYSV_SEM_CREATED.set(hook).map_err(|_| {
        io::Error::new(
            io::ErrorKind::AlreadyExists,
            "a SysV semaphore hook is already installed",
        )
    })
}

/// Removes SysV semaphore set `id` if it still exists and is a private (`IPC_PRIVATE`) set
/// created by this effective user, as every set [`Link::new`] makes is. `Ok(true)`: removed;
/// `Ok(false)`: already gone (`EINVAL`, `EIDRM`), or the id now names a set that is not one of
/// ours (the kernel reused it), which is left alone.
pub fn remove_sysv_sem(id: libc::c_int) -> io::Result<bool> {
    if id < 0 {
        return Ok(false);
    }
    let gone = |e: &io::Error| matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EIDRM));
    // SAFETY: semid_ds is plain data; zeroed is a valid value for IPC_STAT to overwrite.
    let mut ds: libc::semid_ds = unsafe { std::mem::zeroed() };
    // SAFETY: IPC_STAT's fourth argument is a pointer to a semid_ds, valid and writable for
    // the call's duration.
    let r = unsafe { libc::semctl(id, 0, libc::IPC_STAT, &mut ds as *mut libc::semid_ds) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if gone(&e) || e.raw_os_error() == Some(libc::EACCES) {
            // Gone, or readable only by someone else: not a set this user made.
            return Ok(false);
        }
        return Err(last_error("semctl(IPC_STAT)"));
    }
    // SAFETY: geteuid has no arguments and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if ds.sem_perm.__key != libc::IPC_PRIVATE || ds.sem_perm.cuid != euid {
        return Ok(false);
    }
    // SAFETY: plain integers; IPC_RMID takes no fourth argument.
    if unsafe { libc::semctl(id, 0, libc::IPC_RMID) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if gone(&e) {
        Ok(false)
    } else {
        Err(last_error("semctl(IPC_RMID)"))
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        match &self.kind {
            // SAFETY: mqd was opened in `new` and is closed exactly once, here.
            Kind::Mqueue(mqd) => unsafe {
                libc::mq_close(*mqd);
            },
            Kind::SysvSem(id) => {
                // Only the creator removes it: a forked copy that drops its Link must not pull
                // the semaphore from under the parent.
                // SAFETY: getpid has no arguments; semctl(IPC_RMID) takes no fourth argument.
                unsafe {
                    if libc::getpid() == self.creator {
                        libc::semctl(*id, 0, libc::IPC_RMID);
                    }
                }
            }
            // Descriptors close and shared memory unmaps in their own Drop.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Barrier;
    use std::time::{Duration, Instant};

    const ROUND_TRIPS: usize = 1000;

    /// Links that cannot be made here (mqueue without the fs, say) are skipped with a note,
    /// never silently: the message says why.
    fn link(via: Via) -> Option<Link> {
        match Link::new(via) {
            Ok(l) => Some(l),
            // Only a kernel built without POSIX message queues excuses a missing one.
            Err(e) if via == Via::Mqueue && e.kind() == io::ErrorKind::Unsupported => {
                eprintln!("skipping {via}: {e}");
                None
            }
            Err(e) => panic!("{via}: {e}"),
        }
    }

    #[test]
    fn names_match_serde() {
        for v in &Via::ALL {
            assert_eq!(Via::from_name(v.name()), Some(*v));
            assert_eq!(
                serde_json::to_string(v).unwrap(),
                format!("\"{}\"", v.name())
            );
            assert!(!v.describe().is_empty());
            assert_eq!(v.is_link(), Via::LINKS.contains(v));
        }
        assert_eq!(Via::LINKS.len() + 1, Via::ALL.len());
    }

    #[test]
    fn yield_is_not_a_link() {
        let e = Link::new(Via::Yield).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
    }

    #[test]
    fn post_then_wait_in_one_thread() {
        for via in Via::LINKS {
            let Some(l) = link(via) else { continue };
            let _block = (via == Via::Signal).then(|| block_link_signal_scoped().unwrap());
            l.set_waiter(crate::gettid());
            for _ in 0..3 {
                l.post().unwrap_or_else(|e| panic!("{via} post: {e}"));
            }
            for _ in 0..3 {
                l.wait().unwrap_or_else(|e| panic!("{via} wait: {e}"));
            }
        }
    }

    #[test]
    fn signal_post_without_waiter_is_an_error() {
        let l = Link::new(Via::Signal).unwrap();
        assert_eq!(l.post().unwrap_err().kind(), io::ErrorKind::NotConnected);
    }

    #[test]
    fn two_thread_ping_pong() {
        for via in Via::LINKS {
            let (Some(to_b), Some(to_a)) = (link(via), link(via)) else {
                continue;
            };
            let ready = Barrier::new(2);
            std::thread::scope(|s| {
                s.spawn(|| {
                    let _block = (via == Via::Signal).then(|| block_link_signal_scoped().unwrap());
                    to_b.set_waiter(crate::gettid());
                    ready.wait();
                    for _ in 0..ROUND_TRIPS {
                        to_b.wait().unwrap();
                        to_a.post().unwrap();
                    }
                });
                let _block = (via == Via::Signal).then(|| block_link_signal_scoped().unwrap());
                to_a.set_waiter(crate::gettid());
                ready.wait();
                for _ in 0..ROUND_TRIPS {
                    to_b.post().unwrap_or_else(|e| panic!("{via}: {e}"));
                    to_a.wait().unwrap_or_else(|e| panic!("{via}: {e}"));
                }
            });
        }
    }

    /// Ping-pong with a forked child. The child does nothing but raw link calls and `_exit`
    /// (the test binary is multithreaded). A watchdog kills the child and wakes the parent
    /// if the exchange stalls, so a broken link fails the test instead of hanging it.
    fn fork_ping_pong(via: Via) {
        let (Some(to_child), Some(to_parent)) = (link(via), link(via)) else {
            return;
        };
        // The child inherits this thread's mask, so blocking here covers both sides.
        let _block = (via == Via::Signal).then(|| block_link_signal_scoped().unwrap());
        to_parent.set_waiter(crate::gettid());
        // SAFETY: the child only calls async-signal-safe link operations and _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
        if pid == 0 {
            to_child.set_waiter(crate::gettid());
            // A first token tells the parent the child is ready (and, for signals, named).
            let mut ok = to_parent.post().is_ok();
            for _ in 0..ROUND_TRIPS {
                ok = ok && to_child.wait().is_ok() && to_parent.post().is_ok();
            }
            // SAFETY: _exit runs no destructors or atexit handlers, fine in a forked child.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let done = AtomicBool::new(false);
        let status = std::thread::scope(|s| {
            s.spawn(|| {
                let start = Instant::now();
                while !done.load(Ordering::Acquire) {
                    if start.elapsed() > Duration::from_secs(30) {
                        // SAFETY: pid is our unreaped child, so the id cannot be reused.
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                        let _ = to_parent.post();
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            });
            to_parent.wait().unwrap();
            for _ in 0..ROUND_TRIPS {
                to_child.post().unwrap();
                to_parent.wait().unwrap();
            }
            done.store(true, Ordering::Release);
            let mut status = 0;
            // SAFETY: status is writable; pid is our child.
            let r = unsafe { libc::waitpid(pid, &mut status, 0) };
            assert_eq!(r, pid, "waitpid: {}", io::Error::last_os_error());
            status
        });
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{via}: child status {status:#x}"
        );
    }

    #[test]
    fn fork_ping_pong_pipe() {
        fork_ping_pong(Via::Pipe);
    }

    #[test]
    fn fork_ping_pong_futex() {
        fork_ping_pong(Via::Futex);
    }

    #[test]
    fn fork_ping_pong_posix_sem() {
        fork_ping_pong(Via::PosixSem);
    }

    #[test]
    fn fork_ping_pong_other_links() {
        for via in Via::LINKS {
            if ![Via::Pipe, Via::Futex, Via::PosixSem].contains(&via) {
                fork_ping_pong(via);
            }
        }
    }

    #[test]
    fn shared_words_are_visible_across_fork() {
        let w = SharedWords::new(3).unwrap();
        assert_eq!(w.len(), 3);
        w.get(2).store(7, Ordering::SeqCst);
        // SAFETY: the child only does atomic stores and _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            w.get(0)
                .store(w.get(2).load(Ordering::SeqCst) + 35, Ordering::SeqCst);
            w.get32(1).store(99, Ordering::SeqCst);
            // SAFETY: see above.
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: status is writable; pid is our child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert_eq!(w.get(0).load(Ordering::SeqCst), 42);
        assert_eq!(w.get32(1).load(Ordering::SeqCst), 99);
        // The two arrays do not alias.
        assert_eq!(w.get(1).load(Ordering::SeqCst), 0);
        assert_eq!(w.get32(0).load(Ordering::SeqCst), 0);
    }

    #[test]
    fn futex_helpers() {
        let w = SharedWords::new(1).unwrap();
        let word = w.get32(0);
        // Value differs from expected: returns at once.
        word.store(1, Ordering::SeqCst);
        futex_wait(word, 0).unwrap();
        assert_eq!(futex_wake(word, 1).unwrap(), 0);
    }

    #[test]
    fn a_killed_owner_does_not_wedge_a_condvar_link() {
        let l = Link::new(Via::Condvar).unwrap();
        let Kind::Condvar(map) = &l.kind else {
            unreachable!()
        };
        let p = map.at::<CondShared>();
        // SAFETY: the child only locks the shared mutex and _exits holding it.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: p is the link's initialised CondShared, inherited across fork.
            unsafe {
                libc::pthread_mutex_lock(std::ptr::addr_of_mut!((*p).mutex));
                libc::_exit(0);
            }
        }
        let mut status = 0;
        // SAFETY: status is writable; pid is our child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        l.post().unwrap();
        l.wait().unwrap();
    }

    #[test]
    fn idle_poll_holds_or_says_why() {
        match IdlePoll::hold() {
            Ok(hold) => drop(hold),
            Err(e) => assert!(e.to_string().contains("/dev/cpu_dma_latency"), "{e}"),
        }
    }

    #[test]
    fn pthread_mutex_locks_and_unlocks() {
        let m = std::sync::Arc::new(PthreadMutex::new());
        let (done, finished) = std::sync::mpsc::channel();
        let pairs = std::sync::Arc::clone(&m);
        // On a thread of its own, so that a pair that left the mutex locked fails the test
        // (the next lock would wait for ever) instead of hanging it.
        std::thread::spawn(move || {
            for _ in 0..10 {
                pairs.lock_unlock().unwrap();
            }
            let _ = done.send(());
        });
        finished
            .recv_timeout(Duration::from_secs(30))
            .expect("ten lock/unlock pairs did not finish: a pair left the mutex locked");
        let other = std::sync::Arc::clone(&m);
        let taken = std::thread::spawn(move || {
            // SAFETY: an initialised mutex, alive while `other` holds it.
            let r = unsafe { libc::pthread_mutex_trylock(other.m.0.get()) };
            if r == 0 {
                // SAFETY: this thread took it just above.
                unsafe { libc::pthread_mutex_unlock(other.m.0.get()) };
            }
            r
        })
        .join()
        .unwrap();
        assert_eq!(
            taken, 0,
            "another thread could not take the mutex: it was left locked"
        );
    }

    #[test]
    fn scoped_block_restores_the_mask_and_drains() {
        {
            let _b = block_link_signal_scoped().unwrap();
            let l = Link::new(Via::Signal).unwrap();
            l.set_waiter(crate::gettid());
            l.post().unwrap();
            // Left pending on purpose: the guard must take it before unblocking.
        }
        let b = block_link_signal_scoped().unwrap();
        assert!(!b.was_blocked);
        assert_eq!(drain_link_signal(), 0);
    }

    #[test]
    fn remove_sysv_sem_removes_once_and_ignores_gone_ids() {
        // SAFETY: no pointers involved.
        let id = unsafe { libc::semget(libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600) };
        assert!(id >= 0, "semget: {}", io::Error::last_os_error());
        assert!(remove_sysv_sem(id).unwrap());
        assert!(!remove_sysv_sem(id).unwrap());
        assert!(!remove_sysv_sem(-1).unwrap());
    }

    #[test]
    fn mqueue_names_do_not_linger() {
        let serial = MQ_SERIAL.load(Ordering::Relaxed);
        if let Some(l) = link(Via::Mqueue) {
            // The queue works while its name is already gone.
            l.post().unwrap();
            l.wait().unwrap();
            let name = CString::new(format!("/oscost-{}-{serial}", std::process::id())).unwrap();
            // SAFETY: name is NUL-terminated; without O_CREAT no further arguments are read.
            let mqd = unsafe { libc::mq_open(name.as_ptr(), libc::O_RDONLY) };
            let err = io::Error::last_os_error();
            assert_eq!(mqd, -1, "the queue's name outlived its creation");
            assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        }
    }
}
