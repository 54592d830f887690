//! The five studies side by side: each study's own tables and figures, with the published
//! figures beside this machine's, and the figures the study derived (ratios, percentages,
//! cycles per event) computed for both alike.
//!
//! A study reads a result document, never measures: its tables appear for any run that holds
//! the cases it needs (an `oscost study NAME` run, or any run with the same experiments), and
//! with no run at all they show the published columns alone. Its computed figures
//! ([`StudyFigure`], ids `study.<name>.…`) are what a published figure of the same meaning
//! names when it is not a time per operation, so `compare published:…` can set them side by
//! side.
//!
//! Adding a study is a file here with `figures`, `tables` and `plots` functions and one entry
//! in [`STUDIES`].

use crate::plot::Plot;
use crate::views::View;
use oscost_model::{CaseResult, DerivedResult, PublishedDoc, ResultDoc};
use oscost_stats::bootstrap_ratio_ci;

mod bradford;
mod minix3;
mod qnx_tick;
mod timeslice;
mod windows_yield;

/// A figure computed from a run the way a study computed it from its own numbers: a ratio, a
/// percentage, cycles per event, an average. Never a constant: every value comes from the
/// run's cases.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StudyFigure {
    /// `study.<study>.<figure>`.
    pub id: String,
    /// What it means, in the study's terms.
    pub description: String,
    /// Its value in `unit`.
    pub value: f64,
    /// A 95 % interval, where the cases behind it carry samples to resample.
    pub ci95: Option<[f64; 2]>,
    /// `%`, `x` (a ratio), `cycles`, `ns`, `ms/s`.
    pub unit: String,
    /// Why it is not to be trusted (a case behind it failed a check), when it is not.
    pub flagged: Option<String>,
    /// Why it is to be read with care, when it is: a case behind it is noisy or was disturbed
    /// (its CPUs shared, its warm-up unsettled), as the run's warnings say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doubt: Option<String>,
}

/// What `oscost study` says of a study.
#[derive(Debug, Clone, Copy)]
pub struct StudyInfo {
    /// The name on the command line.
    pub name: &'static str,
    /// Authors, title and year, as far as known.
    pub citation: &'static str,
    /// The system and machine it ran on.
    pub ran_on: &'static str,
    /// What it measured.
    pub measured: &'static str,
    /// The published baselines that hold its figures.
    pub baselines: &'static [&'static str],
    /// The oscost experiments its protocol runs.
    pub experiments: &'static [&'static str],
}

/// One study: what it is, and how its tables, figures and charts are read from a run.
pub struct Study {
    /// Name, citation, system, baselines.
    pub info: StudyInfo,
    figures: fn(&ResultDoc) -> Vec<StudyFigure>,
    tables: fn(Option<&ResultDoc>) -> Vec<View>,
    plots: fn(Option<&ResultDoc>) -> Vec<Plot>,
}

impl Study {
    /// The study's figures computed from `doc` (none when the run lacks their cases).
    pub fn figures(&self, doc: &ResultDoc) -> Vec<StudyFigure> {
        (self.figures)(doc)
    }

    /// The study's tables: its published columns, and this machine's beside them from `doc`.
    /// A note several tables share (the machine, what `!` and `-` mean) is said under the
    /// first of them only.
    pub fn tables(&self, doc: Option<&ResultDoc>) -> Vec<View> {
        let mut views = (self.tables)(doc);
        let mut said = std::collections::HashSet::new();
        for v in &mut views {
            v.notes.retain(|n| said.insert(n.clone()));
        }
        views
    }

    /// The study's charts in its own form, the published series beside this machine's.
    pub fn plots(&self, doc: Option<&ResultDoc>) -> Vec<Plot> {
        (self.plots)(doc)
    }

    /// Whether `doc` holds any case this study reads.
    pub fn applies_to(&self, doc: &ResultDoc) -> bool {
        doc.experiments
            .iter()
            .any(|e| self.info.experiments.contains(&e.name.as_str()) && !e.cases.is_empty())
            && !self.figures(doc).is_empty()
    }
}

/// Every study, in the order `oscost study` lists them.
pub const STUDIES: &[Study] = &[
    Study {
        info: minix3::INFO,
        figures: minix3::figures,
        tables: minix3::tables,
        plots: minix3::plots,
    },
    Study {
        info: bradford::INFO,
        figures: bradford::figures,
        tables: bradford::tables,
        plots: bradford::plots,
    },
    Study {
        info: windows_yield::INFO,
        figures: windows_yield::figures,
        tables: windows_yield::tables,
        plots: windows_yield::plots,
    },
    Study {
        info: qnx_tick::INFO,
        figures: qnx_tick::figures,
        tables: qnx_tick::tables,
        plots: qnx_tick::plots,
    },
    Study {
        info: timeslice::INFO,
        figures: timeslice::figures,
        tables: timeslice::tables,
        plots: timeslice::plots,
    },
];

/// The study called `name`.
pub fn find(name: &str) -> Option<&'static Study> {
    STUDIES.iter().find(|s| s.info.name == name)
}

/// The study whose figures the published baseline `baseline` holds.
pub fn of_baseline(baseline: &str) -> Option<&'static Study> {
    STUDIES
        .iter()
        .find(|s| s.info.baselines.contains(&baseline))
}

/// The studies whose cases `doc` holds.
pub fn applying_to(doc: &ResultDoc) -> Vec<&'static Study> {
    STUDIES.iter().filter(|s| s.applies_to(doc)).collect()
}

/// Every study figure `doc` yields, all studies together.
pub fn all_figures(doc: &ResultDoc) -> Vec<StudyFigure> {
    STUDIES.iter().flat_map(|s| s.figures(doc)).collect()
}

/// `oscost study` wraps its text at this width where no terminal gives one.
const LIST_WIDTH: u16 = 100;

/// The text of `oscost study`: one block per study, wrapped to `width` (100 without one).
pub fn list_text(width: Option<u16>) -> String {
    let width = Some(width.unwrap_or(LIST_WIDTH));
    let mut s = crate::layout::wrap(
        "The studies oscost repeats: `oscost study NAME` runs one on this machine and prints its \
         tables with the published figures beside this machine's.",
        width,
        0,
    );
    s.push('\n');
    for st in STUDIES {
        let i = &st.info;
        s += &format!("{}\n", i.name);
        let w = |t: String| crate::layout::wrap(&format!("  {t}"), width, 4);
        s += &w(i.citation.to_owned());
        s += &w(format!("ran on: {}", i.ran_on));
        s += &w(format!("measured: {}", i.measured));
        s += &w(format!(
            "runs: {}; published figures: {}",
            i.experiments.join(", "),
            i.baselines.join(", ")
        ));
        s.push('\n');
    }
    s += &crate::layout::wrap(
        "Run one:     oscost study windows-yield --quick   (seconds; the default up to about \
         1.5 min; --full at the study's own sizes)",
        width,
        13,
    );
    s += &crate::layout::wrap(
        "From a run:  oscost report published:qnx-tick r.json -o r.html",
        width,
        13,
    );
    s
}

// ---------------------------------------------------------------------------------------------
// What the study files share: finding cases, reading published values, formatting.

pub(crate) fn case<'a>(doc: &'a ResultDoc, id: &str) -> Option<&'a CaseResult> {
    doc.experiments
        .iter()
        .flat_map(|e| &e.cases)
        .find(|c| c.id == id)
}

pub(crate) fn derived<'a>(doc: &'a ResultDoc, id: &str) -> Option<&'a DerivedResult> {
    doc.experiments
        .iter()
        .flat_map(|e| &e.derived)
        .find(|d| d.id == id)
}

/// An experiment-wide parameter of experiment `name` in `doc`.
pub(crate) fn exp_param<'a>(
    doc: &'a ResultDoc,
    name: &str,
    key: &str,
) -> Option<&'a serde_json::Value> {
    doc.experiments
        .iter()
        .find(|e| e.name == name)
        .and_then(|e| e.params.get(key))
}

/// The shipped baseline `name` (compiled in, so always there).
pub(crate) fn baseline(name: &str) -> PublishedDoc {
    crate::baselines::find(name).unwrap_or_else(|| panic!("baseline {name} is shipped"))
}

/// The published value of figure `id` in `doc`.
pub(crate) fn published(doc: &PublishedDoc, id: &str) -> Option<f64> {
    doc.figures.iter().find(|f| f.id == id).map(|f| f.value)
}

/// Why a figure built on `cases` is not to be trusted: the ids whose checks failed.
pub(crate) fn flag_of(cases: &[&CaseResult]) -> Option<String> {
    let failed: Vec<&str> = cases
        .iter()
        .filter(|c| !c.checks_passed)
        .map(|c| c.id.as_str())
        .collect();
    (!failed.is_empty()).then(|| format!("a check failed in {}", failed.join(", ")))
}

/// Why a figure built on `cases` is to be read with care: the ids that are noisy or carry a
/// warning (CPUs shared, speed-up withheld, warm-up unsettled).
pub(crate) fn doubt_of(cases: &[&CaseResult]) -> Option<String> {
    let doubtful: Vec<&str> = cases
        .iter()
        .filter(|c| c.noisy || !c.warnings.is_empty())
        .map(|c| c.id.as_str())
        .collect();
    (!doubtful.is_empty()).then(|| format!("noisy or disturbed: {}", doubtful.join(", ")))
}

/// The doubt of a figure made from other figures: theirs, joined.
pub(crate) fn doubt_of_figures<'a>(
    figs: impl IntoIterator<Item = &'a StudyFigure>,
) -> Option<String> {
    let mut all: Vec<&str> = Vec::new();
    for d in figs.into_iter().filter_map(|f| f.doubt.as_deref()) {
        let ids = d.strip_prefix("noisy or disturbed: ").unwrap_or(d);
        for id in ids.split(", ") {
            if !all.contains(&id) {
                all.push(id);
            }
        }
    }
    (!all.is_empty()).then(|| format!("noisy or disturbed: {}", all.join(", ")))
}

/// Resamples per bootstrap interval of a study figure.
const RESAMPLES: usize = 2000;

/// `median(b) / median(a)` with its bootstrap 95 % interval from the raw samples.
pub(crate) fn ratio(a: &CaseResult, b: &CaseResult) -> Option<(f64, Option<[f64; 2]>)> {
    if let Some(r) = bootstrap_ratio_ci(&a.raw_ns, &b.raw_ns, RESAMPLES, 0x5eed) {
        let ci = (r.ci95[0].is_finite() && r.ci95[1].is_finite()).then_some(r.ci95);
        return Some((r.estimate, ci));
    }
    (a.median_ns > 0.0).then(|| (b.median_ns / a.median_ns, None))
}

/// A study figure `(b / a − 1) × 100 %`: how much longer `b` takes than `a`.
pub(crate) fn overhead_figure(
    id: String,
    description: String,
    a: &CaseResult,
    b: &CaseResult,
) -> Option<StudyFigure> {
    let (r, ci) = ratio(a, b)?;
    Some(StudyFigure {
        id,
        description,
        value: (r - 1.0) * 100.0,
        ci95: ci.map(|c| c.map(|x| (x - 1.0) * 100.0)),
        unit: "%".into(),
        flagged: flag_of(&[a, b]),
        doubt: doubt_of(&[a, b]),
    })
}

/// A figure read from the list by id.
pub(crate) fn get<'a>(figs: &'a [StudyFigure], id: &str) -> Option<&'a StudyFigure> {
    figs.iter().find(|f| f.id == id)
}

/// A study figure's value for a table cell: `12.3 %`, `1.05 x`, `1 256 cycles`, marked `!`
/// when a check failed behind it and `~` when a case behind it is noisy or was disturbed
/// ([`MARKS`] says so under the tables).
pub(crate) fn cell(f: Option<&StudyFigure>) -> String {
    match f {
        None => "-".into(),
        Some(f) => {
            let v = value_text(f.value, &f.unit);
            if f.flagged.is_some() {
                format!("{v} !")
            } else if f.doubt.is_some() {
                format!("{v} ~")
            } else {
                v
            }
        }
    }
}

/// What a study cell's `~` means (its `!` is said by each study's own note).
pub const MARKS: &str =
    "~ marks a figure a noisy or disturbed case is behind (its CPUs shared, its \
                         warm-up unsettled): read it with the run's warnings below";

/// A value in its unit, three significant digits: `+12.3 %`, `1.05 x`, `1256 cycles`.
pub fn value_text(v: f64, unit: &str) -> String {
    use crate::plot::chart::{sig, time};
    match unit {
        "%" => format!("{} %", signed(v)),
        "ns" => time(v),
        "x" => format!("{} x", sig(v)),
        "cycles" => format!("{} cycles", sig(v)),
        u => format!("{} {u}", sig(v)),
    }
}

pub use crate::format::signed;

/// A published value in its unit for a table cell, or `-`.
pub(crate) fn pub_cell(v: Option<f64>, unit: &str) -> String {
    match v {
        None => "-".into(),
        Some(v) => match unit {
            "us" => format!("{} µs", crate::plot::chart::sig(v)),
            "ms" => format!("{} ms", crate::plot::chart::sig(v)),
            "" => crate::plot::chart::sig(v),
            u => value_text(v, u),
        },
    }
}

/// The note under every study table that holds this machine's column.
pub(crate) fn this_machine_note(doc: Option<&ResultDoc>) -> Option<String> {
    let doc = doc?;
    let e = &doc.environment;
    Some(format!(
        "this machine: {} on {}, run {}; `!` marks a figure whose mechanism check failed; \
         `-` one this run did not measure.",
        e.system(),
        e.cpu_model.as_deref().unwrap_or("an unnamed CPU"),
        doc.run_id
            .as_deref()
            .map_or("(no id)", |id| id.get(..8).unwrap_or(id)),
    ))
}

// ---------------------------------------------------------------------------------------------
// Charts: the published series dashed, one colour per system; this machine solid black.

use crate::plot::chart::{Key, Line, Marker, Point, Style};

/// The style of the `i`th published series: a colour of its own, dashed.
pub(crate) fn published_style(i: usize) -> Style {
    let mut s = Style::nth(i + 1);
    s.dash = "5 3";
    s
}

/// This machine's series: solid black circles.
pub(crate) fn this_style() -> Style {
    Style {
        colour: "#000000",
        marker: Some(Marker::Circle),
        size: 4.5,
        line: true,
        dash: "",
    }
}

/// A series of `(x, y, interval, tooltip)` points.
pub(crate) fn line(
    label: &str,
    style: Style,
    points: Vec<(f64, f64, Option<[f64; 2]>, String)>,
) -> Line {
    Line {
        label: label.to_owned(),
        style,
        points: points
            .into_iter()
            .filter(|p| p.1.is_finite())
            .map(|(x, y, ci, tip)| Point {
                x,
                y,
                ci,
                hollow: false,
                tip,
            })
            .collect(),
    }
}

/// The legend of `lines`, each once by label.
pub(crate) fn keys(lines: &[&Line]) -> Vec<Key> {
    let mut out: Vec<Key> = Vec::new();
    for l in lines {
        if !out
            .iter()
            .any(|k| matches!(k, Key::Series(t, _) if *t == l.label))
        {
            out.push(Key::Series(l.label.clone(), l.style));
        }
    }
    out
}

/// Every value a panel's y axis must hold: the points and their intervals.
pub(crate) fn y_values(lines: &[Line]) -> Vec<f64> {
    lines
        .iter()
        .flat_map(|l| &l.points)
        .flat_map(|p| [p.y].into_iter().chain(p.ci.into_iter().flatten()))
        .collect()
}

/// Every x of a panel's points.
pub(crate) fn x_values(lines: &[Line]) -> Vec<f64> {
    lines.iter().flat_map(|l| &l.points).map(|p| p.x).collect()
}

/// The legend's name for this machine's series.
pub(crate) fn this_label(doc: &ResultDoc) -> String {
    format!("this machine ({})", doc.environment.system())
}

#[cfg(test)]
mod tests;
