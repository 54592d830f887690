//! Figures of one meaning that carry different ids on different systems. Bradford's csfast5 is
//! a ring of pthread mutexes on Linux and of Critical Sections on Windows (Edward G. Bradford,
//! "Runtime: Context switching", 2002): oscost's `lockring.mutex.*` and the Windows agent's
//! `lockring.cs.*`. Comparing a Windows run with a Linux run of the same machine sets each
//! beside the other, which is the study's own comparison on the reader's hardware.

use oscost_model::ids::lockring::{Id, CRITICAL_SECTION, MUTEX};
use oscost_model::ids::primitives;
use oscost_model::Environment;

/// Whether a run comes from the Windows agent.
fn windows(e: &Environment) -> bool {
    e.os.as_ref().is_some_and(|o| o.family == "windows")
}

/// Whether two runs come from different systems: one from the Windows agent, one from Linux.
pub(crate) fn across_systems(a: &Environment, b: &Environment) -> bool {
    windows(a) != windows(b)
}

/// Why the figure `id` cannot come from a run of the system `env` describes, when it cannot:
/// a Critical Section's or a Win32 lock's id in a Linux run, a pthread mutex's or a Linux
/// primitive's in a Windows run. Such a case was renamed, or its document mislabelled, and
/// set beside the other system's figure of that id it would compare two different locks.
pub(crate) fn foreign_id(id: &str, env: &Environment) -> Option<&'static str> {
    let on_windows = windows(env);
    if let Some(lock) = Id::parse(id).and_then(|p| p.lock()) {
        return match (lock, on_windows) {
            (MUTEX, true) => Some("a pthread mutex's id, which only oscost on Linux writes"),
            (CRITICAL_SECTION, false) => {
                Some("a Critical Section's id, which only the Windows agent writes")
            }
            _ => None,
        };
    }
    if oscost_model::ids::within(primitives::NAME, id).is_some() {
        // The Windows agent's own `primitives` cases (docs/windows.md).
        return match (primitives::WINDOWS_AGENT.contains(&id), on_windows) {
            (false, true) => Some("a Linux primitive's id, which the Windows agent never writes"),
            (true, false) => Some("a Windows lock's id, which only the Windows agent writes"),
            _ => None,
        };
    }
    None
}

/// The id of the same figure on the other system, and what differs between the two.
pub(crate) fn counterpart(id: &str) -> Option<(String, &'static str)> {
    const NOTE: &str = "Bradford's comparison: csfast5 on each system, a ring of Critical \
                        Sections on Windows beside one of pthread mutexes on Linux";
    const OWN: &str = "the ring's lock on each system: a Critical Section's enter + leave on \
                       Windows, a pthread mutex's lock + unlock on Linux";
    let parsed = Id::parse(id)?;
    let other = match parsed.lock()? {
        CRITICAL_SECTION => MUTEX,
        MUTEX => CRITICAL_SECTION,
        _ => return None,
    };
    let note = if matches!(parsed, Id::Own { .. }) {
        OWN
    } else {
        NOTE
    };
    Some((parsed.with_lock(other).to_string(), note))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_pair_across_systems_and_nothing_else_does() {
        assert_eq!(
            counterpart("lockring.cs.n8.k1").unwrap().0,
            "lockring.mutex.n8.k1"
        );
        assert_eq!(
            counterpart("lockring.mutex.n8.k1.switch_cost").unwrap().0,
            "lockring.cs.n8.k1.switch_cost"
        );
        assert!(counterpart("lockring.cs.own")
            .unwrap()
            .1
            .contains("enter + leave"));
        assert_eq!(counterpart("lockring.pipe.n2"), None);
        assert_eq!(counterpart("primitives.critical-section"), None);
    }

    #[test]
    fn a_case_under_the_other_systems_id_is_named() {
        let linux = oscost_model::example::environment();
        let mut win = linux.clone();
        win.os = Some(oscost_model::env::OsInfo {
            family: "windows".into(),
            ..Default::default()
        });
        assert!(foreign_id("lockring.mutex.n8.k1", &win).is_some());
        assert!(foreign_id("lockring.cs.n8.k1", &win).is_none());
        assert!(foreign_id("lockring.cs.own", &linux).is_some());
        assert!(foreign_id("lockring.mutex.n8.k1.switch_cost", &linux).is_none());
        assert!(foreign_id("lockring.pipe.n2", &win).is_none());
        assert!(foreign_id("primitives.srwlock", &linux).is_some());
        assert!(foreign_id("primitives.srwlock", &win).is_none());
        assert!(foreign_id("split.threads.one.8.yield", &win).is_none());
    }
}
