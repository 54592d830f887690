//! `signal`: installing a handler, catching a signal, a caught SIGSEGV, and waking a waiting
//! thread or process by a signal.

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Signal.as_str();

/// `signal.catch`: a signal sent to oneself and caught.
pub const CATCH: &str = "signal.catch";
/// `signal.wake.same`: waking a thread waiting in the process, on the same CPU.
pub const WAKE_SAME: &str = "signal.wake.same";
/// `signal.wake.cross`: the same on another CPU.
pub const WAKE_CROSS: &str = "signal.wake.cross";
/// `signal.wake.process.same`: waking another process, on the same CPU.
pub const WAKE_PROCESS_SAME: &str = "signal.wake.process.same";
/// `signal.wake.process.cross`: the same on another CPU.
pub const WAKE_PROCESS_CROSS: &str = "signal.wake.process.cross";

/// `signal.<kind>`: a kind that is neither a wake nor named above, as the command line spells
/// it.
pub fn case(kind: &str) -> String {
    format!("{NAME}.{kind}")
}

/// `<case>.one_way`: derived, a wake's round trip halved.
pub fn one_way(case: &str) -> String {
    format!("{case}.one_way")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_is_the_experiments() {
        for c in [
            CATCH,
            WAKE_SAME,
            WAKE_CROSS,
            WAKE_PROCESS_SAME,
            WAKE_PROCESS_CROSS,
        ] {
            assert!(super::super::within(NAME, c).is_some(), "{c}");
        }
        assert_eq!(case("catch"), CATCH);
        assert_eq!(one_way(WAKE_CROSS), "signal.wake.cross.one_way");
    }
}
