//! `oscost completions SHELL`: a shell completion script.

use crate::args::Cli;
use crate::stdout::print_stdout;
use clap::{Command, CommandFactory};
use std::process::ExitCode;

/// Prints the completion script of `shell`.
pub fn run(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut visible(), "oscost", &mut out);
    print_stdout(&String::from_utf8_lossy(&out))?;
    Ok(ExitCode::SUCCESS)
}

/// oscost's command line without its hidden options and subcommands: clap_complete offers
/// every argument, hidden or not, and `--scripted` is for the tests alone.
fn visible() -> Command {
    let mut cmd = crate::args::hide_unused_options(Cli::command());
    // Built: each subcommand then holds the global options itself.
    cmd.build();
    copy(&cmd)
}

/// `s` for the life of the process: clap takes a name given at run time only as a static
/// string (without its `string` feature), and this one-shot command makes a few dozen.
fn kept(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

/// `cmd` (built) again, with only what a user may type.
fn copy(cmd: &Command) -> Command {
    // The copies of help and version come with the arguments: clap adds none of its own.
    let mut out = Command::new(kept(cmd.get_name()))
        .disable_help_flag(true)
        .disable_version_flag(true)
        .disable_help_subcommand(true);
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    if let Some(v) = cmd.get_version() {
        out = out.version(kept(v));
    }
    out = out.visible_aliases(cmd.get_visible_aliases().map(kept).collect::<Vec<_>>());
    for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        // Already in every subcommand: not propagated again.
        out = out.arg(a.clone().global(false));
    }
    for s in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        out = out.subcommand(copy(s));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_offer_no_hidden_option() {
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut visible(), "oscost", &mut out);
            let text = String::from_utf8(out).unwrap();
            assert!(!text.contains("scripted"), "{shell}");
            for word in ["--json", "syscall", "history"] {
                assert!(text.contains(word), "{shell}: {word}");
            }
            // The studies, as `oscost study` takes them (fish's script completes no operand).
            if shell != clap_complete::Shell::Fish {
                for word in ["qnx-tick", "windows-yield"] {
                    assert!(text.contains(word), "{shell}: {word}");
                }
            }
        }
    }
}
