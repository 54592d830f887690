//! The experiment registry and the report's per-experiment table agree: every registered
//! experiment has an entry (an empty one when it has no views or figures of its own) and every
//! entry names a registered experiment, so renaming or adding an experiment cannot silently
//! drop its tables and figures.

use oscost_measure::experiments::REGISTRY;
use oscost_report::experiments::TABLE;

#[test]
fn every_experiment_has_its_entry_in_the_report_table_and_no_other() {
    let registered: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
    let entries: Vec<&str> = TABLE.iter().map(|e| e.name).collect();
    let missing: Vec<&str> = registered
        .iter()
        .filter(|n| !entries.contains(n))
        .copied()
        .collect();
    let unknown: Vec<&str> = entries
        .iter()
        .filter(|n| !registered.contains(n))
        .copied()
        .collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "crates/report/src/experiments/mod.rs, TABLE: {}{}",
        if missing.is_empty() {
            String::new()
        } else {
            format!(
                "no entry for {} (add one, with `views: &[]` and `plots: &[]` if it has none); ",
                missing.join(", ")
            )
        },
        if unknown.is_empty() {
            String::new()
        } else {
            format!("{} named but not registered", unknown.join(", "))
        }
    );
    assert_eq!(
        entries, registered,
        "crates/report/src/experiments/mod.rs, TABLE: entries in the registry's order"
    );
}
