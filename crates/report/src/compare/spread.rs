//! The spread between runs of one machine, taken into a comparison's intervals.
//!
//! One run's interval covers only the variation within that run; a machine's figures also
//! move from one run to the next. Where the history holds enough earlier runs comparable with
//! the compared ones, each figure's run-to-run spread (the standard deviation of the log of its
//! median over those runs) is added to its ratio's interval as a random effect of each run:
//! on the log scale the ratio's variance is the within-run variance its interval implies plus
//! twice the between-run variance (A and B are each one draw of the run effect).
//!
//! Where the history holds too few such runs (a new machine, a fresh history), each figure's
//! spread is unknown, and on a machine whose speed wanders (a virtual machine's host) two runs
//! minutes apart then differ in dozens of figures by chance. The machine's own controls, timed
//! around every experiment, show how far it wandered within A and B: that wander, per control,
//! stands for the spread of the figures that move with it until earlier runs can tell, and
//! after that is the least spread a figure is given (a few earlier runs that happened to agree
//! must not make its interval narrower than the machine's own swings).

use super::verdict::rejudged;
use super::{Comparison, Verdict};
use oscost_model::{ControlKind, ResultDoc};
use serde::Serialize;
use std::collections::HashMap;

/// Fewest earlier runs a figure's spread is read from.
pub const MIN_RUNS: usize = 3;

/// The 97.5 % point of the standard normal law: a 95 % interval is ±1.96 standard errors.
const Z95: f64 = 1.959_963_984_540_054;

/// Fewest degrees of freedom (control bursts beyond one per run) a wander is read from.
pub const MIN_WANDER_DF: usize = 4;

/// Each figure's run-to-run spread on one machine.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunSpread {
    /// Earlier runs read.
    pub runs: usize,
    /// Figure id → standard deviation of ln(median) over the runs that have it (at least
    /// [`MIN_RUNS`]).
    pub log_sd: HashMap<String, f64>,
    /// How far the machine wandered within the two compared runs: the spread when fewer than
    /// [`MIN_RUNS`] earlier runs were read, the least spread of each figure when more were.
    pub wander: Option<Wander>,
}

impl RunSpread {
    /// This spread with the wander of `a` and `b`: it stands for the spread when too few
    /// earlier runs were read, and is each figure's least spread when enough were.
    pub fn or_wander(mut self, a: &ResultDoc, b: &ResultDoc) -> RunSpread {
        self.wander = wander_of(a, b);
        self
    }
}

/// How far the machine's own speed wandered within two runs: per control, the standard
/// deviation (log scale) of its bursts' medians about their run's mean, pooled over both runs.
/// A burst is each experiment's samples before it, or after it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Wander {
    /// `syscall(-1)`'s: what figures that enter the kernel move with.
    pub kernel_entry: f64,
    /// The user-space loop's: what figures that never leave user space move with.
    pub user_loop: f64,
    /// The bursts it was read from, both runs and both controls.
    pub bursts: usize,
}

impl Wander {
    /// The wander of one control.
    pub fn of(&self, kind: ControlKind) -> f64 {
        match kind {
            ControlKind::KernelEntry => self.kernel_entry,
            ControlKind::UserLoop => self.user_loop,
        }
    }
}

/// The wander of the machine within runs `a` and `b`; `None` when their controls give fewer
/// than [`MIN_WANDER_DF`] degrees of freedom for either control.
pub fn wander_of(a: &ResultDoc, b: &ResultDoc) -> Option<Wander> {
    let mut sd = [0.0; 2];
    let mut bursts = 0;
    for (i, kind) in ControlKind::ALL.into_iter().enumerate() {
        let (mut ss, mut df) = (0.0, 0usize);
        for doc in [a, b] {
            let logs: Vec<f64> = doc
                .experiments
                .iter()
                .filter_map(|e| e.controls.as_ref())
                .flat_map(|c| {
                    // The bursts are stored before then after, each the same length.
                    let s = c.samples(kind);
                    let (before, after) = s.split_at(s.len() / 2);
                    [median(before), median(after)]
                })
                .flatten()
                .filter(|m| *m > 0.0 && m.is_finite())
                .map(f64::ln)
                .collect();
            if logs.len() < 2 {
                continue;
            }
            let mean = logs.iter().sum::<f64>() / logs.len() as f64;
            ss += logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>();
            df += logs.len() - 1;
            bursts += logs.len();
        }
        if df < MIN_WANDER_DF {
            return None;
        }
        sd[i] = (ss / df as f64).sqrt();
    }
    Some(Wander {
        kernel_entry: sd[0],
        user_loop: sd[1],
        bursts,
    })
}

fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
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
        wander: None,
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
/// are. When `spread` read fewer than [`MIN_RUNS`] runs its wander stands for every figure's
/// spread (the control's each moves with), and nothing happens without one.
pub fn with_spread(c: &mut Comparison, spread: &RunSpread) {
    if c.published.is_some() {
        return;
    }
    let enough = spread.runs >= MIN_RUNS;
    if !enough && spread.wander.is_none() {
        return;
    }
    let threshold = c.settings.threshold_pct;
    let mut widened_rows = 0;
    for r in &mut c.rows {
        // A figure without controls (an older document) has no control to move with.
        let machine = spread
            .wander
            .zip(r.net.as_ref())
            .map(|(w, n)| w.of(n.control));
        // A figure's spread read from a few runs that happened to agree is no narrower than
        // the machine's own wander: a whole experiment's figures can jump by a fifth in one
        // run of four on a virtual machine, which three earlier runs need not have met.
        let own = if enough {
            spread
                .log_sd
                .get(&r.id)
                .map(|&sd| machine.map_or(sd, |m| sd.max(m)))
        } else {
            machine
        };
        let Some(sd) = own else {
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
            n.span_ci95 = widened(n.span_ci95, sd);
            n.judge(r.verdict, case, threshold);
        }
        widened_rows += 1;
    }
    if enough {
        c.spread_runs = Some(spread.runs);
    } else {
        c.spread_wander = spread.wander;
    }
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
