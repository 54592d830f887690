//! The tasks of `split`: N threads or processes that share a fixed amount of work, start
//! together at a barrier and each record, in memory shared with the parent, when they started
//! and finished, how much work they did and what the kernel counted for them.
//!
//! A task finishes its share, records, counts itself done and then parks until the parent
//! releases it, so the parent can read each task's migrations from /proc while every task
//! still exists, and so no task's exit is mistaken by its [`crate::task::Team`] for a death.

use crate::clock::Clock;
use crate::ipc::{futex_wait_for, wake_all};
use crate::shm::SharedMap;
use crate::task::{Failure, TaskBody};
use crate::work::work;
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// How the work is divided: `units` in total over `tasks` tasks, done in steps of at most
/// `step` units, with a `sched_yield` after each step when `yield_each`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Tasks sharing the work.
    pub tasks: usize,
    /// Total work W, in units of [`crate::work::work`].
    pub units: u64,
    /// Units per step.
    pub step: u64,
    /// Give up the CPU after every step.
    pub yield_each: bool,
}

impl Plan {
    /// Task `i`'s share: W / N, the first W mod N tasks one unit more, so the shares sum to W
    /// exactly.
    pub fn share(&self, i: usize) -> u64 {
        let n = self.tasks.max(1) as u64;
        self.units / n + u64::from((i as u64) < self.units % n)
    }
}

/// Does `units` units in steps of `step`, yielding after each when asked, until done or until
/// `stop` returns true (checked after every step). Returns (units done, steps). Raw calls
/// only: safe in a forked child.
#[inline]
pub fn do_share(units: u64, step: u64, yield_each: bool, stop: impl Fn() -> bool) -> (u64, u64) {
    let step = step.max(1);
    let (mut left, mut done, mut steps) = (units, 0u64, 0u64);
    while left > 0 {
        let s = left.min(step);
        done += work(s);
        left -= s;
        steps += 1;
        if yield_each {
            // SAFETY: no arguments, touches no memory; its result does not matter here.
            unsafe { libc::sched_yield() };
        }
        if stop() {
            break;
        }
    }
    (done, steps)
}

/// The barrier and completion words, each on its own cache line.
#[repr(C, align(64))]
struct Word(AtomicU32);

#[repr(C)]
struct Header {
    ready: Word,
    go: Word,
    done: Word,
    release: Word,
}

/// What one task recorded, in shared memory.
#[repr(C, align(64))]
struct Slot {
    tid: AtomicU64,
    units: AtomicU64,
    steps: AtomicU64,
    start: AtomicU64,
    finish: AtomicU64,
    cpu_ns: AtomicU64,
    voluntary: AtomicU64,
    involuntary: AtomicU64,
    minor_faults: AtomicU64,
    major_faults: AtomicU64,
    start_voluntary: AtomicU64,
    start_involuntary: AtomicU64,
}

/// A copy of what task `i` recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Record {
    /// Its kernel task id (its pid, for a process).
    pub tid: i32,
    /// Units of work it did.
    pub units: u64,
    /// Steps it took.
    pub steps: u64,
    /// Counter ticks when it started working (after the barrier).
    pub start: u64,
    /// Counter ticks when it finished.
    pub finish: u64,
    /// CPU time it used, ns (`CLOCK_THREAD_CPUTIME_ID`).
    pub cpu_ns: u64,
    /// Voluntary switches (`getrusage(RUSAGE_THREAD)`).
    pub voluntary: u64,
    /// Involuntary switches (preemptions and yields).
    pub involuntary: u64,
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
    /// Voluntary switches when it started working: `voluntary` less this is what the work
    /// itself saw (the barrier's wait excluded).
    pub start_voluntary: u64,
    /// Involuntary switches when it started working.
    pub start_involuntary: u64,
}

/// One run's shared state and the body every task runs.
pub struct SplitRun {
    map: SharedMap,
    plan: Plan,
    clock: Clock,
}

impl SplitRun {
    /// Prepares the shared memory for `plan` before any task exists; `clock` timestamps.
    pub fn new(plan: Plan, clock: Clock) -> io::Result<SplitRun> {
        let len = std::mem::size_of::<Header>() + plan.tasks * std::mem::size_of::<Slot>();
        Ok(SplitRun {
            map: SharedMap::new(len)?,
            plan,
            clock,
        })
    }

    /// The plan this run carries out.
    pub fn plan(&self) -> Plan {
        self.plan
    }

    fn header(&self) -> &Header {
        // SAFETY: the mapping starts with a zeroed Header (all atomics, valid when zero),
        // page-aligned, and lives as long as self.
        unsafe { &*self.map.at::<Header>() }
    }

    fn slot(&self, i: usize) -> Option<&Slot> {
        if i >= self.plan.tasks {
            return None;
        }
        // SAFETY: i < tasks and the mapping holds `tasks` zeroed Slots right after the
        // Header (whose size is a multiple of 64, so each Slot is aligned); lives as long as
        // self; only accessed atomically.
        Some(unsafe {
            &*self
                .map
                .at::<u8>()
                .add(std::mem::size_of::<Header>())
                .cast::<Slot>()
                .add(i)
        })
    }

    /// Waits (in steps of at most `patience`) until every task has reached the barrier;
    /// `false` when the patience ran out first.
    pub fn wait_ready(&self, patience: Duration) -> bool {
        wait_for(&self.header().ready.0, self.plan.tasks as u32, patience)
    }

    /// Opens the barrier: every task starts working.
    pub fn start(&self) {
        let h = self.header();
        h.go.0.store(1, Ordering::Release);
        wake_all(&h.go.0);
    }

    /// Waits (at most `patience`) until every task has finished its share; `false` when the
    /// patience ran out first.
    pub fn wait_done(&self, patience: Duration) -> bool {
        wait_for(&self.header().done.0, self.plan.tasks as u32, patience)
    }

    /// Tasks finished so far.
    pub fn finished(&self) -> u32 {
        self.header().done.0.load(Ordering::Acquire)
    }

    /// Lets every task return: parked ones leave, working ones stop after their step, and
    /// ones still at the barrier leave without working. Also wakes a parent waiting on the
    /// run, so it is the team's halt.
    pub fn halt(&self) {
        let h = self.header();
        h.release.0.store(1, Ordering::Release);
        h.go.0.store(1, Ordering::Release);
        for w in [&h.release.0, &h.go.0, &h.ready.0, &h.done.0] {
            wake_all(w);
        }
    }

    /// What task `i` recorded (zeros before it finished).
    pub fn record(&self, i: usize) -> Record {
        let Some(s) = self.slot(i) else {
            return Record::default();
        };
        let g = |a: &AtomicU64| a.load(Ordering::Acquire);
        Record {
            tid: g(&s.tid) as i32,
            units: g(&s.units),
            steps: g(&s.steps),
            start: g(&s.start),
            finish: g(&s.finish),
            cpu_ns: g(&s.cpu_ns),
            voluntary: g(&s.voluntary),
            involuntary: g(&s.involuntary),
            minor_faults: g(&s.minor_faults),
            major_faults: g(&s.major_faults),
            start_voluntary: g(&s.start_voluntary),
            start_involuntary: g(&s.start_involuntary),
        }
    }

    fn released(&self) -> bool {
        self.header().release.0.load(Ordering::Relaxed) != 0
    }
}

// SAFETY: run makes only raw calls (gettid, futex, sched_yield, clock_gettime, getrusage),
// atomics on the shared mapping made before the fork and the work loop; it never allocates,
// locks or panics (the slot index is checked), and returns once `halt` has run.
unsafe impl TaskBody for SplitRun {
    fn run(&self, index: usize) -> Result<(), Failure> {
        let slot = self.slot(index).ok_or(Failure::Setup)?;
        let h = self.header();
        slot.tid
            .store(crate::gettid() as u32 as u64, Ordering::Relaxed);
        if h.ready.0.fetch_add(1, Ordering::AcqRel) + 1 == self.plan.tasks as u32 {
            wake_all(&h.ready.0);
        }
        while h.go.0.load(Ordering::Acquire) == 0 {
            futex_wait_for(&h.go.0, 0, None);
        }
        if !self.released() {
            // Read before the clock, so the work's span holds no extra call.
            let ru0 = thread_rusage();
            let start = self.clock.now();
            let p = self.plan;
            let (units, steps) = do_share(p.share(index), p.step, p.yield_each, || self.released());
            let finish = self.clock.now();
            let ru = thread_rusage();
            slot.start.store(start, Ordering::Relaxed);
            slot.start_voluntary
                .store(ru0.ru_nvcsw as u64, Ordering::Relaxed);
            slot.start_involuntary
                .store(ru0.ru_nivcsw as u64, Ordering::Relaxed);
            slot.finish.store(finish, Ordering::Relaxed);
            slot.units.store(units, Ordering::Relaxed);
            slot.steps.store(steps, Ordering::Relaxed);
            slot.cpu_ns.store(
                crate::timeline::thread_cpu_ns().unwrap_or(0),
                Ordering::Relaxed,
            );
            slot.voluntary.store(ru.ru_nvcsw as u64, Ordering::Relaxed);
            slot.involuntary
                .store(ru.ru_nivcsw as u64, Ordering::Relaxed);
            slot.minor_faults
                .store(ru.ru_minflt as u64, Ordering::Relaxed);
            slot.major_faults
                .store(ru.ru_majflt as u64, Ordering::Relaxed);
            if h.done.0.fetch_add(1, Ordering::AcqRel) + 1 == self.plan.tasks as u32 {
                wake_all(&h.done.0);
            }
        }
        while !self.released() {
            futex_wait_for(&h.release.0, 0, None);
        }
        Ok(())
    }
}

/// `getrusage(RUSAGE_THREAD)` of the calling thread. Raw call: safe in a forked child.
pub fn thread_rusage() -> libc::rusage {
    // SAFETY: rusage is plain data; zeroed is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru
}

/// Waits until `word` reaches `target`, sleeping on the futex between changes, at most
/// `patience` in all.
fn wait_for(word: &AtomicU32, target: u32, patience: Duration) -> bool {
    let deadline = std::time::Instant::now() + patience;
    loop {
        let v = word.load(Ordering::Acquire);
        if v >= target {
            return true;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        futex_wait_for(word, v, Some(left.min(Duration::from_millis(100))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_sum_to_the_work_exactly() {
        for (tasks, units) in [(1, 10), (3, 10), (7, 1_000_003), (8192, 100_000), (5, 3)] {
            let p = Plan {
                tasks,
                units,
                step: 4,
                yield_each: false,
            };
            let sum: u64 = (0..tasks).map(|i| p.share(i)).sum();
            assert_eq!(sum, units, "{tasks} tasks");
            let (lo, hi) = (p.share(tasks - 1), p.share(0));
            assert!(hi - lo <= 1);
        }
    }

    #[test]
    fn a_share_is_done_in_steps_and_stops_when_told() {
        assert_eq!(do_share(10, 3, false, || false), (10, 4));
        assert_eq!(do_share(10, 3, true, || false), (10, 4));
        assert_eq!(do_share(0, 3, false, || false), (0, 0));
        assert_eq!(do_share(10, 3, false, || true), (3, 1));
    }
}
