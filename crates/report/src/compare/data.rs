//! The comparison for programs: CSV and JSON.

use super::*;

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
