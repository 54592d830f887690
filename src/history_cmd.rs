//! `oscost history`: the runs kept in the history database, listed, shown, followed across
//! runs, exported, imported and removed.

use crate::cli::GlobalOpts;
use crate::session::print_stdout;
use anyhow::Context as _;
use clap::Subcommand;
use oscost_history::{History, HistoryError, Location, RunSummary, TrendPoint};
use oscost_report::render;
// Text from result files, which may carry escape sequences, is shown, never sent raw.
use oscost_report::termtext::{for_terminal, one_line};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What to do with the history.
#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// The runs in the history, newest first, with the host each ran on; with --json FILE or
    /// --csv FILE (`-` for stdout) also as data: run_id, started_at, saved_at, hostname,
    /// oscost_version, kernel, cpu_model, experiments, case_count
    List,
    /// A run's machine and tables
    Show {
        /// The run: its id, the first 4 or more characters of it, `latest`, or `latest~N` (N runs
        /// before the latest)
        run: String,
    },
    /// One case's (or derived figure's) median in every run that has it, oldest first, marking
    /// where the machine's environment changed; with --svg FILE also drawn as a line chart
    /// (--svg DIR: into DIR/<case id>.svg)
    Trend {
        /// The case id, as the tables name it (`syscall.getpid`,
        /// `switch.pipe.threads.same.switch_cost`)
        case_id: String,
    },
    /// A run's full result document (schema oscost/2) on stdout, or into the file of --json
    Export {
        /// The run: its id, the first 4 or more characters of it, `latest`, or `latest~N` (N runs
        /// before the latest)
        run: String,
    },
    /// Result files (written with --json, any schema oscost reads) into the history; a run
    /// already there is left as it is
    Import {
        /// The result files
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Result files into another store, a PostgreSQL database a fleet shares
    /// (`--to postgres://USER@HOST/DB`) or an SQLite file: one line per file, then `pushed N,
    /// already there M`; a run already there (the same run_id) is left as it is
    Push {
        /// The result files
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The store: a postgres:// URL, an SQLite file, or @FILE holding either (default: the
        /// history, as --history, OSCOST_HISTORY or OSCOST_HISTORY_FILE name it)
        #[arg(long, value_name = "URL")]
        to: Option<String>,
    },
    /// Removes a run from the history
    Rm {
        /// The run: its id, the first 4 or more characters of it, `latest`, or `latest~N` (N runs
        /// before the latest)
        run: String,
    },
}

impl HistoryCommand {
    /// The name shown in messages (`history list`) and the global options it uses.
    pub fn uses(&self) -> (&'static str, &'static [&'static str]) {
        match self {
            HistoryCommand::List => ("history list", &["--history", "--json", "--csv"]),
            HistoryCommand::Show { .. } => ("history show", &["--history"]),
            HistoryCommand::Trend { .. } => ("history trend", &["--history", "--svg"]),
            HistoryCommand::Export { .. } => ("history export", &["--history", "--json"]),
            HistoryCommand::Import { .. } => ("history import", &["--history"]),
            HistoryCommand::Push { .. } => ("history push", &["--history"]),
            HistoryCommand::Rm { .. } => ("history rm", &["--history"]),
        }
    }
}

/// The characters of a run id shown in lists and messages; [`History::resolve`] takes them
/// back.
pub fn short_id(run_id: &str) -> &str {
    run_id.get(..8).unwrap_or(run_id)
}

/// The history `spec` names (`from` is the option or variable that gave it, for messages):
/// an SQLite path, a postgres:// URL, or `@FILE` for a file holding either. What the file
/// holds is never shown: it may carry a password.
pub fn location(spec: &str, from: &str) -> anyhow::Result<Location> {
    let (text, shown) = match spec.strip_prefix('@') {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| {
                anyhow::anyhow!(
                    "{from} {spec}: cannot read {file} ({}; it holds the history's URL or                      path)",
                    match e.kind() {
                        std::io::ErrorKind::NotFound => "no such file".to_owned(),
                        _ => e.to_string(),
                    }
                )
            })?;
            let text = text.trim().to_owned();
            if text.is_empty() || text.starts_with('@') {
                anyhow::bail!(
                    "{from} {spec}: {file} should hold the history's URL or path on one line"
                );
            }
            (text, format!("{from} {spec}"))
        }
        None => (spec.to_owned(), from.to_owned()),
    };
    Location::parse(&text).map_err(|e| anyhow::anyhow!("{shown}: {e}"))
}

/// Opens the history at `location` for a command, with a hint on what to do when it cannot
/// be; `explicit` when the user named it, which the message then does.
pub fn open(location: &Location, explicit: bool, hint: &str) -> anyhow::Result<History> {
    explain(History::open_at(location), location, explicit, hint)
}

/// [`open`] to read only: nothing in or beside an SQLite database changes.
pub fn open_read_only(location: &Location, explicit: bool, hint: &str) -> anyhow::Result<History> {
    explain(
        History::open_read_only_at(location),
        location,
        explicit,
        hint,
    )
}

fn explain(
    opened: Result<History, HistoryError>,
    location: &Location,
    explicit: bool,
    hint: &str,
) -> anyhow::Result<History> {
    opened.map_err(|e| match e {
        HistoryError::CreateDir { .. } | HistoryError::Open { .. } if explicit => {
            anyhow::anyhow!("--history {}: {e} ({hint})", location.shown())
        }
        HistoryError::CreateDir { .. } | HistoryError::Open { .. } => {
            anyhow::anyhow!("{e} ({hint})")
        }
        e => e.into(),
    })
}

/// Runs one `oscost history` command on the database at `db_path`.
pub fn run(
    cmd: HistoryCommand,
    db: &Location,
    explicit: bool,
    global: &GlobalOpts,
) -> anyhow::Result<ExitCode> {
    // SIGINT and SIGTERM end a wait for another writer's lock, or for a reader of the output.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, std::sync::Arc::clone(&stop))
            .context("installing the signal handlers")?;
    }
    oscost_history::stop_waiting_on(std::sync::Arc::clone(&stop));
    oscost_report::output::stop_waiting_on(std::sync::Arc::clone(&stop));
    let result = run_with(cmd, db, explicit, global);
    if result.is_err() && stop.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(anyhow::Error::new(oscost_measure::Cancelled));
    }
    // SQLite's own errors ("disk I/O error") name no file: name the database.
    result.map_err(|e| match e.downcast_ref::<HistoryError>() {
        Some(HistoryError::Sqlite(_)) => e.context(db.shown()),
        _ => e,
    })
}

fn run_with(
    cmd: HistoryCommand,
    db: &Location,
    explicit: bool,
    global: &GlobalOpts,
) -> anyhow::Result<ExitCode> {
    if let HistoryCommand::Push { files, to } = cmd {
        let (target, explicit) = match to {
            Some(spec) => (location(&spec, "--to")?, true),
            None => (db.clone(), explicit),
        };
        let mut store = open(
            &target,
            explicit,
            "give --to a store oscost can write: postgres://USER@HOST/DB or a file",
        )?;
        return push(&mut store, &files);
    }
    let mut history = match cmd {
        HistoryCommand::Import { .. } | HistoryCommand::Rm { .. } => {
            open(db, explicit, "give --history a path where oscost can write")?
        }
        _ => open_read_only(db, explicit, "give --history the database to read")?,
    };
    match cmd {
        HistoryCommand::List => {
            let runs = history.list()?;
            let mut to_stdout = false;
            for (sink, text) in [
                (
                    &global.json,
                    list_json as fn(&[RunSummary]) -> anyhow::Result<String>,
                ),
                (&global.csv, list_csv),
            ] {
                match sink {
                    Some(p) if p.as_os_str() == "-" || oscost_report::output::is_stdout(p) => {
                        print_stdout(&text(&runs)?)?;
                        to_stdout = true;
                    }
                    Some(p) => oscost_report::output::write_atomic(p, &text(&runs)?)
                        .with_context(|| format!("--json/--csv {}", p.display()))?,
                    None => {}
                }
            }
            // The table goes to stderr when stdout carries data, so the data stays parseable.
            let table = for_terminal(&list(&history, &runs));
            if to_stdout {
                if !global.quiet {
                    eprint!("{table}");
                }
            } else {
                print_stdout(&table)?;
            }
        }
        HistoryCommand::Show { run } => {
            let doc = history.get(&history.resolve(&run)?)?;
            print_stdout(&for_terminal(&show(&doc, global)))?;
        }
        HistoryCommand::Trend { case_id } => {
            let points = history.trend(&case_id)?;
            // The global --svg, which names a directory for a run's figures: a trend is one
            // figure, so a file name is taken too.
            if let Some(svg) = &global.svg {
                // `--svg DIR/` names a directory: one that is missing is not a file name.
                if svg.as_os_str().as_encoded_bytes().ends_with(b"/") && !svg.is_dir() {
                    anyhow::bail!(
                        "--svg {}: no such directory (create it, or give a file name)",
                        svg.display()
                    );
                }
                let path = if svg.is_dir() {
                    svg.join(oscost_report::plot::file_name(&case_id, "svg"))
                } else {
                    svg.clone()
                };
                let rows: Vec<_> = points
                    .iter()
                    .map(|p| oscost_report::trend::TrendRow {
                        label: short_id(&p.run_id).to_owned(),
                        date: p.started_at.as_deref().map(minute).unwrap_or_default(),
                        median_ns: p.median_ns,
                        ci95_ns: p.ci95_ns,
                        env_changed: p.env_changed,
                        checks_passed: p.checks_passed,
                        changes: p.changes.clone(),
                        quick: p.quick,
                    })
                    .collect();
                let text = oscost_report::trend::trend_svg(&case_id, &points[0].unit, &rows);
                oscost_report::output::write_atomic(&path, &text)
                    .with_context(|| format!("--svg {}", svg.display()))?;
            }
            print_stdout(&for_terminal(&trend(&case_id, &points)))?;
        }
        HistoryCommand::Export { run } => {
            let doc = history.get(&history.resolve(&run)?)?;
            let text = render::json(&doc)?;
            match &global.json {
                Some(p) if p.as_os_str() != "-" && !oscost_report::output::is_stdout(p) => {
                    oscost_report::output::write_atomic(p, &text)
                        .with_context(|| format!("--json {}", p.display()))?;
                }
                _ => print_stdout(&text)?,
            }
        }
        HistoryCommand::Import { files } => return import(&mut history, &files),
        HistoryCommand::Push { .. } => unreachable!("handled above"),
        HistoryCommand::Rm { run } => {
            let run_id = history.resolve(&run)?;
            history.remove(&run_id)?;
            print_stdout(&format!("removed run {run_id}\n"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How many documents one transaction of `history push` stores: a commit waits for the disk
/// once per batch instead of once per file, and a batch stays a few hundred MB at most.
const PUSH_BATCH: usize = 100;

/// Pushes each file on its own: a bad one is named on stderr and the others still go in.
fn push(store: &mut History, files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let (mut pushed, mut there, mut failed) = (0, 0, 0);
    for chunk in files.chunks(PUSH_BATCH) {
        let mut docs = Vec::with_capacity(chunk.len());
        let mut names = Vec::with_capacity(chunk.len());
        for file in chunk {
            match read_doc(file) {
                Ok(doc) => {
                    docs.push(doc);
                    names.push(file);
                }
                Err(why) => {
                    eprintln!(
                        "oscost: {}",
                        one_line(&format!("{}: {why}", file.display()))
                    );
                    failed += 1;
                }
            }
        }
        for (saved, file) in store.save_all(&docs)?.iter().zip(names) {
            let line = if saved.new {
                pushed += 1;
                format!("pushed {} ({})", saved.run_id, file.display())
            } else {
                there += 1;
                format!("already there: {} ({})", saved.run_id, file.display())
            };
            // A file name may hold a newline or an escape sequence: one line, shown.
            print_stdout(&format!("{}\n", one_line(&line)))?;
        }
    }
    let mut last = format!("pushed {pushed}, already there {there}");
    if failed > 0 {
        let _ = write!(last, ", {failed} not read");
    }
    print_stdout(&format!("{last} ({})\n", store.shown()))?;
    Ok(if failed > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// A result file read for import or push, or why not, in words.
fn read_doc(file: &Path) -> Result<oscost_model::ResultDoc, String> {
    std::fs::read_to_string(file)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_owned(),
            std::io::ErrorKind::InvalidData => "not a text file".to_owned(),
            _ => e.to_string(),
        })
        .and_then(|text| {
            oscost_model::read(&text).map_err(|e| match e {
                // Its own message says what to do.
                oscost_model::ReadError::Unsupported(_) => e.to_string(),
                e => format!("{e} (give the JSON files oscost writes with --json)"),
            })
        })
}

/// Imports each file on its own: a bad one is named on stderr and the others still go in.
fn import(history: &mut History, files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let mut failed = false;
    for file in files {
        let shown = file.display();
        let doc = read_doc(file);
        match doc {
            Ok(doc) => {
                let saved = history.save(&doc)?;
                print_stdout(&if saved.new {
                    format!("imported {}\n", saved.run_id)
                } else {
                    format!("already in the history: {}\n", saved.run_id)
                })?;
            }
            Err(why) => {
                eprintln!("oscost: {}", one_line(&format!("{shown}: {why}")));
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// An RFC 3339 time in UTC as a table shows it: `2026-11-23 03:13:14`.
fn when(rfc3339: &str) -> String {
    rfc3339
        .replacen('T', " ", 1)
        .trim_end_matches('Z')
        .to_owned()
}

/// The same to the minute, for the trend figure's labels.
fn minute(rfc3339: &str) -> String {
    let w = when(rfc3339);
    w.get(..16).map(str::to_owned).unwrap_or(w)
}

/// Rows of text in columns as wide as their widest cell, the last one not padded.
fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            if i + 1 < r.len() {
                line.push_str(&" ".repeat(widths[i] - cell.chars().count()));
            }
        }
        s += line.trim_end();
        s.push('\n');
    }
    s
}

/// `oscost history list --json`: one object per run, newest first.
fn list_json(runs: &[RunSummary]) -> anyhow::Result<String> {
    let rows: Vec<serde_json::Value> = runs
        .iter()
        .map(|r| {
            serde_json::json!({
                "run_id": r.run_id,
                "started_at": r.started_at,
                "saved_at": r.saved_at,
                "hostname": r.hostname,
                "oscost_version": r.oscost_version,
                "kernel": r.kernel,
                "cpu_model": r.cpu_model,
                "experiments": r.experiments,
                "case_count": r.case_count,
            })
        })
        .collect();
    Ok(serde_json::to_string_pretty(&rows)? + "\n")
}

/// `oscost history list --csv`: one row per run, newest first; experiments joined by spaces.
fn list_csv(runs: &[RunSummary]) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "run_id",
        "started_at",
        "saved_at",
        "hostname",
        "oscost_version",
        "kernel",
        "cpu_model",
        "experiments",
        "case_count",
    ])?;
    for r in runs {
        w.write_record([
            r.run_id.as_str(),
            r.started_at.as_deref().unwrap_or(""),
            &r.saved_at,
            r.hostname.as_deref().unwrap_or(""),
            &r.oscost_version,
            &r.kernel,
            r.cpu_model.as_deref().unwrap_or(""),
            &r.experiments.join(" "),
            &r.case_count.to_string(),
        ])?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// The text of `oscost history list`; a host column when any run records its host.
fn list(history: &History, runs: &[RunSummary]) -> String {
    if runs.is_empty() {
        return format!(
            "no runs in the history yet ({}); a run is saved there when it ends\n",
            history.shown()
        );
    }
    let hosts = runs.iter().any(|r| r.hostname.is_some());
    let mut rows = vec![vec![
        "run".to_owned(),
        "started (UTC)".into(),
        "oscost".into(),
        "kernel".into(),
        "CPU".into(),
        "experiments (figures)".into(),
    ]];
    if hosts {
        rows[0].insert(1, "host".into());
    }
    for r in runs {
        let mut row = vec![
            short_id(&r.run_id).to_owned(),
            match &r.started_at {
                Some(t) => when(t),
                None => "-".into(),
            },
            r.oscost_version.clone(),
            r.kernel.clone(),
            r.cpu_model.clone().unwrap_or_else(|| "-".into()),
            format!("{} ({})", r.experiments.join(", "), r.case_count),
        ];
        if hosts {
            row.insert(1, r.hostname.clone().unwrap_or_else(|| "-".into()));
        }
        rows.push(row);
    }
    let mut s = columns(&rows);
    let _ = writeln!(
        s,
        "{} run{} in {}",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" },
        history.shown()
    );
    s
}

/// The text of `oscost history show`: the run's header, then each experiment's tables.
fn show(doc: &oscost_model::ResultDoc, global: &GlobalOpts) -> String {
    let env = &doc.environment;
    let mut rows = vec![
        vec![
            "run".to_owned(),
            doc.run_id.clone().unwrap_or_else(|| "-".into()),
        ],
        vec![
            "started".into(),
            match &doc.started_at {
                Some(t) => format!("{} UTC", when(t)),
                None => "- (an oscost/1 document)".into(),
            },
        ],
        vec!["oscost".into(), env.oscost_version.clone()],
        vec![
            "kernel".into(),
            env.os
                .as_ref()
                .map_or_else(|| env.kernel_release.clone(), |o| o.describe()),
        ],
        vec![
            "CPU".into(),
            env.cpu_model.clone().unwrap_or_else(|| "-".into()),
        ],
    ];
    if let Some(host) = &env.hostname {
        rows.insert(2, vec!["host".into(), host.clone()]);
    }
    if !env.command_line.is_empty() {
        // A command line (a long --json path, a list of cases) is the one value here that
        // can outgrow the terminal: continue it under itself.
        let command = env.command_line.join(" ");
        let room = table_width().map_or(usize::MAX, |w| usize::from(w).saturating_sub(9).max(20));
        // A word longer than the room (a path) is cut where the room ends, as a terminal would.
        let lines = render::wrap_words(&command, room)
            .lines()
            .flat_map(|l| {
                let chars: Vec<char> = l.chars().collect();
                chars
                    .chunks(room.min(chars.len()).max(1))
                    .map(|c| c.iter().collect::<String>())
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>();
        for (i, line) in lines.into_iter().enumerate() {
            let label = if i == 0 { "command" } else { "" };
            rows.push(vec![label.into(), line]);
        }
    }
    let mut s = columns(&rows);
    let warnings = if global.quiet {
        render::Warnings::Hidden
    } else if global.verbose {
        render::Warnings::Full
    } else {
        render::Warnings::Summary
    };
    for e in &doc.experiments {
        s.push('\n');
        s += &render::terminal_with(e, &env.clock.tick_unit, table_width(), warnings);
    }
    s
}

/// The width `history` lays its text out to (see [`render::layout_width`]).
fn table_width() -> Option<u16> {
    render::layout_width(false)
}

/// The text of `oscost history trend`.
fn trend(case_id: &str, points: &[TrendPoint]) -> String {
    let derived = points.first().is_some_and(|p| p.unit == "derived");
    let mut s = format!(
        "{case_id}: {} in {} run{}, oldest first\n",
        if derived {
            "the derived figure".to_owned()
        } else {
            format!(
                "median per {}",
                points.first().map_or("", |p| p.unit.as_str())
            )
        },
        points.len(),
        if points.len() == 1 { "" } else { "s" }
    );
    let mixed = points.iter().any(|p| p.quick) && points.iter().any(|p| !p.quick);
    let mut header = vec![
        "run".to_owned(),
        "started (UTC)".into(),
        if derived { "estimate" } else { "median" }.into(),
        "95% CI".into(),
    ];
    if mixed {
        header.push("size".into());
    }
    header.push("notes".into());
    let mut rows = vec![header];
    for p in points {
        let mut notes = Vec::new();
        if p.env_changed {
            notes.push("environment changed");
        }
        if !p.checks_passed {
            notes.push(if derived { "flagged" } else { "a check failed" });
        }
        let mut row = vec![
            short_id(&p.run_id).to_owned(),
            p.started_at
                .as_deref()
                .map(when)
                .unwrap_or_else(|| "-".into()),
            render::fmt_ns(p.median_ns),
            format!(
                "{} .. {}",
                render::fmt_ns(p.ci95_ns[0]),
                render::fmt_ns(p.ci95_ns[1])
            ),
        ];
        if mixed {
            row.push(if p.quick { "quick" } else { "full" }.into());
        }
        row.push(notes.join("; "));
        rows.push(row);
    }
    s += &columns(&rows);
    if mixed {
        s += "size: quick runs (--quick) take fewer, shorter samples than full ones; compare a \
              quick run with a quick one\n";
    }
    for p in points.iter().filter(|p| p.env_changed) {
        s += &format!("environment changed before run {}: ", short_id(&p.run_id));
        if p.changes.is_empty() {
            s += "its document or the one before could not be read (`oscost history export RUN` \
                  has each run's)\n";
        } else {
            s += &p.changes.join("; ");
            s.push('\n');
        }
    }
    s
}
