//! The token-ring runner the `ring` and `switch` experiments share: N tasks pass K tokens, task
//! 0 is the measuring thread, and the kernel's switch and migration counters are read over
//! exactly the span the sampler timed. The tasks' own loop is [`oscost_sys::token::TokenRing`].

use crate::context::Context;
use crate::cpuset::AffinityRestore;
use crate::sampler::measure_fallible;
use anyhow::Context as _;
use oscost_model::Samples;
use oscost_sys::ipc::{self, LinkSignalBlock, Via};
use oscost_sys::task::{self, CpuMask, Kind, Team, WorkingSet};
use oscost_sys::token::TokenRing;
use oscost_sys::{self as os, Switches};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a ring looks like; `masks[i]` pins task i (task 0 is the caller).
pub(crate) struct RingSpec {
    pub via: Via,
    pub kind: Kind,
    pub tasks: usize,
    pub tokens: usize,
    pub size_kib: usize,
    pub masks: Vec<CpuMask>,
    pub verify: bool,
}

/// What the kernel counted over the measured span.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Counts {
    /// Turns of task 0 (each worth `tasks` hops; a round trip when tasks = 2).
    pub ops: u64,
    /// Switches of every task, summed.
    pub switches: Switches,
    /// Migrations of every task, summed.
    pub migrations: u64,
    /// Whether the migration counter was readable for every task.
    pub migrations_known: bool,
    /// Peak memory of the ring, KiB (see [`Ring::peak_rss_kib`]).
    pub peak_rss_kib: u64,
    /// This process's resident memory when the ring started, KiB, after the peak mark was
    /// reset (`None`: the reset failed, so the peak may belong to an earlier, larger ring).
    pub rss_before_kib: Option<u64>,
    /// Last CPU each task ran on (from `/proc/.../stat`), task 0 first.
    pub last_cpus: Vec<i64>,
    /// Logged visits, in order (empty unless verifying).
    pub visits: Vec<u64>,
}

/// A running ring. Dropping it stops and reaps every task and restores the caller's
/// affinity (fields drop in order: the team first).
pub(crate) struct Ring {
    team: Team,
    ctl: Arc<TokenRing>,
    kind: Kind,
    tokens: usize,
    ws: WorkingSet,
    ops: u64,
    seeded: bool,
    start: Switches,
    migrations_before: Option<u64>,
    rss_before_kib: Option<u64>,
    tids: Vec<i32>,
    _signal: Option<LinkSignalBlock>,
    _affinity: AffinityRestore,
}

impl Ring {
    /// Builds the links and shared words, spawns tasks 1..N and waits until each is ready.
    pub fn start(spec: &RingSpec, ctx: &Context) -> anyhow::Result<Ring> {
        // The peak memory reported is this ring's, not the largest ring's run before it;
        // what the process already held (thread stacks glibc caches for reuse) is reported
        // beside it.
        let rss_before_kib = os::reset_peak_rss()
            .ok()
            .and_then(|()| os::current_rss_kib());
        let n = spec.tasks;
        anyhow::ensure!(spec.masks.len() == n, "one CPU mask per task");
        let affinity = AffinityRestore::save();
        spec.masks[0]
            .apply()
            .with_context(|| format!("pinning to CPUs {:?}", spec.masks[0].cpus()))?;
        let signal = match spec.via {
            Via::Signal => Some(ipc::block_link_signal_scoped()?),
            _ => None,
        };
        let ctl = Arc::new(TokenRing::new(
            spec.via,
            spec.tasks,
            spec.size_kib,
            spec.verify,
        )?);
        if let Some(l) = ctl.link(0) {
            l.set_waiter(os::gettid());
        }
        let halt_ctl = Arc::clone(&ctl);
        let mut team = Team::new(spec.kind, n, 1, move || halt_ctl.halt());
        spawn_workers(&mut team, &ctl, spec, ctx)?;
        team.watch()?;
        wait_ready(&team, &ctl, ctx)?;
        let tids = (0..n)
            .map(|i| match i {
                0 => os::gettid(),
                _ => ctl.tid(i),
            })
            .collect();
        Ok(Ring {
            team,
            ctl,
            kind: spec.kind,
            tokens: spec.tokens,
            ws: WorkingSet::new(spec.size_kib).context("mapping the working set")?,
            ops: 0,
            seeded: false,
            start: Switches::default(),
            migrations_before: None,
            rss_before_kib,
            tids,
            _signal: signal,
            _affinity: affinity,
        })
    }

    /// Process ids of the worker processes (empty for threads): for tests that kill one.
    #[cfg(test)]
    pub fn pids(&self) -> Vec<i32> {
        self.team.pids()
    }

    /// Kernel thread ids of every task, task 0 (the caller) first: what a trace knows them by.
    pub fn tids(&self) -> &[i32] {
        &self.tids
    }

    /// Starts the measured span: reads task 0's switch and migration counters and releases a
    /// yield partner.
    pub fn begin(&mut self) {
        self.migrations_before = self.migrations();
        self.start = os::thread_switches();
        self.ctl.go();
    }

    /// One turn of task 0: touch, pass the token on, wait for the next one (N hops).
    #[inline]
    pub fn op(&mut self) -> anyhow::Result<()> {
        if self.ctl.via() == Via::Yield {
            ipc::sched_yield()?;
        } else {
            if !self.seeded {
                self.seed()?;
            }
            self.ctl.log_visit(0);
            self.ws.touch();
            let n = self.ctl.tasks();
            self.link(1 % n)?.post()?;
            self.link(0)?.wait()?;
        }
        self.team.check()?;
        self.ops += 1;
        Ok(())
    }

    fn link(&self, i: usize) -> anyhow::Result<&oscost_sys::ipc::Link> {
        self.ctl
            .link(i)
            .ok_or_else(|| anyhow::anyhow!("the ring has no link {i}"))
    }

    /// Places tokens 2..K evenly around the ring (task 0 holds the first). Done on the first
    /// turn, inside the measured span, so every hop they cause is counted.
    fn seed(&mut self) -> anyhow::Result<()> {
        self.seeded = true;
        let n = self.ctl.tasks();
        for j in 1..self.tokens {
            self.link(j * n / self.tokens)?.post()?;
        }
        Ok(())
    }

    /// Ends the measured span, stops every task in order and returns what was counted.
    pub fn end(self) -> anyhow::Result<Counts> {
        self.ctl.hold();
        let parent = os::thread_switches().since(self.start);
        let after = self.migrations();
        let peak_rss_kib = self.peak_rss_kib();
        let last_cpus = self.last_cpus();
        let Ring {
            team,
            ctl,
            ops,
            migrations_before,
            rss_before_kib,
            ..
        } = self;
        team.finish()?;
        let workers = ctl.worker_switches();
        let visits = ctl.visits();
        let (migrations, migrations_known) = match (migrations_before, after) {
            (Some(b), Some(a)) => (a.saturating_sub(b), true),
            _ => (0, false),
        };
        Ok(Counts {
            ops,
            switches: Switches {
                voluntary: parent.voluntary + workers.voluntary,
                involuntary: parent.involuntary + workers.involuntary,
            },
            migrations,
            migrations_known,
            peak_rss_kib,
            rss_before_kib,
            last_cpus,
            visits,
        })
    }

    /// Migrations of every task so far, or `None` if any counter is unreadable.
    fn migrations(&self) -> Option<u64> {
        self.tids
            .iter()
            .enumerate()
            .map(|(i, &tid)| match (self.kind, i) {
                (Kind::Processes, 1..) => task::process_migrations(tid),
                _ => os::migrations(tid),
            })
            .sum()
    }

    /// Threads: the process's peak RSS. Processes: the sum of every task's proportional RSS
    /// now, while the ring is up (a child's memory is steady, so this is its peak; a plain
    /// RSS sum would count the pages the children share with the parent once per child).
    fn peak_rss_kib(&self) -> u64 {
        match self.kind {
            Kind::Threads => os::peak_rss_kib(),
            Kind::Processes => self
                .tids
                .iter()
                .enumerate()
                .filter_map(|(i, &pid)| match i {
                    0 => task::process_pss_kib(std::process::id() as i32),
                    _ => task::process_pss_kib(pid),
                })
                .sum(),
        }
    }

    fn last_cpus(&self) -> Vec<i64> {
        self.tids
            .iter()
            .enumerate()
            .map(|(i, &tid)| {
                let path = match (self.kind, i) {
                    (Kind::Processes, 1..) => format!("/proc/{tid}/stat"),
                    _ => format!("/proc/self/task/{tid}/stat"),
                };
                last_cpu(&path).unwrap_or(-1)
            })
            .collect()
    }
}

/// Field 39 (`processor`) of a `/proc/.../stat` line: the CPU the task last ran on.
fn last_cpu(path: &str) -> Option<i64> {
    let s = std::fs::read_to_string(path).ok()?;
    s[s.rfind(')')? + 2..]
        .split_whitespace()
        .nth(36)?
        .parse()
        .ok()
}

fn spawn_workers(
    team: &mut Team,
    ctl: &Arc<TokenRing>,
    spec: &RingSpec,
    ctx: &Context,
) -> anyhow::Result<()> {
    for i in 1..spec.tasks {
        if i % 64 == 0 {
            ctx.check_cancel()?;
        }
        team.spawn(Some(&spec.masks[i]), ctl, i)?;
    }
    Ok(())
}

/// Waits until every worker has registered (set its signal waiter, mapped its working set).
fn wait_ready(team: &Team, ctl: &TokenRing, ctx: &Context) -> anyhow::Result<()> {
    let want = (ctl.tasks() - 1) as u64;
    let deadline =
        Instant::now() + Duration::from_secs(30) + Duration::from_millis(ctl.tasks() as u64);
    while ctl.ready() < want {
        team.check()?;
        ctx.check_cancel()?;
        if Instant::now() > deadline {
            anyhow::bail!(
                "only {} of {want} worker tasks started within the deadline",
                ctl.ready()
            );
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(())
}

/// Samples task 0's turns on a running ring: the span the switches are counted over is
/// exactly the sampler's, calibration and warm-up included.
pub(crate) fn sample(
    spec: &RingSpec,
    ctx: &Context,
) -> anyhow::Result<(Samples, oscost_model::Messages, Counts)> {
    let mut ring = Ring::start(spec, ctx)?;
    ring.begin();
    let (samples, warnings) = measure_fallible(ctx, || ring.op())?;
    let counts = ring.end()?;
    Ok((samples, warnings, counts))
}
