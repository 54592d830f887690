//! `oscost report FILE... -o OUT`: one HTML page of result files, history runs and studies.

use crate::config::Config;
use crate::inputs::{load_run, names_a_file, PUBLISHED_PREFIX};
use crate::stdout::print_stdout;
use anyhow::Context as _;
use oscost_model::ResultDoc;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `oscost report FILE... -o OUT`: reads every result file, then writes their page in one go;
/// any file that cannot be read stops it before anything is written.
///
/// Each input is `published:NAME`, a result file, or a run of the history (`latest`,
/// `latest~1`, an id), as `compare` takes them, in the history `cfg` names.
pub fn run(files: &[PathBuf], output: Option<&Path>, cfg: &Config) -> anyhow::Result<ExitCode> {
    let history = cfg.history_location()?;
    let history = history.as_ref();
    const USAGE: &str = "oscost report r.json [more.json...] -o report.html";
    let Some(output) = output else {
        anyhow::bail!("report needs -o FILE, the HTML file to write (`{USAGE}`)");
    };
    if files.is_empty() {
        anyhow::bail!("report needs at least one result file written by --json (`{USAGE}`)");
    }
    let to_stdout = output.as_os_str() == "-" || oscost_report::output::is_stdout(output);
    if !to_stdout {
        oscost_report::output::check_writable(output).context("-o")?;
        let out = oscost_report::output::identity(output);
        if let Some(f) = files
            .iter()
            .find(|f| oscost_report::output::identity(f) == out)
        {
            anyhow::bail!(
                "-o {}: that is {}, one of the result files to read (choose another name for the \
                 page)",
                output.display(),
                f.display()
            );
        }
    }
    let mut docs = Vec::with_capacity(files.len());
    let mut studies = Vec::new();
    for f in files {
        let arg = f.to_string_lossy();
        if let Some(name) = arg.strip_prefix(PUBLISHED_PREFIX) {
            let study = oscost_report::study::of_baseline(name)
                .or_else(|| oscost_report::study::find(name))
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "{arg}: no published baseline or study of that name (`oscost baselines` \
                         and `oscost study` list them)"
                    )
                })?;
            studies.push((arg.to_string(), study));
            continue;
        }
        let doc = if names_a_file(&arg) {
            read_result(f)?
        } else {
            load_run(&arg, history)
                .map_err(|e| anyhow::anyhow!("{arg}: no such file, and {e:#}"))?
        };
        docs.push((f.display().to_string(), doc));
    }
    if docs.is_empty() {
        anyhow::bail!(
            "report needs a result file beside published:NAME, whose figures it sets the \
             study's beside (`oscost report published:qnx-tick r.json -o r.html`)"
        );
    }
    // A study beside runs that hold none of its cases would be a page of its figures alone.
    if let Some((arg, study)) = studies
        .iter()
        .find(|(_, s)| !docs.iter().any(|(_, d)| s.applies_to(d)))
    {
        anyhow::bail!(
            "{arg}: {} of the study `{}` (it reads {}: give a run of `oscost study {1} --json \
             r.json`)",
            if docs.len() == 1 {
                format!("{} holds no figure", docs[0].0)
            } else {
                format!("none of the {} runs given holds a figure", docs.len())
            },
            study.info.name,
            study.info.experiments.join(", ")
        );
    }
    let studies: Vec<_> = studies.into_iter().map(|(_, s)| s).collect();
    let refs: Vec<(String, &ResultDoc)> = docs.iter().map(|(l, d)| (l.clone(), d)).collect();
    let html = oscost_report::export::html::report_with(&refs, &studies)?;
    if to_stdout {
        print_stdout(&html)?;
    } else {
        oscost_report::output::write_atomic(output, &html)?;
        if !cfg.quiet {
            eprintln!("wrote {}", output.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A result file, or one line naming it and what is wrong with it.
fn read_result(path: &Path) -> anyhow::Result<ResultDoc> {
    use oscost_model::ReadError;
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| {
        let reason = e.raw_os_error().map_or_else(
            || e.to_string(),
            |c| std::io::Error::from_raw_os_error(c).to_string(),
        );
        anyhow::anyhow!("cannot read {shown}: {reason} (check the path)")
    })?;
    let text = String::from_utf8(bytes).map_err(|_| {
        anyhow::anyhow!(
            "{shown}: not an oscost result document: not UTF-8 text (give a file written by \
             `oscost --json`)"
        )
    })?;
    oscost_model::read(&text).map_err(|e| match e {
        ReadError::NotADocument(_) => {
            anyhow::anyhow!("{shown}: {e} (give a file written by `oscost --json`)")
        }
        ReadError::Unsupported(_) => anyhow::anyhow!("{shown}: {e}"),
        ReadError::Invalid(_) => anyhow::anyhow!(
            "{shown}: {e} (it was changed or cut short since oscost wrote it; write it again \
             with `oscost --json`)"
        ),
    })
}
