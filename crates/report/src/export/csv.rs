//! The CSV exporter: one row per case and per derived figure, for spreadsheets and scripts.

use super::{ExportOptions, Exporter};
use oscost_model::schema::ResultDoc;

/// One CSV row per case, then its experiment's derived figures.
#[derive(Debug, Clone, Copy, Default)]
pub struct Csv;

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn extension(&self) -> &'static str {
        "csv"
    }

    fn export(&self, doc: &ResultDoc, _: &ExportOptions) -> anyhow::Result<String> {
        csv(doc)
    }
}

/// One CSV row per case.
pub fn csv(doc: &ResultDoc) -> anyhow::Result<String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record([
        "experiment",
        "id",
        "unit",
        "median_ns",
        "mad_ns",
        "min_ns",
        "max_ns",
        "p5_ns",
        "p95_ns",
        "ci95_low_ns",
        "ci95_high_ns",
        "median_cycles",
        "samples",
        "iterations_per_sample",
        "loop_overhead_ns",
        "checks_passed",
        "noisy",
        "warnings",
        "flagged",
    ])?;
    for e in &doc.experiments {
        for c in &e.cases {
            w.write_record([
                e.name.clone(),
                c.id.clone(),
                c.unit.clone(),
                format!("{:.3}", c.median_ns),
                format!("{:.3}", c.mad_ns),
                format!("{:.3}", c.min_ns),
                format!("{:.3}", c.max_ns),
                format!("{:.3}", c.p5_ns),
                format!("{:.3}", c.p95_ns),
                format!("{:.3}", c.ci95_ns[0]),
                format!("{:.3}", c.ci95_ns[1]),
                format!("{:.1}", c.median_cycles),
                c.samples.to_string(),
                c.iterations_per_sample.to_string(),
                format!("{:.3}", c.loop_overhead_ns),
                c.checks_passed.to_string(),
                c.noisy.to_string(),
                c.warnings.join("; "),
                String::new(),
            ])?;
        }
        // Derived figures follow their experiment's cases: unit `derived`, the estimate in the
        // median column, and why it is not trusted in `flagged` (empty when it is).
        for d in &e.derived {
            let blank = String::new;
            w.write_record([
                e.name.clone(),
                d.id.clone(),
                "derived".into(),
                format!("{:.3}", d.estimate_ns),
                blank(),
                blank(),
                blank(),
                blank(),
                blank(),
                format!("{:.3}", d.ci95_ns[0]),
                format!("{:.3}", d.ci95_ns[1]),
                format!("{:.1}", d.estimate_cycles),
                blank(),
                blank(),
                blank(),
                blank(),
                blank(),
                blank(),
                d.flagged.clone().unwrap_or_default(),
            ])?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}
