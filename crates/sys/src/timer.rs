//! Periodic timer events that `tick` makes for itself, since Linux cannot change its own tick
//! period at run time: a POSIX timer signalling the working thread ([`SignalTimer`]), and a
//! helper thread on the working thread's CPU woken every period by an absolute-time sleep or by
//! a timerfd ([`Helper`]).
//!
//! Every event that really happened is counted where it happens (the signal handler, the
//! helper's wake-up), never inferred from the period. Both are disarmed on drop: the timer is
//! deleted and a signal still queued is taken before the old handler comes back; the helper is
//! told to stop, woken and joined.

use crate::{gettid, last_error, Switches};
use std::io;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

/// Events a source has counted so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventCounts {
    /// Events that reached the program: signal handler runs, or helper wake-ups.
    pub events: u64,
    /// Timer expirations, including those folded into one event (a POSIX timer's overruns,
    /// deadlines a sleeping helper passed while held up, a timerfd read above 1).
    pub expirations: u64,
}

impl EventCounts {
    /// Counts since `earlier`.
    pub fn since(&self, earlier: EventCounts) -> EventCounts {
        EventCounts {
            events: self.events.saturating_sub(earlier.events),
            expirations: self.expirations.saturating_sub(earlier.expirations),
        }
    }
}

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// `limit` from now on `CLOCK_MONOTONIC`, ns.
fn deadline(limit: Duration) -> u64 {
    monotonic_ns().saturating_add(u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX))
}

fn period_ns(period: Duration) -> io::Result<u64> {
    match u64::try_from(period.as_nanos()) {
        Ok(ns) if ns > 0 => Ok(ns),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("timer period {period:?} is not a positive number of nanoseconds"),
        )),
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds: the clock the timers run on.
pub fn monotonic_ns() -> u64 {
    let mut ts = timespec(0);
    // SAFETY: ts is a valid, writable timespec; CLOCK_MONOTONIC exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

// The signal handler can only reach statics, so one signal timer exists at a time.
static SIGNAL_EVENTS: AtomicU64 = AtomicU64::new(0);
static SIGNAL_OVERRUNS: AtomicU64 = AtomicU64::new(0);
// glibc's timer_t is the kernel's timer id, so the first timer is a null pointer: whether the
// handler may touch it is a flag of its own.
static SIGNAL_TIMER: AtomicPtr<libc::c_void> = AtomicPtr::new(std::ptr::null_mut());
static SIGNAL_LIVE: AtomicBool = AtomicBool::new(false);
static SIGNAL_IN_USE: AtomicBool = AtomicBool::new(false);
static SIGNAL_DEADLINE_NS: AtomicU64 = AtomicU64::new(0);

/// The handler looks at the clock once every this many deliveries (a power of two): the time
/// limit is coarse, and the events it counts should cost what a signal costs, not a clock read
/// more.
const DEADLINE_CHECK_EVERY: u64 = 64;

/// The start of the kernel's `siginfo_t` for a POSIX timer's signal (`si_tid`, `si_overrun`
/// after the three ints and, on 64-bit targets, their padding), which the libc crate does not
/// spell out. Reading the overrun here costs nothing, where `timer_getoverrun` is a system call
/// inside every event.
#[repr(C)]
struct TimerSiginfo {
    signo: libc::c_int,
    errno: libc::c_int,
    code: libc::c_int,
    #[cfg(target_pointer_width = "64")]
    _pad: libc::c_int,
    tid: libc::c_int,
    overrun: libc::c_int,
}

/// Counts one delivered signal and the expirations folded into it; past the time limit,
/// disarms the timer.
extern "C" fn on_timer_signal(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: errno is this thread's own; it is put back so the interrupted code never sees it
    // change.
    let saved = unsafe { *libc::__errno_location() };
    let n = SIGNAL_EVENTS.fetch_add(1, Ordering::Relaxed) + 1;
    if !info.is_null() {
        // SAFETY: with SA_SIGINFO the kernel passes a full siginfo_t, whose start for a
        // SI_TIMER signal has the layout of TimerSiginfo.
        let i = unsafe { &*(info as *const TimerSiginfo) };
        if i.code == libc::SI_TIMER && i.overrun > 0 {
            SIGNAL_OVERRUNS.fetch_add(i.overrun as u64, Ordering::Relaxed);
        }
    }
    // At a period shorter than one delivery, signals come back to back and the thread never
    // runs its own code again, so the handler is where the timer must stop itself.
    if n & (DEADLINE_CHECK_EVERY - 1) == 0
        && SIGNAL_LIVE.load(Ordering::Relaxed)
        && monotonic_ns() >= SIGNAL_DEADLINE_NS.load(Ordering::Relaxed)
    {
        let stop = libc::itimerspec {
            it_interval: timespec(0),
            it_value: timespec(0),
        };
        // SAFETY: timer_settime is async-signal-safe; the timer is live; stop is valid.
        unsafe {
            libc::timer_settime(
                SIGNAL_TIMER.load(Ordering::Relaxed),
                0,
                &stop,
                std::ptr::null_mut(),
            )
        };
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved };
}

/// A POSIX timer (`timer_create(CLOCK_MONOTONIC)`, `SIGEV_THREAD_ID`, `it_interval` the
/// period) that sends the first real-time signal to the thread that armed it every period; a
/// handler counts each delivery and the timer's overruns (expirations folded into one
/// delivery, from the signal's `si_overrun`). Past its time limit the handler disarms it.
/// Deleted on drop, in the same thread (it cannot be sent to another), with the signal's
/// previous handler and mask put back.
pub struct SignalTimer {
    timer: Option<libc::timer_t>,
    signo: libc::c_int,
    old_action: Option<libc::sigaction>,
    old_mask: Option<libc::sigset_t>,
    _same_thread: PhantomData<*const ()>,
}

impl SignalTimer {
    /// Arms a timer signalling the calling thread every `period`, the first signal one period
    /// from now, that stops itself `limit` from now whatever happens. Only one may be armed in
    /// a process at a time.
    pub fn arm(period: Duration, limit: Duration) -> io::Result<SignalTimer> {
        let ns = period_ns(period)?;
        if SIGNAL_IN_USE
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Err(io::Error::other(
                "a signal timer is already armed in this process",
            ));
        }
        SIGNAL_EVENTS.store(0, Ordering::SeqCst);
        SIGNAL_OVERRUNS.store(0, Ordering::SeqCst);
        SIGNAL_DEADLINE_NS.store(deadline(limit), Ordering::SeqCst);
        // From here on, drop undoes whatever was done.
        let mut me = SignalTimer {
            timer: None,
            signo: libc::SIGRTMIN(),
            old_action: None,
            old_mask: None,
            _same_thread: PhantomData,
        };
        // SAFETY: sigaction and sigset_t are plain data; zeroed is valid for both.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = on_timer_signal as *const () as libc::sighandler_t;
        act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        // SAFETY: as above.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: act.sa_mask is a valid sigset_t; act and old are valid for the call; the
        // handler only touches atomics and errno and calls an async-signal-safe function.
        let r = unsafe {
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(me.signo, &act, &mut old)
        };
        if r != 0 {
            return Err(last_error("sigaction"));
        }
        me.old_action = Some(old);
        let set = signal_set(me.signo);
        // SAFETY: as above.
        let mut old_mask: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: set and old_mask are valid sigset_t values.
        let r = unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, &mut old_mask) };
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        me.old_mask = Some(old_mask);
        // SAFETY: sigevent is plain data (its padding is private); zeroed is valid.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = me.signo;
        sev.sigev_notify_thread_id = gettid();
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: sev and id are valid for the call.
        if unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut id) } != 0 {
            return Err(last_error("timer_create(CLOCK_MONOTONIC, SIGEV_THREAD_ID)"));
        }
        me.timer = Some(id);
        SIGNAL_TIMER.store(id, Ordering::SeqCst);
        SIGNAL_LIVE.store(true, Ordering::SeqCst);
        let spec = libc::itimerspec {
            it_interval: timespec(ns),
            it_value: timespec(ns),
        };
        // SAFETY: id is the timer just created; spec is valid; no old value is asked for.
        if unsafe { libc::timer_settime(id, 0, &spec, std::ptr::null_mut()) } != 0 {
            return Err(last_error("timer_settime"));
        }
        Ok(me)
    }

    /// Signals delivered so far, and expirations (deliveries plus overruns).
    pub fn counts(&self) -> EventCounts {
        let events = SIGNAL_EVENTS.load(Ordering::SeqCst);
        EventCounts {
            events,
            expirations: events + SIGNAL_OVERRUNS.load(Ordering::SeqCst),
        }
    }
}

fn signal_set(signo: libc::c_int) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signo);
        set
    }
}

impl Drop for SignalTimer {
    fn drop(&mut self) {
        SIGNAL_LIVE.store(false, Ordering::SeqCst);
        if let Some(id) = self.timer.take() {
            // SAFETY: id is a timer this value created and has not deleted.
            unsafe { libc::timer_delete(id) };
        }
        if let Some(old) = self.old_action.take() {
            // A signal still queued for this thread would meet the old disposition, and for
            // a real-time signal the default ends the process: block it, take any pending
            // one, and only then put the old handler back.
            let set = signal_set(self.signo);
            let zero = timespec(0);
            // SAFETY: set, zero and old are valid for each call; sigtimedwait with a zero
            // timeout never blocks; this runs in the thread the signals were sent to.
            unsafe {
                libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                while libc::sigtimedwait(&set, std::ptr::null_mut(), &zero) == self.signo {}
                libc::sigaction(self.signo, &old, std::ptr::null_mut());
            }
        }
        if let Some(mask) = self.old_mask.take() {
            // SAFETY: mask is the thread's mask saved when the timer was armed.
            unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &mask, std::ptr::null_mut()) };
        }
        SIGNAL_IN_USE.store(false, Ordering::SeqCst);
    }
}

/// How a helper thread waits for its next period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` to the next deadline.
    Sleep,
    /// A blocking `read` of a periodic timerfd.
    Timerfd,
}

/// The scheduling policy a helper thread got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    /// SCHED_FIFO at this priority: every wake-up preempts the working thread at once.
    Fifo(i32),
    /// The normal policy, and why SCHED_FIFO could not be had.
    Normal(String),
}

#[derive(Default)]
struct Shared {
    events: AtomicU64,
    expirations: AtomicU64,
    stop: AtomicBool,
    /// The helper's CPU time, written as it ends: its `/proc` entry goes with it.
    run_ns: AtomicU64,
}

/// A helper thread pinned to one CPU that wakes every period and goes back to sleep: on the
/// working thread's CPU each wake-up is a timer interrupt and two context switches. Stopped,
/// woken and joined on drop.
pub struct Helper {
    shared: Arc<Shared>,
    tid: i32,
    policy: Policy,
    timerfd: Option<Arc<OwnedFd>>,
    handle: Option<JoinHandle<io::Result<()>>>,
}

impl Helper {
    /// Starts the helper on `cpu`, asks for SCHED_FIFO at `fifo_priority` (recording why not
    /// where refused), and returns once it is about to wait for its first period. The helper
    /// stops by itself `limit` from now whatever happens: at a period it cannot keep, a
    /// real-time helper would otherwise leave the working thread next to no CPU for good.
    pub fn start(
        wake: Wake,
        period: Duration,
        cpu: usize,
        fifo_priority: i32,
        limit: Duration,
    ) -> io::Result<Helper> {
        let ns = period_ns(period)?;
        let until = deadline(limit);
        let timerfd = match wake {
            Wake::Timerfd => Some(Arc::new(timerfd_create()?)),
            Wake::Sleep => None,
        };
        let shared = Arc::new(Shared::default());
        let (tx, rx) = mpsc::channel::<io::Result<(i32, Policy)>>();
        let body = {
            let shared = Arc::clone(&shared);
            let fd = timerfd.clone();
            move || -> io::Result<()> {
                let setup = crate::set_affinity(&[cpu]).map(|()| (gettid(), fifo(fifo_priority)));
                let ok = setup.is_ok();
                let _ = tx.send(setup);
                drop(tx);
                if !ok {
                    return Ok(());
                }
                let r = match &fd {
                    Some(fd) => timerfd_loop(&shared, fd, ns, until),
                    None => sleep_loop(&shared, ns, until),
                };
                let run = crate::timeline::thread_cpu_ns().unwrap_or(0);
                shared.run_ns.store(run, Ordering::SeqCst);
                r
            }
        };
        let handle = std::thread::Builder::new()
            .name("oscost-tick".into())
            .stack_size(64 * 1024)
            .spawn(body)?;
        crate::count_started_tasks(1);
        let mut helper = Helper {
            shared,
            tid: 0,
            policy: Policy::Normal(String::new()),
            timerfd,
            handle: Some(handle),
        };
        match rx.recv() {
            Ok(Ok((tid, policy))) => {
                helper.tid = tid;
                helper.policy = policy;
                Ok(helper)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(io::Error::other(
                "the helper thread ended before it started",
            )),
        }
    }

    /// Wake-ups and expirations so far (never fewer expirations than wake-ups: the helper adds
    /// a wake-up's expirations before the wake-up).
    pub fn counts(&self) -> EventCounts {
        let events = self.shared.events.load(Ordering::SeqCst);
        EventCounts {
            events,
            expirations: self.shared.expirations.load(Ordering::SeqCst),
        }
    }

    /// The helper's kernel task id.
    pub fn tid(&self) -> i32 {
        self.tid
    }

    /// The policy it runs under.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The helper's CPU time so far, ns: from the scheduler while it runs, as it left it
    /// once it has ended (past its limit, or stopped).
    pub fn run_ns(&self) -> Option<u64> {
        task_times(self.tid).map(|t| t.run_ns).ok().or_else(|| {
            let run = self.shared.run_ns.load(Ordering::SeqCst);
            (run > 0).then_some(run)
        })
    }

    /// The helper's context switches so far (`/proc/self/task/<tid>/status`), if readable.
    pub fn switches(&self) -> Option<Switches> {
        task_switches(self.tid)
    }

    /// Stops and joins the helper; returns the error that ended it early, if one did.
    pub fn stop(mut self) -> io::Result<()> {
        self.finish()
    }

    fn finish(&mut self) -> io::Result<()> {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(fd) = &self.timerfd {
            // One expiration a nanosecond from now wakes a helper blocked in read; the one
            // asleep on the clock wakes within a period by itself.
            let _ = timerfd_arm(fd, 1, 0);
        }
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the helper thread panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Switches of task `tid` of this process so far, from `/proc/self/task/<tid>/status`
/// (`voluntary_ctxt_switches`, `nonvoluntary_ctxt_switches`): unlike getrusage, readable for
/// another thread.
pub fn task_switches(tid: i32) -> Option<Switches> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).ok()?;
    let field = |key: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse().ok())
    };
    Some(Switches {
        voluntary: field("voluntary_ctxt_switches:")?,
        involuntary: field("nonvoluntary_ctxt_switches:")?,
    })
}

/// Time a task has run on a CPU and has waited runnable for one, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskTimes {
    /// Time on a CPU.
    pub run_ns: u64,
    /// Time runnable but waiting for a CPU: preempted or not yet picked.
    pub waited_ns: u64,
}

/// [`TaskTimes`] of task `tid` of this process so far, from `/proc/self/task/<tid>/schedstat`
/// (the scheduler's own clock, to the nanosecond).
pub fn task_times(tid: i32) -> io::Result<TaskTimes> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))?;
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    match (fields.next(), fields.next()) {
        (Some(Ok(run_ns)), Some(Ok(waited_ns))) => Ok(TaskTimes { run_ns, waited_ns }),
        _ => Err(io::Error::other(format!(
            "unreadable schedstat of task {tid}: {text:?}"
        ))),
    }
}

/// Why SCHED_FIFO at `priority` is refused to this process's threads, or `None` when it is
/// granted: asked for by a thread started for it alone, so no thread of the caller changes
/// policy.
pub fn fifo_refused(priority: i32) -> Option<String> {
    std::thread::spawn(move || match fifo(priority) {
        Policy::Fifo(_) => None,
        Policy::Normal(why) => Some(why),
    })
    .join()
    .unwrap_or_else(|_| Some("the thread asking for SCHED_FIFO panicked".into()))
}

/// Asks for SCHED_FIFO for the calling thread.
fn fifo(priority: i32) -> Policy {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 is the calling thread; param is valid for the call.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0 {
        Policy::Fifo(priority)
    } else {
        Policy::Normal(last_error("sched_setscheduler(SCHED_FIFO)").to_string())
    }
}

fn sleep_loop(shared: &Shared, period: u64, until: u64) -> io::Result<()> {
    let mut next = monotonic_ns() + period;
    while !shared.stop.load(Ordering::Relaxed) && next < until {
        let ts = timespec(next);
        // SAFETY: ts is valid for the call; no remainder is asked for (absolute time).
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if r == libc::EINTR {
            continue;
        }
        if r != 0 {
            let e = io::Error::from_raw_os_error(r);
            return Err(io::Error::new(e.kind(), format!("clock_nanosleep: {e}")));
        }
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        next += period;
        let mut expired = 1;
        let now = monotonic_ns();
        if now >= next {
            // Held up past later deadlines: they are expirations without a wake-up of
            // their own.
            let behind = (now - next) / period + 1;
            next += behind * period;
            expired += behind;
        }
        // Expirations first: `counts` reads the events first, so it never sees an event
        // without its expirations.
        shared.expirations.fetch_add(expired, Ordering::SeqCst);
        shared.events.fetch_add(1, Ordering::SeqCst);
    }
    Ok(())
}

fn timerfd_create() -> io::Result<OwnedFd> {
    // SAFETY: no pointers; the result is checked.
    let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
    if fd < 0 {
        return Err(last_error("timerfd_create(CLOCK_MONOTONIC)"));
    }
    // SAFETY: fd is a new descriptor owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Arms `fd` to expire `first` ns from now and then every `interval` ns (0: once).
fn timerfd_arm(fd: &OwnedFd, first: u64, interval: u64) -> io::Result<()> {
    let spec = libc::itimerspec {
        it_interval: timespec(interval),
        it_value: timespec(first),
    };
    // SAFETY: fd is an open timerfd; spec is valid; no old value is asked for.
    if unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } != 0 {
        return Err(last_error("timerfd_settime"));
    }
    Ok(())
}

fn timerfd_loop(shared: &Shared, fd: &OwnedFd, period: u64, until: u64) -> io::Result<()> {
    timerfd_arm(fd, period, period)?;
    let result = loop {
        if monotonic_ns() >= until {
            break Ok(());
        }
        let mut expirations = 0u64;
        // SAFETY: the buffer is the 8 bytes of `expirations`, valid for the call.
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                (&mut expirations as *mut u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        if n < 0 {
            let e = last_error("read(timerfd)");
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break Err(e);
        }
        if shared.stop.load(Ordering::Relaxed) {
            break Ok(());
        }
        shared.expirations.fetch_add(expirations, Ordering::SeqCst);
        shared.events.fetch_add(1, Ordering::SeqCst);
    };
    let _ = timerfd_arm(fd, 0, 0);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    const LIMIT: Duration = Duration::from_secs(60);

    /// One timer test at a time: the signal timer is one per process, and the checks below
    /// count the process's timers and helper threads.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn lock() -> std::sync::MutexGuard<'static, ()> {
        SERIAL
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// POSIX timers of this process (`ID:` lines of `/proc/self/timers`).
    fn posix_timers() -> usize {
        std::fs::read_to_string("/proc/self/timers")
            .map(|t| t.lines().filter(|l| l.starts_with("ID:")).count())
            .unwrap_or(0)
    }

    /// Descriptors of this process that are timerfds.
    fn timerfds() -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("timerfd"))
            })
            .count()
    }

    /// Threads of this process named like a helper.
    fn helpers() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read_to_string(e.path().join("comm"))
                    .is_ok_and(|c| c.trim() == "oscost-tick")
            })
            .count()
    }

    /// Waits (up to a generous bound, never asserting a duration) until `f` holds.
    fn eventually(f: impl Fn() -> bool) -> bool {
        for _ in 0..1000 {
            if f() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        f()
    }

    fn spin_until(events: impl Fn() -> u64, want: u64) {
        let t0 = std::time::Instant::now();
        while events() < want && t0.elapsed() < Duration::from_secs(10) {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn signal_timer_counts_deliveries_and_is_deleted_on_drop() {
        let _g = lock();
        let before = posix_timers();
        let t = SignalTimer::arm(Duration::from_micros(500), LIMIT).unwrap();
        assert_eq!(posix_timers(), before + 1);
        assert!(SignalTimer::arm(Duration::from_millis(1), LIMIT).is_err());
        spin_until(|| t.counts().events, 5);
        let c = t.counts();
        assert!(c.events >= 5, "{c:?}");
        assert!(c.expirations >= c.events);
        drop(t);
        assert_eq!(posix_timers(), before);
        // The handler is gone and nothing is left queued: a second timer works from zero.
        let t = SignalTimer::arm(Duration::from_millis(1), LIMIT).unwrap();
        assert!(t.counts().events <= 1);
        drop(t);
        assert_eq!(posix_timers(), before);
        assert!(SignalTimer::arm(Duration::ZERO, LIMIT).is_err());
    }

    #[test]
    fn helpers_wake_count_and_are_joined() {
        let _g = lock();
        let cpu = crate::affinity().unwrap()[0];
        for wake in [Wake::Sleep, Wake::Timerfd] {
            let fds = timerfds();
            let h = Helper::start(wake, Duration::from_micros(500), cpu, 1, LIMIT).unwrap();
            assert_eq!(helpers(), 1);
            spin_until(|| h.counts().events, 5);
            let c = h.counts();
            assert!(c.events >= 5 && c.expirations >= c.events, "{wake:?} {c:?}");
            assert!(h.switches().is_some());
            match h.policy() {
                Policy::Fifo(1) => {}
                Policy::Normal(why) => assert!(why.contains("sched_setscheduler"), "{why}"),
                p => panic!("{p:?}"),
            }
            let tid = h.tid();
            h.stop().unwrap();
            assert!(
                eventually(|| !std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()),
                "{wake:?}: helper {tid} still there"
            );
            assert_eq!(timerfds(), fds, "{wake:?}");
        }
    }

    /// A signal held up for many periods arrives once, with the expirations it stands for
    /// read from its `si_overrun`.
    #[test]
    fn overruns_are_counted_as_expirations() {
        let _g = lock();
        let t = SignalTimer::arm(Duration::from_micros(200), LIMIT).unwrap();
        let set = signal_set(libc::SIGRTMIN());
        // SAFETY: set is a valid sigset_t; only this thread's mask changes, and back.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
        std::thread::sleep(Duration::from_millis(10));
        let blocked = t.counts();
        // SAFETY: as above.
        unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
        spin_until(|| t.counts().events, blocked.events + 1);
        let c = t.counts();
        assert!(
            c.expirations >= c.events + 20,
            "10 ms of a 200 µs timer held up in one signal: {c:?}"
        );
    }

    /// A task's run time grows while it spins, never beyond the time it has lived, and its
    /// wait never shrinks; a task that is gone is an error, not zeros. No bound on how fast
    /// the time grows: on a loaded machine the spinning thread may wait for a CPU a long time.
    #[test]
    fn task_times_follow_the_scheduler() {
        let born = std::time::Instant::now();
        let (a, b, lived) = std::thread::spawn(move || {
            let me = gettid();
            let a = task_times(me).unwrap();
            // The scheduler charges a running task at its next tick or switch, whenever
            // that comes: spin until it has.
            let mut b = a;
            while b.run_ns <= a.run_ns {
                for _ in 0..10_000 {
                    std::hint::spin_loop();
                }
                b = task_times(me).unwrap();
            }
            (a, b, born.elapsed())
        })
        .join()
        .unwrap();
        assert!(b.run_ns > a.run_ns, "{a:?} {b:?}");
        // The scheduler's clock and the monotonic one may drift apart by a few parts in ten
        // thousand; load only widens the gap the right way.
        let lived = lived.as_nanos() as u64;
        assert!(b.run_ns <= lived + lived / 1000, "{b:?} in {lived} ns");
        assert!(b.waited_ns >= a.waited_ns, "{a:?} {b:?}");
        assert!(task_times(i32::MAX).is_err());
    }

    /// Past its limit every source stops by itself, even at a period nothing could keep.
    #[test]
    fn sources_stop_at_their_limit() {
        let _g = lock();
        let limit = Duration::from_millis(50);
        let t = SignalTimer::arm(Duration::from_micros(1), limit).unwrap();
        let t0 = std::time::Instant::now();
        // The working thread gets to run its own code again: the loop ends.
        while t0.elapsed() < Duration::from_millis(100) {
            std::hint::spin_loop();
        }
        let a = t.counts();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(t.counts(), a, "still firing");
        drop(t);
        let cpu = crate::affinity().unwrap()[0];
        for wake in [Wake::Sleep, Wake::Timerfd] {
            let h = Helper::start(wake, Duration::from_millis(1), cpu, 1, limit).unwrap();
            let tid = h.tid();
            assert!(
                eventually(|| !std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()),
                "{wake:?}: helper {tid} still running past its limit"
            );
            let c = h.counts();
            assert!(c.events <= 60, "{wake:?} {c:?}");
            // Its CPU time outlives its /proc entry.
            assert!(h.run_ns().is_some_and(|ns| ns > 0), "{wake:?}");
            h.stop().unwrap();
        }
    }

    #[test]
    fn a_helper_that_cannot_start_leaves_nothing() {
        let _g = lock();
        let fds = timerfds();
        let e = Helper::start(Wake::Timerfd, Duration::from_millis(1), 1 << 20, 1, LIMIT)
            .err()
            .expect("CPU 1048576 cannot be pinned to");
        assert!(e.to_string().contains("CPU_SETSIZE"), "{e}");
        assert!(eventually(|| helpers() == 0));
        assert_eq!(timerfds(), fds);
    }
}
