//! Published figures as baselines (`"schema": "oscost-published/1"`).
//!
//! A published baseline is what a study printed, not what oscost measured: point values with no
//! samples, the citation, the machine as the study described it, and for every figure its unit
//! and what it meant there. A figure whose meaning matches an oscost case names that case's id;
//! one that does not match keeps `case_id` empty and says why, so it is shown beside the
//! others but never compared as if it were the same thing.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema identifier of a published baseline document.
pub const PUBLISHED_SCHEMA: &str = "oscost-published/1";

/// One study's published figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedDoc {
    /// Always [`PUBLISHED_SCHEMA`].
    pub schema: String,
    /// Short name used on the command line (`published:<name>`), e.g. `minix3-kernel-drivers`.
    pub name: String,
    /// One line saying what the baseline is.
    pub title: String,
    /// Where the figures were published.
    pub citation: Citation,
    /// The machine and system as the study described them.
    pub machine: PublishedMachine,
    /// How the study measured (clock, loop, priority), as far as it says.
    pub method: String,
    /// Caveats a reader needs before comparing (units, slips in the original, what is missing).
    pub notes: Vec<String>,
    /// The figures, in the study's order.
    pub figures: Vec<PublishedFigure>,
}

/// A bibliographic reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Citation {
    /// Authors as published; `unknown` when the work names none.
    pub authors: String,
    /// Title of the work (translated titles say so).
    pub title: String,
    /// Year of publication; `None` when the work carries no date (the notes then say so:
    /// a guessed year would pass for a published one).
    pub year: Option<u16>,
    /// Where it appeared (journal, conference, book, web page), when known.
    pub venue: Option<String>,
}

/// The machine a study measured on, as published: free text, nothing inferred.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedMachine {
    /// Operating system and version.
    pub os: String,
    /// Processor(s), when the study names them.
    pub cpu: Option<String>,
    /// Number of CPUs used, when the study says.
    pub cpus: Option<u32>,
    /// Anything else the study says about the machine.
    pub details: Option<String>,
}

/// One published figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedFigure {
    /// Id of the figure inside this baseline (`getpid.user_mode_drivers`).
    pub id: String,
    /// What the figure meant in the study, in its own terms.
    pub meaning: String,
    /// The value as published.
    pub value: f64,
    /// Its unit as published (`us`, `ms`, `cycles`, `%`, `processes/s`, `ns`).
    pub unit: String,
    /// The same value per operation in ns, when it is a time per operation that an oscost
    /// case's `median_ns` can stand beside; `None` otherwise (a total, a percentage, a rate).
    pub per_op_ns: Option<f64>,
    /// The oscost case, derived figure or study figure (`study.<study>.…`, computed from a run
    /// as the study computed it) whose meaning matches, when one does.
    pub case_id: Option<String>,
    /// Why no oscost case is mapped, or what differs in the mapped one.
    pub mapping_note: Option<String>,
    /// For a figure with no counterpart: the nearest oscost figure a reader may look at
    /// instead, which does not mean the same thing and is never set beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nearest: Option<String>,
    /// Parameters of the point as published (N, CPUs, tick period).
    pub params: BTreeMap<String, serde_json::Value>,
}

/// Why a published baseline could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PublishedError {
    /// Not JSON, or the wrong schema.
    #[error("not a published baseline ({PUBLISHED_SCHEMA}): {0}")]
    NotPublished(String),
    /// The right schema, fields wrong.
    #[error("not a valid {PUBLISHED_SCHEMA} document: {0}")]
    Invalid(serde_json::Error),
}

/// Reads a published baseline document, checking its schema first.
pub fn read_published(text: &str) -> Result<PublishedDoc, PublishedError> {
    #[derive(Deserialize)]
    struct Header {
        schema: String,
    }
    let header: Header =
        serde_json::from_str(text).map_err(|e| PublishedError::NotPublished(e.to_string()))?;
    if header.schema != PUBLISHED_SCHEMA {
        return Err(PublishedError::NotPublished(format!(
            "its schema is `{}`",
            header.schema
        )));
    }
    serde_json::from_str(text).map_err(PublishedError::Invalid)
}
