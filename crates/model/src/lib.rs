//! The oscost result document: what a run measured, on which machine, with what evidence.
//!
//! Pure data and nothing else: no clocks, no system calls, no command line. Everything that
//! reads result files (rendering, comparing, history) depends on this crate alone, so a file
//! made on any machine can be read on any other. Every type rejects unknown fields, so a
//! format change that forgets to bump [`SCHEMA`] fails loudly instead of dropping data.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bill;
pub mod case;
pub mod clock;
pub mod controls;
pub mod cpulist;
pub mod env;
pub mod example;
pub mod experiment_id;
pub mod head;
pub mod ids;
pub mod message;
pub mod published;
pub mod schema;
pub mod seccomp_profile;

pub use case::{
    Case, Check, DerivedSpec, ExperimentOutput, Samples, Series, TraceCost, Unavailable,
};
pub use clock::{ClockInfo, CounterKind};
pub use controls::{ControlKind, MachineControls};
pub use env::{Environment, Held, OsInfo, RunLoad};
pub use experiment_id::ExperimentId;
pub use head::{read_head, ResultHead};
pub use message::{Message, MessageKind, Messages};
pub use published::{read_published, PublishedDoc, PublishedFigure, PUBLISHED_SCHEMA};
pub use schema::{
    read, CaseResult, DerivedResult, ExperimentResult, ReadError, ResultDoc, OLDER_SCHEMAS, SCHEMA,
};
