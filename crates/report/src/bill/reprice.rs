//! A bill re-priced: the same counts at another datasheet's prices (another machine's, another
//! setting's, another day's), each line's price here beside there, their difference with its
//! interval, and the total. Counts do not change; only what they would cost does.

use super::{share, PriceBook, Priced};
use crate::format::{fmt_ns, grouped};
use oscost_model::bill::{Bill, Price};

/// One operation of the bill at both sets of prices.
#[derive(Debug, Clone, PartialEq)]
pub struct RepricedLine {
    /// What it is (a system call's name, a kind of fault, switches).
    pub name: String,
    /// How many the program made.
    pub count: u64,
    /// Its time as measured, ns, when the bill timed it.
    pub measured_ns: Option<f64>,
    /// The price it was billed at.
    pub here: Option<Price>,
    /// The price the other datasheet gives.
    pub there: Option<Price>,
}

/// `count × price` and its interval, ns.
fn cost(count: u64, p: &Price) -> (f64, [f64; 2]) {
    let n = count as f64;
    (n * p.ns, [n * p.ci95[0], n * p.ci95[1]])
}

impl RepricedLine {
    /// count × the price here, and its interval.
    pub fn here_ns(&self) -> Option<(f64, [f64; 2])> {
        self.here.as_ref().map(|p| cost(self.count, p))
    }

    /// count × the price there, and its interval.
    pub fn there_ns(&self) -> Option<(f64, [f64; 2])> {
        self.there.as_ref().map(|p| cost(self.count, p))
    }

    /// there − here, with an interval combining the two as independent (each side's half
    /// widths in quadrature); `None` unless both are priced.
    pub fn difference(&self) -> Option<(f64, [f64; 2])> {
        let (h, [h_lo, h_hi]) = self.here_ns()?;
        let (t, [t_lo, t_hi]) = self.there_ns()?;
        let d = t - h;
        let below = ((t - t_lo).powi(2) + (h_hi - h).powi(2)).sqrt();
        let above = ((t_hi - t).powi(2) + (h - h_lo).powi(2)).sqrt();
        Some((d, [d - below, d + above]))
    }

    /// Whether either side prices it only at the floor (a call that does nothing).
    pub fn floor(&self) -> bool {
        [&self.here, &self.there]
            .into_iter()
            .flatten()
            .any(|p| p.floor)
    }
}

/// A bill at two sets of prices.
#[derive(Debug, Clone, PartialEq)]
pub struct Repricing {
    /// Every operation the bill counted that either side prices, the costliest difference
    /// first.
    pub lines: Vec<RepricedLine>,
    /// The task time the bill measured, ns: what the totals are a share of.
    pub task_time_ns: f64,
}

impl Repricing {
    /// The sums over lines priced on both sides: here, there, and the difference with its
    /// interval. Lines at the same pair of prices (every call at the floor) share their
    /// error, so their counts are summed first; only different prices combine as
    /// independent.
    pub fn total(&self) -> Option<(f64, f64, [f64; 2])> {
        let mut both: Vec<RepricedLine> = Vec::new();
        for l in self.lines.iter().filter(|l| l.difference().is_some()) {
            let same = |m: &&mut RepricedLine| m.here == l.here && m.there == l.there;
            match both.iter_mut().find(same) {
                Some(m) => m.count += l.count,
                None => both.push(l.clone()),
            }
        }
        if both.is_empty() {
            return None;
        }
        let here: f64 = both.iter().filter_map(|l| l.here_ns()).map(|c| c.0).sum();
        let there: f64 = both.iter().filter_map(|l| l.there_ns()).map(|c| c.0).sum();
        let (mut below, mut above) = (0.0, 0.0);
        for (d, [lo, hi]) in both.iter().filter_map(|l| l.difference()) {
            below += (d - lo).powi(2);
            above += (hi - d).powi(2);
        }
        let d = there - here;
        Some((here, there, [d - below.sqrt(), d + above.sqrt()]))
    }

    /// Lines one side prices and the other does not, named.
    pub fn lacking(&self) -> (Vec<&str>, Vec<&str>) {
        let only = |here: bool| {
            self.lines
                .iter()
                .filter(move |l| l.here.is_some() == here && l.there.is_some() != here)
                .map(|l| l.name.as_str())
                .collect()
        };
        (only(true), only(false))
    }
}

/// The bill's counts at the prices it was billed with (`Bill::prices`) and at `there`'s.
pub fn reprice(bill: &Bill, there: &PriceBook) -> Repricing {
    let here = PriceBook::from_prices(&bill.prices);
    let mut lines: Vec<RepricedLine> = bill
        .calls
        .iter()
        .filter(|c| c.count > 0)
        .map(|c| {
            let (mut h, mut t) = (here.call(&c.name).cloned(), there.call(&c.name).cloned());
            // A call's own price beside the floor of another would pair two meanings: the side
            // with only the floor counts as lacking a price.
            if let (Some(a), Some(b)) = (&h, &t) {
                if a.floor != b.floor {
                    if a.floor {
                        h = None;
                    } else {
                        t = None;
                    }
                }
            }
            RepricedLine {
                name: c.name.clone(),
                count: c.count,
                measured_ns: c.time_ns.map(|t| t as f64),
                here: h,
                there: t,
            }
        })
        .collect();
    let (u, k) = (bill.faults_user, bill.faults_kernel);
    for (what, name, count) in [
        (
            Priced::FaultWriteMissing,
            "write faults",
            u.write_missing + k.write_missing,
        ),
        (
            Priced::FaultReadMissing,
            "read faults",
            u.read_missing + k.read_missing,
        ),
        (
            Priced::FaultWritePresent,
            "CoW faults",
            u.write_present + k.write_present,
        ),
    ] {
        if count > 0 {
            lines.push(RepricedLine {
                name: name.into(),
                count,
                measured_ns: None,
                here: here.get(what).cloned(),
                there: there.get(what).cloned(),
            });
        }
    }
    if let Some(s) = bill
        .sched
        .as_ref()
        .filter(|s| s.voluntary + s.involuntary > 0)
    {
        lines.push(RepricedLine {
            name: "switches".into(),
            count: s.voluntary + s.involuntary,
            measured_ns: None,
            here: here.get(Priced::Switch).cloned(),
            there: there.get(Priced::Switch).cloned(),
        });
    }
    lines.retain(|l| l.here.is_some() || l.there.is_some());
    let size = |l: &RepricedLine| l.difference().map_or(-1.0, |(d, _)| d.abs());
    lines.sort_by(|a, b| size(b).total_cmp(&size(a)));
    Repricing {
        lines,
        task_time_ns: bill.task_time_ns as f64,
    }
}

/// Lines shown by name; the rest are summed on one.
const SHOWN: usize = 12;
/// Lines named in a note of what a side lacks.
const NAMED: usize = 8;

/// A signed time: `+1.2 ms`, `−300 ns`.
fn signed(ns: f64) -> String {
    if ns < 0.0 {
        format!("−{}", fmt_ns(-ns))
    } else {
        format!("+{}", fmt_ns(ns))
    }
}

/// The re-pricing at `width` columns (at least 72): a line per operation, the total, and
/// what either side lacks.
pub fn render_repricing(r: &Repricing, here_from: &str, there_from: &str, width: usize) -> String {
    let width = width.max(72);
    let mut out = String::new();
    out.push_str(&crate::layout::wrap_words(
        &format!(
            "re-priced: here, the prices it was billed at ({here_from}); there, {there_from}; \
             the difference is there − here"
        ),
        width,
    ));
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "\n{:<15} {:>8} {:>9} {:>9} {:>10}  {}\n",
        "", "count", "here", "there", "difference", "its 95 % CI"
    ));
    let row = |name: &str,
               count: String,
               l: Option<&RepricedLine>,
               sums: Option<(f64, f64, [f64; 2])>| {
        let (h, t, d) = match (l, sums) {
            (Some(l), _) => (
                l.here_ns().map(|c| c.0),
                l.there_ns().map(|c| c.0),
                l.difference(),
            ),
            (None, Some((h, t, ci))) => (Some(h), Some(t), Some((t - h, ci))),
            (None, None) => (None, None, None),
        };
        let mark = if l.is_some_and(RepricedLine::floor) {
            "~"
        } else {
            " "
        };
        let name = format!("{mark}{name}");
        let name: String = name.chars().take(15).collect();
        format!(
            "{name:<15} {count:>8} {:>9} {:>9} {:>10}  {}\n",
            h.map_or("-".into(), fmt_ns),
            t.map_or("-".into(), fmt_ns),
            d.map_or("-".into(), |(d, _)| signed(d)),
            d.map_or(String::new(), |(_, [lo, hi])| format!(
                "{} to {}",
                signed(lo),
                signed(hi)
            )),
        )
    };
    for l in r.lines.iter().take(SHOWN) {
        out.push_str(&row(&l.name, grouped(l.count as f64), Some(l), None));
    }
    if r.lines.len() > SHOWN {
        let rest = Repricing {
            lines: r.lines[SHOWN..].to_vec(),
            task_time_ns: r.task_time_ns,
        };
        let n: u64 = rest.lines.iter().map(|l| l.count).sum();
        out.push_str(&row(
            &format!("{} other lines", rest.lines.len()),
            grouped(n as f64),
            None,
            rest.total(),
        ));
    }
    if let Some((h, t, ci)) = r.total() {
        out.push_str(&row(" total", String::new(), None, Some((h, t, ci))));
        out.push_str(&crate::layout::wrap_words(
            &format!(
                "priced, the program's OS operations would take {} there against {} here: {} \
                 ({:+.1} % of its task time of {})",
                fmt_ns(t),
                fmt_ns(h),
                signed(t - h),
                share(t - h, r.task_time_ns),
                fmt_ns(r.task_time_ns)
            ),
            width,
        ));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    let (only_here, only_there) = r.lacking();
    for (names, side) in [(only_here, "there"), (only_there, "here")] {
        if !names.is_empty() {
            let more = match names.len().saturating_sub(NAMED) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            let names = &names[..names.len().min(NAMED)];
            out.push_str(&crate::layout::wrap_words(
                &format!(
                    "no price {side} for {}{more} (left out of the total)",
                    names.join(", ")
                ),
                width,
            ));
            if !out.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    if r.lines.iter().any(RepricedLine::floor) {
        out.push_str(&crate::layout::wrap_words(
            &format!(
                "~ priced on both sides at a system call that does nothing ({}): the \
                 difference is the change in entering and leaving the kernel, not in the call's \
                 work",
                oscost_model::ids::syscall::ENOSYS
            ),
            width,
        ));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bill::tests::{doc_with, fixture};
    use crate::bill::{assemble, PriceBook};

    fn book(cases: &[(&str, f64)], run: &str) -> PriceBook {
        let mut b = PriceBook::default();
        b.add_run(&doc_with(cases), run);
        b
    }

    fn billed() -> Bill {
        let mut b = fixture();
        let here = book(
            &[
                ("syscall.getppid", 300.0),
                ("syscall.enosys", 100.0),
                ("fault.anon-write", 1000.0),
            ],
            "here",
        );
        assemble(&mut b, Some(&here), Some("here".into()));
        b
    }

    #[test]
    fn the_same_prices_change_nothing() {
        let b = billed();
        let again = PriceBook::from_prices(&b.prices);
        let r = reprice(&b, &again);
        let (here, there, [lo, hi]) = r.total().unwrap();
        assert_eq!(here, there);
        assert!(lo < 0.0 && hi > 0.0);
        // 10 000 getppid at 300 ns, 10 reads at the 100 ns floor, 100 first writes at 1 µs.
        assert_eq!(here, 3_000_000.0 + 1_000.0 + 100_000.0);
        assert!(r.lacking().0.is_empty() && r.lacking().1.is_empty());
    }

    #[test]
    fn dearer_prices_there_are_the_counts_times_the_difference() {
        let b = billed();
        let there = book(
            &[
                ("syscall.getppid", 450.0),
                ("syscall.enosys", 100.0),
                ("fault.anon-write", 1000.0),
            ],
            "there",
        );
        let r = reprice(&b, &there);
        assert_eq!(r.lines[0].name, "getppid", "the largest difference first");
        let (d, [lo, hi]) = r.lines[0].difference().unwrap();
        assert!((d - 1_500_000.0).abs() < 1e-6, "{d}");
        assert!(lo < d && d < hi);
        let (here, there, _) = r.total().unwrap();
        assert!((there - here - 1_500_000.0).abs() < 1e-6);
        let text = render_repricing(&r, "here", "from there", 80);
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        assert!(text.contains("+1.500 ms"), "{text}");
    }

    #[test]
    fn what_one_side_lacks_is_named_and_left_out() {
        let b = billed();
        // No own getppid price there (only the floor), no fault price.
        let there = book(&[("syscall.enosys", 120.0)], "there");
        let r = reprice(&b, &there);
        let (only_here, only_there) = r.lacking();
        assert_eq!(only_here, ["getppid", "write faults"]);
        assert!(only_there.is_empty());
        // Only the read, at the floor on both sides, is in the total.
        let (here, there, _) = r.total().unwrap();
        assert_eq!((here, there), (1_000.0, 1_200.0));
        let text = render_repricing(&r, "here", "from there", 80);
        assert!(
            text.contains("no price there for getppid, write faults"),
            "{text}"
        );
        assert!(text.contains("~read"), "{text}");
    }
}
