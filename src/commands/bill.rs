//! `oscost bill`: what the OS costs a program. Runs the command (or attaches to a process)
//! through the measuring layer, prices the bill with the newest datasheet figures the history
//! holds, and prints it to stderr (the command's own output stays its own).

use crate::args::BillArgs;
use crate::config::{Config, Sink};
use crate::inputs::{names_a_file, read_result_file};
use oscost_measure::bill::{BillError, Control, Subject};
use oscost_report::bill::PriceBook;
use oscost_sys::bill::Depth;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The experiments whose runs hold prices.
const PRICED_BY: [&str; 3] = ["syscall", "fault", "switch"];

/// Runs the bill and returns the command's exit status as oscost's own.
pub fn run(args: BillArgs, cfg: &Config) -> anyhow::Result<ExitCode> {
    if matches!(cfg.json, Some(Sink::Stdout)) && args.pid.is_none() {
        anyhow::bail!(
            "bill does not write --json to stdout: the command's own output goes there (give \
             --json a file)"
        );
    }
    if args.for_.is_some() && args.pid.is_none() {
        anyhow::bail!("--for goes with --pid (a command is billed until it ends)");
    }
    if let Some(p) = &args.output {
        oscost_report::output::check_writable(p)?;
    }
    if let Some(Sink::File(p)) = &cfg.json {
        oscost_report::output::check_writable(p)?;
    }
    // Prices first: a bad --prices is refused before the command runs.
    let (book, from) = prices(args.prices.as_deref(), cfg)?;
    let subject = match args.pid {
        Some(pid) => Subject::Process(pid, args.for_),
        None => Subject::Command(args.command.clone()),
    };
    let depth = if args.count_only {
        Depth::Count
    } else {
        Depth::Time
    };
    let control = Arc::new(Control::default());
    let interrupted = forward_signals(&control, args.pid.is_some())?;
    let mut bill = match oscost_measure::bill::run(&subject, depth, args.verify, &control) {
        Ok(b) => b,
        Err(BillError::NotStarted { message, exit }) => {
            eprintln!("oscost: {message}");
            return Ok(ExitCode::from(exit));
        }
        Err(BillError::Interrupted) => {
            eprintln!("oscost: {}", BillError::Interrupted);
            return Ok(ExitCode::from(130));
        }
        Err(e) => return Err(e.into()),
    };
    oscost_report::bill::assemble(&mut bill, book.as_ref(), from);
    if let Some(Sink::File(p)) = &cfg.json {
        oscost_report::output::write_atomic(p, &(serde_json::to_string_pretty(&bill)? + "\n"))?;
    } else if let Some(Sink::Stdout) = &cfg.json {
        crate::stdout::print_stdout(&(serde_json::to_string_pretty(&bill)? + "\n"))?;
    }
    let width = oscost_report::export::terminal::layout_width(args.output.is_none())
        .map_or(80, |w| usize::from(w).min(100));
    let text = oscost_report::bill::render(&bill, width);
    match &args.output {
        Some(p) => oscost_report::output::write_atomic(p, &text)?,
        None if !cfg.quiet => eprint!("\n{text}"),
        None => {}
    }
    let code = match bill.ending {
        oscost_model::bill::Ending::Exited(c) => ExitCode::from(c as u8),
        // As a shell says it: 128 + the signal.
        oscost_model::bill::Ending::Killed(s) => ExitCode::from((128 + s) as u8),
        _ if interrupted.load(Ordering::SeqCst) => ExitCode::from(130),
        _ => ExitCode::SUCCESS,
    };
    Ok(code)
}

/// Forwards SIGINT, SIGTERM, SIGHUP and SIGQUIT to the command while it runs (a terminal's
/// Ctrl-C reaches it directly too; a second copy of it changes nothing); with an attached
/// process, the first one stops billing instead. Returns whether one came.
fn forward_signals(
    control: &Arc<Control>,
    attached: bool,
) -> anyhow::Result<Arc<std::sync::atomic::AtomicBool>> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let came = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT])?;
    let (control, flag) = (Arc::clone(control), Arc::clone(&came));
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                flag.store(true, Ordering::SeqCst);
                if attached {
                    control.stop.store(true, Ordering::SeqCst);
                    continue;
                }
                let pid = control.child.load(Ordering::SeqCst);
                if pid > 0 {
                    let _ = oscost_sys::launch::signal(pid, sig);
                } else {
                    control.early.store(sig, Ordering::SeqCst);
                }
            }
        })?;
    Ok(came)
}

/// The price book: from `--prices` (a file or a run), else for each price the newest run of
/// the history that measured it; and a line saying where the prices come from.
fn prices(
    given: Option<&str>,
    cfg: &Config,
) -> anyhow::Result<(Option<PriceBook>, Option<String>)> {
    let mut book = PriceBook::default();
    if let Some(arg) = given {
        if names_a_file(arg) {
            let doc = read_result_file(Path::new(arg))?;
            book.add_run(&doc, arg);
        } else {
            let history = cfg.history_location()?;
            let doc = crate::inputs::load_run(arg, history.as_ref())
                .map_err(|e| anyhow::anyhow!("--prices {arg}: {e:#}"))?;
            book.add_run(&doc, doc.run_id.as_deref().unwrap_or(arg));
        }
        if book.runs.is_empty() {
            anyhow::bail!(
                "--prices {arg}: it measured none of the prices (run `oscost syscall`, `oscost \
                 fault` or `oscost switch`, or the default suite)"
            );
        }
        let from = format!("from {arg}");
        return Ok((Some(book), Some(from)));
    }
    let none = "none in the history: `oscost` (the default suite) measures them";
    let Some((location, explicit)) = cfg.history_location()? else {
        return Ok((None, Some(none.into())));
    };
    if let oscost_history::Location::File(p) = &location {
        if !p.exists() {
            return Ok((None, Some(none.into())));
        }
    }
    let Ok(history) = crate::store::open_read_only(&location, explicit, "") else {
        return Ok((None, Some(none.into())));
    };
    let runs = history.list().unwrap_or_default();
    for r in runs
        .iter()
        .filter(|r| {
            r.experiments
                .iter()
                .any(|e| PRICED_BY.contains(&e.as_str()))
        })
        .take(30)
    {
        if let Ok(doc) = history.get(&r.run_id) {
            book.add_run(&doc, &r.run_id);
        }
        if book.complete() {
            break;
        }
    }
    if book.runs.is_empty() {
        return Ok((None, Some(none.into())));
    }
    let short: Vec<String> = book
        .runs
        .iter()
        .map(|r| r.chars().take(8).collect())
        .collect();
    let from = format!(
        "the history's newest runs that measured them ({})",
        short.join(", ")
    );
    Ok((Some(book), Some(from)))
}
