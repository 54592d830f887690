//! One program's bill across a fleet: a column per group (host, kernel, …), each line's count
//! and cost a call per group, judged against the reference group's as two bills are (counts
//! exactly, a call's cost beyond the kernel histogram's ±10 %), the parts of the time shown.

use super::compare::{compare_bills, BillVerdict};
use crate::format::{fmt_ns, grouped};
use oscost_model::bill::Bill;
use serde::Serialize;

/// Schema of `compare --group-by FIELD --json` on bills.
pub const BILL_FLEET_SCHEMA: &str = "oscost-bill-fleet/1";

/// One line across the groups.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetBillRow {
    /// A system call, a kind of fault, a count of events, or a part of the time.
    pub name: String,
    /// Each group's count (absent: it made none, or the line is a time).
    pub counts: Vec<Option<u64>>,
    /// Each group's cost a call, ns (a system call's histogram median), or time (a part).
    pub ns: Vec<Option<f64>>,
    /// Each group's verdict against the reference (`None` for the reference itself): the
    /// count's when it moved, else the cost a call's.
    pub verdicts: Vec<Option<BillVerdict>>,
}

/// The bills of one program, one per group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BillFleet {
    /// [`BILL_FLEET_SCHEMA`].
    pub schema: &'static str,
    /// The field the groups are of (`host`, `kernel`, …).
    pub group_by: String,
    /// What was billed.
    pub subject: String,
    /// The groups, in order; the reference first.
    pub groups: Vec<String>,
    /// Where each group's bill came from (a file or a run).
    pub sources: Vec<String>,
    /// Counted lines: system calls, faults, switches, events.
    pub counts: Vec<FleetBillRow>,
    /// The parts of the time and the task time: one bill each, never judged.
    pub parts: Vec<FleetBillRow>,
}

/// The fleet of `bills` (`(group, source, bill)`, the reference first).
pub fn bill_fleet(group_by: &str, bills: &[(String, String, &Bill)]) -> BillFleet {
    let Some((_, ref_source, reference)) = bills.first() else {
        return BillFleet {
            schema: BILL_FLEET_SCHEMA,
            group_by: group_by.to_owned(),
            subject: String::new(),
            groups: Vec::new(),
            sources: Vec::new(),
            counts: Vec::new(),
            parts: Vec::new(),
        };
    };
    let n = bills.len();
    let mut counts: Vec<FleetBillRow> = Vec::new();
    let mut parts: Vec<FleetBillRow> = Vec::new();
    let row = |rows: &mut Vec<FleetBillRow>, name: &str| -> usize {
        match rows.iter().position(|r| r.name == name) {
            Some(i) => i,
            None => {
                rows.push(FleetBillRow {
                    name: name.to_owned(),
                    counts: vec![None; n],
                    ns: vec![None; n],
                    verdicts: vec![None; n],
                });
                rows.len() - 1
            }
        }
    };
    for (k, (_, source, bill)) in bills.iter().enumerate() {
        let c = compare_bills(reference, bill, [ref_source.as_str(), source.as_str()]);
        for r in &c.counts {
            let i = row(&mut counts, &r.name);
            counts[i].counts[0] = r.count[0];
            counts[i].ns[0] = r.per_call_ns[0];
            counts[i].counts[k] = r.count[1];
            counts[i].ns[k] = r.per_call_ns[1];
            if k > 0 {
                counts[i].verdicts[k] = match (r.count_verdict, r.per_call_verdict) {
                    (Some(v @ (BillVerdict::More | BillVerdict::Fewer)), _) => Some(v),
                    (_, Some(v)) => Some(v),
                    (v, None) => v,
                };
            }
        }
        for r in &c.parts {
            let i = row(&mut parts, &r.name);
            parts[i].ns[0] = r.time_ns[0];
            parts[i].ns[k] = r.time_ns[1];
        }
    }
    BillFleet {
        schema: BILL_FLEET_SCHEMA,
        group_by: group_by.to_owned(),
        subject: super::subject(reference),
        groups: bills.iter().map(|(g, _, _)| g.clone()).collect(),
        sources: bills.iter().map(|(_, s, _)| s.clone()).collect(),
        counts,
        parts,
    }
}

/// The mark beside a group's cell: what moved against the reference.
fn mark(v: Option<BillVerdict>) -> &'static str {
    match v {
        Some(BillVerdict::More) => "+",
        Some(BillVerdict::Fewer) => "-",
        Some(BillVerdict::Dearer) => "↑",
        Some(BillVerdict::Cheaper) => "↓",
        _ => " ",
    }
}

/// A cell of at most `w` characters, right-aligned.
fn cell(text: &str, w: usize) -> String {
    let t: String = text.chars().take(w).collect();
    format!("{t:>w$}")
}

impl crate::export::Render for BillFleet {
    /// The table at the terminal's width, at most 120 columns (80 where it has none).
    fn table(&self, width: Option<u16>) -> String {
        render_bill_fleet(self, width.map_or(80, |w| usize::from(w.min(120))))
    }

    /// JSON only: a bill's lines are read by a program as JSON, by a person as the table.
    fn file(&self, format: crate::export::Format) -> Option<anyhow::Result<String>> {
        (format == crate::export::Format::Json).then(|| crate::export::render::pretty_json(self))
    }
}

/// The fleet at `width` columns: its groups a block of columns at a time (as many as fit),
/// counts a line each with the cost a call under them, then the parts of the time.
pub fn render_bill_fleet(f: &BillFleet, width: usize) -> String {
    const NAME: usize = 20;
    const COL: usize = 12;
    let per_block = ((width.max(60) - NAME) / (COL + 1)).max(1);
    let mut out = crate::layout::wrap_words(
        &format!(
            "{} by {}, {} groups, each against {} (the first column): + / - a count moved, \
             ↑ / ↓ a call's cost beyond the kernel histogram's ±10 % (both sides 100 calls or \
             more)",
            f.subject,
            f.group_by,
            f.groups.len(),
            f.groups.first().map_or("", String::as_str)
        ),
        width.max(60),
    );
    if !out.ends_with('\n') {
        out.push('\n');
    }
    let cols: Vec<usize> = (0..f.groups.len()).collect();
    for block in cols.chunks(per_block) {
        out.push('\n');
        out.push_str(&format!("{:<NAME$}", "counted"));
        for &k in block {
            out.push_str(&format!(" {}", cell(&f.groups[k], COL)));
        }
        out.push('\n');
        for r in &f.counts {
            let name: String = r.name.chars().take(NAME).collect();
            out.push_str(&format!("{name:<NAME$}"));
            for &k in block {
                let c = r.counts[k].map_or("-".to_owned(), |c| grouped(c as f64));
                out.push_str(&format!(" {}{}", cell(&c, COL - 1), mark(r.verdicts[k])));
            }
            out.push('\n');
            if r.ns.iter().any(Option::is_some) {
                out.push_str(&format!("{:<NAME$}", "  a call"));
                for &k in block {
                    out.push_str(&format!(
                        " {} ",
                        cell(&r.ns[k].map_or("-".to_owned(), fmt_ns), COL - 1)
                    ));
                }
                out.push('\n');
            }
        }
        out.push_str(&format!("\n{:<NAME$}", "its time (one each)"));
        for &k in block {
            out.push_str(&format!(" {}", cell(&f.groups[k], COL)));
        }
        out.push('\n');
        for r in &f.parts {
            let name: String = r.name.chars().take(NAME).collect();
            out.push_str(&format!("{name:<NAME$}"));
            for &k in block {
                out.push_str(&format!(
                    " {} ",
                    cell(&r.ns[k].map_or("-".to_owned(), fmt_ns), COL - 1)
                ));
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bill::tests::fixture;

    /// Three hosts' bills of one program: the reference's columns unmarked, a host that made
    /// ten more reads marked `+`, one whose getppid got dearer a call marked `↑`; every
    /// group in the table, at 80 columns in blocks.
    #[test]
    fn a_programs_bill_reads_as_one_table_across_the_fleet() {
        let a = fixture();
        let mut b = fixture();
        b.calls[1].count += 10;
        let mut c = fixture();
        c.calls[0].median_ns = Some(a.calls[0].median_ns.unwrap() * 1.5);
        let bills = [
            ("alpha".to_owned(), "a.json".to_owned(), &a),
            ("beta".to_owned(), "b.json".to_owned(), &b),
            ("gamma".to_owned(), "c.json".to_owned(), &c),
        ];
        let f = bill_fleet("host", &bills);
        assert_eq!(f.groups, ["alpha", "beta", "gamma"]);
        let read = f.counts.iter().find(|r| r.name == "read").unwrap();
        // gamma made the same reads, too few to judge their cost a call.
        assert_eq!(
            read.verdicts,
            [None, Some(BillVerdict::More), Some(BillVerdict::CannotTell)]
        );
        assert_eq!(read.counts[1], Some(read.counts[0].unwrap() + 10));
        let getppid = f.counts.iter().find(|r| r.name == "getppid").unwrap();
        assert_eq!(getppid.verdicts[2], Some(BillVerdict::Dearer));
        assert!(f.parts.iter().any(|p| p.name == "task time"));
        let text = render_bill_fleet(&f, 80);
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        for g in ["alpha", "beta", "gamma"] {
            assert!(text.contains(g), "{text}");
        }
        assert!(text.contains("+\n") || text.contains("+ "), "{text}");
        assert!(text.contains('↑'), "{text}");
        let json = serde_json::to_value(&f).unwrap();
        assert_eq!(json["schema"], BILL_FLEET_SCHEMA);
        // Five groups at 60 columns: two blocks of columns, every group still shown.
        let more = [
            bills[0].clone(),
            bills[1].clone(),
            bills[2].clone(),
            ("delta".to_owned(), "d.json".to_owned(), &a),
            ("epsilon".to_owned(), "e.json".to_owned(), &a),
        ];
        let narrow = render_bill_fleet(&bill_fleet("host", &more), 60);
        assert_eq!(narrow.matches("\ncounted").count(), 2, "{narrow}");
        assert!(narrow.lines().all(|l| l.chars().count() <= 60), "{narrow}");
        assert!(narrow.contains("epsilon"), "{narrow}");
    }
}
