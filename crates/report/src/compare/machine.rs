//! The machine's controls held against each other: whether the machine itself changed between
//! two runs (the system-call floor and a fixed user-space loop, timed around every experiment),
//! and each figure's verdict net of the control it moves with.
//!
//! A control "moved" when its ratio's 95 % interval excludes 1. A figure is then divided by
//! its experiment's control ratio (the run's, where the experiment has none); its interval
//! takes the control's ends too (interval arithmetic, conservative), and its rank test scales
//! B's samples by the same ratio. How far a figure moves with its machine is not known, so a
//! change is called net only where it stands whatever share of the control's change the
//! figure took, from none to [`SENSITIVITY`] times it on the log scale (a derived figure, a
//! difference, may move against it as well). A control that held within a narrow interval
//! leaves the net verdict the raw one.

use super::verdict::{held_to_raw, rejudged};
use super::{Comparison, Row, Verdict};
use oscost_model::schema::{CaseResult, ResultDoc};
use oscost_model::{ControlKind, MachineControls};
use oscost_stats::{mann_whitney_p, ratio_of_medians, MedianLaw, CONFIDENCE_95};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// The least change of a control that is a change of the machine: the user-space loop's
/// samples hardly vary, and its interval excludes 1 for a move of a few parts per million
/// that would be said as "0 % faster".
const LEAST_MOVE: f64 = 0.01;

/// How many times its control's change (log scale) a figure may move by when the machine
/// changes. A path heavier than the kernel entry slows more than the entry itself: on a
/// virtual machine whose CPU slowed, `syscall(-1)` moving ×1.25–1.31 came with `open-close`
/// ×2.04, `mmap-munmap` ×2.09 and same-CPU switches ×1.5–2.1 (2.2 to 3.2 times the entry's
/// change on the log scale); a path that never waits on the slowed part moves not at all.
pub(crate) const SENSITIVITY: f64 = 3.0;

/// A figure's interval `ci` net of a control ratio whose interval is `d`: the hull of `ci`
/// divided by every power of `d` from 0 to [`SENSITIVITY`] (from −[`SENSITIVITY`] for a
/// derived figure, which may move against it). `d` of exactly 1 leaves `ci` as it is.
pub(crate) fn net_interval(ci: [f64; 2], d: [f64; 2], derived: bool) -> [f64; 2] {
    let least = if derived { -SENSITIVITY } else { 0.0 };
    let mut out = ci;
    for beta in [least, SENSITIVITY] {
        out[0] = out[0]
            .min(ci[0] / d[1].powf(beta))
            .min(ci[0] / d[0].powf(beta));
        out[1] = out[1]
            .max(ci[1] / d[0].powf(beta))
            .max(ci[1] / d[1].powf(beta));
    }
    out
}

/// One control from A to B.
#[derive(Debug, Clone, Serialize)]
pub struct ControlShift {
    /// Which control.
    pub control: ControlKind,
    /// A's median, ns.
    pub baseline_ns: f64,
    /// B's median, ns.
    pub other_ns: f64,
    /// B / A.
    pub ratio: f64,
    /// Its 95 % interval (the exact law of each side's bootstrap median).
    pub ratio_ci95: [f64; 2],
    /// Whether the interval excludes 1 and the ratio is at least 1 % from it: the machine
    /// itself changed in what the control times.
    pub moved: bool,
}

impl ControlShift {
    fn between(control: ControlKind, a: &[f64], b: &[f64]) -> Option<ControlShift> {
        let (la, lb) = (MedianLaw::new(a)?, MedianLaw::new(b)?);
        let r = ratio_of_medians(&la, &lb, CONFIDENCE_95)?;
        Some(ControlShift {
            control,
            baseline_ns: la.median(),
            other_ns: lb.median(),
            ratio: r.estimate,
            ratio_ci95: r.ci95,
            moved: (r.ci95[0] > 1.0 || r.ci95[1] < 1.0) && (r.estimate - 1.0).abs() >= LEAST_MOVE,
        })
    }

    /// What a figure is divided by: the ratio when the control moved, else 1 (exactly).
    fn divisor(&self) -> (f64, [f64; 2]) {
        if self.moved {
            (self.ratio, self.ratio_ci95)
        } else {
            (1.0, [1.0, 1.0])
        }
    }
}

/// A figure's verdict net of the control it moves with.
#[derive(Debug, Clone, Serialize)]
pub struct Net {
    /// The control.
    pub control: ControlKind,
    /// What the figure's ratio was divided by: the control's ratio when it moved, else 1.
    pub control_ratio: f64,
    /// The figure's ratio over it.
    pub ratio: f64,
    /// Its 95 % interval, the control's interval taken in.
    pub ratio_ci95: [f64; 2],
    /// The interval over every share of the control's change the figure may have moved with
    /// ([`net_interval`]): a change is called net only where this excludes 1 too.
    pub span_ci95: [f64; 2],
    /// The rank test with B's samples scaled by the control's ratio, adjusted for every net
    /// figure of the comparison (Benjamini–Hochberg); `None` for a derived figure.
    pub mann_whitney_q: Option<f64>,
    /// The verdict: net of the control, a change called only where the raw figure calls it
    /// too ([`held_to_raw`]).
    pub verdict: Verdict,
}

/// Every control of a run, pooled over its experiments.
fn pooled(doc: &ResultDoc) -> Option<MachineControls> {
    let mut all: Option<MachineControls> = None;
    for c in doc.experiments.iter().filter_map(|e| e.controls.clone()) {
        all.get_or_insert_with(MachineControls::default).extend(c);
    }
    all
}

/// Where each figure id is in a document: its experiment's index and, for a case, the case's.
type Homes = HashMap<String, (usize, Option<usize>)>;

fn homes(doc: &ResultDoc) -> Homes {
    let mut m = HashMap::new();
    for (i, e) in doc.experiments.iter().enumerate() {
        for (k, x) in e.cases.iter().enumerate() {
            m.insert(x.id.clone(), (i, Some(k)));
        }
        for d in &e.derived {
            m.insert(d.id.clone(), (i, None));
        }
    }
    m
}

/// A case by id, through the map of where each id is.
fn case_of<'d>(doc: &'d ResultDoc, at: &Homes, id: &str) -> Option<&'d CaseResult> {
    let &(e, k) = at.get(id)?;
    doc.experiments.get(e)?.cases.get(k?)
}

fn shifts(a: &MachineControls, b: &MachineControls) -> Vec<ControlShift> {
    ControlKind::ALL
        .iter()
        .filter_map(|&k| {
            let (a, b) = a.matched(b, k);
            ControlShift::between(k, a, b)
        })
        .collect()
}

/// Holds the runs' controls against each other, sets the comparison's `machine` and every
/// comparable row's `net`. Nothing is set when either run has no controls (an older document,
/// a fictional machine).
pub(super) fn net_of_machine(c: &mut Comparison, a: &ResultDoc, b: &ResultDoc) {
    let (Some(pa), Some(pb)) = (pooled(a), pooled(b)) else {
        return;
    };
    c.machine = shifts(&pa, &pb);
    // Each experiment's own controls where both runs have them (by A's index): a machine that
    // changed in the middle of a run changed for the experiments after it.
    let by_experiment: BTreeMap<usize, Vec<ControlShift>> = a
        .experiments
        .iter()
        .enumerate()
        .filter_map(|(i, ea)| {
            let eb = b.experiments.iter().find(|e| e.name == ea.name)?;
            Some((i, shifts(ea.controls.as_ref()?, eb.controls.as_ref()?)))
        })
        .collect();
    let (in_a, in_b) = (homes(a), homes(b));
    let mut tested: Vec<(usize, f64)> = Vec::new();
    for (i, r) in c.rows.iter_mut().enumerate() {
        let (Some(ratio), Some(ci)) = (r.ratio, r.ratio_ci95) else {
            continue;
        };
        if r.verdict == Verdict::NotComparable || r.verdict == Verdict::NotMeasuredHere {
            continue;
        }
        let (ca, cb) = (case_of(a, &in_a, &r.id), case_of(b, &in_b, &r.id));
        let kind = ca.map_or(ControlKind::KernelEntry, |x| x.control);
        let own = in_a
            .get(&r.id)
            .and_then(|(e, _)| by_experiment.get(e))
            .and_then(|v| v.iter().find(|s| s.control == kind));
        let Some(shift) = own.or_else(|| c.machine.iter().find(|s| s.control == kind)) else {
            continue;
        };
        let (d, [d_lo, d_hi]) = shift.divisor();
        let p = match (ca, cb) {
            (Some(_), Some(_)) if d == 1.0 => r.mann_whitney_p,
            (Some(x), Some(y)) => {
                let scaled: Vec<f64> = y.raw_ns.iter().map(|v| v / d).collect();
                mann_whitney_p(&x.raw_ns, &scaled)
            }
            _ => None,
        };
        if let Some(p) = p {
            tested.push((i, p));
        }
        r.net = Some(Net {
            control: kind,
            control_ratio: d,
            ratio: ratio / d,
            ratio_ci95: [ci[0] / d_hi, ci[1] / d_lo],
            // Held or moved, the control's interval says how far the machine may have
            // gone: a control that read 0.87 with an interval reaching 1 is no evidence the
            // machine stood still.
            span_ci95: net_interval(ci, shift.ratio_ci95, r.kind != "case"),
            mann_whitney_q: None,
            verdict: Verdict::NotComparable,
        });
    }
    let q = oscost_stats::benjamini_hochberg(&tested.iter().map(|t| t.1).collect::<Vec<_>>());
    let q_of: BTreeMap<usize, f64> = tested.iter().map(|t| t.0).zip(q).collect();
    let threshold = c.settings.threshold_pct;
    for (i, r) in c.rows.iter_mut().enumerate() {
        let case = r.kind == "case";
        let Some(n) = r.net.as_mut() else {
            continue;
        };
        n.mann_whitney_q = q_of.get(&i).copied();
        n.judge(r.verdict, case, threshold);
    }
}

impl Net {
    /// Sets the verdict from the net figures, held to the raw verdict `raw`: a change is
    /// called only where the raw figure calls it too and it stands whatever share of the
    /// control's change the figure took (its span excludes 1).
    pub(super) fn judge(&mut self, raw: Verdict, measured_case: bool, threshold_pct: f64) {
        let mut net = rejudged(
            self.ratio,
            self.ratio_ci95,
            self.mann_whitney_q,
            measured_case,
            threshold_pct,
        );
        let call = |v: Verdict| matches!(v, Verdict::Slower | Verdict::Faster);
        let [lo, hi] = self.span_ci95;
        if call(net) && lo <= 1.0 && hi >= 1.0 {
            // No share of the machine's change can be ruled out: the raw figure's own word
            // stands, unless it was a call.
            net = if call(raw) {
                Verdict::TooFewSamples
            } else {
                raw
            };
        }
        self.verdict = held_to_raw(raw, net);
    }
}

/// The verdict a row counts as: net of the machine's controls where it has one.
pub fn counted(r: &Row) -> Verdict {
    r.net.as_ref().map_or(r.verdict, |n| n.verdict)
}

/// What changed in the machine itself, in words (`35 % slower at entering the kernel; unchanged
/// at user-space work`), with each moved control's figures when `detail`; `None` when no
/// control moved.
pub fn in_words(c: &Comparison, detail: bool) -> Option<String> {
    words(c, detail, true, 0.0)
}

/// Below this change a control that moved is not said in the line a run ends on: the
/// figures are still netted of it, but a 1 % move of the machine is no news to its user.
const SAID_CHANGE: f64 = 0.03;

/// Only the controls that moved by at least 3 %, joined by "and": `4 % slower at user-space
/// work`.
pub fn moved_in_words(c: &Comparison) -> Option<String> {
    words(c, false, false, SAID_CHANGE).map(|w| w.replace("; ", " and "))
}

fn words(c: &Comparison, detail: bool, held_too: bool, at_least: f64) -> Option<String> {
    let said = |s: &&ControlShift| s.moved && (s.ratio - 1.0).abs() >= at_least;
    if !c.machine.iter().any(|s| said(&s)) {
        return None;
    }
    let parts: Vec<String> = c
        .machine
        .iter()
        .filter(|s| held_too || said(s))
        .map(|s| {
            let what = match s.control {
                ControlKind::KernelEntry => "at entering the kernel",
                ControlKind::UserLoop => "at user-space work",
            };
            if !s.moved {
                return format!("unchanged {what}");
            }
            let pct = (s.ratio - 1.0) * 100.0;
            let mut p = format!(
                "{:.0} % {} {what}",
                pct.abs(),
                if pct > 0.0 { "slower" } else { "faster" }
            );
            if detail {
                p += &format!(
                    " ({} {:.1} → {:.1} ns, 95 % CI of the ratio {:.3}–{:.3})",
                    s.control.id(),
                    s.baseline_ns,
                    s.other_ns,
                    s.ratio_ci95[0],
                    s.ratio_ci95[1]
                );
            }
            p
        })
        .collect();
    Some(parts.join("; "))
}

/// The line that goes first when a control moved: what changed in the machine itself.
pub fn line(c: &Comparison) -> Option<String> {
    Some(format!(
        "The machine itself ran {} in B: each figure's verdict is also given net of the control \
         it moves with, and the counts are the net verdicts.",
        in_words(c, true)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_control_leaves_the_interval_as_it_was() {
        assert_eq!(net_interval([0.9, 1.2], [1.0, 1.0], false), [0.9, 1.2]);
        assert_eq!(net_interval([0.9, 1.2], [1.0, 1.0], true), [0.9, 1.2]);
    }

    #[test]
    fn a_slower_machine_spans_from_none_of_its_change_to_three_times_it() {
        // The machine 25 % slower (20 to 30 %): a figure 1.6× slower may be all machine
        // (1.25^2.1 is 1.6) or none of it.
        let [lo, hi] = net_interval([1.5, 1.7], [1.2, 1.3], false);
        assert!((lo - 1.5 / 1.3f64.powi(3)).abs() < 1e-12, "{lo}");
        assert_eq!(hi, 1.7);
        assert!(lo < 1.0);
        // Faster than a slower machine: faster still net of it.
        let [lo, hi] = net_interval([0.5, 0.7], [1.2, 1.3], false);
        assert!((lo - 0.5 / 1.3f64.powi(3)).abs() < 1e-12, "{lo}");
        assert_eq!(hi, 0.7);
        // A faster machine, the mirror.
        let [lo, hi] = net_interval([0.5, 0.7], [0.8, 0.9], false);
        assert_eq!(lo, 0.5);
        assert!((hi - 0.7 / 0.8f64.powi(3)).abs() < 1e-12, "{hi}");
    }

    #[test]
    fn a_derived_figure_may_move_against_its_machine() {
        let [lo, hi] = net_interval([0.6, 0.7], [1.2, 1.3], true);
        assert!((lo - 0.6 / 1.3f64.powi(3)).abs() < 1e-12, "{lo}");
        assert!((hi - 0.7 * 1.3f64.powi(3)).abs() < 1e-12, "{hi}");
    }
}
