//! The JSON exporter: the result document itself (`oscost/2`), the one every other stage
//! reads back.

use super::{ExportOptions, Exporter};
use oscost_model::schema::ResultDoc;

/// The document as pretty JSON, byte for byte what `oscost_model::read` reads back.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn extension(&self) -> &'static str {
        "json"
    }

    fn export(&self, doc: &ResultDoc, _: &ExportOptions) -> anyhow::Result<String> {
        json(doc)
    }
}

/// The document as pretty JSON.
pub fn json(doc: &ResultDoc) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(doc)? + "\n")
}

/// Any value (the environment of `oscost env`, say) as the document is written: pretty JSON
/// ending in a newline.
pub fn pretty<T: serde::Serialize>(v: &T) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(v)? + "\n")
}
