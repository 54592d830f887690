//! The references, one entry each: which C program in `benches/` holds which oscost
//! experiment, with which arguments, on which CPUs. Adding a reference is adding an entry, in
//! the file of its family.

mod io;
mod machine;
mod memory;
mod peers;
mod process;
mod wakeup;
mod wakeup_split;

use super::entry::Entry;

/// Every entry, in `--list` order.
pub const ENTRIES: &[Entry] = &[
    io::SIGNAL,
    io::NET,
    io::SWITCH,
    io::URING,
    process::SECCOMP,
    memory::SHOOTDOWN,
    io::POLL,
    io::LOCKRING,
    io::FS,
    memory::MMAP,
    memory::FAULT,
    process::NS,
    process::CGROUP,
    process::SPAWN,
    machine::CONTROLS,
    machine::NOISE,
    machine::TICK,
    machine::TIMELINE,
    machine::SPLIT,
    machine::TICK_FORMS,
    peers::PERF_SWITCH,
    peers::CYCLICTEST,
    wakeup::WAKEUP,
    peers::LMBENCH_NET,
    peers::NOISE_PERF,
    wakeup_split::ON_OSCOST,
    wakeup_split::ON_CYCLICTEST,
];

/// The entry called `name`.
pub fn find(name: &str) -> Option<&'static Entry> {
    ENTRIES.iter().find(|e| e.name == name)
}

/// The figure `id` of a round's figures.
fn value(figures: &[(String, f64)], id: &str) -> Option<f64> {
    figures.iter().find(|(i, _)| i == id).map(|&(_, v)| v)
}

/// `(id, value)` pairs as a round's figures, for the families' tests.
#[cfg(test)]
fn figures(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
    pairs.iter().map(|&(i, v)| (i.to_string(), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::entry::Reference;
    use super::*;

    #[test]
    fn names_are_unique_and_every_source_exists() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        for (k, e) in ENTRIES.iter().enumerate() {
            assert!(
                ENTRIES[..k].iter().all(|o| o.name != e.name),
                "{} twice",
                e.name
            );
            let source = match e.reference {
                Reference::C(source) => Some(source),
                Reference::Tool(_) => None,
            };
            for source in source.into_iter().chain(e.helpers.iter().map(|h| h.source)) {
                assert!(
                    std::path::Path::new(root).join(source).is_file(),
                    "{}: no {source}",
                    e.name
                );
            }
            assert!(!e.name.is_empty() && !e.about.is_empty(), "{k}: unnamed");
            assert!(!e.runs.is_empty(), "{}: no run", e.name);
            // A C reference runs its program, a peer tool its steps: never the other's.
            for run in e.runs.iter().chain(e.alternate) {
                assert_eq!(source.is_some(), !run.c.is_empty(), "{}", e.name);
                assert_eq!(source.is_none(), !run.tool.is_empty(), "{}", e.name);
            }
            if source.is_none() {
                assert!(e.cflags.is_empty() && e.helpers.is_empty(), "{}", e.name);
                assert!(
                    e.alternate.is_empty(),
                    "{}: a peer tool cannot alternate",
                    e.name
                );
            }
            assert!(!e.read.is_empty(), "{}: reads nothing of oscost's", e.name);
        }
        assert!(matches!(
            find("net").map(|e| e.reference),
            Some(Reference::C("benches/net_ref.c"))
        ));
        assert!(find("nothing").is_none());
    }
}
