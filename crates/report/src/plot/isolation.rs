//! `ns` and `cgroup`: what a container's parts add to a program. A point per namespace kind
//! (or cgroup case) at its median cost over the plain child (or the plain round trip), with its
//! interval: the derived `…over_none`, `…over_fork` and `…over_same` figures, on a log axis
//! when they span decades (a UTS namespace costs microseconds, a network one hundreds).

use super::chart::{self, Axis, Fit, Header, Key, Line, Panel, Point, Style, Unit};
use super::Plot;
use crate::format;
use oscost_model::{DerivedResult, ExperimentResult};

/// One panel: its title and the derived figures drawn, as (label, derived id suffix).
struct Part<'a> {
    title: &'a str,
    items: Vec<(String, &'a DerivedResult)>,
}

/// The derived figures of `e` whose id ends with `suffix`, labelled by what lies between the
/// experiment's name and the suffix, in the experiment's order.
fn over<'a>(e: &'a ExperimentResult, suffix: &str) -> Vec<(String, &'a DerivedResult)> {
    e.derived
        .iter()
        .filter_map(|d| {
            let label =
                d.id.strip_prefix(&format!("{}.", e.name))?
                    .strip_suffix(suffix)?;
            Some((label.to_owned(), d))
        })
        .collect()
}

/// A panel of points with whiskers, one per item, and whether any was flagged.
fn panel(part: &Part) -> (Panel, bool) {
    let mut flagged = false;
    let mut ys = Vec::new();
    let points: Vec<Point> = part
        .items
        .iter()
        .enumerate()
        .map(|(i, (label, d))| {
            flagged |= d.flagged.is_some();
            ys.push(d.estimate_ns);
            ys.extend(d.ci95_ns);
            Point {
                x: (i + 1) as f64,
                y: d.estimate_ns,
                ci: Some(d.ci95_ns),
                hollow: d.flagged.is_some(),
                tip: format!(
                    "{label}: +{} (95 % CI {} to {})",
                    format::time(d.estimate_ns),
                    format::time(d.ci95_ns[0]),
                    format::time(d.ci95_ns[1])
                ),
            }
        })
        .collect();
    let mut x = Axis::fit(
        "case",
        Unit::Plain,
        &[0.0, (part.items.len() + 1) as f64],
        Fit::Linear { zero: true },
    );
    x.ticks = part
        .items
        .iter()
        .enumerate()
        .map(|(i, (label, _))| ((i + 1) as f64, label.clone()))
        .collect();
    let line = Line {
        label: "median, 95 % confidence interval".into(),
        style: Style::nth(0).points(3.0),
        points,
    };
    (
        Panel {
            title: part.title.to_owned(),
            x,
            y: Axis::fit("time added", Unit::Ns, &ys, Fit::Auto { zero: true }),
            lines: vec![line],
            refs: Vec::new(),
            bars: Vec::new(),
        },
        flagged,
    )
}

/// The figure of `parts`, or none when no part has a point.
fn figure(
    e: &ExperimentResult,
    name: &str,
    title: &str,
    notes: &[String],
    parts: &[Part],
) -> Vec<Plot> {
    let parts: Vec<&Part> = parts.iter().filter(|p| !p.items.is_empty()).collect();
    if parts.is_empty() {
        return Vec::new();
    }
    let mut flagged = false;
    let panels: Vec<Panel> = parts
        .iter()
        .map(|p| {
            let (panel, f) = panel(p);
            flagged |= f;
            panel
        })
        .collect();
    let mut keys = vec![Key::Series(
        "median, 95 % confidence interval".into(),
        Style::nth(0).points(3.0),
    )];
    if flagged {
        keys.push(Key::Hollow("hollow: a check failed".into()));
    }
    let header = Header::new(&format!("{}: {title}", e.name), notes);
    vec![Plot {
        name: format!("{}.{name}", e.name),
        svg: chart::grid(&header, &panels, panels.len(), 280.0, &keys),
    }]
}

/// The ns figure: each namespace kind's cost over the bare child.
pub fn ns_plots(e: &ExperimentResult) -> Vec<Plot> {
    let mut notes = vec![
        "Each point: a child that makes the namespace, ends and is waited for, less the same \
         child with none (ns.none), medians of interleaved rounds. A network namespace's last \
         steps run later on a kernel worker and are not in its figure."
            .to_owned(),
    ];
    let in_user = over(e, ".in-user.over_user");
    if !in_user.is_empty() {
        notes.push(
            "Made inside a new user namespace (no CAP_SYS_ADMIN): each over the user namespace \
             alone."
                .to_owned(),
        );
    }
    let parts = [
        Part {
            title: "added to a child's life (median over the bare child)",
            items: over(e, ".over_none"),
        },
        Part {
            title: "inside a user namespace (over the user namespace alone)",
            items: in_user,
        },
    ];
    figure(e, "over-none", "what each namespace adds", &notes, &parts)
}

/// The cgroup figure: creating a task in a new cgroup over a plain fork, and a round trip
/// across cgroups over one inside a cgroup.
pub fn cgroup_plots(e: &ExperimentResult) -> Vec<Plot> {
    let notes = vec![
        "Creation: the child's whole life less a plain fork-like child's. Switching: a pipe \
         round trip between two processes on one CPU in sibling cgroups with the CPU \
         controller, less the same in one cgroup. Medians of interleaved rounds."
            .to_owned(),
    ];
    let parts = [
        Part {
            title: "created in a new cgroup (over a plain fork)",
            items: over(e, ".over_fork"),
        },
        Part {
            title: "a round trip across cgroups (over one)",
            items: over(e, ".over_same"),
        },
    ];
    figure(e, "over-plain", "what a cgroup adds", &notes, &parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn derived(id: &str, ns: f64, flagged: bool) -> DerivedResult {
        DerivedResult {
            id: id.into(),
            description: String::new(),
            terms: Vec::new(),
            estimate_ns: ns,
            ci95_ns: [ns * 0.9, ns * 1.1],
            estimate_cycles: ns,
            flagged: flagged.then(|| "refused".to_owned()),
            warnings: Vec::new(),
        }
    }

    fn result(name: &str, derived: Vec<DerivedResult>) -> ExperimentResult {
        serde_json::from_value(serde_json::json!({
            "name": name, "params": {}, "cases": [], "unavailable": [], "derived": derived,
            "warnings": [], "load": null,
        }))
        .expect("an experiment result")
    }

    #[test]
    fn a_point_per_namespace_kind_on_a_log_axis_labelled_by_kind() {
        let e = result(
            "ns",
            vec![
                derived("ns.uts.over_none", 6e3, false),
                derived("ns.net.over_none", 4.4e5, true),
                derived("ns.container.over_none", 5.2e5, false),
            ],
        );
        let plots = ns_plots(&e);
        assert_eq!(plots.len(), 1);
        assert_eq!(plots[0].name, "ns.over-none");
        let svg = &plots[0].svg;
        roxmltree::Document::parse(svg).expect("valid XML");
        for label in ["uts", "net", "container", "hollow: a check failed"] {
            assert!(svg.contains(label), "{label}");
        }
        assert!(!svg.contains("inside a user namespace"), "no empty panel");
    }

    #[test]
    fn cgroup_draws_creation_and_switching_and_nothing_without_figures() {
        let e = result(
            "cgroup",
            vec![
                derived("cgroup.fork-procs.over_fork", 2e4, false),
                derived("cgroup.clone3.over_fork", 7.6e3, false),
                derived("cgroup.pipe.cross.over_same", 571.0, false),
            ],
        );
        let svg = &cgroup_plots(&e)[0].svg;
        for label in ["fork-procs", "clone3", "pipe.cross", "across cgroups"] {
            assert!(svg.contains(label), "{label}");
        }
        assert!(!svg.contains("hollow"));
        assert!(cgroup_plots(&result("cgroup", Vec::new())).is_empty());
    }
}
