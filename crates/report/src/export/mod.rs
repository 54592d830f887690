//! One exporter per output format, behind one trait: the terminal's tables, Markdown, CSV, the
//! JSON result document and the HTML page. [`exporters`] lists them; [`Format`] names one (the
//! key a command line's `--json`, `--csv`, `--markdown` or `--report` maps to).
//!
//! Every exporter is deterministic for a given document and options (no timestamps, fixed
//! number formats), so its output can be pinned in tests. [`staging`] writes what they make:
//! the run's files after each experiment, atomically, and its figures.

pub mod brief;
pub mod csv;
pub mod html;
pub mod json;
pub mod markdown;
pub mod render;
pub mod staging;
mod table;
pub mod terminal;
mod warnings;

pub use csv::Csv;
pub use html::Html;
pub use json::Json;
pub use markdown::Markdown;
pub use render::Render;
pub use staging::{write_figures, write_plots, Figures, Output, Outputs, Sink};
pub use terminal::{Terminal, Warnings};

use oscost_model::ResultDoc;

/// A way of writing a result document out.
pub trait Exporter: Send + Sync {
    /// The format's name: `terminal`, `markdown`, `csv`, `json` or `html`.
    fn name(&self) -> &'static str;

    /// The extension of a file in this format, without its dot.
    fn extension(&self) -> &'static str;

    /// The whole document in this format. Options a format has no use for are ignored.
    fn export(&self, doc: &ResultDoc, opts: &ExportOptions) -> anyhow::Result<String>;
}

/// What an exporter may be told besides the document; the default suits every file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// The width the terminal's tables are laid out to; `None`: their natural width (a file or
    /// a pipe, where a program reads every column).
    pub width: Option<u16>,
    /// How much of each experiment's warnings the terminal prints.
    pub warnings: Warnings,
    /// The name the HTML page gives the run; `None`: its run id, else `this run`.
    pub label: Option<String>,
}

/// The formats, one per exporter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// [`Terminal`]: tables for a person.
    Terminal,
    /// [`Markdown`]: the document as Markdown tables.
    Markdown,
    /// [`Csv`]: one row per case and derived figure.
    Csv,
    /// [`Json`]: the result document itself.
    Json,
    /// [`Html`]: one self-contained page.
    Html,
}

impl Format {
    /// Every format, in the order [`exporters`] lists them.
    pub const ALL: [Format; 5] = [
        Format::Terminal,
        Format::Markdown,
        Format::Csv,
        Format::Json,
        Format::Html,
    ];

    /// The exporter that writes this format.
    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            Format::Terminal => &Terminal,
            Format::Markdown => &Markdown,
            Format::Csv => &Csv,
            Format::Json => &Json,
            Format::Html => &Html,
        }
    }

    /// The format's name, as its exporter gives it.
    pub fn name(self) -> &'static str {
        self.exporter().name()
    }

    /// The format of this name (see [`Exporter::name`]).
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// `doc` in this format: [`Exporter::export`] of its exporter.
    pub fn export(self, doc: &ResultDoc, opts: &ExportOptions) -> anyhow::Result<String> {
        self.exporter().export(doc, opts)
    }
}

/// Every exporter, one per format.
pub fn exporters() -> [&'static dyn Exporter; 5] {
    Format::ALL.map(Format::exporter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_one_exporter_of_its_own_name_and_extension() {
        let names: Vec<&str> = exporters().iter().map(|e| e.name()).collect();
        assert_eq!(names, ["terminal", "markdown", "csv", "json", "html"]);
        let mut extensions: Vec<&str> = exporters().iter().map(|e| e.extension()).collect();
        extensions.sort();
        extensions.dedup();
        assert_eq!(extensions.len(), Format::ALL.len());
        for f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
        }
        assert_eq!(Format::from_name("report"), None);
    }
}
