//! Case and derived-figure ids: for each experiment whose ids have parts, one builder and one
//! parser, shared by measure, which writes the ids, and report, which reads them back. An id
//! changed here changes on both sides at once, and each module's round-trip tests hold the
//! builder and the parser together.
//!
//! Every module has the same shape: an `Id` enum of the ids the experiment writes, whose
//! `Display` builds the id and whose `parse` reads one back (`None` for an id it never writes),
//! and small helpers for the ids measure builds from a case id it already holds.
//! The parts are plain names (as the command line spells them) and numbers, so this crate
//! needs nothing from the measuring layers.

pub mod cgroup;
pub mod fs;
pub mod lockring;
pub mod noise;
pub mod ns;
pub mod ring;
pub mod spawn;
pub mod split;
pub mod switch;
pub mod tick;
pub mod tick_forms;
pub mod timeline;

/// The part of `id` after `<experiment>.`: what sets a case apart within its experiment, or
/// `None` when the id is not the experiment's.
pub fn within<'a>(experiment: &str, id: &'a str) -> Option<&'a str> {
    id.strip_prefix(experiment)?.strip_prefix('.')
}

/// The dot-separated parts of `id` after `<experiment>.`.
fn parts<'a>(experiment: &str, id: &'a str) -> Option<Vec<&'a str>> {
    Some(within(experiment, id)?.split('.').collect())
}

/// The number in `<prefix><digits><suffix>`, only when written as the builders write it (no
/// sign, no leading zero), so that parsing and building give back the same id.
fn number<T: std::str::FromStr + ToString>(part: &str, prefix: &str, suffix: &str) -> Option<T> {
    let digits = part.strip_prefix(prefix)?.strip_suffix(suffix)?;
    let n: T = digits.parse().ok()?;
    (n.to_string() == digits).then_some(n)
}

/// A name part: not empty and without the `.` that separates parts.
fn name(part: &str) -> Option<&str> {
    (!part.is_empty() && !part.contains('.')).then_some(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_strips_the_experiment_and_its_dot_only() {
        assert_eq!(within("ring", "ring.pipe.control"), Some("pipe.control"));
        assert_eq!(within("ring", "ringx.pipe"), None);
        assert_eq!(within("ring", "ring"), None);
    }

    #[test]
    fn numbers_round_trip_only_as_written() {
        assert_eq!(number::<u64>("n12", "n", ""), Some(12));
        assert_eq!(number::<u64>("p64mib", "p", "mib"), Some(64));
        assert_eq!(number::<u64>("n012", "n", ""), None);
        assert_eq!(number::<u64>("n+1", "n", ""), None);
        assert_eq!(number::<u64>("n", "n", ""), None);
    }
}
