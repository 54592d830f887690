//! The opening of a page of several runs: the cases they share side by side, each marked
//! with `compare`'s verdict against the first run, and their percentiles.

use super::{ci_text, figure, opt, Figure};
use crate::format::fmt_ns;
use crate::plot::{self, runs::common_cases};
use oscost_model::{CaseResult, ResultDoc};
use serde::Serialize;

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
pub(super) struct Comparison {
    runs: Vec<RunHead>,
    /// Every run's headline times on one axis.
    pub(super) datasheet_figure: Option<Figure>,
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

pub(super) fn comparison(docs: &[(String, &ResultDoc)]) -> Comparison {
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
