//! `oscost list`: the experiments and what they measure.

use crate::stdout::print_stdout;
use oscost_measure::experiments::REGISTRY;
use std::process::ExitCode;

/// Prints `oscost list`.
pub fn run() -> anyhow::Result<ExitCode> {
    print_stdout(&list())?;
    Ok(ExitCode::SUCCESS)
}

/// The text of `oscost list`.
fn list() -> String {
    let width = REGISTRY
        .iter()
        .filter(|e| !e.hidden)
        .map(|e| e.name.len())
        .max()
        .unwrap_or(0);
    let mut s = String::new();
    for e in REGISTRY.iter().filter(|e| !e.hidden) {
        let suite = if e.in_default_suite {
            ""
        } else {
            " (not in the default suite)"
        };
        s += &format!("{:width$}  {}{suite}\n", e.name, e.summary);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_names_every_experiment() {
        let l = list();
        for e in REGISTRY {
            assert_eq!(l.contains(e.name), !e.hidden, "{}", e.name);
        }
    }
}
