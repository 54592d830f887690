//! Checks several experiments attach to their cases, and what a failed one means.

use crate::engine::tokens::Counts;
use oscost_model::case::{Case, Check};

/// A case refused SCHED_FIFO, as its reason reads in one short line: the policy and priority
/// asked, the kernel's answer without the call the policy already names
/// (`sched_setscheduler(…): `), then `fix` (from its leading `: ` or `; `).
pub(crate) fn fifo_refused(priority: i32, why: &str, fix: &str) -> String {
    let answer = why.rsplit("): ").next().unwrap_or(why);
    format!("SCHED_FIFO {priority} refused ({answer}){fix}")
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
