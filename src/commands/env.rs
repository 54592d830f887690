//! `oscost env`: the machine description recorded with every result.

use crate::config::{Config, Sink};
use crate::machine::{apply_placement, environment};
use crate::stdout::print_stdout;
use oscost_measure::Clock;
use std::process::ExitCode;

/// Prints the description (to stderr when stdout carries its JSON), and writes it with --json.
pub fn run(cfg: &Config) -> anyhow::Result<ExitCode> {
    let text = environment_text(cfg)?;
    if cfg.stdout_taken() {
        eprint!("{text}");
    } else {
        print_stdout(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The text of `oscost env`.
fn environment_text(cfg: &Config) -> anyhow::Result<String> {
    let cpus = apply_placement(cfg)?;
    let clock = Clock::detect();
    let env = environment(cfg, &clock, &cpus);
    if let Some(Sink::File(p)) = &cfg.json {
        oscost_report::output::write_atomic(p, &(serde_json::to_string_pretty(&env)? + "\n"))?;
    } else if let Some(Sink::Stdout) = &cfg.json {
        print_stdout(&(serde_json::to_string_pretty(&env)? + "\n"))?;
    }
    let width = oscost_report::export::terminal::layout_width(cfg.stdout_taken());
    Ok(oscost_report::envtext::render_environment_to(&env, width))
}
