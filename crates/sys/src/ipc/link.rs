//! A [`Link`]: one direction of wake-ups through any of the primitives [`Via`] names, made
//! before tasks are spawned and working unchanged between threads and forked processes.

use super::raw::{
    check_fd, futex_wait, futex_wake, interrupted, pthread_result, read_one, write_one,
};
use super::signal::{link_signal_number, link_sigset};
use super::sysv::SYSV_SEM_CREATED;
use super::Via;
use crate::last_error;
use crate::shm::SharedMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

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

/// The shared part of a [`Via::Condvar`] link.
#[repr(C)]
pub(super) struct CondShared {
    pub(super) mutex: libc::pthread_mutex_t,
    cond: libc::pthread_cond_t,
    /// Tokens posted and not yet taken; only touched with `mutex` held.
    count: u64,
}

/// `maxmsg` of a [`Via::Mqueue`] link (10 is the default `fs.mqueue.msg_max` for an
/// unprivileged user, so 8 always fits).
const MQ_MAXMSG: libc::c_long = 8;

/// Makes each message queue name unique within the process.
pub(super) static MQ_SERIAL: AtomicU64 = AtomicU64::new(0);

#[derive(Debug)]
pub(super) enum Kind {
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
///
/// [`on_sysv_sem_created`]: super::on_sysv_sem_created
#[derive(Debug)]
pub struct Link {
    via: Via,
    creator: libc::pid_t,
    pub(super) kind: Kind,
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
    ///
    /// [`block_link_signal`]: super::block_link_signal
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
