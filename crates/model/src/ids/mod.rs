//! Case and derived-figure ids, one module per experiment: its name and the builders of its
//! ids, shared by measure, which writes the ids, and report, which reads them back. An id
//! changed here changes on both sides at once; each module's tests hold its builders, its
//! parsers and the ids report names as constants together.
//!
//! Where ids have parts, an `Id` enum (or a `Case` struct) whose `Display` builds the id and
//! whose `parse` reads one back (`None` for an id it never writes); constants for the ids
//! report names (the datasheet's, the bill's); small helpers for the ids measure builds from
//! a case id it already holds. The parts are plain names (as the command line spells them)
//! and numbers, so this crate needs nothing from the measuring layers.

pub mod cgroup;
pub mod fault;
pub mod fs;
pub mod lockring;
pub mod mmap;
pub mod net;
pub mod noise;
pub mod ns;
pub mod poll;
pub mod primitives;
pub mod ring;
pub mod seccomp;
pub mod shootdown;
pub mod signal;
pub mod spawn;
pub mod split;
pub mod switch;
pub mod syscall;
pub mod tick;
pub mod tick_forms;
pub mod timeline;
pub mod uring;
pub mod wakeup;

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
