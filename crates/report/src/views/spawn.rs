//! `spawn`: each way of creating a process against the parent's memory, and fork against the
//! page tables it copies.

use super::View;
use crate::format::fmt_ns;
use oscost_model::ids::spawn::{Case, Id};
use oscost_model::{CaseResult, ExperimentResult};

/// The views of a `spawn` result.
pub fn views(e: &ExperimentResult) -> Vec<View> {
    by_parent(e)
        .into_iter()
        .chain(page_tables(e))
        .chain(mappings(e))
        .collect()
}

/// Fork against the number of one-page mappings the parent holds, with what each adds.
fn mappings(e: &ExperimentResult) -> Option<View> {
    let rows: Vec<Vec<String>> = e
        .cases
        .iter()
        .filter_map(|c| Some((c, c.params.get("mappings")?.as_u64()?)))
        .map(|(c, n)| {
            let per = oscost_model::ids::spawn::per_mapping(&c.id);
            let per = e.derived.iter().find(|d| d.id == per);
            let (over, each) = match per {
                Some(d) => (
                    fmt_ns(d.estimate_ns * n as f64),
                    format!(
                        "{}{}",
                        fmt_ns(d.estimate_ns),
                        if d.flagged.is_some() {
                            " (flagged)"
                        } else {
                            ""
                        }
                    ),
                ),
                None => (String::new(), String::new()),
            };
            vec![
                n.to_string(),
                c.counters
                    .get("map_count")
                    .map_or_else(String::new, |m| format!("{m:.0}")),
                fmt_ns(c.median_ns),
                over,
                each,
            ]
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    Some(View {
        detail: Vec::new(),
        title: "fork against the parent's mappings (median)".into(),
        head: [
            "mappings",
            "map count",
            "fork",
            "over fork without",
            "per mapping",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes: vec![
            "Each mapping is one page of shared anonymous memory, written once; \"map count\" \
             is the lines of /proc/self/maps while it forked. A fork duplicates every mapping \
             for the child (shared pages need no page-table copy), and the child's exit tears \
             them down. \"per mapping\" is the fork less the fork without them, divided by \
             their number."
                .into(),
        ],
    })
}

/// `spawn.fork.p64mib` → (the creation `spawn.fork`, 64).
fn split_id(id: &str) -> Option<(Case<'_>, u64)> {
    match Id::parse(id)? {
        Id::Case(c) => Some((
            Case {
                parent_mib: None,
                ..c
            },
            c.parent_mib?,
        )),
        Id::Over { .. } | Id::PerMapping(_) => None,
    }
}

fn parent_mib(c: &CaseResult) -> Option<u64> {
    c.params.get("parent_mib")?.as_u64()
}

fn op_of(c: &CaseResult) -> Option<&str> {
    c.params.get("op")?.as_str()
}

/// Median per creation of every process op (rows) at every parent size (columns).
fn by_parent(e: &ExperimentResult) -> Option<View> {
    let mut sizes: Vec<u64> = Vec::new();
    let mut ops: Vec<Case> = Vec::new();
    let ids = e
        .cases
        .iter()
        .map(|c| c.id.as_str())
        .chain(e.unavailable.iter().map(|u| u.id.as_str()));
    for (op, mib) in ids.filter_map(split_id) {
        if !sizes.contains(&mib) {
            sizes.push(mib);
        }
        if !ops.contains(&op) {
            ops.push(op);
        }
    }
    if sizes.len() < 2 {
        return None;
    }
    sizes.sort_unstable();
    let mut head = vec!["creation".to_owned()];
    head.extend(sizes.iter().map(|m| format!("{m} MiB")));
    let rows = ops
        .iter()
        .map(|op| {
            let mut row = vec![op.operation()];
            row.extend(sizes.iter().map(|m| {
                let id = Case {
                    parent_mib: Some(*m),
                    ..*op
                }
                .to_string();
                if let Some(c) = e.cases.iter().find(|c| c.id == id) {
                    fmt_ns(c.median_ns)
                } else if e.unavailable.iter().any(|u| u.id == id) {
                    "not measured".to_owned()
                } else {
                    String::new()
                }
            }));
            row
        })
        .collect();
    Some(View {
        detail: Vec::new(),
        title: "creation + wait against the parent's touched memory (median)".into(),
        head,
        rows,
        notes: vec![
            "fork and fork + execve copy the parent's page tables; vfork and posix_spawn share \
             the parent's memory until the child exits or execs, so they stay flat."
                .into(),
        ],
    })
}

/// Fork against the page tables of the parent, each size against the smallest.
fn page_tables(e: &ExperimentResult) -> Option<View> {
    let mut forks: Vec<(&CaseResult, u64)> = e
        .cases
        .iter()
        .filter(|c| op_of(c) == Some("fork"))
        .filter_map(|c| Some((c, parent_mib(c)?)))
        .collect();
    if forks.len() < 2 {
        return None;
    }
    forks.sort_by_key(|(_, m)| *m);
    let (base, base_mib) = forks[0];
    let counter = |c: &CaseResult, k: &str| c.counters.get(k).copied();
    let rows = forks
        .iter()
        .map(|&(c, mib)| {
            let vfork = e
                .cases
                .iter()
                .find(|v| op_of(v) == Some("vfork") && parent_mib(v) == Some(mib))
                .map_or_else(String::new, |v| fmt_ns(v.median_ns));
            let mut row = vec![
                format!("{mib} MiB"),
                counter(c, "rss_kib")
                    .map_or_else(String::new, |k| format!("{:.1} MiB", k / 1024.0)),
                counter(c, "vm_pte_kib").map_or_else(String::new, |k| format!("{k:.0} KiB")),
                fmt_ns(c.median_ns),
                vfork,
            ];
            let extra = c.median_ns - base.median_ns;
            let pte = counter(c, "vm_pte_kib")
                .zip(counter(base, "vm_pte_kib"))
                .map(|(a, b)| a - b);
            if mib == base_mib {
                row.extend([String::new(), String::new(), String::new()]);
            } else {
                row.push(fmt_ns(extra));
                row.push(match pte {
                    Some(d) if d > 0.0 => fmt_ns(extra / d),
                    _ => "-".into(),
                });
                // Pages of 4 KiB the larger parent touched beyond the smallest.
                let pages = (mib - base_mib) as f64 * 256.0;
                row.push(fmt_ns(extra / pages));
            }
            row
        })
        .collect();
    Some(View {
        detail: Vec::new(),
        title: "fork and the parent's page tables".into(),
        head: [
            "parent memory",
            "RSS",
            "VmPTE",
            "fork",
            "vfork",
            "over smallest",
            "per KiB of page tables",
            "per 4 KiB touched",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes: vec![format!(
            "RSS and VmPTE are the parent's (/proc/self/status) while it forked. \"over smallest\" \
             is the fork median minus the one at {base_mib} MiB: the page-table entries copied \
             and write-protected, and torn down again when the child exits; divided by the \
             extra page tables and by the extra 4 KiB pages touched."
        )],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::testkit;
    use oscost_model::schema::UnavailableCase;

    fn case(id: &str, op: &str, mib: u64, median: f64, pte: f64) -> CaseResult {
        let mut c = testkit::case(id, "creation", median);
        c.params.insert("op".into(), op.into());
        c.params.insert("parent_mib".into(), mib.into());
        c.counters.insert("vm_pte_kib".into(), pte);
        c.counters.insert("rss_kib".into(), (mib * 1024) as f64);
        c
    }

    #[test]
    fn fork_is_read_against_its_mappings() {
        let mut maps = testkit::case("spawn.fork.maps6000", "creation", 7_100_000.0);
        maps.params.insert("op".into(), "fork".into());
        maps.params.insert("mappings".into(), 6000.into());
        maps.counters.insert("map_count".into(), 6040.0);
        let mut e = ExperimentResult {
            name: "spawn".into(),
            params: Default::default(),
            cases: vec![case("spawn.fork.p1mib", "fork", 1, 100_000.0, 100.0), maps],
            unavailable: vec![],
            derived: vec![],
            warnings: vec![],
            notes: vec![],
            load: None,
            controls: None,
        };
        let v = views(&e);
        assert_eq!(v.len(), 1, "no derived figure yet: the row without it");
        assert_eq!(v[0].rows, [["6000", "6040", "7.100 ms", "", ""]]);
        let d: oscost_model::schema::DerivedResult = serde_json::from_value(serde_json::json!({
            "id": "spawn.fork.maps6000.per_mapping",
            "description": "",
            "terms": [],
            "estimate_ns": 1166.0,
            "ci95_ns": [1150.0, 1180.0],
            "estimate_cycles": 0.0,
            "flagged": null,
        }))
        .unwrap();
        e.derived.push(d);
        let v = views(&e);
        assert_eq!(v[0].rows[0][3..], ["6.996 ms", "1.166 µs"]);
    }

    #[test]
    fn fork_is_read_against_the_page_tables() {
        let e = ExperimentResult {
            name: "spawn".into(),
            params: Default::default(),
            cases: vec![
                case("spawn.fork.p1mib", "fork", 1, 100_000.0, 100.0),
                case("spawn.vfork.p1mib", "vfork", 1, 10_000.0, 100.0),
                case("spawn.fork.p1025mib", "fork", 1025, 12_388_608.0, 2148.0),
                case("spawn.vfork.p1025mib", "vfork", 1025, 10_000.0, 2148.0),
            ],
            unavailable: vec![UnavailableCase {
                id: "spawn.fork-exec.static.p1025mib".into(),
                description: String::new(),
                reason: "x".into(),
            }],
            derived: vec![],
            warnings: vec![],
            notes: vec![],
            load: None,
            controls: None,
        };
        let v = views(&e);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].head, ["creation", "1 MiB", "1025 MiB"]);
        assert_eq!(v[0].rows[0], ["fork", "100.0 µs", "12.39 ms"]);
        assert_eq!(v[0].rows[2], ["fork-exec.static", "", "not measured"]);
        let big = &v[1].rows[1];
        assert_eq!(big[0], "1025 MiB");
        assert_eq!(big[2], "2148 KiB");
        assert_eq!(big[4], "10.00 µs");
        // 12.288608 ms over 2048 KiB of page tables, over 262144 pages.
        assert_eq!(big[5], "12.29 ms");
        assert_eq!(big[6], "6.000 µs");
        assert_eq!(big[7], "46.88 ns");
        let one = ExperimentResult {
            cases: e.cases[..2].to_vec(),
            unavailable: vec![],
            ..e
        };
        assert!(views(&one).is_empty());
    }
}
