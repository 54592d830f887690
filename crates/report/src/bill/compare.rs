//! Two bills of one program side by side, B against A: its counts compared exactly (a program
//! given the same input makes the same calls, so a count that moved is a change in what it
//! does), each system call's cost per call compared within the kernel histogram's resolution,
//! and the parts of its time, which one bill each cannot judge.

use crate::format::{fmt_ns, grouped};
use oscost_model::bill::Bill;
use serde::Serialize;

/// Schema of `compare --json` on two bills.
pub const BILL_COMPARE_SCHEMA: &str = "oscost-bill-compare/1";

/// A per-call median is read from a histogram of four buckets per power of two: each is
/// within ±10 %, so two differ beyond that only past this ratio.
const HISTOGRAM_RATIO: f64 = 1.1 / 0.9;

/// Calls a side must have made for its per-call median to be judged.
const MIN_CALLS: u64 = 100;

/// What a line's numbers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BillVerdict {
    /// The same count on both sides.
    Same,
    /// B made more.
    More,
    /// B made fewer.
    Fewer,
    /// A call's cost per call grew beyond the histogram's resolution.
    Dearer,
    /// ... or fell beyond it.
    Cheaper,
    /// Within the histogram's resolution.
    NoDifference,
    /// Cannot be judged: one bill each (a time), or too few calls (a per-call cost).
    CannotTell,
}

impl BillVerdict {
    /// In words.
    pub fn text(self) -> &'static str {
        match self {
            BillVerdict::Same => "same",
            BillVerdict::More => "more",
            BillVerdict::Fewer => "fewer",
            BillVerdict::Dearer => "dearer",
            BillVerdict::Cheaper => "cheaper",
            BillVerdict::NoDifference => "no difference",
            BillVerdict::CannotTell => "cannot tell",
        }
    }
}

/// One line of two bills.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BillRow {
    /// What it is: a system call, a kind of fault, a part of the time.
    pub name: String,
    /// A's and B's counts (absent: the side did not make it).
    pub count: [Option<u64>; 2],
    /// A's and B's cost per call, ns (median of the kernel's histogram), where timed.
    pub per_call_ns: [Option<f64>; 2],
    /// A's and B's time, ns.
    pub time_ns: [Option<f64>; 2],
    /// The count's verdict.
    pub count_verdict: Option<BillVerdict>,
    /// The per-call cost's verdict.
    pub per_call_verdict: Option<BillVerdict>,
}

/// Two bills compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BillComparison {
    /// [`BILL_COMPARE_SCHEMA`].
    pub schema: &'static str,
    /// A's and B's labels.
    pub labels: [String; 2],
    /// What each billed.
    pub subjects: [String; 2],
    /// System calls by name, then faults by kind, then switches and events.
    pub counts: Vec<BillRow>,
    /// The parts of the time, top level: one bill each, so never judged.
    pub parts: Vec<BillRow>,
}

fn count_verdict(a: Option<u64>, b: Option<u64>) -> BillVerdict {
    let (a, b) = (a.unwrap_or(0), b.unwrap_or(0));
    match b.cmp(&a) {
        std::cmp::Ordering::Equal => BillVerdict::Same,
        std::cmp::Ordering::Greater => BillVerdict::More,
        std::cmp::Ordering::Less => BillVerdict::Fewer,
    }
}

fn per_call_verdict(count: [Option<u64>; 2], per: [Option<f64>; 2]) -> Option<BillVerdict> {
    let (Some(a), Some(b)) = (per[0], per[1]) else {
        return None;
    };
    let enough = count.iter().all(|c| c.unwrap_or(0) >= MIN_CALLS);
    Some(if !enough || a <= 0.0 || b <= 0.0 {
        BillVerdict::CannotTell
    } else if b / a > HISTOGRAM_RATIO {
        BillVerdict::Dearer
    } else if a / b > HISTOGRAM_RATIO {
        BillVerdict::Cheaper
    } else {
        BillVerdict::NoDifference
    })
}

/// B against A.
pub fn compare_bills(a: &Bill, b: &Bill, labels: [&str; 2]) -> BillComparison {
    let mut counts = Vec::new();
    let mut names: Vec<&str> = a.calls.iter().map(|c| c.name.as_str()).collect();
    for c in &b.calls {
        if !names.contains(&c.name.as_str()) {
            names.push(&c.name);
        }
    }
    for name in names {
        let find = |bill: &Bill| bill.calls.iter().find(|c| c.name == name).cloned();
        let (ca, cb) = (find(a), find(b));
        let count = [ca.as_ref().map(|c| c.count), cb.as_ref().map(|c| c.count)];
        let per_call_ns = [
            ca.as_ref().and_then(|c| c.median_ns),
            cb.as_ref().and_then(|c| c.median_ns),
        ];
        counts.push(BillRow {
            name: name.to_owned(),
            count,
            per_call_ns,
            time_ns: [
                ca.as_ref().and_then(|c| c.time_ns).map(|t| t as f64),
                cb.as_ref().and_then(|c| c.time_ns).map(|t| t as f64),
            ],
            count_verdict: Some(count_verdict(count[0], count[1])),
            per_call_verdict: per_call_verdict(count, per_call_ns),
        });
    }
    let faults = |bill: &Bill| {
        let (u, k) = (bill.faults_user, bill.faults_kernel);
        [
            u.write_missing + k.write_missing,
            u.read_missing + k.read_missing,
            u.write_present + k.write_present,
        ]
    };
    let switches = |bill: &Bill| {
        bill.sched
            .as_ref()
            .map(|s| [s.voluntary, s.involuntary])
            .unwrap_or_default()
    };
    let events = |bill: &Bill| {
        let e = bill.events;
        [e.processes, e.threads, e.execs, e.signals, e.tlb_sent]
    };
    let others: Vec<(&str, u64, u64)> = ["write faults", "read faults", "CoW faults"]
        .into_iter()
        .zip(faults(a).into_iter().zip(faults(b)))
        .chain(
            ["voluntary switches", "involuntary switches"]
                .into_iter()
                .zip(switches(a).into_iter().zip(switches(b))),
        )
        .chain(
            [
                "processes made",
                "threads made",
                "programs executed",
                "signals",
                "TLB shootdowns sent",
            ]
            .into_iter()
            .zip(events(a).into_iter().zip(events(b))),
        )
        .map(|(n, (x, y))| (n, x, y))
        .collect();
    for (name, x, y) in others.into_iter().filter(|(_, x, y)| x + y > 0) {
        counts.push(BillRow {
            name: name.to_owned(),
            count: [Some(x), Some(y)],
            per_call_ns: [None, None],
            time_ns: [None, None],
            count_verdict: Some(count_verdict(Some(x), Some(y))),
            per_call_verdict: None,
        });
    }
    let mut parts: Vec<BillRow> = Vec::new();
    for p in a.parts.iter().chain(&b.parts).filter(|p| p.level == 0) {
        if parts.iter().any(|r| r.name == p.name) {
            continue;
        }
        let time = |bill: &Bill| {
            bill.parts
                .iter()
                .find(|q| q.level == 0 && q.name == p.name)
                .map(|q| q.time_ns)
        };
        parts.push(BillRow {
            name: p.name.clone(),
            count: [None, None],
            per_call_ns: [None, None],
            time_ns: [time(a), time(b)],
            count_verdict: None,
            per_call_verdict: Some(BillVerdict::CannotTell),
        });
    }
    parts.push(BillRow {
        name: "task time".into(),
        count: [None, None],
        per_call_ns: [None, None],
        time_ns: [Some(a.task_time_ns as f64), Some(b.task_time_ns as f64)],
        count_verdict: None,
        per_call_verdict: Some(BillVerdict::CannotTell),
    });
    BillComparison {
        schema: BILL_COMPARE_SCHEMA,
        labels: labels.map(str::to_owned),
        subjects: [super::subject(a), super::subject(b)],
        counts,
        parts,
    }
}

fn opt_count(c: Option<u64>) -> String {
    c.map_or("-".into(), |c| grouped(c as f64))
}

fn opt_ns(v: Option<f64>) -> String {
    v.map_or("-".into(), fmt_ns)
}

impl crate::export::Render for BillComparison {
    /// The table at the terminal's width, at most 100 columns (80 where it has none).
    fn table(&self, width: Option<u16>) -> String {
        render_bill_comparison(self, width.map_or(80, |w| usize::from(w.min(100))))
    }

    /// JSON only: a bill's lines are read by a program as JSON, by a person as the table.
    fn file(&self, format: crate::export::Format) -> Option<anyhow::Result<String>> {
        (format == crate::export::Format::Json).then(|| crate::export::render::pretty_json(self))
    }
}

/// The comparison at `width` columns (at least 72): counts that moved first, then the ones
/// that held (summed in one line), the per-call costs, and the parts of the time.
pub fn render_bill_comparison(c: &BillComparison, width: usize) -> String {
    let width = width.max(72);
    let mut out = String::new();
    let say = |out: &mut String, text: &str| {
        out.push_str(&crate::layout::wrap_words(text, width));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    };
    say(
        &mut out,
        &format!(
            "B = {} ({}) against A = {} ({})",
            c.labels[1], c.subjects[1], c.labels[0], c.subjects[0]
        ),
    );
    out.push_str(&format!(
        "\n{:<18} {:>9} {:>9} {:>7}  {:>9} {:>9}  {}\n",
        "counted", "A", "B", "", "A a call", "B a call", "a call"
    ));
    let mut held = 0;
    for r in &c.counts {
        let moved = r.count_verdict != Some(BillVerdict::Same);
        let judged = matches!(
            r.per_call_verdict,
            Some(BillVerdict::Dearer | BillVerdict::Cheaper)
        );
        if !moved && !judged {
            held += 1;
            continue;
        }
        let change = match r.count_verdict {
            Some(BillVerdict::Same) | None => "=".to_owned(),
            _ => {
                let d = r.count[1].unwrap_or(0) as i128 - r.count[0].unwrap_or(0) as i128;
                format!("{d:+}")
            }
        };
        let name: String = r.name.chars().take(18).collect();
        out.push_str(&format!(
            "{name:<18} {:>9} {:>9} {change:>7}  {:>9} {:>9}  {}\n",
            opt_count(r.count[0]),
            opt_count(r.count[1]),
            opt_ns(r.per_call_ns[0]),
            opt_ns(r.per_call_ns[1]),
            r.per_call_verdict.map_or("", BillVerdict::text)
        ));
    }
    if held > 0 {
        say(
            &mut out,
            &format!(
                "{held} other line{} counted the same on both sides, with no per-call cost \
                 beyond the histogram's ±10 %",
                if held == 1 { "" } else { "s" }
            ),
        );
    }
    out.push_str(&format!(
        "\n{:<30} {:>10} {:>10} {:>8}\n",
        "its time (one bill each)", "A", "B", "change"
    ));
    for r in &c.parts {
        let pct = match r.time_ns {
            [Some(a), Some(b)] if a > 0.0 => format!("{:+.1} %", (b - a) / a * 100.0),
            _ => "-".into(),
        };
        let name: String = r.name.chars().take(30).collect();
        out.push_str(&format!(
            "{name:<30} {:>10} {:>10} {pct:>8}\n",
            opt_ns(r.time_ns[0]),
            opt_ns(r.time_ns[1]),
        ));
    }
    say(
        &mut out,
        "\nA count is exact: one that moved is a change in what the program did. A cost a call \
         is judged where both sides made at least 100 calls, beyond the ±10 % of the kernel's \
         histogram. One bill a side gives no interval for a time: its change is shown, not \
         judged (`oscost bill --under SETTING --rounds N` measures one in rounds).",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bill::tests::fixture;

    #[test]
    fn counts_are_compared_exactly_and_costs_beyond_the_histogram() {
        let a = fixture();
        let mut b = fixture();
        // Ten more reads; getppid 40 % dearer a call; read's few calls cannot be judged.
        b.calls[1].count = 20;
        b.calls[0].median_ns = Some(a.calls[0].median_ns.unwrap() * 1.4);
        b.faults_user.write_missing = 100;
        let c = compare_bills(&a, &b, ["a.json", "b.json"]);
        let row = |n: &str| c.counts.iter().find(|r| r.name == n).unwrap();
        assert_eq!(row("read").count_verdict, Some(BillVerdict::More));
        assert_eq!(row("read").per_call_verdict, Some(BillVerdict::CannotTell));
        assert_eq!(row("getppid").count_verdict, Some(BillVerdict::Same));
        assert_eq!(row("getppid").per_call_verdict, Some(BillVerdict::Dearer));
        assert_eq!(row("write faults").count_verdict, Some(BillVerdict::Same));
        let text = render_bill_comparison(&c, 80);
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        assert!(text.contains("+10"), "{text}");
        assert!(text.contains("dearer"), "{text}");
        assert!(text.contains("counted the same on both sides"), "{text}");
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["schema"], BILL_COMPARE_SCHEMA);
    }

    #[test]
    fn a_bill_against_itself_moves_nothing() {
        let a = fixture();
        let c = compare_bills(&a, &a, ["a", "a"]);
        assert!(c
            .counts
            .iter()
            .all(|r| r.count_verdict == Some(BillVerdict::Same)
                && r.per_call_verdict != Some(BillVerdict::Dearer)));
    }
}
