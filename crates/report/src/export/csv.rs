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

/// A percentile of the case's own distribution that its samples (thinned to a few thousand)
/// cannot give: the one counter named `…{suffix}` (`wakeup`'s `lateness_p99_ns` over every
/// wake-up, `noise`'s `length_p99_ns`), empty when the case has none or several.
fn tail(c: &oscost_model::CaseResult, suffix: &str) -> String {
    let mut found = c.counters.iter().filter(|(k, _)| k.ends_with(suffix));
    match (found.next(), found.next()) {
        (Some((_, v)), None) => format!("{v:.3}"),
        _ => String::new(),
    }
}

/// One CSV row per case.
pub fn csv(doc: &ResultDoc) -> anyhow::Result<String> {
    let mut w = crate::csvw::CsvWriter::new([
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
        "p90_ns",
        "p99_ns",
        "p99_9_ns",
    ])?;
    for e in &doc.experiments {
        for c in &e.cases {
            w.row([
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
                tail(c, "_p90_ns"),
                tail(c, "_p99_ns"),
                tail(c, "_p99_9_ns"),
            ])?;
        }
        // Derived figures follow their experiment's cases: unit `derived`, the estimate in the
        // median column, and why it is not trusted in `flagged` (empty when it is).
        for d in &e.derived {
            let blank = String::new;
            w.row([
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
                blank(),
                blank(),
                blank(),
            ])?;
        }
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_that_records_its_tail_has_it_in_the_last_columns() {
        let mut c = crate::views::testkit::case("wakeup.other.1ms", "wake-up", 60_000.0);
        for (k, v) in [
            ("lateness_p50_ns", 60_000.0),
            ("lateness_p90_ns", 64_000.0),
            ("lateness_p99_ns", 69_000.0),
            ("lateness_p99_9_ns", 88_000.0),
        ] {
            c.counters.insert(k.into(), v);
        }
        assert_eq!(tail(&c, "_p99_ns"), "69000.000");
        assert_eq!(tail(&c, "_p99_9_ns"), "88000.000");
        assert_eq!(tail(&c, "_p90_ns"), "64000.000");
        let plain = crate::views::testkit::case("syscall.getpid", "call", 100.0);
        assert_eq!(tail(&plain, "_p99_ns"), "");
    }
}
