//! What oscost writes besides a run — a comparison, a fleet, bills set side by side — behind
//! one trait beside [`super::Exporter`]: its terminal table and the file formats it offers, so
//! that every command writes its files and its table the same way.

use super::Format;

/// Something written as a terminal table and in some of the file formats.
pub trait Render {
    /// Its table for a terminal `width` columns wide; `None`: its natural width.
    fn table(&self, width: Option<u16>) -> String;

    /// Its file in `format`, or `None` when it offers no such file.
    fn file(&self, format: Format) -> Option<anyhow::Result<String>>;
}

/// A value serialised as the JSON files oscost writes: indented, ending in a newline.
pub fn pretty_json<T: serde::Serialize>(value: &T) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}
