//! `seccomp`: what a seccomp filter adds to every system call, as a container's sandbox
//! installs them: none, one filter the kernel's action cache answers, one and eight filters
//! that read an argument (which the cache cannot answer), and a runtime-like allow-list of
//! about 300 calls as one filter.
//!
//! A filter cannot be removed, so each filter set lives in a forked child of its own, which
//! sets `no_new_privs` (no privilege needed), installs its filters, reads back how many it runs
//! under from `/proc/self/status`, and times batches of `getpid` or `fstat` itself when the
//! parent asks; the parent's sampler drives every child in interleaved rounds.

use crate::context::Context;
use crate::engine::{self, first_occurrences, value_name};
use crate::sampler::{self, measure_interleaved, Job};
use anyhow::Context as _;
use oscost_model::case::{Case, Check, DerivedSpec, ExperimentOutput, Unavailable};
use oscost_model::Message;
use oscost_sys::clock::Clock;
use oscost_sys::seccomp::{self as sc, Board, Program, SetupStep};
use oscost_sys::task::{CpuMask, Kind, Team};
use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

/// Subcommand name and id prefix.
pub const NAME: &str = "seccomp";

/// Filters stacked in the `args-8` set.
const STACKED: usize = 8;

/// The filter sets, each installed in a child of its own.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Set {
    /// no filter (no_new_privs only): the bare call
    None,
    /// one filter allowing every call: the kernel's action cache answers it
    #[value(name = "allow-1")]
    Allow1,
    /// one filter that reads an argument: runs on every call
    #[value(name = "args-1")]
    Args1,
    /// eight stacked filters that read an argument
    #[value(name = "args-8")]
    Args8,
    /// a runtime-like allow-list of about 300 calls as one filter
    Profile,
}

impl Set {
    const ALL: [Set; 5] = [Set::None, Set::Allow1, Set::Args1, Set::Args8, Set::Profile];

    /// The filters of the set; `None` when this architecture has no profile list.
    fn programs(self) -> Option<Vec<Program>> {
        Some(match self {
            Set::None => Vec::new(),
            Set::Allow1 => vec![Program::allow_all()],
            Set::Args1 => vec![Program::reads_argument()],
            Set::Args8 => vec![Program::reads_argument(); STACKED],
            Set::Profile => vec![Program::profile()?],
        })
    }

    fn filters(self) -> usize {
        match self {
            Set::None => 0,
            Set::Args8 => STACKED,
            _ => 1,
        }
    }

    fn description(self) -> &'static str {
        match self {
            Set::None => "no filter (no_new_privs set)",
            Set::Allow1 => "one filter allowing every call (answered by the action cache)",
            Set::Args1 => "one filter reading the first argument",
            Set::Args8 => "eight stacked filters reading the first argument",
            Set::Profile => "a runtime-like allow-list of about 300 calls as one filter",
        }
    }
}

/// The calls timed under each set.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Call {
    /// syscall(SYS_getpid): the kernel's shortest path
    Getpid,
    /// syscall(SYS_fstat) of /dev/null: a call that does some work
    Fstat,
}

impl Call {
    fn sys(self) -> sc::Call {
        match self {
            Call::Getpid => sc::Call::Getpid,
            Call::Fstat => sc::Call::Fstat,
        }
    }

    fn description(self) -> &'static str {
        match self {
            Call::Getpid => "syscall(SYS_getpid)",
            Call::Fstat => "syscall(SYS_fstat) of /dev/null",
        }
    }
}

/// Options of `oscost seccomp`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Filter sets, comma-separated (default: all)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "SET,...")]
    pub sets: Vec<Set>,

    /// Calls timed under each set, comma-separated (default: getpid,fstat)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CALL,...")]
    pub calls: Vec<Call>,

    /// The suite's shorter sampling (`oscost run` passes it)
    #[arg(long, hide = true)]
    pub suite_size: bool,
}

/// What a run measures, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    sets: Vec<Set>,
    calls: Vec<Call>,
}

fn plan(opts: &Options) -> Plan {
    let sets = if opts.sets.is_empty() {
        Set::ALL.to_vec()
    } else {
        first_occurrences(&opts.sets)
    };
    let calls = if opts.calls.is_empty() {
        vec![Call::Getpid, Call::Fstat]
    } else {
        first_occurrences(&opts.calls)
    };
    Plan { sets, calls }
}

fn case_id(set: Set, call: Call) -> String {
    format!("{NAME}.{}.{}", value_name(&set), value_name(&call))
}

/// The suite's sampling: every case keeps the interleaved rounds, with fewer and shorter
/// samples so ten cases fit the suite's share of time.
fn suite_sampler(s: sampler::SamplerConfig) -> sampler::SamplerConfig {
    sampler::SamplerConfig {
        samples: s.samples.min(21),
        warmup: s.warmup.min(Duration::from_millis(10)),
        min_sample: s.min_sample.min(Duration::from_millis(1)),
        budget: s.budget.min(Duration::from_millis(150)),
        min_runs: s.min_runs,
    }
}

/// What the parent process itself runs under before any child is made.
fn inherited_note(parent: &sc::Status) -> Option<Message> {
    match (parent.mode, parent.filters) {
        (Some(0), _) | (None, _) => None,
        (Some(2), f) => Some(Message::from(format!(
            "oscost itself already runs under seccomp ({} filter(s), a container's or a \
             sandbox's): every child inherits them, so every figure, `none` included, is a \
             figure under those filters, and the others add theirs on top",
            f.map_or("an unknown number of".to_owned(), |f| f.to_string())
        ))),
        (Some(m), _) => Some(Message::from(format!(
            "oscost itself runs in seccomp mode {m}: every figure is one under it"
        ))),
    }
}

fn setup_error(set: Set, errno: i32, step: SetupStep) -> String {
    let e = std::io::Error::from_raw_os_error(errno);
    match step {
        SetupStep::NoNewPrivs => format!("prctl(PR_SET_NO_NEW_PRIVS) refused: {e}"),
        SetupStep::Filter(k) => format!("installing filter {k} of {} refused: {e}", set.filters()),
    }
}

impl engine::Experiment for Options {
    const NAME: &'static str = NAME;
    const SUMMARY: &'static str =
        "What seccomp filters add to each system call: cached, argument-reading, stacked, profile";
    const ABOUT: &'static str = "What a seccomp filter adds to every system call, the way a \
container's sandbox installs them: no filter, one filter allowing every call (the kernel's \
per-call action cache answers it without running it), one and eight stacked filters that read \
the call's first argument (which the cache cannot answer, so each runs on every call), and a \
runtime-like allow-list of about 300 calls as one filter, written for oscost. getpid and fstat \
are timed under each, to show the cost is per call, not per work; the derived figures give the \
cost over no filter and, for the stacked filters, per filter.

A filter cannot be removed, so each set lives in a forked child pinned to the first CPU: it \
sets no_new_privs (no privilege is needed), installs its filters, reads back from \
/proc/self/status how many it runs under (checked against the set), and times the batches the \
parent's sampler asks for, reading the counter itself, in interleaved rounds. Every call's \
result is counted: a refused call flags its figure. A filter oscost itself already runs under \
(a container's) is detected and said: every figure is then one under it.\n\nTakes about 1 s \
(0.9 s in the suite); --quick about 0.2 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    const SUITE_ARGS: &'static [&'static str] = &["--suite-size"];
    const QUICK_SUITE_ARGS: &'static [&'static str] = &["--calls", "getpid"];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }
}

/// One case being sampled: its set's child and the counts kept outside the timing.
struct Slot {
    set: Set,
    call: Call,
    child: usize,
    calls: Cell<u64>,
    failed: Cell<u64>,
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    if ctx.cpus.is_empty() {
        anyhow::bail!("--cpus: the CPU set is empty");
    }
    if ctx.clock.scripted().is_some() {
        anyhow::bail!("{NAME} needs the real clock: its children read the counter themselves");
    }
    let p = plan(opts);
    let sampler_cfg = if opts.suite_size {
        suite_sampler(ctx.sampler)
    } else {
        ctx.sampler
    };
    let ctx = &Context {
        clock: ctx.clock,
        sampler: sampler_cfg,
        quick: ctx.quick,
        cpus: ctx.cpus.clone(),
        progress: ctx.progress,
        cancel: ctx.cancel,
    };
    let parent = sc::read_status();
    let inherited = match parent.mode {
        Some(2) => parent.filters,
        _ => Some(0),
    };
    let mut out = ExperimentOutput::default();
    out.params.insert(
        "inherited_filters".into(),
        inherited.map_or(serde_json::Value::Null, Into::into),
    );
    if let Some(note) = inherited_note(&parent) {
        out.warnings.push(note);
    }

    let mut sets = Vec::new();
    let mut programs = Vec::new();
    for &s in &p.sets {
        match s.programs() {
            Some(prog) => {
                sets.push(s);
                programs.push(prog);
            }
            None => {
                for &c in &p.calls {
                    out.unavailable.push(Unavailable {
                        id: case_id(s, c),
                        description: s.description().into(),
                        reason: "oscost has no profile list for this architecture".into(),
                    });
                }
            }
        }
    }
    let cpu = ctx.first_cpu();
    oscost_sys::set_affinity(&[cpu]).with_context(|| format!("pinning to CPU {cpu}"))?;
    let board = Arc::new(Board::new(programs, Clock::from_info(ctx.clock.info()))?);
    let halt = Arc::clone(&board);
    let mut team = Team::new(Kind::Processes, sets.len(), 0, move || halt.halt());
    let mask = CpuMask::new(&[cpu])?;
    for i in 0..sets.len() {
        team.spawn(Some(&mask), &board, i)?;
    }
    team.watch()?;

    let mut slots = Vec::new();
    let mut setups = Vec::new();
    for (i, &s) in sets.iter().enumerate() {
        let setup = board
            .wait_ready(i, Duration::from_secs(10))
            .map_err(|e| team.check().err().unwrap_or_else(|| e.into()))?;
        if let Some((errno, step)) = setup.failed {
            for &c in &p.calls {
                out.unavailable.push(Unavailable {
                    id: case_id(s, c),
                    description: s.description().into(),
                    reason: setup_error(s, errno, step),
                });
            }
            continue;
        }
        setups.push((s, setup));
        for &c in &p.calls {
            slots.push(Slot {
                set: s,
                call: c,
                child: i,
                calls: Cell::new(0),
                failed: Cell::new(0),
            });
        }
    }

    ctx.progress
        .start((slots.len() * (ctx.sampler.samples + 1)) as u64, NAME);
    let board_ref = &*board;
    let team_ref = &team;
    let jobs: Vec<Job> = slots
        .iter()
        .map(|s| {
            let (child, call) = (s.child, s.call.sys());
            Job::from_batches(
                move |n| {
                    let b = board_ref
                        .time(child, call, n)
                        .map_err(|e| team_ref.check().err().unwrap_or_else(|| e.into()))?;
                    s.calls.set(s.calls.get() + n);
                    s.failed.set(s.failed.get() + b.failed);
                    Ok(b.ticks)
                },
                move |n| {
                    board_ref
                        .time(child, sc::Call::Empty, n)
                        .map(|b| b.ticks)
                        .map_err(|e| team_ref.check().err().unwrap_or_else(|| e.into()))
                },
            )
        })
        .collect();
    let results = measure_interleaved(ctx, jobs, &|| ctx.progress.inc(1))?;
    ctx.progress.finish();
    team.finish()?;

    for (s, (samples, said)) in slots.iter().zip(results) {
        let setup = setups
            .iter()
            .find(|(set, _)| *set == s.set)
            .map(|(_, setup)| *setup)
            .context("a measured set without its set-up")?;
        let mut case = Case::new(
            case_id(s.set, s.call),
            format!("{} under {}", s.call.description(), s.set.description()),
            "call",
            samples,
        )
        .param("set", value_name(&s.set))
        .param("call", value_name(&s.call))
        .param("filters", s.set.filters() as u64)
        .param("cpu", cpu as u64);
        case.add_messages(said);
        finish_case(&mut case, s, &setup.status, inherited);
        out.cases.push(case);
    }
    out.derived = derived(&out.cases);
    Ok(out)
}

/// The checks of one case: the filters its child runs under, every timed call allowed, one
/// thread.
fn finish_case(case: &mut Case, s: &Slot, status: &sc::Status, inherited: Option<u64>) {
    let own = s.set.filters() as u64;
    match (status.filters, inherited) {
        (Some(f), Some(before)) => {
            case.counters.insert("seccomp_filters".into(), f as f64);
            case.checks.push(Check::near(
                "seccomp_filters",
                (before + own) as f64,
                f as f64,
                0.0,
                &format!(
                    "Seccomp_filters in the measuring child's /proc/self/status: {f}; the set \
                     installs {own} on top of the {before} oscost itself runs under"
                ),
            ));
        }
        _ => case.notes.push(Message::from(
            "this kernel shows no Seccomp_filters in /proc/self/status (Linux 5.9 and later \
             do), so the filters installed are not counted",
        )),
    }
    let calls = s.calls.get();
    let failed = s.failed.get();
    case.counters.insert(
        "refused_calls_per_call".into(),
        failed as f64 / calls.max(1) as f64,
    );
    case.checks.push(Check::near(
        "refused_calls",
        0.0,
        failed as f64,
        0.0,
        &format!(
            "{failed} of the {calls} timed calls returned an error: every call must have been \
             allowed through the filters and done"
        ),
    ));
    if let Some(c) = sampler::single_task_check(status.threads) {
        case.checks.push(c);
    }
}

/// The cost each set adds over the bare call, and per filter for the stacked sets.
fn derived(cases: &[Case]) -> Vec<DerivedSpec> {
    let mut out = Vec::new();
    for call in [Call::Getpid, Call::Fstat] {
        let find = |set: Set| cases.iter().find(|c| c.id == case_id(set, call));
        let Some(none) = find(Set::None) else {
            continue;
        };
        let flag = |a: &Case, b: &Case| {
            let f: Vec<String> = [a, b]
                .into_iter()
                .filter_map(|c| engine::failed_checks(c).map(|f| format!("{}: {f}", c.id)))
                .collect();
            (!f.is_empty()).then(|| f.join("; "))
        };
        for set in [Set::Allow1, Set::Args1, Set::Args8, Set::Profile] {
            let Some(c) = find(set) else { continue };
            out.push(DerivedSpec {
                id: format!("{}.over_none", c.id),
                description: format!(
                    "what {} adds to {} over no filter",
                    set.description(),
                    call.description()
                ),
                terms: vec![(c.id.clone(), 1.0), (none.id.clone(), -1.0)],
                flagged: flag(c, none),
            });
        }
        if let Some(c) = find(Set::Args8) {
            let k = 1.0 / STACKED as f64;
            out.push(DerivedSpec {
                id: format!("{}.per_filter", c.id),
                description: format!(
                    "each of eight stacked argument-reading filters, on {}: their cost over \
                     no filter, divided by eight",
                    call.description()
                ),
                terms: vec![(c.id.clone(), k), (none.id.clone(), -k)],
                flagged: flag(c, none),
            });
            if let Some(one) = find(Set::Args1) {
                let k = 1.0 / (STACKED - 1) as f64;
                out.push(DerivedSpec {
                    id: format!("{}.per_added_filter", c.id),
                    description: format!(
                        "each filter stacked after the first, on {}: eight filters over one, \
                         divided by seven (the first also pays for entering seccomp)",
                        call.description()
                    ),
                    terms: vec![(c.id.clone(), k), (one.id.clone(), -k)],
                    flagged: flag(c, one),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::testing;
    use oscost_model::case::SINGLE_THREAD_CHECK;

    fn opts(extra: &[&str]) -> Options {
        engine::defaults(extra)
    }

    #[test]
    fn plans_and_ids() {
        let p = plan(&opts(&[]));
        assert_eq!(p.sets, Set::ALL);
        assert_eq!(p.calls, [Call::Getpid, Call::Fstat]);
        assert_eq!(case_id(Set::Allow1, Call::Getpid), "seccomp.allow-1.getpid");
        assert_eq!(case_id(Set::Args8, Call::Fstat), "seccomp.args-8.fstat");
        let p = plan(&opts(&["--sets", "args-8,none,args-8", "--calls", "fstat"]));
        assert_eq!(p.sets, [Set::Args8, Set::None]);
        assert_eq!(p.calls, [Call::Fstat]);
    }

    #[test]
    fn an_inherited_filter_is_said() {
        let none = sc::Status {
            mode: Some(0),
            filters: Some(0),
            threads: Some(1),
        };
        assert!(inherited_note(&none).is_none());
        let contained = sc::Status {
            mode: Some(2),
            filters: Some(2),
            ..none
        };
        let said = inherited_note(&contained).unwrap();
        assert!(said.contains("2 filter(s)"), "{said}");
    }

    #[test]
    fn a_tiny_run_counts_each_sets_filters_and_derives_the_costs() {
        testing::with_tiny_ctx(|ctx| {
            let out = run(&opts(&["--calls", "getpid"]), ctx).unwrap();
            let ids: Vec<&str> = out.cases.iter().map(|c| c.id.as_str()).collect();
            let mut want = vec![
                "seccomp.none.getpid",
                "seccomp.allow-1.getpid",
                "seccomp.args-1.getpid",
                "seccomp.args-8.getpid",
            ];
            if Program::profile().is_some() {
                want.push("seccomp.profile.getpid");
            }
            assert_eq!(ids, want);
            let inherited = out.params["inherited_filters"].as_u64();
            for c in &out.cases {
                assert!(
                    c.samples.per_op_ns.len() >= sampler::MIN_SAMPLES,
                    "{}",
                    c.id
                );
                assert!(
                    c.samples.per_op_ns.iter().all(|v| v.is_finite()),
                    "{}",
                    c.id
                );
                // Each child is a fresh single-threaded process, even under the test harness.
                for k in &c.checks {
                    assert!(k.passed, "{}: {k:?}", c.id);
                }
                assert!(c.checks.iter().any(|k| k.name == SINGLE_THREAD_CHECK));
                assert!(c.checks.iter().any(|k| k.name == "refused_calls"));
                if let (Some(f), Some(before)) = (c.counters.get("seccomp_filters"), inherited) {
                    let own = c.params["filters"].as_u64().unwrap();
                    assert_eq!(*f as u64, before + own, "{}", c.id);
                }
            }
            let derived: Vec<&str> = out.derived.iter().map(|d| d.id.as_str()).collect();
            assert!(derived.contains(&"seccomp.args-8.getpid.per_filter"));
            assert!(derived.contains(&"seccomp.args-8.getpid.per_added_filter"));
            assert!(derived.contains(&"seccomp.allow-1.getpid.over_none"));
            assert!(out.derived.iter().all(|d| d.flagged.is_none()));
        });
    }
}
