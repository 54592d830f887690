//! The measuring process: each experiment runs in a fresh `oscost` process of its own.
//!
//! Why: a one-task figure is only the one-task cost in a single-threaded process. A second
//! thread, even an idle one, makes the kernel take a file reference on every file-descriptor
//! call, and glibc leaves its single-thread lock path for good once a thread was ever created;
//! so an experiment that starts threads would change every later one-task figure in the same
//! process. A fresh process per experiment also keeps one experiment's crash from taking the
//! others' results with it.
//!
//! The coordinating `oscost` re-executes itself as `oscost __measure`, writes a [`Request`] to its
//! standard input and reads [`Message`]s, one JSON object per line, from its standard output.
//! The measuring process starts no helper thread: SIGINT, SIGTERM and SIGHUP only set a flag
//! the sampler checks between samples, and progress is written by the measuring thread itself.

use oscost_measure::experiments::ExperimentArgs;
use oscost_measure::sampler::SamplerConfig;
use oscost_measure::{Clock, Context, Progress, Scripted, TimeSource};
use oscost_model::{ClockInfo, ExperimentOutput};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The hidden first argument that selects the measuring role.
pub const ROLE: &str = "__measure";

/// What the coordinator asks one measuring process to do.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The experiment and its options.
    pub experiment: ExperimentArgs,
    /// How to sample.
    pub sampler: SamplerConfig,
    /// `--quick`.
    pub quick: bool,
    /// CPUs the experiment may use.
    pub cpus: Vec<usize>,
    /// The coordinator's calibrated clock; `None` runs on the scripted clock.
    pub clock: Option<ClockInfo>,
}

/// What a measuring process reports, in order: progress, then exactly one of the last three.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Message {
    /// A phase of `len` steps begins.
    Start {
        /// Steps.
        len: u64,
        /// What the phase is.
        what: String,
    },
    /// Steps done.
    Inc(u64),
    /// The step in progress.
    Note(String),
    /// The phase ended.
    Finish,
    /// The experiment's raw results.
    Done {
        /// Samples and evidence.
        output: Box<ExperimentOutput>,
        /// Processes and threads the experiment started.
        tasks_started: u64,
    },
    /// The experiment failed; the error chain as one line.
    Failed(String),
    /// Interrupted before it finished.
    Cancelled,
}

/// Writes one message as a line. A coordinator that went away leaves nobody to report to,
/// and the next cancellation check ends the run, so a failed write is ignored.
fn send(msg: &Message) {
    if let Ok(mut line) = serde_json::to_vec(msg) {
        line.push(b'\n');
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&line).and_then(|()| out.flush());
    }
}

/// Progress as messages to the coordinator, which draws the bar.
struct PipeProgress;

impl Progress for PipeProgress {
    fn start(&self, len: u64, what: &str) {
        send(&Message::Start {
            len,
            what: what.to_owned(),
        });
    }
    fn inc(&self, n: u64) {
        send(&Message::Inc(n));
    }
    fn message(&self, msg: &str) {
        send(&Message::Note(msg.to_owned()));
    }
    fn finish(&self) {
        send(&Message::Finish);
    }
}

/// The measuring role's whole life; returns the process exit status.
pub fn main() -> std::process::ExitCode {
    let cancel = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        // A flag set from the handler, no thread: the sampler notices it between samples.
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&cancel)) {
            send(&Message::Failed(format!(
                "cannot install the signal handler: {e}"
            )));
            return std::process::ExitCode::from(2);
        }
    }
    if let Err(e) = outlive_nothing() {
        send(&Message::Failed(format!("{e:#}")));
        return std::process::ExitCode::from(2);
    }
    let msg = match run(&cancel) {
        Ok(msg) => msg,
        Err(_) if cancel.load(Ordering::SeqCst) => Message::Cancelled,
        Err(e) if e.downcast_ref::<oscost_measure::Cancelled>().is_some() => Message::Cancelled,
        Err(e) => Message::Failed(format!("{e:#}")),
    };
    send(&msg);
    std::process::ExitCode::SUCCESS
}

/// Makes sure nothing of this process outlives the run: it dies with the coordinator (a
/// `kill -9` of oscost takes it and, through their own parent-death signal, its workers), and
/// every SysV semaphore set it creates is recorded in the run directory's registry first, so
/// the coordinator, or the next run if the coordinator was killed too, can remove it.
fn outlive_nothing() -> anyhow::Result<()> {
    use anyhow::Context as _;
    use oscost_measure::leftovers;
    let run_dir = leftovers::run_dir_from_env();
    let parent = run_dir
        .as_deref()
        .and_then(leftovers::run_dir_pid)
        .unwrap_or_else(std::os::unix::process::parent_id);
    oscost_sys::lifetime::die_with_parent(parent)
        .context("the measuring process cannot tie its life to the coordinator's")?;
    leftovers::register_from_env().context("recording what the measuring process creates")
}

fn run(cancel: &AtomicBool) -> anyhow::Result<Message> {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    let job: Request = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("the measuring process got an unreadable job: {e}"))?;
    let real;
    let scripted;
    let clock: &dyn TimeSource = match &job.clock {
        Some(info) => {
            real = Clock::from_info(info);
            &real
        }
        None => {
            scripted = Scripted::new();
            &scripted
        }
    };
    let controls = oscost_measure::machine_controls::ControlLog::default();
    let ctx = Context {
        clock,
        sampler: job.sampler,
        quick: job.quick,
        cpus: job.cpus.clone(),
        progress: &PipeProgress,
        cancel,
        controls: &controls,
    };
    // The machine's controls bracket the experiment, so a comparison can tell a changed
    // machine from changed figures.
    let output = oscost_measure::machine_controls::around(&ctx, || job.experiment.run(&ctx))?;
    Ok(Message::Done {
        output: Box::new(output),
        tasks_started: oscost_sys::tasks_started(),
    })
}
