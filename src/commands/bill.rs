//! `oscost bill`: what the OS costs a program. Runs the command (or attaches to a process)
//! through the measuring layer, prices the bill with the newest datasheet figures the history
//! holds, and prints it to stderr (the command's own output stays its own).

use crate::args::{BillArgs, BillCommand, BillTrace, Setting};
use crate::config::{Config, Sink};
use crate::inputs::{names_a_file, read_result_file};
use crate::run_id::short_id;
use oscost_measure::bill::{BillError, Control, Counting, Subject, Under};
use oscost_model::ResultDoc;
use oscost_report::bill::PriceBook;
use oscost_sys::bill::Depth;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;

/// The experiments whose runs hold prices.
const PRICED_BY: [&str; 5] = ["syscall", "fault", "switch", "seccomp", "ns"];

/// Runs the bill and returns the command's exit status as oscost's own.
pub fn run(args: BillArgs, cfg: &Config) -> anyhow::Result<ExitCode> {
    if let Some(BillCommand::Show {
        bill,
        prices,
        predict_under,
    }) = &args.saved
    {
        let bill = match bill {
            Some(b) => b.clone(),
            None => newest_bill(cfg)?,
        };
        return match predict_under {
            Some(s) => predict(&bill, s, prices.as_deref(), cfg),
            None => show(&bill, prices.as_deref(), cfg),
        };
    }
    // A command's own stdout is its own: no document goes there beside it.
    let to_stdout = [("--json", &cfg.json), ("--report", &cfg.report)]
        .into_iter()
        .find(|(_, s)| matches!(s, Some(Sink::Stdout)));
    if let (Some((flag, _)), None) = (to_stdout, args.pid) {
        anyhow::bail!(
            "bill does not write {flag} to stdout: the command's own output goes there (give \
             {flag} a file)"
        );
    }
    if args.for_.is_some() && args.pid.is_none() {
        anyhow::bail!("--for goes with --pid (a command is billed until it ends)");
    }
    // --json and --report were checked when the options were read.
    if let Some(p) = &args.output {
        oscost_report::output::check_writable(p)?;
    }
    // Prices first: a bad --prices is refused before the command runs; so is a --history
    // that cannot take the bill.
    // A --prices run that timed only a profile file (`seccomp --profile`), or only `switch`'s
    // wake-ups, holds no price of the book, and is still what the rounds under that file (or
    // on one CPU) predict with.
    let file_rounds = args.rounds.is_some()
        && matches!(args.under, Some(Setting::SeccompFile(_) | Setting::Cpus(_)));
    let (book, from) = prices_or_none(args.prices.as_deref(), file_rounds, cfg)?;
    let saving = crate::commands::measure::saving(cfg)?;
    let subject = match args.pid {
        Some(pid) => Subject::Process(pid, args.for_),
        None => Subject::Command(
            args.command.clone(),
            args.under.as_ref().map(under).transpose()?,
        ),
    };
    let counting = counting(&args)?;
    let control = Arc::new(Control::default());
    let interrupted = forward_signals(&control, args.pid.is_some())?;
    if let (Some(n), Some(setting)) = (args.rounds, &args.under) {
        return check_rounds(&args, setting, n, book.as_ref(), from, &control, cfg);
    }
    let started = std::time::SystemTime::now();
    let mut bill = match bill_once(&subject, counting, args.verify, &control)? {
        Ok(b) => b,
        Err(code) => return Ok(code),
    };
    oscost_report::bill::assemble(&mut bill, book.as_ref(), from);
    let code = match bill.ending {
        oscost_model::bill::Ending::Exited(c) => ExitCode::from(c as u8),
        // As a shell says it: 128 + the signal.
        oscost_model::bill::Ending::Killed(s) => ExitCode::from((128 + s) as u8),
        _ if interrupted.load(Ordering::SeqCst) => ExitCode::from(130),
        _ => ExitCode::SUCCESS,
    };
    let doc = document(cfg, bill, started);
    write_files(&doc, cfg)?;
    let width = oscost_report::export::terminal::layout_width(args.output.is_none())
        .map_or(80, |w| usize::from(w).min(100));
    let bill = doc.bill.as_ref().expect("a bill's document holds it");
    let text = oscost_report::bill::render(bill, width);
    match &args.output {
        Some(p) => oscost_report::output::write_atomic(p, &text)?,
        None if !cfg.quiet => eprint!("\n{text}"),
        None => {}
    }
    if crate::session::save(saving, &doc, cfg)? && !cfg.quiet {
        let short = short_id(&cfg.run_id);
        eprintln!("saved as run {short} (oscost history show {short}, oscost report {short})");
    }
    Ok(code)
}

/// One bill; or, when the command did not start or a signal came first, oscost's exit
/// status, the reason said in one line.
fn bill_once(
    subject: &Subject,
    counting: Counting,
    verify: bool,
    control: &Control,
) -> anyhow::Result<Result<oscost_model::bill::Bill, ExitCode>> {
    match oscost_measure::bill::run(subject, counting, verify, control) {
        Ok(b) => Ok(Ok(b)),
        Err(BillError::NotStarted { message, exit }) => {
            eprintln!("oscost: {message}");
            Ok(Err(ExitCode::from(exit)))
        }
        Err(BillError::Interrupted) => {
            eprintln!("oscost: {}", BillError::Interrupted);
            Ok(Err(ExitCode::from(130)))
        }
        Err(e) => Err(e.into()),
    }
}

/// `--under SETTING --rounds N`: the command billed `n` times plainly and `n` times under the
/// setting, in turn, and the measured change held against the predicted one.
fn check_rounds(
    args: &BillArgs,
    setting: &Setting,
    n: u32,
    book: Option<&PriceBook>,
    from: Option<String>,
    control: &Control,
    cfg: &Config,
) -> anyhow::Result<ExitCode> {
    if cfg.json.is_some() || cfg.report.is_some() || args.output.is_some() {
        anyhow::bail!("--rounds prints a check and writes no bill: drop --json, --report and -o");
    }
    let price = setting_price(setting, book, args.prices.as_deref(), cfg)?.ok_or_else(|| {
        anyhow::anyhow!(
            "--rounds: the history holds no measured price for {} to predict with ({})",
            setting.name(),
            measured_by(setting)
        )
    })?;
    let counting = counting(args)?;
    let (mut plain, mut under_setting) = (Vec::new(), Vec::new());
    let mut ending = oscost_model::bill::Ending::Running;
    for round in 1..=n {
        // Which goes first alternates (A B, B A, …): a run that follows another (warm caches,
        // a CPU's clock settling) is each side's as often.
        let mut order = [None, Some(under(setting)?)];
        if round % 2 == 0 {
            order.reverse();
        }
        for with in order {
            if !cfg.quiet {
                eprintln!(
                    "oscost: round {round} of {n}, {}",
                    if with.is_some() {
                        setting.name()
                    } else {
                        "plain".into()
                    }
                );
            }
            let on = with.is_some();
            let subject = Subject::Command(args.command.clone(), with);
            let mut bill = match bill_once(&subject, counting, false, control)? {
                Ok(b) => b,
                Err(code) => return Ok(code),
            };
            oscost_report::bill::assemble(&mut bill, book, from.clone());
            ending = bill.ending;
            if let oscost_model::bill::Ending::Killed(_) = bill.ending {
                anyhow::bail!(
                    "round {round}: the command was killed ({}): no check from it",
                    oscost_report::bill::subject(&bill)
                );
            }
            if on {
                under_setting.push(bill);
            } else {
                plain.push(bill);
            }
        }
    }
    // The prediction from the plain round of median task time.
    let mut by_time: Vec<&oscost_model::bill::Bill> = plain.iter().collect();
    by_time.sort_by_key(|b| b.task_time_ns);
    let typical = by_time[by_time.len() / 2];
    let predicted = prediction(typical, setting, &price)?;
    let width =
        oscost_report::export::terminal::layout_width(true).map_or(80, |w| usize::from(w).min(100));
    let last = under_setting.last().expect("at least three rounds");
    let mut text = oscost_report::bill::render(last, width);
    text.push_str(&oscost_report::bill::render_prediction(&predicted, width));
    match oscost_report::bill::check_under(predicted, &plain, &under_setting) {
        Some(c) => text.push_str(&oscost_report::bill::render_check(&c, width)),
        None => text.push_str("no check: the rounds' task times give no ratio\n"),
    }
    if !cfg.quiet {
        eprint!("\n{text}");
    }
    Ok(match ending {
        oscost_model::bill::Ending::Exited(c) => ExitCode::from(c as u8),
        _ => ExitCode::SUCCESS,
    })
}

/// What counts the program's events, and how much the probe does per call.
fn counting(args: &BillArgs) -> anyhow::Result<Counting> {
    Ok(match (args.trace_with, args.count_only) {
        (BillTrace::None, true) => {
            anyhow::bail!("--count-only is the probe's: drop it with --trace-with none")
        }
        (BillTrace::None, false) if args.verify => {
            anyhow::bail!("--verify checks the probe's count: drop it with --trace-with none")
        }
        (BillTrace::None, false) => Counting::None,
        // perf only counts: --count-only asks for what it does anyway.
        (BillTrace::Perf, _) => Counting::Perf,
        (BillTrace::Bpf, true) => Counting::Bpf(Depth::Count),
        (BillTrace::Bpf, false) => Counting::Bpf(Depth::Time),
    })
}

/// The price a built-in setting is predicted with; `None` for a profile file, whose price is
/// looked up by its content ([`setting_price`]).
fn priced(s: &Setting) -> Option<oscost_report::bill::Priced> {
    match s {
        Setting::SeccompDefault => Some(oscost_report::bill::Priced::SeccompProfile),
        Setting::Container => Some(oscost_report::bill::Priced::ContainerSetup),
        Setting::SeccompFile(_) | Setting::Cpus(_) => None,
    }
}

/// The price `s` is predicted with: a built-in setting's from `book`; a profile file's from
/// the run `prices_arg` names, else the newest run of the history whose `seccomp --profile`
/// measured a file of the same content (its SHA-256), whatever the file was called then; one
/// CPU's (a same-CPU wake-up less a cross-CPU one) likewise from one run of `switch` that
/// measured both. Several CPUs have none, said in one line.
fn setting_price(
    s: &Setting,
    book: Option<&PriceBook>,
    prices_arg: Option<&str>,
    cfg: &Config,
) -> anyhow::Result<Option<oscost_model::bill::Price>> {
    match s {
        Setting::SeccompFile(path) => {
            let file = oscost_measure::seccomp_file::ProfileFile::read(path)?;
            newest_price("seccomp", prices_arg, cfg, |doc, run| {
                oscost_report::bill::seccomp_file_price(doc, run, &file.digest)
            })
        }
        Setting::Cpus(cpus) if cpus.len() > 1 => {
            anyhow::bail!("{}", oscost_report::bill::several_cpus(&s.name()))
        }
        Setting::Cpus(_) => {
            newest_price("switch", prices_arg, cfg, oscost_report::bill::wake_price)
        }
        _ => Ok(book.and_then(|b| priced(s).and_then(|p| b.get(p))).cloned()),
    }
}

/// A price `find` reads from the run `prices_arg` names, else from the newest run of the
/// history that ran `experiment` and holds it.
fn newest_price(
    experiment: &str,
    prices_arg: Option<&str>,
    cfg: &Config,
    find: impl Fn(&ResultDoc, &str) -> Option<oscost_model::bill::Price>,
) -> anyhow::Result<Option<oscost_model::bill::Price>> {
    if let Some(arg) = prices_arg {
        let doc = prices_doc(arg, cfg)?;
        return Ok(find(&doc, doc.run_id.as_deref().unwrap_or(arg)));
    }
    let Some((location, explicit)) = cfg.history_location()? else {
        return Ok(None);
    };
    if let oscost_history::Location::File(p) = &location {
        if !p.exists() {
            return Ok(None);
        }
    }
    let Ok(history) = crate::store::open_read_only(&location, explicit, "") else {
        return Ok(None);
    };
    for r in history
        .list()
        .unwrap_or_default()
        .iter()
        .filter(|r| r.experiments.iter().any(|e| e == experiment))
    {
        if let Some(p) = history
            .get(&r.run_id)
            .ok()
            .and_then(|d| find(&d, &r.run_id))
        {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

/// Which experiment measures a setting's price, for the line that says none was found.
fn measured_by(s: &Setting) -> String {
    match s {
        Setting::SeccompDefault => {
            "`oscost seccomp` measures what the profile adds to a call".into()
        }
        Setting::SeccompFile(p) => format!(
            "`oscost seccomp --profile {}` measures what this profile adds to a call",
            p.display()
        ),
        Setting::Container => "`oscost ns --cases container` measures what a container's \
                               namespaces add to a program's life"
            .into(),
        Setting::Cpus(_) => oscost_report::bill::WAKE_PRICED_BY.into(),
    }
}

/// `bill` predicted under `s` at `price`.
fn prediction(
    bill: &oscost_model::bill::Bill,
    s: &Setting,
    price: &oscost_model::bill::Price,
) -> anyhow::Result<oscost_report::bill::Prediction> {
    use oscost_model::seccomp_profile::{verdict, Action, Verdict};
    Ok(match s {
        Setting::SeccompDefault => oscost_report::bill::predict_seccomp(
            bill,
            &s.name(),
            price,
            &profile_allows,
            &profile_reads_arguments,
        ),
        Setting::SeccompFile(path) => {
            let file = oscost_measure::seccomp_file::ProfileFile::read(path)?;
            let chosen = file.profile.chosen(&oscost_sys::seccomp::this_machine());
            let v = |c: &str| verdict(&file.profile, &chosen, c);
            oscost_report::bill::predict_seccomp(
                bill,
                &s.name(),
                price,
                // clone3 answered ENOSYS is what runtimes do so that a C library falls back
                // to clone: not a failure the program sees.
                &|c| match v(c) {
                    Verdict::Refused(Action::Errno, e) => c == "clone3" && e == ENOSYS,
                    Verdict::Refused(..) => false,
                    _ => true,
                },
                &|c| v(c) == Verdict::ReadsArguments,
            )
        }
        Setting::Container => oscost_report::bill::predict_container(bill, &s.name(), price),
        Setting::Cpus(_) => {
            oscost_report::bill::predict_cpus(bill, &s.name(), price).ok_or_else(|| {
                anyhow::anyhow!(
                    "{}: the bill {}",
                    s.name(),
                    oscost_report::bill::NO_CROSS_COUNT
                )
            })?
        }
    })
}

/// ENOSYS on Linux.
const ENOSYS: u32 = 38;

/// The setting a command runs under, built.
fn under(s: &Setting) -> anyhow::Result<Under> {
    match s {
        Setting::Container if oscost_sys::mount::effective_uid() != 0 => anyhow::bail!(
            "--under container makes new namespaces, which takes root (CAP_SYS_ADMIN): run \
             oscost as root, or bill the plain command and `oscost bill show \
             --predict-under container`"
        ),
        Setting::Container => Ok(Under::Container),
        Setting::Cpus(cpus) => {
            let allowed = oscost_sys::affinity()?;
            let not: Vec<usize> = cpus
                .iter()
                .copied()
                .filter(|c| !allowed.contains(c))
                .collect();
            if !not.is_empty() {
                let list = oscost_model::cpulist::format(&not);
                anyhow::bail!(
                    "--under {}: {} not among the CPUs oscost may run on ({})",
                    s.name(),
                    if not.len() == 1 {
                        format!("CPU {list} is")
                    } else {
                        format!("CPUs {list} are")
                    },
                    oscost_model::cpulist::format(&allowed)
                );
            }
            Ok(Under::Cpus {
                name: s.name(),
                cpus: cpus.clone(),
            })
        }
        Setting::SeccompFile(path) => {
            let file = oscost_measure::seccomp_file::ProfileFile::read(path)?;
            Ok(Under::Seccomp {
                name: s.name(),
                program: file.compile()?.program,
            })
        }
        Setting::SeccompDefault => Ok(Under::Seccomp {
            name: s.name(),
            program: oscost_sys::seccomp::Program::profile().ok_or_else(|| {
                anyhow::anyhow!(
                    "--under {}: oscost has no profile for this architecture",
                    s.name()
                )
            })?,
        }),
    }
}

/// Whether the built-in profile lets `call` through (clone3 is answered ENOSYS, which a C
/// library takes as "use clone": not a refusal the program sees).
fn profile_allows(call: &str) -> bool {
    call == "clone3" || oscost_sys::seccomp::PROFILE_CALLS.contains(&call)
}

/// The calls whose arguments the built-in profile reads.
fn profile_reads_arguments(call: &str) -> bool {
    ["personality", "clone", "socket"].contains(&call)
}

/// `oscost bill show BILL --predict-under SETTING`: the saved bill's counts priced under a
/// setting it did not run under.
fn predict(
    arg: &str,
    s: &Setting,
    prices_arg: Option<&str>,
    cfg: &Config,
) -> anyhow::Result<ExitCode> {
    let doc = load_bill(arg, cfg)?;
    let bill = doc.bill.as_ref().expect("load_bill gives a bill");
    if let Some(setting) = &bill.under {
        anyhow::bail!(
            "{arg} was billed under {setting} already: predict from a bill of the program as it \
             runs plainly"
        );
    }
    // A profile file's price is looked up by its content alone, and one CPU's by its pair of
    // figures, not in the book.
    let book = match s {
        Setting::SeccompFile(_) | Setting::Cpus(_) => None,
        _ => prices(prices_arg, cfg)?.0,
    };
    let price = setting_price(s, book.as_ref(), prices_arg, cfg)?.ok_or_else(|| {
        anyhow::anyhow!(
            "--predict-under {}: the history holds no measured price for it ({})",
            s.name(),
            measured_by(s)
        )
    })?;
    let p = prediction(bill, s, &price)?;
    let width = oscost_report::export::terminal::layout_width(false)
        .map_or(80, |w| usize::from(w).min(100));
    let head = oscost_report::bill::headline(bill, width);
    let text = format!(
        "{head}\n{}",
        oscost_report::bill::render_prediction(&p, width)
    );
    crate::stdout::print_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// A saved bill: a result file, or a run of the history, which must be a bill.
fn load_bill(arg: &str, cfg: &Config) -> anyhow::Result<ResultDoc> {
    let doc = if names_a_file(arg) {
        read_result_file(Path::new(arg))?
    } else {
        let history = cfg.history_location()?;
        crate::inputs::load_run(arg, history.as_ref())
            .map_err(|e| anyhow::anyhow!("{arg}: no such file, and {e:#}"))?
    };
    if doc.bill.is_none() {
        anyhow::bail!(
            "{arg} is a run of experiments, not a bill (`oscost history list` marks bills; \
             `oscost bill -- CMD` makes one)"
        );
    }
    Ok(doc)
}

/// The id of the history's newest bill.
fn newest_bill(cfg: &Config) -> anyhow::Result<String> {
    let none = "no bill in the history (`oscost bill -- CMD` makes one)";
    let Some((location, explicit)) = cfg.history_location()? else {
        anyhow::bail!("{none}");
    };
    if let oscost_history::Location::File(p) = &location {
        if !p.exists() {
            anyhow::bail!("{none}");
        }
    }
    let history = crate::store::open_read_only(&location, explicit, "")?;
    history
        .list()?
        .into_iter()
        .find(|r| r.billed().is_some())
        .map(|r| r.run_id)
        .ok_or_else(|| anyhow::anyhow!("{none}"))
}

/// `oscost bill show BILL [--prices RUN|FILE]`: a saved bill on stdout, as it was made or
/// with its counts re-priced.
fn show(arg: &str, prices_arg: Option<&str>, cfg: &Config) -> anyhow::Result<ExitCode> {
    let doc = load_bill(arg, cfg)?;
    let bill = doc.bill.as_ref().expect("load_bill gives a bill");
    let width = oscost_report::export::terminal::layout_width(false)
        .map_or(80, |w| usize::from(w).min(100));
    let Some(given) = prices_arg else {
        crate::stdout::print_stdout(&oscost_report::bill::render(bill, width))?;
        return Ok(ExitCode::SUCCESS);
    };
    if bill.prices.is_empty() {
        anyhow::bail!(
            "{arg} was billed without prices, so there is nothing to hold {given}'s against \
             (bill the program again after a run of `oscost`, or give that run as its --prices)"
        );
    }
    let (book, _) = prices(Some(given), cfg)?;
    let book = book.expect("prices(Some) gives a book or an error");
    let here_from = bill
        .prices_from
        .clone()
        .unwrap_or_else(|| "the bill's".into());
    let repriced = oscost_report::bill::reprice(bill, &book);
    let head = oscost_report::bill::headline(bill, width);
    let text = format!(
        "{head}\n{}",
        oscost_report::bill::render_repricing(
            &repriced,
            &here_from,
            &format!("from {given}"),
            width
        )
    );
    crate::stdout::print_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The bill as a result document: this machine's description, the run's id and start, no
/// experiments. The clock is calibrated briefly, after the program ran: a bill times nothing
/// with it, and the environment only describes it.
fn document(cfg: &Config, bill: oscost_model::bill::Bill, started: SystemTime) -> ResultDoc {
    let cpus = oscost_sys::affinity().unwrap_or_else(|_| oscost_measure::cpuset::online());
    let clock = oscost_measure::Clock::detect_with(std::time::Duration::from_millis(10));
    ResultDoc {
        schema: oscost_model::SCHEMA.into(),
        run_id: Some(cfg.run_id.clone()),
        started_at: Some(humantime::format_rfc3339_seconds(started).to_string()),
        environment: crate::machine::environment(cfg, &clock, &cpus),
        experiments: Vec::new(),
        bill: Some(bill),
    }
}

/// `--json` and `--report`, each written whole or not at all.
fn write_files(doc: &ResultDoc, cfg: &Config) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(doc)? + "\n";
    match &cfg.json {
        Some(Sink::File(p)) => oscost_report::output::write_atomic(p, &json)?,
        Some(Sink::Stdout) => crate::stdout::print_stdout(&json)?,
        None => {}
    }
    if let Some(sink) = &cfg.report {
        let label = short_id(&cfg.run_id).to_owned();
        let html = oscost_report::export::html::report(&[(label, doc)])?;
        match sink {
            Sink::File(p) => oscost_report::output::write_atomic(p, &html)?,
            Sink::Stdout => crate::stdout::print_stdout(&html)?,
        }
    }
    Ok(())
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
                let pid = match control.child.load(Ordering::SeqCst) {
                    pid if pid > 0 => {
                        let _ = oscost_sys::launch::signal(pid, sig);
                        pid
                    }
                    _ => {
                        // Before the command started: the bill forwards it as it starts, and
                        // what follows below still applies once it has.
                        control.early.store(sig, Ordering::SeqCst);
                        match started(&control) {
                            Some(pid) => pid,
                            None => continue,
                        }
                    }
                };
                // A PID namespace's init gets only the signals it handles (as under a
                // container runtime without an init of its own): one that did not end it in a
                // second is followed by SIGKILL, so Ctrl-C still ends the run.
                if control.init.load(Ordering::SeqCst) {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                    if control.child.load(Ordering::SeqCst) == pid {
                        eprintln!(
                            "oscost: the command, its PID namespace's init, did not end on \
                             signal {sig} (it has no handler for it): killed"
                        );
                        let _ = oscost_sys::launch::signal(pid, signal_hook::consts::SIGKILL);
                    }
                }
            }
        })?;
    Ok(came)
}

/// The command's pid once the bill has started it and forwarded a signal that came before
/// (taken from `early`); `None` when the bill gave up instead, or not within five seconds.
fn started(control: &Control) -> Option<i32> {
    for _ in 0..500 {
        let pid = control.child.load(Ordering::SeqCst);
        if pid > 0 && control.early.load(Ordering::SeqCst) == 0 {
            return Some(pid);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    None
}

/// The result document `--prices` names: a file, or a run of the history.
fn prices_doc(arg: &str, cfg: &Config) -> anyhow::Result<ResultDoc> {
    if names_a_file(arg) {
        return read_result_file(Path::new(arg));
    }
    let history = cfg.history_location()?;
    crate::inputs::load_run(arg, history.as_ref())
        .map_err(|e| anyhow::anyhow!("--prices {arg}: {e:#}"))
}

/// [`prices`], or with `none_is_fine`, no book when the `--prices` run holds none of its prices.
fn prices_or_none(
    given: Option<&str>,
    none_is_fine: bool,
    cfg: &Config,
) -> anyhow::Result<(Option<PriceBook>, Option<String>)> {
    if let (Some(arg), true) = (given, none_is_fine) {
        let doc = prices_doc(arg, cfg)?;
        let mut book = PriceBook::default();
        book.add_run(&doc, doc.run_id.as_deref().unwrap_or(arg));
        let book = (!book.runs.is_empty()).then_some(book);
        return Ok((book, Some(format!("from {arg}"))));
    }
    prices(given, cfg)
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
