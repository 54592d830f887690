//! Edward G. Bradford's lock ring (`csfast5`) and pipe token (`cspipe2a`), from "Runtime:
//! Context switching", IBM developerWorks, 2002, as threads of this process.
//!
//! **Lock ring.** N threads and N + K default pthread mutexes; the K extra mutexes (the
//! tokens) start free. Thread t starts holding mutex t, and every step it locks the next mutex
//! around the ring, then unlocks the one it held. With one token on one CPU the only thread
//! that can move is the one whose next mutex is free, so every mutex taken is one hand-over of
//! the CPU. Task 0 is the caller (the measuring thread). The ring moves only while the caller
//! takes its own steps: once it stops, every free mutex piles up just ahead of it and the other
//! threads block. So the caller's steps can be timed in batches, each worth N hand-overs.
//!
//! **Pipe token.** Two threads pass a 4-byte token (a counter) through two pipes: the caller
//! writes pipe A and reads pipe B, the partner reads A and writes B back, one more each time.
//!
//! Threads only: a default pthread mutex, what the study timed, is private to one process.
//!
//! A pthread mutex may be unlocked only by the thread that holds it, and a thread blocked in
//! `pthread_mutex_lock` cannot be woken by anything else. So only the caller can stop a
//! running ring: it sets the stop word and unlocks the mutex it holds. The thread behind it
//! takes that mutex, sees the stop, unlocks both of its own and returns, and so on backwards
//! around the ring. Every way out of a [`LockRing`] (its end, an error, a drop) does this on
//! the caller's thread, which is why a [`LockRing`] cannot be sent to another thread.

use crate::ipc::{self, PthreadMutex, SharedWords};
use crate::task::{CpuMask, Failure, Kind, TaskBody, Team};
use crate::Switches;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Shared-word layout (64-bit words): control words, then one tid per task, then the log.
const W_STOP: usize = 0;
const W_READY: usize = 1;
const W_VOLUNTARY: usize = 2;
const W_INVOLUNTARY: usize = 3;
const W_TAKEN: usize = 4;
const W_LOG_NEXT: usize = 5;
const W_TIDS: usize = 8;
/// The 32-bit word the workers wait on until the caller's measured span begins (a futex).
const W32_GO: usize = 0;

/// How long the workers may take to start and register.
const READY_DEADLINE: Duration = Duration::from_secs(30);

/// A lock ring to build: `tasks` threads (the caller is task 0), `tokens` free mutexes.
#[derive(Debug, Clone)]
pub struct LockRingSpec {
    /// Threads in the ring, the caller included (2 or more).
    pub tasks: usize,
    /// Extra mutexes, free at the start (1 or more, fewer than `tasks`).
    pub tokens: usize,
    /// Where the worker threads are pinned (the caller pins itself).
    pub mask: Option<CpuMask>,
    /// Keep a log of the first mutexes taken, for [`LockCounts::log`].
    pub verify: bool,
}

/// What a lock ring counted over the caller's measured span.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockCounts {
    /// Steps (mutexes taken) of the caller.
    pub turns: u64,
    /// Mutexes taken by every thread, the caller's included.
    pub taken: u64,
    /// Context switches of every thread, summed (`getrusage(RUSAGE_THREAD)`).
    pub switches: Switches,
    /// The first mutexes taken, in order, as (task, mutex); empty unless verifying.
    pub log: Vec<(usize, usize)>,
}

/// What the threads of a lock ring share.
struct LockShared {
    tasks: usize,
    locks: Vec<PthreadMutex>,
    words: SharedWords,
    log_len: usize,
}

impl LockShared {
    #[inline]
    fn word(&self, i: usize) -> Option<&AtomicU64> {
        self.words.try_get(i)
    }

    fn load(&self, i: usize) -> u64 {
        self.word(i).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// Whether the ring is stopping; a missing word reads as "stop".
    #[inline]
    fn stopped(&self) -> bool {
        self.word(W_STOP)
            .is_none_or(|w| w.load(Ordering::Acquire) != 0)
    }

    /// The mutex after `k` around the ring (Bradford's `k1 = k + 1; if (k1 >= ncrits) k1 = 0`).
    #[inline]
    fn next(&self, k: usize) -> usize {
        let k1 = k + 1;
        if k1 >= self.locks.len() {
            0
        } else {
            k1
        }
    }

    /// Sets the stop word and opens the start gate, so a worker still waiting there returns.
    /// Workers blocked on a mutex are freed only by the caller releasing its own (see the
    /// module documentation).
    fn halt(&self) {
        if let Some(w) = self.word(W_STOP) {
            w.store(1, Ordering::Release);
        }
        let go = self.words.get32(W32_GO);
        go.store(1, Ordering::Release);
        let _ = ipc::futex_wake(go, i32::MAX);
    }

    /// Appends (task, mutex) to the log while there is room. Called between taking a mutex
    /// and releasing the previous one, so the log's order is an order the ring really went
    /// through: whoever takes the released mutex logs after this.
    #[inline]
    fn log(&self, task: usize, lock: usize) {
        if self.log_len == 0 {
            return;
        }
        let Some(next) = self.word(W_LOG_NEXT) else {
            return;
        };
        let at = next.fetch_add(1, Ordering::AcqRel) as usize;
        if at < self.log_len {
            if let Some(w) = self.word(W_TIDS + self.tasks + at) {
                w.store(((task as u64) << 32) | lock as u64, Ordering::Release);
            }
        }
    }

    fn logged(&self) -> Vec<(usize, usize)> {
        let n = (self.load(W_LOG_NEXT) as usize).min(self.log_len);
        (0..n)
            .map(|i| {
                let v = self.load(W_TIDS + self.tasks + i);
                ((v >> 32) as usize, (v & 0xffff_ffff) as usize)
            })
            .collect()
    }

    fn add(&self, i: usize, v: u64) {
        if let Some(w) = self.word(i) {
            w.fetch_add(v, Ordering::AcqRel);
        }
    }

    /// Worker `i`'s steps until the stop: returns the mutex it holds at the end (still locked)
    /// and how many it took.
    fn steps(&self, i: usize) -> (usize, u64, Result<(), Failure>) {
        let mut held = i;
        let mut taken = 0u64;
        loop {
            let next = self.next(held);
            let Some(m) = self.locks.get(next) else {
                return (held, taken, Err(Failure::Setup));
            };
            if m.lock().is_err() {
                return (held, taken, Err(Failure::Wait));
            }
            if self.stopped() {
                // SAFETY: this thread locked `next` just above.
                let _ = unsafe { m.unlock() };
                return (held, taken, Ok(()));
            }
            self.log(i, next);
            let Some(old) = self.locks.get(held) else {
                return (next, taken, Err(Failure::Setup));
            };
            // SAFETY: this thread holds `held`: it locked it before its first step, or in its
            // previous step, and has not unlocked it since.
            let unlocked = unsafe { old.unlock() };
            held = next;
            if unlocked.is_err() {
                return (held, taken, Err(Failure::Post));
            }
            taken += 1;
        }
    }
}

// SAFETY: the body makes only pthread_mutex_lock/unlock, futex, getrusage and gettid calls and
// atomics on memory made before the team started; every index is checked (no panic) and
// failures are Failure codes. A LockRing's team is always of threads (never forked), so the
// mutexes it takes are shared with the caller, not copies. It returns once the stop word is set
// and the caller has released its mutex (see the module documentation).
unsafe impl TaskBody for LockShared {
    fn run(&self, i: usize) -> Result<(), Failure> {
        self.word(W_TIDS + i)
            .ok_or(Failure::Setup)?
            .store(crate::gettid() as u64, Ordering::Release);
        let own = self.locks.get(i).ok_or(Failure::Setup)?;
        own.lock().map_err(|e| Failure::setup(&e))?;
        self.add(W_READY, 1);
        // Wait for the caller's measured span, holding mutex i.
        let go = self.words.get32(W32_GO);
        while go.load(Ordering::Acquire) == 0 {
            if ipc::futex_wait(go, 0).is_err() {
                // SAFETY: this thread locked `own` above.
                let _ = unsafe { own.unlock() };
                return Err(Failure::Wait);
            }
        }
        let start = crate::thread_switches();
        let (held, taken, result) = if self.stopped() {
            (i, 0, Ok(()))
        } else {
            self.steps(i)
        };
        if let Some(m) = self.locks.get(held) {
            // SAFETY: `steps` returns the mutex this thread still holds (or `i`, locked above).
            let _ = unsafe { m.unlock() };
        }
        let d = crate::thread_switches().since(start);
        self.add(W_VOLUNTARY, d.voluntary);
        self.add(W_INVOLUNTARY, d.involuntary);
        self.add(W_TAKEN, taken);
        result
    }
}

/// A running lock ring, driven by its task 0 (the thread that started it). Dropping it stops
/// and joins every worker.
pub struct LockRing {
    /// `None` once finished. Dropped after [`Drop::drop`] released the caller's mutex.
    team: Option<Team>,
    shared: Arc<LockShared>,
    /// The mutex the caller holds while `holding`.
    held: usize,
    holding: bool,
    turns: u64,
    start: Switches,
    tids: Vec<i32>,
    /// The caller holds a mutex that only it may release: the ring stays on its thread.
    _not_send: PhantomData<*const ()>,
}

impl LockRing {
    /// Builds the mutexes, takes mutex 0, starts workers 1..N (each takes its own mutex and
    /// waits for [`LockRing::begin`]) and waits until all are ready. `between` is called while
    /// spawning and waiting (to notice a cancel); its error stops and joins what was started.
    pub fn start(
        spec: &LockRingSpec,
        mut between: impl FnMut() -> anyhow::Result<()>,
    ) -> anyhow::Result<LockRing> {
        let n = spec.tasks;
        anyhow::ensure!(n >= 2, "a lock ring needs at least 2 threads");
        anyhow::ensure!(
            spec.tokens >= 1 && spec.tokens < n,
            "a lock ring needs 1 <= tokens < threads"
        );
        let ncrits = n + spec.tokens;
        let log_len = if spec.verify {
            (ncrits * 4).clamp(256, 1 << 16)
        } else {
            0
        };
        let words = SharedWords::new(W_TIDS + n + log_len)
            .map_err(|e| anyhow::anyhow!("mapping the shared words: {e}"))?;
        let shared = Arc::new(LockShared {
            tasks: n,
            locks: (0..ncrits).map(|_| PthreadMutex::new()).collect(),
            words,
            log_len,
        });
        shared.locks[0]
            .lock()
            .map_err(|e| anyhow::anyhow!("locking mutex 0: {e}"))?;
        let halt = Arc::clone(&shared);
        let mut ring = LockRing {
            team: Some(Team::new(Kind::Threads, n, 1, move || halt.halt())),
            shared,
            held: 0,
            holding: true,
            turns: 0,
            start: Switches::default(),
            tids: Vec::new(),
            _not_send: PhantomData,
        };
        let team = ring.team.as_mut().expect("just made");
        for i in 1..n {
            if i % 64 == 0 {
                between()?;
            }
            team.spawn(spec.mask.as_ref(), &ring.shared, i)?;
        }
        let deadline = Instant::now() + READY_DEADLINE + Duration::from_millis(n as u64);
        let want = (n - 1) as u64;
        while ring.shared.load(W_READY) < want {
            team.check()?;
            between()?;
            if Instant::now() > deadline {
                anyhow::bail!(
                    "only {} of {want} worker threads started within the deadline",
                    ring.shared.load(W_READY)
                );
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        ring.tids = (0..n)
            .map(|i| match i {
                0 => crate::gettid(),
                _ => ring.shared.load(W_TIDS + i) as i32,
            })
            .collect();
        Ok(ring)
    }

    /// Kernel task ids of the ring's threads, task 0 (the caller) first.
    pub fn tids(&self) -> &[i32] {
        &self.tids
    }

    /// Starts the measured span: reads the caller's switch count and lets the workers go.
    /// Thread N−1 finds the first free mutex at once, so the free mutexes travel backwards
    /// to just ahead of the caller before its first step completes.
    pub fn begin(&mut self) {
        self.start = crate::thread_switches();
        let go = self.shared.words.get32(W32_GO);
        go.store(1, Ordering::Release);
        let _ = ipc::futex_wake(go, i32::MAX);
    }

    /// One step of the caller: lock the next mutex, unlock the one held. Blocks until the
    /// thread ahead has moved on; with one token, N hand-overs pass between two steps.
    #[inline]
    pub fn turn(&mut self) -> anyhow::Result<()> {
        if !self.holding {
            anyhow::bail!("the lock ring was stopped");
        }
        let held = self.held;
        let next = self.shared.next(held);
        let (Some(old), Some(m)) = (self.shared.locks.get(held), self.shared.locks.get(next))
        else {
            anyhow::bail!("the lock ring has no mutex {next}");
        };
        m.lock()?;
        self.shared.log(0, next);
        // SAFETY: the caller holds `held`: it locked mutex 0 in `start` and every later one in
        // an earlier turn, and `holding` says it has not released it.
        let unlocked = unsafe { old.unlock() };
        self.held = next;
        unlocked?;
        self.turns += 1;
        match &self.team {
            Some(t) => t.check(),
            None => Ok(()),
        }
    }

    /// Ends the measured span, stops every worker (the caller's release starts the chain) and
    /// returns what was counted.
    pub fn end(mut self) -> anyhow::Result<LockCounts> {
        let own = crate::thread_switches().since(self.start);
        self.release();
        let team = self.team.take().expect("a ring is finished once");
        team.finish()?;
        let s = &self.shared;
        Ok(LockCounts {
            turns: self.turns,
            taken: s.load(W_TAKEN) + self.turns,
            switches: Switches {
                voluntary: own.voluntary + s.load(W_VOLUNTARY),
                involuntary: own.involuntary + s.load(W_INVOLUNTARY),
            },
            log: s.logged(),
        })
    }

    /// Sets the stop word and unlocks the caller's mutex, which frees the ring thread by
    /// thread; opens the start gate for workers that never passed it.
    fn release(&mut self) {
        self.shared.halt();
        if self.holding {
            self.holding = false;
            if let Some(m) = self.shared.locks.get(self.held) {
                // SAFETY: `holding` says the caller (this thread: the type is not Send) holds
                // it.
                let _ = unsafe { m.unlock() };
            }
        }
    }
}

impl Drop for LockRing {
    fn drop(&mut self) {
        // Before the team joins its threads: they can only return once this releases.
        self.release();
    }
}

/// What the pipe token counted over the caller's measured span.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PipeCounts {
    /// Round trips of the token (each two passes).
    pub round_trips: u64,
    /// Context switches of both threads, summed.
    pub switches: Switches,
    /// The token's value came back one higher after every round trip.
    pub token_counted: bool,
}

/// What the two threads of the pipe token share.
struct PipeShared {
    a_rd: OwnedFd,
    a_wr: OwnedFd,
    b_rd: OwnedFd,
    b_wr: OwnedFd,
    words: SharedWords,
}

/// Bytes of the token: a C `int` counter, as in the study.
const TOKEN_BYTES: usize = 4;

impl PipeShared {
    fn stopped(&self) -> bool {
        self.words
            .try_get(W_STOP)
            .is_none_or(|w| w.load(Ordering::Acquire) != 0)
    }

    /// Sets the stop word and writes a token down both pipes, so whichever thread is blocked
    /// in a read wakes and sees it.
    fn halt(&self) {
        if let Some(w) = self.words.try_get(W_STOP) {
            w.store(1, Ordering::Release);
        }
        let t = [0u8; TOKEN_BYTES];
        let _ = ipc::write_one(self.a_wr.as_raw_fd(), &t, "write(pipe A)");
        let _ = ipc::write_one(self.b_wr.as_raw_fd(), &t, "write(pipe B)");
    }
}

// SAFETY: the partner makes only read/write on pipes opened before the team started, getrusage,
// gettid and atomics on the shared words; lookups are checked and failures are Failure codes.
// The halt (stop word + a token down each pipe) makes its loop return.
unsafe impl TaskBody for PipeShared {
    fn run(&self, i: usize) -> Result<(), Failure> {
        let tid = self.words.try_get(W_TIDS + i).ok_or(Failure::Setup)?;
        tid.store(crate::gettid() as u64, Ordering::Release);
        self.words
            .try_get(W_READY)
            .ok_or(Failure::Setup)?
            .fetch_add(1, Ordering::AcqRel);
        let (a, b) = (self.a_rd.as_raw_fd(), self.b_wr.as_raw_fd());
        let mut buf = [0u8; TOKEN_BYTES];
        // Counted from the first token on, which the caller sends inside its measured span.
        ipc::read_one(a, &mut buf, "read(pipe A)").map_err(|_| Failure::Wait)?;
        let start = crate::thread_switches();
        while !self.stopped() {
            let v = u32::from_ne_bytes(buf).wrapping_add(1);
            ipc::write_one(b, &v.to_ne_bytes(), "write(pipe B)").map_err(|_| Failure::Post)?;
            ipc::read_one(a, &mut buf, "read(pipe A)").map_err(|_| Failure::Wait)?;
        }
        let d = crate::thread_switches().since(start);
        for (w, v) in [(W_VOLUNTARY, d.voluntary), (W_INVOLUNTARY, d.involuntary)] {
            if let Some(w) = self.words.try_get(w) {
                w.fetch_add(v, Ordering::AcqRel);
            }
        }
        Ok(())
    }
}

/// `pipe2(O_CLOEXEC)`: (read end, write end).
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a writable array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(crate::last_error("pipe2"));
    }
    Ok((
        ipc::check_fd(fds[0], "pipe2")?,
        ipc::check_fd(fds[1], "pipe2")?,
    ))
}

/// Two threads passing a 4-byte token through two pipes, driven by the caller. Dropping it
/// stops and joins the partner.
pub struct PipeToken {
    team: Option<Team>,
    shared: Arc<PipeShared>,
    token: u32,
    round_trips: u64,
    start: Switches,
    tids: Vec<i32>,
}

impl PipeToken {
    /// Opens both pipes and starts the partner thread (pinned to `mask` if given), and waits
    /// until it is ready.
    pub fn start(mask: Option<&CpuMask>) -> anyhow::Result<PipeToken> {
        let (a_rd, a_wr) = pipe().map_err(|e| anyhow::anyhow!("opening pipe A: {e}"))?;
        let (b_rd, b_wr) = pipe().map_err(|e| anyhow::anyhow!("opening pipe B: {e}"))?;
        let words = SharedWords::new(W_TIDS + 2)
            .map_err(|e| anyhow::anyhow!("mapping the shared words: {e}"))?;
        let shared = Arc::new(PipeShared {
            a_rd,
            a_wr,
            b_rd,
            b_wr,
            words,
        });
        let halt = Arc::clone(&shared);
        let mut team = Team::new(Kind::Threads, 2, 1, move || halt.halt());
        team.spawn(mask, &shared, 1)?;
        let deadline = Instant::now() + READY_DEADLINE;
        while shared.words.get(W_READY).load(Ordering::Acquire) < 1 {
            team.check()?;
            anyhow::ensure!(
                Instant::now() < deadline,
                "the partner thread did not start within the deadline"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
        let tids = vec![
            crate::gettid(),
            shared.words.get(W_TIDS + 1).load(Ordering::Acquire) as i32,
        ];
        Ok(PipeToken {
            team: Some(team),
            shared,
            token: 0,
            round_trips: 0,
            start: Switches::default(),
            tids,
        })
    }

    /// Kernel task ids: the caller, then the partner.
    pub fn tids(&self) -> &[i32] {
        &self.tids
    }

    /// Starts the measured span (the caller's switch count).
    pub fn begin(&mut self) {
        self.start = crate::thread_switches();
    }

    /// One round trip: Put(pipe A), Get(pipe B). Two passes of the token.
    #[inline]
    pub fn turn(&mut self) -> anyhow::Result<()> {
        let s = &self.shared;
        ipc::write_one(
            s.a_wr.as_raw_fd(),
            &self.token.to_ne_bytes(),
            "write(pipe A)",
        )?;
        let mut buf = [0u8; TOKEN_BYTES];
        ipc::read_one(s.b_rd.as_raw_fd(), &mut buf, "read(pipe B)")?;
        self.token = u32::from_ne_bytes(buf);
        self.round_trips += 1;
        match &self.team {
            Some(t) => t.check(),
            None => Ok(()),
        }
    }

    /// Ends the measured span, stops and joins the partner, and returns what was counted.
    pub fn end(mut self) -> anyhow::Result<PipeCounts> {
        let own = crate::thread_switches().since(self.start);
        let team = self.team.take().expect("a token is finished once");
        team.finish()?;
        let w = |i| self.shared.words.get(i).load(Ordering::Acquire);
        Ok(PipeCounts {
            round_trips: self.round_trips,
            switches: Switches {
                voluntary: own.voluntary + w(W_VOLUNTARY),
                involuntary: own.involuntary + w(W_INVOLUNTARY),
            },
            token_counted: u64::from(self.token) == self.round_trips & 0xffff_ffff,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu_mask() -> CpuMask {
        CpuMask::new(&[crate::affinity().unwrap()[0]]).unwrap()
    }

    /// Runs a ring on a thread of its own (the test harness's threads are not pinned).
    fn ring(n: usize, k: usize, turns: u64, verify: bool) -> LockCounts {
        let mask = cpu_mask();
        std::thread::spawn(move || {
            mask.apply().unwrap();
            let spec = LockRingSpec {
                tasks: n,
                tokens: k,
                mask: Some(mask),
                verify,
            };
            let mut r = LockRing::start(&spec, || Ok(())).unwrap();
            assert_eq!(r.tids().len(), n);
            r.begin();
            for _ in 0..turns {
                r.turn().unwrap();
            }
            r.end().unwrap()
        })
        .join()
        .unwrap()
    }

    #[test]
    fn every_thread_moves_with_the_caller() {
        for (n, k) in [(2, 1), (5, 1), (6, 2)] {
            let c = ring(n, k, 200, true);
            assert_eq!(c.turns, 200);
            // N mutexes per caller step, give or take the free mutexes' travel at both ends.
            let slack = (n * (k + 1)) as u64;
            let want = 200 * n as u64;
            assert!(
                c.taken + slack >= want && c.taken <= want + slack,
                "n={n} k={k}: {} taken",
                c.taken
            );
            assert!(c.switches.total() > 0);
            // Each logged step takes the mutex after the one its thread held.
            let mut held: Vec<usize> = (0..n).collect();
            for &(t, l) in &c.log {
                assert_eq!(l, (held[t] + 1) % (n + k), "n={n} k={k}: {:?}", c.log);
                held[t] = l;
            }
            assert!(c.log.len() >= 256.min(c.taken as usize));
        }
    }

    #[test]
    fn dropping_a_running_ring_joins_every_thread() {
        let mask = cpu_mask();
        std::thread::spawn(move || {
            let spec = LockRingSpec {
                tasks: 8,
                tokens: 1,
                mask: Some(mask),
                verify: false,
            };
            let mut r = LockRing::start(&spec, || Ok(())).unwrap();
            r.begin();
            for _ in 0..10 {
                r.turn().unwrap();
            }
            drop(r); // would hang if a worker were left blocked
                     // Dropped before begin: the workers leave from the start gate.
            drop(LockRing::start(&spec, || Ok(())).unwrap());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_failing_callback_stops_the_start() {
        let spec = LockRingSpec {
            tasks: 70,
            tokens: 1,
            mask: None,
            verify: false,
        };
        let e = std::thread::spawn(move || {
            LockRing::start(&spec, || Err(anyhow::anyhow!("cancelled")))
                .err()
                .unwrap()
                .to_string()
        })
        .join()
        .unwrap();
        assert_eq!(e, "cancelled");
    }

    #[test]
    fn the_pipe_token_counts_round_trips() {
        let mask = cpu_mask();
        let c = std::thread::spawn(move || {
            mask.apply().unwrap();
            let mut p = PipeToken::start(Some(&mask)).unwrap();
            p.begin();
            for _ in 0..500 {
                p.turn().unwrap();
            }
            p.end().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(c.round_trips, 500);
        assert!(c.token_counted);
        // Two switches per round trip on one CPU, give or take a preemption.
        assert!(c.switches.total() >= 900, "{:?}", c.switches);
    }
}
