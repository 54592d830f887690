//! A latency distribution's percentiles side by side: for two cases that keep them (a
//! wake-up's lateness), each percentile of A and B with its distribution-free 95 % interval
//! (order statistics of the raw samples), their ratio, and whether the intervals are apart.

use oscost_model::schema::CaseResult;
use serde::Serialize;

/// The percentiles compared: their name, the counter that holds each, and the percentile.
pub const PERCENTILES: [(&str, &str, f64); 4] = [
    ("p50", "lateness_p50_ns", 50.0),
    ("p90", "lateness_p90_ns", 90.0),
    ("p99", "lateness_p99_ns", 99.0),
    ("p99.9", "lateness_p99_9_ns", 99.9),
];

/// One percentile of one case, both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PercentileRow {
    /// Case id.
    pub id: String,
    /// `p50`, `p90`, `p99`, `p99.9`.
    pub percentile: &'static str,
    /// A's value, ns (from every sample the run took).
    pub baseline_ns: f64,
    /// A's 95 % interval from its raw samples; `None` when too few lie beyond it.
    pub baseline_ci95_ns: Option<[f64; 2]>,
    /// B's value, ns.
    pub other_ns: f64,
    /// B's 95 % interval.
    pub other_ci95_ns: Option<[f64; 2]>,
    /// B / A.
    pub ratio: f64,
    /// Whether both intervals exist and do not overlap: the percentile moved.
    pub apart: bool,
}

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// The percentile rows of a case both runs have, when both keep its percentiles.
pub fn rows(a: &CaseResult, b: &CaseResult) -> Vec<PercentileRow> {
    let (sa, sb) = (sorted(&a.raw_ns), sorted(&b.raw_ns));
    PERCENTILES
        .iter()
        .filter_map(|&(name, key, p)| {
            let (va, vb) = (*a.counters.get(key)?, *b.counters.get(key)?);
            let (ca, cb) = (
                oscost_stats::percentile_ci95(&sa, p),
                oscost_stats::percentile_ci95(&sb, p),
            );
            let apart = match (ca, cb) {
                (Some(x), Some(y)) => x[1] < y[0] || y[1] < x[0],
                _ => false,
            };
            Some(PercentileRow {
                id: a.id.clone(),
                percentile: name,
                baseline_ns: va,
                baseline_ci95_ns: ca,
                other_ns: vb,
                other_ci95_ns: cb,
                ratio: vb / va,
                apart,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::testkit;

    fn case(shift: f64) -> CaseResult {
        let mut c = testkit::case("wakeup.fifo.1ms", "wake-up", 20_000.0);
        c.raw_ns = (0..2000)
            .map(|i| 10_000.0 + f64::from(i) * 10.0 + shift)
            .collect();
        let s = sorted(&c.raw_ns);
        for (_, key, p) in PERCENTILES {
            c.counters
                .insert(key.into(), oscost_stats::percentile(&s, p));
        }
        c
    }

    #[test]
    fn each_percentile_side_by_side_with_its_interval() {
        let r = rows(&case(0.0), &case(5_000.0));
        assert_eq!(r.len(), 4);
        assert_eq!(r[0].percentile, "p50");
        let [lo, hi] = r[0].baseline_ci95_ns.unwrap();
        assert!(lo < r[0].baseline_ns && r[0].baseline_ns < hi);
        assert!(
            r[0].apart,
            "5 µs later everywhere is beyond a 2000-sample interval"
        );
        // 2000 samples leave 2 beyond a p99.9: too few for its interval.
        assert_eq!(r[3].baseline_ci95_ns, None);
        assert!(!r[3].apart);
        let same = rows(&case(0.0), &case(1.0));
        assert!(!same[0].apart);
        // A case without the percentiles has no rows.
        let plain = testkit::case("x", "op", 1.0);
        assert!(rows(&plain, &plain).is_empty());
    }
}
