//! `compare`: results side by side, each against the first, with what can explain a difference.
//!
//! Between two measured runs a case's verdict comes from its raw samples: the bootstrap 95 %
//! CI of the ratio of medians must exclude 1, the Mann-Whitney test must reject "same
//! distribution" (p < 0.05), and the change must exceed a stated noise threshold, because a
//! machine's speed drifts between runs by more than the samples of one run show. A published
//! baseline has no samples: it is shown beside today's figure with the ratio only, and is
//! never called faster or slower.

use crate::render::fmt_ns;
use comfy_table::{presets, Cell, CellAlignment, ContentArrangement, Table};
use oscost_model::env::Environment;
use oscost_model::schema::{CaseResult, DerivedResult, ResultDoc};
use oscost_model::PublishedDoc;
use oscost_stats::{bootstrap_ratio_ci, mann_whitney_p, DEFAULT_RESAMPLES, DEFAULT_SEED};
use serde::Serialize;
use std::collections::BTreeMap;

/// Schema of `compare --json`.
pub const COMPARE_SCHEMA: &str = "oscost-compare/1";

/// Below this Mann-Whitney p-value the two sides' samples differ.
const P_SIGNIFICANT: f64 = 0.05;

/// One input of a comparison: a result (from a file or the history) or a published baseline.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// A run oscost measured.
    Measured(&'a ResultDoc),
    /// Figures as a study published them.
    Published(&'a PublishedDoc),
}

/// How to judge a difference.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Settings {
    /// Changes smaller than this, in percent, are noise whatever the statistics say.
    pub threshold_pct: f64,
    /// When set, each figure's cost per second at this many operations per second.
    pub rate_per_s: Option<f64>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            threshold_pct: 10.0,
            rate_per_s: None,
        }
    }
}

/// One input against the first.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Label of the first input (the baseline).
    pub baseline: String,
    /// Label of this input.
    pub other: String,
    /// Whether either side is a published baseline (ratios only, no verdicts).
    pub published: Option<PublishedSide>,
    /// Settings used.
    pub settings: Settings,
    /// Environment fields that differ and can explain a difference.
    pub environment: Vec<EnvDiff>,
    /// One row per common case or derived figure, in the baseline's order.
    pub rows: Vec<Row>,
    /// Case ids only the baseline has.
    pub only_in_baseline: Vec<String>,
    /// Case ids only the other input has.
    pub only_in_other: Vec<String>,
    /// Published figures with no oscost case to stand beside, and why.
    pub unmatched_published: Vec<Unmatched>,
    /// Published figures that are not times per operation (a percentage, a ratio, cycles per
    /// event) beside the same figure computed from the run as the study computed it.
    pub study_rows: Vec<StudyRow>,
    /// Set when so many figures differ that the machine itself more likely changed between
    /// the runs than each figure separately: says so, and where the differences gather.
    pub drift: Option<String>,
}

/// The published side of a comparison: where the figures come from.
#[derive(Debug, Clone, Serialize)]
pub struct PublishedSide {
    /// Baseline name.
    pub name: String,
    /// The study in full: authors, title, where and when.
    pub citation: String,
    /// The machine as published.
    pub machine: String,
}

/// An environment field whose values differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvDiff {
    /// What the field is.
    pub field: String,
    /// Its value for the baseline.
    pub baseline: String,
    /// Its value for the other input.
    pub other: String,
}

/// One side's figure.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// Median (or published value) per operation, ns.
    pub median_ns: f64,
    /// 95 % CI, ns; `None` for a published value.
    pub ci95_ns: Option<[f64; 2]>,
    /// Samples behind the figure (0 for a published or derived one).
    pub samples: usize,
    /// Whether every mechanism check passed (true for a published value).
    pub checks_passed: bool,
}

/// What a row's statistics say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Slower than the baseline beyond noise.
    Slower,
    /// Faster than the baseline beyond noise.
    Faster,
    /// No difference beyond noise.
    NoDifference,
    /// The two figures cannot be set against each other (no ratio).
    NotComparable,
    /// One side is a published figure, not measured here: a ratio, no verdict.
    NotMeasuredHere,
}

impl Verdict {
    fn text(self) -> &'static str {
        match self {
            Verdict::Slower => "slower",
            Verdict::Faster => "faster",
            Verdict::NoDifference => "no difference",
            Verdict::NotComparable => "not comparable",
            Verdict::NotMeasuredHere => "not measured here",
        }
    }
}

/// Cost per second at the chosen rate.
#[derive(Debug, Clone, Serialize)]
pub struct RateCost {
    /// Operations per second.
    pub ops_per_s: f64,
    /// Baseline, ns of CPU time per second.
    pub baseline_ns_per_s: f64,
    /// Other input, ns per second.
    pub other_ns_per_s: f64,
    /// Their difference, ns per second.
    pub diff_ns_per_s: f64,
}

/// One figure compared.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Case id (or derived figure id).
    pub id: String,
    /// `case`, `derived` or `published`.
    pub kind: &'static str,
    /// What one operation is.
    pub unit: String,
    /// The baseline's figure.
    pub baseline: Figure,
    /// The other input's figure.
    pub other: Figure,
    /// other − baseline, ns.
    pub diff_ns: f64,
    /// The same in percent of the baseline.
    pub diff_pct: f64,
    /// other / baseline.
    pub ratio: Option<f64>,
    /// Bootstrap 95 % CI of the ratio of medians (from raw samples; for a derived figure the
    /// ratio of its CI ends).
    pub ratio_ci95: Option<[f64; 2]>,
    /// Mann-Whitney two-sided p-value of the raw samples.
    pub mann_whitney_p: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// Cost per second at `settings.rate_per_s`.
    pub at_rate: Option<RateCost>,
    /// What the reader must know about this row (a failed check, a published figure's meaning).
    pub note: Option<String>,
}

/// A published figure beside the study figure of the same meaning computed from a run.
#[derive(Debug, Clone, Serialize)]
pub struct StudyRow {
    /// The figure's id in the baseline.
    pub id: String,
    /// The study figure it stands beside (`study.<study>.…`).
    pub measured_id: String,
    /// The unit both are shown in.
    pub unit: String,
    /// The published value, in `unit`.
    pub published: f64,
    /// The value computed from the run, in `unit`.
    pub measured: f64,
    /// The computed value's 95 % interval, where it has one.
    pub measured_ci95: Option<[f64; 2]>,
    /// measured − published, in `unit` (points for a percentage).
    pub difference: f64,
    /// What the figure meant in the study, and what differs.
    pub note: String,
}

/// A published figure with no oscost figure beside it.
#[derive(Debug, Clone, Serialize)]
pub struct Unmatched {
    /// The figure's id in the baseline.
    pub id: String,
    /// Its value and unit as published.
    pub value: String,
    /// What it meant there.
    pub meaning: String,
    /// Why it is not compared.
    pub why: String,
}

/// Compares every input after the first against the first.
pub fn compare(inputs: &[(String, Source<'_>)], settings: Settings) -> Vec<Comparison> {
    let Some((base_label, base)) = inputs.first() else {
        return Vec::new();
    };
    inputs[1..]
        .iter()
        .map(|(label, other)| pair(base_label, *base, label, *other, settings))
        .collect()
}

fn pair(
    base_label: &str,
    base: Source<'_>,
    label: &str,
    other: Source<'_>,
    settings: Settings,
) -> Comparison {
    let mut c = Comparison {
        baseline: base_label.into(),
        other: label.into(),
        published: None,
        settings,
        environment: Vec::new(),
        rows: Vec::new(),
        only_in_baseline: Vec::new(),
        only_in_other: Vec::new(),
        unmatched_published: Vec::new(),
        study_rows: Vec::new(),
        drift: None,
    };
    match (base, other) {
        (Source::Measured(a), Source::Measured(b)) => {
            measured_pair(&mut c, a, b);
            c.drift = drift(&c.rows);
        }
        (Source::Published(p), Source::Measured(m)) => published_pair(&mut c, p, m, false),
        (Source::Measured(m), Source::Published(p)) => published_pair(&mut c, p, m, true),
        (Source::Published(p), Source::Published(q)) => published_only(&mut c, p, q),
    }
    c
}

/// Every figure of a result by id: its cases, then its derived figures.
enum Measured<'a> {
    Case(&'a CaseResult),
    Derived(&'a DerivedResult),
}

fn figures(doc: &ResultDoc) -> Vec<(&str, Measured<'_>)> {
    let mut v = Vec::new();
    for e in &doc.experiments {
        v.extend(e.cases.iter().map(|c| (c.id.as_str(), Measured::Case(c))));
        v.extend(
            e.derived
                .iter()
                .map(|d| (d.id.as_str(), Measured::Derived(d))),
        );
    }
    v
}

fn measured_pair(c: &mut Comparison, a: &ResultDoc, b: &ResultDoc) {
    c.environment = env_diffs(&a.environment, &b.environment);
    for (field, x, y) in [(
        "cases with a failed mechanism check",
        failed_checks(a),
        failed_checks(b),
    )] {
        if x != y {
            c.environment.push(EnvDiff {
                field: field.into(),
                baseline: x.to_string(),
                other: y.to_string(),
            });
        }
    }
    let fa = figures(a);
    let fb = figures(b);
    let in_b: BTreeMap<&str, &Measured> = fb.iter().map(|(id, m)| (*id, m)).collect();
    let in_a: BTreeMap<&str, &Measured> = fa.iter().map(|(id, m)| (*id, m)).collect();
    for (id, ma) in &fa {
        match (ma, in_b.get(id)) {
            (Measured::Case(x), Some(Measured::Case(y))) => c.rows.push(case_row(x, y, c.settings)),
            (Measured::Derived(x), Some(Measured::Derived(y))) => {
                c.rows.push(derived_row(x, y, c.settings))
            }
            _ => c.only_in_baseline.push(id.to_string()),
        }
    }
    c.only_in_other = fb
        .iter()
        .filter(|(id, m)| {
            !matches!(
                (in_a.get(id), m),
                (Some(Measured::Case(_)), Measured::Case(_))
                    | (Some(Measured::Derived(_)), Measured::Derived(_))
            )
        })
        .map(|(id, _)| id.to_string())
        .collect();
    if crate::counterparts::across_systems(&a.environment, &b.environment) {
        counterpart_rows(c, &in_a, &in_b);
        // Linux's settings (tick, mitigations, THP...) are unknown on Windows, not different.
        c.environment
            .retain(|d| d.baseline != "unknown" && d.other != "unknown");
    }
}

/// A Windows run beside a Linux run: the figures of one meaning under different ids (see
/// `counterparts`) become rows, and leave the lists of figures only one side has.
fn counterpart_rows(
    c: &mut Comparison,
    in_a: &BTreeMap<&str, &Measured>,
    in_b: &BTreeMap<&str, &Measured>,
) {
    let mut paired = Vec::new();
    for id in &c.only_in_baseline {
        let Some((other, what)) = crate::counterparts::counterpart(id) else {
            continue;
        };
        let mut row = match (in_a.get(id.as_str()), in_b.get(other.as_str())) {
            (Some(Measured::Case(x)), Some(Measured::Case(y))) => case_row(x, y, c.settings),
            (Some(Measured::Derived(x)), Some(Measured::Derived(y))) => {
                derived_row(x, y, c.settings)
            }
            _ => continue,
        };
        let mine = format!("beside B's {other}: {what}");
        row.note = Some(row.note.map_or(mine.clone(), |n| format!("{mine}; {n}")));
        // Both ids in the row's name: the tables print no note for a measured row.
        row.id = format!("{id} vs {other}");
        c.rows.push(row);
        paired.push((id.clone(), other));
    }
    c.only_in_baseline
        .retain(|id| !paired.iter().any(|(a, _)| a == id));
    c.only_in_other
        .retain(|id| !paired.iter().any(|(_, b)| b == id));
}

/// Above this share of figures differing, a comparison says the machine may have drifted.
const DRIFT_SHARE: f64 = 0.2;
/// ... when it judged at least this many figures ...
const DRIFT_MIN_JUDGED: usize = 10;
/// ... and at least this many moved.
const DRIFT_MIN_MOVED: usize = 3;

/// The drift warning, when more than [`DRIFT_SHARE`] of the figures with a verdict differ:
/// between two runs of one build that happens when the machine changed (a virtual machine's
/// host, frequency, other load), and it is then the whole run, not each row, that is in doubt.
fn drift(rows: &[Row]) -> Option<String> {
    let judged: Vec<&Row> = rows
        .iter()
        .filter(|r| {
            matches!(
                r.verdict,
                Verdict::Slower | Verdict::Faster | Verdict::NoDifference
            )
        })
        .collect();
    let moved: Vec<&Row> = judged
        .iter()
        .copied()
        .filter(|r| r.verdict != Verdict::NoDifference)
        .collect();
    // A few figures are rows to believe, however large their share of a small comparison.
    if judged.len() < DRIFT_MIN_JUDGED
        || moved.len() < DRIFT_MIN_MOVED
        || moved.len() as f64 <= DRIFT_SHARE * judged.len() as f64
    {
        return None;
    }
    let slower = moved
        .iter()
        .filter(|r| r.verdict == Verdict::Slower)
        .count();
    // Where they gather: the experiment (first part of the id) of each row that moved.
    let mut by_experiment: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in &judged {
        let e = r.id.split('.').next().unwrap_or(&r.id);
        let entry = by_experiment.entry(e).or_default();
        entry.1 += 1;
        if r.verdict != Verdict::NoDifference {
            entry.0 += 1;
        }
    }
    let mut gathered: Vec<(&str, (usize, usize))> = by_experiment
        .into_iter()
        .filter(|(_, (m, _))| *m > 0)
        .collect();
    gathered.sort_by(|a, b| (b.1 .0 * a.1 .1).cmp(&(a.1 .0 * b.1 .1)));
    let gathered: Vec<String> = gathered
        .iter()
        .map(|(e, (m, n))| format!("{e} {m} of {n}"))
        .collect();
    Some(format!(
        "{} of {} figures differ beyond noise ({slower} slower, {} faster; {}). When this many \
         move at once the machine itself has likely changed between the runs (a virtual \
         machine's host, frequency scaling, other load): repeat both sides, interleaved \
         (A B A B), before trusting any single row.",
        moved.len(),
        judged.len(),
        moved.len() - slower,
        gathered.join(", ")
    ))
}

fn failed_checks(doc: &ResultDoc) -> usize {
    doc.experiments
        .iter()
        .flat_map(|e| &e.cases)
        .filter(|c| !c.checks_passed)
        .count()
}

fn verdict(ratio: f64, ci: [f64; 2], p: Option<f64>, threshold_pct: f64) -> Verdict {
    let beyond_ci = ci[0] > 1.0 || ci[1] < 1.0;
    let beyond_p = !matches!(p, Some(p) if p >= P_SIGNIFICANT);
    let beyond_threshold = (ratio - 1.0).abs() * 100.0 > threshold_pct;
    if !(beyond_ci && beyond_p && beyond_threshold) {
        Verdict::NoDifference
    } else if ratio > 1.0 {
        Verdict::Slower
    } else {
        Verdict::Faster
    }
}

fn at_rate(a: f64, b: f64, settings: Settings) -> Option<RateCost> {
    settings.rate_per_s.map(|r| RateCost {
        ops_per_s: r,
        baseline_ns_per_s: a * r,
        other_ns_per_s: b * r,
        diff_ns_per_s: (b - a) * r,
    })
}

fn pct(a: f64, b: f64) -> f64 {
    if a == 0.0 {
        f64::NAN
    } else {
        (b - a) / a.abs() * 100.0
    }
}

/// Above this relative gap a case's `median_ns` is not the median of its `raw_ns` (a file
/// written by hand or by another tool): beyond the last bits a JSON round trip may change.
const SUMMARY_GAP: f64 = 1e-9;

/// The median a case's row uses, and a note when its summary says otherwise. With raw samples
/// the verdict comes from them, so the difference and the percentage must too: a row never
/// reads "−104.7 %" from the summary beside "no difference" from the samples.
fn row_median(c: &CaseResult, side: &str, use_raw: bool) -> (f64, Option<String>) {
    if !use_raw {
        return (c.median_ns, None);
    }
    let raw = oscost_stats::median(&c.raw_ns);
    let gap = (c.median_ns - raw).abs() > SUMMARY_GAP * raw.abs().max(c.median_ns.abs());
    let note = (gap || !c.median_ns.is_finite()).then(|| {
        format!(
            "{side}'s median_ns ({}) is not the median of its raw_ns ({}): the file is \
             inconsistent, so this row uses the raw samples throughout",
            fmt_ns(c.median_ns),
            fmt_ns(raw)
        )
    });
    (raw, note)
}

fn case_row(a: &CaseResult, b: &CaseResult, settings: Settings) -> Row {
    let ratio = bootstrap_ratio_ci(&a.raw_ns, &b.raw_ns, DEFAULT_RESAMPLES, DEFAULT_SEED);
    // The verdict comes from the raw samples when both sides have usable ones; then so do the
    // figures, the difference and the percentage.
    let use_raw = ratio.is_some();
    let (ma, note_a) = row_median(a, "A", use_raw);
    let (mb, note_b) = row_median(b, "B", use_raw);
    let figure = |c: &CaseResult, median_ns: f64, inconsistent: bool| Figure {
        median_ns,
        // The summary's interval belongs to the summary's median, not to this one.
        ci95_ns: (!inconsistent).then_some(c.ci95_ns),
        samples: c.samples,
        checks_passed: c.checks_passed,
    };
    // Every size: with few samples the test cannot reach p < 0.05 (3 against 3 never does),
    // which is the honest verdict on so little data.
    let p = mann_whitney_p(&a.raw_ns, &b.raw_ns);
    let mut note = Vec::new();
    if a.unit != b.unit {
        note.push(format!("units differ: {} against {}", a.unit, b.unit));
    }
    if !a.checks_passed || !b.checks_passed {
        note.push("a mechanism check failed: the figure is not trusted".into());
    }
    note.extend(note_a.iter().chain(&note_b).cloned());
    let verdict = match &ratio {
        Some(r) if a.unit == b.unit => verdict(r.estimate, r.ci95, p, settings.threshold_pct),
        _ => Verdict::NotComparable,
    };
    Row {
        id: a.id.clone(),
        kind: "case",
        unit: a.unit.clone(),
        baseline: figure(a, ma, note_a.is_some()),
        other: figure(b, mb, note_b.is_some()),
        diff_ns: mb - ma,
        diff_pct: pct(ma, mb),
        ratio: ratio.as_ref().map(|r| r.estimate),
        ratio_ci95: ratio.map(|r| r.ci95),
        mann_whitney_p: p,
        verdict,
        at_rate: at_rate(ma, mb, settings),
        note: (!note.is_empty()).then(|| note.join("; ")),
    }
}

fn derived_row(a: &DerivedResult, b: &DerivedResult, settings: Settings) -> Row {
    let figure = |d: &DerivedResult| Figure {
        median_ns: d.estimate_ns,
        ci95_ns: Some(d.ci95_ns),
        samples: 0,
        checks_passed: d.flagged.is_none(),
    };
    // The ratio of the CI ends bounds the ratio conservatively; only positive figures have
    // one (a difference of medians can come out at or below zero).
    let positive = a.ci95_ns[0] > 0.0 && b.ci95_ns[0] > 0.0;
    let ratio = positive.then(|| b.estimate_ns / a.estimate_ns);
    let ci = positive.then(|| [b.ci95_ns[0] / a.ci95_ns[1], b.ci95_ns[1] / a.ci95_ns[0]]);
    let verdict = match (ratio, ci) {
        (Some(r), Some(ci)) => verdict(r, ci, None, settings.threshold_pct),
        _ => Verdict::NotComparable,
    };
    let note = match (&a.flagged, &b.flagged) {
        (None, None) => None,
        _ => Some("flagged: a term's mechanism check failed".into()),
    };
    Row {
        id: a.id.clone(),
        kind: "derived",
        unit: "op".into(),
        baseline: figure(a),
        other: figure(b),
        diff_ns: b.estimate_ns - a.estimate_ns,
        diff_pct: pct(a.estimate_ns, b.estimate_ns),
        ratio,
        ratio_ci95: ci,
        mann_whitney_p: None,
        verdict,
        at_rate: at_rate(a.estimate_ns, b.estimate_ns, settings),
        note,
    }
}

fn citation(p: &PublishedDoc) -> PublishedSide {
    let machine = [
        Some(p.machine.os.clone()),
        p.machine.cpu.clone(),
        p.machine
            .cpus
            .map(|n| format!("{n} CPU{}", if n == 1 { "" } else { "s" })),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    PublishedSide {
        name: p.name.clone(),
        citation: crate::baselines::full_citation(&p.citation),
        machine,
    }
}

fn published_value(f: &oscost_model::PublishedFigure) -> String {
    format!("{} {}", trim_float(f.value), f.unit)
}

/// `v` in unit `from` expressed in unit `to`, when they measure the same kind of thing.
fn convert(v: f64, from: &str, to: &str) -> Option<f64> {
    let ns = |u: &str| match u {
        "ns" => Some(1.0),
        "us" | "µs" => Some(1e3),
        "ms" => Some(1e6),
        "s" => Some(1e9),
        _ => None,
    };
    if from == to {
        return Some(v);
    }
    Some(v * ns(from)? / ns(to)?)
}

fn trim_float(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// Today's figures beside a study's. `measured_first`: the measured run is the baseline.
fn published_pair(c: &mut Comparison, p: &PublishedDoc, m: &ResultDoc, measured_first: bool) {
    let side = citation(p);
    let kernel = |e: &Environment| {
        format!(
            "{} ({})",
            e.system(),
            e.cpu_model.as_deref().unwrap_or("CPU unknown")
        )
    };
    let (pub_text, today) = (
        format!("{} (as published)", side.machine),
        kernel(&m.environment),
    );
    c.environment.push(if measured_first {
        EnvDiff {
            field: "machine".into(),
            baseline: today,
            other: pub_text,
        }
    } else {
        EnvDiff {
            field: "machine".into(),
            baseline: pub_text,
            other: today,
        }
    });
    c.published = Some(side);
    let figs = figures(m);
    let by_id: BTreeMap<&str, &Measured> = figs.iter().map(|(id, f)| (*id, f)).collect();
    let study_figs = crate::study::all_figures(m);
    for f in &p.figures {
        if let Some(id) = f.case_id.as_deref().filter(|id| id.starts_with("study.")) {
            match study_figs.iter().find(|s| s.id == id) {
                Some(s) => match convert(f.value, &f.unit, &s.unit) {
                    Some(v) => c.study_rows.push(StudyRow {
                        id: f.id.clone(),
                        measured_id: s.id.clone(),
                        unit: s.unit.clone(),
                        published: v,
                        measured: s.value,
                        measured_ci95: s.ci95,
                        difference: s.value - v,
                        note: format!(
                            "{}{}{}",
                            f.meaning,
                            f.mapping_note
                                .as_ref()
                                .map(|n| format!(" ({n})"))
                                .unwrap_or_default(),
                            s.flagged
                                .as_ref()
                                .map(|x| format!("; today's figure is flagged: {x}"))
                                .unwrap_or_default()
                        ),
                    }),
                    None => c.unmatched_published.push(Unmatched {
                        id: f.id.clone(),
                        value: published_value(f),
                        meaning: f.meaning.clone(),
                        why: format!("{id} is in {}, not in {}", s.unit, f.unit),
                    }),
                },
                None => c.unmatched_published.push(Unmatched {
                    id: f.id.clone(),
                    value: published_value(f),
                    meaning: f.meaning.clone(),
                    why: format!(
                        "{id} cannot be computed from this result (its cases are not in it)"
                    ),
                }),
            }
            continue;
        }
        let found = f
            .case_id
            .as_deref()
            .and_then(|id| by_id.get(id).map(|m| (id, m)));
        let (Some(per_op), Some((id, m))) = (f.per_op_ns, found) else {
            let why = match (&f.case_id, f.per_op_ns, found) {
                (None, _, _) => {
                    let why = f
                        .mapping_note
                        .clone()
                        .unwrap_or_else(|| "no oscost case measures the same thing".into());
                    match &f.nearest {
                        Some(n) => format!("{why}; nearest on Linux: {n}"),
                        None => why,
                    }
                }
                // A figure only another system measures (the Windows agent's Win32 locks)
                // keeps its note and nearest figure here, as an unmapped one does.
                (Some(id), _, None) => match (&f.mapping_note, &f.nearest) {
                    (Some(n), Some(near)) => {
                        format!("{id} is not in this result: {n}; nearest on Linux: {near}")
                    }
                    _ => format!("{id} is not in this result"),
                },
                (Some(id), None, Some(_)) => format!(
                    "not a time per operation, so not set beside {id}{}",
                    f.mapping_note
                        .as_ref()
                        .map(|n| format!(": {n}"))
                        .unwrap_or_default()
                ),
                (Some(_), Some(_), Some(_)) => unreachable!("handled above"),
            };
            c.unmatched_published.push(Unmatched {
                id: f.id.clone(),
                value: published_value(f),
                meaning: f.meaning.clone(),
                why,
            });
            continue;
        };
        let (today, unit, ok) = match m {
            Measured::Case(x) => (
                Figure {
                    median_ns: x.median_ns,
                    ci95_ns: Some(x.ci95_ns),
                    samples: x.samples,
                    checks_passed: x.checks_passed,
                },
                x.unit.clone(),
                x.checks_passed,
            ),
            Measured::Derived(d) => (
                Figure {
                    median_ns: d.estimate_ns,
                    ci95_ns: Some(d.ci95_ns),
                    samples: 0,
                    checks_passed: d.flagged.is_none(),
                },
                "op".into(),
                d.flagged.is_none(),
            ),
        };
        let published = Figure {
            median_ns: per_op,
            ci95_ns: None,
            samples: 0,
            checks_passed: true,
        };
        let (a, b) = if measured_first {
            (today, published)
        } else {
            (published, today)
        };
        let mut note = format!("{} = {}: {}", f.id, published_value(f), f.meaning);
        if let Some(n) = &f.mapping_note {
            note += &format!(" ({n})");
        }
        if !ok {
            note += "; today's mechanism check failed";
        }
        c.rows.push(Row {
            id: id.to_string(),
            kind: "published",
            unit,
            diff_ns: b.median_ns - a.median_ns,
            diff_pct: pct(a.median_ns, b.median_ns),
            ratio: (a.median_ns > 0.0).then(|| b.median_ns / a.median_ns),
            ratio_ci95: None,
            mann_whitney_p: None,
            verdict: Verdict::NotMeasuredHere,
            at_rate: at_rate(a.median_ns, b.median_ns, c.settings),
            note: Some(note),
            baseline: a,
            other: b,
        });
    }
}

/// Two studies' figures: the rows they share by figure id, ratios only.
fn published_only(c: &mut Comparison, p: &PublishedDoc, q: &PublishedDoc) {
    let (sp, sq) = (citation(p), citation(q));
    if sp.machine != sq.machine {
        c.environment.push(EnvDiff {
            field: "machine (as published)".into(),
            baseline: sp.machine.clone(),
            other: sq.machine.clone(),
        });
    }
    // Both studies are cited: neither figure was measured here.
    c.published = Some(PublishedSide {
        name: format!("{} and {}", sp.name, sq.name),
        citation: format!("{} (A) and {} (B)", sp.citation, sq.citation),
        machine: if sp.machine == sq.machine {
            sq.machine.clone()
        } else {
            format!("{} (A) and {} (B)", sp.machine, sq.machine)
        },
    });
    let in_q: BTreeMap<&str, _> = q.figures.iter().map(|f| (f.id.as_str(), f)).collect();
    for f in &p.figures {
        let Some(g) = in_q.get(f.id.as_str()) else {
            c.only_in_baseline.push(f.id.clone());
            continue;
        };
        let (Some(a), Some(b)) = (f.per_op_ns, g.per_op_ns) else {
            c.unmatched_published.push(Unmatched {
                id: f.id.clone(),
                value: format!("{} against {}", published_value(f), published_value(g)),
                meaning: f.meaning.clone(),
                why: "not a time per operation".into(),
            });
            continue;
        };
        let fig = |v| Figure {
            median_ns: v,
            ci95_ns: None,
            samples: 0,
            checks_passed: true,
        };
        c.rows.push(Row {
            id: f.id.clone(),
            kind: "published",
            unit: f.unit.clone(),
            baseline: fig(a),
            other: fig(b),
            diff_ns: b - a,
            diff_pct: pct(a, b),
            ratio: (a > 0.0).then(|| b / a),
            ratio_ci95: None,
            mann_whitney_p: None,
            verdict: Verdict::NotMeasuredHere,
            at_rate: at_rate(a, b, c.settings),
            note: Some(f.meaning.clone()),
        });
    }
    let in_p: BTreeMap<&str, ()> = p.figures.iter().map(|f| (f.id.as_str(), ())).collect();
    c.only_in_other = q
        .figures
        .iter()
        .filter(|g| !in_p.contains_key(g.id.as_str()))
        .map(|g| g.id.clone())
        .collect();
}

/// The environment fields that can explain a difference, as text, when they differ.
pub fn env_diffs(a: &Environment, b: &Environment) -> Vec<EnvDiff> {
    fn opt<T: ToString>(v: &Option<T>) -> String {
        v.as_ref()
            .map(|x| x.to_string())
            .unwrap_or_else(|| "unknown".into())
    }
    fn list(v: &[usize]) -> String {
        oscost_model::cpulist::format(v)
    }
    type Field = (&'static str, fn(&Environment) -> String);
    let fields: &[Field] = &[
        ("oscost version", |e| e.oscost_version.clone()),
        // Linux for oscost's own runs; Windows (or Wine) for the Windows agent's.
        ("operating system", |e| {
            e.os.as_ref().map_or("Linux".into(), |o| o.describe())
        }),
        ("kernel", |e| e.kernel_release.clone()),
        ("kernel build", |e| opt(&e.kernel_version)),
        ("CPU", |e| opt(&e.cpu_model)),
        ("microcode", |e| opt(&e.microcode)),
        ("virtualisation", |e| {
            let v = &e.virtualisation;
            match (&v.cpuid_signature, &v.dmi_product_name, v.hypervisor_flag) {
                (Some(s), p, _) => format!(
                    "{s}{}",
                    p.as_ref().map(|p| format!(" ({p})")).unwrap_or_default()
                ),
                (None, Some(p), Some(true)) => format!("hypervisor ({p})"),
                (None, _, Some(true)) => "hypervisor".into(),
                (None, _, Some(false)) => "none".into(),
                _ => "unknown".into(),
            }
        }),
        ("mitigations= boot parameter", |e| {
            opt(&e.security.cmdline_mitigations)
        }),
        ("counter", |e| {
            format!(
                "{:?} at {:.3} MHz",
                e.clock.counter,
                e.clock.frequency_hz / 1e6
            )
        }),
        ("clock source", |e| opt(&e.clocksource_current)),
        ("CPUs used", |e| list(&e.cpus_used)),
        ("CPUs online", |e| {
            e.cpus_online
                .as_deref()
                .map(list)
                .unwrap_or_else(|| "unknown".into())
        }),
        ("SMT", |e| opt(&e.smt.active)),
        ("nice asked for", |e| opt(&e.nice)),
        ("nice of the process", |e| opt(&e.process_nice)),
        ("tick", |e| {
            opt(&e.scheduler.tick.as_ref().map(|t| format!("{} Hz", t.hz)))
        }),
        ("preemption", |e| {
            opt(&e.kernel_config.as_ref().and_then(|k| k.preempt.clone()))
        }),
        ("cpufreq governor", |e| opt(&e.power.cpufreq_governor)),
        ("transparent hugepages", |e| opt(&e.thp_enabled)),
        ("other load during the run", |e| match &e.load {
            Some(l) if l.quiet => "quiet".into(),
            Some(l) => format!(
                "{:.0} % of the CPUs used by others",
                l.foreign_cpu_share * 100.0
            ),
            None => "unknown".into(),
        }),
    ];
    let mut out: Vec<EnvDiff> = fields
        .iter()
        .filter_map(|(field, get)| {
            let (x, y) = (get(a), get(b));
            (x != y).then(|| EnvDiff {
                field: field.to_string(),
                baseline: x,
                other: y,
            })
        })
        .collect();
    // A calibrated frequency differs in its last digits from run to run (a few ppm): only a
    // change beyond 100 ppm is a different counter.
    let same_counter = a.clock.counter == b.clock.counter
        && (a.clock.frequency_hz - b.clock.frequency_hz).abs() <= 1e-4 * a.clock.frequency_hz.abs();
    if same_counter {
        out.retain(|d| d.field != "counter");
    }
    // Each vulnerability's mitigation separately: one row saying "they differ" would hide which.
    let empty = BTreeMap::new();
    let va = a.security.vulnerabilities.as_ref().unwrap_or(&empty);
    let vb = b.security.vulnerabilities.as_ref().unwrap_or(&empty);
    let names: std::collections::BTreeSet<&String> = va.keys().chain(vb.keys()).collect();
    for n in names {
        let (x, y) = (va.get(n), vb.get(n));
        if x != y {
            out.push(EnvDiff {
                field: format!("mitigation {n}"),
                baseline: x.cloned().unwrap_or_else(|| "unknown".into()),
                other: y.cloned().unwrap_or_else(|| "unknown".into()),
            });
        }
    }
    out
}

/// Rows whose verdict is "slower" by more than `pct` percent: what `--fail-above` gates on.
/// Published comparisons never count: their baseline was not measured here.
pub fn slower_than(comparisons: &[Comparison], pct: f64) -> Vec<(&Comparison, &Row)> {
    comparisons
        .iter()
        .flat_map(|c| c.rows.iter().map(move |r| (c, r)))
        .filter(|(_, r)| r.verdict == Verdict::Slower && r.diff_pct > pct)
        .collect()
}

fn fmt_pct(p: f64) -> String {
    if p.is_finite() {
        format!("{p:+.1} %")
    } else {
        "-".into()
    }
}

fn fmt_diff(ns: f64) -> String {
    if ns > 0.0 {
        format!("+{}", fmt_ns(ns))
    } else {
        fmt_ns(ns)
    }
}

fn fmt_figure(f: &Figure) -> String {
    match f.ci95_ns {
        Some(ci) if f.median_ns != 0.0 => format!(
            "{} ±{:.1} %",
            fmt_ns(f.median_ns),
            (ci[1] - ci[0]) / 2.0 / f.median_ns.abs() * 100.0
        ),
        _ => fmt_ns(f.median_ns),
    }
}

fn fmt_ratio(r: &Row) -> String {
    match (r.ratio, r.ratio_ci95) {
        (Some(x), Some(ci)) => format!("{x:.3} ({:.3}–{:.3})", ci[0], ci[1]),
        (Some(x), None) => format!("{x:.3}"),
        _ => "-".into(),
    }
}

fn fmt_p(p: Option<f64>) -> String {
    match p {
        Some(p) if p < 0.001 => "<0.001".into(),
        Some(p) => format!("{p:.3}"),
        None => "-".into(),
    }
}

fn fmt_rate(ns_per_s: f64) -> String {
    // ns of CPU per second of wall time, and the same as a share of one CPU.
    format!("{}/s ({:.2} %)", fmt_ns(ns_per_s), ns_per_s / 1e7)
}

fn head(c: &Comparison) -> Vec<String> {
    let mut h: Vec<String> = ["case", "A", "B", "B − A", "%", "B / A (95 % CI)"]
        .map(String::from)
        .into();
    if c.published.is_none() {
        h.push("p".into());
    }
    h.push("verdict".into());
    if let Some(r) = c.settings.rate_per_s {
        h.push(format!("B − A at {} /s", trim_float(r)));
    }
    h
}

fn cells(c: &Comparison, r: &Row) -> Vec<String> {
    let mut v = vec![
        r.id.clone(),
        fmt_figure(&r.baseline),
        fmt_figure(&r.other),
        fmt_diff(r.diff_ns),
        fmt_pct(r.diff_pct),
        fmt_ratio(r),
    ];
    if c.published.is_none() {
        v.push(fmt_p(r.mann_whitney_p));
    }
    let mut verdict = r.verdict.text().to_string();
    if !r.baseline.checks_passed || !r.other.checks_passed {
        verdict.push_str(" (!)");
    }
    v.push(verdict);
    if let Some(a) = &r.at_rate {
        v.push(fmt_rate(a.diff_ns_per_s));
    }
    v
}

/// A measured case row whose file's summary disagrees with its raw samples: its note is shown
/// under the table (the row's figures come from the samples, without the summary's interval).
fn inconsistent(r: &Row) -> bool {
    r.kind == "case" && (r.baseline.ci95_ns.is_none() || r.other.ci95_ns.is_none())
}

/// Counts of each verdict, for the summary line.
pub fn tally(c: &Comparison) -> BTreeMap<&'static str, usize> {
    let mut t = BTreeMap::new();
    for r in &c.rows {
        *t.entry(r.verdict.text()).or_insert(0) += 1;
    }
    t
}

fn intro(c: &Comparison) -> Vec<String> {
    let mut lines = vec![format!("B = {} against A = {}", c.other, c.baseline)];
    if let Some(p) = &c.published {
        lines.push(format!(
            "The published figures are from {} on {}. They were not measured here: no \
             samples, no confidence interval, so only the ratio is shown and no verdict is \
             given.",
            p.citation, p.machine
        ));
    }
    lines
}

fn explanation(c: &Comparison) -> String {
    let rate = c
        .settings
        .rate_per_s
        .map(|r| {
            format!(
                " The last column is the difference as CPU time per second at {} operations a \
                 second, and as a share of one CPU.",
                trim_float(r)
            )
        })
        .unwrap_or_default();
    if c.published.is_some() {
        return rate.trim_start().to_string();
    }
    rate_after(
        format!(
            "A verdict of faster or slower needs all three: the bootstrap 95 % CI of the ratio of \
         medians excludes 1, Mann-Whitney p < {P_SIGNIFICANT} on the raw samples, and a change \
         beyond ±{} % (--threshold), the noise between runs of one machine; otherwise: no \
         difference beyond noise. (!) marks a row with a failed mechanism check.",
            trim_float(c.settings.threshold_pct)
        ),
        &rate,
    )
}

fn rate_after(mut s: String, rate: &str) -> String {
    s.push_str(rate);
    s
}

fn summary(c: &Comparison) -> String {
    let t = tally(c);
    let mut parts: Vec<String> = [
        "slower",
        "faster",
        "no difference",
        "not comparable",
        "not measured here",
    ]
    .iter()
    .filter_map(|k| t.get(k).map(|n| format!("{n} {k}")))
    .collect();
    if !c.study_rows.is_empty() {
        parts.push(format!(
            "{} figure{} the study derived set beside this run's",
            c.study_rows.len(),
            if c.study_rows.len() == 1 { "" } else { "s" }
        ));
    }
    if parts.is_empty() {
        parts.push("no common figure".into());
    }
    let n = c.rows.len() + c.study_rows.len();
    let unmatched = if c.unmatched_published.is_empty() {
        String::new()
    } else {
        format!(
            "; {} published figure{} with no counterpart here, each saying why (below)",
            c.unmatched_published.len(),
            if c.unmatched_published.len() == 1 {
                ""
            } else {
                "s"
            }
        )
    };
    format!(
        "{n} figure{} compared: {}{unmatched}",
        if n == 1 { "" } else { "s" },
        parts.join(", ")
    )
}

fn leftovers(c: &Comparison) -> Vec<String> {
    let mut v = Vec::new();
    let names = |ids: &[String]| {
        let shown: Vec<&str> = ids.iter().take(12).map(String::as_str).collect();
        let more = ids.len().saturating_sub(shown.len());
        format!(
            "{}{}",
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )
    };
    if !c.only_in_baseline.is_empty() {
        v.push(format!(
            "Only in {} ({}): {}",
            c.baseline,
            c.only_in_baseline.len(),
            names(&c.only_in_baseline)
        ));
    }
    if !c.only_in_other.is_empty() {
        v.push(format!(
            "Only in {} ({}): {}",
            c.other,
            c.only_in_other.len(),
            names(&c.only_in_other)
        ));
    }
    v
}

/// The comparison as terminal tables.
pub fn terminal(comparisons: &[Comparison]) -> String {
    let mut s = String::new();
    for c in comparisons {
        for l in intro(c) {
            s += &l;
            s.push('\n');
        }
        s.push('\n');
        if c.environment.is_empty() {
            s += "Environment: nothing that can explain a difference differs.\n\n";
        } else {
            let mut t = Table::new();
            t.load_preset(presets::UTF8_FULL_CONDENSED);
            t.set_content_arrangement(ContentArrangement::Disabled);
            t.set_header(vec!["environment differs", "A", "B"]);
            for d in &c.environment {
                t.add_row(vec![&d.field, &d.baseline, &d.other]);
            }
            s += &format!("{t}\n\n");
        }
        if !c.rows.is_empty() {
            let mut t = Table::new();
            t.load_preset(presets::UTF8_FULL_CONDENSED);
            t.set_content_arrangement(ContentArrangement::Disabled);
            t.set_header(head(c));
            for r in &c.rows {
                t.add_row(cells(c, r).into_iter().enumerate().map(|(i, x)| {
                    let cell = Cell::new(x);
                    if (1..=6).contains(&i) {
                        cell.set_alignment(CellAlignment::Right)
                    } else {
                        cell
                    }
                }));
            }
            s += &format!("{t}\n");
        }
        s += &summary(c);
        s.push('\n');
        if let Some(d) = &c.drift {
            s += &format!("Warning: {d}\n");
        }
        let e = explanation(c);
        if !e.is_empty() {
            s += &e;
            s.push('\n');
        }
        for r in c
            .rows
            .iter()
            .filter(|r| r.kind == "published" || inconsistent(r))
        {
            if let Some(n) = &r.note {
                s += &format!("  {}: {n}\n", r.id);
            }
        }
        if !c.study_rows.is_empty() {
            let mut t = Table::new();
            t.load_preset(presets::UTF8_FULL_CONDENSED);
            t.force_no_tty();
            t.set_header([
                "figure",
                "published",
                "this machine",
                "95 % CI",
                "difference",
            ]);
            for r in &c.study_rows {
                t.add_row(study_cells(r).into_iter().enumerate().map(|(i, x)| {
                    let cell = Cell::new(x);
                    if i > 0 {
                        cell.set_alignment(CellAlignment::Right)
                    } else {
                        cell
                    }
                }));
            }
            s += &format!(
                "Figures the study derived, computed from this run as the study computed them \
                 (ratios, percentages, cycles per event: no verdict):\n{t}\n"
            );
            for r in &c.study_rows {
                s += &format!("  {} (= {}): {}\n", r.id, r.measured_id, r.note);
            }
        }
        for u in &c.unmatched_published {
            s += &format!(
                "  not compared: {} = {} ({}): {}\n",
                u.id, u.value, u.meaning, u.why
            );
        }
        for l in leftovers(c) {
            s += &l;
            s.push('\n');
        }
        s.push('\n');
    }
    s
}

/// A study row's cells: the figure, both values, the interval and the difference.
fn study_cells(r: &StudyRow) -> [String; 5] {
    use crate::study::value_text;
    let diff = if r.unit == "%" {
        format!("{} points", crate::study::signed(r.difference))
    } else {
        format!(
            "{}{}",
            if r.difference > 0.0 { "+" } else { "" },
            value_text(r.difference, &r.unit)
        )
    };
    [
        r.id.clone(),
        value_text(r.published, &r.unit),
        value_text(r.measured, &r.unit),
        r.measured_ci95.map_or("-".into(), |c| {
            format!(
                "{} to {}",
                value_text(c[0], &r.unit),
                value_text(c[1], &r.unit)
            )
        }),
        diff,
    ]
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The comparison as Markdown.
pub fn markdown(comparisons: &[Comparison]) -> String {
    let mut s = String::new();
    for c in comparisons {
        let mut lines = intro(c).into_iter();
        s += &format!("## {}\n\n", md_escape(&lines.next().unwrap_or_default()));
        for l in lines {
            s += &format!("{}\n\n", md_escape(&l));
        }
        if !c.environment.is_empty() {
            s += "| environment differs | A | B |\n|---|---|---|\n";
            for d in &c.environment {
                s += &format!(
                    "| {} | {} | {} |\n",
                    md_escape(&d.field),
                    md_escape(&d.baseline),
                    md_escape(&d.other)
                );
            }
            s.push('\n');
        }
        if !c.rows.is_empty() {
            let h = head(c);
            s += &format!(
                "| {} |\n|{}\n",
                h.iter()
                    .map(|x| md_escape(x))
                    .collect::<Vec<_>>()
                    .join(" | "),
                h.iter()
                    .enumerate()
                    .map(|(i, _)| if (1..=5).contains(&i) {
                        "---:|"
                    } else {
                        "---|"
                    })
                    .collect::<String>()
            );
            for r in &c.rows {
                s += &format!(
                    "| {} |\n",
                    cells(c, r)
                        .iter()
                        .map(|x| md_escape(x))
                        .collect::<Vec<_>>()
                        .join(" | ")
                );
            }
            s.push('\n');
        }
        s += &format!("{}\n\n", summary(c));
        if let Some(d) = &c.drift {
            s += &format!("**Warning:** {}\n\n", md_escape(d));
        }
        let e = explanation(c);
        if !e.is_empty() {
            s += &format!("{}\n\n", md_escape(&e));
        }
        if !c.study_rows.is_empty() {
            s += "| figure | published | this machine | 95 % CI | difference |\n|---|---:|---:|---:|---:|\n";
            for r in &c.study_rows {
                s += &format!(
                    "| {} |\n",
                    study_cells(r)
                        .iter()
                        .map(|x| md_escape(x))
                        .collect::<Vec<_>>()
                        .join(" | ")
                );
            }
            s.push('\n');
        }
        for r in c.rows.iter().filter(|r| inconsistent(r)) {
            if let Some(n) = &r.note {
                s += &format!("- `{}`: {}\n", r.id, md_escape(n));
            }
        }
        for u in &c.unmatched_published {
            s += &format!(
                "- not compared: `{}` = {} ({}): {}\n",
                u.id,
                md_escape(&u.value),
                md_escape(&u.meaning),
                md_escape(&u.why)
            );
        }
        for l in leftovers(c) {
            s += &format!("- {}\n", md_escape(&l));
        }
        s.push('\n');
    }
    s
}

/// The comparison as CSV: one row per compared figure.
pub fn csv(comparisons: &[Comparison]) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "baseline",
        "other",
        "id",
        "kind",
        "unit",
        "baseline_median_ns",
        "baseline_ci_low_ns",
        "baseline_ci_high_ns",
        "other_median_ns",
        "other_ci_low_ns",
        "other_ci_high_ns",
        "diff_ns",
        "diff_pct",
        "ratio",
        "ratio_ci_low",
        "ratio_ci_high",
        "mann_whitney_p",
        "verdict",
        "threshold_pct",
        "rate_per_s",
        "diff_ns_per_s",
        "note",
    ])?;
    let num = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    for c in comparisons {
        for r in &c.rows {
            let ci = |f: &Figure, i: usize| num(f.ci95_ns.map(|c| c[i]));
            w.write_record([
                c.baseline.clone(),
                c.other.clone(),
                r.id.clone(),
                r.kind.to_string(),
                r.unit.clone(),
                r.baseline.median_ns.to_string(),
                ci(&r.baseline, 0),
                ci(&r.baseline, 1),
                r.other.median_ns.to_string(),
                ci(&r.other, 0),
                ci(&r.other, 1),
                r.diff_ns.to_string(),
                num(Some(r.diff_pct).filter(|x| x.is_finite())),
                num(r.ratio),
                num(r.ratio_ci95.map(|c| c[0])),
                num(r.ratio_ci95.map(|c| c[1])),
                num(r.mann_whitney_p),
                r.verdict.text().to_string(),
                c.settings.threshold_pct.to_string(),
                num(c.settings.rate_per_s),
                num(r.at_rate.as_ref().map(|a| a.diff_ns_per_s)),
                r.note.clone().unwrap_or_default(),
            ])?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// The comparison as JSON (`oscost-compare/1`).
pub fn json(comparisons: &[Comparison]) -> anyhow::Result<String> {
    #[derive(Serialize)]
    struct Doc<'a> {
        schema: &'static str,
        comparisons: &'a [Comparison],
    }
    let mut s = serde_json::to_string_pretty(&Doc {
        schema: COMPARE_SCHEMA,
        comparisons,
    })?;
    s.push('\n');
    Ok(s)
}
