//! One oscost invocation: set up the process, run experiments, render and write results.

use crate::config::{Config, Sink};
use crate::progress::Bar;
use anyhow::Context as _;
use oscost_measure::env::{self as envcollect, LoadProbe};
use oscost_measure::experiments::ExperimentArgs;
use oscost_measure::{cpuset, Clock, Context};
use oscost_model::Environment;
use oscost_model::{ResultDoc, SCHEMA};
use oscost_report::{render, summarise};
use oscost_sys as os;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Applies `--nice` and `--cpus` to this process; returns the CPUs experiments may use.
fn apply_placement(cfg: &Config) -> anyhow::Result<Vec<usize>> {
    if let Some(n) = cfg.nice {
        os::set_nice(n).map_err(|e| {
            anyhow::anyhow!(
                "--nice {n}: {e}{}",
                if n < 0 {
                    " (a negative nice needs root or CAP_SYS_NICE; drop --nice or use 0..19)"
                } else {
                    ""
                }
            )
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
    env
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

/// Runs the experiments and writes every requested output.
pub fn run(cfg: &Config, experiments: &[ExperimentArgs]) -> anyhow::Result<()> {
    // Placement first, so every thread started afterwards (the Ctrl-C handler's too)
    // inherits the CPU set and nice value.
    let cpus = apply_placement(cfg)?;
    let cancel = Arc::new(AtomicBool::new(false));
    {
        let cancel = cancel.clone();
        // Ctrl-C (or SIGTERM, SIGHUP) asks the run to stop at the next sample. A second one
        // exits at once: no drop runs then, so worker processes are killed and reaped and
        // scratch directories removed here; nothing is written.
        ctrlc::set_handler(move || {
            if cancel.swap(true, Ordering::SeqCst) {
                oscost_sys::task::kill_all_workers();
                oscost_measure::scratch::remove_all();
                std::process::exit(130);
            }
        })
        .context("installing the Ctrl-C handler")?;
    }
    // Not being able to raise it only matters for large rings, which then name the limit.
    let _ = os::raise_open_file_limit();
    let clock = Clock::detect();
    let mut env = environment(cfg, &clock, &cpus);
    let bar = Bar::new(!cfg.quiet);
    let ctx = Context {
        clock: &clock,
        sampler: cfg.sampler,
        quick: cfg.quick,
        cpus: cpus.clone(),
        progress: &bar,
        cancel: &cancel,
    };
    let ns_per_tick = clock.ticks_to_ns(1.0);
    let whole = LoadProbe::start();
    let started_before_all = os::tasks_started();
    let mut results = Vec::new();
    for e in experiments {
        let probe = LoadProbe::start();
        let started_before = os::tasks_started();
        let out = e.run(&ctx).map_err(|err| {
            if cancel.load(Ordering::SeqCst) {
                anyhow::Error::new(oscost_measure::Cancelled)
            } else {
                err.context(format!("{} failed", e.name()))
            }
        })?;
        // Experiments may pin the measuring thread; give the next one the whole set again.
        let _ = os::set_affinity(&cpus);
        let result = summarise::experiment(
            e.name(),
            out,
            ns_per_tick,
            Some(probe.finish_for(os::tasks_started() - started_before, cpus.len())),
        );
        show(
            cfg,
            &render::terminal(&result, &clock.info().tick_unit, None),
        )?;
        results.push(result);
    }
    env.load = Some(whole.finish_for(os::tasks_started() - started_before_all, cpus.len()));
    let doc = ResultDoc {
        schema: SCHEMA.into(),
        environment: env,
        experiments: results,
    };
    // Every file is written in full before any is put in place, and stdout goes first: a
    // failure anywhere leaves no result file behind.
    let mut outputs = Vec::new();
    if let Some(s) = &cfg.json {
        outputs.push((s, render::json(&doc)?));
    }
    if let Some(s) = &cfg.csv {
        outputs.push((s, render::csv(&doc)?));
    }
    if let Some(s) = &cfg.markdown {
        outputs.push((s, render::markdown(&doc)));
    }
    let mut staged = Vec::new();
    for (sink, text) in &outputs {
        if let Sink::File(p) = sink {
            staged.push(oscost_report::output::stage(p, text)?);
        }
    }
    for (sink, text) in &outputs {
        if let Sink::Stdout = sink {
            print_stdout(text)?;
        }
    }
    for s in staged {
        s.commit()?;
    }
    Ok(())
}

/// Prints a human table: to stdout, or to stderr when stdout carries a machine format.
fn show(cfg: &Config, text: &str) -> anyhow::Result<()> {
    let text = if cfg.quiet {
        text.lines()
            .filter(|l| !l.starts_with("warning: "))
            .map(|l| format!("{l}\n"))
            .collect()
    } else {
        text.to_owned()
    };
    if cfg.stdout_taken() {
        eprint!("{text}");
        Ok(())
    } else {
        print_stdout(&text)
    }
}

/// Writes to stdout. A reader that went away (`| head`) is not an error; a full disk is.
pub fn print_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}
