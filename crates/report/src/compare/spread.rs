//! The spread between runs of one machine, taken into a comparison's intervals.
//!
//! One run's interval covers only the variation within that run; a machine's figures also
//! move from one run to the next. Where the history holds enough earlier runs comparable with
//! the compared ones, each figure's run-to-run spread (the standard deviation of the log of its
//! median over those runs) is added to its ratio's interval as a random effect of each run:
//! on the log scale the ratio's variance is the within-run variance its interval implies plus
//! twice the between-run variance (A and B are each one draw of the run effect).

use super::verdict::rejudged;
use super::{Comparison, Verdict};
use oscost_model::ResultDoc;
use serde::Serialize;
use std::collections::HashMap;

/// Fewest earlier runs a figure's spread is read from.
pub const MIN_RUNS: usize = 3;

/// The 97.5 % point of the standard normal law: a 95 % interval is ±1.96 standard errors.
const Z95: f64 = 1.959_963_984_540_054;

/// Each figure's run-to-run spread on one machine.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunSpread {
    /// Earlier runs read.
    pub runs: usize,
    /// Figure id → standard deviation of ln(median) over the runs that have it (at least
    /// [`MIN_RUNS`]).
    pub log_sd: HashMap<String, f64>,
}

/// The spread of every figure that at least [`MIN_RUNS`] of `runs` hold with a positive
/// median.
pub fn spread_of(runs: &[ResultDoc]) -> RunSpread {
    let mut logs: HashMap<String, Vec<f64>> = HashMap::new();
    for doc in runs {
        for e in &doc.experiments {
            let figures = e
                .cases
                .iter()
                .map(|c| (&c.id, c.median_ns))
                .chain(e.derived.iter().map(|d| (&d.id, d.estimate_ns)));
            for (id, m) in figures {
                if m > 0.0 && m.is_finite() {
                    logs.entry(id.clone()).or_default().push(m.ln());
                }
            }
        }
    }
    let log_sd = logs
        .into_iter()
        .filter(|(_, v)| v.len() >= MIN_RUNS)
        .map(|(id, v)| {
            let n = v.len() as f64;
            let mean = v.iter().sum::<f64>() / n;
            let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
            (id, var.sqrt())
        })
        .collect();
    RunSpread {
        runs: runs.len(),
        log_sd,
    }
}

/// `ci` widened by a run effect of standard deviation `sd` (log scale) on each side.
fn widened(ci: [f64; 2], sd: f64) -> [f64; 2] {
    let within = (ci[1].ln() - ci[0].ln()) / (2.0 * Z95);
    let half = Z95 * (within.powi(2) + 2.0 * sd.powi(2)).sqrt();
    // The interval keeps its own asymmetry: each end moves out by what the spread adds.
    let extra = half - (ci[1].ln() - ci[0].ln()) / 2.0;
    [ci[0] * (-extra).exp(), ci[1] * extra.exp()]
}

/// Widens every row's ratio interval (and its net one) by its figure's spread and judges it
/// again; records how many runs informed it. Rows whose figure has no spread are left as they
/// are. Nothing happens when `spread` read fewer than [`MIN_RUNS`] runs.
pub fn with_spread(c: &mut Comparison, spread: &RunSpread) {
    if spread.runs < MIN_RUNS || c.published.is_some() {
        return;
    }
    let threshold = c.settings.threshold_pct;
    let mut widened_rows = 0;
    for r in &mut c.rows {
        let Some(&sd) = spread.log_sd.get(&r.id) else {
            continue;
        };
        let (Some(ratio), Some(ci)) = (r.ratio, r.ratio_ci95) else {
            continue;
        };
        if ci[0] <= 0.0 || matches!(r.verdict, Verdict::NotComparable | Verdict::NotMeasuredHere) {
            continue;
        }
        let wide = widened(ci, sd);
        r.ratio_ci95 = Some(wide);
        let case = r.kind == "case";
        r.verdict = rejudged(ratio, wide, r.mann_whitney_q, case, threshold);
        if let Some(n) = r.net.as_mut() {
            n.ratio_ci95 = widened(n.ratio_ci95, sd);
            n.verdict = rejudged(n.ratio, n.ratio_ci95, n.mann_whitney_q, case, threshold);
        }
        widened_rows += 1;
    }
    c.spread_runs = Some(spread.runs);
    c.spread_rows = widened_rows;
    c.drift = super::drift(&c.rows);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_is_the_standard_deviation_of_the_log_medians() {
        use crate::views::testkit;
        let doc = |m: f64| {
            testkit::doc(vec![testkit::experiment(
                "x",
                vec![testkit::case("x.a", "op", m)],
            )])
        };
        let s = spread_of(&[doc(100.0), doc(110.0), doc(90.0)]);
        assert_eq!(s.runs, 3);
        let logs = [100f64.ln(), 110f64.ln(), 90f64.ln()];
        let mean = logs.iter().sum::<f64>() / 3.0;
        let sd = (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        assert!((s.log_sd["x.a"] - sd).abs() < 1e-12);
        // Two runs are not enough to read a spread from.
        assert!(spread_of(&[doc(100.0), doc(110.0)]).log_sd.is_empty());
    }

    #[test]
    fn no_spread_leaves_the_interval_and_a_spread_widens_it_on_both_sides() {
        let ci = [1.1, 1.3];
        let same = widened(ci, 0.0);
        assert!((same[0] - 1.1).abs() < 1e-12 && (same[1] - 1.3).abs() < 1e-12);
        let wide = widened(ci, 0.1);
        assert!(wide[0] < 1.1 && wide[1] > 1.3);
        // Half-width on the log scale: 1.96 × sqrt(within² + 2 × 0.1²).
        let within = (1.3f64.ln() - 1.1f64.ln()) / (2.0 * Z95);
        let half = Z95 * (within.powi(2) + 0.02).sqrt();
        assert!(((wide[1].ln() - wide[0].ln()) / 2.0 - half).abs() < 1e-12);
    }
}
