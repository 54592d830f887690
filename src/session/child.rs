//! The child protocol: one measuring process per experiment, started, listened to, stopped on
//! a signal, reaped, and cleaned up after.

use crate::progress::Bar;
use crate::stdout::reader_gone;
use crate::worker::{self, Request};
use anyhow::Context as _;
use oscost_measure::Progress as _;
use oscost_model::ExperimentOutput;
use oscost_sys as os;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The measuring processes the run has started, and how often it was asked to stop. The
/// signal thread and the main thread share it; the lock is held while a child is reaped, so a
/// signal is never sent to a pid the kernel may already have handed to another process.
#[derive(Default)]
pub(super) struct Children {
    current: Option<u32>,
    signals: u32,
}

/// How long a measuring process has, after the first signal, to stop on its own before it and
/// every process it started are killed: a helper that cannot answer (a stopped or deadlocked
/// FUSE server) keeps the measuring process in an uninterruptible wait, which only the end of
/// the helper ends.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Catches SIGINT, SIGTERM and SIGHUP in this (coordinating) process. The first asks the
/// measuring process to stop at its next sample (it receives a terminal's Ctrl-C itself too)
/// and, if it has not ended [`STOP_GRACE`] later, kills it and the processes it started; a
/// second signal kills every process of the run at once. Its worker processes die with it
/// (they hold a parent-death signal), the main thread reaps it and the scratch directory goes
/// with the run.
pub(super) fn catch_signals(
    children: Arc<Mutex<Children>>,
    cancel: Arc<AtomicBool>,
) -> anyhow::Result<()> {
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
                let Some(pid) = c.current else { continue };
                if c.signals == 1 {
                    let _ = os::task::send_signal(pid as i32, signal_hook::consts::SIGTERM);
                    let children = Arc::clone(&children);
                    let _ = std::thread::Builder::new()
                        .name("oscost-stop-grace".into())
                        .spawn(move || {
                            std::thread::sleep(STOP_GRACE);
                            let c = children.lock().unwrap_or_else(PoisonError::into_inner);
                            // Still the same process: it is reaped only under this lock, so
                            // its pid cannot have been handed to another.
                            if c.current == Some(pid) {
                                let helpers = kill_run_processes();
                                eprintln!(
                                    "oscost: the measuring process did not stop within {} s \
                                     of the signal: killed it{}",
                                    STOP_GRACE.as_secs(),
                                    helpers_named(&helpers)
                                );
                            }
                        });
                } else {
                    kill_run_processes();
                }
            }
        })
        .map_err(|e| os::task::thread_error(e, "the signal thread"))?;
    Ok(())
}

/// A process this run started, as a line names it: its role and pid, and whether it is
/// stopped (what a stuck helper looks like).
struct RunProcess {
    pid: u32,
    role: String,
    stopped: bool,
}

/// Kills (SIGKILL) every process this coordinator started, directly or not, and returns the
/// helpers among them (every one but the measuring process and its workers): a helper in an
/// uninterruptible exchange (a FUSE server) must end for the measuring process to.
fn kill_run_processes() -> Vec<RunProcess> {
    let pids = os::task::descendants(std::process::id());
    let described: Vec<RunProcess> = pids.iter().map(|&p| describe_process(p)).collect();
    // Helpers first: the measuring process waiting on one ends only once it has.
    for p in described.iter().rev() {
        let _ = os::task::send_signal(p.pid as i32, signal_hook::consts::SIGKILL);
    }
    described
        .into_iter()
        .filter(|p| p.role != worker::ROLE && p.role != "oscost")
        .collect()
}

fn describe_process(pid: u32) -> RunProcess {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut args = cmdline.split(|&b| b == 0);
    let exe = args.next().unwrap_or_default();
    let role = match args.next() {
        Some(a) if a.starts_with(b"__") => String::from_utf8_lossy(a).into_owned(),
        _ => std::path::Path::new(&*String::from_utf8_lossy(exe))
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    RunProcess {
        pid,
        role,
        stopped: matches!(state, Some("T" | "t")),
    }
}

/// " and its helper oscost __fuse-serve (pid 42, stopped)", or nothing.
fn helpers_named(helpers: &[RunProcess]) -> String {
    if helpers.is_empty() {
        return String::new();
    }
    let named: Vec<String> = helpers
        .iter()
        .map(|h| {
            let role = if h.role.starts_with("__") {
                format!("oscost {}", h.role)
            } else {
                h.role.clone()
            };
            format!(
                "{role} (pid {}{})",
                h.pid,
                if h.stopped { ", stopped" } else { "" }
            )
        })
        .collect();
    format!(
        " and its helper{} {}",
        if named.len() == 1 { "" } else { "s" },
        named.join(", ")
    )
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

/// Runs one experiment in as many fresh measuring processes as it draws its samples from (see
/// `oscost_measure::processes`), one after another, each with its share of the samples, and
/// returns their results merged and the tasks they started (themselves included).
pub(super) fn measure_in_processes(
    job: &Request,
    scratch: &Path,
    bar: &Bar,
    children: &Mutex<Children>,
    cancel: &AtomicBool,
) -> anyhow::Result<(ExperimentOutput, u64)> {
    use oscost_measure::processes;
    let n = processes::processes_for(job.experiment.processes(), job.sampler.samples);
    if n <= 1 {
        return measure_in_child(job, scratch, bar, children, cancel);
    }
    let each = processes::samples_each(job.sampler.samples, n);
    let part = Request {
        experiment: job.experiment.clone(),
        sampler: oscost_measure::sampler::SamplerConfig {
            samples: each,
            min_runs: job.sampler.min_runs.min(each),
            ..job.sampler
        },
        quick: job.quick,
        cpus: job.cpus.clone(),
        clock: job.clock.clone(),
    };
    let mut outputs = Vec::with_capacity(n);
    let mut tasks = 0;
    for _ in 0..n {
        let (output, started) = measure_in_child(&part, scratch, bar, children, cancel)?;
        outputs.push(output);
        tasks += started;
    }
    processes::merge(outputs)
        .map(|o| (o, tasks))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{}: no measuring process gave a result",
                job.experiment.name()
            )
        })
}

/// Runs one experiment in a fresh measuring process and returns its raw results and the
/// number of tasks it started (itself included).
fn measure_in_child(
    job: &Request,
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
    // Reaped under the lock, a moment at a time: the signal thread may need it meanwhile.
    let status = loop {
        {
            let mut c = children.lock().unwrap_or_else(PoisonError::into_inner);
            match child.try_wait() {
                Ok(Some(status)) => {
                    c.current = None;
                    break status;
                }
                Ok(None) => {}
                Err(e) => {
                    c.current = None;
                    return Err(e).context("waiting for the measuring process");
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    // A measuring process that was killed leaves its workers and helpers to us; they die
    // with it (a parent-death signal), and whatever could not (a stopped helper) is killed
    // here, so none outlives the run.
    kill_run_processes();
    os::task::reap_orphans(std::time::Duration::from_secs(10));
    bar.finish();
    // It ended without putting back a setting it changed (killed, or it crashed): the record
    // it wrote before the change says what to put back.
    restore_settings();
    // Nothing of it runs any more: remove the SysV sets it recorded and did not remove itself
    // (it was killed), whatever the way the run goes on or ends.
    let removed = oscost_measure::leftovers::remove_registered(scratch);
    // A user's FUSE mount outlives a measuring process that could not unmount it.
    oscost_measure::leftovers::sweep_after_measuring(scratch);
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
        }) => Ok((*output, tasks_started + 1)),
        Some(worker::Message::Cancelled) => Err(oscost_measure::Cancelled.into()),
        Some(worker::Message::Failed(e)) => Err(anyhow::anyhow!(e)),
        _ if cancel.load(Ordering::SeqCst) => Err(oscost_measure::Cancelled.into()),
        _ => Err(anyhow::anyhow!(
            "the measuring process of {name} ended without a result ({}{})",
            describe_exit(status),
            abort_cause(status)
        )),
    }
}

/// What most likely made a measuring process abort (SIGABRT) without a word: under an
/// address-space limit, an allocation or a new thread's signal stack refused (Rust aborts
/// then, and its own line may not get out); empty when no such limit is set.
fn abort_cause(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if status.signal() != Some(signal_hook::consts::SIGABRT) {
        return String::new();
    }
    match os::task::address_space_limit() {
        Some(soft) => format!(
            ", under the address-space limit RLIMIT_AS={soft}: most likely memory it asked for \
             was refused; raise it with `ulimit -v` or prlimit --as"
        ),
        _ => String::new(),
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

/// Removes what earlier runs killed with `kill -9` left behind: the system settings they
/// changed, and in the temporary directory and /dev/shm their SysV semaphore sets, the mounts
/// under their run directories and the directories. One line each on stderr, even with `--quiet`: it is something done, not a
/// warning.
pub fn remove_earlier_leftovers() {
    restore_settings();
    let bases = oscost_measure::leftovers::run_dir_bases();
    for earlier in bases
        .iter()
        .flat_map(|b| oscost_measure::leftovers::remove_earlier_runs(b))
    {
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
