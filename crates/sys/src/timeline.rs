//! The timeline's workers: N tasks that each do equal chunks of busy work and write the
//! counter's reading after every chunk into shared memory made before they started, so that
//! nothing but the work and one store happens while they are measured.
//!
//! Everything a worker touches is built before any task is spawned: one mapping of control
//! words (the start barrier, the stop word, one block per worker) and one of the trace (a slot
//! per worker and chunk). A worker's path is the busy loop, counter reads, atomics, futex
//! calls, `getrusage` and `clock_gettime`, with every index checked and failures returned as
//! codes, so the same body runs in a thread or in a forked child.
//!
//! The first worker to finish reads every worker's CPU clock at that instant: the CPU time
//! each got while all of them were runnable, which is what the kernel's weights share out.

use crate::clock::Clock;
use crate::ipc::{futex_wait, futex_wait_for, futex_wake, SharedWords};
use crate::last_error;
use crate::task::{Failure, Kind, TaskBody};
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// Control words. The three futex words are 32-bit words of the same indices.
const W_STOP: usize = 0;
const W_READY: usize = 1;
const W_GO: usize = 2;
const W_DONE: usize = 3;
/// 1 + the index of the first worker to finish (0: none yet).
const W_FIRST: usize = 4;
/// Counter reading when the first worker finished.
const W_FIRST_AT: usize = 5;
/// Where the per-worker blocks begin.
const W_WORKERS: usize = 8;

/// Words of one worker's block.
const PER_WORKER: usize = 8;
const O_TID: usize = 0;
const O_START: usize = 1;
const O_CPU_START: usize = 2;
const O_CPU_END: usize = 3;
const O_CPU_AT_FIRST: usize = 4;
const O_INVOLUNTARY: usize = 5;
const O_VOLUNTARY: usize = 6;

/// Equal pieces of CPU work, one chunk's worth: a dependent xorshift chain the compiler can
/// neither shorten nor vectorise. Never inlined, so every caller (the calibration, every
/// worker) runs the same machine code.
#[inline(never)]
pub fn busy(iterations: u64) -> u64 {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..std::hint::black_box(iterations) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x)
}

/// CPU time of the calling thread so far, ns (`CLOCK_THREAD_CPUTIME_ID`). One raw call:
/// allocation-free, so a forked child may make it.
pub fn thread_cpu_ns() -> io::Result<u64> {
    cpu_clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn cpu_clock_ns(id: libc::clockid_t) -> io::Result<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec; an unknown clock id is an error, not UB.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((ts.tv_sec.max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec.max(0) as u64))
}

/// The kernel's CPU clock of another task (`MAKE_PROCESS_CPUCLOCK` / `MAKE_THREAD_CPUCLOCK`
/// with `CPUCLOCK_SCHED`): a process's for a forked worker (any process's may be read), a
/// thread's for a worker thread (only threads of this process may be read).
fn cpu_clock_of(kind: Kind, tid: i32) -> libc::clockid_t {
    const CPUCLOCK_SCHED: libc::clockid_t = 2;
    const CPUCLOCK_PERTHREAD: libc::clockid_t = 4;
    let base = (!tid) << 3 | CPUCLOCK_SCHED;
    match kind {
        Kind::Processes => base,
        Kind::Threads => base | CPUCLOCK_PERTHREAD,
    }
}

/// Scheduling policies a worker can be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sched {
    /// SCHED_OTHER.
    Other,
    /// SCHED_BATCH.
    Batch,
    /// SCHED_IDLE.
    Idle,
    /// SCHED_RR at real-time priority 1.
    Rr,
    /// SCHED_FIFO at real-time priority 1.
    Fifo,
}

impl Sched {
    /// The kernel's number for it (also the `policy` line of `/proc/<pid>/sched`).
    pub fn number(self) -> i32 {
        match self {
            Sched::Other => libc::SCHED_OTHER,
            Sched::Batch => libc::SCHED_BATCH,
            Sched::Idle => libc::SCHED_IDLE,
            Sched::Rr => libc::SCHED_RR,
            Sched::Fifo => libc::SCHED_FIFO,
        }
    }

    /// The kernel's name for it.
    pub fn kernel_name(self) -> &'static str {
        match self {
            Sched::Other => "SCHED_OTHER",
            Sched::Batch => "SCHED_BATCH",
            Sched::Idle => "SCHED_IDLE",
            Sched::Rr => "SCHED_RR",
            Sched::Fifo => "SCHED_FIFO",
        }
    }

    /// Whether it is a real-time policy (priority 1, needs privilege).
    pub fn is_realtime(self) -> bool {
        matches!(self, Sched::Rr | Sched::Fifo)
    }
}

/// Gives task `tid` (a thread id, or a single-threaded process's pid) the policy `p`.
pub fn set_scheduler_of(tid: i32, p: Sched) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: i32::from(p.is_realtime()),
    };
    // SAFETY: param is a valid sched_param for the call's duration; tid is a plain integer.
    if unsafe { libc::sched_setscheduler(tid, p.number(), &param) } == 0 {
        Ok(())
    } else {
        Err(last_error("sched_setscheduler"))
    }
}

/// The scheduling policy number of task `tid` (`sched_getscheduler`).
pub fn scheduler_of(tid: i32) -> io::Result<i32> {
    // SAFETY: a plain integer; no pointers involved.
    let r = unsafe { libc::sched_getscheduler(tid) };
    if r < 0 {
        return Err(last_error("sched_getscheduler"));
    }
    // The kernel may report SCHED_RESET_ON_FORK along with the policy.
    Ok(r & !libc::SCHED_RESET_ON_FORK)
}

/// Sets the nice value of task `tid` (on Linux, `PRIO_PROCESS` with a thread id changes only
/// that thread).
pub fn set_nice_of(tid: i32, nice: i32) -> io::Result<()> {
    // SAFETY: plain integers; PRIO_PROCESS with a tid names that task alone.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) } == 0 {
        Ok(())
    } else {
        Err(last_error("setpriority"))
    }
}

/// The nice value of task `tid`.
pub fn nice_of(tid: i32) -> io::Result<i32> {
    // SAFETY: errno is cleared first because -1 is a valid priority.
    unsafe { *libc::__errno_location() = 0 };
    // SAFETY: plain integers.
    let r = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t) };
    if r == -1 && io::Error::last_os_error().raw_os_error() != Some(0) {
        return Err(last_error("getpriority"));
    }
    Ok(r)
}

/// What one worker recorded about itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerRecord {
    /// Its kernel task id (a process's pid for forked workers).
    pub tid: i32,
    /// Counter reading when it began its first chunk.
    pub start: u64,
    /// Its CPU time when it began, ns.
    pub cpu_start_ns: u64,
    /// Its CPU time after its last chunk, ns.
    pub cpu_end_ns: u64,
    /// Its CPU time when the first worker finished, ns.
    pub cpu_at_first_ns: u64,
    /// Involuntary switches from its start to its last chunk.
    pub involuntary: u64,
    /// Voluntary switches over the same span.
    pub voluntary: u64,
}

/// Everything a round recorded, read after every worker finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceRecord {
    /// Chunks per worker.
    pub chunks: usize,
    /// Per worker, in order.
    pub workers: Vec<WorkerRecord>,
    /// Counter reading after chunk `c` of worker `w` at `w * chunks + c`.
    pub ends: Vec<u64>,
    /// Index of the first worker to finish.
    pub first: usize,
    /// Counter reading when it finished.
    pub first_at: u64,
}

/// What the workers of one round share.
pub struct TraceBoard {
    kind: Kind,
    workers: usize,
    chunks: usize,
    iterations: u64,
    clock: Clock,
    control: SharedWords,
    trace: SharedWords,
}

impl TraceBoard {
    /// Maps the control words and a trace of `workers` × `chunks` slots (both at least 1), for
    /// workers of `kind` that do `iterations` of [`busy`] per chunk and read `clock`.
    pub fn new(
        kind: Kind,
        workers: usize,
        chunks: usize,
        iterations: u64,
        clock: Clock,
    ) -> anyhow::Result<TraceBoard> {
        anyhow::ensure!(
            workers >= 1 && chunks >= 1,
            "a trace needs a worker and a chunk"
        );
        let slots = workers
            .checked_mul(chunks)
            .ok_or_else(|| anyhow::anyhow!("{workers} workers x {chunks} chunks overflows"))?;
        let control = SharedWords::new(W_WORKERS + workers * PER_WORKER)
            .map_err(|e| anyhow::anyhow!("mapping the control words: {e}"))?;
        let trace = SharedWords::new(slots)
            .map_err(|e| anyhow::anyhow!("mapping the trace ({slots} slots): {e}"))?;
        Ok(TraceBoard {
            kind,
            workers,
            chunks,
            iterations,
            clock,
            control,
            trace,
        })
    }

    /// A 64-bit control word; `None` beyond the layout (never for the fixed indices).
    #[inline]
    fn word(&self, i: usize) -> Option<&AtomicU64> {
        self.control.try_get(i)
    }

    /// One of the three futex words. The layout always holds them: [`TraceBoard::new`] maps
    /// at least `W_WORKERS` words.
    #[inline]
    fn futex(&self, i: usize) -> &AtomicU32 {
        self.control.get32(i)
    }

    fn load(&self, i: usize) -> u64 {
        self.word(i).map_or(0, |w| w.load(Ordering::Acquire))
    }

    fn store(&self, i: usize, v: u64) -> Result<(), Failure> {
        self.word(i)
            .ok_or(Failure::Setup)?
            .store(v, Ordering::Release);
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.futex(W_STOP).load(Ordering::Acquire) != 0
    }

    /// Workers waiting at the start barrier.
    pub fn ready(&self) -> usize {
        self.load(W_READY) as usize
    }

    /// Workers that finished their chunks.
    pub fn done(&self) -> usize {
        self.futex(W_DONE).load(Ordering::Acquire) as usize
    }

    /// Worker `i`'s task id once it is ready (0 before).
    pub fn tid(&self, i: usize) -> i32 {
        self.load(W_WORKERS + i * PER_WORKER + O_TID) as i32
    }

    /// Releases every worker at once (one `FUTEX_WAKE` for all); returns the counter's reading
    /// just before, the round's common start.
    pub fn go(&self) -> u64 {
        let t = self.clock.now();
        let w = self.futex(W_GO);
        w.store(1, Ordering::Release);
        let _ = futex_wake(w, i32::MAX);
        t
    }

    /// Waits until every worker finished or the team was halted, at most `timeout`; returns
    /// whether every worker finished.
    pub fn wait_done(&self, timeout: Duration) -> bool {
        let w = self.futex(W_DONE);
        let seen = w.load(Ordering::Acquire);
        if seen as usize >= self.workers {
            return true;
        }
        if self.stopped() {
            return false;
        }
        futex_wait_for(w, seen, Some(timeout));
        self.done() >= self.workers
    }

    /// Makes every worker return: sets the stop word and wakes whoever waits at the barrier,
    /// after its chunks, or (the parent) for the end.
    pub fn halt(&self) {
        for i in [W_STOP, W_GO, W_DONE] {
            let w = self.futex(i);
            if i == W_STOP {
                w.store(1, Ordering::Release);
            }
            let _ = futex_wake(w, i32::MAX);
        }
    }

    /// What the round recorded (call it after every worker finished).
    pub fn record(&self) -> TraceRecord {
        let workers = (0..self.workers)
            .map(|i| {
                let b = W_WORKERS + i * PER_WORKER;
                WorkerRecord {
                    tid: self.load(b + O_TID) as i32,
                    start: self.load(b + O_START),
                    cpu_start_ns: self.load(b + O_CPU_START),
                    cpu_end_ns: self.load(b + O_CPU_END),
                    cpu_at_first_ns: self.load(b + O_CPU_AT_FIRST),
                    involuntary: self.load(b + O_INVOLUNTARY),
                    voluntary: self.load(b + O_VOLUNTARY),
                }
            })
            .collect();
        let ends = (0..self.workers * self.chunks)
            .map(|k| {
                self.trace
                    .try_get(k)
                    .map_or(0, |w| w.load(Ordering::Acquire))
            })
            .collect();
        TraceRecord {
            chunks: self.chunks,
            workers,
            ends,
            first: (self.load(W_FIRST) as usize).saturating_sub(1),
            first_at: self.load(W_FIRST_AT),
        }
    }

    /// The first worker to finish reads every worker's CPU clock, its own included: the others
    /// are not running on its CPU meanwhile, so the readings are one instant's.
    fn snapshot(&self) -> Result<(), Failure> {
        for j in 0..self.workers {
            let b = W_WORKERS + j * PER_WORKER;
            let tid = self.load(b + O_TID) as i32;
            let ns = cpu_clock_ns(cpu_clock_of(self.kind, tid)).map_err(|e| Failure::setup(&e))?;
            self.store(b + O_CPU_AT_FIRST, ns)?;
        }
        self.store(W_FIRST_AT, self.clock.now())
    }
}

// SAFETY: a worker makes only the busy loop, counter reads, futex calls, getrusage, gettid and
// clock_gettime, and atomics on the two mappings made before the fork. Every word and slot is
// looked up with a checked accessor (no panic; the three futex words are inside the layout by
// construction), failures are Failure codes (no allocation), and the halt (stop word + a wake
// of every futex word) makes every wait return.
unsafe impl TaskBody for TraceBoard {
    /// Worker `i`: ready, wait for the start, do the chunks, note the time after each, and
    /// wait to be told to leave.
    fn run(&self, i: usize) -> Result<(), Failure> {
        if i >= self.workers {
            return Err(Failure::Setup);
        }
        let b = W_WORKERS + i * PER_WORKER;
        self.store(b + O_TID, crate::gettid() as u64)?;
        self.word(W_READY)
            .ok_or(Failure::Setup)?
            .fetch_add(1, Ordering::AcqRel);
        let go = self.futex(W_GO);
        while go.load(Ordering::Acquire) == 0 {
            if self.stopped() {
                return Ok(());
            }
            futex_wait(go, 0).map_err(|_| Failure::Wait)?;
        }
        let switches = crate::thread_switches();
        let cpu = thread_cpu_ns().map_err(|e| Failure::setup(&e))?;
        self.store(b + O_CPU_START, cpu)?;
        self.store(b + O_START, self.clock.now())?;
        let row = i * self.chunks;
        for c in 0..self.chunks {
            busy(self.iterations);
            let t = self.clock.now();
            self.trace
                .try_get(row + c)
                .ok_or(Failure::Setup)?
                .store(t, Ordering::Relaxed);
            if self.stopped() {
                return Ok(());
            }
        }
        let first = self.word(W_FIRST).ok_or(Failure::Setup)?;
        if first
            .compare_exchange(0, i as u64 + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.snapshot()?;
        }
        let cpu = thread_cpu_ns().map_err(|e| Failure::setup(&e))?;
        let d = crate::thread_switches().since(switches);
        self.store(b + O_CPU_END, cpu)?;
        self.store(b + O_INVOLUNTARY, d.involuntary)?;
        self.store(b + O_VOLUNTARY, d.voluntary)?;
        let done = self.futex(W_DONE);
        if done.fetch_add(1, Ordering::AcqRel) as usize + 1 == self.workers {
            let _ = futex_wake(done, i32::MAX);
        }
        let stop = self.futex(W_STOP);
        while stop.load(Ordering::Acquire) == 0 {
            futex_wait(stop, 0).map_err(|_| Failure::Wait)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{CpuMask, Team};
    use std::sync::Arc;
    use std::time::Instant;

    fn round(kind: Kind, workers: usize, chunks: usize) -> TraceRecord {
        let clock = Clock::monotonic("test".into());
        let board = Arc::new(TraceBoard::new(kind, workers, chunks, 2000, clock).expect("board"));
        let b2 = Arc::clone(&board);
        let mut team = Team::new(kind, workers, 0, move || b2.halt());
        let cpu = crate::affinity().unwrap()[0];
        let mask = CpuMask::new(&[cpu]).unwrap();
        for i in 0..workers {
            team.spawn(Some(&mask), &board, i).unwrap();
        }
        team.watch().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while board.ready() < workers {
            team.check().unwrap();
            assert!(Instant::now() < deadline, "workers never got ready");
            std::thread::sleep(Duration::from_millis(1));
        }
        for i in 0..workers {
            assert!(board.tid(i) > 0);
        }
        let go = board.go();
        while !board.wait_done(Duration::from_millis(100)) {
            team.check().unwrap();
            assert!(Instant::now() < deadline, "workers never finished");
        }
        let rec = board.record();
        let pids = team.pids();
        team.finish().unwrap();
        // Every forked worker was reaped: none is a child of this process any more.
        // SAFETY: getpid has no arguments.
        let me = unsafe { libc::getpid() };
        for pid in pids {
            let ppid = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = s[s.rfind(')')? + 2..].to_owned();
                    rest.split_whitespace().nth(1)?.parse::<i32>().ok()
                });
            assert_ne!(ppid, Some(me), "worker {pid} was not reaped");
        }
        assert!(rec.workers.iter().all(|w| w.start >= go));
        rec
    }

    #[test]
    fn every_worker_records_every_chunk_in_order() {
        for kind in [Kind::Threads, Kind::Processes] {
            let rec = round(kind, 3, 20);
            assert_eq!(rec.ends.len(), 60);
            for (w, r) in rec.workers.iter().enumerate() {
                let row = &rec.ends[w * 20..(w + 1) * 20];
                assert!(row[0] >= r.start, "{kind:?}");
                assert!(row.windows(2).all(|p| p[0] <= p[1]), "{kind:?}: {row:?}");
                assert!(r.cpu_end_ns > r.cpu_start_ns, "{kind:?}: {r:?}");
                // Taken before this worker ended (it may not have started yet: on one CPU the
                // first worker can finish tiny chunks before another ever runs).
                assert!(r.cpu_at_first_ns <= r.cpu_end_ns, "{kind:?}: {r:?}");
            }
            assert!(rec.first < 3);
            let first_end = rec.ends[rec.first * 20 + 19];
            assert!(rec.first_at >= first_end);
        }
    }

    #[test]
    fn a_halt_releases_workers_at_the_barrier() {
        let clock = Clock::monotonic("test".into());
        let board = Arc::new(TraceBoard::new(Kind::Processes, 2, 5, 10, clock).unwrap());
        let b2 = Arc::clone(&board);
        let mut team = Team::new(Kind::Processes, 2, 0, move || b2.halt());
        for i in 0..2 {
            team.spawn(None, &board, i).unwrap();
        }
        team.watch().unwrap();
        // Nobody said go: the halt alone must release both from the barrier.
        team.finish().unwrap();
        assert!(!board.wait_done(Duration::from_millis(1)));
    }

    #[test]
    fn nice_and_policy_of_another_thread() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            tx.send(crate::gettid()).unwrap();
            done_rx.recv().unwrap();
            crate::nice().unwrap()
        });
        let tid = rx.recv().unwrap();
        let before = nice_of(tid).unwrap();
        let raised = (before + 3).min(19);
        set_nice_of(tid, raised).unwrap();
        assert_eq!(nice_of(tid).unwrap(), raised);
        set_scheduler_of(tid, Sched::Batch).unwrap();
        done_tx.send(()).unwrap();
        assert_eq!(h.join().unwrap(), raised);
        assert_eq!(Sched::Idle.number(), 5);
    }

    #[test]
    fn busy_work_is_proportional_to_its_iterations() {
        assert_ne!(busy(0), busy(1));
        let t = |n| {
            let c0 = thread_cpu_ns().unwrap();
            busy(n);
            thread_cpu_ns().unwrap() - c0
        };
        // Warm up, then only check that more work is not free.
        t(1000);
        assert!(t(2_000_000) > 0);
    }
}
