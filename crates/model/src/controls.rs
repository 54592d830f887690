//! The machine's own controls: two fixed loads timed around every experiment, so that a
//! comparison can tell a machine that changed (a virtual machine's host slower at entering the
//! kernel, a lower clock) from a change of the figures themselves.

use serde::{Deserialize, Serialize};

/// Which control a figure moves with when the machine changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlKind {
    /// The system-call floor: the figure enters the kernel.
    #[default]
    KernelEntry,
    /// The user-space work loop: the figure never leaves user space (a lock, an atomic, the
    /// vDSO's clock).
    UserLoop,
}

impl ControlKind {
    /// Both controls, in the order they are shown.
    pub const ALL: [ControlKind; 2] = [ControlKind::KernelEntry, ControlKind::UserLoop];

    /// What the control times, in a few words.
    pub fn what(self) -> &'static str {
        match self {
            ControlKind::KernelEntry => "syscall(-1)",
            ControlKind::UserLoop => "the user-space loop",
        }
    }

    /// The figure's id in a comparison.
    pub fn id(self) -> &'static str {
        match self {
            ControlKind::KernelEntry => "control.kernel_entry",
            ControlKind::UserLoop => "control.user_loop",
        }
    }

    /// Whether this is the default (for serde's `skip_serializing_if`).
    pub fn is_kernel_entry(&self) -> bool {
        *self == ControlKind::KernelEntry
    }
}

/// The controls' samples of one experiment: two bursts taken just before it and just after it,
/// in the same measuring process, pinned to the experiment's first CPU; and, where the
/// experiment samples in rounds, one of each between its rounds, on the thread that samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineControls {
    /// `syscall(-1)` (ENOSYS), ns per call, one entry per sample: the bursts, before then after.
    pub kernel_entry_ns: Vec<f64>,
    /// The fixed user-space loop, ns per pass, one entry per sample: the bursts.
    pub user_loop_ns: Vec<f64>,
    /// `syscall(-1)` between the experiment's rounds, ns per call, in the order taken.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_entry_during_ns: Vec<f64>,
    /// The user-space loop between the experiment's rounds, ns per pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_loop_during_ns: Vec<f64>,
}

/// Fewer samples between rounds than this and the bursts stand for the experiment instead.
pub const MIN_DURING_SAMPLES: usize = 5;

impl MachineControls {
    /// The bursts' samples of one control.
    pub fn samples(&self, kind: ControlKind) -> &[f64] {
        match kind {
            ControlKind::KernelEntry => &self.kernel_entry_ns,
            ControlKind::UserLoop => &self.user_loop_ns,
        }
    }

    /// The samples of one control taken between the experiment's rounds.
    pub fn during(&self, kind: ControlKind) -> &[f64] {
        match kind {
            ControlKind::KernelEntry => &self.kernel_entry_during_ns,
            ControlKind::UserLoop => &self.user_loop_during_ns,
        }
    }

    /// What stands for the machine while the experiment ran, when two experiments' controls
    /// are held against each other: the samples between rounds where both have at least
    /// [`MIN_DURING_SAMPLES`] of them (taken in the same period as the figures), else the bursts
    /// of both.
    pub fn matched<'a>(
        &'a self,
        other: &'a MachineControls,
        kind: ControlKind,
    ) -> (&'a [f64], &'a [f64]) {
        let (a, b) = (self.during(kind), other.during(kind));
        if a.len() >= MIN_DURING_SAMPLES && b.len() >= MIN_DURING_SAMPLES {
            (a, b)
        } else {
            (self.samples(kind), other.samples(kind))
        }
    }

    /// Appends another's samples, bursts to bursts and samples between rounds to their own.
    pub fn extend(&mut self, more: MachineControls) {
        self.kernel_entry_ns.extend(more.kernel_entry_ns);
        self.user_loop_ns.extend(more.user_loop_ns);
        self.kernel_entry_during_ns
            .extend(more.kernel_entry_during_ns);
        self.user_loop_during_ns.extend(more.user_loop_during_ns);
    }
}
