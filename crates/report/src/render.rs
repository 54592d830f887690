//! Renderers for people and for other programs: terminal table, Markdown, CSV, JSON.
//!
//! All output is deterministic for a given document (no timestamps, fixed number formats), so
//! it can be pinned in tests.

use comfy_table::{presets, Cell, CellAlignment, ContentArrangement, Table};
use oscost_model::schema::{CaseResult, ExperimentResult, ResultDoc};

/// A duration in ns with a unit that keeps 3-4 significant digits.
pub fn fmt_ns(ns: f64) -> String {
    let a = ns.abs();
    if !ns.is_finite() {
        "-".into()
    } else if a < 10.0 {
        format!("{ns:.2} ns")
    } else if a < 1e3 {
        format!("{ns:.1} ns")
    } else if a < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if a < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// Half the CI width as `±x.x %` of the median.
fn fmt_ci_pct(median: f64, ci: [f64; 2]) -> String {
    if median == 0.0 {
        return "-".into();
    }
    format!("±{:.1} %", (ci[1] - ci[0]) / 2.0 / median.abs() * 100.0)
}

fn fmt_cycles(c: f64) -> String {
    if c.abs() < 100.0 {
        format!("{c:.1}")
    } else {
        format!("{c:.0}")
    }
}

/// Notes for a case: failed checks, noise, warnings.
fn notes(c: &CaseResult) -> String {
    let mut n = Vec::new();
    for k in &c.checks {
        // Every one-task case carries this check; it is news only when it fails.
        if k.passed && k.name == oscost_model::case::SINGLE_THREAD_CHECK {
            continue;
        }
        let v = format!("{} {:.2}", k.name.replace('_', " "), k.counted);
        n.push(if k.passed {
            v
        } else {
            format!("FAILED: {v} (expected {:.2})", k.expected)
        });
    }
    if c.noisy {
        n.push("noisy".into());
    }
    if !c.warnings.is_empty() {
        n.push(format!("{} warning(s)", c.warnings.len()));
    }
    n.join("; ")
}

fn rows<'a>(e: &ExperimentResult, tick_unit: &'a str) -> (Vec<&'a str>, Vec<Vec<String>>) {
    let with_rate = e.cases.iter().any(|c| c.at_rate.is_some());
    let mut head = vec!["case", "median", "95% CI", tick_unit, "min", "p95"];
    if with_rate {
        head.push("share at rate");
    }
    head.push("notes");
    let mut out = Vec::new();
    for c in &e.cases {
        let mut r = vec![
            c.id.clone(),
            fmt_ns(c.median_ns),
            fmt_ci_pct(c.median_ns, c.ci95_ns),
            fmt_cycles(c.median_cycles),
            fmt_ns(c.min_ns),
            fmt_ns(c.p95_ns),
        ];
        if with_rate {
            r.push(
                c.at_rate
                    .as_ref()
                    .map_or("-".into(), |a| format!("{:.3} %", a.share_pct)),
            );
        }
        r.push(notes(c));
        out.push(r);
    }
    (head, out)
}

fn derived_rows(e: &ExperimentResult) -> Vec<Vec<String>> {
    e.derived
        .iter()
        .map(|d| {
            vec![
                d.id.clone(),
                fmt_ns(d.estimate_ns),
                format!("{} .. {}", fmt_ns(d.ci95_ns[0]), fmt_ns(d.ci95_ns[1])),
                fmt_cycles(d.estimate_cycles),
                d.flagged
                    .as_ref()
                    .map_or(String::new(), |f| format!("FLAGGED: {f}")),
            ]
        })
        .collect()
}

fn table(head: &[&str], rows: Vec<Vec<String>>, width: Option<u16>) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED);
    t.set_content_arrangement(ContentArrangement::Dynamic);
    match width {
        Some(w) => {
            t.set_width(w);
        }
        // A pseudo-terminal that reports no size (0 columns) would squeeze every cell to a
        // letter; lay the table out at its natural width instead.
        None if t.width().is_some_and(|w| w < 40) => {
            t.set_content_arrangement(ContentArrangement::Disabled);
        }
        None => {}
    }
    t.set_header(head.iter().map(Cell::new));
    for r in rows {
        t.add_row(r.into_iter().enumerate().map(|(i, s)| {
            let c = Cell::new(s);
            if i > 0 && i < head.len() - 1 {
                c.set_alignment(CellAlignment::Right)
            } else {
                c
            }
        }));
    }
    t
}

/// The terminal view of one experiment: its table, derived figures, unavailable cases and
/// warnings. `tick_unit` names the counter column (`ref-cycles` for the TSC); `width` fixes
/// the table width (tests), `None` fits the terminal.
pub fn terminal(e: &ExperimentResult, tick_unit: &str, width: Option<u16>) -> String {
    let mut s = format!("{}\n", e.name);
    let (head, r) = rows(e, tick_unit);
    if !r.is_empty() {
        s += &table(&head, r, width).to_string();
        s.push('\n');
    }
    if let Some(rate) = e.params.get("rate_per_s").and_then(|v| v.as_f64()) {
        s += &format!("share at rate: part of each second spent in the call at {rate} calls/s\n");
    }
    let d = derived_rows(e);
    if !d.is_empty() {
        s += "derived\n";
        s += &table(
            &["figure", "estimate", "95% CI", tick_unit, "notes"],
            d,
            width,
        )
        .to_string();
        s.push('\n');
    }
    for u in &e.unavailable {
        s += &format!("not measured: {}: {}\n", u.id, u.reason);
    }
    for w in &e.warnings {
        s += &format!("warning: {w}\n");
    }
    for c in &e.cases {
        for w in &c.warnings {
            s += &format!("warning: {}: {w}\n", c.id);
        }
    }
    s
}

/// The whole document as Markdown tables.
pub fn markdown(doc: &ResultDoc) -> String {
    let mut s = format!(
        "# oscost results\n\nKernel {}, clock: {} at {:.1} MHz ({}).\n",
        doc.environment.kernel_release,
        doc.environment.clock.tick_unit,
        doc.environment.clock.frequency_hz / 1e6,
        doc.environment.clock.frequency_source
    );
    for e in &doc.experiments {
        s += &format!("\n## {}\n\n", e.name);
        let unit = doc.environment.clock.tick_unit.as_str();
        let (head, r) = rows(e, unit);
        s += &md_table(&head, &r);
        let d = derived_rows(e);
        if !d.is_empty() {
            s += "\n### derived\n\n";
            s += &md_table(&["figure", "estimate", "95% CI", unit, "notes"], &d);
        }
        for u in &e.unavailable {
            s += &format!("\n- not measured: `{}`: {}", u.id, u.reason);
        }
        for w in &e.warnings {
            s += &format!("\n- warning: {w}");
        }
        for c in &e.cases {
            for w in &c.warnings {
                s += &format!("\n- warning: `{}`: {w}", c.id);
            }
        }
        s.push('\n');
    }
    s
}

fn md_table(head: &[&str], rows: &[Vec<String>]) -> String {
    let esc = |x: &str| x.replace('|', "\\|");
    let mut s = format!("| {} |\n", head.join(" | "));
    s += &format!("|{}\n", head.iter().map(|_| "---|").collect::<String>());
    for r in rows {
        s += &format!(
            "| {} |\n",
            r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    s
}

/// One CSV row per case.
pub fn csv(doc: &ResultDoc) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
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

/// The document as pretty JSON.
pub fn json(doc: &ResultDoc) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(doc)? + "\n")
}
