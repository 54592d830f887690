//! The texts of the history commands: the list of runs, a run's header and tables, a figure's
//! trend, and the list as JSON or CSV.

use crate::config::Config;
use crate::run_id::short_id;
use oscost_history::{History, RunSummary, TrendPoint};
use oscost_report::export::terminal::{self, wrap_words};
use oscost_report::export::{ExportOptions, Format, Render};
use oscost_report::format::fmt_ns;
use std::fmt::Write as _;

/// An RFC 3339 time in UTC as a table shows it: `2026-11-23 03:13:14`.
fn when(rfc3339: &str) -> String {
    rfc3339
        .replacen('T', " ", 1)
        .trim_end_matches('Z')
        .to_owned()
}

/// The same to the minute, for the trend figure's labels.
pub(super) fn minute(rfc3339: &str) -> String {
    let w = when(rfc3339);
    w.get(..16).map(str::to_owned).unwrap_or(w)
}

/// Rows of cells in columns two spaces apart, the header first.
fn columns(rows: &[Vec<String>]) -> String {
    fitted_columns(rows, None, &[])
}

/// [`columns`] fitted to `width`: the columns of `drop` left out in that order while the
/// rows are too wide, then the last column's text wrapped under itself (at least
/// [`LAST_ROOM`] columns of it beside the others).
fn fitted_columns(rows: &[Vec<String>], width: Option<u16>, drop: &[usize]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let natural = |i: usize| {
        rows.iter()
            .filter_map(|r| r.get(i))
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..n).map(natural).collect();
    let mut shown = vec![true; n];
    let before_last = |shown: &[bool]| -> usize {
        (0..n.saturating_sub(1))
            .filter(|&i| shown[i])
            .map(|i| widths[i] + 2)
            .sum()
    };
    if let Some(w) = width.map(usize::from) {
        for &i in drop {
            if n == 0 || before_last(&shown) + widths[n - 1] <= w {
                break;
            }
            shown[i] = false;
        }
    }
    let indent = before_last(&shown);
    let room = width.map(|w| usize::from(w).saturating_sub(indent).max(LAST_ROOM));
    let mut s = String::new();
    for r in rows {
        let mut line = String::new();
        let cells: Vec<(usize, &String)> =
            r.iter().enumerate().filter(|(i, _)| shown[*i]).collect();
        for (k, &(i, cell)) in cells.iter().enumerate() {
            if k > 0 {
                line.push_str("  ");
            }
            if k + 1 < cells.len() {
                line.push_str(cell);
                line.push_str(&" ".repeat(widths[i] - cell.chars().count()));
            } else if let Some(room) = room.filter(|_| i + 1 == n) {
                let wrapped = wrap_words(cell, room);
                line.push_str(&wrapped.replace('\n', &format!("\n{}", " ".repeat(indent))));
            } else {
                line.push_str(cell);
            }
        }
        s += line.trim_end();
        s.push('\n');
    }
    s
}

/// The fewest columns of text the last column keeps beside the others.
const LAST_ROOM: usize = 16;

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
    let mut w = oscost_report::csvw::CsvWriter::new([
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
        w.row([
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
    w.finish()
}

/// The study a run's command line ran (`oscost study qnx-tick --quick`: `qnx-tick`): `Some("")`
/// for a study without its name on the line.
fn study_name<'a>(words: &[&'a str]) -> Option<&'a str> {
    let i = words.iter().position(|w| *w == "study")?;
    Some(
        words
            .get(i + 1)
            .filter(|n| !n.starts_with('-'))
            .map_or("", |n| n),
    )
}

/// What sets a run apart from a plain one, from its command line: `bill`, `study qnx-tick`,
/// `quick`.
fn run_kind(r: &RunSummary) -> String {
    if r.billed().is_some() {
        return "bill".into();
    }
    let words: Vec<&str> = r.command_line.split(' ').collect();
    let mut kind = Vec::new();
    match study_name(&words) {
        Some("") => kind.push("study".to_owned()),
        Some(name) => kind.push(format!("study {name}")),
        None => {}
    }
    if words.contains(&"--quick") {
        kind.push("quick".to_owned());
    }
    kind.join(", ")
}

/// `oscost history list`: the runs a window chose, of `total` in the history.
pub(super) struct RunList<'a> {
    /// The history they are in.
    pub history: &'a History,
    /// The runs, newest first.
    pub runs: &'a [RunSummary],
    /// How many runs the history holds in all.
    pub total: usize,
}

impl Render for RunList<'_> {
    fn table(&self, width: Option<u16>) -> String {
        list(self.history, self.runs, self.total, width)
    }

    fn file(&self, format: Format) -> Option<anyhow::Result<String>> {
        match format {
            Format::Json => Some(list_json(self.runs)),
            Format::Csv => Some(list_csv(self.runs)),
            _ => None,
        }
    }
}

/// The text of `oscost history list` at `width`; a host column when any run records its host,
/// a kind column when any run was a bill, a study or a quick one.
fn list(history: &History, runs: &[RunSummary], total: usize, width: Option<u16>) -> String {
    if runs.is_empty() {
        return format!(
            "no runs in the history yet ({}); a run is saved there when it ends\n",
            history.shown()
        );
    }
    let hosts = runs.iter().any(|r| r.hostname.is_some());
    let kinds = runs.iter().any(|r| !run_kind(r).is_empty());
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
    // Before the experiments, the widest column.
    if kinds {
        let at = rows[0].len() - 1;
        rows[0].insert(at, "kind".into());
    }
    // A run of the whole suite, as this oscost runs it, is named so rather than listed.
    let suite: Vec<String> = oscost_measure::experiments::REGISTRY
        .iter()
        .filter(|e| e.in_default_suite && !e.hidden)
        .map(|e| e.name.to_owned())
        .collect();
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
            if let Some(command) = r.billed() {
                format!("of {command}")
            } else if r.experiments == suite {
                format!("the suite ({})", r.case_count)
            } else {
                format!("{} ({})", r.experiments.join(", "), r.case_count)
            },
        ];
        if hosts {
            row.insert(1, r.hostname.clone().unwrap_or_else(|| "-".into()));
        }
        if kinds {
            let at = row.len() - 1;
            row.insert(at, run_kind(r));
        }
        rows.push(row);
    }
    // Narrower than the table: the version, the CPU and the kernel go, in that order, and
    // the experiments wrap under their column.
    let drop: Vec<usize> = ["oscost", "CPU", "kernel"]
        .iter()
        .filter_map(|h| rows[0].iter().position(|c| c == h))
        .collect();
    let mut s = fitted_columns(&rows, width, &drop);
    let _ = writeln!(
        s,
        "{} run{} in {}{}",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" },
        history.shown(),
        more(runs.len(), total)
    );
    s
}

/// What a listing of `shown` of `total` runs left out, and how to see it.
fn more(shown: usize, total: usize) -> String {
    if total > shown {
        format!(
            " (the newest {shown} of {total}: --all-runs for every one, --since WHEN for a \
             window)"
        )
    } else {
        String::new()
    }
}

/// `oscost history show`: one run's document, as the run's own tables.
pub(super) struct Shown<'a> {
    /// The run's document.
    pub doc: &'a oscost_model::ResultDoc,
    /// The options it is shown with (which warnings).
    pub cfg: &'a Config,
}

impl Render for Shown<'_> {
    fn table(&self, width: Option<u16>) -> String {
        show(self.doc, self.cfg, width)
    }

    fn file(&self, _: Format) -> Option<anyhow::Result<String>> {
        None
    }
}

/// The text of `oscost history show` at `width`: the run's header, then each experiment's
/// tables.
fn show(doc: &oscost_model::ResultDoc, cfg: &Config, width: Option<u16>) -> String {
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
        let room = width.map_or(usize::MAX, |w| usize::from(w).saturating_sub(9).max(20));
        // A word longer than the room (a path) is cut where the room ends, as a terminal would.
        let lines = wrap_words(&command, room)
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
    // A study's run shows the study's tables first, as the run did when it ended.
    let words: Vec<&str> = env.command_line.iter().map(String::as_str).collect();
    if let Some(study) = study_name(&words).and_then(oscost_report::study::find) {
        let tables = study.tables(Some(doc));
        for v in &tables {
            s.push('\n');
            s += &terminal::view(v, width);
        }
        if tables
            .iter()
            .flat_map(|v| &v.rows)
            .flatten()
            .any(|c| c.ends_with(" ~"))
        {
            s += &terminal::wrap(oscost_report::study::MARKS, width, 2);
        }
    }
    let opts = ExportOptions {
        width,
        warnings: cfg.warnings(),
        label: None,
    };
    for e in &doc.experiments {
        s.push('\n');
        s += &terminal::experiment(e, &env.clock.tick_unit, &opts);
    }
    if let Some(bill) = &doc.bill {
        let width = width.map_or(80, |w| usize::from(w).min(100));
        s.push('\n');
        s += &oscost_report::bill::render(bill, width);
    }
    s
}

/// `oscost history trend`: one figure across the runs a window chose, of `total`.
pub(super) struct Trend<'a> {
    /// The figure's case id.
    pub case_id: &'a str,
    /// Its value in each run, oldest first.
    pub points: &'a [TrendPoint],
    /// How many runs have the figure in all.
    pub total: usize,
}

impl Render for Trend<'_> {
    fn table(&self, _: Option<u16>) -> String {
        trend(self.case_id, self.points, self.total)
    }

    fn file(&self, _: Format) -> Option<anyhow::Result<String>> {
        None
    }
}

/// The text of `oscost history trend`.
fn trend(case_id: &str, points: &[TrendPoint], total: usize) -> String {
    let derived = points.first().is_some_and(|p| p.unit == "derived");
    let mut s = format!(
        "{case_id}: {} in {} run{}, oldest first{}\n",
        if derived {
            "the derived figure".to_owned()
        } else {
            format!(
                "median per {}",
                points.first().map_or("", |p| p.unit.as_str())
            )
        },
        points.len(),
        if points.len() == 1 { "" } else { "s" },
        more(points.len(), total)
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
            fmt_ns(p.median_ns),
            format!("{} .. {}", fmt_ns(p.ci95_ns[0]), fmt_ns(p.ci95_ns[1])),
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

#[cfg(test)]
mod tests {
    use super::run_kind;
    use oscost_history::RunSummary;

    fn run(command_line: &str, experiments: &[&str]) -> RunSummary {
        RunSummary {
            run_id: "0".into(),
            started_at: None,
            saved_at: String::new(),
            oscost_version: String::new(),
            hostname: None,
            kernel: String::new(),
            cpu_model: None,
            experiments: experiments.iter().map(|e| e.to_string()).collect(),
            case_count: 0,
            command_line: command_line.into(),
        }
    }

    #[test]
    fn studies_quick_runs_and_bills_are_told_from_plain_ones() {
        let kind = |line: &str| run_kind(&run(line, &["syscall"]));
        assert_eq!(
            kind("oscost study qnx-tick --quick"),
            "study qnx-tick, quick"
        );
        assert_eq!(kind("oscost --quick"), "quick");
        assert_eq!(kind("oscost study --full"), "study");
        assert_eq!(kind("oscost run syscall"), "");
        let bill = run("oscost --history h.db bill -- make bill", &[]);
        assert_eq!(run_kind(&bill), "bill");
        assert_eq!(bill.billed(), Some("make bill"));
        // A program named bill is not a bill of oscost's.
        assert_eq!(run("oscost syscall -- bill", &[]).billed(), None);
    }
}
