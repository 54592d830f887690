//! oscost's results layer: the versioned schema, summaries of raw samples, and renderers.
//!
//! Pure apart from [`output`], which writes files atomically. Nothing here measures.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod envtext;
pub mod output;
pub mod render;
pub mod schema;
pub mod summarise;

pub use schema::{CaseResult, DerivedResult, ExperimentResult, ResultDoc, SCHEMA};
