//! The figures derived from the fork cases: what a larger parent adds, and what each
//! mapping adds.

use super::*;

/// For every fork case above the smallest parent measured: what the larger parent adds; for
/// every fork with mappings: what each mapping adds.
pub(super) fn derived(cases: &[Case]) -> Vec<DerivedSpec> {
    let mut out = over_smallest(cases);
    out.extend(per_mapping(cases));
    out
}

/// Fork with mappings less fork with the parent size they were held beside, per mapping.
fn per_mapping(cases: &[Case]) -> Vec<DerivedSpec> {
    let fork_at = |mib: u64| {
        cases
            .iter()
            .find(|c| c.id == case_id(Op::Fork, None, Some(mib)))
    };
    cases
        .iter()
        .filter_map(|c| {
            let n = c.params.get("mappings")?.as_u64()?;
            let base_mib = c.params.get("base_parent_mib")?.as_u64()?;
            let base = fork_at(base_mib)?;
            let w = 1.0 / n as f64;
            Some(DerivedSpec {
                id: oscost_model::ids::spawn::per_mapping(&c.id),
                description: format!(
                    "fork with {n} one-page shared mappings minus fork without them (parent \
                     holding {base_mib} MiB either way), per mapping: duplicating a mapping \
                     for the child and tearing the child's copy down"
                ),
                terms: vec![(c.id.clone(), w), (base.id.clone(), -w)],
                flagged: engine::failed_checks(c).or_else(|| engine::failed_checks(base)),
            })
        })
        .collect()
}

/// For every fork case above the smallest parent measured: what the larger parent adds.
fn over_smallest(cases: &[Case]) -> Vec<DerivedSpec> {
    let forks: Vec<(&Case, u64)> = cases
        .iter()
        .filter(|c| c.params.get("op").and_then(|v| v.as_str()) == Some("fork"))
        .filter_map(|c| Some((c, c.params.get("parent_mib")?.as_u64()?)))
        .collect();
    let Some(&(small, small_mib)) = forks.iter().min_by_key(|(_, m)| *m) else {
        return Vec::new();
    };
    let pte = |c: &Case| {
        c.counters
            .get("vm_pte_kib")
            .map_or_else(|| "?".to_owned(), |v| format!("{v:.0}"))
    };
    forks
        .iter()
        .filter(|(_, m)| *m > small_mib)
        .map(|&(big, mib)| DerivedSpec {
            id: oscost_model::ids::spawn::over(&big.id, small_mib),
            description: format!(
                "fork with {mib} MiB of touched parent memory minus fork with {small_mib} MiB: \
                 copying the larger parent's page tables (VmPTE {} against {} KiB) and \
                 write-protecting its pages for copy-on-write, and tearing the child's copy \
                 down again",
                pte(big),
                pte(small)
            ),
            terms: vec![(big.id.clone(), 1.0), (small.id.clone(), -1.0)],
            flagged: engine::failed_checks(big).or_else(|| engine::failed_checks(small)),
        })
        .collect()
}
