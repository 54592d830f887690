//! `switch`'s traced passes as stacked bars: one bar per traced case, a one-way hand-over
//! split into its stages by the kernel's events, with the one-way time the loop timed while
//! traced marked across it.

use super::chart::Unit;
use super::stacked;
use super::Plot;
use crate::views::switch::{is_stages, label, stages};
use oscost_model::ExperimentResult;

/// The figure, when the run traced any case.
pub fn plots(e: &ExperimentResult) -> Vec<Plot> {
    let rows: Vec<stacked::Row> = e
        .cases
        .iter()
        .filter(|c| is_stages(c) && c.counters.contains_key("stages_sum_ns"))
        .map(|c| stacked::Row {
            label: label(c),
            parts: stages(c)
                .into_iter()
                .filter_map(|(k, l)| Some((l, *c.counters.get(&format!("stage.{k}.mean_ns"))?)))
                .collect(),
            mark: c.counters.get("traced_one_way_ns").copied(),
        })
        .collect();
    if rows.is_empty() {
        return Vec::new();
    }
    let svg = stacked::figure(
        &format!(
            "{}: a one-way hand-over taken apart by the kernel's events",
            e.name
        ),
        &[
            "One bar per traced case (a second ping-pong, apart from the timed one): the mean \
             time of each stage of a one-way hand-over by the kernel's timestamps, from the \
             switch into a task to the switch out of it. Dashed: half the round trip the loop \
             timed while traced; tracing itself slows the round trip (see the table)."
                .to_owned(),
        ],
        "time per one-way hand-over",
        Unit::Ns,
        &rows,
    );
    vec![Plot {
        name: format!("{}.stages", e.name),
        svg,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::switch::tests::{experiment, traced};

    #[test]
    fn a_bar_per_traced_case_with_its_stages_and_the_measured_mark() {
        let e = experiment(vec![
            traced("pipe", [750.0, 2500.0, 650.0, 3900.0], 7624.0, true),
            traced("eventfd", [700.0, 2400.0, 570.0, 3700.0], 7300.0, true),
        ]);
        let p = plots(&e);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].name, "switch.stages");
        let svg = &p[0].svg;
        assert!(svg.contains("pipe threads same") && svg.contains("eventfd threads same"));
        for l in ["switch to return to user", "wake-up to switch", "measured"] {
            assert!(svg.contains(l), "{l} missing");
        }
        assert!(plots(&experiment(vec![])).is_empty());
    }
}
