//! `signal`: what a signal costs a program (lmbench's `lat_sig`, Larry McVoy and Carl
//! Staelin, "lmbench: Portable tools for performance analysis", 1996): installing a handler,
//! a signal sent to the own thread and its handler's return, a SIGSEGV caught and returned
//! from, and a signal waking another thread waiting in `sigsuspend`, on the same CPU and on
//! another. Every handler run is counted where it happens and held against the operations
//! timed; the waking cases count the measuring thread's switches.

use crate::context::Context;
use crate::engine::{self, first_occurrences, value_name};
use crate::sampler::{self, Job, SamplerConfig};
use anyhow::Context as _;
use oscost_model::case::{Case, Check, DerivedSpec, ExperimentOutput, Unavailable};
use oscost_model::ids::signal as ids;
use oscost_sys::signals::{self as sig, Handlers, ReadOnlyPage, Target};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

/// Subcommand name and id prefix.
pub const NAME: &str = ids::NAME;

const DEFAULT_REPEATS: usize = 81;
const QUICK_REPEATS: usize = 10;

/// The cases.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Kind {
    /// sigaction of SIGUSR1's handler (lat_sig install)
    Install,
    /// tgkill of SIGUSR1 to the own thread, its handler run and returned from (lat_sig catch)
    Catch,
    /// a write to a read-only page: SIGSEGV caught, the write stepped over, returned from
    /// (lat_sig prot)
    Segv,
    /// a signal waking another thread on the same CPU, which signals back (round trip)
    WakeSame,
    /// a signal waking another thread on another CPU, which signals back (round trip)
    WakeCross,
    /// a signal waking another process on the same CPU, which signals back (round trip)
    WakeProcessSame,
    /// a signal waking another process on another CPU, which signals back (round trip)
    WakeProcessCross,
}

impl Kind {
    const ALL: [Kind; 7] = [
        Kind::Install,
        Kind::Catch,
        Kind::Segv,
        Kind::WakeSame,
        Kind::WakeCross,
        Kind::WakeProcessSame,
        Kind::WakeProcessCross,
    ];

    fn id(self) -> String {
        match self {
            Kind::WakeSame => ids::WAKE_SAME.to_owned(),
            Kind::WakeCross => ids::WAKE_CROSS.to_owned(),
            Kind::WakeProcessSame => ids::WAKE_PROCESS_SAME.to_owned(),
            Kind::WakeProcessCross => ids::WAKE_PROCESS_CROSS.to_owned(),
            k => ids::case(&value_name(&k)),
        }
    }

    fn description(self) -> &'static str {
        match self {
            Kind::Install => "sigaction installing SIGUSR1's handler",
            Kind::Catch => "tgkill of SIGUSR1 to the own thread + the handler's run and return",
            Kind::Segv => {
                "a write to a read-only page: fault, SIGSEGV, the handler steps over the write, \
                 return"
            }
            Kind::WakeSame => {
                "round trip: SIGUSR1 wakes a thread in sigsuspend on the same CPU, which wakes \
                 this one back the same way"
            }
            Kind::WakeCross => {
                "round trip: SIGUSR1 wakes a thread in sigsuspend on another CPU, which wakes \
                 this one back the same way"
            }
            Kind::WakeProcessSame => {
                "round trip: SIGUSR1 wakes another process in sigsuspend on the same CPU, which \
                 wakes this thread back the same way"
            }
            Kind::WakeProcessCross => {
                "round trip: SIGUSR1 wakes another process in sigsuspend on another CPU, which \
                 wakes this thread back the same way"
            }
        }
    }

    fn wakes(self) -> bool {
        !matches!(self, Kind::Install | Kind::Catch | Kind::Segv)
    }

    /// Whether the peer is on the same CPU as the measuring thread.
    fn same_cpu(self) -> bool {
        matches!(self, Kind::WakeSame | Kind::WakeProcessSame)
    }

    /// Whether the peer is another process.
    fn process(self) -> bool {
        matches!(self, Kind::WakeProcessSame | Kind::WakeProcessCross)
    }
}

/// Options of `oscost signal`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Cases, comma-separated (default: all)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CASE,...")]
    pub cases: Vec<Kind>,

    /// Samples per case, 3 or more [default: 81, or 10 with --quick]
    #[arg(long, value_name = "N", value_parser = parse_repeats)]
    pub repeats: Option<usize>,

    /// Hold /dev/cpu_dma_latency at 0 during the run so idle CPUs poll instead of halting: a
    /// waking case across CPUs then times the signal, not a halted CPU's wake-up (needs root;
    /// a warning is recorded where not permitted)
    #[arg(long)]
    #[serde(default)]
    pub idle_poll: bool,
}

fn parse_repeats(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (3..=100_000).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not a number of samples from 3 to 100000")),
    }
}

/// What a run measures, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    kinds: Vec<Kind>,
    repeats: usize,
}

fn plan(opts: &Options, quick: bool) -> Plan {
    let mut kinds = if opts.cases.is_empty() {
        Kind::ALL.to_vec()
    } else {
        first_occurrences(&opts.cases)
    };
    // One-task cases first: once a thread has existed, glibc stays in its multi-threaded mode.
    kinds.sort_by_key(|k| k.wakes());
    Plan {
        kinds,
        repeats: opts.repeats.unwrap_or(if quick {
            QUICK_REPEATS
        } else {
            DEFAULT_REPEATS
        }),
    }
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Signal;
    const SUMMARY: &'static str =
        "What a signal costs: installing a handler, catching one, a caught SIGSEGV, waking a thread or process";
    const ABOUT: &'static str = "What a signal costs a program, as lmbench's lat_sig prices \
it, and what it costs to wake another thread or process with one.

install: one sigaction call installing SIGUSR1's handler. catch: tgkill of SIGUSR1 to the own \
thread; the handler runs on the way back from the call and returns through rt_sigreturn. segv: \
a write to a read-only page faults, the kernel delivers SIGSEGV, the handler steps over the \
write (x86_64) and returns. wake-same and wake-cross: a second thread waits in sigsuspend \
(SIGUSR1 blocked outside it) on the same CPU or on the second CPU of the set; the measuring \
thread wakes it with tgkill and waits in sigsuspend until it is woken back: a round trip, two \
wake-ups, and its half as a derived figure. wake-process-same and wake-process-cross: the \
same with a forked child process in place of the second thread (tgkill to its only thread; it \
answers with tgkill to the measuring thread).

Each handler run is counted in the handler and held against the operations timed; the waking \
cases count the measuring thread's voluntary switches (getrusage). The previous handlers and \
signal mask are put back afterwards. The waking cases count their CPUs' entries into each idle \
state; across CPUs a halted CPU's wake-up is most of the figure, and --idle-poll keeps the CPUs \
polling. --repeats sets the samples per case.\n\nTakes about 3.2 s; \
--quick about 0.4 s, as the whole command on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    const SUITE_ARGS: &'static [&'static str] = &["--repeats", "7"];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }
}

/// The thread a waking case signals: pinned, waiting in `sigsuspend`, signalling back each
/// time it is woken, until told to stop. Stopped and joined on drop.
struct Peer {
    target: Target,
    stop: std::sync::Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Peer {
    fn start(cpu: usize, back: Target) -> anyhow::Result<Peer> {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel::<std::io::Result<Target>>();
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("oscost-signal".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let ready = oscost_sys::set_affinity(&[cpu])
                    .and_then(|()| sig::block_signal())
                    .map(|()| Target::me());
                let ok = ready.is_ok();
                let _ = tx.send(ready);
                if !ok {
                    return;
                }
                loop {
                    sig::wait();
                    if flag.load(Ordering::Acquire) {
                        break;
                    }
                    if sig::send(&back).is_err() {
                        break;
                    }
                }
            })
            .context("starting the signalled thread")?;
        oscost_sys::count_started_tasks(1);
        let mut peer = Peer {
            target: back,
            stop,
            handle: Some(handle),
        };
        peer.target = rx
            .recv()
            .context("the signalled thread ended before it was ready")?
            .with_context(|| format!("pinning the signalled thread to CPU {cpu}"))?;
        Ok(peer)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            // The signal stays pending until the thread waits again, so it cannot be lost.
            let _ = sig::send(&self.target);
            let _ = h.join();
        }
    }
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    if ctx.cpus.is_empty() {
        anyhow::bail!("--cpus: the CPU set is empty");
    }
    let p = plan(opts, ctx.quick);
    let sampler = SamplerConfig {
        samples: p.repeats,
        min_runs: ctx.sampler.min_runs.min(p.repeats),
        ..ctx.sampler
    };
    let ctx = &ctx.with_sampler(sampler);
    let cpu = ctx.first_cpu();
    let _pin = crate::cpuset::AffinityRestore::pin(&[cpu])?;
    let mut out = ExperimentOutput::default();
    out.params
        .insert("samples_per_case".into(), (p.repeats as u64).into());
    // Withdrawn on every way out of this function.
    let hold = crate::idle::hold(opts.idle_poll, &mut out);
    if hold.is_some()
        || p.kinds
            .iter()
            .any(|k| matches!(k, Kind::WakeCross | Kind::WakeProcessCross))
    {
        // What a waking case across CPUs depends on: how the idle one sleeps.
        out.params
            .insert("idle".into(), crate::idle::config(hold.is_some()));
    }
    ctx.progress.start(p.kinds.len() as u64, NAME);
    // Handlers, and the mask of this thread, put back on every way out.
    let handlers = Handlers::install()?;
    for &k in &p.kinds {
        ctx.progress.message(&k.id());
        match measure_kind(ctx, &handlers, k)? {
            Ok(c) => out.cases.push(c),
            Err(reason) => out.unavailable.push(Unavailable {
                id: k.id(),
                description: k.description().into(),
                reason,
            }),
        }
        ctx.progress.inc(1);
    }
    drop(handlers);
    for c in &out.cases {
        if c.unit == "round trip" {
            out.derived.push(DerivedSpec {
                id: ids::one_way(&c.id),
                description: format!("one wake-up by a signal: half of {}", c.id),
                terms: vec![(c.id.clone(), 0.5)],
                flagged: c
                    .checks
                    .iter()
                    .find(|k| !k.passed)
                    .map(|k| format!("{}: {} failed", c.id, k.name)),
            });
        }
    }
    ctx.progress.finish();
    Ok(out)
}

/// One case, or why it cannot be measured here.
fn measure_kind(ctx: &Context, h: &Handlers, k: Kind) -> anyhow::Result<Result<Case, String>> {
    let me = Target::me();
    let ops = Cell::new(0u64);
    let (caught0, segv0) = (sig::caught(), sig::segv_caught());
    let (result, threads) = match k {
        Kind::Install => {
            let (r, t) = sampler::counting_threads(|| sample(ctx, &ops, || h.reinstall()));
            (r, t)
        }
        Kind::Catch => {
            let (r, t) = sampler::counting_threads(|| sample(ctx, &ops, || h.catch_own(&me)));
            (r, t)
        }
        Kind::Segv => {
            let page = match ReadOnlyPage::new(h) {
                Ok(p) => p,
                Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
                    return Ok(Err(e.to_string()))
                }
                Err(e) => return Err(e.into()),
            };
            let (r, t) = sampler::counting_threads(|| {
                sample(ctx, &ops, || {
                    page.fault();
                    Ok(())
                })
            });
            (r, t)
        }
        Kind::WakeSame | Kind::WakeCross | Kind::WakeProcessSame | Kind::WakeProcessCross => {
            let peer_cpu = if k.same_cpu() {
                ctx.first_cpu()
            } else {
                match ctx.cpus.get(1) {
                    Some(&c) => c,
                    None => {
                        return Ok(Err(format!(
                            "needs a second CPU: --cpus {} has one",
                            ctx.first_cpu()
                        )))
                    }
                }
            };
            sig::block_signal()?;
            let both = first_occurrences(&[ctx.first_cpu(), peer_cpu]);
            if k.process() {
                let peer = sig::PeerProcess::start(peer_cpu, me)?;
                let (r, switches, idle) = round_trips(ctx, &ops, &peer.target(), &both);
                // Both processes' runs, counted before the child is stopped.
                let runs = sig::caught().saturating_sub(caught0) + peer.runs();
                let threads = sampler::threads_in_process();
                drop(peer);
                return Ok(Ok(finish_wake(
                    ctx, k, r?, &ops, runs, switches, &idle, peer_cpu, threads,
                )));
            }
            let peer = Peer::start(peer_cpu, me)?;
            let (r, switches, idle) = round_trips(ctx, &ops, &peer.target, &both);
            // Counted before the peer is stopped: its stop signal's run, which may land on
            // the other CPU at any moment after, is no round trip's.
            let runs = sig::caught().saturating_sub(caught0);
            let threads = sampler::threads_in_process();
            drop(peer);
            return Ok(Ok(finish_wake(
                ctx, k, r?, &ops, runs, switches, &idle, peer_cpu, threads,
            )));
        }
    };
    let (samples, said) = result?;
    let n = ops.get() as f64;
    let mut case = Case::new(k.id(), k.description(), "call", samples)
        .param("case", value_name(&k))
        .param("cpu", ctx.first_cpu() as u64);
    case.add_messages(said);
    match k {
        Kind::Install => case.checks.push(Check::near(
            "handler_installed",
            1.0,
            f64::from(u8::from(h.installed())),
            0.0,
            "sigaction(SIGUSR1, NULL, &old) after the samples names the handler installed",
        )),
        Kind::Catch => {
            let runs = (sig::caught() - caught0) as f64;
            case.counters
                .insert("handler_runs_per_op".into(), runs / n.max(1.0));
            case.checks.push(Check::near(
                "handler_runs_per_op",
                1.0,
                runs / n.max(1.0),
                0.0,
                &format!(
                    "runs counted in the handler, {runs}, against signals sent, {n}: every \
                     signal was delivered and handled before its call returned"
                ),
            ));
        }
        _ => {
            let runs = (sig::segv_caught() - segv0) as f64;
            case.counters
                .insert("segv_caught_per_op".into(), runs / n.max(1.0));
            case.checks.push(Check::near(
                "segv_caught_per_op",
                1.0,
                runs / n.max(1.0),
                0.0,
                &format!(
                    "SIGSEGVs of the read-only page caught in the handler, {runs}, against \
                     writes, {n}"
                ),
            ));
        }
    }
    case.checks.extend(sampler::single_task_check(threads));
    Ok(Ok(case))
}

/// A case's samples and what sampling them met.
type Sampled = (oscost_model::case::Samples, oscost_model::Messages);

/// Samples `op`, counting every operation run (calibration, warm-up and samples).
fn sample<'a>(
    ctx: &Context<'a>,
    ops: &'a Cell<u64>,
    op: impl FnMut() -> std::io::Result<()> + 'a,
) -> anyhow::Result<Sampled> {
    let mut r =
        sampler::measure_interleaved(ctx, vec![Job::new(ctx, op).counting_ops(ops)], &|| {})?;
    Ok(r.remove(0))
}

/// Round trips with `target` (a signal there, then `sigsuspend` until the answer's handler has
/// run) sampled: the samples, the measuring thread's switches and the entries into each idle
/// state of `cpus` over the same span.
fn round_trips(
    ctx: &Context,
    ops: &Cell<u64>,
    target: &Target,
    cpus: &[usize],
) -> (
    anyhow::Result<Sampled>,
    oscost_sys::spawn::Usage,
    Vec<(String, u64)>,
) {
    let (u0, idle0) = (oscost_sys::spawn::thread_usage(), crate::idle::usage(cpus));
    // A partner that never answers (stopped with SIGSTOP) leaves the wait to the signal that
    // stops the run, whose handler ends `sigsuspend`: the cancel flag is looked at around it,
    // so the run ends at once instead of at the coordinator's 5 s grace.
    let cancelled = || std::io::Error::new(std::io::ErrorKind::Interrupted, "interrupted");
    let r = sample(ctx, ops, || {
        if ctx.check_cancel().is_err() {
            return Err(cancelled());
        }
        sig::send(target)?;
        sig::wait();
        if ctx.check_cancel().is_err() {
            return Err(cancelled());
        }
        Ok(())
    });
    let switches = oscost_sys::spawn::thread_usage().since(u0);
    let idle = crate::idle::delta(&idle0, &crate::idle::usage(cpus));
    (r, switches, idle)
}

#[allow(clippy::too_many_arguments)]
fn finish_wake(
    ctx: &Context,
    k: Kind,
    (samples, said): Sampled,
    ops: &Cell<u64>,
    runs: u64,
    switches: oscost_sys::spawn::Usage,
    idle: &[(String, u64)],
    peer_cpu: usize,
    threads: Option<u64>,
) -> Case {
    let n = ops.get().max(1) as f64;
    let mut case = Case::new(k.id(), k.description(), "round trip", samples)
        .param("case", value_name(&k))
        .param("cpu", ctx.first_cpu() as u64)
        .param("peer_cpu", peer_cpu as u64);
    case.add_messages(said);
    let runs = runs as f64;
    let all = (switches.voluntary + switches.involuntary) as f64 / n;
    case.counters
        .insert("handler_runs_per_round_trip".into(), runs / n);
    case.counters.insert(
        "voluntary_switches_per_round_trip".into(),
        switches.voluntary as f64 / n,
    );
    case.counters.insert(
        "involuntary_switches_per_round_trip".into(),
        switches.involuntary as f64 / n,
    );
    // Entries into each idle state of the two CPUs over the same span: across CPUs, how often
    // a signal had to wake a halted CPU, which moves the figure between runs and machines.
    for (state, entries) in idle {
        case.counters
            .insert(format!("idle_{state}_per_round_trip"), *entries as f64 / n);
    }
    case.checks.push(Check::near(
        "handler_runs_per_round_trip",
        2.0,
        runs / n,
        0.01,
        &format!(
            "handler runs counted in both {}, {runs}, against round trips, {n}: each woke \
             the other once and was woken once",
            if k.process() { "processes" } else { "threads" }
        ),
    ));
    // On one CPU the woken thread may preempt the measuring one before it reaches
    // sigsuspend (an involuntary switch; the answer is then pending when it waits): either
    // way the measuring thread leaves the CPU once a round trip.
    case.checks.push(Check::near(
        "switches_per_round_trip",
        1.0,
        all,
        0.1,
        &format!(
            "getrusage(RUSAGE_THREAD) of the measuring thread: {} voluntary and {} involuntary \
             switches in {n} round trips; it left the CPU once each (within ±0.1)",
            switches.voluntary, switches.involuntary
        ),
    ));
    // The peer process is a task of its own: the measuring process has one thread.
    case.checks.extend(sampler::thread_check(
        threads,
        if k.process() { 1 } else { 2 },
    ));
    case
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::testing;
    use crate::skip::skip;
    use oscost_model::case::SINGLE_THREAD_CHECK;

    fn opts(extra: &[&str]) -> Options {
        engine::defaults(extra)
    }

    #[test]
    fn plans_put_the_one_task_cases_first() {
        let p = plan(&opts(&["--cases", "wake-cross,catch,catch"]), false);
        assert_eq!(p.kinds, [Kind::Catch, Kind::WakeCross]);
        assert_eq!(p.repeats, DEFAULT_REPEATS);
        assert_eq!(plan(&opts(&[]), true).repeats, QUICK_REPEATS);
        let ids: Vec<String> = Kind::ALL.iter().map(|k| k.id()).collect();
        assert_eq!(
            ids,
            [
                "signal.install",
                "signal.catch",
                "signal.segv",
                "signal.wake.same",
                "signal.wake.cross",
                "signal.wake.process.same",
                "signal.wake.process.cross"
            ]
        );
        assert!(parse_repeats("2").is_err() && parse_repeats("x").is_err());
    }

    /// One run at a time: a process has one set of signal handlers.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// --idle-poll: the request held (root) or said not to be, the idle configuration
    /// recorded, and no entry into a halting state while the CPUs were held polling.
    #[test]
    fn idle_poll_keeps_the_cross_case_from_halting() {
        let _g = serial();
        testing::with_tiny_ctx(|ctx| {
            if ctx.cpus.len() < 2 {
                return skip("needs two CPUs for a case across CPUs");
            }
            let o = opts(&["--cases", "wake-cross", "--repeats", "3", "--idle-poll"]);
            let out = run(&o, ctx).unwrap();
            let held = out.params["idle"]["idle_poll_held"].as_bool().unwrap();
            let refused = out
                .warnings
                .iter()
                .any(|w| w.as_str().starts_with("--idle-poll not in force"));
            assert_eq!(held, !refused, "{:?}", out.warnings);
            let c = &out.cases[0];
            let halting = c.counters.iter().filter(|(k, _)| {
                k.starts_with("idle_")
                    && k.ends_with("_per_round_trip")
                    && !k.starts_with("idle_poll_")
            });
            if held {
                for (k, v) in halting {
                    assert_eq!(*v, 0.0, "{k} while held polling: {c:?}");
                }
            }
        });
    }

    /// Every case at a tiny size: each signal counted where it was handled, and the waking
    /// cases' switches; the handler gone afterwards.
    #[test]
    fn a_tiny_run_counts_every_signal() {
        let _g = serial();
        testing::with_tiny_ctx(|ctx| {
            let out = run(&opts(&["--repeats", "3"]), ctx).unwrap();
            let n = out.cases.len() + out.unavailable.len();
            assert_eq!(n, 7, "{out:?}");
            for c in &out.cases {
                assert!(c.samples.per_op_ns.iter().all(|&v| v > 0.0), "{}", c.id);
                for k in c.checks.iter().filter(|k| k.name != SINGLE_THREAD_CHECK) {
                    // Switches depend on the machine when the test harness runs beside it.
                    if k.name != "switches_per_round_trip" {
                        assert!(k.passed, "{}: {k:?}", c.id);
                    }
                }
            }
            // Each waking case counts its CPUs' idle entries where the kernel has cpuidle.
            let has_cpuidle =
                std::path::Path::new("/sys/devices/system/cpu/cpu0/cpuidle/state0").exists();
            for c in out.cases.iter().filter(|c| c.id.contains(".wake.")) {
                let idle = c
                    .counters
                    .iter()
                    .filter(|(k, _)| k.starts_with("idle_") && k.ends_with("_per_round_trip"));
                assert_eq!(idle.clone().count() > 0, has_cpuidle, "{c:?}");
                assert!(idle.into_iter().all(|(_, v)| v.is_finite() && *v >= 0.0));
            }
            let crossed = (out.cases.iter().map(|c| &c.id))
                .chain(out.unavailable.iter().map(|u| &u.id))
                .any(|id| id.ends_with(".cross"));
            assert_eq!(out.params.contains_key("idle"), crossed);
            assert!(out
                .derived
                .iter()
                .any(|d| d.id == "signal.wake.same.one_way"));
            assert!(out
                .derived
                .iter()
                .any(|d| d.id == "signal.wake.process.same.one_way"));
        });
    }
}
