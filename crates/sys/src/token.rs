//! The token ring's shared state and its worker tasks: N tasks, `links[i]` wakes task i, task 0
//! is the measuring thread. A ping-pong is the two-task ring.
//!
//! Everything a worker touches is built before any task is spawned: the links, one mapping of
//! shared words (control words, one tid per task, the visit log), and each task maps its own
//! working set. A worker's path is link calls, atomics and getrusage, with every index checked
//! and failures returned as codes, so the same body runs in a thread or in a forked child.

use crate::ipc::{self, Link, SharedWords, Via};
use crate::task::{self, Failure, TaskBody, WorkingSet};
use crate::Switches;
use std::sync::atomic::{AtomicU64, Ordering};

/// Shared-word layout: control words first, then one tid per task, then the visit log.
const W_STOP: usize = 0;
const W_VOLUNTARY: usize = 1;
const W_INVOLUNTARY: usize = 2;
const W_READY: usize = 3;
const W_GO: usize = 4;
const W_LOG_NEXT: usize = 5;
const W_HOLD: usize = 6;
const W_TIDS: usize = 8;

/// What the tasks of one ring share.
pub struct TokenRing {
    via: Via,
    tasks: usize,
    size_kib: usize,
    log_len: usize,
    words: SharedWords,
    links: Vec<Link>,
}

impl TokenRing {
    /// Builds the links and shared words of a ring of `tasks` tasks (2 or more); `verify`
    /// keeps a visit log. Running out of descriptors or memory names the limit.
    pub fn new(via: Via, tasks: usize, size_kib: usize, verify: bool) -> anyhow::Result<TokenRing> {
        anyhow::ensure!(tasks >= 2, "a ring needs at least 2 tasks");
        let links = if via.is_link() {
            (0..tasks)
                .map(|i| {
                    Link::new(via).map_err(|e| {
                        task::resource_error(e, &format!("a {via} link"), i + 1, tasks)
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?
        } else {
            Vec::new()
        };
        let log_len = if verify {
            (tasks * 4).clamp(256, 1 << 16)
        } else {
            0
        };
        let words = SharedWords::new(W_TIDS + tasks + log_len)
            .map_err(|e| anyhow::anyhow!("mapping the shared words: {e}"))?;
        Ok(TokenRing {
            via,
            tasks,
            size_kib,
            log_len,
            words,
            links,
        })
    }

    /// The primitive that carries the tokens.
    pub fn via(&self) -> Via {
        self.via
    }

    /// Tasks in the ring, task 0 included.
    pub fn tasks(&self) -> usize {
        self.tasks
    }

    /// The link that wakes task `i` (none for [`Via::Yield`]).
    #[inline]
    pub fn link(&self, i: usize) -> Option<&Link> {
        self.links.get(i)
    }

    /// A word of the layout; a missing one reads as "stop" in [`TokenRing::stopped`].
    #[inline]
    fn word(&self, i: usize) -> Option<&AtomicU64> {
        self.words.try_get(i)
    }

    fn load(&self, i: usize) -> u64 {
        self.word(i).map_or(0, |w| w.load(Ordering::Acquire))
    }

    fn stopped(&self) -> bool {
        match self.word(W_STOP) {
            Some(w) => w.load(Ordering::Acquire) != 0,
            None => true,
        }
    }

    /// Set when task 0's measured span is over: tokens stop moving, so no task counts a hop
    /// task 0 did not (with K > 1 the other tokens would otherwise keep circulating while the
    /// end-of-ring figures are read from /proc).
    fn held(&self) -> bool {
        self.load(W_HOLD) != 0
    }

    /// Sets the stop word and gives every task one token so a blocked one wakes and sees it.
    pub fn halt(&self) {
        if let Some(w) = self.word(W_STOP) {
            w.store(1, Ordering::Release);
        }
        for l in &self.links {
            // A post can only fail for a signal link whose waiter never registered; that task
            // is not blocked on it.
            let _ = l.post();
        }
    }

    /// Releases a yield partner: the measured span begins.
    pub fn go(&self) {
        if let Some(w) = self.word(W_GO) {
            w.store(1, Ordering::Release);
        }
    }

    /// Ends the measured span: every task keeps the token it holds.
    pub fn hold(&self) {
        if let Some(w) = self.word(W_HOLD) {
            w.store(1, Ordering::Release);
        }
    }

    /// Workers that have finished their set-up.
    pub fn ready(&self) -> u64 {
        self.load(W_READY)
    }

    /// Task `i`'s kernel task id once it has started (task 0: 0, the caller knows its own).
    pub fn tid(&self, i: usize) -> i32 {
        self.load(W_TIDS + i) as i32
    }

    /// Appends task `i` to the visit log while there is room.
    #[inline]
    pub fn log_visit(&self, i: usize) {
        if self.log_len == 0 {
            return;
        }
        let Some(next) = self.word(W_LOG_NEXT) else {
            return;
        };
        let at = next.fetch_add(1, Ordering::AcqRel) as usize;
        if at < self.log_len {
            if let Some(w) = self.word(W_TIDS + self.tasks + at) {
                w.store(i as u64, Ordering::Release);
            }
        }
    }

    /// The logged visits, in order (empty unless verifying).
    pub fn visits(&self) -> Vec<u64> {
        let logged = (self.load(W_LOG_NEXT) as usize).min(self.log_len);
        (0..logged)
            .map(|k| self.load(W_TIDS + self.tasks + k))
            .collect()
    }

    /// Switches the workers counted over their measured span (after they stopped).
    pub fn worker_switches(&self) -> Switches {
        Switches {
            voluntary: self.load(W_VOLUNTARY),
            involuntary: self.load(W_INVOLUNTARY),
        }
    }

    fn add_switches(&self, d: Switches) {
        if let Some(w) = self.word(W_VOLUNTARY) {
            w.fetch_add(d.voluntary, Ordering::AcqRel);
        }
        if let Some(w) = self.word(W_INVOLUNTARY) {
            w.fetch_add(d.involuntary, Ordering::AcqRel);
        }
    }

    /// The sched_yield partner: yields until stopped, counting from when the parent says go.
    fn yielder(&self) -> Result<(), Failure> {
        self.word(W_READY)
            .ok_or(Failure::Setup)?
            .fetch_add(1, Ordering::AcqRel);
        while self.load(W_GO) == 0 && !self.stopped() {
            ipc::sched_yield().map_err(|_| Failure::Wait)?;
        }
        let start = crate::thread_switches();
        while !self.stopped() {
            ipc::sched_yield().map_err(|_| Failure::Wait)?;
        }
        self.add_switches(crate::thread_switches().since(start));
        Ok(())
    }
}

// SAFETY: a worker makes only link calls, sched_yield, getrusage, gettid, sigprocmask and its
// own mmap (WorkingSet), and atomics on the shared words mapped before the fork. Every word
// and link lookup is checked (no panic), failures are Failure codes (no allocation), and the
// halt (stop word + one post per link) makes every loop return.
unsafe impl TaskBody for TokenRing {
    /// Task `i`'s whole life (i >= 1). Its switch count starts at its first wake-up, which is
    /// inside the measured span (the parent seeds tokens only after starting its count), and
    /// ends when it sees the stop word.
    fn run(&self, i: usize) -> Result<(), Failure> {
        self.word(W_TIDS + i)
            .ok_or(Failure::Setup)?
            .store(crate::gettid() as u64, Ordering::Release);
        if self.via == Via::Yield {
            return self.yielder();
        }
        let own = self.link(i).ok_or(Failure::Setup)?;
        let next = self.link((i + 1) % self.tasks).ok_or(Failure::Setup)?;
        if self.via == Via::Signal {
            ipc::block_link_signal().map_err(|e| Failure::setup(&e))?;
            own.set_waiter(crate::gettid());
        }
        // Whatever way this task ends, later posts (a halt) must not signal its id, which the
        // kernel may hand to another task once this one is gone.
        let _clear = ClearWaiter(own);
        let ws = WorkingSet::new(self.size_kib).map_err(|e| Failure::setup(&e))?;
        self.word(W_READY)
            .ok_or(Failure::Setup)?
            .fetch_add(1, Ordering::AcqRel);
        own.wait().map_err(|_| Failure::Wait)?;
        let start = crate::thread_switches();
        while !self.stopped() {
            if self.held() {
                // Keep the token; the halt wakes this task to leave.
                own.wait().map_err(|_| Failure::Wait)?;
                continue;
            }
            self.log_visit(i);
            ws.touch();
            next.post().map_err(|_| Failure::Post)?;
            own.wait().map_err(|_| Failure::Wait)?;
        }
        self.add_switches(crate::thread_switches().since(start));
        Ok(())
    }
}

/// Clears a signal link's waiter when the waiting task's body ends (a plain atomic store, so
/// fine in a forked child).
struct ClearWaiter<'a>(&'a Link);

impl Drop for ClearWaiter<'_> {
    fn drop(&mut self) {
        self.0.set_waiter(0);
    }
}
