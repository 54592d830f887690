//! `lockring`: the `csfast5` lock ring and the `cspipe2a` pipe token of Edward G. Bradford,
//! "Runtime: Context switching", IBM developerWorks, 2002.
//!
//! csfast5: N threads and N + K pthread mutexes; each thread holds one mutex, locks the next
//! one around the ring and unlocks the one it held. The K extra mutexes start free and are the
//! tokens: with one of them and every thread on one CPU, each mutex taken is one hand-over of
//! the CPU. The time per switch is the elapsed time over the mutexes taken; the switch cost is
//! that less a mutex's own uncontended lock + unlock, measured in the same run. cspipe2a: two
//! threads pass a 4-byte token back and forth through two pipes.
//!
//! The measuring thread is thread 0 of the ring: the sampler times batches of its steps, and
//! the ring moves only while it steps (the other threads block once the free mutexes reach it),
//! so one of its steps is N hand-overs. The machinery (mutexes, threads, the ordered stop) is
//! [`oscost_sys::lockring`].

use crate::context::Context;
use crate::cpuset::AffinityRestore;
use crate::engine;
use crate::engine::controls;
use crate::engine::parse_count;
use crate::engine::ring::{placement_name, RingPlacement};
use crate::engine::TaskList;
use crate::limits::{Limits, Needs, FILES_MARGIN};
use crate::sampler::measure_fallible;
use anyhow::Context as _;
use oscost_model::case::{Case, Check, DerivedSpec, ExperimentOutput, Samples, Series};
use oscost_model::{Message, MessageKind};
use oscost_sys::lockring::{LockRing, LockRingSpec, PipeToken};
use oscost_sys::task::CpuMask;
use oscost_sys::{self as os, Switches};

/// Subcommand name and id prefix.
pub const NAME: &str = oscost_model::ids::lockring::NAME;

/// The default sweep: the ring sizes of the study (its Linux runs stopped at 128 threads).
const FULL_SWEEP: [usize; 7] = [2, 4, 8, 16, 32, 64, 128];
/// The sweep with `--quick`.
const QUICK_SWEEP: [usize; 3] = [2, 8, 32];
/// Rings larger than this are refused as a typo rather than tried; what fits below it is
/// checked against the machine's limits before the run starts.
const MAX_TASKS: usize = 1 << 16;

/// The id of the mutex's own lock + unlock.
fn own_id() -> String {
    oscost_model::ids::lockring::Id::Own {
        lock: oscost_model::ids::lockring::MUTEX,
    }
    .to_string()
}

/// The id of the pipe token.
fn pipe_id() -> String {
    oscost_model::ids::lockring::Id::Pipe { tasks: 2 }.to_string()
}

/// The two programs of the study.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Form {
    /// csfast5: N threads hand N + K pthread mutexes around a ring
    Mutex,
    /// cspipe2a: two threads pass a 4-byte token through two pipes
    Pipe,
}

/// Options of `oscost lockring`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Ring sizes (threads, the measuring one included): a list (`2,4,16`) or a doubling
    /// range (`2..128`) [default: 2,4,8,16,32,64,128, or 2,8,32 with --quick]
    #[arg(long, value_name = "N,...|A..B", value_parser = engine::parse_tasks, allow_hyphen_values = true)]
    pub tasks: Option<TaskList>,

    /// Extra mutexes, free at the start: the tokens (1 <= K < N)
    #[arg(long, default_value_t = 1, value_name = "K", allow_negative_numbers = true,
          value_parser = parse_count)]
    pub tokens: usize,

    /// The programs to run, comma-separated
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "FORM,...",
        default_value = "mutex,pipe"
    )]
    pub forms: Vec<Form>,

    /// Where the threads run: `same` (every thread on the first CPU of the set, so every
    /// hand-over is a switch) or `free` (anywhere in the set)
    #[arg(long, value_enum, default_value = "same")]
    pub placement: RingPlacement,

    /// Log the order in which the mutexes were taken (series `acquisition_order`) and check
    /// it is the ring's order (the study's `showme`); the log adds a shared atomic per step to
    /// the timed path
    #[arg(long)]
    pub verify_order: bool,
}

/// The ring sizes to sweep, as given or by default.
fn sweep(opts: &Options, quick: bool) -> Vec<usize> {
    match &opts.tasks {
        Some(TaskList(v)) => v.clone(),
        None if quick => QUICK_SWEEP.to_vec(),
        None => FULL_SWEEP.to_vec(),
    }
}

fn forms(opts: &Options) -> Vec<Form> {
    engine::first_occurrences(&opts.forms)
}

/// Checks the ring options before any thread starts; returns the sizes to sweep (none
/// without the mutex form).
fn validate(opts: &Options, ctx: &Context) -> anyhow::Result<Vec<usize>> {
    if ctx.cpus.is_empty() {
        anyhow::bail!("--cpus: the CPU set is empty");
    }
    if !forms(opts).contains(&Form::Mutex) {
        return Ok(Vec::new());
    }
    let sizes = sweep(opts, ctx.quick);
    engine::check_ring_sweep(
        &sizes,
        opts.tokens,
        MAX_TASKS,
        ("a lock ring", "threads"),
        "at least one mutex must start free",
    )?;
    Ok(sizes)
}

/// What the largest ring holds at once, for the pre-flight check: its threads (each a stack
/// and a guard page) and, with the pipe form, two pipes. `None` when the options are out of
/// range (`run` refuses them).
fn needs(opts: &Options, quick: bool) -> Option<Needs> {
    let forms = forms(opts);
    let n = if forms.contains(&Form::Mutex) {
        let n = sweep(opts, quick).into_iter().max()?;
        if !(2..=MAX_TASKS).contains(&n) {
            return None;
        }
        n
    } else {
        2
    };
    let n64 = n as u64;
    let files = forms.contains(&Form::Pipe).then(|| {
        (
            4 + FILES_MARGIN,
            format!("two pipes for the token, and {FILES_MARGIN} more"),
        )
    });
    Some(Needs {
        what: format!("{NAME} --tasks {n}"),
        instead: Some("use fewer --tasks".into()),
        files,
        tasks: Some((
            n64,
            format!("{n} threads, the measuring process's own among them"),
        )),
        // A stack and its guard page per worker thread, and the shared words.
        maps: Some((
            2 * n64 + 1,
            format!("a thread stack and its guard page (2) for each of {n} threads"),
        )),
        memory_kib: None,
        address_space_kib: Some(crate::limits::thread_stacks(n64)),
    })
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Lockring;
    const SUMMARY: &'static str =
        "Per-switch time of N threads handing pthread mutexes around a ring, and of a pipe token";
    const ABOUT: &'static str = "Per-switch time of N threads handing pthread mutexes around a \
ring, and of a token passed through two pipes (csfast5 and cspipe2a of Edward G. Bradford, \
\"Runtime: Context switching\", IBM developerWorks, 2002).

Lock ring: N threads and N + K default pthread mutexes, the K extra ones (the tokens) free at \
the start. Each thread holds one mutex, locks the next around the ring, then unlocks the one it \
held. All threads run on the first CPU of the set (--placement same), so with one token every \
mutex taken is one hand-over of the CPU. The measuring thread is one of the ring's threads; one \
sample is a batch of its steps, each worth N hand-overs. The time per switch is divided by the \
mutexes taken; the mutex's own uncontended lock + unlock (measured first, in one thread, \
`lockring.mutex.own`) is subtracted to give the switch cost. The kernel's switch count \
(getrusage nvcsw + nivcsw of every thread) is checked against the hand-overs, and every thread's \
mutexes are counted: N per step of the measuring thread. --verify-order logs the order the \
mutexes were taken and replays it against the ring.

Pipe token: two threads pass a 4-byte counter back and forth through two pipes; the time per \
one-way pass is half a round trip.\n\nTakes about 4 s; --quick about 0.4 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = false;
    const SUITE_ARGS: &'static [&'static str] = &["--tasks", "2,8,32"];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }

    fn preflight(&self, quick: bool, limits: &Limits) -> anyhow::Result<()> {
        if self.verify_order && !self.forms.contains(&Form::Mutex) {
            anyhow::bail!(
                "--verify-order checks the mutex ring's order, and --forms {} runs no mutex \
                 ring: add mutex to --forms or drop --verify-order",
                self.forms
                    .iter()
                    .map(engine::value_name)
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
        match needs(self, quick) {
            Some(needs) => limits.check(&needs),
            None => Ok(()),
        }
    }
}

/// Runs the sweep: the mutex's own cost first (no thread has existed yet), then each ring,
/// then the pipe token.
fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    let sizes = validate(opts, ctx)?;
    let forms = forms(opts);
    let cpus = match opts.placement {
        RingPlacement::Same => vec![ctx.first_cpu()],
        RingPlacement::Free => ctx.cpus.clone(),
    };
    let mask = CpuMask::new(&cpus).context("building the CPU mask")?;
    let mut out = ExperimentOutput::default();
    out.params
        .insert("placement".into(), placement_name(opts.placement).into());
    out.params.insert("cpus".into(), serde_json::json!(cpus));
    let with_mutex = forms.contains(&Form::Mutex);
    let steps = sizes.len() + usize::from(with_mutex) + usize::from(forms.contains(&Form::Pipe));
    ctx.progress.start(steps as u64, NAME);
    if with_mutex {
        ctx.progress.message("pthread mutex, one thread");
        out.cases.push(own_case(ctx)?);
        ctx.progress.inc(1);
    }
    for &n in &sizes {
        ctx.progress
            .message(&format!("{n} threads, {} mutexes", n + opts.tokens));
        let case = mutex_case(opts, ctx, n, &mask)?;
        out.derived.push(switch_cost(&case, &out.cases[0]));
        out.cases.push(case);
        ctx.progress.inc(1);
    }
    if forms.contains(&Form::Pipe) {
        ctx.progress.message("pipe token, 2 threads");
        out.cases.push(pipe_case(opts, ctx, &mask)?);
        ctx.progress.inc(1);
    }
    ctx.progress.finish();
    Ok(out)
}

/// The mutex's own uncontended lock + unlock in one thread, as `primitives` measures it.
fn own_case(ctx: &Context) -> anyhow::Result<Case> {
    let cpu = ctx.first_cpu();
    let c = controls::pthread_mutex_control_on(ctx, cpu)
        .context("measuring the pthread mutex's own lock + unlock")?;
    let mut case = Case::new(
        own_id(),
        "pthread_mutex_lock + unlock of a default pthread mutex in one thread, uncontended, no \
         switch (subtracted from every hand-over)",
        "lock + unlock",
        c.samples.clone(),
    )
    .param("cpu", cpu as u64)
    .param("threads_in_process", 1u64);
    case.checks.push(c.no_switch_check());
    case.checks
        .extend(crate::sampler::single_task_check(c.threads_in_process));
    case.counters
        .insert("switches_per_op".into(), c.switches_per_op());
    case.add_messages(c.said);
    Ok(case)
}

/// Per-step samples to per-hand-over samples: one step of the measuring thread is `per`
/// hand-overs.
fn scaled(mut s: Samples, per: usize) -> Samples {
    let per = per as f64;
    s.per_op_ns.iter_mut().for_each(|v| *v /= per);
    s.per_op_ticks.iter_mut().for_each(|v| *v /= per);
    s.loop_overhead_ns /= per;
    s.iterations_per_sample = s.iterations_per_sample.saturating_mul(per as u64);
    s
}

/// Migrations of every thread so far, or `None` if any counter is unreadable.
fn migrations(tids: &[i32]) -> Option<u64> {
    tids.iter().map(|&t| os::migrations(t)).sum()
}

fn add_migrations(case: &mut Case, before: Option<u64>, after: Option<u64>, pinned: bool) {
    let (Some(b), Some(a)) = (before, after) else {
        case.notes.push(Message::new(
            MessageKind::MigrationsNotCounted,
            ": se.nr_migrations is missing from /proc/self/task/<tid>/sched",
        ));
        return;
    };
    let moved = a.saturating_sub(b) as f64;
    case.counters.insert("migrations".into(), moved);
    if pinned {
        case.checks.push(Check::near(
            "migrations",
            0.0,
            moved,
            0.0,
            "se.nr_migrations of every thread over the measured span; pinned threads must not \
             move",
        ));
    }
}

/// The switches counted per hand-over must lie within what the set-up allows: at least one
/// (a hand-over that did not switch did not measure a switch) and at most two (one hand-over
/// plus one wakeup preemption: the woken thread may preempt the one that woke it before that
/// one blocks on its next mutex, which is real and part of the time).
fn switch_check(opts: &Options, per: f64, sw: Switches, taken: u64, what: &str) -> Check {
    let why = if opts.placement == RingPlacement::Free {
        "free placement: threads on different CPUs may hand over without switching"
    } else if opts.tokens > 1 && what == "hand-over" {
        "several free mutexes: a thread often finds its next one free and does not block"
    } else {
        "one token on one CPU: one switch per hand-over, plus any wakeup-preemption switches \
         (involuntary)"
    };
    let (low, high) = (0.95, 2.0);
    Check {
        name: format!("switches_per_{}", what.replace('-', "_")),
        expected: 1.0,
        counted: per,
        passed: (low..=high).contains(&per),
        bound: Some(oscost_model::case::Bound::Between(low, high)),
        detail: format!(
            "getrusage nvcsw + nivcsw of every thread over the measured span ({} voluntary + \
             {} involuntary) / {taken} {what}s; {why}; must lie in {low:.2}..{high:.2}",
            sw.voluntary, sw.involuntary
        ),
    }
}

/// Replays the log of mutexes taken against the ring: thread t may take only the mutex after
/// the one it holds, and only while that one is free. Returns the illegal steps and the
/// threads never seen (when the log is long enough that every thread should appear).
fn order_violations(log: &[(usize, usize)], n: usize, k: usize) -> (usize, usize) {
    let locks = n + k;
    let mut holder: Vec<Option<usize>> = (0..locks).map(|l| (l < n).then_some(l)).collect();
    let mut held: Vec<usize> = (0..n).collect();
    let mut seen = vec![false; n];
    let mut bad = 0;
    for &(t, l) in log {
        if t >= n || l >= locks || l != (held[t] + 1) % locks || holder[l].is_some() {
            bad += 1;
            continue;
        }
        holder[held[t]] = None;
        holder[l] = Some(t);
        held[t] = l;
        seen[t] = true;
    }
    let unseen = if log.len() >= 2 * n {
        seen.iter().filter(|s| !**s).count()
    } else {
        0
    };
    (bad, unseen)
}

fn order_check(log: &[(usize, usize)], n: usize, k: usize) -> Check {
    let (bad, unseen) = order_violations(log, n, k);
    Check::near(
        "acquisition_order_violations",
        0.0,
        (bad + unseen) as f64,
        0.0,
        &format!(
            "replayed the first {} mutexes taken against the ring of {} mutexes, thread t \
             starting with mutex t and {k} free: {bad} step(s) took a mutex that was not the \
             next one or not free, {unseen} thread(s) never stepped",
            log.len(),
            n + k
        ),
    )
}

fn order_series(log: &[(usize, usize)]) -> Series {
    Series {
        name: "acquisition_order".into(),
        columns: vec!["step".into(), "thread".into(), "mutex".into()],
        points: log
            .iter()
            .enumerate()
            .map(|(i, &(t, l))| vec![i as f64, t as f64, l as f64])
            .collect(),
    }
}

/// One ring of `n` threads, built, sampled and stopped.
fn mutex_case(opts: &Options, ctx: &Context, n: usize, mask: &CpuMask) -> anyhow::Result<Case> {
    let k = opts.tokens;
    let id = oscost_model::ids::lockring::Id::Case {
        lock: oscost_model::ids::lockring::MUTEX,
        tasks: n,
        tokens: k,
    }
    .to_string();
    let _pin = AffinityRestore::pin(mask.cpus())?;
    let spec = LockRingSpec {
        tasks: n,
        tokens: k,
        mask: Some(mask.clone()),
        verify: opts.verify_order,
    };
    let mut ring = LockRing::start(&spec, || Ok(ctx.check_cancel()?))
        .with_context(|| format!("{id}: starting {n} threads"))?;
    let before = migrations(ring.tids());
    ring.begin();
    let (samples, warnings) = measure_fallible(ctx, || ring.turn()).with_context(|| id.clone())?;
    let after = migrations(ring.tids());
    let counts = ring.end().with_context(|| id.clone())?;

    let taken = counts.taken.max(1);
    let turns = counts.turns.max(1);
    let per = |v: u64| v as f64 / taken as f64;
    let sw = counts.switches;
    let mut case = Case::new(
        id,
        format!(
            "{n} threads hand {} pthread mutexes around a ring ({k} free), each locking the \
             next and unlocking its own: time per mutex taken",
            n + k
        ),
        "switch",
        scaled(samples, n),
    )
    .param("tasks", n as u64)
    .param("tokens", k as u64)
    .param("mutexes", (n + k) as u64)
    .param("placement", placement_name(opts.placement))
    .param("cpus", serde_json::json!(mask.cpus()));
    case.add_messages(warnings);
    case.counters
        .insert("switches_per_hand_over".into(), per(sw.total()));
    case.counters
        .insert("voluntary_per_hand_over".into(), per(sw.voluntary));
    case.counters
        .insert("involuntary_per_hand_over".into(), per(sw.involuntary));
    case.counters
        .insert("hand_overs_counted".into(), counts.taken as f64);
    case.counters
        .insert("turns_counted".into(), counts.turns as f64);
    let per_turn = counts.taken as f64 / turns as f64;
    case.counters.insert("hand_overs_per_turn".into(), per_turn);

    let check = switch_check(opts, per(sw.total()), sw, taken, "hand-over");
    if !check.passed && check.counted < 1.0 && (k > 1 || opts.placement == RingPlacement::Free) {
        case.warnings.push(Message::new(
            MessageKind::HopsWithoutSwitch,
            format!(
                "{}: {:.2} switches per hand-over instead of at least 1, so the time is not a \
                 switch cost and switch_cost is flagged (use --tokens 1 --placement same for \
                 one switch per hand-over)",
                if k > 1 {
                    format!("{k} free mutexes")
                } else {
                    "free placement".to_owned()
                },
                check.counted
            ),
        ));
    }
    case.checks.push(check);
    // Every thread moves with the measuring one: N mutexes per step of it, give or take the
    // free mutexes' travel before its first step and after its last.
    let slack = (n * (k + 1)) as f64 / turns as f64;
    case.checks.push(Check::near(
        "hand_overs_per_turn",
        n as f64,
        per_turn,
        0.01 * n as f64 + slack,
        &format!(
            "mutexes taken by every thread ({}) per step of the measuring thread ({}); the \
             ring moves only with it, so N = {n} per step, within 1 % plus the free mutexes' \
             travel at both ends of the span",
            counts.taken, counts.turns
        ),
    ));
    let inv = per(sw.involuntary);
    if n > 2 && inv > 0.05 {
        case.notes.push(Message::new(
            MessageKind::WakeupPreemption,
            format!(
                ": {inv:.2} involuntary switches per hand-over (the woken thread preempts the \
                 one that woke it before it blocks); the time includes them"
            ),
        ));
    }
    add_migrations(
        &mut case,
        before,
        after,
        opts.placement == RingPlacement::Same,
    );
    if opts.verify_order {
        case.checks.push(order_check(&counts.log, n, k));
        case.series.push(order_series(&counts.log));
        case.warnings.push(Message::new(
            MessageKind::VerifyOrder,
            ": every step also appended to a shared log, which is in the timed path",
        ));
    }
    Ok(case)
}

/// `per hand-over − own lock + unlock`, flagged when either case failed a check.
fn switch_cost(case: &Case, own: &Case) -> DerivedSpec {
    DerivedSpec {
        id: oscost_model::ids::lockring::switch_cost(&case.id),
        description: "time per mutex hand-over minus the mutex's own uncontended lock + unlock: \
                      the switch, with its wake-up and any wakeup-preemption switch"
            .into(),
        terms: vec![(case.id.clone(), 1.0), (own.id.clone(), -1.0)],
        flagged: engine::failed_checks(case).or_else(|| engine::failed_checks(own)),
    }
}

/// cspipe2a: two threads, two pipes, a 4-byte token; the time per one-way pass.
fn pipe_case(opts: &Options, ctx: &Context, mask: &CpuMask) -> anyhow::Result<Case> {
    let _pin = AffinityRestore::pin(mask.cpus())?;
    let mut token = PipeToken::start(Some(mask)).with_context(pipe_id)?;
    let before = migrations(token.tids());
    token.begin();
    let (samples, warnings) = measure_fallible(ctx, || token.turn()).with_context(pipe_id)?;
    let after = migrations(token.tids());
    let counts = token.end().with_context(pipe_id)?;
    let passes = counts.round_trips.saturating_mul(2).max(1);
    let sw = counts.switches;
    let per = |v: u64| v as f64 / passes as f64;
    let mut case = Case::new(
        pipe_id(),
        "two threads pass a 4-byte token through two pipes (write A, read B / read A, write B): \
         time per one-way pass, half a round trip",
        "switch",
        scaled(samples, 2),
    )
    .param("tasks", 2u64)
    .param("token_bytes", 4u64)
    .param("placement", placement_name(opts.placement))
    .param("cpus", serde_json::json!(mask.cpus()));
    case.add_messages(warnings);
    case.counters
        .insert("switches_per_pass".into(), per(sw.total()));
    case.counters
        .insert("voluntary_per_pass".into(), per(sw.voluntary));
    case.counters
        .insert("involuntary_per_pass".into(), per(sw.involuntary));
    case.counters
        .insert("round_trips_counted".into(), counts.round_trips as f64);
    case.checks
        .push(switch_check(opts, per(sw.total()), sw, passes, "pass"));
    case.checks.push(Check::near(
        "token_counted",
        1.0,
        f64::from(u8::from(counts.token_counted)),
        0.0,
        &format!(
            "the partner sends the token back one higher; after {} round trips it must read \
             the round-trip count",
            counts.round_trips
        ),
    ));
    add_migrations(
        &mut case,
        before,
        after,
        opts.placement == RingPlacement::Same,
    );
    Ok(case)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::testing;

    fn with_ctx<T>(f: impl FnOnce(&Context) -> T) -> T {
        testing::with_tiny_ctx(f)
    }

    fn opts(extra: &[&str]) -> Options {
        crate::engine::defaults(extra)
    }

    #[test]
    fn order_replay_accepts_the_ring_and_rejects_skips() {
        // N = 2, K = 1: thread 1 takes 2, thread 0 takes 1, thread 1 takes 0, ...
        let ring = [(1, 2), (0, 1), (1, 0), (0, 2), (1, 1)];
        assert_eq!(order_violations(&ring, 2, 1), (0, 0));
        // Thread 0 cannot take mutex 1 while thread 1 holds it.
        assert_eq!(order_violations(&[(0, 1)], 2, 1).0, 1);
        // Nor skip a mutex.
        assert_eq!(order_violations(&[(1, 0)], 2, 1).0, 1);
        // N = 3, K = 2: both free mutexes may move at once.
        assert_eq!(order_violations(&[(2, 3), (2, 4), (1, 2)], 3, 2), (0, 0));
    }

    #[test]
    fn bad_options_are_refused_before_spawning() {
        with_ctx(|ctx| {
            let cases = [
                (
                    vec!["--tasks", "1"],
                    "--tasks 1: a lock ring needs at least 2 threads",
                ),
                (vec!["--tokens", "0"], "--tokens 0"),
                (
                    vec!["--tasks", "4,8", "--tokens", "4"],
                    "--tokens 4: must be less",
                ),
                (vec!["--tasks", "100000"], "--tasks 100000: at most"),
            ];
            for (args, msg) in cases {
                let e = run(&opts(&args), ctx).unwrap_err().to_string();
                assert!(e.starts_with(msg), "{args:?}: {e}");
            }
            // Without the ring, its sizes do not matter.
            assert!(validate(&opts(&["--tasks", "1", "--forms", "pipe"]), ctx).is_ok());
        });
    }

    #[test]
    fn verify_order_without_the_mutex_ring_is_refused() {
        use engine::Experiment;
        let limits = crate::limits::Limits::read();
        let e = opts(&["--verify-order", "--forms", "pipe"])
            .preflight(true, &limits)
            .unwrap_err();
        assert!(e.to_string().contains("add mutex to --forms"), "{e}");
        assert!(opts(&["--verify-order", "--forms", "mutex"])
            .preflight(true, &limits)
            .is_ok());
    }

    #[test]
    fn preflight_counts_threads_mappings_and_pipes() {
        let n = needs(&opts(&["--tasks", "2,300"]), false).unwrap();
        assert_eq!(n.what, "lockring --tasks 300");
        assert_eq!(n.tasks.unwrap().0, 300);
        assert_eq!(n.maps.unwrap().0, 601);
        assert_eq!(n.files.unwrap().0, 4 + FILES_MARGIN);
        let quick = needs(&opts(&["--forms", "mutex"]), true).unwrap();
        assert_eq!(quick.what, "lockring --tasks 32");
        assert!(quick.files.is_none());
        assert!(needs(&opts(&["--tasks", "1"]), false).is_none());
    }

    #[test]
    fn run_reports_cases_checks_and_the_switch_cost() {
        with_ctx(|ctx| {
            let out = run(&opts(&["--tasks", "2,4", "--verify-order"]), ctx).unwrap();
            let ids: Vec<&str> = out.cases.iter().map(|c| c.id.as_str()).collect();
            assert_eq!(
                ids,
                [
                    own_id().as_str(),
                    "lockring.mutex.n2.k1",
                    "lockring.mutex.n4.k1",
                    pipe_id().as_str()
                ]
            );
            let ids: Vec<&str> = out.derived.iter().map(|d| d.id.as_str()).collect();
            assert_eq!(
                ids,
                [
                    "lockring.mutex.n2.k1.switch_cost",
                    "lockring.mutex.n4.k1.switch_cost"
                ]
            );
            for d in &out.derived {
                assert_eq!(d.terms[1], (own_id(), -1.0));
            }
            for c in &out.cases[1..3] {
                assert_eq!(c.unit, "switch");
                assert!(c.counters["switches_per_hand_over"] > 0.0, "{}", c.id);
                let order = c
                    .checks
                    .iter()
                    .find(|k| k.name == "acquisition_order_violations")
                    .unwrap();
                assert!(order.passed, "{}: {}", c.id, order.detail);
                let per_turn = c
                    .checks
                    .iter()
                    .find(|k| k.name == "hand_overs_per_turn")
                    .unwrap();
                assert!(per_turn.passed, "{}: {per_turn:?}", c.id);
                assert!(!c.series[0].points.is_empty());
            }
            let pipe = &out.cases[3];
            assert!(pipe
                .checks
                .iter()
                .any(|k| k.name == "token_counted" && k.passed));
        });
    }

    #[test]
    fn pipe_alone_measures_no_ring() {
        with_ctx(|ctx| {
            let out = run(&opts(&["--forms", "pipe"]), ctx).unwrap();
            assert_eq!(out.cases.len(), 1);
            assert_eq!(out.cases[0].id, pipe_id());
            assert!(out.derived.is_empty());
        });
    }
}
