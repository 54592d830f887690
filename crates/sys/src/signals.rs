//! What a signal costs a program (lmbench's `lat_sig`): installing a handler, a signal sent to
//! the own thread and its handler's return, a SIGSEGV caught and returned from, and a signal
//! that wakes another thread waiting in `sigsuspend`. Every handler run is counted where it
//! happens, so a case holds its operations against the runs the kernel really delivered.
//!
//! The handlers are process-wide: [`Handlers`] installs them and puts the previous ones (and
//! the thread's signal mask) back on drop.

use crate::last_error;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// The signal sent to the own thread and between the waking threads.
pub const SIGNAL: libc::c_int = libc::SIGUSR1;

static CAUGHT: AtomicU64 = AtomicU64::new(0);
static SEGV_CAUGHT: AtomicU64 = AtomicU64::new(0);
/// The read-only page the SIGSEGV case writes to; a fault anywhere else is a real one.
static SEGV_PAGE: AtomicUsize = AtomicUsize::new(0);
static IN_USE: AtomicBool = AtomicBool::new(false);

/// The write [`ReadOnlyPage::fault`] makes: `mov byte ptr [rdi], 1`, three bytes, which the
/// SIGSEGV handler steps over.
#[cfg(target_arch = "x86_64")]
const FAULTING_WRITE: [u8; 3] = [0xc6, 0x07, 0x01];

extern "C" fn on_signal(_: libc::c_int) {
    CAUGHT.fetch_add(1, Ordering::Relaxed);
}

#[cfg(target_arch = "x86_64")]
extern "C" fn on_segv(_: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo_t and ucontext_t.
    let (addr, uc) = unsafe {
        (
            (*info).si_addr() as usize,
            &mut *(ctx as *mut libc::ucontext_t),
        )
    };
    let ip = uc.uc_mcontext.gregs[libc::REG_RIP as usize];
    let page = SEGV_PAGE.load(Ordering::Relaxed);
    // SAFETY: ip is the address of the instruction that faulted on a write, so its bytes are
    // mapped and readable; only the first three are read.
    let ours = page != 0
        && addr & !(crate::pages::PAGE - 1) == page
        && unsafe { std::ptr::read_unaligned(ip as *const [u8; 3]) } == FAULTING_WRITE;
    if ours {
        uc.uc_mcontext.gregs[libc::REG_RIP as usize] = ip + FAULTING_WRITE.len() as i64;
        SEGV_CAUGHT.fetch_add(1, Ordering::Relaxed);
    } else {
        // A real fault: back to the default action, which the retried access then takes.
        // SAFETY: signal() is async-signal-safe.
        unsafe { libc::signal(libc::SIGSEGV, libc::SIG_DFL) };
    }
}

/// Handler runs of [`SIGNAL`] so far.
pub fn caught() -> u64 {
    CAUGHT.load(Ordering::Relaxed)
}

/// SIGSEGV faults of the read-only page caught and stepped over so far.
pub fn segv_caught() -> u64 {
    SEGV_CAUGHT.load(Ordering::Relaxed)
}

fn action(handler: libc::sighandler_t, flags: libc::c_int) -> libc::sigaction {
    // SAFETY: sigaction is plain data; zeroed is valid.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler;
    act.sa_flags = flags;
    // SAFETY: sa_mask is a valid sigset_t.
    unsafe { libc::sigemptyset(&mut act.sa_mask) };
    act
}

fn set_action(sig: libc::c_int, act: &libc::sigaction) -> io::Result<libc::sigaction> {
    // SAFETY: as in action(): zeroed is a valid sigaction.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: act and old are valid for the call; the handlers only touch atomics and the
    // context the kernel passes them.
    if unsafe { libc::sigaction(sig, act, &mut old) } != 0 {
        return Err(last_error("sigaction"));
    }
    Ok(old)
}

/// The handlers of [`SIGNAL`] (counts its runs) and, on x86_64, SIGSEGV (steps over the write
/// to the read-only page), installed for the whole process. The previous handlers and the
/// installing thread's mask come back on drop. One at a
/// time in a process.
pub struct Handlers {
    old: Vec<(libc::c_int, libc::sigaction)>,
    old_mask: Option<libc::sigset_t>,
    act: libc::sigaction,
    // The mask is per thread: the guard must be dropped on the thread that made it.
    _same_thread: std::marker::PhantomData<*const ()>,
}

impl Handlers {
    /// Installs the handlers.
    pub fn install() -> io::Result<Handlers> {
        if IN_USE
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Err(io::Error::other(
                "the signal handlers are already installed in this process",
            ));
        }
        let mut me = Handlers {
            old: Vec::new(),
            old_mask: None,
            act: action(on_signal as *const () as libc::sighandler_t, 0),
            _same_thread: std::marker::PhantomData,
        };
        me.old.push((SIGNAL, set_action(SIGNAL, &me.act)?));
        #[cfg(target_arch = "x86_64")]
        {
            let segv = action(
                on_segv as *const () as libc::sighandler_t,
                libc::SA_SIGINFO | libc::SA_NODEFER,
            );
            me.old
                .push((libc::SIGSEGV, set_action(libc::SIGSEGV, &segv)?));
        }
        me.old_mask = Some(current_mask());
        Ok(me)
    }

    /// Installs the [`SIGNAL`] handler again: one `sigaction` call, the operation lmbench's
    /// `lat_sig install` times.
    #[inline]
    pub fn reinstall(&self) -> io::Result<()> {
        // SAFETY: act is a valid sigaction with the handler already installed; no old action
        // is asked for.
        if unsafe { libc::sigaction(SIGNAL, &self.act, std::ptr::null_mut()) } != 0 {
            return Err(last_error("sigaction"));
        }
        Ok(())
    }

    /// Whether the [`SIGNAL`] handler is the one installed now.
    pub fn installed(&self) -> bool {
        // SAFETY: zeroed is a valid sigaction; a null new action only reads.
        let mut cur: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: cur is valid for the call.
        let r = unsafe { libc::sigaction(SIGNAL, std::ptr::null(), &mut cur) };
        r == 0 && cur.sa_sigaction == self.act.sa_sigaction
    }

    /// Sends [`SIGNAL`] to the calling thread (`tgkill`), which must not block it: the
    /// handler runs on the way back from the call and returns through `rt_sigreturn`, both
    /// part of the operation (lmbench's `lat_sig catch`).
    #[inline]
    pub fn catch_own(&self, me: &Target) -> io::Result<()> {
        send(me)
    }
}

impl Drop for Handlers {
    fn drop(&mut self) {
        // A signal still pending for this thread (blocked by a waker) would meet the old
        // disposition: take it first.
        let set = set_of(SIGNAL);
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: set and zero are valid; a zero timeout never blocks.
        while unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &zero) } == SIGNAL {}
        for (sig, old) in self.old.drain(..).rev() {
            // SAFETY: old is the action saved when ours was installed.
            unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
        }
        if let Some(mask) = self.old_mask.take() {
            // SAFETY: mask is the thread's mask saved at install.
            unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &mask, std::ptr::null_mut()) };
        }
        SEGV_PAGE.store(0, Ordering::SeqCst);
        IN_USE.store(false, Ordering::SeqCst);
    }
}

fn set_of(sig: libc::c_int) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        set
    }
}

/// Blocks `sig` in the calling thread.
fn block(sig: libc::c_int) -> io::Result<()> {
    let set = set_of(sig);
    // SAFETY: set is valid; no old mask is asked for.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

fn current_mask() -> libc::sigset_t {
    // SAFETY: zeroed is a valid sigset_t; a null new set only reads the mask into it.
    unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask);
        mask
    }
}

#[cfg(test)]
fn pending(sig: libc::c_int) -> bool {
    // SAFETY: zeroed is a valid sigset_t, filled by sigpending.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is valid for both calls.
    unsafe { libc::sigpending(&mut set) == 0 && libc::sigismember(&set, sig) == 1 }
}

/// A thread a signal can be sent to: its process and thread ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pid: libc::pid_t,
    tid: libc::pid_t,
}

impl Target {
    /// The calling thread.
    pub fn me() -> Target {
        // SAFETY: neither call has arguments or can fail.
        unsafe {
            Target {
                pid: libc::getpid(),
                tid: libc::gettid(),
            }
        }
    }
}

/// `tgkill(target, SIGNAL)`.
#[inline]
pub fn send(to: &Target) -> io::Result<()> {
    // SAFETY: plain integers; the result is checked.
    if unsafe { libc::tgkill(to.pid, to.tid, SIGNAL) } != 0 {
        return Err(last_error("tgkill"));
    }
    Ok(())
}

/// Waits for [`SIGNAL`] in `sigsuspend` with every other signal's blocking as it is; returns
/// once its handler has run. [`SIGNAL`] must be blocked outside the wait ([`block_signal`]),
/// so one sent before the wait stays pending and ends it at once.
#[inline]
pub fn wait() {
    let mut mask = current_mask();
    // SAFETY: mask is a valid sigset_t.
    unsafe {
        libc::sigdelset(&mut mask, SIGNAL);
        // Returns -1 (EINTR) after the handler: the only way it returns.
        libc::sigsuspend(&mask);
    }
}

/// Blocks [`SIGNAL`] in the calling thread, as a thread that waits for it in [`wait`] must
/// (threads it starts afterwards inherit the mask). [`Handlers`] puts the mask of the thread
/// that installed it back on drop.
pub fn block_signal() -> io::Result<()> {
    block(SIGNAL)
}

/// One page mapped read-only, whose writes fault (SIGSEGV) and are stepped over by the
/// handler [`Handlers`] installs. x86_64 only: stepping over needs the faulting
/// instruction's length.
pub struct ReadOnlyPage {
    addr: usize,
}

impl ReadOnlyPage {
    /// Maps the page and tells the handler which page is ours; `Unsupported` on other
    /// architectures.
    pub fn new(_: &Handlers) -> io::Result<ReadOnlyPage> {
        if !cfg!(target_arch = "x86_64") {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "stepping over a faulting write is implemented for x86_64 only",
            ));
        }
        let p = crate::map_anonymous(crate::pages::PAGE, false)?;
        let page = ReadOnlyPage {
            addr: p.as_ptr() as usize,
        };
        // SAFETY: the page was just mapped for this value alone; nothing refers into it. It
        // is touched first, so the faults that follow are protection faults only.
        unsafe {
            p.as_ptr().write_volatile(1);
            if libc::mprotect(p.as_ptr().cast(), crate::pages::PAGE, libc::PROT_READ) != 0 {
                return Err(last_error("mprotect(PROT_READ)"));
            }
        }
        SEGV_PAGE.store(page.addr, Ordering::SeqCst);
        Ok(page)
    }

    /// Writes to the page: the write faults, the kernel delivers SIGSEGV, the handler steps
    /// over the write and returns.
    #[inline]
    pub fn fault(&self) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the write goes to our read-only page; the handler installed with the
        // Handlers this page was made with steps over it (rdi fixes the encoding it expects).
        unsafe {
            std::arch::asm!("mov byte ptr [rdi], 1", in("rdi") self.addr, options(nostack));
        }
    }
}

impl Drop for ReadOnlyPage {
    fn drop(&mut self) {
        SEGV_PAGE.store(0, Ordering::SeqCst);
        // SAFETY: the page is this value's own mapping; nothing refers into it.
        unsafe { libc::munmap(self.addr as *mut libc::c_void, crate::pages::PAGE) };
    }
}

/// A child process that waits for [`SIGNAL`] in `sigsuspend` pinned to one CPU and answers
/// each one with [`SIGNAL`] to a thread of this process: a signal waking another process.
/// Killed and reaped on drop (and killed if the thread that started it ends first).
pub struct PeerProcess {
    pid: libc::pid_t,
    /// Shared words `[state, runs]`; state 0 starting, 1 waiting, 2 refused its CPU.
    shared: crate::shm::SharedWords,
}

impl PeerProcess {
    /// Forks the child, pinned to `cpu`, answering each signal with one to `back`; returns
    /// once it waits. The calling thread must have [`SIGNAL`] blocked ([`block_signal`]): the
    /// child inherits the mask, so a signal sent before its first wait stays pending.
    pub fn start(cpu: usize, back: Target) -> io::Result<PeerProcess> {
        let shared = crate::shm::SharedWords::new(2)?;
        let mut wait_mask = current_mask();
        // SAFETY: a cpu_set_t is plain bits; all zero is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: a valid sigset_t and CPU set, written before the fork (the child only reads).
        unsafe {
            libc::sigdelset(&mut wait_mask, SIGNAL);
            libc::CPU_SET(cpu, &mut set);
        }
        let base = CAUGHT.load(Ordering::Relaxed);
        // SAFETY: the child below makes only raw, async-signal-safe calls and ends in _exit.
        let pid = unsafe { crate::raw::fork_like(0) };
        if pid < 0 {
            return Err(last_error("fork of the signalled process"));
        }
        if pid == 0 {
            // The words exist (two were mapped): `try_get` cannot panic on this path.
            let (Some(state), Some(runs)) = (shared.try_get(0), shared.try_get(1)) else {
                // SAFETY: ends the child at once.
                unsafe { libc::_exit(1) }
            };
            // SAFETY: the child: raw calls on values made before the fork, then _exit. The
            // words are shared and mapped for its life.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    state.store(2, Ordering::Release);
                    libc::_exit(1);
                }
                state.store(1, Ordering::Release);
                loop {
                    libc::sigsuspend(&wait_mask);
                    runs.store(CAUGHT.load(Ordering::Relaxed) - base, Ordering::Release);
                    libc::syscall(libc::SYS_tgkill, back.pid, back.tid, SIGNAL);
                }
            }
        }
        crate::count_started_tasks(1);
        let peer = PeerProcess {
            pid: pid as libc::pid_t,
            shared,
        };
        let t0 = std::time::Instant::now();
        loop {
            match peer.shared.get(0).load(Ordering::Acquire) {
                1 => return Ok(peer),
                2 => {
                    return Err(io::Error::other(format!(
                        "the signalled process could not be pinned to CPU {cpu}"
                    )))
                }
                _ if t0.elapsed() > std::time::Duration::from_secs(5) => {
                    return Err(io::Error::other(
                        "the signalled process did not start within 5 s",
                    ))
                }
                _ => std::thread::sleep(std::time::Duration::from_micros(200)),
            }
        }
    }

    /// The child, as a target of [`send`] (its only thread).
    pub fn target(&self) -> Target {
        Target {
            pid: self.pid,
            tid: self.pid,
        }
    }

    /// Handler runs of [`SIGNAL`] in the child so far (stored before each answer).
    pub fn runs(&self) -> u64 {
        self.shared.get(1).load(Ordering::Acquire)
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        // SAFETY: the child's pid, killed then reaped (the shared words unmap themselves).
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            let mut status = 0;
            libc::waitpid(self.pid, &mut status, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held by each test that installs the handlers: one process has one set at a time.
    fn serial() -> std::sync::MutexGuard<'static, ()> {
        static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
        SERIAL
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[test]
    fn every_signal_is_caught_and_the_old_handlers_come_back() {
        let _serial = serial();
        std::thread::spawn(|| {
            let h = Handlers::install().unwrap();
            assert!(Handlers::install().is_err());
            assert!(h.installed());
            h.reinstall().unwrap();
            let me = Target::me();
            let c0 = caught();
            for _ in 0..10 {
                h.catch_own(&me).unwrap();
            }
            assert_eq!(caught() - c0, 10);
            #[cfg(target_arch = "x86_64")]
            {
                let page = ReadOnlyPage::new(&h).unwrap();
                let s0 = segv_caught();
                for _ in 0..10 {
                    page.fault();
                }
                assert_eq!(segv_caught() - s0, 10);
            }
            // A signal sent now, blocked, is taken before the old handler comes back.
            block_signal().unwrap();
            send(&me).unwrap();
            assert!(pending(SIGNAL));
            drop(h);
            // SAFETY: zeroed is valid; a null new action only reads.
            let mut cur: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: cur is valid for the call.
            unsafe { libc::sigaction(SIGNAL, std::ptr::null(), &mut cur) };
            assert_eq!(cur.sa_sigaction, libc::SIG_DFL);
            assert!(!pending(SIGNAL));
            // SAFETY: the current mask is read into a valid sigset_t.
            assert_eq!(unsafe { libc::sigismember(&current_mask(), SIGNAL) }, 0);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_process_woken_by_a_signal_answers_each_one() {
        let _serial = serial();
        std::thread::spawn(|| {
            let h = Handlers::install().unwrap();
            block_signal().unwrap();
            let cpu = crate::affinity().unwrap()[0];
            let peer = PeerProcess::start(cpu, Target::me()).unwrap();
            let before = caught();
            for _ in 0..20 {
                send(&peer.target()).unwrap();
                wait();
            }
            assert_eq!(peer.runs(), 20);
            assert_eq!(caught() - before, 20);
            drop(peer);
            drop(h);
        })
        .join()
        .unwrap();
    }
}
