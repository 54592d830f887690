//! The log of the machine's controls the sampler times between an experiment's rounds, and
//! one sample of each control: the part of the controls the measuring context holds (see
//! [`crate::machine_controls`] for the bursts around each experiment).

use crate::timesource::TimeSource;
use oscost_model::MachineControls;
use std::hint::black_box;
use std::sync::Mutex;

/// System calls per kernel-entry sample: about 50–150 µs, far above the clock's resolution.
const CALLS_PER_SAMPLE: u32 = 500;
/// Steps of the user-space loop per sample: a chain of dependent integer operations that no
/// call, cache miss or memory access interrupts, so only the CPU's own speed moves it.
const LOOP_STEPS: u32 = 20_000;

/// One pass of the user-space loop: xorshift64, each step depending on the last.
fn user_loop(seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..LOOP_STEPS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// One sample of each control on the calling thread, wherever it runs: `syscall(-1)` ns per
/// call, then the user-space loop's ns per pass.
pub(crate) fn one_of_each(clock: &dyn TimeSource, i: u64) -> (f64, f64) {
    let ns = |t0: u64, t1: u64| clock.ticks_to_ns(t1.saturating_sub(t0) as f64);
    let t0 = clock.now();
    for _ in 0..CALLS_PER_SAMPLE {
        black_box(oscost_sys::calls::invalid_syscall());
    }
    let t1 = clock.now();
    let kernel = ns(t0, t1) / f64::from(CALLS_PER_SAMPLE);
    let t0 = clock.now();
    black_box(user_loop(black_box(i)));
    let t1 = clock.now();
    (kernel, ns(t0, t1))
}

/// The controls the sampler times between an experiment's rounds, kept until the experiment
/// ends. Shared by every thread of the measuring process that samples (through the context).
#[derive(Debug, Default)]
pub struct ControlLog(Mutex<MachineControls>);

impl ControlLog {
    /// Times one sample of each control now, on the calling thread, and keeps it: between
    /// rounds, never inside a timed batch. Nothing where the clock is fictional (the scripted
    /// machine, whose readings a test counts).
    pub fn between_rounds(&self, clock: &dyn TimeSource) {
        if clock.scripted().is_some() {
            return;
        }
        let mut log = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let i = log.kernel_entry_during_ns.len() as u64;
        let (kernel, user) = one_of_each(clock, i);
        log.kernel_entry_during_ns.push(kernel);
        log.user_loop_during_ns.push(user);
    }

    /// Everything kept so far, the log left empty.
    pub fn take(&self) -> MachineControls {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
