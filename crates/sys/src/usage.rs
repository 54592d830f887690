//! The CPU time this process has used, for the load probe: `getrusage(RUSAGE_SELF)` (every
//! thread of the process) and `getrusage(RUSAGE_CHILDREN)` (every child that has been waited
//! for, with the waited descendants of each folded in by the kernel).
//!
//! Both are exact: the kernel derives `ru_utime + ru_stime` from the scheduler's nanosecond
//! run time (only the split between user and system is sampled at ticks), unlike the
//! tick-sampled busy times of `/proc/stat`.

use crate::last_error;
use std::io;

/// CPU time (user + system) of this process and of its waited-for children, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OwnCpuTime {
    /// Every thread of this process, the ones that exited included (`RUSAGE_SELF`).
    pub process_ns: u64,
    /// Children that have been waited for, and the descendants they waited for in turn
    /// (`RUSAGE_CHILDREN`). A child still running, or ended but not yet reaped, is not in it.
    pub children_ns: u64,
}

impl OwnCpuTime {
    /// Both together, ns.
    pub fn total_ns(&self) -> u64 {
        self.process_ns.saturating_add(self.children_ns)
    }
}

/// User + system time of `getrusage(who)`, ns.
fn cpu_ns(who: i32, call: &str) -> io::Result<u64> {
    // SAFETY: rusage is plain data; zeroed is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid, writable rusage; `who` is one of the RUSAGE_* constants.
    let r = unsafe { libc::getrusage(who, &mut ru) };
    if r != 0 {
        return Err(last_error(call));
    }
    let ns = |t: libc::timeval| {
        (t.tv_sec.max(0) as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(t.tv_usec.max(0) as u64 * 1_000)
    };
    Ok(ns(ru.ru_utime).saturating_add(ns(ru.ru_stime)))
}

/// The CPU time this process and its waited-for children have used so far.
pub fn own_cpu_time() -> io::Result<OwnCpuTime> {
    Ok(OwnCpuTime {
        process_ns: cpu_ns(libc::RUSAGE_SELF, "getrusage(RUSAGE_SELF)")?,
        children_ns: cpu_ns(libc::RUSAGE_CHILDREN, "getrusage(RUSAGE_CHILDREN)")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_time_grows_with_work_and_counts_waited_children() {
        let a = own_cpu_time().unwrap();
        // Burn some CPU in this thread: the process time cannot go backwards and must move.
        let t0 = std::time::Instant::now();
        let mut x = 0u64;
        while t0.elapsed() < std::time::Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let b = own_cpu_time().unwrap();
        assert!(b.process_ns > a.process_ns, "{a:?} {b:?}");
        assert!(b.children_ns >= a.children_ns);
        assert_eq!(b.total_ns(), b.process_ns + b.children_ns);
        // A child that burns CPU and is waited for shows up in the children's time.
        let status = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"])
            .status()
            .expect("sh");
        assert!(status.success());
        let c = own_cpu_time().unwrap();
        assert!(c.children_ns > b.children_ns, "{b:?} {c:?}");
    }
}
