//! Run ids as people see them.

/// The characters of a run id shown in lists and messages; [`History::resolve`] takes them
/// back.
pub fn short_id(run_id: &str) -> &str {
    run_id.get(..8).unwrap_or(run_id)
}
