//! One measuring run: set up the process, run each experiment in a measuring process of its
//! own, show and write what it measured, save it.

mod child;
mod save;
mod show;

pub use child::remove_earlier_leftovers;
pub use save::{save, Saving};

use crate::config::{Config, Sink};
use crate::progress::Bar;
use crate::stdout::{print_stdout, reader_gone};
use crate::worker::Request;
use anyhow::Context as _;
use oscost_measure::env::LoadProbe;
use oscost_measure::experiments::ExperimentArgs;
use oscost_measure::Clock;
use oscost_measure::Progress as _;
use oscost_model::{Held, Message, MessageKind, ResultDoc, SCHEMA};
use oscost_report::export::{self, Figures, Format, Output, Outputs};
use oscost_report::summarise;
use oscost_sys as os;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

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

/// The run's exports (`--json`, `--csv`, `--markdown`, `--report`), in the order they are
/// written; the files oscost chose itself (`cfg.kept`) are given up, not the run, when they
/// cannot be written.
fn outputs(cfg: &Config) -> Outputs {
    let formats = [
        (Format::Json, &cfg.json),
        (Format::Csv, &cfg.csv),
        (Format::Markdown, &cfg.markdown),
        (Format::Html, &cfg.report),
    ];
    Outputs::new(formats.into_iter().filter_map(|(format, sink)| {
        let sink = sink.clone()?;
        let kept = matches!(&sink, Sink::File(p) if cfg.kept.contains(p));
        Some(Output { format, sink, kept })
    }))
}

/// One line on stderr for a file oscost chose itself that could not be written.
fn not_kept(_: &Path, e: &anyhow::Error) {
    eprintln!(
        "oscost: not kept: {e:#} (the run goes on; free some space or give --json and --report)"
    );
}

/// When the result file oscost chose itself could not be kept, the document goes to the
/// temporary directory instead (see [`Outputs::keep_elsewhere`]); says where.
fn keep_elsewhere(outputs: &Outputs, doc: &ResultDoc) {
    match outputs.keep_elsewhere(doc) {
        None => {}
        Some(Ok(other)) => eprintln!(
            "oscost: the run's results are in {} instead",
            other.display()
        ),
        Some(Err(e)) => eprintln!(
            "oscost: the run's results could not be written anywhere ({e:#}): only the tables \
             above hold them"
        ),
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

/// Experiments a run measures a second time because a check failed while others held the CPUs:
/// a bound on what a busy machine adds to a run (each repeat is one experiment's time again).
const REPEATS: usize = 3;

/// What follows an experiment's pass.
#[derive(Debug, PartialEq)]
enum Pass {
    /// Measure it again: a check failed while others held the CPUs this much.
    Again(Held),
    /// Keep this pass, with a note of the one before it, if any.
    Keep(Option<Message>),
}

/// The pass after one in which `failed` cases failed a check while others held the CPUs as `held` says;
/// `first` the failures and holders of the pass before, when this is a second; `may` whether
/// the run has a repeat left.
fn next_pass(first: Option<(usize, Held)>, failed: usize, held: Option<Held>, may: bool) -> Pass {
    match (first, held) {
        (None, Some(h)) if failed > 0 && may => Pass::Again(h),
        (Some((n, h)), _) => Pass::Keep(Some(Message::new(
            MessageKind::MeasuredTwice,
            format!(
                ": in the first pass {n} {} a check while {}, not the OS's \
                 doing; these figures are the second pass's",
                if n == 1 {
                    "case failed"
                } else {
                    "cases failed"
                },
                Held::words(&[h])
            ),
        ))),
        _ => Pass::Keep(None),
    }
}

/// Runs the experiments, each in a measuring process of its own, and writes every requested
/// output: files after each experiment, stdout at the end. A run that finished every
/// experiment is then saved as `saving` says. Returns the run's id.
pub fn run(cfg: &Config, experiments: &[ExperimentArgs], saving: Saving) -> anyhow::Result<Saved> {
    let started = std::time::SystemTime::now();
    let cancel = Arc::new(AtomicBool::new(false));
    let children = Arc::new(Mutex::new(child::Children::default()));
    // Workers orphaned by a killed measuring process come back here to be reaped.
    os::task::become_subreaper().context("becoming the reaper of oscost's own processes")?;
    child::catch_signals(Arc::clone(&children), Arc::clone(&cancel))?;
    // Output to a FIFO or pipe nobody reads gives up on the first SIGINT or SIGTERM.
    oscost_report::output::stop_waiting_on(Arc::clone(&cancel));
    oscost_history::stop_waiting_on(Arc::clone(&cancel));
    child::remove_earlier_leftovers();
    // Placement first: every measuring process inherits the CPU set and nice value.
    let cpus = if cfg.scripted {
        cfg.cpus.clone().unwrap_or_else(|| vec![0, 1])
    } else {
        crate::machine::apply_placement(cfg)?
    };
    // Not being able to raise it only matters for large rings, which then name the limit.
    let _ = os::raise_open_file_limit();
    let bar = Bar::new(!cfg.quiet);
    bar.preparing("calibrating the clock and describing the machine");
    let clock = (!cfg.scripted).then(Clock::detect);
    let mut env = match &clock {
        Some(clock) => crate::machine::environment(cfg, clock, &cpus),
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
        save::expected_seconds(&saving, &env, &cfg.run_id, experiments)
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
    // A suite prints each experiment briefly; one experiment, or --verbose, prints it whole.
    let brief = experiments.len() > 1 && !cfg.verbose;
    let mut outputs = outputs(cfg);
    let mut doc = ResultDoc {
        schema: SCHEMA.into(),
        run_id: Some(cfg.run_id.clone()),
        started_at: Some(humantime::format_rfc3339_seconds(started).to_string()),
        environment: env.clone(),
        experiments: Vec::new(),
        bill: None,
    };
    let mut repeats = 0;
    'experiments: for (index, e) in experiments.iter().enumerate() {
        if reader_gone() {
            break;
        }
        bar.stage(index + 1, experiments.len());
        bar.suite(&expected, index);
        let job = Request {
            experiment: e.clone(),
            sampler: cfg.sampler,
            quick: cfg.quick,
            cpus: cpus.clone(),
            clock: clock.as_ref().map(|c| c.info().clone()),
        };
        // A check failed while the host or other programs held the CPUs is not the OS's doing:
        // such an experiment is measured once more (at most REPEATS times a run), and the
        // second pass stands, with a note of the first.
        let mut first: Option<(usize, Held)> = None;
        let result = loop {
            let probe = LoadProbe::start();
            // ns's network namespaces are torn down by the kernel's netns workers during and
            // after it: its own work, not another program's load.
            let probe = if e.name() == oscost_measure::experiments::ns::NAME {
                probe.with_own_workqueue("netns")
            } else {
                probe
            };
            let measured =
                child::measure_in_processes(&job, scratch.path(), &bar, &children, &cancel);
            let (out, tasks) = match measured {
                Ok(r) => r,
                Err(err) => {
                    let files = outputs.partial_files();
                    let kept = if !doc.experiments.is_empty() && !files.is_empty() {
                        let files: Vec<String> =
                            files.iter().map(|p| p.display().to_string()).collect();
                        format!(
                            " (the results of the experiments before it are in {})",
                            files.join(", ")
                        )
                    } else {
                        String::new()
                    };
                    // The reader of stdout went away: stop quietly, keeping what was measured.
                    if reader_gone() && !cancel.load(Ordering::SeqCst) {
                        break 'experiments;
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
            let mut result = summarise::experiment(e.name(), out, ns_per_tick, Some(load));
            let failed = result.cases.iter().filter(|c| !c.checks_passed).count();
            let held = result.held();
            match next_pass(first, failed, held, repeats < REPEATS && !cfg.scripted) {
                Pass::Again(h) => {
                    repeats += 1;
                    first = Some((failed, h));
                    bar.message(&format!(
                        "measuring {} again: {}",
                        e.name(),
                        Held::words(&[h])
                    ));
                    continue;
                }
                Pass::Keep(note) => result.notes.extend(note),
            }
            break result;
        };
        if cfg.study.is_none() || cfg.verbose {
            show::show(cfg, &result, &tick_unit, brief)?;
        }
        figures += export::write_figures(&result, cfg.svg.as_deref(), cfg.series.as_deref())?;
        doc.experiments.push(result);
        outputs.write(&doc, false, not_kept)?;
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
        figures += show::show_study(cfg, name, &doc)?;
    } else if !doc.experiments.is_empty() && !reader_gone() {
        if brief {
            show::brief_tail(cfg, &doc)?;
        }
        show::datasheet(cfg, &doc)?;
    }
    outputs.write(&doc, true, not_kept)?;
    keep_elsewhere(&outputs, &doc);
    if let Some(text) = outputs.stdout(&doc)? {
        print_stdout(&text)?;
    }
    // A run its reader left early (`| head`) holds only some of its experiments: the history
    // keeps whole runs, so it is not saved.
    let in_history = doc.experiments.len() == experiments.len() && save::save(saving, &doc, cfg)?;
    Ok(Saved {
        run_id: cfg.run_id.clone(),
        in_history,
        lost: outputs.lost().to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUSY: Held = Held {
        host: 0.0,
        programs: 0.34,
    };

    #[test]
    fn a_check_failed_while_others_held_the_cpus_is_measured_once_more() {
        assert_eq!(next_pass(None, 2, Some(BUSY), true), Pass::Again(BUSY));
        // Not held, nothing failed, or no repeat left: the pass stands as it is.
        assert_eq!(next_pass(None, 2, None, true), Pass::Keep(None));
        assert_eq!(next_pass(None, 0, Some(BUSY), true), Pass::Keep(None));
        assert_eq!(next_pass(None, 2, Some(BUSY), false), Pass::Keep(None));
        // A second pass stands, whatever it shows, and says why it was made.
        let Pass::Keep(Some(note)) = next_pass(Some((2, BUSY)), 1, Some(BUSY), true) else {
            panic!("a second pass is kept with a note");
        };
        assert_eq!(note.kind(), MessageKind::MeasuredTwice);
        assert_eq!(
            note.as_str(),
            "measured twice: in the first pass 2 cases failed a check while other programs took \
             34 % of the CPUs, not the OS's doing; these figures are the second pass's"
        );
    }
}
