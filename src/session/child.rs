//! The child protocol: one measuring process per experiment, started, listened to, stopped on
//! a signal, reaped, and cleaned up after.

use crate::progress::Bar;
use crate::stdout::reader_gone;
use crate::worker::{self, Job};
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

/// Catches SIGINT, SIGTERM and SIGHUP in this (coordinating) process. The first asks the
/// measuring process to stop at its next sample (it receives a terminal's Ctrl-C itself too);
/// a second kills it at once. Its worker processes die with it (they hold a parent-death
/// signal), the main thread reaps it and the scratch directory goes with the run.
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
pub(super) fn measure_in_child(
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

/// Removes what earlier runs killed with `kill -9` left behind: the system settings they
/// changed, and in the temporary directory their SysV semaphore sets and their run
/// directories. One line each on stderr, even with `--quiet`: it is something done, not a
/// warning.
pub(super) fn remove_earlier_leftovers() {
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
