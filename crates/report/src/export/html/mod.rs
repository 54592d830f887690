//! One self-contained HTML page of one run or several: the machine, every experiment's tables
//! and figures, what was not measured and why, and every warning; with several runs, each
//! case the runs share side by side first.
//!
//! The page loads nothing: styles and figures are inline, there is no script, and a content
//! security policy forbids anything else, so it opens the same from a mail attachment, an
//! archive or a file share, and prints. Every text from a result file goes through the
//! template's HTML escaping (or, inside a figure, the SVG writer's), never around it.

mod comparison;
mod experiment;
mod run;

use crate::format::fmt_ns;
use crate::plot::Plot;
use crate::views::View;
use comparison::comparison;
use minijinja::{context, Environment};
use oscost_model::{ResultDoc, RunLoad};
use run::{run, study_run, study_sections, Run};
use serde::Serialize;

/// One self-contained HTML page of the run, with every experiment's tables and figures.
#[derive(Debug, Clone, Copy, Default)]
pub struct Html;

impl super::Exporter for Html {
    fn name(&self) -> &'static str {
        "html"
    }

    fn extension(&self) -> &'static str {
        "html"
    }

    /// The page of this run alone, named by `opts.label`, else by its run id.
    fn export(&self, doc: &ResultDoc, opts: &super::ExportOptions) -> anyhow::Result<String> {
        let label = opts
            .label
            .clone()
            .or_else(|| doc.run_id.clone())
            .unwrap_or_else(|| "this run".to_owned());
        report(&[(label, doc)])
    }
}

const TEMPLATE: &str = include_str!("../../../templates/report.html");
const STYLE: &str = include_str!("../../../templates/report.css");

/// The page of `docs`, each with a label (its file name or run id) that names it wherever runs
/// are told apart. With two or more, the page opens with the cases they share side by side.
pub fn report(docs: &[(String, &ResultDoc)]) -> anyhow::Result<String> {
    report_with(docs, &[])
}

/// The page of `docs`, each run also showing the tables and charts of `studies` (the studies
/// whose cases a run holds are shown anyway), as `oscost report published:NAME run.json` asks.
pub fn report_with(
    docs: &[(String, &ResultDoc)],
    studies: &[&'static crate::study::Study],
) -> anyhow::Result<String> {
    anyhow::ensure!(!docs.is_empty(), "no result document to report on");
    let mut env = Environment::new();
    // Block tags on lines of their own leave no blank lines behind.
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()?,
    );
    env.add_template("report.html", TEMPLATE)?;
    env.add_template("report.css", STYLE)?;
    let runs: Vec<Run> = docs
        .iter()
        .enumerate()
        .map(|(i, (label, doc))| {
            let mut r = run(i, label, doc, docs.len() > 1);
            r.studies = study_sections(&r.anchor, doc, studies);
            // A study's tables open the run only when a study was asked for; a suite that
            // happens to hold a study's cases shows them after its own experiments.
            r.studies_first = !studies.is_empty() || study_run(doc);
            r
        })
        .collect();
    let mut comparison = (docs.len() > 1).then(|| comparison(docs));
    if let Some(c) = comparison.as_mut() {
        let sheets: Vec<(String, crate::datasheet::Datasheet)> = docs
            .iter()
            .map(|(l, d)| (l.clone(), crate::datasheet::datasheet(d)))
            .collect();
        let named: Vec<(&str, &crate::datasheet::Datasheet)> =
            sheets.iter().map(|(l, d)| (l.as_str(), d)).collect();
        c.datasheet_figure = crate::plot::datasheet::plot(&named).map(figure);
    }
    let labels: Vec<&str> = docs.iter().map(|(l, _)| l.as_str()).collect();
    let html = env.get_template("report.html")?.render(context! {
        title => format!("oscost report: {}", labels.join(", ")),
        runs => minijinja::value::Serde(&runs),
        comparison => minijinja::value::Serde(&comparison),
    })?;
    Ok(html)
}

/// A figure as it goes into the page: the SVG without its XML declaration and namespace
/// (HTML gives inline `<svg>` its namespace), so the page names no URL at all.
#[derive(Debug, Serialize)]
struct Figure {
    name: String,
    svg: String,
}

fn figure(p: Plot) -> Figure {
    let svg = p.svg;
    let body = svg
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        .unwrap_or(&svg);
    Figure {
        name: p.name,
        svg: body.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1),
    }
}

/// An `id` attribute made of `parts`: letters, digits and `-` only.
fn anchor(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| {
            p.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("-")
}

#[derive(Debug, Serialize)]
struct Cell {
    text: String,
    numeric: bool,
}

#[derive(Debug, Serialize)]
struct Table {
    title: String,
    head: Vec<Cell>,
    rows: Vec<Vec<Cell>>,
    notes: Vec<String>,
}

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "n/a".into())
}

fn cycles(c: f64) -> String {
    if !c.is_finite() {
        "-".into()
    } else if c.abs() < 100.0 {
        format!("{c:.1}")
    } else {
        crate::format::grouped(c)
    }
}

fn ci_pct(median: f64, ci: [f64; 2]) -> String {
    if median == 0.0 || !median.is_finite() {
        return "-".into();
    }
    format!("±{:.1} %", (ci[1] - ci[0]) / 2.0 / median.abs() * 100.0)
}

/// An interval, its unit written once when both ends share it: `71.5 – 72.2 ns`.
fn ci_text(ci: [f64; 2]) -> String {
    let (a, b) = (fmt_ns(ci[0]), fmt_ns(ci[1]));
    match (a.rsplit_once(' '), b.rsplit_once(' ')) {
        (Some((x, u)), Some((y, v))) if u == v => format!("{x} – {y} {u}"),
        _ => format!("{a} – {b}"),
    }
}

/// How busy the machine was, in one line.
fn load_line(l: &RunLoad) -> String {
    let steal = l
        .steal_s
        .map_or_else(String::new, |s| format!(", steal time {s:.2} s"));
    format!(
        "{:.1} s; other processes used {:.1} % of the CPUs{steal}; {}",
        l.wall_s,
        l.foreign_cpu_share * 100.0,
        if l.quiet {
            "quiet"
        } else {
            "not quiet (see the warnings)"
        }
    )
}

/// A view's table: numbers (and `-` for none) right-aligned, words left, as the terminal does.
fn table(v: View) -> Table {
    let numeric: Vec<bool> = (0..v.head.len())
        .map(|i| {
            i > 0
                && v.rows.iter().filter_map(|r| r.get(i)).all(|c| {
                    c == "-"
                        || c.is_empty()
                        || c.starts_with(|ch: char| ch.is_ascii_digit() || "+-±".contains(ch))
                })
        })
        .collect();
    let cell = |i: usize, text: String| {
        let numeric = numeric.get(i).copied().unwrap_or(false);
        Cell {
            text: if numeric { breakable(&text) } else { text },
            numeric,
        }
    };
    Table {
        title: v.title,
        // A heading wraps between its words: kept whole, it made a wide table wider than
        // the page (a study's twelve columns at 1400 px).
        head: v
            .head
            .into_iter()
            .enumerate()
            .map(|(i, text)| Cell {
                text,
                numeric: numeric.get(i).copied().unwrap_or(false),
            })
            .collect(),
        rows: v
            .rows
            .into_iter()
            .map(|r| r.into_iter().enumerate().map(|(i, t)| cell(i, t)).collect())
            .collect(),
        notes: v.notes.into_iter().chain(v.detail).collect(),
    }
}

/// A figure cell that may wrap only between the items of a list (`183.4 ms, 293.7 ms` or
/// `25.0 / 25.0 %`), never between a number and its unit, so a wide table fits the page.
fn breakable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut prev = ' ';
    for c in text.chars() {
        out.push(if c == ' ' && prev != ',' && prev != '/' {
            '\u{a0}'
        } else {
            c
        });
        prev = c;
    }
    out
}
