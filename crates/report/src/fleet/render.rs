//! A fleet's table rendered: for the terminal, as Markdown, CSV, JSON and one HTML page.

use super::*;
use crate::mdtext;
use comfy_table::{presets, Cell, CellAlignment, ContentArrangement, Table};
use std::fmt::Write as _;

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Slower => "slower",
        Verdict::Faster => "faster",
        Verdict::NoDifference => "same",
        Verdict::TooFewSamples => "too few samples",
        Verdict::NotComparable => "n/c",
        Verdict::NotMeasuredHere => "n/m",
    }
}

/// A cell as text: `×1.03 [0.99–1.07] same`.
fn cell_text(c: &FleetCell) -> String {
    match (c.ratio, c.ratio_ci95) {
        (Some(r), Some([lo, hi])) => {
            format!("×{r:.2} [{lo:.2}–{hi:.2}] {}", verdict_word(c.verdict))
        }
        (Some(r), None) => format!("×{r:.2} {}", verdict_word(c.verdict)),
        (None, _) => format!("{} {}", fmt_ns(c.median_ns), verdict_word(c.verdict)),
    }
}

fn header(f: &Fleet) -> Vec<String> {
    let mut h = vec!["figure".to_owned()];
    for (i, g) in f.groups.iter().enumerate() {
        h.push(if i == f.reference {
            format!("{} (reference)", g.name)
        } else {
            g.name.clone()
        });
    }
    h
}

fn row_cells(f: &Fleet, r: &FleetRow) -> Vec<String> {
    let mut out = vec![r.id.clone()];
    for (i, c) in r.cells.iter().enumerate() {
        out.push(if i == f.reference {
            fmt_ns(r.reference_ns)
        } else {
            c.as_ref().map_or_else(|| "—".to_owned(), cell_text)
        });
    }
    out
}

fn legend(f: &Fleet) -> String {
    format!(
        "Each cell: the group's figure over {}'s (×ratio), its bootstrap 95 % CI, and the \
         verdict (slower/faster beyond noise: CI excludes 1, Mann-Whitney p < 0.05 once \
         adjusted for every figure of the group's column (Benjamini-Hochberg: at most 5 % of a \
         column's verdicts false) and the change above {} %; same: the whole CI within ±{1} %; \
         too few samples: the CI reaches past it; — the run lacks the figure).",
        f.groups[f.reference].name, f.settings.threshold_pct
    )
}

fn older_note(f: &Fleet) -> Option<String> {
    let older: Vec<String> = f
        .groups
        .iter()
        .filter(|g| g.older_runs > 0)
        .map(|g| format!("{} ({})", g.name, g.older_runs))
        .collect();
    (!older.is_empty()).then(|| {
        format!(
            "Each group's latest run stands for it; older runs not used: {}.",
            older.join(", ")
        )
    })
}

/// The fleet table for a terminal: environment differences first, then the figures.
pub fn terminal(f: &Fleet) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} groups by {}, each against {}",
        f.groups.len(),
        f.group_by,
        f.groups[f.reference].name
    );
    let mut runs = Table::new();
    runs.load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec![f.group_by.as_str(), "run", "machine", "started by"]);
    for g in &f.groups {
        runs.add_row(vec![
            g.name.clone(),
            g.run_id
                .as_deref()
                .map_or_else(|| g.source.clone(), |id| id.chars().take(8).collect()),
            g.machine.clone(),
            g.runner.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    let _ = writeln!(s, "{runs}");
    if f.environment.is_empty() {
        s.push_str("Environment: no recorded difference between the groups.\n");
    } else {
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled);
        let mut h = header(f);
        h[0] = "environment differs".into();
        t.set_header(h);
        for d in &f.environment {
            let mut row = vec![d.field.clone()];
            row.extend(d.values.iter().cloned());
            t.add_row(row);
        }
        let _ = writeln!(s, "{t}");
    }
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header(f));
    for r in &f.rows {
        t.add_row(
            row_cells(f, r)
                .into_iter()
                .enumerate()
                .map(|(i, c)| {
                    if i == 0 {
                        Cell::new(c)
                    } else {
                        Cell::new(c).set_alignment(CellAlignment::Right)
                    }
                })
                .collect::<Vec<_>>(),
        );
    }
    let _ = writeln!(s, "{t}");
    let _ = writeln!(s, "{}", legend(f));
    if let Some(n) = older_note(f) {
        let _ = writeln!(s, "{n}");
    }
    s
}

/// The fleet table in Markdown.
pub fn markdown(f: &Fleet) -> String {
    let mut s = format!(
        "# Compared by {}: {} groups against {}\n\n",
        mdtext::cell(&f.group_by),
        f.groups.len(),
        mdtext::cell(&f.groups[f.reference].name)
    );
    let table = |s: &mut String, head: &[String], rows: &[Vec<String>]| {
        let esc: Vec<String> = head.iter().map(|h| mdtext::cell(h)).collect();
        let _ = writeln!(s, "| {} |", esc.join(" | "));
        let _ = writeln!(s, "|{}", "---|".repeat(head.len()));
        for r in rows {
            let esc: Vec<String> = r.iter().map(|c| mdtext::cell(c)).collect();
            let _ = writeln!(s, "| {} |", esc.join(" | "));
        }
        s.push('\n');
    };
    let runs: Vec<Vec<String>> = f
        .groups
        .iter()
        .map(|g| {
            vec![
                g.name.clone(),
                g.run_id.clone().unwrap_or_else(|| g.source.clone()),
                g.machine.clone(),
                g.runner.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    table(
        &mut s,
        &[
            f.group_by.clone(),
            "run".into(),
            "machine".into(),
            "started by".into(),
        ],
        &runs,
    );
    s.push_str("## Environment differences\n\n");
    if f.environment.is_empty() {
        s.push_str("No recorded difference between the groups.\n\n");
    } else {
        let mut h = header(f);
        h[0] = "field".into();
        let rows: Vec<Vec<String>> = f
            .environment
            .iter()
            .map(|d| {
                std::iter::once(d.field.clone())
                    .chain(d.values.iter().cloned())
                    .collect()
            })
            .collect();
        table(&mut s, &h, &rows);
    }
    s.push_str("## Figures\n\n");
    let rows: Vec<Vec<String>> = f.rows.iter().map(|r| row_cells(f, r)).collect();
    table(&mut s, &header(f), &rows);
    let _ = writeln!(s, "{}", legend(f));
    if let Some(n) = older_note(f) {
        let _ = writeln!(s, "\n{n}");
    }
    s
}

/// One CSV row per figure and group: the long form, easy to pivot.
pub fn csv(f: &Fleet) -> anyhow::Result<String> {
    let mut w = crate::csvw::CsvWriter::new([
        "figure",
        "unit",
        "group_by",
        "group",
        "reference",
        "run_id",
        "median_ns",
        "ratio",
        "ratio_ci95_lo",
        "ratio_ci95_hi",
        "verdict",
    ])?;
    let num = |x: Option<f64>| x.map_or_else(String::new, |v| format!("{v}"));
    for r in &f.rows {
        for (i, g) in f.groups.iter().enumerate() {
            let run = g.run_id.clone().unwrap_or_default();
            let reference = f.groups[f.reference].name.clone();
            // The figure's and the group's columns, then the measured ones.
            let mut rec = vec![
                r.id.clone(),
                r.unit.clone(),
                f.group_by.clone(),
                g.name.clone(),
                reference,
                run,
            ];
            if i == f.reference {
                rec.extend([
                    num(Some(r.reference_ns)),
                    "1".into(),
                    String::new(),
                    String::new(),
                    "reference".into(),
                ]);
            } else if let Some(c) = &r.cells[i] {
                rec.extend([
                    num(Some(c.median_ns)),
                    num(c.ratio),
                    num(c.ratio_ci95.map(|c| c[0])),
                    num(c.ratio_ci95.map(|c| c[1])),
                    serde_json::to_value(c.verdict)?
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                ]);
            } else {
                continue;
            }
            w.row(&rec)?;
        }
    }
    w.finish()
}

/// The whole comparison as JSON (schema [`FLEET_SCHEMA`]).
pub fn json(f: &Fleet) -> anyhow::Result<String> {
    crate::export::render::pretty_json(f)
}

impl crate::export::Render for Fleet {
    /// The table at its natural width: a fleet's columns are groups, wrapped by the terminal.
    fn table(&self, _width: Option<u16>) -> String {
        terminal(self)
    }

    fn file(&self, format: crate::export::Format) -> Option<anyhow::Result<String>> {
        use crate::export::Format;
        Some(match format {
            Format::Json => json(self),
            Format::Csv => csv(self),
            Format::Markdown => Ok(markdown(self)),
            Format::Html => Ok(html(self)),
            Format::Terminal => return None,
        })
    }
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The heat map's colour of a ratio: red slower, blue faster, stronger the further from 1
/// (full strength at 2× either way); grey when not beyond noise.
fn heat(c: &FleetCell) -> String {
    let Some(r) = c.ratio.filter(|r| *r > 0.0) else {
        return "#eeeeee".into();
    };
    let strength = r.log2().abs().min(1.0);
    let alpha = 0.15 + 0.7 * strength;
    match c.verdict {
        Verdict::Slower => format!("rgba(200,40,40,{alpha:.2})"),
        Verdict::Faster => format!("rgba(40,90,200,{alpha:.2})"),
        _ => "#f4f4f4".into(),
    }
}

/// The fleet page: hosts × figures as a heat map of ratios, the environment differences above
/// it, and each host's machine; one self-contained HTML page.
pub fn html(f: &Fleet) -> String {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\n<title>oscost fleet",
    );
    let _ = write!(
        s,
        " by {}</title>\n<style>\nbody{{font-family:system-ui,sans-serif;margin:1.5em;}}\n\
         table{{border-collapse:collapse;font-size:0.85em;}}\n\
         th,td{{border:1px solid #ccc;padding:0.25em 0.5em;}}\n\
         td.n{{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap;}}\n\
         th{{background:#fafafa;}}\n.wrap{{overflow-x:auto;}}\n</style></head><body>\n",
        html_escape(&f.group_by)
    );
    let _ = writeln!(
        s,
        "<h1>Compared by {}: {} groups against {}</h1>",
        html_escape(&f.group_by),
        f.groups.len(),
        html_escape(&f.groups[f.reference].name)
    );
    s.push_str("<h2>Machines</h2>\n<div class=\"wrap\"><table>\n");
    let _ = writeln!(
        s,
        "<tr><th>{}</th><th>run</th><th>started</th><th>machine</th><th>started by</th></tr>",
        html_escape(&f.group_by)
    );
    for g in &f.groups {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            html_escape(&g.name),
            html_escape(g.run_id.as_deref().unwrap_or(&g.source)),
            html_escape(g.started_at.as_deref().unwrap_or("-")),
            html_escape(&g.machine),
            html_escape(g.runner.as_deref().unwrap_or("-"))
        );
    }
    s.push_str("</table></div>\n<h2>Environment differences</h2>\n");
    let head = |s: &mut String, first: &str| {
        let _ = write!(s, "<tr><th>{}</th>", html_escape(first));
        for (i, g) in f.groups.iter().enumerate() {
            let _ = write!(
                s,
                "<th>{}{}</th>",
                html_escape(&g.name),
                if i == f.reference { " (reference)" } else { "" }
            );
        }
        s.push_str("</tr>\n");
    };
    if f.environment.is_empty() {
        s.push_str("<p>No recorded difference between the groups.</p>\n");
    } else {
        s.push_str("<div class=\"wrap\"><table>\n");
        head(&mut s, "field");
        for d in &f.environment {
            let _ = write!(s, "<tr><td>{}</td>", html_escape(&d.field));
            for v in &d.values {
                let _ = write!(s, "<td>{}</td>", html_escape(v));
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</table></div>\n");
    }
    s.push_str("<h2>Figures: ratio to the reference</h2>\n");
    let _ = writeln!(
        s,
        "<p>{} Red: slower beyond noise, blue: faster, the stronger the further from 1 (full \
         at 2×); grey: no difference beyond noise. Hover a cell for its CI.</p>",
        html_escape(&legend(f))
    );
    s.push_str("<div class=\"wrap\"><table>\n");
    head(&mut s, "figure");
    for r in &f.rows {
        let _ = write!(s, "<tr><td>{}</td>", html_escape(&r.id));
        for (i, c) in r.cells.iter().enumerate() {
            if i == f.reference {
                let _ = write!(
                    s,
                    "<td class=\"n\">{}</td>",
                    html_escape(&fmt_ns(r.reference_ns))
                );
                continue;
            }
            match c {
                None => s.push_str("<td class=\"n\">—</td>"),
                Some(c) => {
                    let title = format!(
                        "{}: {} ({}), {}",
                        r.id,
                        fmt_ns(c.median_ns),
                        c.ratio_ci95.map_or_else(
                            || "no CI".to_owned(),
                            |[lo, hi]| format!("95 % CI {lo:.3}–{hi:.3}")
                        ),
                        verdict_word(c.verdict)
                    );
                    let _ = write!(
                        s,
                        "<td class=\"n\" style=\"background:{}\" title=\"{}\">{}</td>",
                        heat(c),
                        html_escape(&title),
                        c.ratio
                            .map_or_else(|| "n/c".to_owned(), |r| format!("×{r:.2}"))
                    );
                }
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table></div>\n");
    if let Some(n) = older_note(f) {
        let _ = writeln!(s, "<p>{}</p>", html_escape(&n));
    }
    s.push_str("</body></html>\n");
    s
}
