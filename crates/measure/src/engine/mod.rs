//! The machinery experiments share, by job: what an experiment is and how the registry is
//! built ([`experiment`]), the shared option parsers ([`args`]), checks attached to cases
//! ([`checks`]), the no-switch controls ([`controls`]), token rings ([`tokens`], [`ring`]),
//! the machine's clock and tick ([`clock`]), busy spins that record their interruptions
//! ([`spin`]), periodic timer events ([`timer`]) and fixed work ([`work`]).
//!
//! An experiment builds on these, the sampler, the context and the kernel view; never on
//! another experiment, so changing one cannot break another.

pub mod args;
pub mod checks;
pub mod clock;
pub mod controls;
pub mod experiment;
pub mod ring;
pub mod spin;
pub mod timer;
pub mod tokens;
pub mod work;

pub(crate) use args::{
    first_occurrences, kind_parser, parse_count, parse_duration, parse_mt, parse_pages, parse_rate,
    parse_tasks, pick_mt, value_name, via_parser,
};
pub use args::{parse_time, Mt, TaskList};
pub(crate) use checks::failed_checks;
pub(crate) use experiment::{defaults, registry};
pub use experiment::{Experiment, ExperimentInfo};
pub(crate) use ring::check_ring_sweep;

/// A time in a warning's words: ms to two places, µs to one, ns whole.
pub(crate) fn fmt_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}
