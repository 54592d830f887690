//! The one home of number formats: every renderer (terminal, Markdown, CSV notes, HTML, SVG)
//! and every view formats durations, cycles, percentages, intervals and counts here, so the
//! same kind of value reads the same everywhere.
//!
//! Two precisions: table cells keep four significant digits with fixed decimals
//! ([`fmt_ns`]: `1.021 s`, `530.1 ms`, `12.35 µs`), so a column lines up and two neighbours
//! compare digit for digit; chart labels keep three with trailing zeros dropped ([`sig`],
//! [`time`]: `1.5 µs`, `250 ns`). Microseconds are always `µs`.

/// Units of time from the smallest, with their size in ns.
const UNITS: [(f64, &str); 4] = [(1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")];

/// `v` with four significant digits (at least one decimal below 1000): `1.021`, `12.35`,
/// `530.1`, `2048.0`.
fn four(v: f64) -> String {
    let a = v.abs();
    let decimals = if a < 10.0 {
        3
    } else if a < 100.0 {
        2
    } else {
        1
    };
    format!("{v:.decimals$}")
}

/// The unit a duration is shown in: the largest it reaches, and the next one up when the
/// value rounds to 1000 in it (999.96 ns reads `1.000 µs`, not `1000.0 ns`); seconds at most.
fn unit_of(ns: f64, digits: impl Fn(f64) -> String) -> (f64, &'static str) {
    let a = ns.abs();
    let mut k = UNITS.iter().rposition(|(f, _)| a >= *f).unwrap_or(0);
    if k + 1 < UNITS.len()
        && digits(a / UNITS[k].0)
            .parse::<f64>()
            .is_ok_and(|v| v >= 1000.0)
    {
        k += 1;
    }
    UNITS[k]
}

/// A duration for a table cell, in ns, with the unit that keeps four significant digits:
/// `2.351 ns`, `235.5 ns`, `12.35 µs`, `530.1 ms`, `1.021 s`; `-` when not finite.
pub fn fmt_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "-".into();
    }
    let (f, u) = unit_of(ns, four);
    format!("{} {u}", four(ns / f))
}

/// [`fmt_ns`] with a `+` on a positive value: a difference.
pub fn fmt_ns_signed(ns: f64) -> String {
    if ns > 0.0 {
        format!("+{}", fmt_ns(ns))
    } else {
        fmt_ns(ns)
    }
}

/// Half a 95 % interval as a share of its median: `±1.2 %`; `-` for a zero median.
pub fn ci_pct(median: f64, ci: [f64; 2]) -> String {
    if median == 0.0 || !median.is_finite() {
        return "-".into();
    }
    format!("±{:.1} %", (ci[1] - ci[0]) / 2.0 / median.abs() * 100.0)
}

/// A duration with its interval: `12.35 µs ±1.2 %`.
pub fn ns_with_ci(ns: f64, ci: Option<[f64; 2]>) -> String {
    match ci {
        Some(ci) if ns != 0.0 => format!("{} {}", fmt_ns(ns), ci_pct(ns, ci)),
        _ => fmt_ns(ns),
    }
}

/// A cycle count: one decimal below 100, whole above (`42.5`, `1256`).
pub fn cycles(c: f64) -> String {
    if !c.is_finite() {
        "-".into()
    } else if c.abs() < 100.0 {
        format!("{c:.1}")
    } else {
        format!("{c:.0}")
    }
}

/// A signed change in percent with one decimal: `+1.2 %`, `-0.5 %`; `-` when not finite.
pub fn pct_signed(p: f64) -> String {
    if p.is_finite() {
        format!("{p:+.1} %")
    } else {
        "-".into()
    }
}

/// A ratio with its 95 % interval, three decimals: `2.350 (2.170–2.540)`.
pub fn ratio(r: Option<f64>, ci: Option<[f64; 2]>) -> String {
    match (r, ci) {
        (Some(x), Some(ci)) => format!("{x:.3} ({:.3}–{:.3})", ci[0], ci[1]),
        (Some(x), None) => format!("{x:.3}"),
        _ => "-".into(),
    }
}

/// A p-value: three decimals, `<0.001` below that.
pub fn p_value(p: Option<f64>) -> String {
    match p {
        Some(p) if p < 0.001 => "<0.001".into(),
        Some(p) => format!("{p:.3}"),
        None => "-".into(),
    }
}

/// An integer in groups of three digits (`3 169 850 746`), as studies print their counts.
pub fn grouped(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    if v < 0.0 && digits != "0" {
        format!("-{out}")
    } else {
        out
    }
}

/// A number as short as it is exact to six decimals: `10000`, `0.5`, `2.25`.
pub fn plain(x: f64) -> String {
    trim(&format!("{x:.6}"))
}

/// `x` with three significant digits at most, trailing zeros dropped: `1.5`, `250`, `0.02`.
pub fn sig(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let a = x.abs();
    let decimals = if a >= 100.0 || a == 0.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        (2.0 - a.log10().floor()) as usize
    };
    trim(&format!("{x:.decimals$}"))
}

/// Drops trailing zeros after a decimal point, and the point itself; `-0` becomes `0`.
pub(crate) fn trim(s: &str) -> String {
    let t = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    };
    if t == "-0" {
        "0".into()
    } else {
        t.to_owned()
    }
}

/// A duration for a chart label, three significant digits: `500 ns`, `1.5 µs`, `12 ms`.
pub fn time(ns: f64) -> String {
    let (f, u) = unit_of(ns, sig);
    format!("{} {u}", sig(ns / f))
}

/// A signed value, three significant digits: `+12.3`, `-0.5`, `0`.
pub fn signed(v: f64) -> String {
    let s = sig(v);
    if v > 0.0 && s != "0" {
        format!("+{s}")
    } else {
        s
    }
}

/// A change in percent for a chart label, signed: `+12 %`, `-3.5 %`, `0 %`.
pub fn change(pct: f64) -> String {
    format!("{} %", signed(pct))
}

/// A mechanism check as a note: what was counted, in the check's words, and the rule it was
/// held to: `✓ 2.00 switches per round trip (at least 2)`, `✓ 1.00 minor faults per page
/// (expected 1 ± 0.05)`, `FAILED: 1.50 events per op (expected 2)`. A check whose name ends in
/// a unit shows it on its values instead: `run_time_per_period_ns` reads `1.002 ms run time per
/// period (expected 1 ms ± 50 µs)`, `_pct` values end in `%`.
pub fn check(k: &oscost_model::case::Check) -> String {
    use oscost_model::case::Bound;
    let (name, unit) = match k.name.strip_suffix("_ns") {
        Some(n) => (n, CheckUnit::Ns),
        None => match k.name.strip_suffix("_pct") {
            Some(n) => (n, CheckUnit::Pct),
            None => (k.name.as_str(), CheckUnit::Count),
        },
    };
    // Two decimals, unless the rule holds a value that two decimals would show as 0: then
    // three significant digits, for the rule and the count alike.
    // A tolerance a millionth of the value or less only absorbs floating-point rounding (an
    // exact count per op): the rule reads as exact, not `1 ± 0.000000001`.
    let bound = match k.bound {
        Some(Bound::Within(t)) if t <= k.expected.abs().max(1.0) * 1e-6 => Some(Bound::Within(0.0)),
        b => b,
    };
    let values: Vec<f64> = match bound {
        Some(Bound::AtLeast(m) | Bound::AtMost(m)) => vec![m],
        Some(Bound::Within(0.0)) => vec![k.expected],
        Some(Bound::Within(t)) => vec![k.expected, t],
        Some(Bound::Between(a, b)) => vec![a, b],
        None => vec![],
    };
    let fine = values.iter().any(|&v| v != 0.0 && v.abs() < 0.01);
    let at = |x: f64| match unit {
        CheckUnit::Ns => time(x),
        _ if fine && x != 0.0 => unit.after(sig(x)),
        _ => unit.after(trim(&format!("{x:.2}"))),
    };
    let rule = match bound {
        Some(Bound::AtLeast(m)) => format!("at least {}", at(m)),
        Some(Bound::AtMost(m)) => format!("at most {}", at(m)),
        Some(Bound::Within(0.0)) | None => format!("expected {}", at(k.expected)),
        Some(Bound::Within(t)) => format!("expected {} ± {}", at(k.expected), at(t)),
        Some(Bound::Between(a, b)) => format!("expected {} to {}", at(a), at(b)),
    };
    let counted = match unit {
        CheckUnit::Ns => fmt_ns(k.counted),
        _ if fine && k.counted != 0.0 => unit.after(sig(k.counted)),
        _ => unit.after(format!("{:.2}", k.counted)),
    };
    let v = format!("{counted} {} ({rule})", name.replace('_', " "));
    if k.passed {
        format!("✓ {v}")
    } else {
        format!("FAILED: {v}")
    }
}

/// The unit a check's name ends in, shown on its values rather than in its words.
#[derive(Clone, Copy)]
enum CheckUnit {
    /// A duration (`_ns`): shown as one, `1.002 ms`.
    Ns,
    /// Percent or percentage points (`_pct`).
    Pct,
    /// A count or a ratio: the number alone.
    Count,
}

impl CheckUnit {
    /// `v` followed by the unit's sign, if it has one.
    fn after(self, v: String) -> String {
        match self {
            CheckUnit::Pct => format!("{v} %"),
            _ => v,
        }
    }
}

/// A unit as read: `us` from a file or a command line is `µs`.
pub fn unit(u: &str) -> &str {
    if u == "us" {
        "µs"
    } else {
        u
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_say_the_rule_they_held_the_count_to() {
        use oscost_model::case::{Bound, Check};
        let at_least = Check::at_least("switches_per_round_trip", 2.0, 4.2, 0.0, "");
        assert_eq!(
            check(&at_least),
            "✓ 4.20 switches per round trip (at least 2)"
        );
        let near = Check::near("minor_faults_per_page", 1.0, 1.0, 0.05, "");
        assert_eq!(
            check(&near),
            "✓ 1.00 minor faults per page (expected 1 ± 0.05)"
        );
        let exact = Check::near("children_reaped", 86.0, 85.0, 0.0, "");
        assert_eq!(check(&exact), "FAILED: 85.00 children reaped (expected 86)");
        // A bound far below 0.01 keeps its digits, and so does a small count.
        let small = Check::at_least("faults_per_page", 1.0 / 512.0, 0.0625, 0.0, "");
        assert_eq!(check(&small), "✓ 0.0625 faults per page (at least 0.00195)");
        let tiny = Check::at_least("faults_per_page", 1.0 / 512.0, 0.001, 0.0, "");
        assert_eq!(
            check(&tiny),
            "FAILED: 0.001 faults per page (at least 0.00195)"
        );
        let control = Check::near("switches_per_op", 0.0, 0.000125, 0.05, "");
        assert_eq!(
            check(&control),
            "✓ 0.00 switches per op (expected 0 ± 0.05)"
        );
        // A tolerance that only absorbs rounding reads as exact, at the count's own digits.
        let per_op = Check::near("system_calls_per_op", 0.03125, 0.03125, 1e-9, "");
        assert_eq!(check(&per_op), "✓ 0.03 system calls per op (expected 0.03)");
        let one = Check::near("system_calls_per_op", 1.0, 1.0, 1e-9, "");
        assert_eq!(check(&one), "✓ 1.00 system calls per op (expected 1)");
        let mut between = Check::near("switches_per_hop", 1.0, 1.2, 0.0, "");
        between.bound = Some(Bound::Between(0.95, 2.0));
        assert_eq!(
            check(&between),
            "FAILED: 1.20 switches per hop (expected 0.95 to 2)"
        );
        // A document written before the rule was recorded.
        let mut old = Check::at_least("switches_per_round_trip", 2.0, 4.2, 0.0, "");
        old.bound = None;
        assert_eq!(check(&old), "✓ 4.20 switches per round trip (expected 2)");
    }

    #[test]
    fn a_check_named_with_a_unit_shows_it_on_its_values() {
        use oscost_model::case::Check;
        let period = Check::near("run_time_per_period_ns", 1e6, 1_001_804.55, 50_000.0, "");
        assert_eq!(
            check(&period),
            "✓ 1.002 ms run time per period (expected 1 ms ± 50 µs)"
        );
        let share = Check::near("largest_share_miss_pct", 0.0, 7.5, 5.0, "");
        assert_eq!(
            check(&share),
            "FAILED: 7.50 % largest share miss (expected 0 % ± 5 %)"
        );
    }

    #[test]
    fn durations_keep_four_significant_digits_and_one_spelling() {
        assert_eq!(fmt_ns(2.3514), "2.351 ns");
        assert_eq!(fmt_ns(235.54), "235.5 ns");
        assert_eq!(fmt_ns(12_345.0), "12.35 µs");
        assert_eq!(fmt_ns(200_000.0), "200.0 µs");
        assert_eq!(fmt_ns(530_080_000.0), "530.1 ms");
        assert_eq!(fmt_ns(1_021_000_000.0), "1.021 s");
        assert_eq!(fmt_ns(-7_390.0), "-7.390 µs");
        assert_eq!(fmt_ns(f64::NAN), "-");
    }

    #[test]
    fn a_value_that_rounds_up_takes_the_next_unit() {
        assert_eq!(fmt_ns(999.96), "1.000 µs");
        assert_eq!(fmt_ns(999.94), "999.9 ns");
        assert_eq!(time(999.96), "1 µs");
        assert_eq!(time(1500.0), "1.5 µs");
    }

    #[test]
    fn percentages_intervals_and_counts() {
        assert_eq!(pct_signed(0.534), "+0.5 %");
        assert_eq!(pct_signed(-18.0), "-18.0 %");
        assert_eq!(ci_pct(100.0, [98.0, 102.5]), "±2.2 %");
        assert_eq!(ns_with_ci(100.0, Some([98.0, 102.0])), "100.0 ns ±2.0 %");
        assert_eq!(ratio(Some(2.35), Some([2.17, 2.54])), "2.350 (2.170–2.540)");
        assert_eq!(p_value(Some(0.0001)), "<0.001");
        assert_eq!(grouped(3_169_850_746.0), "3 169 850 746");
        assert_eq!(grouped(-1000.0), "-1 000");
        assert_eq!(grouped(1256.4), "1 256");
        assert_eq!(grouped(999.0), "999");
        assert_eq!(grouped(f64::NAN), "-");
        assert_eq!(cycles(42.46), "42.5");
        assert_eq!(cycles(1256.4), "1256");
        assert_eq!(plain(10000.0), "10000");
        assert_eq!(plain(2.25), "2.25");
        assert_eq!(change(12.04), "+12 %");
        assert_eq!(change(0.0), "0 %");
        assert_eq!(unit("us"), "µs");
    }
}
