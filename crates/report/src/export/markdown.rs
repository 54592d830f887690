//! The Markdown exporter: the whole document as tables, for a README, an issue or a wiki.

use super::table::{derived_rows, rows, Notes};
use super::{ExportOptions, Exporter};
use crate::mdtext;
use oscost_model::schema::ResultDoc;

/// The whole document as Markdown tables.
#[derive(Debug, Clone, Copy, Default)]
pub struct Markdown;

impl Exporter for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn extension(&self) -> &'static str {
        "md"
    }

    fn export(&self, doc: &ResultDoc, _: &ExportOptions) -> anyhow::Result<String> {
        Ok(markdown(doc))
    }
}

/// The whole document as Markdown tables.
pub fn markdown(doc: &ResultDoc) -> String {
    let mut s = format!(
        "# oscost results\n\n{}, clock: {} at {:.1} MHz ({}).\n",
        match &doc.environment.os {
            Some(os) => os.describe(),
            None => format!("Kernel {}", doc.environment.kernel_release),
        },
        doc.environment.clock.tick_unit,
        doc.environment.clock.frequency_hz / 1e6,
        doc.environment.clock.frequency_source
    );
    for e in &doc.experiments {
        s += &format!("\n## {}\n\n", e.name);
        let unit = doc.environment.clock.tick_unit.as_str();
        let (head, r) = rows(e, unit, false, Notes::Whole);
        s += &md_table(&head, &r);
        let d = derived_rows(e, Notes::Whole);
        if !d.is_empty() {
            s += "\n### derived\n\n";
            s += &md_table(&["figure", "estimate", "95% CI", unit, "notes"], &d);
        }
        for v in crate::experiments::views(e) {
            s += &format!("\n### {}\n\n", v.title);
            let head: Vec<&str> = v.head.iter().map(String::as_str).collect();
            s += &md_table(&head, &v.rows);
            for n in v.notes.iter().chain(&v.detail) {
                s += &format!("\n{n}\n");
            }
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
        for n in &e.notes {
            s += &format!("\n- note: {n}");
        }
        for c in &e.cases {
            for n in &c.notes {
                s += &format!("\n- note: `{}`: {n}", c.id);
            }
        }
        s.push('\n');
    }
    s
}

fn md_table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n", head.join(" | "));
    s += &format!("|{}\n", head.iter().map(|_| "---|").collect::<String>());
    for r in rows {
        s += &format!(
            "| {} |\n",
            r.iter()
                .map(|c| mdtext::cell(c))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
    s
}
