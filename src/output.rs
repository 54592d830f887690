//! A run's output files: staged and replaced whole after each experiment, so a later failure
//! keeps what was measured; figures and series written beside them.

use crate::config::{Config, Sink};
use oscost_model::ResultDoc;
use oscost_report::render;

/// How many figures and series files the run wrote.
#[derive(Debug, Default, Clone, Copy)]
pub struct Figures {
    /// Figures (`--svg`).
    pub plots: usize,
    /// Series files (`--series`).
    pub series: usize,
}

impl std::ops::AddAssign for Figures {
    fn add_assign(&mut self, o: Figures) {
        self.plots += o.plots;
        self.series += o.series;
    }
}

/// Writes the experiment's figures (`--svg`) and series (`--series`), each file atomically,
/// named after its case.
pub fn write_figures(
    cfg: &Config,
    result: &oscost_model::ExperimentResult,
) -> anyhow::Result<Figures> {
    let mut n = Figures::default();
    if let Some(dir) = &cfg.svg {
        for plot in oscost_report::plot::plots(result) {
            let path = dir.join(oscost_report::plot::file_name(&plot.name, "svg"));
            oscost_report::output::write_atomic(&path, &plot.svg)?;
            n.plots += 1;
        }
    }
    if let Some(dir) = &cfg.series {
        for (name, text) in oscost_report::series::files(result)? {
            oscost_report::output::write_atomic(&dir.join(name), &text)?;
            n.series += 1;
        }
    }
    Ok(n)
}

/// Every file output, rewritten after each experiment so a later failure keeps what was
/// measured. Special files (a FIFO, a device) are written once, at the end.
/// A file oscost chose itself (`cfg.kept`) that cannot be written is added to `lost` with one
/// line on stderr and left alone from then on: the run goes on without it.
pub fn write_files(
    cfg: &Config,
    doc: &ResultDoc,
    last: bool,
    lost: &mut Vec<std::path::PathBuf>,
) -> anyhow::Result<()> {
    let mut staged = Vec::new();
    for (sink, render) in outputs(cfg) {
        if let Some(Sink::File(p)) = sink {
            if (!last && oscost_report::output::is_special(p)) || lost.contains(p) {
                continue;
            }
            if cfg.kept.contains(p) {
                let written =
                    render(doc).and_then(|text| oscost_report::output::stage(p, &text)?.commit());
                if let Err(e) = written {
                    eprintln!(
                        "oscost: not kept: {e:#} (the run goes on; free some space or give --json \
                         and --report)"
                    );
                    lost.push(p.clone());
                }
                continue;
            }
            staged.push(oscost_report::output::stage(p, &render(doc)?)?);
        }
    }
    for s in staged {
        s.commit()?;
    }
    Ok(())
}

/// When the result file oscost chose itself could not be kept, the document goes to the
/// temporary directory instead, so that a measured run is not lost with its disk; says where.
pub fn keep_elsewhere(cfg: &Config, doc: &ResultDoc, lost: &[std::path::PathBuf]) {
    let Some(Sink::File(json)) = cfg.json.as_ref() else {
        return;
    };
    if !lost.contains(json) {
        return;
    }
    let name = json.file_name().map_or_else(
        || std::ffi::OsString::from("oscost-run.json"),
        |n| n.to_owned(),
    );
    let other = std::env::temp_dir().join(name);
    match render::json(doc).and_then(|t| oscost_report::output::write_atomic(&other, &t)) {
        Ok(()) => eprintln!(
            "oscost: the run's results are in {} instead",
            other.display()
        ),
        Err(e) => eprintln!(
            "oscost: the run's results could not be written anywhere ({e:#}): only the tables \
             above hold them"
        ),
    }
}

/// Renders a run's document in one format.
pub type Renderer = fn(&ResultDoc) -> anyhow::Result<String>;

/// Each file format of a run: where it goes, if anywhere, and its renderer.
pub fn outputs(cfg: &Config) -> [(Option<&Sink>, Renderer); 4] {
    [
        (cfg.json.as_ref(), render::json as Renderer),
        (cfg.csv.as_ref(), render::csv as Renderer),
        (cfg.markdown.as_ref(), |d| Ok(render::markdown(d))),
        (cfg.report.as_ref(), report_of_run),
    ]
}

/// The HTML page of this run alone, labelled with its id.
fn report_of_run(doc: &ResultDoc) -> anyhow::Result<String> {
    let label = doc.run_id.clone().unwrap_or_else(|| "this run".to_owned());
    oscost_report::html::report(&[(label, doc)])
}

/// The regular files that hold a partial result, for an error message.
pub fn partial_files(cfg: &Config) -> Vec<String> {
    outputs(cfg)
        .iter()
        .filter_map(|(sink, _)| match sink {
            Some(Sink::File(p)) if !oscost_report::output::is_special(p) => {
                Some(p.display().to_string())
            }
            _ => None,
        })
        .collect()
}
