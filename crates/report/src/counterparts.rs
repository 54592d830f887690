//! Figures of one meaning that carry different ids on different systems. Bradford's csfast5 is
//! a ring of pthread mutexes on Linux and of Critical Sections on Windows (Edward G. Bradford,
//! "Runtime: Context switching", 2002): oscost's `lockring.mutex.*` and the Windows agent's
//! `lockring.cs.*`. Comparing a Windows run with a Linux run of the same machine sets each
//! beside the other, which is the study's own comparison on the reader's hardware.

use oscost_model::ids::lockring::{Id, CRITICAL_SECTION, MUTEX};
use oscost_model::Environment;

/// Whether two runs come from different systems: one from the Windows agent, one from Linux.
pub(crate) fn across_systems(a: &Environment, b: &Environment) -> bool {
    let windows = |e: &Environment| e.os.as_ref().is_some_and(|o| o.family == "windows");
    windows(a) != windows(b)
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
}
