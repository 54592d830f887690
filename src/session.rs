//! One oscost invocation: set up the process, run experiments, render and write results.

use crate::config::{Config, Sink};
use crate::progress::Bar;
use crate::worker::{self, Job};
use anyhow::Context as _;
use oscost_measure::env::{self as envcollect, LoadProbe};
use oscost_measure::experiments::ExperimentArgs;
use oscost_measure::Progress as _;
use oscost_measure::{cpuset, Clock};
use oscost_model::Environment;
use oscost_model::ExperimentOutput;
use oscost_model::{ResultDoc, SCHEMA};
use oscost_report::{render, summarise};
use oscost_sys as os;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Applies `--nice` and `--cpus` to this process; returns the CPUs experiments may use.
fn apply_placement(cfg: &Config) -> anyhow::Result<Vec<usize>> {
    if let Some(n) = cfg.nice {
        let inherited = os::nice().ok();
        os::set_nice(n).map_err(|e| {
            let hint = match inherited {
                // Raising priority needs privilege whatever the sign: from an inherited 10,
                // even 0 is a raise.
                Some(cur) if n < cur && cur > 0 => format!(
                    " (this process inherited nice {cur}; going below it needs root or \
                     CAP_SYS_NICE: use --nice {cur}..19, or start oscost at a lower nice)"
                ),
                _ if n < 0 => {
                    " (a negative nice needs root or CAP_SYS_NICE; drop --nice or use 0..19)"
                        .to_owned()
                }
                _ => String::new(),
            };
            anyhow::anyhow!("--nice {n}: {e}{hint}")
        })?;
    }
    match &cfg.cpus {
        Some(cpus) => {
            os::set_affinity(cpus)
                .with_context(|| format!("--cpus {}: cannot pin", cpuset::format(cpus)))?;
            Ok(cpus.clone())
        }
        None => Ok(os::affinity().unwrap_or_else(|_| cpuset::online())),
    }
}

fn environment(cfg: &Config, clock: &Clock, cpus: &[usize]) -> Environment {
    let mut env = envcollect::collect(clock.info(), cpus);
    env.git_commit = Some(env!("OSCOST_GIT_COMMIT").to_owned()).filter(|c| !c.is_empty());
    env.rustc_version = Some(env!("OSCOST_RUSTC_VERSION").to_owned()).filter(|c| !c.is_empty());
    // The nice value asked for; the one in force is `process_nice`.
    env.nice = cfg.nice;
    // A history URL given on the command line may hold a password: never recorded.
    for arg in &mut env.command_line {
        *arg = oscost_history::pg::mask_passwords(arg);
    }
    env.fleet = cfg.fleet.clone();
    env
}

/// The sampling rules of a run, as recorded with it.
fn sampling(cfg: &Config) -> oscost_model::env::Sampling {
    oscost_model::env::Sampling {
        quick: cfg.quick,
        samples: cfg.sampler.samples as u64,
        min_runs: cfg.sampler.min_runs as u64,
        warmup_ns: cfg.sampler.warmup.as_nanos() as u64,
        min_sample_ns: cfg.sampler.min_sample.as_nanos() as u64,
        budget_ns: cfg.sampler.budget.as_nanos() as u64,
    }
}

/// The text of `oscost env`.
pub fn environment_text(cfg: &Config) -> anyhow::Result<String> {
    let cpus = apply_placement(cfg)?;
    let clock = Clock::detect();
    let env = environment(cfg, &clock, &cpus);
    if let Some(Sink::File(p)) = &cfg.json {
        oscost_report::output::write_atomic(p, &(serde_json::to_string_pretty(&env)? + "\n"))?;
    } else if let Some(Sink::Stdout) = &cfg.json {
        print_stdout(&(serde_json::to_string_pretty(&env)? + "\n"))?;
    }
    Ok(oscost_report::envtext::render_environment(&env))
}

/// The measuring processes the run has started, and how often it was asked to stop. The
/// signal thread and the main thread share it; the lock is held while a child is reaped, so a
/// signal is never sent to a pid the kernel may already have handed to another process.
#[derive(Default)]
struct Children {
    current: Option<u32>,
    signals: u32,
}

/// Catches SIGINT, SIGTERM and SIGHUP in this (coordinating) process. The first asks the
/// measuring process to stop at its next sample (it receives a terminal's Ctrl-C itself too);
/// a second kills it at once. Its worker processes die with it (they hold a parent-death
/// signal), the main thread reaps it and the scratch directory goes with the run.
fn catch_signals(children: Arc<Mutex<Children>>, cancel: Arc<AtomicBool>) -> anyhow::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .context("installing the signal handlers")?;
    std::thread::Builder::new()
        .name("oscost-signals".into())
        .spawn(move || {
            for _ in signals.forever() {
                cancel.store(true, Ordering::SeqCst);
                let mut c = children.lock().unwrap_or_else(PoisonError::into_inner);
                c.signals += 1;
                if let Some(pid) = c.current {
                    let sig = if c.signals == 1 {
                        signal_hook::consts::SIGTERM
                    } else {
                        signal_hook::consts::SIGKILL
                    };
                    let _ = os::task::send_signal(pid as i32, sig);
                }
            }
        })
        .context("starting the signal thread")?;
    Ok(())
}

/// The user's `GLIBC_TUNABLES` with glibc's cache of thread stacks turned off (a later
/// setting of the same tunable wins, so it goes last).
fn no_stack_cache_tunables() -> String {
    const OFF: &str = "glibc.pthread.stack_cache_size=0";
    match std::env::var("GLIBC_TUNABLES") {
        Ok(t) if !t.is_empty() => format!("{t}:{OFF}"),
        _ => OFF.to_string(),
    }
}

/// Runs one experiment in a fresh measuring process and returns its raw results and the
/// number of tasks it started (itself included).
fn measure_in_child(
    job: &Job,
    scratch: &Path,
    bar: &Bar,
    children: &Mutex<Children>,
    cancel: &AtomicBool,
) -> anyhow::Result<(ExperimentOutput, u64)> {
    let name = job.experiment.name();
    let exe = std::env::current_exe().context("finding the oscost executable to re-run")?;
    let mut child = {
        let mut c = children.lock().unwrap_or_else(PoisonError::into_inner);
        if cancel.load(Ordering::SeqCst) {
            return Err(oscost_measure::Cancelled.into());
        }
        let mut cmd = std::process::Command::new(&exe);
        if job.experiment.no_thread_stack_cache() {
            cmd.env("GLIBC_TUNABLES", no_stack_cache_tunables());
        }
        let child = cmd
            .arg(worker::ROLE)
            .env("TMPDIR", scratch)
            .env(oscost_measure::leftovers::RUN_DIR_ENV, scratch)
            .env(
                oscost_measure::sysctl::SETTINGS_DIR_ENV,
                oscost_measure::sysctl::settings_dir(),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting the measuring process ({})", exe.display()))?;
        c.current = Some(child.id());
        child
    };
    // The job is small; the child reads all of it before it does anything else.
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&serde_json::to_vec(job)?);
    }
    let mut last = None;
    if let Some(stdout) = child.stdout.take() {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            match serde_json::from_str::<worker::Message>(&line) {
                Ok(worker::Message::Start { len, what }) => bar.start(len, &what),
                Ok(worker::Message::Inc(n)) => {
                    bar.inc(n);
                    // Nobody reads the tables any more (`oscost | head`): stop measuring.
                    if reader_gone() {
                        let c = children.lock().unwrap_or_else(PoisonError::into_inner);
                        if let Some(pid) = c.current {
                            let _ = os::task::send_signal(pid as i32, signal_hook::consts::SIGTERM);
                        }
                    }
                }
                Ok(worker::Message::Note(m)) => bar.message(&m),
                Ok(worker::Message::Finish) => bar.finish(),
                Ok(m) => last = Some(m),
                Err(e) => {
                    last = Some(worker::Message::Failed(format!(
                        "the measuring process wrote something unreadable ({e})"
                    )))
                }
            }
        }
    }
    let status = {
        let mut c = children.lock().unwrap_or_else(PoisonError::into_inner);
        let status = child.wait();
        c.current = None;
        status.context("waiting for the measuring process")?
    };
    // A measuring process that was killed leaves its workers to us; they die with it (a
    // parent-death signal) and are reaped here, so none outlives the run.
    os::task::reap_orphans(std::time::Duration::from_secs(10));
    bar.finish();
    // It ended without putting back a setting it changed (killed, or it crashed): the record
    // it wrote before the change says what to put back.
    restore_settings();
    // Nothing of it runs any more: remove the SysV sets it recorded and did not remove itself
    // (it was killed), whatever the way the run goes on or ends.
    let removed = oscost_measure::leftovers::remove_registered(scratch);
    if removed.sysv_sems > 0 {
        eprintln!(
            "oscost: removed {} the interrupted measuring process left behind",
            oscost_measure::leftovers::sysv_sets(removed.sysv_sems)
        );
    }
    for e in &removed.errors {
        eprintln!("oscost: {e}");
    }
    match last {
        Some(worker::Message::Done {
            output,
            tasks_started,
        }) => Ok((output, tasks_started + 1)),
        Some(worker::Message::Cancelled) => Err(oscost_measure::Cancelled.into()),
        Some(worker::Message::Failed(e)) => Err(anyhow::anyhow!(e)),
        _ if cancel.load(Ordering::SeqCst) => Err(oscost_measure::Cancelled.into()),
        _ => Err(anyhow::anyhow!(
            "the measuring process of {name} ended without a result ({})",
            describe_exit(status)
        )),
    }
}

/// Puts back every system setting that an oscost process changed and that no live oscost
/// process holds any more (its changer was killed); one line each on stderr, even with
/// `--quiet`: it is something done, not a warning.
fn restore_settings() {
    let dir = oscost_measure::sysctl::settings_dir();
    for swept in oscost_measure::sysctl::sweep(&dir) {
        eprintln!("oscost: {}", swept.summary());
    }
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (_, Some(sig)) => format!("killed by signal {sig}"),
        (Some(code), _) => format!("exit status {code}"),
        _ => status.to_string(),
    }
}

/// How many figures and series files the run wrote.
#[derive(Debug, Default, Clone, Copy)]
struct Figures {
    plots: usize,
    series: usize,
}

impl std::ops::AddAssign for Figures {
    fn add_assign(&mut self, o: Figures) {
        self.plots += o.plots;
        self.series += o.series;
    }
}

/// Writes the experiment's figures (`--svg`) and series (`--series`), each file atomically,
/// named after its case.
fn write_figures(cfg: &Config, result: &oscost_model::ExperimentResult) -> anyhow::Result<Figures> {
    let mut n = Figures::default();
    if let Some(dir) = &cfg.svg {
        for plot in oscost_report::plot::plots(result) {
            let path = dir.join(oscost_report::plot::file_name(&plot.name, "svg"));
            oscost_report::output::write_atomic(&path, &plot.svg)?;
            n.plots += 1;
        }
    }
    if let Some(dir) = &cfg.series {
        for (name, text) in oscost_report::series::files(result)? {
            oscost_report::output::write_atomic(&dir.join(name), &text)?;
            n.series += 1;
        }
    }
    Ok(n)
}

/// Every file output, rewritten after each experiment so a later failure keeps what was
/// measured. Special files (a FIFO, a device) are written once, at the end.
/// A file oscost chose itself (`cfg.kept`) that cannot be written is added to `lost` with one
/// line on stderr and left alone from then on: the run goes on without it.
fn write_files(
    cfg: &Config,
    doc: &ResultDoc,
    last: bool,
    lost: &mut Vec<std::path::PathBuf>,
) -> anyhow::Result<()> {
    let mut staged = Vec::new();
    for (sink, render) in outputs(cfg) {
        if let Some(Sink::File(p)) = sink {
            if (!last && oscost_report::output::is_special(p)) || lost.contains(p) {
                continue;
            }
            if cfg.kept.contains(p) {
                let written =
                    render(doc).and_then(|text| oscost_report::output::stage(p, &text)?.commit());
                if let Err(e) = written {
                    eprintln!(
                        "oscost: not kept: {e:#} (the run goes on; free some space or give --json \
                         and --report)"
                    );
                    lost.push(p.clone());
                }
                continue;
            }
            staged.push(oscost_report::output::stage(p, &render(doc)?)?);
        }
    }
    for s in staged {
        s.commit()?;
    }
    Ok(())
}

/// When the result file oscost chose itself could not be kept, the document goes to the
/// temporary directory instead, so that a measured run is not lost with its disk; says where.
fn keep_elsewhere(cfg: &Config, doc: &ResultDoc, lost: &[std::path::PathBuf]) {
    let Some(Sink::File(json)) = cfg.json.as_ref() else {
        return;
    };
    if !lost.contains(json) {
        return;
    }
    let name = json.file_name().map_or_else(
        || std::ffi::OsString::from("oscost-run.json"),
        |n| n.to_owned(),
    );
    let other = std::env::temp_dir().join(name);
    match render::json(doc).and_then(|t| oscost_report::output::write_atomic(&other, &t)) {
        Ok(()) => eprintln!(
            "oscost: the run's results are in {} instead",
            other.display()
        ),
        Err(e) => eprintln!(
            "oscost: the run's results could not be written anywhere ({e:#}): only the tables \
             above hold them"
        ),
    }
}

type Renderer = fn(&ResultDoc) -> anyhow::Result<String>;

fn outputs(cfg: &Config) -> [(Option<&Sink>, Renderer); 4] {
    [
        (cfg.json.as_ref(), render::json as Renderer),
        (cfg.csv.as_ref(), render::csv as Renderer),
        (cfg.markdown.as_ref(), |d| Ok(render::markdown(d))),
        (cfg.report.as_ref(), report_of_run),
    ]
}

/// The HTML page of this run alone, labelled with its id.
fn report_of_run(doc: &ResultDoc) -> anyhow::Result<String> {
    let label = doc.run_id.clone().unwrap_or_else(|| "this run".to_owned());
    oscost_report::html::report(&[(label, doc)])
}

/// `oscost report FILE... -o OUT`: reads every result file, then writes their page in one go;
/// any file that cannot be read stops it before anything is written.
///
/// Each input is `published:NAME`, a result file, or a run of the history (`latest`,
/// `latest~1`, an id), as `compare` takes them; `history` is the store to look in and
/// whether `--history` named it.
pub fn report(
    files: &[std::path::PathBuf],
    output: Option<&Path>,
    history: crate::compare_cmd::HistoryAt,
) -> anyhow::Result<()> {
    const USAGE: &str = "oscost report r.json [more.json...] -o report.html";
    let Some(output) = output else {
        anyhow::bail!("report needs -o FILE, the HTML file to write (`{USAGE}`)");
    };
    if files.is_empty() {
        anyhow::bail!("report needs at least one result file written by --json (`{USAGE}`)");
    }
    let to_stdout = output.as_os_str() == "-" || oscost_report::output::is_stdout(output);
    if !to_stdout {
        oscost_report::output::check_writable(output).context("-o")?;
        let out = oscost_report::output::identity(output);
        if let Some(f) = files
            .iter()
            .find(|f| oscost_report::output::identity(f) == out)
        {
            anyhow::bail!(
                "-o {}: that is {}, one of the result files to read (choose another name for the \
                 page)",
                output.display(),
                f.display()
            );
        }
    }
    let mut docs = Vec::with_capacity(files.len());
    let mut studies = Vec::new();
    for f in files {
        let arg = f.to_string_lossy();
        if let Some(name) = arg.strip_prefix(crate::compare_cmd::PUBLISHED_PREFIX) {
            let study = oscost_report::study::of_baseline(name)
                .or_else(|| oscost_report::study::find(name))
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "{arg}: no published baseline or study of that name (`oscost baselines` \
                         and `oscost study` list them)"
                    )
                })?;
            studies.push(study);
            continue;
        }
        let doc = if crate::compare_cmd::names_a_file(&arg) {
            read_result(f)?
        } else {
            crate::compare_cmd::load_run(&arg, history)
                .map_err(|e| anyhow::anyhow!("{arg}: no such file, and {e:#}"))?
        };
        docs.push((f.display().to_string(), doc));
    }
    if docs.is_empty() {
        anyhow::bail!(
            "report needs a result file beside published:NAME, whose figures it sets the \
             study's beside (`oscost report published:qnx-tick r.json -o r.html`)"
        );
    }
    let refs: Vec<(String, &ResultDoc)> = docs.iter().map(|(l, d)| (l.clone(), d)).collect();
    let html = oscost_report::html::report_with(&refs, &studies)?;
    if to_stdout {
        print_stdout(&html)
    } else {
        oscost_report::output::write_atomic(output, &html)
    }
}

/// A result file, or one line naming it and what is wrong with it.
fn read_result(path: &Path) -> anyhow::Result<ResultDoc> {
    use oscost_model::ReadError;
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| {
        let reason = e.raw_os_error().map_or_else(
            || e.to_string(),
            |c| std::io::Error::from_raw_os_error(c).to_string(),
        );
        anyhow::anyhow!("cannot read {shown}: {reason} (check the path)")
    })?;
    let text = String::from_utf8(bytes).map_err(|_| {
        anyhow::anyhow!(
            "{shown}: not an oscost result document: not UTF-8 text (give a file written by \
             `oscost --json`)"
        )
    })?;
    oscost_model::read(&text).map_err(|e| match e {
        ReadError::NotADocument(_) => {
            anyhow::anyhow!("{shown}: {e} (give a file written by `oscost --json`)")
        }
        ReadError::Unsupported(_) => anyhow::anyhow!("{shown}: {e}"),
        ReadError::Invalid(_) => anyhow::anyhow!(
            "{shown}: {e} (it was changed or cut short since oscost wrote it; write it again \
             with `oscost --json`)"
        ),
    })
}

/// The regular files that hold a partial result, for an error message.
fn partial_files(cfg: &Config) -> Vec<String> {
    outputs(cfg)
        .iter()
        .filter_map(|(sink, _)| match sink {
            Some(Sink::File(p)) if !oscost_report::output::is_special(p) => {
                Some(p.display().to_string())
            }
            _ => None,
        })
        .collect()
}

/// Removes what earlier runs killed with `kill -9` left behind: the system settings they
/// changed, and in the temporary directory their SysV semaphore sets and their run
/// directories. One line each on stderr, even with `--quiet`: it is something done, not a
/// warning.
fn remove_earlier_leftovers() {
    restore_settings();
    for earlier in oscost_measure::leftovers::remove_earlier_runs(&std::env::temp_dir()) {
        if let Some(line) = earlier.summary() {
            eprintln!("oscost: {line}");
        }
        for e in &earlier.removed.errors {
            eprintln!(
                "oscost: what an earlier oscost run (pid {}) left behind: {e}",
                earlier.pid
            );
        }
    }
}

/// Where a finished run is saved.
pub enum Saving {
    /// Nowhere (`--no-save`).
    Off,
    /// Into this history, opened before measuring. When it was given with `--history`
    /// (`explicit`) a failure to save fails the run; at the default place it is a warning.
    Into {
        /// The open database.
        history: oscost_history::History,
        /// Given with `--history`.
        explicit: bool,
    },
    /// The default history could not be opened, for this reason: the run goes on, and says
    /// at its end that it was not saved.
    Unavailable(String),
}

/// Saves a finished run as `saving` says; says why not when it could not. Returns whether
/// the run is in the history.
fn save(saving: Saving, doc: &ResultDoc, cfg: &Config) -> anyhow::Result<bool> {
    let why = match saving {
        Saving::Off => return Ok(false),
        Saving::Unavailable(why) => why,
        Saving::Into {
            mut history,
            explicit,
        } => match history.save(doc).map_err(|e| located(&history, e)) {
            Ok(_) => {
                // The change since the last comparable run, as criterion prints it.
                if let (false, Ok(Some(prev))) = (cfg.quiet, history.last_comparable(doc)) {
                    let label = prev
                        .run_id
                        .as_deref()
                        .map_or("", |id| &id[..id.len().min(8)]);
                    let since = oscost_report::compare::since_last;
                    if let Some(text) = since(&prev, label, doc, table_width(cfg)) {
                        eprint!("{}", oscost_report::termtext::for_terminal(&text));
                    }
                }
                return Ok(true);
            }
            // SIGINT or SIGTERM while waiting for another writer's lock: an interruption.
            Err(_) if oscost_history::stop_asked() => {
                return Err(anyhow::Error::new(oscost_measure::Cancelled).context(
                    "interrupted while waiting for the history database's lock: the run was \
                     not saved in the history",
                ))
            }
            Err(e) if explicit => {
                return Err(anyhow::anyhow!(
                    "the run could not be saved in the history: {e} (give --history a \
                     writable path, or --no-save)"
                ))
            }
            Err(e) => e.to_string(),
        },
    };
    // Even with --quiet: the run is not kept where the user will look for it.
    eprintln!("oscost: history not saved: {why} (use --history PATH or --no-save)");
    Ok(false)
}

/// A history error that names the database when the error itself does not (SQLite's "disk I/O
/// error" and "database or disk is full" name no file).
fn located(history: &oscost_history::History, e: oscost_history::HistoryError) -> String {
    let text = e.to_string();
    let path = history.shown().to_owned();
    if text.contains(&path) {
        text
    } else {
        format!("{path}: {text}")
    }
}

/// Where a finished run went.
pub struct Saved {
    /// The run's id.
    pub run_id: String,
    /// Whether it is in the history.
    pub in_history: bool,
    /// Files oscost chose itself that could not be written (said so when they failed).
    pub lost: Vec<std::path::PathBuf>,
}

/// Runs the experiments, each in a measuring process of its own, and writes every requested
/// output: files after each experiment, stdout at the end. A run that finished every
/// experiment is then saved as `saving` says. Returns the run's id.
pub fn run(cfg: &Config, experiments: &[ExperimentArgs], saving: Saving) -> anyhow::Result<Saved> {
    let started = std::time::SystemTime::now();
    let cancel = Arc::new(AtomicBool::new(false));
    let children = Arc::new(Mutex::new(Children::default()));
    // Workers orphaned by a killed measuring process come back here to be reaped.
    os::task::become_subreaper().context("becoming the reaper of oscost's own processes")?;
    catch_signals(Arc::clone(&children), Arc::clone(&cancel))?;
    // Output to a FIFO or pipe nobody reads gives up on the first SIGINT or SIGTERM.
    oscost_report::output::stop_waiting_on(Arc::clone(&cancel));
    oscost_history::stop_waiting_on(Arc::clone(&cancel));
    remove_earlier_leftovers();
    // Placement first: every measuring process inherits the CPU set and nice value.
    let cpus = if cfg.scripted {
        cfg.cpus.clone().unwrap_or_else(|| vec![0, 1])
    } else {
        apply_placement(cfg)?
    };
    // Not being able to raise it only matters for large rings, which then name the limit.
    let _ = os::raise_open_file_limit();
    let bar = Bar::new(!cfg.quiet);
    bar.preparing("calibrating the clock and describing the machine");
    let clock = (!cfg.scripted).then(Clock::detect);
    let mut env = match &clock {
        Some(clock) => environment(cfg, clock, &cpus),
        None => oscost_model::example::environment(),
    };
    if cfg.scripted {
        env.fleet = cfg.fleet.clone();
    }
    env.sampling = Some(sampling(cfg));
    let tick_unit = env.clock.tick_unit.clone();
    let ns_per_tick = 1e9 / env.clock.frequency_hz;
    // Every measuring process makes its temporary files in here, and it goes when the run
    // ends, however it ends; named after this process, so that if it is killed the next run
    // knows its creator is gone and removes it (`remove_earlier_leftovers`).
    let scratch = oscost_measure::leftovers::new_run_dir().with_context(|| {
        format!(
            "cannot create a private temporary directory in {} (set TMPDIR to a writable \
             directory)",
            std::env::temp_dir().display()
        )
    })?;
    bar.finish();
    let expected = if cfg.scripted {
        Vec::new()
    } else {
        expected_seconds(&saving, &env, &cfg.run_id, experiments)
    };
    // How busy the machine was: measured, except on the scripted (fictional) machine.
    let load_since = |probe: LoadProbe, own_tasks: u64| {
        if cfg.scripted {
            oscost_model::example::quiet_load(1.0)
        } else {
            probe.finish_for(own_tasks, cpus.len())
        }
    };
    let whole = LoadProbe::start();
    let mut own_tasks = 0;
    let mut figures = Figures::default();
    let mut lost = Vec::new();
    let mut doc = ResultDoc {
        schema: SCHEMA.into(),
        run_id: Some(cfg.run_id.clone()),
        started_at: Some(humantime::format_rfc3339_seconds(started).to_string()),
        environment: env.clone(),
        experiments: Vec::new(),
    };
    for (index, e) in experiments.iter().enumerate() {
        if reader_gone() {
            break;
        }
        bar.stage(index + 1, experiments.len());
        bar.suite(&expected, index);
        let job = Job {
            experiment: e.clone(),
            sampler: cfg.sampler,
            quick: cfg.quick,
            cpus: cpus.clone(),
            clock: clock.as_ref().map(|c| c.info().clone()),
        };
        let probe = LoadProbe::start();
        let measured = measure_in_child(&job, scratch.path(), &bar, &children, &cancel);
        let (out, tasks) = match measured {
            Ok(r) => r,
            Err(err) => {
                let files = partial_files(cfg);
                let kept = if !doc.experiments.is_empty() && !files.is_empty() {
                    format!(
                        " (the results of the experiments before it are in {})",
                        files.join(", ")
                    )
                } else {
                    String::new()
                };
                // The reader of stdout went away: stop quietly, keeping what was measured.
                if reader_gone() && !cancel.load(Ordering::SeqCst) {
                    break;
                }
                if err.downcast_ref::<oscost_measure::Cancelled>().is_some()
                    || cancel.load(Ordering::SeqCst)
                {
                    return Err(anyhow::Error::new(oscost_measure::Cancelled)
                        .context(format!("interrupted{kept}")));
                }
                let err = anyhow::anyhow!("{} failed: {err:#}{kept}", e.name());
                return Err(err);
            }
        };
        own_tasks += tasks;
        let load = load_since(probe, tasks);
        let result = summarise::experiment(e.name(), out, ns_per_tick, Some(load));
        if cfg.study.is_none() || cfg.verbose {
            show(cfg, &result, &tick_unit)?;
        }
        figures += write_figures(cfg, &result)?;
        doc.experiments.push(result);
        write_files(cfg, &doc, false, &mut lost)?;
    }
    if !cfg.quiet {
        if cfg.svg.is_some() && figures.plots == 0 {
            eprintln!("oscost: --svg: no case of this run has samples to draw");
        }
        if cfg.series.is_some() && figures.series == 0 {
            eprintln!("oscost: --series: no case of this run carries a series");
        }
    }
    env.load = Some(load_since(whole, own_tasks));
    doc.environment = env;
    if let Some(name) = cfg.study {
        figures += show_study(cfg, name, &doc)?;
    }
    write_files(cfg, &doc, true, &mut lost)?;
    keep_elsewhere(cfg, &doc, &lost);
    for (sink, render) in outputs(cfg) {
        if let Some(Sink::Stdout) = sink {
            print_stdout(&render(&doc)?)?;
        }
    }
    // A run its reader left early (`| head`) holds only some of its experiments: the history
    // keeps whole runs, so it is not saved.
    let in_history = doc.experiments.len() == experiments.len() && save(saving, &doc, cfg)?;
    Ok(Saved {
        run_id: cfg.run_id.clone(),
        in_history,
        lost,
    })
}

/// Options that say where results go or how much is printed: they change nothing measured,
/// so two runs that differ only in them take the same time. Each takes a value.
const OUTPUT_OPTIONS: &[&str] = &[
    "--json",
    "--csv",
    "--markdown",
    "--report",
    "--svg",
    "--series",
    "--history",
    "--host-name",
    "--runner",
];

/// Flags of the same kind: see [`OUTPUT_OPTIONS`].
const OUTPUT_FLAGS: &[&str] = &["--no-save", "-q", "--quiet", "-v", "--verbose"];

/// A command line's words without its program name and its output options: what decides
/// what a run measures and so how long it takes.
fn measuring_args<'a>(line: &[&'a str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut args = line.iter().skip(1).copied();
    while let Some(a) = args.next() {
        let name = a.split_once('=').map_or(a, |(n, _)| n);
        if OUTPUT_OPTIONS.contains(&name) {
            if !a.contains('=') {
                args.next();
            }
        } else if !OUTPUT_FLAGS.contains(&a) {
            out.push(a);
        }
    }
    out
}

/// What each of `experiments` took the last time the same run (the same experiments and the
/// same measuring options) was saved in this history from this machine: the progress bar's
/// time left for the whole run. Empty when there is no such run or no history.
fn expected_seconds(
    saving: &Saving,
    env: &Environment,
    run_id: &str,
    experiments: &[ExperimentArgs],
) -> Vec<Option<f64>> {
    let Saving::Into { history, .. } = saving else {
        return Vec::new();
    };
    let names: Vec<&str> = experiments.iter().map(|e| e.name()).collect();
    // Split as the history keeps a command line: joined at spaces.
    let line = env.command_line.join(" ");
    let args = measuring_args(&line.split(' ').collect::<Vec<_>>());
    let alike = |words: &[&str], experiments: &[String]| {
        experiments
            .iter()
            .map(String::as_str)
            .eq(names.iter().copied())
            && measuring_args(words) == args
    };
    match history.newest_alike(env, run_id, alike) {
        Ok(Some(prev)) => prev
            .experiments
            .iter()
            .map(|e| e.load.as_ref().map(|l| l.wall_s))
            .collect(),
        _ => Vec::new(),
    }
}

/// Prints an experiment's tables: to stdout, or to stderr when stdout carries a machine
/// format. Warnings are summarised by kind, printed in full with `--verbose`, left out with
/// `--quiet` (the result files keep them all).
fn show(
    cfg: &Config,
    result: &oscost_model::ExperimentResult,
    tick_unit: &str,
) -> anyhow::Result<()> {
    let warnings = if cfg.quiet {
        render::Warnings::Hidden
    } else if cfg.verbose {
        render::Warnings::Full
    } else {
        render::Warnings::Summary
    };
    let text = render::terminal_with(result, tick_unit, table_width(cfg), warnings);
    if cfg.stdout_taken() {
        eprint!("{text}");
        Ok(())
    } else {
        print_stdout(&text)
    }
}

/// Prints a study's tables from the finished run (to stderr when stdout carries a machine
/// format) and writes its charts with `--svg`.
fn show_study(cfg: &Config, name: &str, doc: &ResultDoc) -> anyhow::Result<Figures> {
    let mut n = Figures::default();
    let Some(study) = oscost_report::study::find(name) else {
        return Ok(n);
    };
    let width = table_width(cfg);
    let mut text = String::new();
    for v in study.tables(Some(doc)) {
        text += &render::view_table(&v, width);
        text.push('\n');
    }
    if cfg.stdout_taken() {
        eprint!("{text}");
    } else {
        print_stdout(&text)?;
    }
    if let Some(dir) = &cfg.svg {
        for plot in study.plots(Some(doc)) {
            let path = dir.join(oscost_report::plot::file_name(&plot.name, "svg"));
            oscost_report::output::write_atomic(&path, &plot.svg)?;
            n.plots += 1;
        }
    }
    Ok(n)
}

/// The width tables are laid out to (see [`render::layout_width`]): the terminal the tables
/// go to, standard error when standard output carries a file format.
fn table_width(cfg: &Config) -> Option<u16> {
    render::layout_width(cfg.stdout_taken())
}

/// Writes to stdout. A reader that went away (`| head`) is not an error; a full disk is. A
/// pipe nobody reads is waited for until the run is asked to stop (exit 130) or nothing was
/// taken for `OSCOST_OUTPUT_TIMEOUT` seconds (an error naming it).
pub fn print_stdout(text: &str) -> anyhow::Result<()> {
    use oscost_report::output::Stall;
    let mut out = std::io::stdout().lock();
    let written = out
        .flush()
        .map_err(Stall::Io)
        .and_then(|()| write_waiting(&out, text.as_bytes()));
    match written {
        Err(Stall::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            READER_GONE.store(true, Ordering::SeqCst);
            Ok(())
        }
        Err(e) => Err(e.into_error("to stdout")),
        Ok(()) => Ok(()),
    }
}

/// Writes all of `bytes` to `fd`, at most a pipe's atomic write (4096 bytes) at a time and
/// only when `poll` says it would not block; see [`print_stdout`].
fn write_waiting(
    fd: &impl std::os::fd::AsFd,
    mut bytes: &[u8],
) -> Result<(), oscost_report::output::Stall> {
    use os::Writable;
    use oscost_report::output::{reader_timeout, stop_asked, Stall};
    use std::os::fd::AsFd;
    let file = std::fs::File::from(fd.as_fd().try_clone_to_owned().map_err(Stall::Io)?);
    let timeout = reader_timeout();
    let mut deadline = std::time::Instant::now() + timeout;
    while !bytes.is_empty() {
        if stop_asked() {
            return Err(Stall::Interrupted);
        }
        match os::wait_writable(file.as_fd(), 100).map_err(Stall::Io)? {
            Writable::NotYet if std::time::Instant::now() >= deadline => {
                return Err(Stall::TimedOut(timeout))
            }
            Writable::NotYet => continue,
            Writable::Gone => return Err(Stall::Io(std::io::ErrorKind::BrokenPipe.into())),
            Writable::Ready => {}
        }
        match (&file).write(&bytes[..bytes.len().min(4096)]) {
            Ok(0) => return Err(Stall::Io(std::io::ErrorKind::WriteZero.into())),
            Ok(n) => {
                bytes = &bytes[n..];
                deadline = std::time::Instant::now() + timeout;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(Stall::Io(e)),
        }
    }
    Ok(())
}

/// Set once standard output's reader has gone: the run then stops at the next sample.
static READER_GONE: AtomicBool = AtomicBool::new(false);

/// Whether standard output's reader has gone (a write failed, or poll says so).
fn reader_gone() -> bool {
    if !READER_GONE.load(Ordering::SeqCst) && os::stdout_reader_gone() {
        READER_GONE.store(true, Ordering::SeqCst);
    }
    READER_GONE.load(Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(s: &str) -> Vec<&str> {
        s.split(' ').collect()
    }

    #[test]
    fn output_options_do_not_change_what_a_run_measures() {
        let a = line("oscost run tick --work 1s --json a.json --no-save -q");
        let b = line("/usr/bin/oscost run tick --work 1s --report=r.html --history h.db");
        assert_eq!(measuring_args(&a), ["run", "tick", "--work", "1s"]);
        assert_eq!(measuring_args(&a), measuring_args(&b));
        // A measuring option differs: not alike.
        let c = line("oscost run tick --work 2s");
        assert_ne!(measuring_args(&a), measuring_args(&c));
        let quick = line("oscost --quick --csv -");
        assert_eq!(measuring_args(&quick), ["--quick"]);
    }
}
