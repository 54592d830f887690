//! Where a run's exports go, and writing them there as the run goes: every file again after
//! each experiment, so that a run that fails later keeps what it measured; each one staged
//! beside its target and put in place only when all of them were written (see
//! [`crate::output`]); a file oscost chose itself given up, never the run, when it cannot be
//! written. Standard output is the caller's: it is written once, at the end.

use super::{ExportOptions, Format};
use crate::output;
use oscost_model::{ExperimentResult, ResultDoc};
use std::path::{Path, PathBuf};

/// Where one export goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Sink {
    /// Standard output.
    Stdout,
    /// A file, written atomically.
    File(PathBuf),
}

/// One export of a run: a format and where it goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The format.
    pub format: Format,
    /// Where it goes.
    pub sink: Sink,
    /// A file oscost chose itself (the default suite's result file and page), not one the
    /// user named: when it cannot be written it is given up, and the run goes on.
    pub kept: bool,
}

/// A run's exports, in the order they are written, and the files given up so far.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    outputs: Vec<Output>,
    lost: Vec<PathBuf>,
}

impl Outputs {
    /// The exports `outputs` lists, written in that order.
    pub fn new(outputs: impl IntoIterator<Item = Output>) -> Outputs {
        Outputs {
            outputs: outputs.into_iter().collect(),
            lost: Vec::new(),
        }
    }

    /// The exports, in order.
    pub fn outputs(&self) -> &[Output] {
        &self.outputs
    }

    /// The files oscost chose itself that could not be written: given up, and left alone
    /// from then on.
    pub fn lost(&self) -> &[PathBuf] {
        &self.lost
    }

    /// Writes every file export of `doc`, each staged and all put in place together; a
    /// special file (a FIFO, a device) only when `last`, since it can be written only once. A
    /// kept file that cannot be written is put in place on its own, and when that fails it is
    /// given up: `given_up` is told its path and why, and the run goes on without it.
    pub fn write(
        &mut self,
        doc: &ResultDoc,
        last: bool,
        mut given_up: impl FnMut(&Path, &anyhow::Error),
    ) -> anyhow::Result<()> {
        let opts = ExportOptions::default();
        let mut staged = Vec::new();
        for o in &self.outputs {
            let Sink::File(p) = &o.sink else { continue };
            if (!last && output::is_special(p)) || self.lost.contains(p) {
                continue;
            }
            if o.kept {
                let written = o
                    .format
                    .export(doc, &opts)
                    .and_then(|text| output::stage(p, &text)?.commit());
                if let Err(e) = written {
                    given_up(p, &e);
                    self.lost.push(p.clone());
                }
                continue;
            }
            staged.push(output::stage(p, &o.format.export(doc, &opts)?)?);
        }
        for s in staged {
            s.commit()?;
        }
        Ok(())
    }

    /// Whether an export goes to standard output (the tables then go to standard error).
    pub fn stdout_taken(&self) -> bool {
        self.outputs.iter().any(|o| o.sink == Sink::Stdout)
    }

    /// The text for standard output, if an export goes there (at most one does).
    pub fn stdout(&self, doc: &ResultDoc) -> anyhow::Result<Option<String>> {
        self.outputs
            .iter()
            .find(|o| o.sink == Sink::Stdout)
            .map(|o| o.format.export(doc, &ExportOptions::default()))
            .transpose()
    }

    /// The regular files that hold a run's results so far, for a message when it fails.
    pub fn partial_files(&self) -> Vec<&Path> {
        self.outputs
            .iter()
            .filter_map(|o| match &o.sink {
                Sink::File(p) if !output::is_special(p) => Some(p.as_path()),
                _ => None,
            })
            .collect()
    }

    /// When the result document oscost chose to keep itself was given up, writes it to the
    /// temporary directory instead, so that a measured run is not lost with its disk: where it
    /// went, or why it could not be written anywhere. `None` when it was not given up.
    pub fn keep_elsewhere(&self, doc: &ResultDoc) -> Option<anyhow::Result<PathBuf>> {
        let json = self.outputs.iter().find_map(|o| match &o.sink {
            Sink::File(p) if o.format == Format::Json => Some(p),
            _ => None,
        })?;
        if !self.lost.contains(json) {
            return None;
        }
        let name = json.file_name().map_or_else(
            || std::ffi::OsString::from("oscost-run.json"),
            |n| n.to_owned(),
        );
        let other = std::env::temp_dir().join(name);
        Some(
            super::json::json(doc)
                .and_then(|t| output::write_atomic(&other, &t))
                .map(|()| other),
        )
    }
}

/// How many figures and series files were written.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Figures {
    /// SVG figures.
    pub plots: usize,
    /// Series as CSV.
    pub series: usize,
}

impl std::ops::AddAssign for Figures {
    fn add_assign(&mut self, o: Figures) {
        self.plots += o.plots;
        self.series += o.series;
    }
}

/// Writes an experiment's figures into `svg` and its series into `series` (each when given),
/// each file atomically, named after its case.
pub fn write_figures(
    result: &ExperimentResult,
    svg: Option<&Path>,
    series: Option<&Path>,
) -> anyhow::Result<Figures> {
    let mut n = Figures::default();
    if let Some(dir) = svg {
        n.plots += write_plots(dir, crate::experiments::plots(result))?;
    }
    if let Some(dir) = series {
        for (name, text) in crate::series::files(result)? {
            output::write_atomic(&dir.join(name), &text)?;
            n.series += 1;
        }
    }
    Ok(n)
}

/// Writes `plots` into `dir`, each atomically as `<name>.svg`; returns how many.
pub fn write_plots(dir: &Path, plots: Vec<crate::plot::Plot>) -> anyhow::Result<usize> {
    let mut n = 0;
    for plot in plots {
        let path = dir.join(crate::plot::file_name(&plot.name, "svg"));
        output::write_atomic(&path, &plot.svg)?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> ResultDoc {
        let path =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/oscost-2.json");
        oscost_model::read(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn files_are_written_each_time_and_stdout_is_left_to_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let (json, csv) = (dir.path().join("r.json"), dir.path().join("r.csv"));
        let mut outputs = Outputs::new([
            Output {
                format: Format::Json,
                sink: Sink::File(json.clone()),
                kept: false,
            },
            Output {
                format: Format::Csv,
                sink: Sink::File(csv.clone()),
                kept: false,
            },
            Output {
                format: Format::Markdown,
                sink: Sink::Stdout,
                kept: false,
            },
        ]);
        let doc = doc();
        outputs
            .write(&doc, false, |p, e| panic!("{}: {e}", p.display()))
            .unwrap();
        let opts = ExportOptions::default();
        assert_eq!(
            std::fs::read_to_string(&json).unwrap(),
            Format::Json.export(&doc, &opts).unwrap()
        );
        assert_eq!(
            std::fs::read_to_string(&csv).unwrap(),
            Format::Csv.export(&doc, &opts).unwrap()
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        assert!(outputs.stdout_taken());
        assert_eq!(
            outputs.stdout(&doc).unwrap().unwrap(),
            Format::Markdown.export(&doc, &opts).unwrap()
        );
        assert_eq!(outputs.partial_files(), [json.as_path(), csv.as_path()]);
        assert!(outputs.keep_elsewhere(&doc).is_none());
    }

    #[test]
    fn a_kept_file_that_cannot_be_written_is_given_up_not_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir
            .path()
            .join("missing-dir/oscost-export-staging-test.json");
        let named = dir.path().join("r.csv");
        let mut outputs = Outputs::new([
            Output {
                format: Format::Json,
                sink: Sink::File(kept.clone()),
                kept: true,
            },
            Output {
                format: Format::Csv,
                sink: Sink::File(named.clone()),
                kept: false,
            },
        ]);
        let doc = doc();
        let mut told = Vec::new();
        outputs
            .write(&doc, false, |p, _| told.push(p.to_owned()))
            .unwrap();
        assert_eq!(told, std::slice::from_ref(&kept));
        assert_eq!(outputs.lost(), std::slice::from_ref(&kept));
        assert!(named.exists());
        // Given up once, left alone from then on.
        outputs
            .write(&doc, true, |p, _| told.push(p.to_owned()))
            .unwrap();
        assert_eq!(told.len(), 1);
        let elsewhere = outputs.keep_elsewhere(&doc).unwrap().unwrap();
        assert_eq!(
            elsewhere,
            std::env::temp_dir().join("oscost-export-staging-test.json")
        );
        assert_eq!(
            std::fs::read_to_string(&elsewhere).unwrap(),
            Format::Json
                .export(&doc, &ExportOptions::default())
                .unwrap()
        );
        std::fs::remove_file(elsewhere).unwrap();
    }
}
