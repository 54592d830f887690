//! Checks several experiments attach to their cases, and what a failed one means.

use crate::engine::tokens::Counts;
use oscost_model::case::{Case, Check};

/// A case refused SCHED_FIFO, as its reason reads in one short line: the policy and priority
/// asked, the kernel's answer without the call the policy already names
/// (`sched_setscheduler(…): `), then `fix` (from its leading `: ` or `; `).
pub(crate) fn fifo_refused(priority: i32, why: &str, fix: &str) -> String {
    let answer = without_errno(why.rsplit("): ").next().unwrap_or(why));
    format!("SCHED_FIFO {priority} refused ({answer}){fix}")
}

/// An OS error's words without the number Rust appends (`Permission denied (os error 13)` →
/// `Permission denied`): the words are what a reader acts on, in a line that must stay short.
pub(crate) fn without_errno(text: &str) -> &str {
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => &text[..at],
        _ => text,
    }
}

/// Why a case's derived figure cannot be trusted: its failed checks, or `None`.
pub(crate) fn failed_checks(case: &Case) -> Option<String> {
    let failed: Vec<String> = case
        .checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| {
            format!(
                "{} counted {:.3}, expected {}",
                c.name, c.counted, c.expected
            )
        })
        .collect();
    (!failed.is_empty()).then(|| format!("{}: {}", case.id, failed.join("; ")))
}

/// Records migrations and, when the tasks were pinned, checks there were none.
pub(crate) fn add_migrations(case: &mut Case, counts: &Counts, pinned: bool) {
    if !counts.migrations_known {
        case.notes.push(oscost_model::Message::new(
            oscost_model::MessageKind::MigrationsNotCounted,
            ": se.nr_migrations is missing from /proc/<pid>/sched",
        ));
        return;
    }
    case.counters
        .insert("migrations".into(), counts.migrations as f64);
    if pinned {
        case.checks.push(Check::near(
            "migrations",
            0.0,
            counts.migrations as f64,
            0.0,
            "se.nr_migrations of every task over the measured span; pinned tasks must not move",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_os_errors_words_lose_their_number_and_other_text_stays() {
        assert_eq!(
            without_errno("Permission denied (os error 13)"),
            "Permission denied"
        );
        assert_eq!(without_errno("no such thing"), "no such thing");
        assert_eq!(
            fifo_refused(
                1,
                "sched_setscheduler(1): Operation not permitted (os error 1)",
                "."
            ),
            "SCHED_FIFO 1 refused (Operation not permitted)."
        );
    }
}
