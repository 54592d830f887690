//! oscost's results layer: summaries of raw samples and renderers of the result document.
//!
//! It reads `oscost-model` and `oscost-stats` only, never the measuring or OS layers, so a
//! result file made on any machine can be rendered anywhere.
//!
//! Each output format has one exporter in [`export`], behind one trait. Pure apart from
//! [`output`], which writes files atomically, and [`export::staging`], which writes a run's
//! exports with it. Nothing here measures.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod baselines;
pub mod bill;
pub mod compare;
mod counterparts;
pub mod csvw;
pub mod datasheet;
pub mod envtext;
pub mod experiments;
pub mod export;
pub mod fleet;
pub mod format;
mod layout;
pub mod mdtext;
pub mod output;
pub mod plot;
pub mod render;
pub mod series;
pub mod study;
pub mod summarise;
pub mod termtext;
pub mod trend;
pub mod views;

pub use oscost_model::{CaseResult, DerivedResult, ExperimentResult, ResultDoc, SCHEMA};
