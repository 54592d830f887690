//! `oscost baselines`: the published baselines listed, or one described.

use crate::inputs::PUBLISHED_PREFIX;
use crate::stdout::print_stdout;
use std::process::ExitCode;

/// Prints the list, or the baseline `name` (with or without `published:`) in full.
pub fn run(name: Option<String>) -> anyhow::Result<ExitCode> {
    let text = match name {
        None => oscost_report::baselines::list_text_to(
            oscost_report::export::terminal::layout_width(false),
        ),
        Some(n) => {
            let n = n.strip_prefix(PUBLISHED_PREFIX).unwrap_or(&n);
            let doc = oscost_report::baselines::find(n).ok_or_else(|| {
                anyhow::anyhow!(
                    "no published baseline named `{n}` (choose from: {})",
                    oscost_report::baselines::names().join(", ")
                )
            })?;
            oscost_report::baselines::describe(&doc)
        }
    };
    print_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}
