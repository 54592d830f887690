//! `oscost man`: manual pages in roff, oscost's own or a subcommand's.

use crate::args::Cli;
use crate::stdout::print_stdout;
use anyhow::Context as _;
use clap::CommandFactory;
use std::path::Path;
use std::process::ExitCode;

/// The `oscost*.1` files in `dir`.
fn man_pages(dir: &Path) -> std::collections::BTreeSet<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name())
                .filter(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with("oscost") && n.ends_with(".1")
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `oscost man`: oscost's page or subcommand `name`'s on stdout, or every page into `dir`.
pub fn run(name: Option<&str>, dir: Option<&Path>) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--dir {}: cannot create it", dir.display()))?;
        let before = man_pages(dir);
        clap_mangen::generate_to(cmd, dir)
            .with_context(|| format!("--dir {}: cannot write the pages", dir.display()))?;
        // What was written, said: a command that writes files names where.
        let after = man_pages(dir);
        eprintln!(
            "wrote {} manual pages to {} ({} new; `man {}/oscost.1`)",
            after.len(),
            dir.display(),
            after.difference(&before).count(),
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    // Built, so that a subcommand's page carries its full name and the global options.
    cmd.build();
    let page = match name {
        None => cmd,
        Some(name) => {
            let visible: Vec<&str> = cmd
                .get_subcommands()
                .filter(|c| !c.is_hide_set())
                .map(|c| c.get_name())
                .collect();
            if !visible.contains(&name) {
                anyhow::bail!(
                    "man {name}: no such subcommand (choose from: {})",
                    visible.join(", ")
                );
            }
            cmd.find_subcommand(name)
                .cloned()
                .expect("a visible subcommand is found")
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out)?;
    print_stdout(&String::from_utf8_lossy(&out))?;
    Ok(ExitCode::SUCCESS)
}
