//! The comparison for programs: CSV and JSON.

use super::*;

/// The comparison as CSV: one row per compared figure (its median), then one row of kind
/// `percentile` per percentile of a latency case (p50, p90, p99, p99.9), in the last columns
/// with their distribution-free intervals; a percentile row leaves the median columns empty and
/// its `ratio` is B / A of the percentile. The last two columns are the figure net of the
/// machine's controls, where both runs have them.
pub fn csv(comparisons: &[Comparison]) -> anyhow::Result<String> {
    let mut w = crate::csvw::CsvWriter::new([
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
        "percentile",
        "baseline_percentile_ns",
        "baseline_percentile_ci_low_ns",
        "baseline_percentile_ci_high_ns",
        "other_percentile_ns",
        "other_percentile_ci_low_ns",
        "other_percentile_ci_high_ns",
        "intervals",
        "net_ratio",
        "net_verdict",
    ])?;
    let num = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    for c in comparisons {
        for r in &c.rows {
            let ci = |f: &Figure, i: usize| num(f.ci95_ns.map(|c| c[i]));
            w.row([
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
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                num(r.net.as_ref().map(|n| n.ratio)),
                r.net
                    .as_ref()
                    .map(|n| n.verdict.text().to_string())
                    .unwrap_or_default(),
            ])?;
        }
        for p in &c.percentiles {
            let end = |ci: Option<[f64; 2]>, i: usize| num(ci.map(|c| c[i]));
            let intervals = match (p.baseline_ci95_ns, p.other_ci95_ns) {
                (Some(_), Some(_)) if p.apart => "apart",
                (Some(_), Some(_)) => "overlap",
                _ => "",
            };
            let unit = c
                .rows
                .iter()
                .find(|r| r.id == p.id)
                .map(|r| r.unit.clone())
                .unwrap_or_default();
            let mut record = vec![
                c.baseline.clone(),
                c.other.clone(),
                p.id.clone(),
                "percentile".to_string(),
                unit,
            ];
            // The median's columns, its verdict and rate stay empty; the ratio is the
            // percentile's.
            record.extend(std::iter::repeat_n(String::new(), 8));
            record.push(num(Some(p.ratio).filter(|x| x.is_finite())));
            record.extend(std::iter::repeat_n(String::new(), 3));
            record.push(String::new());
            record.push(c.settings.threshold_pct.to_string());
            record.extend(std::iter::repeat_n(String::new(), 3));
            record.extend([
                p.percentile.to_string(),
                p.baseline_ns.to_string(),
                end(p.baseline_ci95_ns, 0),
                end(p.baseline_ci95_ns, 1),
                p.other_ns.to_string(),
                end(p.other_ci95_ns, 0),
                end(p.other_ci95_ns, 1),
                intervals.to_string(),
                String::new(),
                String::new(),
            ]);
            w.row(&record)?;
        }
    }
    w.finish()
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
