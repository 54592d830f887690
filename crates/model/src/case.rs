//! What an experiment hands upwards: raw samples and the evidence behind them.
//!
//! Nothing here is summarised; the statistics and report layers turn these into figures. An
//! experiment never invents a number: a case it could not measure is an [`Unavailable`] with
//! the reason.

use crate::controls::{ControlKind, MachineControls};
use crate::message::{Message, Messages};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Raw per-operation samples of one case, in nanoseconds and in counter ticks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Samples {
    /// Per-operation time of each sample, loop overhead already subtracted, ns.
    pub per_op_ns: Vec<f64>,
    /// The same samples in counter ticks.
    pub per_op_ticks: Vec<f64>,
    /// Operations timed in each sample.
    pub iterations_per_sample: u64,
    /// Per-operation loop overhead that was subtracted, ns (median of empty-loop samples).
    pub loop_overhead_ns: f64,
}

/// Name of the check every one-task case carries: the threads of its process while it was
/// measured (expected 1).
pub const SINGLE_THREAD_CHECK: &str = "threads_in_process";

/// A mechanism check: what should have happened against what the kernel counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// Short name, e.g. `switches_per_round_trip`.
    pub name: String,
    /// Expected value.
    pub expected: f64,
    /// Counted value.
    pub counted: f64,
    /// Whether the counted value is acceptable.
    pub passed: bool,
    /// How it was counted and what the bound is.
    pub detail: String,
    /// The rule the count was held to. Absent from documents written before it existed (their
    /// checks then read "N expected").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
}

/// The rule a [`Check`] holds its count to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Bound {
    /// The count passes at this value or above.
    AtLeast(f64),
    /// The count passes within this distance of the expected value.
    Within(f64),
    /// The count passes at this value or below.
    AtMost(f64),
    /// The count passes between these two values, both included.
    Between(f64, f64),
}

impl Check {
    /// A check that passes when `counted >= expected * (1 - rel_tol)` (at least what was claimed).
    pub fn at_least(name: &str, expected: f64, counted: f64, rel_tol: f64, detail: &str) -> Check {
        Check {
            name: name.into(),
            expected,
            counted,
            passed: counted >= expected * (1.0 - rel_tol),
            detail: detail.into(),
            bound: Some(Bound::AtLeast(expected * (1.0 - rel_tol))),
        }
    }

    /// A check that passes when `counted >= floor`, the floor worked out by the caller below
    /// `expected` (a tolerance plus a measured spread).
    pub fn at_least_floor(
        name: &str,
        expected: f64,
        counted: f64,
        floor: f64,
        detail: &str,
    ) -> Check {
        Check {
            name: name.into(),
            expected,
            counted,
            passed: counted >= floor,
            detail: detail.into(),
            bound: Some(Bound::AtLeast(floor)),
        }
    }

    /// A check that passes when `|counted - expected| <= abs_tol`.
    pub fn near(name: &str, expected: f64, counted: f64, abs_tol: f64, detail: &str) -> Check {
        Check {
            name: name.into(),
            expected,
            counted,
            passed: (counted - expected).abs() <= abs_tol,
            detail: detail.into(),
            bound: Some(Bound::Within(abs_tol)),
        }
    }
}

/// A named series attached to a case (a trace, the gaps of a noise run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Series {
    /// Series name, e.g. `visit_order`.
    pub name: String,
    /// Column names of each point.
    pub columns: Vec<String>,
    /// The points.
    pub points: Vec<Vec<f64>>,
}

/// One measured case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Stable dotted id, e.g. `syscall.getpid`.
    pub id: String,
    /// One line saying what was timed.
    pub description: String,
    /// What one operation is (`call`, `round trip`, `hop`).
    pub unit: String,
    /// Parameters of this point (sweep values, placement, kind, ...).
    pub params: BTreeMap<String, serde_json::Value>,
    /// The samples.
    pub samples: Samples,
    /// Mechanism checks.
    pub checks: Vec<Check>,
    /// Other measured figures of the case (counters, peak memory), unit in the key.
    pub counters: BTreeMap<String, f64>,
    /// Warnings met while measuring: what makes the figure less trustworthy and the user could
    /// act on (load, steal, lost trace records, a failed check).
    pub warnings: Vec<Message>,
    /// Context that is not a problem (a period left out, a mount made and undone, why a hop
    /// holds two switches). Absent from documents written before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Message>,
    /// Attached series.
    pub series: Vec<Series>,
    /// For a figure read from the kernel's tracepoints: how they were recorded and what that
    /// cost the measured operation. Absent from other cases and older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceCost>,
    /// The machine control the figure moves with (the system-call floor unless it never
    /// leaves user space).
    #[serde(default, skip_serializing_if = "ControlKind::is_kernel_entry")]
    pub control: ControlKind,
    /// Drawn from several processes: each one's median, ns, in the order they ran (their
    /// samples are joined in `samples`). Empty for a figure of one process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub process_medians_ns: Vec<f64>,
}

/// How a traced figure's tracepoints were recorded, and what recording them cost: the same
/// operation timed in the same pass untraced and traced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceCost {
    /// The mechanism (`bpf`, `perf`).
    pub mechanism: String,
    /// What was timed both ways (`round trip`).
    pub per: String,
    /// Its median untraced, ns.
    pub untraced_ns: f64,
    /// Its median traced, ns.
    pub traced_ns: f64,
    /// Records the mechanism lost (a full buffer, a program that could not run).
    pub lost: u64,
}

impl TraceCost {
    /// Traced over untraced: how far the traced system is from the one measured untraced.
    pub fn ratio(&self) -> f64 {
        self.traced_ns / self.untraced_ns
    }
}

impl Case {
    /// A case with no checks, counters or series yet.
    pub fn new(
        id: impl Into<String>,
        description: impl Into<String>,
        unit: &str,
        samples: Samples,
    ) -> Case {
        Case {
            id: id.into(),
            description: description.into(),
            unit: unit.into(),
            params: BTreeMap::new(),
            samples,
            checks: Vec::new(),
            counters: BTreeMap::new(),
            warnings: Vec::new(),
            notes: Vec::new(),
            series: Vec::new(),
            trace: None,
            control: ControlKind::KernelEntry,
            process_medians_ns: Vec::new(),
        }
    }

    /// Marks a figure that never leaves user space: a changed machine moves it as it moves
    /// the user-space control, not the system-call floor.
    pub fn user_space(mut self) -> Case {
        self.control = ControlKind::UserLoop;
        self
    }

    /// Adds what a step of measuring met, warnings to the warnings and notes to the notes.
    pub fn add_messages(&mut self, said: Messages) {
        self.warnings.extend(said.warnings);
        self.notes.extend(said.notes);
    }

    /// Adds a parameter.
    pub fn param(mut self, key: &str, value: impl Into<serde_json::Value>) -> Case {
        self.params.insert(key.into(), value.into());
        self
    }
}

/// A case that could not be measured here, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unavailable {
    /// The id the case would have had.
    pub id: String,
    /// What it would have measured.
    pub description: String,
    /// Why it was not measured (permission, missing primitive, limit).
    pub reason: String,
}

/// A figure computed from other cases: `sum(coef * median(case))`, e.g. the switch cost
/// `0.5 * round_trip - control`. The report layer computes it with its uncertainty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DerivedSpec {
    /// Stable dotted id, e.g. `switch.pipe.threads.same.switch_cost`.
    pub id: String,
    /// What the figure means.
    pub description: String,
    /// `(case id, coefficient)` terms.
    pub terms: Vec<(String, f64)>,
    /// Set when a term's case failed its mechanism check: the figure is then not trusted.
    pub flagged: Option<String>,
}

/// Everything one experiment run produced.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentOutput {
    /// Measured cases, in display order.
    pub cases: Vec<Case>,
    /// Cases that could not be measured.
    pub unavailable: Vec<Unavailable>,
    /// Derived figures.
    pub derived: Vec<DerivedSpec>,
    /// Experiment-wide warnings (see [`Case::warnings`]).
    pub warnings: Vec<Message>,
    /// Experiment-wide notes (see [`Case::notes`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Message>,
    /// Experiment-wide parameters (e.g. `rate_per_s` for the syscall table).
    pub params: BTreeMap<String, serde_json::Value>,
    /// The machine's controls around the experiment; absent where the clock is fictional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controls: Option<MachineControls>,
}
