//! `compare`: results side by side, each against the first, with what can explain a difference.
//!
//! Between two measured runs a case's verdict comes from its raw samples: the bootstrap 95 %
//! CI of the ratio of medians (from the exact law of each side's bootstrap median, computed
//! once per run however many runs it is compared with) must exclude 1, the Mann-Whitney test must reject "same
//! distribution" (p < 0.05), and the change must exceed a stated noise threshold, because a
//! machine's speed drifts between runs by more than the samples of one run show. A published
//! baseline has no samples: it is shown beside today's figure with the ratio only, and is
//! never called faster or slower.

use crate::format::fmt_ns;
use oscost_model::env::Environment;
use oscost_model::schema::{CaseResult, DerivedResult, ResultDoc};
use oscost_model::PublishedDoc;
use oscost_stats::{mann_whitney_p, ratio_of_medians, MedianLaw, CONFIDENCE_95};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

mod data;
mod env;
mod machine;
mod percentiles;
mod published;
mod spread;
mod text;
mod verdict;

pub use data::{csv, json};
pub use env::env_diffs;
pub use machine::{counted, ControlShift, Net};
pub use percentiles::PercentileRow;
use published::{published_only, published_pair};
pub use spread::{spread_of, wander_of, with_spread, RunSpread, Wander};
pub use text::{
    markdown, nothing_in_common, since_last, terminal, terminal_view, terminal_with, Compared, View,
};
pub use verdict::Verdict;
use verdict::{verdict, Evidence};

/// Schema of `compare --json`.
pub const COMPARE_SCHEMA: &str = "oscost-compare/1";

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
    /// Figures one side holds under an id its system never writes (a Windows case renamed to
    /// a Linux id): each named, its row not compared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign_ids: Vec<String>,
    /// The percentiles of the cases that keep a latency distribution (a wake-up's lateness),
    /// side by side with their intervals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub percentiles: Vec<PercentileRow>,
    /// The machine's controls from A to B, pooled over each run's experiments; empty when
    /// either run has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine: Vec<ControlShift>,
    /// Earlier runs of this machine whose run-to-run spread the intervals include, when the
    /// history held enough of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_runs: Option<usize>,
    /// How far the machine wandered within A and B, taken into the intervals instead when the
    /// history held too few earlier runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_wander: Option<Wander>,
    /// Rows whose interval took that spread in (figures the earlier runs held, or every
    /// figure with a control when the wander stood for it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spread_rows: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
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
    /// Bootstrap 95 % CI of the ratio of medians (from raw samples, by the exact law of each
    /// side's bootstrap median; for a derived figure the ratio of its CI ends).
    pub ratio_ci95: Option<[f64; 2]>,
    /// Mann-Whitney two-sided p-value of the raw samples.
    pub mann_whitney_p: Option<f64>,
    /// The same adjusted for the family of figures judged in this comparison
    /// (Benjamini–Hochberg): what the verdict holds against 0.05.
    pub mann_whitney_q: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// Cost per second at `settings.rate_per_s`.
    pub at_rate: Option<RateCost>,
    /// What the reader must know about this row (a failed check, a published figure's meaning).
    pub note: Option<String>,
    /// The verdict net of the machine control the figure moves with, where both runs have
    /// controls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<Net>,
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

/// The exact law of the bootstrap median of each case of one run that has raw samples: what a
/// case's ratio interval is read from, computed once per run however many runs it stands
/// beside (a fleet's reference run beside a hundred others).
#[derive(Debug, Default)]
pub struct Laws<'a>(HashMap<&'a str, MedianLaw>);

impl<'a> Laws<'a> {
    /// The laws of every case of `doc`.
    pub fn of(doc: &'a ResultDoc) -> Laws<'a> {
        Laws(
            doc.experiments
                .iter()
                .flat_map(|e| &e.cases)
                .filter_map(|c| MedianLaw::new(&c.raw_ns).map(|l| (c.id.as_str(), l)))
                .collect(),
        )
    }

    fn get(&self, id: &str) -> Option<&MedianLaw> {
        self.0.get(id)
    }
}

/// A measured run with the laws of its cases, ready to be compared with others.
#[derive(Debug, Clone, Copy)]
pub struct Prepared<'a> {
    /// The run.
    pub doc: &'a ResultDoc,
    /// Its cases' laws ([`Laws::of`] the run).
    pub laws: &'a Laws<'a>,
}

/// Compares every input after the first against the first.
pub fn compare(inputs: &[(String, Source<'_>)], settings: Settings) -> Vec<Comparison> {
    let Some((base_label, base)) = inputs.first() else {
        return Vec::new();
    };
    let base_laws = match base {
        Source::Measured(d) => Laws::of(d),
        Source::Published(_) => Laws::default(),
    };
    inputs[1..]
        .iter()
        .map(|(label, other)| match (base, other) {
            (Source::Measured(a), Source::Measured(b)) => {
                let other_laws = Laws::of(b);
                compare_measured(
                    base_label,
                    Prepared {
                        doc: a,
                        laws: &base_laws,
                    },
                    label,
                    Prepared {
                        doc: b,
                        laws: &other_laws,
                    },
                    settings,
                )
            }
            _ => pair(base_label, *base, label, *other, settings),
        })
        .collect()
}

/// Two measured runs compared, B against A, each with its laws made beforehand: the same
/// comparison [`compare`] makes of them.
pub fn compare_measured(
    base_label: &str,
    a: Prepared<'_>,
    label: &str,
    b: Prepared<'_>,
    settings: Settings,
) -> Comparison {
    let mut c = judged(base_label, a, label, b, settings);
    machine::net_of_machine(&mut c, a.doc, b.doc);
    c.drift = drift(&c.rows);
    c
}

/// Two runs of different machines compared as [`compare_measured`] does, without the
/// machine's controls: between two machines the controls differ by design, and a figure net
/// of them would hide what the machines differ in. What `compare --group-by` sets side by side.
pub fn compare_machines(
    base_label: &str,
    a: Prepared<'_>,
    label: &str,
    b: Prepared<'_>,
    settings: Settings,
) -> Comparison {
    let mut c = judged(base_label, a, label, b, settings);
    c.drift = drift(&c.rows);
    c
}

/// The rows of two measured runs, each judged and the family controlled; no drift yet.
fn judged(
    base_label: &str,
    a: Prepared<'_>,
    label: &str,
    b: Prepared<'_>,
    settings: Settings,
) -> Comparison {
    let mut c = empty(base_label, label, settings);
    measured_pair(&mut c, a, b);
    control_the_family(&mut c);
    c
}

/// Judges the rows with a rank test again, each against its p-value adjusted for every test
/// of the comparison (Benjamini–Hochberg at 5 %): 235 figures tested at 5 % each would give a
/// dozen verdicts by chance alone between two runs of one machine.
fn control_the_family(c: &mut Comparison) {
    let tested: Vec<usize> = (0..c.rows.len())
        .filter(|&i| {
            let r = &c.rows[i];
            r.mann_whitney_p.is_some() && r.ratio.is_some() && r.ratio_ci95.is_some()
        })
        .filter(|&i| c.rows[i].verdict != Verdict::NotComparable)
        .collect();
    let p: Vec<f64> = tested
        .iter()
        .map(|&i| c.rows[i].mann_whitney_p.unwrap_or(f64::NAN))
        .collect();
    let q = oscost_stats::benjamini_hochberg(&p);
    for (&i, q) in tested.iter().zip(q) {
        let r = &mut c.rows[i];
        r.mann_whitney_q = Some(q);
        if let (Some(ratio), Some(ci)) = (r.ratio, r.ratio_ci95) {
            r.verdict = verdict(
                Evidence {
                    ratio,
                    ci,
                    test: Some(q),
                },
                c.settings.threshold_pct,
            );
        }
    }
}

fn empty(base_label: &str, label: &str, settings: Settings) -> Comparison {
    Comparison {
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
        foreign_ids: Vec::new(),
        percentiles: Vec::new(),
        machine: Vec::new(),
        spread_runs: None,
        spread_wander: None,
        spread_rows: 0,
    }
}

/// A comparison with a published side.
fn pair(
    base_label: &str,
    base: Source<'_>,
    label: &str,
    other: Source<'_>,
    settings: Settings,
) -> Comparison {
    let mut c = empty(base_label, label, settings);
    match (base, other) {
        (Source::Measured(a), Source::Measured(b)) => {
            let (la, lb) = (Laws::of(a), Laws::of(b));
            return compare_measured(
                base_label,
                Prepared { doc: a, laws: &la },
                label,
                Prepared { doc: b, laws: &lb },
                settings,
            );
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

fn measured_pair(c: &mut Comparison, pa: Prepared<'_>, pb: Prepared<'_>) {
    let (a, b) = (pa.doc, pb.doc);
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
            (Measured::Case(x), Some(Measured::Case(y))) => {
                c.rows.push(case_row(x, y, (pa.laws, pb.laws), c.settings));
                c.percentiles.extend(percentiles::rows(x, y));
            }
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
    flag_foreign_ids(c, a, b);
    if crate::counterparts::across_systems(&a.environment, &b.environment) {
        counterpart_rows(c, &in_a, &in_b, (pa.laws, pb.laws));
        // Linux's settings (tick, mitigations, THP...) are unknown on Windows, not different.
        c.environment
            .retain(|d| d.baseline != "unknown" && d.other != "unknown");
    }
}

/// Rows whose id one side's system never writes: not compared (no ratio, no verdict), and
/// named in `foreign_ids`.
fn flag_foreign_ids(c: &mut Comparison, a: &ResultDoc, b: &ResultDoc) {
    for r in &mut c.rows {
        let why = [("A", &c.baseline, a), ("B", &c.other, b)]
            .into_iter()
            .find_map(|(side, label, d)| {
                crate::counterparts::foreign_id(&r.id, &d.environment)
                    .map(|why| (side, label, d.environment.system(), why))
            });
        let Some((side, label, system, why)) = why else {
            continue;
        };
        c.foreign_ids.push(format!(
            "{side} ({label}), a run of {system}, holds {}: {why}; a case renamed or a \
             document mislabelled, so it is not compared",
            r.id
        ));
        r.verdict = Verdict::NotComparable;
        r.ratio = None;
        r.ratio_ci95 = None;
        r.note = Some(format!("{side} holds it under another system's id: {why}"));
    }
}

/// A Windows run beside a Linux run: the figures of one meaning under different ids (see
/// `counterparts`) become rows, and leave the lists of figures only one side has.
fn counterpart_rows(
    c: &mut Comparison,
    in_a: &BTreeMap<&str, &Measured>,
    in_b: &BTreeMap<&str, &Measured>,
    laws: (&Laws, &Laws),
) {
    let mut paired = Vec::new();
    for id in &c.only_in_baseline {
        let Some((other, what)) = crate::counterparts::counterpart(id) else {
            continue;
        };
        let mut row = match (in_a.get(id.as_str()), in_b.get(other.as_str())) {
            (Some(Measured::Case(x)), Some(Measured::Case(y))) => case_row(x, y, laws, c.settings),
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
                counted(r),
                Verdict::Slower | Verdict::Faster | Verdict::NoDifference
            )
        })
        .collect();
    let moved: Vec<&Row> = judged
        .iter()
        .copied()
        .filter(|r| counted(r) != Verdict::NoDifference)
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
        .filter(|r| counted(r) == Verdict::Slower)
        .count();
    // Where they gather: the experiment (first part of the id) of each row that moved.
    let mut by_experiment: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in &judged {
        let e = r.id.split('.').next().unwrap_or(&r.id);
        let entry = by_experiment.entry(e).or_default();
        entry.1 += 1;
        if counted(r) != Verdict::NoDifference {
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

/// Above this relative gap a case's `median_ns` is not the median of its `raw_ns`: the gap a
/// document read from a file is held to ([`oscost_model::read`] refuses one beyond it), so
/// only a document built in memory reaches a row with such a note.
const SUMMARY_GAP: f64 = oscost_model::schema::SUMMARY_TOLERANCE;

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

fn case_row(a: &CaseResult, b: &CaseResult, laws: (&Laws, &Laws), settings: Settings) -> Row {
    let ratio = match (laws.0.get(&a.id), laws.1.get(&b.id)) {
        (Some(la), Some(lb)) => ratio_of_medians(la, lb, CONFIDENCE_95),
        _ => None,
    };
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
    // and the verdict then says the samples cannot tell rather than "no difference".
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
        Some(r) if a.unit == b.unit => verdict(
            Evidence {
                ratio: r.estimate,
                ci: r.ci95,
                test: p,
            },
            settings.threshold_pct,
        ),
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
        mann_whitney_q: None,
        verdict,
        at_rate: at_rate(ma, mb, settings),
        note: (!note.is_empty()).then(|| note.join("; ")),
        net: None,
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
        (Some(ratio), Some(ci)) => verdict(
            Evidence {
                ratio,
                ci,
                test: None,
            },
            settings.threshold_pct,
        ),
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
        mann_whitney_q: None,
        verdict,
        at_rate: at_rate(a.estimate_ns, b.estimate_ns, settings),
        note,
        net: None,
    }
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

/// Counts of each verdict, for the summary line.
pub fn tally(c: &Comparison) -> BTreeMap<&'static str, usize> {
    let mut t = BTreeMap::new();
    for r in &c.rows {
        *t.entry(counted(r).text()).or_insert(0) += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, ratio: f64, ci: [f64; 2], p: f64) -> Row {
        let figure = Figure {
            median_ns: 100.0,
            ci95_ns: Some([99.0, 101.0]),
            samples: 30,
            checks_passed: true,
        };
        Row {
            id: id.into(),
            kind: "case",
            unit: "call".into(),
            baseline: figure.clone(),
            other: figure,
            diff_ns: 0.0,
            diff_pct: 0.0,
            ratio: Some(ratio),
            ratio_ci95: Some(ci),
            mann_whitney_p: Some(p),
            mann_whitney_q: None,
            verdict: verdict(
                Evidence {
                    ratio,
                    ci,
                    test: Some(p),
                },
                10.0,
            ),
            at_rate: None,
            note: None,
            net: None,
        }
    }

    #[test]
    fn a_family_of_chance_verdicts_is_told_apart_from_a_real_one() {
        let mut c = empty("a", "b", Settings::default());
        // 1 real change, 9 that pass p < 0.05 alone, 190 that do not.
        c.rows.push(row("real", 1.5, [1.4, 1.6], 1e-9));
        for i in 0..9 {
            c.rows
                .push(row(&format!("chance{i}"), 1.2, [1.11, 1.3], 0.04));
        }
        for i in 0..190 {
            c.rows
                .push(row(&format!("same{i}"), 1.0, [0.95, 1.05], 0.6));
        }
        let alone = c
            .rows
            .iter()
            .filter(|r| r.verdict == Verdict::Slower)
            .count();
        assert_eq!(alone, 10);
        control_the_family(&mut c);
        let slower: Vec<&str> = c
            .rows
            .iter()
            .filter(|r| r.verdict == Verdict::Slower)
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(slower, ["real"]);
        assert!(c.rows[1].mann_whitney_q.unwrap() > 0.05);
        assert_eq!(c.rows[1].verdict, Verdict::TooFewSamples);
        assert_eq!(c.rows[10].verdict, Verdict::NoDifference);
    }
}
