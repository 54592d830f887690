//! oscost's measuring layer: the clock, thin OS wrappers, the machine's description and the
//! experiments themselves.
//!
//! This is the only crate where `unsafe` lives, and inside it only the [`os`] and [`clock`]
//! modules may use it: everything else calls their safe functions. Nothing here summarises
//! samples or formats figures; that is the statistics and report layers' job.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod case;
pub mod clock;
pub mod context;
pub mod cpuset;
pub mod env;
pub mod experiments;
pub mod os;
pub mod sampler;
pub mod scratch;

pub use case::{Case, Check, DerivedSpec, ExperimentOutput, Samples, Series, Unavailable};
pub use clock::Clock;
pub use context::{Cancelled, Context, Progress};
