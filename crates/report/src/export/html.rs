//! One self-contained HTML page of one run or several: the machine, every experiment's tables
//! and figures, what was not measured and why, and every warning; with several runs, each
//! case the runs share side by side first.
//!
//! The page loads nothing: styles and figures are inline, there is no script, and a content
//! security policy forbids anything else, so it opens the same from a mail attachment, an
//! archive or a file share, and prints. Every text from a result file goes through the
//! template's HTML escaping (or, inside a figure, the SVG writer's), never around it.

use crate::envtext::render_environment;
use crate::format::fmt_ns;
use crate::plot::{self, runs::common_cases, Plot};
use crate::views::View;
use minijinja::{context, Environment};
use oscost_model::{CaseResult, ExperimentResult, Message, ResultDoc, RunLoad};
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

const TEMPLATE: &str = include_str!("../../templates/report.html");
const STYLE: &str = include_str!("../../templates/report.css");

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
struct Fact {
    name: &'static str,
    value: String,
}

#[derive(Debug, Serialize, Default)]
struct Glance {
    experiments: usize,
    cases: usize,
    failed: Vec<String>,
    noisy: usize,
    warnings: usize,
    unavailable: usize,
    flagged: usize,
}

/// A study's section of a run: its tables and charts, the published figures beside the run's.
#[derive(Debug, Serialize)]
struct StudySection {
    anchor: String,
    name: &'static str,
    citation: &'static str,
    tables: Vec<Table>,
    figures: Vec<Figure>,
}

fn study_sections(
    prefix: &str,
    doc: &ResultDoc,
    asked: &[&'static crate::study::Study],
) -> Vec<StudySection> {
    // A study's section is the answer to `oscost study NAME` or to a study asked for by name
    // (`report published:NAME`); a plain run's page is its own experiments.
    let mut chosen = if study_run(doc) {
        crate::study::applying_to(doc)
    } else {
        Vec::new()
    };
    for s in asked {
        if !chosen.iter().any(|c| c.info.name == s.info.name) {
            chosen.push(s);
        }
    }
    chosen
        .into_iter()
        .map(|s| StudySection {
            anchor: anchor(&[prefix, "study", s.info.name]),
            name: s.info.name,
            citation: s.info.citation,
            tables: s.tables(Some(doc)).into_iter().map(table).collect(),
            figures: s.plots(Some(doc)).into_iter().map(figure).collect(),
        })
        .collect()
}

/// Whether `doc` was made by `oscost study NAME`.
fn study_run(doc: &ResultDoc) -> bool {
    doc.environment
        .command_line
        .iter()
        .skip(1)
        .any(|w| w == "study")
}

#[derive(Debug, Serialize)]
struct Run {
    anchor: String,
    studies: Vec<StudySection>,
    /// Whether the studies come before the run's experiments (a study run) or after them.
    studies_first: bool,
    label: String,
    run_id: String,
    started_at: String,
    facts: Vec<Fact>,
    glance: Glance,
    /// The failed cases the datasheet does not already mark, named under it.
    failed_unlisted: Vec<String>,
    load: Vec<String>,
    environment: String,
    experiments: Vec<Experiment>,
    datasheet: Vec<SheetRow>,
    /// The headline times on one axis (a run alone on its page).
    datasheet_figure: Option<Figure>,
    /// A bill's run: what the OS cost one program.
    bill: Option<BillSection>,
}

/// A bill on the page: its tables and its two figures.
#[derive(Debug, Serialize)]
struct BillSection {
    tables: Vec<Table>,
    figures: Vec<Figure>,
}

fn bill_section(doc: &ResultDoc) -> Option<BillSection> {
    let bill = doc.bill.as_ref()?;
    Some(BillSection {
        tables: crate::bill::views(bill).into_iter().map(table).collect(),
        figures: crate::plot::bill::plots(bill)
            .into_iter()
            .map(figure)
            .collect(),
    })
}

/// A line of the run's datasheet.
#[derive(Debug, Serialize)]
struct SheetRow {
    label: String,
    value: String,
    ci: String,
    source: String,
    failed: bool,
}

fn sheet_rows(doc: &ResultDoc) -> Vec<SheetRow> {
    crate::datasheet::datasheet(doc)
        .lines
        .into_iter()
        .map(|l| {
            // A figure without an interval (a percentile too few samples bound) shows none.
            let ci95 = l.value.ci95();
            let ci = if ci95.iter().all(|v| v.is_finite()) {
                ci_pct(l.value.number(), ci95)
            } else {
                String::new()
            };
            let value = l.value.text();
            SheetRow {
                label: l.label.to_owned(),
                value,
                ci,
                source: l.source,
                failed: l.failed,
            }
        })
        .collect()
}

#[derive(Debug, Serialize)]
struct Param {
    name: String,
    value: String,
    full: String,
}

#[derive(Debug, Serialize)]
struct CheckCell {
    text: String,
    passed: bool,
    detail: String,
}

#[derive(Debug, Serialize)]
struct CaseRow {
    id: String,
    description: String,
    unit: String,
    median: String,
    ci: String,
    ci_pct: String,
    cycles: String,
    min: String,
    p95: String,
    samples: String,
    rate: String,
    checks: Vec<CheckCell>,
    noisy: bool,
    warnings: usize,
    failed: bool,
}

#[derive(Debug, Serialize)]
struct DerivedRow {
    id: String,
    description: String,
    estimate: String,
    ci: String,
    cycles: String,
    flagged: String,
    /// What makes it less precise, as the terminal's notes column says it.
    notes: Vec<String>,
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

#[derive(Debug, Serialize)]
struct Missing {
    id: String,
    description: String,
    reason: String,
}

#[derive(Debug, Serialize)]
struct Warning {
    case: String,
    text: String,
}

#[derive(Debug, Serialize)]
struct Experiment {
    anchor: String,
    name: String,
    params: Vec<Param>,
    tick_unit: String,
    with_rate: bool,
    rate: String,
    cases: Vec<CaseRow>,
    derived: Vec<DerivedRow>,
    views: Vec<Table>,
    figures: Vec<Figure>,
    unavailable: Vec<Missing>,
    warnings: Vec<Warning>,
    notes: Vec<Warning>,
    load: String,
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

/// A parameter's value as one short line; the whole of it for the tooltip. Numbers are as
/// short as they are exact (`10000`, not `10000.0`; six decimals at most).
fn param(name: &str, v: &serde_json::Value) -> Param {
    let full = match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n
            .as_f64()
            .map_or_else(|| n.to_string(), crate::format::plain),
        v => v.to_string(),
    };
    let value = if full.chars().count() > 90 {
        format!("{}…", full.chars().take(89).collect::<String>())
    } else {
        full.clone()
    };
    Param {
        name: name.replace('_', " "),
        value,
        full,
    }
}

/// A parameter a reader of the page can use: structured ones (a helper's own settings, a
/// list) and paths of temporary files are the run's internals, kept in the JSON result.
fn shown_param(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Object(_) | serde_json::Value::Array(_) => false,
        serde_json::Value::String(s) => !(s.starts_with("/tmp/") || s.starts_with("/var/tmp/")),
        _ => true,
    }
}

fn facts(doc: &ResultDoc) -> Vec<Fact> {
    let env = &doc.environment;
    let version = match &env.git_commit {
        Some(c) => format!("{} ({c})", env.oscost_version),
        None => env.oscost_version.clone(),
    };
    let clock = &env.clock;
    let virt = match (
        &env.virtualisation.sys_hypervisor_type,
        &env.virtualisation.cpuid_signature,
        env.virtualisation.hypervisor_flag,
    ) {
        (Some(t), _, _) => format!("virtual machine ({t})"),
        (None, Some(s), _) => format!("virtual machine ({s})"),
        (None, None, Some(true)) => "virtual machine".into(),
        (None, None, Some(false)) => "bare metal (no hypervisor flag)".into(),
        (None, None, None) => "n/a".into(),
    };
    vec![
        Fact {
            name: "kernel",
            // The Windows agent's runs name their system, and Wine when it ran under Wine.
            value: env
                .os
                .as_ref()
                .map_or_else(|| env.kernel_release.clone(), |o| o.describe()),
        },
        Fact {
            name: "CPU",
            value: opt(&env.cpu_model),
        },
        Fact {
            name: "CPUs used",
            value: oscost_model::cpulist::format(&env.cpus_used),
        },
        Fact {
            name: "clock",
            value: format!(
                "{} at {:.1} MHz ({})",
                clock.tick_unit,
                clock.frequency_hz / 1e6,
                clock.frequency_source
            ),
        },
        Fact {
            name: "machine",
            value: virt,
        },
        Fact {
            name: "oscost",
            value: version,
        },
        Fact {
            name: "command",
            value: env.command_line.join(" "),
        },
    ]
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

fn run(i: usize, label: &str, doc: &ResultDoc, several: bool) -> Run {
    let prefix = if several {
        format!("run{}", i + 1)
    } else {
        "run".into()
    };
    let tick_unit = doc.environment.clock.tick_unit.clone();
    let mut glance = Glance {
        experiments: doc.experiments.len(),
        ..Glance::default()
    };
    for e in &doc.experiments {
        glance.cases += e.cases.len();
        glance.unavailable += e.unavailable.len();
        glance.warnings +=
            e.warnings.len() + e.cases.iter().map(|c| c.warnings.len()).sum::<usize>();
        glance.noisy += e.cases.iter().filter(|c| c.noisy).count();
        glance.flagged += e.derived.iter().filter(|d| d.flagged.is_some()).count();
        glance.failed.extend(
            e.cases
                .iter()
                .filter(|c| !c.checks_passed)
                .map(|c| c.id.clone()),
        );
    }
    let load = doc
        .environment
        .load
        .as_ref()
        .map(|l| {
            std::iter::once(format!("the whole run: {}", load_line(l)))
                .chain(l.warnings.iter().cloned())
                .collect()
        })
        .unwrap_or_default();
    let datasheet = sheet_rows(doc);
    let failed_unlisted = glance
        .failed
        .iter()
        .filter(|id| !datasheet.iter().any(|l| l.failed && &l.source == *id))
        .cloned()
        .collect();
    Run {
        studies: Vec::new(),
        studies_first: false,
        anchor: prefix.clone(),
        label: label.to_owned(),
        run_id: opt(&doc.run_id),
        started_at: opt(&doc.started_at),
        facts: facts(doc),
        glance,
        failed_unlisted,
        load,
        environment: render_environment(&doc.environment),
        datasheet,
        // With several runs the comparison draws them all on one chart.
        datasheet_figure: if several {
            None
        } else {
            crate::plot::datasheet::plot(&[("this run", &crate::datasheet::datasheet(doc))])
                .map(figure)
        },
        experiments: doc
            .experiments
            .iter()
            .map(|e| experiment(&prefix, e, &tick_unit))
            .collect(),
        bill: bill_section(doc),
    }
}

fn case_row(c: &CaseResult) -> CaseRow {
    let checks = c
        .checks
        .iter()
        .filter(|k| !(k.passed && super::table::QUIET_WHEN_PASSED.contains(&k.name.as_str())))
        .map(|k| CheckCell {
            text: crate::format::check(k),
            passed: k.passed,
            detail: k.detail.clone(),
        })
        .collect();
    CaseRow {
        id: c.id.clone(),
        description: c.description.clone(),
        unit: c.unit.clone(),
        median: fmt_ns(c.median_ns),
        ci: ci_text(c.ci95_ns),
        ci_pct: ci_pct(c.median_ns, c.ci95_ns),
        cycles: cycles(c.median_cycles),
        min: fmt_ns(c.min_ns),
        p95: fmt_ns(c.p95_ns),
        samples: if c.iterations_per_sample > 1 {
            format!(
                "{} × {}",
                c.samples,
                crate::format::grouped(c.iterations_per_sample as f64)
            )
        } else {
            c.samples.to_string()
        },
        rate: c
            .at_rate
            .as_ref()
            .map_or_else(|| "-".into(), |a| format!("{:.3} %", a.share_pct)),
        checks,
        noisy: c.noisy,
        warnings: c.warnings.len(),
        failed: !c.checks_passed,
    }
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

/// An experiment's own messages, then each case's, named by its case.
fn messages<'a>(
    own: &[Message],
    cases: impl Iterator<Item = (&'a String, &'a Vec<Message>)>,
) -> Vec<Warning> {
    let mut out: Vec<Warning> = own
        .iter()
        .map(|w| Warning {
            case: String::new(),
            text: w.into(),
        })
        .collect();
    for (id, texts) in cases {
        out.extend(texts.iter().map(|w| Warning {
            case: id.clone(),
            text: w.into(),
        }));
    }
    out
}

fn experiment(prefix: &str, e: &ExperimentResult, tick_unit: &str) -> Experiment {
    let rate = e
        .params
        .get("rate_per_s")
        .and_then(|v| v.as_f64())
        .map_or_else(String::new, |r| format!("{r} calls/s"));
    let warnings = messages(&e.warnings, e.cases.iter().map(|c| (&c.id, &c.warnings)));
    let notes = messages(&e.notes, e.cases.iter().map(|c| (&c.id, &c.notes)));
    Experiment {
        anchor: anchor(&[prefix, &e.name]),
        name: e.name.clone(),
        params: e
            .params
            .iter()
            .filter(|(_, v)| shown_param(v))
            .map(|(k, v)| param(k, v))
            .collect(),
        tick_unit: tick_unit.to_owned(),
        with_rate: e.cases.iter().any(|c| c.at_rate.is_some()),
        rate,
        cases: e.cases.iter().map(case_row).collect(),
        derived: e
            .derived
            .iter()
            .map(|d| DerivedRow {
                id: d.id.clone(),
                description: d.description.clone(),
                estimate: fmt_ns(d.estimate_ns),
                ci: ci_text(d.ci95_ns),
                cycles: cycles(d.estimate_cycles),
                flagged: d.flagged.clone().unwrap_or_default(),
                notes: d.warnings.iter().map(super::table::derived_note).collect(),
            })
            .collect(),
        views: crate::experiments::views(e)
            .into_iter()
            .map(table)
            .collect(),
        figures: crate::experiments::plots(e)
            .into_iter()
            .map(figure)
            .collect(),
        unavailable: e
            .unavailable
            .iter()
            .map(|u| Missing {
                id: u.id.clone(),
                description: u.description.clone(),
                reason: u.reason.clone(),
            })
            .collect(),
        warnings,
        notes,
        load: e.load.as_ref().map(load_line).unwrap_or_default(),
    }
}

#[derive(Debug, Serialize)]
struct RunHead {
    label: String,
    run_id: String,
    started_at: String,
    kernel: String,
    cpu: String,
}

#[derive(Debug, Serialize)]
struct SideCell {
    median: String,
    ci: String,
    /// Half the interval as a share of the median (`±1.2 %`).
    ci_pct: String,
    change: String,
    /// `slower` or `faster` when `compare` calls it so against the first run, else empty.
    verdict: &'static str,
    /// `compare`'s verdict in words, empty for the first run.
    verdict_text: &'static str,
}

#[derive(Debug, Serialize)]
struct SideRow {
    id: String,
    cells: Vec<SideCell>,
}

#[derive(Debug, Serialize)]
struct SideTable {
    experiment: String,
    rows: Vec<SideRow>,
    /// The latency cases' percentiles, each run's beside the first's (`compare`'s rows).
    percentiles: Vec<PercentileLine>,
    figure: Option<Figure>,
}

/// One percentile of one case in every run.
#[derive(Debug, Serialize)]
struct PercentileLine {
    /// The case id, on its first percentile only.
    id: String,
    percentile: &'static str,
    cells: Vec<PercentileCell>,
}

/// One run's percentile: its value, its 95 % interval, and against the first run the ratio
/// and whether the two intervals are apart.
#[derive(Debug, Serialize)]
struct PercentileCell {
    value: String,
    ci: String,
    ratio: String,
    /// `apart`, `overlap`, or empty where an interval is missing (and for the first run).
    intervals: &'static str,
}

/// The percentile lines of the cases of `ids`, from `compare`'s rows of each run against the
/// first (`compared[k]` is run k + 1's); a case some run lacks the percentiles of is left out.
fn percentile_lines(
    ids: &[String],
    compared: &[crate::compare::Comparison],
) -> Vec<PercentileLine> {
    use crate::compare::PercentileRow;
    // No interval where too few samples lie beyond the percentile.
    let interval = |ci: Option<[f64; 2]>| {
        ci.map_or_else(String::new, |[lo, hi]| {
            format!("{} – {}", fmt_ns(lo), fmt_ns(hi))
        })
    };
    let mut out = Vec::new();
    for id in ids {
        let per_run: Vec<Vec<&PercentileRow>> = compared
            .iter()
            .map(|c| c.percentiles.iter().filter(|p| &p.id == id).collect())
            .collect();
        let Some(first) = per_run.first() else {
            continue;
        };
        if first.is_empty() || per_run.iter().any(|v| v.len() != first.len()) {
            continue;
        }
        for (i, p) in first.iter().enumerate() {
            let mut cells = vec![PercentileCell {
                value: fmt_ns(p.baseline_ns),
                ci: interval(p.baseline_ci95_ns),
                ratio: String::new(),
                intervals: "",
            }];
            cells.extend(per_run.iter().map(|v| {
                let q = v[i];
                PercentileCell {
                    value: fmt_ns(q.other_ns),
                    ci: interval(q.other_ci95_ns),
                    ratio: format!("{:.3}", q.ratio),
                    intervals: match (q.baseline_ci95_ns, q.other_ci95_ns) {
                        (Some(_), Some(_)) if q.apart => "apart",
                        (Some(_), Some(_)) => "overlap",
                        _ => "",
                    },
                }
            }));
            out.push(PercentileLine {
                id: if i == 0 { id.clone() } else { String::new() },
                percentile: p.percentile,
                cells,
            });
        }
    }
    out
}

#[derive(Debug, Serialize)]
struct Comparison {
    runs: Vec<RunHead>,
    /// Every run's headline times on one axis.
    datasheet_figure: Option<Figure>,
    /// The runs' bills, each a bar of where its time went, one under another.
    bills_figure: Option<Figure>,
    tables: Vec<SideTable>,
    /// The rule behind the verdicts, as `compare` states it.
    rule: String,
    /// The noise threshold in percent, as `compare` uses it.
    threshold: String,
    /// `compare`'s warnings that the machine itself may have changed between runs, and of
    /// figures under another system's id.
    drift: Vec<String>,
}

/// `compare`'s verdict of every case of every run after the first, by (run index, case id).
type Verdicts = std::collections::BTreeMap<(usize, String), crate::compare::Verdict>;

fn comparison(docs: &[(String, &ResultDoc)]) -> Comparison {
    let runs = docs
        .iter()
        .map(|(label, d)| RunHead {
            label: label.clone(),
            run_id: opt(&d.run_id),
            started_at: opt(&d.started_at),
            kernel: d
                .environment
                .os
                .as_ref()
                .map_or_else(|| d.environment.kernel_release.clone(), |o| o.describe()),
            cpu: opt(&d.environment.cpu_model),
        })
        .collect();
    let sources: Vec<(String, crate::compare::Source)> = docs
        .iter()
        .map(|(label, d)| (label.clone(), crate::compare::Source::Measured(d)))
        .collect();
    let settings = crate::compare::Settings::default();
    let compared = crate::compare::compare(&sources, settings);
    let verdicts: Verdicts = compared
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            c.rows
                .iter()
                .map(move |r| ((i + 1, r.id.clone()), r.verdict))
        })
        .collect();
    let drift = compared
        .iter()
        .flat_map(|c| {
            c.drift
                .iter()
                .chain(&c.foreign_ids)
                .map(move |d| format!("{} against {}: {d}", c.other, c.baseline))
        })
        .collect();
    let mut figures = plot::comparison_plots(docs);
    let tables = docs[0]
        .1
        .experiments
        .iter()
        .filter_map(|e| {
            let rows = common_cases(docs, &e.name);
            let name = format!("{}.runs", e.name);
            let fig = figures
                .iter()
                .position(|p| p.name == name)
                .map(|i| figure(figures.remove(i)));
            let ids: Vec<String> = rows.iter().map(|r| r[0].id.clone()).collect();
            (!rows.is_empty()).then(|| SideTable {
                experiment: e.name.clone(),
                rows: rows.iter().map(|r| side_row(r, &verdicts)).collect(),
                percentiles: percentile_lines(&ids, &compared),
                figure: fig,
            })
        })
        .collect();
    let bills: Vec<(&str, &oscost_model::bill::Bill)> = docs
        .iter()
        .filter_map(|(l, d)| d.bill.as_ref().map(|b| (l.as_str(), b)))
        .collect();
    Comparison {
        datasheet_figure: None,
        bills_figure: plot::bill::side_by_side(&bills).map(figure),
        runs,
        tables,
        threshold: crate::format::plain(settings.threshold_pct),
        rule: format!(
            "A change is marked slower or faster only when oscost compare would call it so: \
             the bootstrap 95 % confidence interval of the ratio of medians excludes 1, the \
             Mann-Whitney test gives p < 0.05 once adjusted for every figure compared \
             (Benjamini-Hochberg), and the change is beyond ±{} %, the noise \
             between runs of one machine. \"Too few samples to tell\" marks a change the \
             samples cannot decide (the test cannot reach p < 0.05 with so few, or the \
             interval lies beyond the threshold unconfirmed); \"no difference\", one within \
             the noise.",
            crate::format::plain(settings.threshold_pct)
        ),
        drift,
    }
}

fn side_row(r: &[&CaseResult], verdicts: &Verdicts) -> SideRow {
    use crate::compare::Verdict;
    let base = r[0];
    SideRow {
        id: base.id.clone(),
        cells: r
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let v = verdicts.get(&(k, c.id.clone()));
                let verdict = match v {
                    Some(Verdict::Slower) => "slower",
                    Some(Verdict::Faster) => "faster",
                    _ => "",
                };
                SideCell {
                    median: fmt_ns(c.median_ns),
                    ci: ci_text(c.ci95_ns),
                    ci_pct: crate::format::ci_pct(c.median_ns, c.ci95_ns),
                    change: if k == 0 {
                        String::new()
                    } else {
                        crate::format::pct_signed((c.median_ns / base.median_ns - 1.0) * 100.0)
                    },
                    verdict,
                    verdict_text: v.map_or("", |v| v.text()),
                }
            })
            .collect(),
    }
}
