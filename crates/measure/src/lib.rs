//! oscost's measuring layer: the sampler, the machine's description and the experiments.
//!
//! Everything that touches the OS directly lives in `oscost-sys`; this crate forbids `unsafe`.
//! Nothing here summarises samples or formats figures; that is the statistics and report
//! layers' job. Experiments hand up raw samples and evidence as `oscost-model` types.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bill;
pub mod context;
mod control_log;
pub mod cpuset;
pub mod engine;
pub mod env;
pub mod experiments;
pub mod idle;
pub mod kview;
pub mod leftovers;
pub mod limits;
pub mod machine_controls;
pub mod pace;
pub mod processes;
pub mod sampler;
pub mod scratch;
pub mod seccomp_file;
pub mod sysctl;
pub mod timesource;

/// A test that cannot run here says so, and `cargo xtask test` counts it as skipped.
#[cfg(test)]
#[path = "../../../xtask/src/skip.rs"]
mod skip;

pub use context::{Cancelled, Context, Progress};
pub use oscost_sys::clock::Clock;
pub use timesource::{Scripted, TimeSource};
