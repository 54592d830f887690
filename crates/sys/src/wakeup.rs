//! Periodic wake-ups of the calling thread and how late each one came (what cyclictest
//! measures): the thread sleeps until a deadline on `CLOCK_MONOTONIC`, reads the clock as soon
//! as it runs again, and stores the difference. The deadlines are kept as cyclictest keeps
//! them: an absolute-time `clock_nanosleep`, a periodic timerfd read, or a relative sleep of
//! one period from the moment before it. Also the real-time policy the measuring thread may
//! take, put back when its guard is dropped.

use crate::last_error;
use crate::timer::monotonic_ns;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// How the thread waits for its next deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeMode {
    /// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` to the next deadline.
    Abstime,
    /// A blocking `read` of a timerfd armed at absolute time with the period as interval.
    Timerfd,
    /// `clock_nanosleep(CLOCK_MONOTONIC, 0)` for one period, measured from just before the
    /// call (cyclictest's `-r`).
    Relative,
}

/// What one run of wake-ups gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WakeRun {
    /// Wake-ups stored (the first `done` entries of the buffer).
    pub done: usize,
    /// Deadlines passed without a wake-up of their own: the thread was held up past a later
    /// one (skipped, as their lateness would only repeat the held-up one's).
    pub overruns: u64,
    /// `CLOCK_MONOTONIC` when the first period began, ns.
    pub start_ns: u64,
    /// `CLOCK_MONOTONIC` at the last wake-up, ns.
    pub end_ns: u64,
}

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// Sleeps `lateness.len()` times on a period of `period_ns` in `mode`, storing each wake-up's
/// lateness (ns after its deadline), until done or `cancel` is set. The buffer should be
/// written before, so that storing into it never faults.
pub fn wake_periodically(
    mode: WakeMode,
    period_ns: u64,
    lateness: &mut [u64],
    cancel: &AtomicBool,
) -> io::Result<WakeRun> {
    wake_periodically_at(mode, period_ns, lateness, &mut [], cancel)
}

/// [`wake_periodically`], also storing each wake-up's deadline (`CLOCK_MONOTONIC` ns) in
/// `deadlines` as far as it reaches (a traced pass matches them with the kernel's events).
pub fn wake_periodically_at(
    mode: WakeMode,
    period_ns: u64,
    lateness: &mut [u64],
    deadlines: &mut [u64],
    cancel: &AtomicBool,
) -> io::Result<WakeRun> {
    if period_ns == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a wake-up period of 0 ns",
        ));
    }
    let fd = match mode {
        WakeMode::Timerfd => Some(timerfd()?),
        _ => None,
    };
    let mut run = WakeRun {
        start_ns: monotonic_ns(),
        ..WakeRun::default()
    };
    let mut next = run.start_ns + period_ns;
    if let Some(fd) = &fd {
        arm_abs(fd, next, period_ns)?;
    }
    for (i, slot) in lateness.iter_mut().enumerate() {
        if cancel.load(Ordering::Relaxed) {
            break;
        }
        let (deadline, now, passed) = match (mode, &fd) {
            (WakeMode::Timerfd, Some(fd)) => {
                let n = read_expirations(fd)?;
                (next, monotonic_ns(), n.saturating_sub(1))
            }
            (WakeMode::Relative, _) => {
                let before = monotonic_ns();
                sleep(0, period_ns)?;
                (before + period_ns, monotonic_ns(), 0)
            }
            _ => {
                sleep(libc::TIMER_ABSTIME, next)?;
                (next, monotonic_ns(), 0)
            }
        };
        *slot = now.saturating_sub(deadline);
        if let Some(d) = deadlines.get_mut(i) {
            *d = deadline;
        }
        run.done += 1;
        run.end_ns = now;
        match mode {
            WakeMode::Timerfd => {
                run.overruns += passed;
                next += (passed + 1) * period_ns;
            }
            WakeMode::Abstime => {
                next += period_ns;
                if now >= next {
                    let behind = (now - next) / period_ns + 1;
                    run.overruns += behind;
                    next += behind * period_ns;
                }
            }
            WakeMode::Relative => {}
        }
    }
    if let Some(fd) = &fd {
        let _ = arm_abs(fd, 0, 0);
    }
    Ok(run)
}

/// `clock_nanosleep` on `CLOCK_MONOTONIC` (`flags` 0: for `ns`; `TIMER_ABSTIME`: until `ns`),
/// resumed when a signal interrupts it.
fn sleep(flags: libc::c_int, ns: u64) -> io::Result<()> {
    let mut ts = timespec(ns);
    loop {
        let mut rest = timespec(0);
        // SAFETY: ts and rest are valid timespecs for the call.
        let r = unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, flags, &ts, &mut rest) };
        match r {
            0 => return Ok(()),
            libc::EINTR if flags == 0 => ts = rest,
            libc::EINTR => {}
            e => {
                let e = io::Error::from_raw_os_error(e);
                return Err(io::Error::new(e.kind(), format!("clock_nanosleep: {e}")));
            }
        }
    }
}

fn timerfd() -> io::Result<OwnedFd> {
    // SAFETY: no pointers; the result is checked.
    let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
    if fd < 0 {
        return Err(last_error("timerfd_create(CLOCK_MONOTONIC)"));
    }
    // SAFETY: fd is a new descriptor owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Arms `fd` to expire at `at` (absolute, `CLOCK_MONOTONIC`) and then every `interval` ns;
/// `at` 0 disarms it.
fn arm_abs(fd: &OwnedFd, at: u64, interval: u64) -> io::Result<()> {
    let spec = libc::itimerspec {
        it_interval: timespec(interval),
        it_value: timespec(at),
    };
    // SAFETY: fd is an open timerfd; spec is valid; no old value is asked for.
    let r = unsafe {
        libc::timerfd_settime(
            fd.as_raw_fd(),
            libc::TFD_TIMER_ABSTIME,
            &spec,
            std::ptr::null_mut(),
        )
    };
    if r != 0 {
        return Err(last_error("timerfd_settime(TFD_TIMER_ABSTIME)"));
    }
    Ok(())
}

/// Blocks until the timerfd expires; the expirations since the last read.
fn read_expirations(fd: &OwnedFd) -> io::Result<u64> {
    loop {
        let mut n = 0u64;
        // SAFETY: the buffer is the 8 bytes of `n`, valid for the call.
        let r = unsafe {
            libc::read(
                fd.as_raw_fd(),
                (&mut n as *mut u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        if r == 8 {
            return Ok(n);
        }
        let e = last_error("read(timerfd)");
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The calling thread's scheduling policy and priority, put back when dropped: taken before
/// the thread asks for SCHED_FIFO, so every way out of a measurement leaves it as it was.
#[derive(Debug)]
pub struct PolicyGuard {
    policy: libc::c_int,
    param: libc::sched_param,
    // The policy is per thread: the guard must be dropped on the thread that made it.
    _same_thread: std::marker::PhantomData<*const ()>,
}

impl PolicyGuard {
    /// Gives the calling thread SCHED_FIFO at `priority`; the error (EPERM without
    /// CAP_SYS_NICE or an RLIMIT_RTPRIO that allows it) names the call.
    pub fn fifo(priority: i32) -> io::Result<PolicyGuard> {
        // SAFETY: 0 is the calling thread; no pointers.
        let policy = unsafe { libc::sched_getscheduler(0) };
        if policy < 0 {
            return Err(last_error("sched_getscheduler"));
        }
        let mut param = libc::sched_param { sched_priority: 0 };
        // SAFETY: param is valid and writable for the call.
        if unsafe { libc::sched_getparam(0, &mut param) } != 0 {
            return Err(last_error("sched_getparam"));
        }
        let guard = PolicyGuard {
            policy,
            param,
            _same_thread: std::marker::PhantomData,
        };
        let fifo = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: 0 is the calling thread; fifo is valid for the call.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &fifo) } != 0 {
            let e = last_error(&format!("sched_setscheduler(SCHED_FIFO, {priority})"));
            std::mem::forget(guard);
            return Err(e);
        }
        Ok(guard)
    }
}

impl Drop for PolicyGuard {
    fn drop(&mut self) {
        // SAFETY: 0 is the calling thread; the saved param is valid for the call.
        unsafe { libc::sched_setscheduler(0, self.policy, &self.param) };
    }
}

/// SCHED_OTHER's number, as [`own_policy`] reports it.
pub const SCHED_OTHER: i32 = libc::SCHED_OTHER;
/// SCHED_FIFO's number, as [`own_policy`] reports it.
pub const SCHED_FIFO: i32 = libc::SCHED_FIFO;

/// The calling thread's scheduling policy number (`sched_getscheduler(0)`).
pub fn own_policy() -> io::Result<i32> {
    // SAFETY: 0 is the calling thread; no pointers.
    let r = unsafe { libc::sched_getscheduler(0) };
    if r < 0 {
        return Err(last_error("sched_getscheduler"));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_wakes_after_its_deadline_and_counts() {
        let cancel = AtomicBool::new(false);
        for mode in [WakeMode::Abstime, WakeMode::Timerfd, WakeMode::Relative] {
            let mut lat = vec![0u64; 20];
            let r = wake_periodically(mode, 200_000, &mut lat, &cancel).unwrap();
            assert_eq!(r.done, 20, "{mode:?}");
            assert!(r.end_ns > r.start_ns);
            // 20 periods of 200 µs cannot take less than 4 ms.
            assert!(r.end_ns - r.start_ns >= 20 * 200_000, "{mode:?} {r:?}");
        }
        assert!(wake_periodically(WakeMode::Abstime, 0, &mut [0], &cancel).is_err());
    }

    #[test]
    fn deadlines_are_one_period_apart_and_before_each_wake_up() {
        let cancel = AtomicBool::new(false);
        let (mut lat, mut at) = (vec![0u64; 10], vec![0u64; 10]);
        let r =
            wake_periodically_at(WakeMode::Abstime, 200_000, &mut lat, &mut at, &cancel).unwrap();
        assert_eq!(at[0], r.start_ns + 200_000);
        assert!(at.windows(2).all(|w| w[1] - w[0] >= 200_000), "{at:?}");
        assert!(at[9] + lat[9] <= r.end_ns + 1);
    }

    #[test]
    fn cancel_stops_before_the_first_sleep() {
        let cancel = AtomicBool::new(true);
        let mut lat = vec![0u64; 5];
        let r = wake_periodically(WakeMode::Abstime, 1_000_000_000, &mut lat, &cancel).unwrap();
        assert_eq!(r.done, 0);
    }

    #[test]
    fn the_policy_comes_back_whether_fifo_was_granted_or_not() {
        std::thread::spawn(|| {
            let before = own_policy().unwrap();
            match PolicyGuard::fifo(1) {
                Ok(g) => {
                    assert_eq!(own_policy().unwrap(), libc::SCHED_FIFO);
                    drop(g);
                }
                Err(e) => assert!(e.to_string().contains("sched_setscheduler"), "{e}"),
            }
            assert_eq!(own_policy().unwrap(), before);
        })
        .join()
        .unwrap();
    }
}
