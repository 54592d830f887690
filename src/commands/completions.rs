//! `oscost completions SHELL`: a shell completion script.

use crate::args::Cli;
use crate::stdout::print_stdout;
use clap::CommandFactory;
use std::process::ExitCode;

/// Prints the completion script of `shell`.
pub fn run(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "oscost", &mut out);
    print_stdout(&String::from_utf8_lossy(&out))?;
    Ok(ExitCode::SUCCESS)
}
