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
use crate::seccomp_file::ProfileFile;
use anyhow::Context as _;
use oscost_model::case::{Case, Check, DerivedSpec, ExperimentOutput, Unavailable};
use oscost_model::ids::seccomp as ids;
use oscost_model::Message;
use oscost_sys::clock::Clock;
use oscost_sys::seccomp::{self as sc, Board, Program, SetupStep};
use oscost_sys::task::{CpuMask, Kind, Team};
use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

/// Subcommand name and id prefix.
pub const NAME: &str = ids::NAME;

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
    /// getpid handed to a supervisor process (SECCOMP_RET_USER_NOTIF), on the same CPU and on
    /// another
    Notify,
    /// The profile file of `--profile`, compiled into one filter (not a value of `--sets`).
    #[value(skip)]
    File,
}

impl Set {
    const ALL: [Set; 6] = [
        Set::None,
        Set::Allow1,
        Set::Args1,
        Set::Args8,
        Set::Profile,
        Set::Notify,
    ];

    /// The filters of the set (`file` the profile file's, compiled); `None` when this
    /// architecture has no profile list.
    fn programs(self, file: Option<&Program>) -> Option<Vec<Program>> {
        Some(match self {
            Set::File => vec![file?.clone()],
            Set::None => Vec::new(),
            Set::Allow1 => vec![Program::allow_all()],
            Set::Args1 => vec![Program::reads_argument()],
            Set::Args8 => vec![Program::reads_argument(); STACKED],
            Set::Profile => vec![Program::profile()?],
            // Its one filter is the supervisor's, installed last (see `Unit::child`).
            Set::Notify => Vec::new(),
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
            Set::Notify => "a filter handing getpid to a supervisor process",
            Set::File => "the profile file's filter",
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

/// Where the supervisor of `notify` runs, against the timing child's CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Same,
    Cross,
}

/// One child: a set, and for `notify` where its supervisor runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Unit {
    set: Set,
    place: Option<Place>,
}

impl Unit {
    /// The calls timed in this child: `notify` answers getpid only.
    fn calls(self, calls: &[Call]) -> Vec<Call> {
        match self.place {
            Some(_) => vec![Call::Getpid],
            None => calls.to_vec(),
        }
    }

    fn id(self, call: Call) -> String {
        match self.place {
            Some(Place::Same) => ids::Id::Notify("same").to_string(),
            Some(Place::Cross) => ids::Id::Notify("cross").to_string(),
            None => case_id(self.set, call),
        }
    }

    fn description(self, call: Call) -> String {
        match self.place {
            Some(Place::Same) => "getpid answered by a supervisor process on the same CPU \
                                  (SECCOMP_RET_USER_NOTIF): the round trip"
                .into(),
            Some(Place::Cross) => "getpid answered by a supervisor process on another CPU \
                                   (SECCOMP_RET_USER_NOTIF): the round trip"
                .into(),
            None => format!("{} under {}", call.description(), self.set.description()),
        }
    }

    /// What the child installs, its supervisor on `cpus[0]` (same) or `cpus[1]` (cross);
    /// `None` when this architecture has no such filter.
    fn child(self, cpus: &[usize], file: Option<&Program>) -> anyhow::Result<Option<sc::Child>> {
        let Some(filters) = self.set.programs(file) else {
            return Ok(None);
        };
        let notify = match self.place {
            None => None,
            Some(place) => {
                let i = usize::from(place == Place::Cross);
                let cpu = *cpus.get(i).context("no CPU for the supervisor")?;
                Some((Program::notify_getpid(), CpuMask::new(&[cpu])?))
            }
        };
        Ok(Some(sc::Child { filters, notify }))
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

    /// Also time a seccomp profile in Docker's JSON format (moby's `default.json` and the
    /// like), compiled for this machine into one filter: its cases are `seccomp.file.<call>`,
    /// beside `seccomp.none.<call>`, with the file's name and SHA-256 as parameters
    #[arg(long, value_name = "FILE.json")]
    pub profile: Option<std::path::PathBuf>,

    /// The suite's shorter sampling (`oscost run` passes it)
    #[arg(long, hide = true)]
    pub suite_size: bool,
}

/// What a run measures, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    sets: Vec<Set>,
    calls: Vec<Call>,
    units: Vec<Unit>,
    /// Why `notify.cross` cannot be measured, when it was asked for and cannot.
    no_cross: Option<String>,
}

fn plan(opts: &Options, cpus: usize) -> Plan {
    let mut sets = if opts.sets.is_empty() {
        Set::ALL.to_vec()
    } else {
        first_occurrences(&opts.sets)
    };
    if opts.profile.is_some() {
        // A profile file's price is what it adds over no filter: the bare call is timed too.
        if !sets.contains(&Set::None) {
            sets.insert(0, Set::None);
        }
        sets.push(Set::File);
    }
    let calls = if opts.calls.is_empty() {
        vec![Call::Getpid, Call::Fstat]
    } else {
        first_occurrences(&opts.calls)
    };
    let mut units = Vec::new();
    let mut no_cross = None;
    for &set in &sets {
        if set != Set::Notify {
            units.push(Unit { set, place: None });
            continue;
        }
        units.push(Unit {
            set,
            place: Some(Place::Same),
        });
        if cpus >= 2 {
            units.push(Unit {
                set,
                place: Some(Place::Cross),
            });
        } else {
            no_cross = Some(
                "the CPU set has one CPU, so the supervisor cannot run on another; use --cpus \
                 with two CPUs"
                    .to_owned(),
            );
        }
    }
    Plan {
        sets,
        calls,
        units,
        no_cross,
    }
}

/// A batch's error as the run says it: the run interrupted (a stopped supervisor never
/// answers, so the wait gives up on Ctrl-C), a child's failure the team saw, or `e`.
fn failed(e: std::io::Error, team: &Team, ctx: &Context) -> anyhow::Error {
    if ctx.check_cancel().is_err() {
        return crate::context::Cancelled.into();
    }
    team.check().err().unwrap_or_else(|| e.into())
}

/// The set as ids and parameters name it.
fn set_name(set: Set) -> String {
    match set {
        Set::File => ids::FILE_SET.to_owned(),
        _ => value_name(&set),
    }
}

fn case_id(set: Set, call: Call) -> String {
    ids::Id::Filtered {
        set: &set_name(set),
        call: &value_name(&call),
    }
    .to_string()
}

/// The suite's sampling: every case keeps the interleaved rounds, with fewer and shorter
/// samples so ten cases fit the suite's share of time.
fn suite_sampler(s: sampler::SamplerConfig) -> sampler::SamplerConfig {
    s.for_suite(21, Duration::from_millis(10), Duration::from_millis(150))
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
        SetupStep::Supervisor => {
            format!("installing the supervisor's filter or starting the supervisor failed: {e}")
        }
    }
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Seccomp;
    const SUMMARY: &'static str =
        "What seccomp filters add to each system call, and a supervisor's round trip";
    const ABOUT: &'static str = "What a seccomp filter adds to every system call, the way a \
container's sandbox installs them: no filter, one filter allowing every call (the kernel's \
per-call action cache answers it without running it), one and eight stacked filters that read \
the call's first argument (which the cache cannot answer, so each runs on every call), and a \
runtime-like allow-list of about 300 calls as one filter, written for oscost. getpid and fstat \
are timed under each, to show the cost is per call, not per work; the derived figures give the \
cost over no filter and, for the stacked filters, per filter. notify times the round trip of a \
getpid that a filter hands to a supervisor process (SECCOMP_RET_USER_NOTIF), on the same CPU \
and on the second CPU of the set, with the answers and the child's switches counted. --profile \
FILE.json adds a profile in Docker's JSON format, compiled for this machine into one filter: \
its cases are seccomp.file.<call>, with the file's name and SHA-256, the price `oscost bill show \
--predict-under seccomp=FILE.json` looks up by content.

A filter cannot be removed, so each set lives in a forked child pinned to the first CPU: it \
sets no_new_privs (no privilege is needed), installs its filters, reads back from \
/proc/self/status how many it runs under (checked against the set), and times the batches the \
parent's sampler asks for, reading the counter itself, in interleaved rounds. Every call's \
result is counted: a refused call flags its figure. A filter oscost itself already runs under \
(a container's) is detected and said: every figure is then one under it.\n\nTakes about 5.5 s \
(0.5 s in the suite); --quick about 0.3 s (0.2 s in a quick suite) on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    const SUITE_ARGS: &'static [&'static str] = &["--suite-size"];
    const QUICK_SUITE_ARGS: &'static [&'static str] = &["--calls", "getpid"];

    fn preflight(&self, _quick: bool, _limits: &crate::limits::Limits) -> anyhow::Result<()> {
        // A bad file is refused in one line before anything is measured.
        profile_file(self).map(|_| ())
    }

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }
}

/// The `--profile` file, read and compiled for this machine.
fn profile_file(opts: &Options) -> anyhow::Result<Option<(ProfileFile, sc::Compiled)>> {
    let Some(path) = &opts.profile else {
        return Ok(None);
    };
    let f = ProfileFile::read(path)?;
    let c = f.compile()?;
    Ok(Some((f, c)))
}

/// Why the profile file's cost cannot be timed on `call`, when the file refuses it: a refused
/// call never reaches the kernel's work, so its time is not what the filter adds to one that
/// runs.
fn refuses((f, c): &(ProfileFile, sc::Compiled), call: Call) -> Option<String> {
    use oscost_model::seccomp_profile::{verdict, Verdict};
    let name = value_name(&call);
    match verdict(&f.profile, &c.chosen, &name) {
        Verdict::Refused(action, _) => Some(format!(
            "{} refuses {name} ({}): what the filter adds to a call is timed on calls it lets \
             through",
            f.file_name(),
            action.name()
        )),
        _ => None,
    }
}

/// One case being sampled: its child and the counts kept outside the timing.
struct Slot {
    unit: Unit,
    call: Call,
    child: usize,
    calls: Cell<u64>,
    failed: Cell<u64>,
    voluntary: Cell<u64>,
    involuntary: Cell<u64>,
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    if ctx.cpus.is_empty() {
        anyhow::bail!("--cpus: the CPU set is empty");
    }
    if ctx.clock.scripted().is_some() {
        anyhow::bail!("{NAME} needs the real clock: its children read the counter themselves");
    }
    let p = plan(opts, ctx.cpus.len());
    let file = profile_file(opts)?;
    let sampler_cfg = if opts.suite_size {
        suite_sampler(ctx.sampler)
    } else {
        ctx.sampler
    };
    let ctx = &ctx.with_sampler(sampler_cfg);
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
    if let Some((f, c)) = &file {
        out.params
            .insert(ids::PROFILE_FILE.into(), f.file_name().into());
        out.params
            .insert(ids::PROFILE_DIGEST.into(), f.digest.clone().into());
        out.params.insert(
            "profile_instructions".into(),
            (c.program.len() as u64).into(),
        );
        if !c.ignored.is_empty() {
            out.notes.push(Message::from(format!(
                "{}: {} of its call names are not calls of this architecture and were left \
                 out, as libseccomp leaves them out: {}",
                f.file_name(),
                c.ignored.len(),
                c.ignored.join(", ")
            )));
        }
    }
    let unavailable = |u: Unit, calls: &[Call], reason: &str| -> Vec<Unavailable> {
        u.calls(calls)
            .into_iter()
            .map(|c| Unavailable {
                id: u.id(c),
                description: u.description(c),
                reason: reason.to_owned(),
            })
            .collect()
    };
    if let Some(why) = &p.no_cross {
        let cross = Unit {
            set: Set::Notify,
            place: Some(Place::Cross),
        };
        out.unavailable.extend(unavailable(cross, &p.calls, why));
    }

    let mut units = Vec::new();
    let mut children = Vec::new();
    for &u in &p.units {
        match u.child(&ctx.cpus, file.as_ref().map(|(_, c)| &c.program))? {
            Some(child) => {
                units.push(u);
                children.push(child);
            }
            None => out.unavailable.extend(unavailable(
                u,
                &p.calls,
                "oscost has no profile list for this architecture",
            )),
        }
    }
    let cpu = ctx.first_cpu();
    oscost_sys::set_affinity(&[cpu]).with_context(|| format!("pinning to CPU {cpu}"))?;
    let board = Arc::new(Board::new(children, Clock::from_info(ctx.clock.info()))?);
    let halt = Arc::clone(&board);
    let mut team = Team::new(Kind::Processes, units.len(), 0, move || halt.halt());
    let mask = CpuMask::new(&[cpu])?;
    for i in 0..units.len() {
        team.spawn(Some(&mask), &board, i)?;
    }
    team.watch()?;

    let mut slots = Vec::new();
    let mut setups = Vec::new();
    for (i, &u) in units.iter().enumerate() {
        let setup = board
            .wait_ready(i, Duration::from_secs(10))
            .map_err(|e| team.check().err().unwrap_or_else(|| e.into()))?;
        if let Some((errno, step)) = setup.failed {
            let why = setup_error(u.set, errno, step);
            out.unavailable.extend(unavailable(u, &p.calls, &why));
            continue;
        }
        setups.push((i, setup));
        for c in u.calls(&p.calls) {
            if let (Set::File, Some(why)) = (u.set, file.as_ref().and_then(|f| refuses(f, c))) {
                out.unavailable.push(Unavailable {
                    id: u.id(c),
                    description: u.description(c),
                    reason: why,
                });
                continue;
            }
            slots.push(Slot {
                unit: u,
                call: c,
                child: i,
                calls: Cell::new(0),
                failed: Cell::new(0),
                voluntary: Cell::new(0),
                involuntary: Cell::new(0),
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
                        .time(child, call, n, ctx.cancel)
                        .map_err(|e| failed(e, team_ref, ctx))?;
                    s.calls.set(s.calls.get() + n);
                    s.failed.set(s.failed.get() + b.failed);
                    s.voluntary.set(s.voluntary.get() + b.voluntary);
                    s.involuntary.set(s.involuntary.get() + b.involuntary);
                    Ok(b.ticks)
                },
                move |n| {
                    board_ref
                        .time(child, sc::Call::Empty, n, ctx.cancel)
                        .map(|b| b.ticks)
                        .map_err(|e| failed(e, team_ref, ctx))
                },
            )
        })
        .collect();
    let results = measure_interleaved(ctx, jobs, &|| ctx.progress.inc(1))?;
    ctx.progress.finish();
    let answered: Vec<u64> = (0..units.len()).map(|i| board.answered(i)).collect();
    team.finish()?;

    for (s, (samples, said)) in slots.iter().zip(results) {
        let setup = setups
            .iter()
            .find(|(i, _)| *i == s.child)
            .map(|(_, setup)| *setup)
            .context("a measured child without its set-up")?;
        let mut case = Case::new(
            s.unit.id(s.call),
            s.unit.description(s.call),
            "call",
            samples,
        )
        .param("set", set_name(s.unit.set))
        .param("call", value_name(&s.call))
        .param("filters", s.unit.set.filters() as u64)
        .param("cpu", cpu as u64);
        if let Some(place) = s.unit.place {
            let i = usize::from(place == Place::Cross);
            case = case.param("supervisor_cpu", ctx.cpus[i] as u64);
        }
        if let (Set::File, Some((f, _))) = (s.unit.set, &file) {
            case = case
                .param(ids::PROFILE_FILE, f.file_name())
                .param(ids::PROFILE_DIGEST, f.digest.clone());
        }
        case.add_messages(said);
        finish_case(&mut case, s, &setup.status, inherited, answered[s.child]);
        out.cases.push(case);
    }
    out.derived = derived(&out.cases);
    Ok(out)
}

/// The checks of one case: the filters its child runs under, every timed call allowed (and,
/// under a supervisor, answered by it), one thread.
fn finish_case(
    case: &mut Case,
    s: &Slot,
    status: &sc::Status,
    inherited: Option<u64>,
    answered: u64,
) {
    let own = s.unit.set.filters() as u64;
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
    let per_call = |v: u64| v as f64 / calls.max(1) as f64;
    let failed = s.failed.get();
    case.counters
        .insert("refused_calls_per_call".into(), per_call(failed));
    case.counters.insert(
        "voluntary_switches_per_call".into(),
        per_call(s.voluntary.get()),
    );
    case.counters.insert(
        "involuntary_switches_per_call".into(),
        per_call(s.involuntary.get()),
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
    if let Some(place) = s.unit.place {
        case.counters
            .insert("answered_by_supervisor_per_call".into(), per_call(answered));
        case.checks.push(Check::near(
            "answered_by_supervisor",
            calls as f64,
            answered as f64,
            0.0,
            &format!(
                "the supervisor answered {answered} calls; the child made {calls}: every call \
                 went to the supervisor and back"
            ),
        ));
        if place == Place::Same {
            case.checks.push(Check::at_least(
                "voluntary_switches_per_call",
                1.0,
                per_call(s.voluntary.get()),
                0.1,
                &format!(
                    "getrusage(RUSAGE_THREAD) of the timing child around each batch: {} \
                     voluntary switches in {calls} calls; with its supervisor on the same CPU \
                     it must give the CPU up for each answer",
                    s.voluntary.get()
                ),
            ));
        }
    }
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
        for set in [Set::Allow1, Set::Args1, Set::Args8, Set::Profile, Set::File] {
            let Some(c) = find(set) else { continue };
            out.push(DerivedSpec {
                id: ids::over_none(&c.id),
                description: format!(
                    "what {} adds to {} over no filter",
                    set.description(),
                    call.description()
                ),
                terms: vec![(c.id.clone(), 1.0), (none.id.clone(), -1.0)],
                flagged: flag(c, none),
            });
        }
        if call == Call::Getpid {
            for place in ["same", "cross"] {
                let id = ids::Id::Notify(place).to_string();
                let Some(c) = cases.iter().find(|c| c.id == id) else {
                    continue;
                };
                out.push(DerivedSpec {
                    id: ids::over_none(&id),
                    description: format!(
                        "what handing getpid to a supervisor on the {} CPU adds over the bare \
                         call",
                        if place == "same" { "same" } else { "other" }
                    ),
                    terms: vec![(c.id.clone(), 1.0), (none.id.clone(), -1.0)],
                    flagged: flag(c, none),
                });
            }
        }
        if let Some(c) = find(Set::Args8) {
            let k = 1.0 / STACKED as f64;
            out.push(DerivedSpec {
                id: ids::per_filter(&c.id),
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
                    id: ids::per_added_filter(&c.id),
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
        let p = plan(&opts(&[]), 2);
        assert_eq!(p.sets, Set::ALL);
        assert_eq!(p.calls, [Call::Getpid, Call::Fstat]);
        let ids: Vec<String> = p
            .units
            .iter()
            .flat_map(|u| u.calls(&p.calls).into_iter().map(|c| u.id(c)))
            .collect();
        assert_eq!(ids.len(), 12);
        assert_eq!(ids[10..], ["seccomp.notify.same", "seccomp.notify.cross"]);
        assert!(p.no_cross.is_none());
        let one = plan(&opts(&["--sets", "notify"]), 1);
        assert_eq!(one.units.len(), 1);
        assert!(one.no_cross.unwrap().contains("--cpus"));
        assert_eq!(case_id(Set::Allow1, Call::Getpid), "seccomp.allow-1.getpid");
        assert_eq!(case_id(Set::Args8, Call::Fstat), "seccomp.args-8.fstat");
        let p = plan(
            &opts(&["--sets", "args-8,none,args-8", "--calls", "fstat"]),
            2,
        );
        assert_eq!(p.sets, [Set::Args8, Set::None]);
        assert_eq!(p.calls, [Call::Fstat]);
    }

    fn fixture() -> String {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/seccomp/small.json"
        )
        .into()
    }

    #[test]
    fn a_profile_file_is_timed_beside_the_bare_call_and_named_by_its_digest() {
        let f = fixture();
        let p = plan(&opts(&["--sets", "args-1", "--profile", &f]), 2);
        assert_eq!(p.sets, [Set::None, Set::Args1, Set::File]);
        assert_eq!(case_id(Set::File, Call::Getpid), "seccomp.file.getpid");
        testing::with_tiny_ctx(|ctx| {
            let o = opts(&["--sets", "none", "--calls", "getpid", "--profile", &f]);
            let out = run(&o, ctx).unwrap();
            let ids: Vec<&str> = out.cases.iter().map(|c| c.id.as_str()).collect();
            assert_eq!(ids, ["seccomp.none.getpid", "seccomp.file.getpid"]);
            let digest = crate::seccomp_file::digest(&std::fs::read(&f).unwrap());
            assert_eq!(out.params[ids::PROFILE_DIGEST], digest.as_str());
            assert_eq!(out.params[ids::PROFILE_FILE], "small.json");
            let file = &out.cases[1];
            assert_eq!(file.params[ids::PROFILE_DIGEST], digest.as_str());
            assert!(file.checks.iter().all(|k| k.passed), "{:?}", file.checks);
            assert!(out
                .derived
                .iter()
                .any(|d| d.id == ids::FILE_GETPID_OVER_NONE));
        });
        let dir = tempfile::tempdir().unwrap();
        let refusing = dir.path().join("refusing.json");
        std::fs::write(
            &refusing,
            r#"{"defaultAction": "SCMP_ACT_ALLOW",
                "syscalls": [{"names": ["getpid"], "action": "SCMP_ACT_ERRNO"}]}"#,
        )
        .unwrap();
        testing::with_tiny_ctx(|ctx| {
            let path = refusing.to_str().unwrap();
            let o = opts(&["--sets", "none", "--calls", "getpid", "--profile", path]);
            let out = run(&o, ctx).unwrap();
            assert_eq!(out.cases.len(), 1);
            let u = &out.unavailable[0];
            assert_eq!(u.id, "seccomp.file.getpid");
            assert!(
                u.reason
                    .contains("refusing.json refuses getpid (SCMP_ACT_ERRNO)"),
                "{}",
                u.reason
            );
        });
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{}").unwrap();
        let o = opts(&["--profile", bad.to_str().unwrap()]);
        let e = format!(
            "{:#}",
            engine::Experiment::preflight(&o, false, &Default::default()).unwrap_err()
        );
        assert!(
            e.contains("bad.json: not a profile in Docker's format: missing field `defaultAction`"),
            "{e}"
        );
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
            want.push("seccomp.notify.same");
            if ctx.cpus.len() > 1 {
                want.push("seccomp.notify.cross");
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
            assert!(derived.contains(&"seccomp.notify.same.over_none"));
            let same = out
                .cases
                .iter()
                .find(|c| c.id == "seccomp.notify.same")
                .unwrap();
            assert_eq!(same.counters["answered_by_supervisor_per_call"], 1.0);
            assert!(out.derived.iter().all(|d| d.flagged.is_none()));
        });
    }
}
