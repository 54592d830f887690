//! One module per command. Each takes its own arguments and the validated `Config`, never the
//! raw global options.

pub mod baselines;
pub mod bill;
pub mod compare;
pub mod completions;
pub mod datasheet;
pub mod emit;
pub mod env;
pub mod fleet;
pub mod history;
pub mod list;
pub mod man;
pub mod measure;
pub mod report;
pub mod study;
