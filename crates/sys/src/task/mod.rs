//! Worker tasks for the switch and ring experiments: threads or forked processes, created so
//! that no error path, Ctrl-C or killed worker leaves a zombie, an orphan or a hung parent.
//!
//! A forked child of a process that may have threads (the team's watchdog, the test harness)
//! may hold a copy of a lock some other thread held at fork time, so it must not allocate, lock
//! or unwind. The compiler holds that line: a task runs a [`TaskBody`], an `unsafe` trait that
//! only this crate implements (every other crate forbids `unsafe`), for bodies written to that
//! rule: allocation-free raw calls (link post/wait, getrusage, sched_setaffinity with a mask
//! built before the fork, atomics on shared memory), every index checked before the fork,
//! failures as codes. The child leaves with `_exit`: it never returns into the parent's Rust
//! code, never drops a value, never unwinds, and every inherited signal handler is reset.
//!
//! A [`Team`] owns every task it started. Dropping it kills (processes) or halts (threads) and
//! reaps them all, so an early `?` anywhere in an experiment cleans up. For processes a
//! watchdog thread waits for the children's process group: a child that exits before the
//! parent asked the team to stop sets the team's abort flag and wakes every task through the
//! experiment's `halt` callback, so a parent blocked in a wait returns with the reason.

use super::last_error;

mod failure;
mod limits;
mod policy;
mod reap;
mod working_set;

pub use failure::Failure;
use failure::*;
pub(crate) use limits::spawn_error;
pub use limits::{
    address_space_limit, resource_error, thread_address_space, thread_error, LimitError,
};
pub use policy::{sched_policy, set_sched_policy, Policy};
pub use reap::{become_subreaper, descendants, reap_orphans, send_signal};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
pub use working_set::{process_migrations, process_pss_kib, WorkingSet};

/// What a task of a [`Team`] runs: in a worker thread, or in a forked child.
///
/// # Safety
///
/// [`TaskBody::run`] must be safe in a forked child of a multi-threaded process: no
/// allocation, no lock, no panic (bounds checked before the fork), only raw calls and atomics
/// on memory made before the fork, and failures returned as a [`Failure`] code. It must return
/// once the team's `halt` callback has run.
pub unsafe trait TaskBody: Send + Sync + 'static {
    /// Task `index`'s whole life (index 0 is the team's caller).
    fn run(&self, index: usize) -> Result<(), Failure>;
}

/// Stack of each worker thread. A worker only loops over link calls and a working-set sum, so
/// it needs a few KiB; 64 KiB leaves ample room (glibc's minimum is 16 KiB). The default 2 MiB
/// would reserve 16 GiB of address space and commit charge for 8192 threads, which fails under
/// strict overcommit or an RLIMIT_AS, and would make the ring's peak memory a figure about
/// stack reservations instead of about switching.
pub const THREAD_STACK_BYTES: usize = 64 * 1024;

/// How long an orderly stop may take before the stragglers are killed (processes) or
/// abandoned (threads) and the stop is reported as failed.
const STOP_DEADLINE: Duration = Duration::from_secs(20);

/// What the tasks of an experiment are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Threads of the oscost process (one address space)
    Threads,
    /// Forked processes (an address-space switch on every hand-over)
    Processes,
}

impl Kind {
    /// Both kinds, in display order.
    pub const ALL: [Kind; 2] = [Kind::Threads, Kind::Processes];

    /// Kebab-case name, as on the command line and in case ids.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Threads => "threads",
            Kind::Processes => "processes",
        }
    }

    /// The kind called `name` ([`Kind::name`]).
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// A few words for a list of choices.
    pub fn summary(self) -> &'static str {
        match self {
            Kind::Threads => "threads of the oscost process (one address space)",
            Kind::Processes => "forked processes (an address-space switch on every hand-over)",
        }
    }
}

/// A CPU affinity mask built before spawning, so a forked child can apply it with one raw
/// `sched_setaffinity` call and no allocation.
#[derive(Clone)]
pub struct CpuMask {
    set: libc::cpu_set_t,
    cpus: Vec<usize>,
}

impl std::fmt::Debug for CpuMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CpuMask").field(&self.cpus).finish()
    }
}

impl CpuMask {
    /// A mask of `cpus` (which must not be empty).
    pub fn new(cpus: &[usize]) -> io::Result<CpuMask> {
        if cpus.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "empty CPU mask",
            ));
        }
        let set = super::cpu_set(cpus)?;
        Ok(CpuMask {
            set,
            cpus: cpus.to_vec(),
        })
    }

    /// The CPUs in the mask, ascending as given.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// Pins the calling thread to the mask. One raw call: allocation-free and async-signal-safe
    /// (the error is built from errno without allocating), so a forked child may call it.
    pub fn apply(&self) -> io::Result<()> {
        // SAFETY: set is a valid cpu_set_t of the size passed; 0 is the calling thread.
        let r = unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.set)
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// What the team, its watchdog and its threads share.
struct Shared {
    /// Set once a task failed or died before the team was told to stop.
    aborted: AtomicBool,
    /// The first such failure, as the message the parent returns.
    reason: Mutex<Option<String>>,
    /// Set before the parent asks the tasks to stop: exits after it are expected.
    stopping: AtomicBool,
    /// Makes every task return: the experiment sets its stop word and posts every link once.
    halt: Box<dyn Fn() + Send + Sync>,
}

impl Shared {
    fn fail(&self, msg: String) {
        {
            let mut r = lock(&self.reason);
            if r.is_none() {
                *r = Some(msg);
            }
        }
        self.aborted.store(true, Ordering::Release);
        (self.halt)();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means another thread panicked holding it; the data (pids, exit
    // statuses, a message) is still what it was.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    fn from_wait_status(st: i32) -> Exit {
        if libc::WIFSIGNALED(st) {
            Exit::Signal(libc::WTERMSIG(st))
        } else {
            Exit::Code(libc::WEXITSTATUS(st))
        }
    }

    fn describe(self, pid: i32) -> String {
        match self {
            Exit::Signal(s) => {
                format!(
                    "worker process {pid} was killed by signal {s} ({})",
                    signal_name(s)
                )
            }
            Exit::Code(c) => {
                format!(
                    "worker process {pid} exited with status {c} ({})",
                    describe_status(c)
                )
            }
        }
    }
}

/// A forked child and, once reaped, how it ended.
struct Slot {
    pid: i32,
    exit: Option<Exit>,
}

/// The children of a process team, all in one process group so the watchdog can wait for
/// exactly them (never for children other code in this process started).
struct Procs {
    pgid: i32,
    slots: Mutex<Vec<Slot>>,
}

impl Procs {
    /// Reaps `pid` if it is ours and not reaped yet; returns how it ended. The lock is held
    /// across the reap so a concurrent kill never signals a reaped (reusable) pid.
    fn reap(&self, pid: i32, block: bool) -> Option<Exit> {
        let mut slots = lock(&self.slots);
        let slot = slots
            .iter_mut()
            .find(|s| s.pid == pid && s.exit.is_none())?;
        let mut st = 0;
        let flags = if block { 0 } else { libc::WNOHANG };
        // SAFETY: st is writable; pid is our unreaped child.
        let r = unsafe { libc::waitpid(pid, &mut st, flags) };
        if r != pid {
            return None;
        }
        let exit = Exit::from_wait_status(st);
        slot.exit = Some(exit);
        Some(exit)
    }

    /// SIGKILLs every unreaped child. Holding the lock keeps the watchdog from reaping (and
    /// the pid from being reused) between the check and the kill.
    fn kill_all(&self) {
        let slots = lock(&self.slots);
        for s in slots.iter().filter(|s| s.exit.is_none()) {
            // SAFETY: s.pid is our child and not reaped, so the pid is still ours.
            unsafe { libc::kill(s.pid, libc::SIGKILL) };
        }
    }

    /// Reaps every child still unreaped, blocking (they must have been told or killed).
    fn reap_rest(&self) {
        let pids: Vec<i32> = lock(&self.slots)
            .iter()
            .filter(|s| s.exit.is_none())
            .map(|s| s.pid)
            .collect();
        for pid in pids {
            self.reap(pid, true);
        }
    }

    fn is_unreaped(&self, pid: i32) -> bool {
        lock(&self.slots)
            .iter()
            .any(|s| s.pid == pid && s.exit.is_none())
    }

    fn all_reaped(&self) -> bool {
        lock(&self.slots).iter().all(|s| s.exit.is_some())
    }

    fn first_bad_exit(&self) -> Option<String> {
        lock(&self.slots).iter().find_map(|s| match s.exit {
            Some(Exit::Code(0)) => None,
            Some(e) => Some(e.describe(s.pid)),
            None => Some(format!("worker process {} was not reaped", s.pid)),
        })
    }
}

/// Waits for the team's process group and reaps each child as it ends. A child ending while
/// the team is not stopping is a failure: record it and wake everyone.
fn watchdog(procs: Arc<Procs>, shared: Arc<Shared>) {
    loop {
        // SAFETY: siginfo_t is plain data; zeroed is valid for waitid to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // WNOWAIT: only learn which child ended; it is reaped under the slots lock below.
        // SAFETY: info is writable; P_PGID with our children's group selects only them.
        let r = unsafe {
            libc::waitid(
                libc::P_PGID,
                procs.pgid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r != 0 {
            if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return; // ECHILD: no child of the group left
        }
        // SAFETY: waitid succeeded with WEXITED, so si_pid and si_status are filled.
        let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
        let exit = if info.si_code == libc::CLD_EXITED {
            Exit::Code(status)
        } else {
            Exit::Signal(status)
        };
        // Fail (which posts every link, a signal link included) while the child is still an
        // unreaped zombie: until waitpid its pid cannot be reused by another process.
        if procs.is_unreaped(pid) && !shared.stopping.load(Ordering::Acquire) {
            shared.fail(exit.describe(pid));
        }
        procs.reap(pid, false);
        if procs.all_reaped() {
            return;
        }
    }
}

/// If a worker thread unwinds (it should not), fail the team so the parent does not wait
/// forever for a token the thread will never pass.
struct FailOnUnwind {
    shared: Arc<Shared>,
    index: usize,
}

impl Drop for FailOnUnwind {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared
                .fail(format!("worker thread {} panicked", self.index));
        }
    }
}

/// If anything in a forked child unwinds, leave at once instead of unwinding into the
/// parent's code (which would then run as a second copy of oscost).
struct ExitOnUnwind;

impl Drop for ExitOnUnwind {
    fn drop(&mut self) {
        exit_now(status::UNWOUND);
    }
}

fn exit_now(code: i32) -> ! {
    // SAFETY: _exit ends the process at once, running no destructors or atexit handlers: the
    // only way out for a forked child of a multithreaded parent.
    unsafe { libc::_exit(code) }
}

/// Puts every caught signal back to its default action; ignored signals stay ignored. Raw
/// calls only: it runs in a forked child.
fn reset_signal_handlers() {
    for sig in 1..libc::SIGRTMIN() {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: sigaction is plain data; zeroed is a valid value to be filled.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a null new action only reads the current one into `old`.
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
            continue;
        }
        if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN {
            // SAFETY: SIG_DFL for a valid signal number touches no memory of ours.
            unsafe { libc::signal(sig, libc::SIG_DFL) };
        }
    }
}

/// The body of a forked child. Raw calls only, then `_exit`: never returns.
fn child_main<B: TaskBody>(
    parent: i32,
    pgid: i32,
    mask: Option<&CpuMask>,
    body: &B,
    task: usize,
) -> ! {
    let _backstop = ExitOnUnwind;
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes plain integers. The signal comes when the thread
    // that forked us exits, so oscost being killed never leaves this child running.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    // SAFETY: getppid has no arguments.
    if unsafe { libc::getppid() } != parent {
        // The parent died before the death signal was armed.
        exit_now(status::ORPHANED);
    }
    // SAFETY: setpgid on ourselves with plain integers; pgid 0 makes us the group leader.
    unsafe { libc::setpgid(0, pgid) };
    // The parent's signal handlers (its stop flag) must not run here: a SIGTERM sent to this
    // worker has to end it, and be seen by the parent as this worker's death.
    reset_signal_handlers();
    if let Some(m) = mask {
        if m.apply().is_err() {
            exit_now(status::PIN);
        }
    }
    exit_now(match body.run(task) {
        Ok(()) => 0,
        Err(f) => f.code(),
    })
}

/// The tasks of one experiment run, all of one [`Kind`]. Dropping it stops and reaps them.
pub struct Team {
    kind: Kind,
    planned: usize,
    existing: usize,
    shared: Arc<Shared>,
    procs: Option<Arc<Procs>>,
    threads: Vec<JoinHandle<Result<(), Failure>>>,
    watchdog: Option<JoinHandle<()>>,
    finished: bool,
}

impl Team {
    /// An empty team. `planned` is the experiment's task count, of which `existing` already
    /// run (the caller, when it is task 1 of a ring): both only number tasks in error messages.
    /// `halt` must make every task return soon: set the experiment's stop word, then post
    /// every link once. It is called from the watchdog when a task dies, and on stop.
    pub fn new(
        kind: Kind,
        planned: usize,
        existing: usize,
        halt: impl Fn() + Send + Sync + 'static,
    ) -> Team {
        Team {
            kind,
            planned,
            existing,
            shared: Arc::new(Shared {
                aborted: AtomicBool::new(false),
                reason: Mutex::new(None),
                stopping: AtomicBool::new(false),
                halt: Box::new(halt),
            }),
            procs: None,
            threads: Vec::new(),
            watchdog: None,
            finished: false,
        }
    }

    /// Tasks started so far.
    pub fn len(&self) -> usize {
        match &self.procs {
            Some(p) => lock(&p.slots).len(),
            None => self.threads.len(),
        }
    }

    /// Whether no task was started yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Process ids of the children (empty for threads).
    pub fn pids(&self) -> Vec<i32> {
        self.procs
            .as_ref()
            .map(|p| lock(&p.slots).iter().map(|s| s.pid).collect())
            .unwrap_or_default()
    }

    /// Starts task `index` running `body`, pinned to `mask` if given. For processes `body`
    /// runs in a forked child (see [`TaskBody`]); it is used by reference and never dropped
    /// there. A limit hit is a [`LimitError`].
    pub fn spawn<B: TaskBody>(
        &mut self,
        mask: Option<&CpuMask>,
        body: &Arc<B>,
        index: usize,
    ) -> anyhow::Result<()> {
        match self.kind {
            Kind::Threads => self.spawn_thread(mask, Arc::clone(body), index),
            Kind::Processes => self.spawn_process(mask, &**body, index),
        }
    }

    fn spawn_thread<B: TaskBody>(
        &mut self,
        mask: Option<&CpuMask>,
        body: Arc<B>,
        task: usize,
    ) -> anyhow::Result<()> {
        let index = self.existing + self.threads.len() + 1;
        limits::room_for_thread(index, self.planned)?;
        let shared = Arc::clone(&self.shared);
        let mask = mask.cloned();
        let handle = std::thread::Builder::new()
            .name(format!("oscost-w{index}"))
            .stack_size(THREAD_STACK_BYTES)
            .spawn(move || {
                let _guard = FailOnUnwind {
                    shared: Arc::clone(&shared),
                    index,
                };
                let result = match mask.as_ref().map(CpuMask::apply) {
                    Some(Err(e)) => {
                        shared.fail(format!("worker thread {index}: pinning failed: {e}"));
                        return Err(Failure::setup(&e));
                    }
                    _ => body.run(task),
                };
                if let Err(f) = result {
                    if !shared.stopping.load(Ordering::Acquire) {
                        shared.fail(format!("worker thread {index} stopped early: {f}"));
                    }
                }
                result
            })
            .map_err(|e| spawn_error(e, index, self.planned, "thread"))?;
        self.threads.push(handle);
        super::count_started_tasks(1);
        Ok(())
    }

    fn spawn_process<B: TaskBody>(
        &mut self,
        mask: Option<&CpuMask>,
        body: &B,
        task: usize,
    ) -> anyhow::Result<()> {
        let index = self.existing + self.len() + 1;
        let pgid = self.procs.as_ref().map_or(0, |p| p.pgid);
        // SAFETY: getpid has no arguments.
        let parent = unsafe { libc::getpid() };
        // SAFETY: fork is sound here because the child runs only child_main, which makes
        // allocation-free raw calls, runs a TaskBody (held to the same rule) and leaves with
        // _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(spawn_error(last_error("fork"), index, self.planned, "fork"));
        }
        if pid == 0 {
            child_main(parent, pgid, mask, body, task);
        }
        // Also set the group from this side, so the child is in it before the watchdog waits,
        // whichever of the two runs first.
        let pgid = if pgid == 0 { pid } else { pgid };
        // SAFETY: plain integers; pid is our child.
        unsafe { libc::setpgid(pid, pgid) };
        let procs = self.procs.get_or_insert_with(|| {
            lock(&LIVE_GROUPS).push(pgid);
            Arc::new(Procs {
                pgid,
                slots: Mutex::new(Vec::new()),
            })
        });
        lock(&procs.slots).push(Slot { pid, exit: None });
        super::count_started_tasks(1);
        Ok(())
    }

    /// Starts the watchdog over the children (processes only; worker threads report their
    /// own failure). Call it once every task is spawned, so no fork happens while it runs.
    pub fn watch(&mut self) -> anyhow::Result<()> {
        let Some(procs) = &self.procs else {
            return Ok(());
        };
        let (procs, shared) = (Arc::clone(procs), Arc::clone(&self.shared));
        let handle = std::thread::Builder::new()
            .name("oscost-watchdog".into())
            .stack_size(THREAD_STACK_BYTES)
            .spawn(move || watchdog(procs, shared))
            .map_err(|e| spawn_error(e, self.planned + 1, self.planned + 1, "watchdog thread"))?;
        self.watchdog = Some(handle);
        super::count_started_tasks(1);
        Ok(())
    }

    /// `Ok` while every task is running as asked; the reason once one failed or died. Cheap
    /// (one atomic load): call it after every wait.
    #[inline]
    pub fn check(&self) -> anyhow::Result<()> {
        if self.shared.aborted.load(Ordering::Acquire) {
            return Err(self.abort_error());
        }
        Ok(())
    }

    #[cold]
    fn abort_error(&self) -> anyhow::Error {
        let reason = lock(&self.shared.reason).clone();
        anyhow::anyhow!(reason.unwrap_or_else(|| "a worker task failed".into()))
    }

    /// Stops the tasks in order (halt, then wait for each to return and report) and reaps
    /// them. Errors if a task failed, died, or did not stop within the deadline.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.finished = true;
        self.shared.stopping.store(true, Ordering::Release);
        (self.shared.halt)();
        let late = match self.kind {
            Kind::Threads => self.join_threads(),
            Kind::Processes => self.wait_children(),
        };
        if let Some(reason) = lock(&self.shared.reason).clone() {
            anyhow::bail!(reason);
        }
        if let Some(bad) = self.procs.as_ref().and_then(|p| p.first_bad_exit()) {
            anyhow::bail!(bad);
        }
        if let Some(what) = late {
            anyhow::bail!(what);
        }
        Ok(())
    }

    /// Joins every worker thread; threads cannot be killed, so stragglers get the halt again
    /// every 100 ms and are abandoned (reported) after the deadline.
    fn join_threads(&mut self) -> Option<String> {
        let deadline = Instant::now() + STOP_DEADLINE;
        let mut last_halt = Instant::now();
        while self.threads.iter().any(|t| !t.is_finished()) {
            if Instant::now() > deadline {
                let left = self.threads.iter().filter(|t| !t.is_finished()).count();
                self.threads.clear();
                return Some(format!(
                    "{left} worker threads did not stop within {} s",
                    STOP_DEADLINE.as_secs()
                ));
            }
            if last_halt.elapsed() > Duration::from_millis(100) {
                (self.shared.halt)();
                last_halt = Instant::now();
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        let mut first = None;
        for (i, t) in self.threads.drain(..).enumerate() {
            let outcome = match t.join() {
                Ok(Ok(())) => None,
                Ok(Err(f)) => Some(format!("worker thread {} stopped early: {f}", i + 1)),
                Err(_) => Some(format!("worker thread {} panicked", i + 1)),
            };
            first = first.or(outcome);
        }
        first
    }

    /// Waits for every child to exit after the halt; kills the ones still running at the
    /// deadline. Always reaps every child.
    fn wait_children(&mut self) -> Option<String> {
        let procs = self.procs.clone()?;
        let deadline = Instant::now() + STOP_DEADLINE;
        let mut late = None;
        loop {
            let done = match &self.watchdog {
                Some(w) => w.is_finished(),
                None => procs.all_reaped(),
            };
            if done {
                break;
            }
            if Instant::now() > deadline {
                late = Some(format!(
                    "worker processes did not stop within {} s and were killed",
                    STOP_DEADLINE.as_secs()
                ));
                procs.kill_all();
                break;
            }
            if self.watchdog.is_none() {
                for pid in self.pids() {
                    procs.reap(pid, false);
                }
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        self.reap_everything();
        late
    }

    /// Joins the watchdog (it returns once the group is empty), then reaps whatever was not
    /// in the group (a child killed before it joined).
    fn reap_everything(&mut self) {
        if let Some(w) = self.watchdog.take() {
            let _ = w.join();
        }
        if let Some(p) = &self.procs {
            p.reap_rest();
            lock(&LIVE_GROUPS).retain(|&g| g != p.pgid);
        }
    }
}

/// Process groups of worker teams not yet reaped, for [`kill_all_workers`].
static LIVE_GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// SIGKILLs and reaps every worker process of every live team, for a process about to exit
/// without unwinding (a second Ctrl-C): no drop will run to do it.
pub fn kill_all_workers() {
    let groups = lock(&LIVE_GROUPS);
    for &pgid in groups.iter() {
        // SAFETY: plain integers; the group holds only workers this process forked and has
        // not finished reaping, so no other process can be hit.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    for &pgid in groups.iter() {
        // Reap until none of the group is left (a concurrent watchdog may take some: ECHILD).
        // SAFETY: a null status pointer is allowed; -pgid selects the group's children.
        while unsafe { libc::waitpid(-pgid, std::ptr::null_mut(), 0) } > 0 {}
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        self.shared.stopping.store(true, Ordering::Release);
        match self.kind {
            Kind::Processes => {
                if let Some(p) = &self.procs {
                    p.kill_all();
                }
                self.reap_everything();
            }
            Kind::Threads => {
                (self.shared.halt)();
                let _ = self.join_threads();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipc::{Link, SharedWords, Via};

    /// A setup failure names the OS error, from a thread (the value) and from a process (its
    /// exit status) alike; one without an errno keeps the plain message.
    #[test]
    fn a_setup_failure_names_the_os_error() {
        let f = Failure::setup(&io::Error::from_raw_os_error(libc::ENOMEM));
        assert_eq!(f, Failure::SetupOs(libc::ENOMEM));
        let want = format!(
            "its setup (signal mask or working set) failed: {}",
            io::Error::from_raw_os_error(libc::ENOMEM)
        );
        assert_eq!(f.to_string(), want);
        assert_eq!(describe_status(f.code()), want);
        let plain = Failure::setup(&io::Error::new(io::ErrorKind::InvalidInput, "x"));
        assert_eq!(plain, Failure::Setup);
        assert_eq!(
            describe_status(plain.code()),
            "its setup (signal mask or working set) failed"
        );
        // An errno that does not fit an exit status keeps the plain message.
        assert_eq!(Failure::SetupOs(300).code(), status::SETUP);
    }

    /// Children of this process among `pids` that still exist (zombies included).
    fn still_ours(pids: &[i32]) -> Vec<i32> {
        // SAFETY: getpid has no arguments.
        let me = unsafe { libc::getpid() };
        pids.iter()
            .copied()
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|s| {
                        let rest = &s[s.rfind(')')? + 2..];
                        rest.split_whitespace().nth(1)?.parse::<i32>().ok()
                    })
                    == Some(me)
            })
            .collect()
    }

    /// A responder: task `i` waits on `links[i]` and echoes to `back` until `stop` is set.
    struct Echo {
        links: Vec<Link>,
        back: Link,
        stop: SharedWords,
    }

    // SAFETY: run makes only link calls and atomic loads on memory made before the fork;
    // every lookup is checked and failures are codes.
    unsafe impl TaskBody for Echo {
        fn run(&self, i: usize) -> Result<(), Failure> {
            let own = self.links.get(i).ok_or(Failure::Setup)?;
            let stop = self.stop.try_get(0).ok_or(Failure::Setup)?;
            loop {
                own.wait().map_err(|_| Failure::Wait)?;
                if stop.load(Ordering::Acquire) != 0 {
                    return Ok(());
                }
                self.back.post().map_err(|_| Failure::Post)?;
            }
        }
    }

    /// A responder team of `n` tasks on `links[i]`, each echoing to `back`.
    fn echo_team(kind: Kind, n: usize) -> (Team, Arc<Echo>) {
        let echo = Arc::new(Echo {
            links: (0..n).map(|_| Link::new(Via::Pipe).unwrap()).collect(),
            back: Link::new(Via::Pipe).unwrap(),
            stop: SharedWords::new(1).unwrap(),
        });
        let e2 = Arc::clone(&echo);
        let mut team = Team::new(kind, n, 0, move || {
            e2.stop.get(0).store(1, Ordering::Release);
            for l in &e2.links {
                let _ = l.post();
            }
            let _ = e2.back.post();
        });
        for i in 0..n {
            team.spawn(None, &echo, i).unwrap();
        }
        team.watch().unwrap();
        (team, echo)
    }

    #[test]
    fn orderly_stop_reaps_every_child() {
        for kind in [Kind::Threads, Kind::Processes] {
            let (team, echo) = echo_team(kind, 4);
            for _ in 0..100 {
                for l in echo.links.iter() {
                    l.post().unwrap();
                    echo.back.wait().unwrap();
                }
            }
            team.check().unwrap();
            let pids = team.pids();
            team.finish().unwrap();
            assert!(
                still_ours(&pids).is_empty(),
                "{kind:?} left {:?}",
                still_ours(&pids)
            );
        }
    }

    #[test]
    fn a_killed_child_wakes_the_parent_with_the_reason() {
        let (team, echo) = echo_team(Kind::Processes, 3);
        echo.links[0].post().unwrap();
        echo.back.wait().unwrap();
        let victim = team.pids()[1];
        // SAFETY: victim is our unreaped child.
        unsafe { libc::kill(victim, libc::SIGKILL) };
        // The parent blocks as if waiting for the dead child's answer; the watchdog's halt
        // posts `back`, so this returns.
        echo.back.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while team.check().is_ok() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let msg = team.check().unwrap_err().to_string();
        assert_eq!(
            msg,
            format!("worker process {victim} was killed by signal 9 (SIGKILL)")
        );
        let pids = team.pids();
        let err = team.finish().unwrap_err().to_string();
        assert!(err.contains("killed by signal 9"), "{err}");
        assert!(still_ours(&pids).is_empty());
    }

    #[test]
    fn dropping_a_team_kills_and_reaps() {
        let (team, _echo) = echo_team(Kind::Processes, 5);
        let pids = team.pids();
        assert_eq!(pids.len(), 5);
        drop(team);
        assert!(still_ours(&pids).is_empty());
        let (team, _echo) = echo_team(Kind::Threads, 5);
        drop(team); // joins: would hang here if the halt did not reach every thread
    }

    #[test]
    fn limit_errors_name_the_limit_and_the_remedy() {
        let e = spawn_error(
            io::Error::from_raw_os_error(libc::EAGAIN),
            4097,
            8192,
            "fork",
        );
        let msg = e.to_string();
        assert!(msg.starts_with("cannot create task 4097 of 8192: the process limit was reached (RLIMIT_NPROC soft="), "{msg}");
        assert!(msg.contains("`ulimit -u`"), "{msg}");
        assert!(e.downcast_ref::<LimitError>().is_some());
        let wrapped = io::Error::other("pipe2: Too many open files (os error 24)");
        let msg = resource_error(wrapped, "a pipe link", 300, 512).to_string();
        assert!(
            msg.contains("RLIMIT_NOFILE soft=") && msg.contains("`ulimit -n`"),
            "{msg}"
        );
    }

    #[test]
    fn a_thread_maps_its_stack_a_signal_stack_and_their_guards() {
        let page = crate::sysinfo::page_size() as u64;
        let each = thread_address_space();
        assert!(
            each >= THREAD_STACK_BYTES as u64 + 8192 + 2 * page,
            "{each}"
        );
        assert!(each < 1 << 20, "{each}");
    }

    #[test]
    fn working_set_is_private_and_summed() {
        let ws = WorkingSet::new(16).unwrap();
        let n = 16 * 1024 / 8;
        assert_eq!(ws.touch(), (n * (n - 1) / 2) as u64);
        assert_eq!(WorkingSet::new(0).unwrap().touch(), 0);
    }

    #[test]
    fn cpu_mask_pins_a_thread() {
        let cpu = crate::affinity().unwrap()[0];
        let m = CpuMask::new(&[cpu]).unwrap();
        std::thread::spawn(move || {
            m.apply().unwrap();
            assert_eq!(crate::affinity().unwrap(), vec![cpu]);
        })
        .join()
        .unwrap();
        assert!(CpuMask::new(&[]).is_err());
    }
}
