//! `oscost list`: the experiments and what they measure.

use crate::stdout::print_stdout;
use oscost_measure::experiments::REGISTRY;
use oscost_report::export::terminal;
use std::process::ExitCode;

/// Prints `oscost list`.
pub fn run() -> anyhow::Result<ExitCode> {
    print_stdout(&list(terminal::layout_width(false)))?;
    Ok(ExitCode::SUCCESS)
}

/// The text of `oscost list`, each summary wrapped to `width` under itself.
fn list(width: Option<u16>) -> String {
    let name_width = REGISTRY
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
        let line = format!("{:name_width$}  {}{suite}", e.name, e.summary);
        s += &terminal::wrap(&line, width, name_width + 2);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_names_every_experiment() {
        let l = list(None);
        for e in REGISTRY {
            assert_eq!(l.contains(e.name), !e.hidden, "{}", e.name);
        }
        let narrow = list(Some(60));
        assert!(narrow.lines().all(|l| l.chars().count() <= 60), "{narrow}");
        assert!(narrow.lines().count() > l.lines().count());
    }

    #[test]
    fn every_summary_starts_in_one_column_at_any_width() {
        let name_width = REGISTRY
            .iter()
            .filter(|e| !e.hidden)
            .map(|e| e.name.len())
            .max()
            .unwrap_or(0);
        for width in [None, Some(60), Some(200)] {
            let l = list(width);
            for line in l.lines() {
                let (name, summary) = line.split_at(name_width + 2);
                assert!(
                    !summary.starts_with(' ') && name.ends_with("  "),
                    "{width:?}: {line}"
                );
            }
        }
    }
}
