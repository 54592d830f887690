//! `ring` against the number of tasks: the time of one hop, and the derived cost of one
//! switch (the hop less the primitive's own post + wait, per switch the kernel counted). A
//! cost that rises with N is the caches and the run queue; a flat one is the switch itself.

use super::chart::{Axis, Fit, Header, Key, Line, Panel, Point, Reference, Style, Unit};
use super::Plot;
use crate::format::fmt_ns;
use oscost_model::ids::ring;
use oscost_model::{CaseResult, ExperimentResult};

fn param_u64(c: &CaseResult, key: &str) -> Option<u64> {
    c.params.get(key).and_then(|v| v.as_u64())
}

fn param_str<'a>(c: &'a CaseResult, key: &str) -> Option<&'a str> {
    c.params.get(key).and_then(|v| v.as_str())
}

/// What sets a ring's cases apart besides N: (via, kind, tokens, KiB touched, placement).
type Group = (String, String, u64, u64, String);

fn group(c: &CaseResult) -> Option<Group> {
    Some((
        param_str(c, "via")?.to_owned(),
        param_str(c, "kind")?.to_owned(),
        param_u64(c, "tokens").unwrap_or(1),
        param_u64(c, "size_kib").unwrap_or(0),
        param_str(c, "placement").unwrap_or("same").to_owned(),
    ))
}

/// A group's legend text: via and kind, and the rest only where the groups differ or leave
/// the one-token, nothing-touched, one-CPU default.
fn label(g: &Group, all: &[Group]) -> String {
    let mut l = format!("{}, {}", g.0, g.1);
    if all.iter().any(|o| o.2 != 1) {
        l += &format!(", {} token{}", g.2, if g.2 == 1 { "" } else { "s" });
    }
    if all.iter().any(|o| o.3 != 0) {
        l += &format!(", {} KiB", g.3);
    }
    if all.iter().any(|o| o.4 != all[0].4) || g.4 != "same" {
        l += &format!(", {}", g.4);
    }
    l
}

/// A case of a known ring size: (case, N, group).
type Member<'a> = (&'a CaseResult, u64, Group);

/// The hop-time and per-switch figure, when any case is a ring of a known size.
pub fn plots(e: &ExperimentResult) -> Vec<Plot> {
    let cases: Vec<Member> = e
        .cases
        .iter()
        .filter_map(|c| Some((c, param_u64(c, "tasks")?, group(c)?)))
        .collect();
    let mut groups: Vec<Group> = Vec::new();
    for (_, _, g) in &cases {
        if !groups.contains(g) {
            groups.push(g.clone());
        }
    }
    if cases.is_empty() {
        return Vec::new();
    }
    let mut hops = Vec::new();
    let mut switches = Vec::new();
    let mut flagged = false;
    for (i, g) in groups.iter().enumerate() {
        let name = label(g, &groups);
        let mut members: Vec<&Member> = cases.iter().filter(|c| &c.2 == g).collect();
        members.sort_by_key(|c| c.1);
        let hop = hop_points(&members);
        let per = switch_points(e, &members);
        flagged |= per.iter().any(|p| p.hollow);
        flagged |= hop.iter().any(|p| p.hollow);
        hops.push(Line {
            label: name.clone(),
            style: Style::nth(i),
            points: hop,
        });
        if !per.is_empty() {
            switches.push(Line {
                label: name,
                style: Style::nth(i),
                points: per,
            });
        }
    }
    let controls = controls(e, &groups);
    let ns: Vec<f64> = cases.iter().map(|c| c.1 as f64).collect();
    let panels = panels(&ns, &hops, switches, &controls);
    let mut keys: Vec<Key> = hops
        .iter()
        .map(|l| Key::Series(l.label.clone(), l.style))
        .collect();
    keys.extend(
        controls
            .iter()
            .map(|r| Key::Level(r.label.clone(), r.colour, r.dash)),
    );
    if flagged {
        keys.push(Key::Hollow(
            "hollow: a check failed or the figure is flagged".into(),
        ));
    }
    let header = Header::new(
        &format!("{}: time per hop and per switch against N", e.name),
        &[
            "Per switch: the hop less the primitive's own post + wait, divided by the switches \
           the kernel counted per hop. Whiskers: 95 % confidence intervals."
                .to_owned(),
        ],
    );
    vec![Plot {
        name: format!("{}.hops", e.name),
        svg: super::chart::grid(&header, &panels, 2, 230.0, &keys),
    }]
}

/// One group's time per hop at each N, hollow where a check failed.
fn hop_points(members: &[&Member]) -> Vec<Point> {
    members
        .iter()
        .map(|(c, n, _)| Point {
            x: *n as f64,
            y: c.median_ns,
            ci: Some(c.ci95_ns),
            hollow: !c.checks_passed,
            tip: format!(
                "{}: {} per hop (95 % CI {} to {})",
                c.id,
                fmt_ns(c.median_ns),
                fmt_ns(c.ci95_ns[0]),
                fmt_ns(c.ci95_ns[1])
            ),
        })
        .collect()
}

/// One group's derived cost per switch at each N that has one, hollow where it is flagged.
fn switch_points(e: &ExperimentResult, members: &[&Member]) -> Vec<Point> {
    members
        .iter()
        .filter_map(|(c, n, _)| {
            let id = ring::derived(&c.id, ring::Derived::PerSwitch);
            let d = e.derived.iter().find(|d| d.id == id)?;
            Some(Point {
                x: *n as f64,
                y: d.estimate_ns,
                ci: Some(d.ci95_ns),
                hollow: d.flagged.is_some(),
                tip: format!(
                    "{}: {} per switch (95 % CI {} to {}){}",
                    d.id,
                    fmt_ns(d.estimate_ns),
                    fmt_ns(d.ci95_ns[0]),
                    fmt_ns(d.ci95_ns[1]),
                    d.flagged
                        .as_deref()
                        .map_or(String::new(), |f| format!("; flagged: {f}"))
                ),
            })
        })
        .collect()
}

/// Each primitive's post + wait in one task: the part of a hop that is no switch.
fn controls(e: &ExperimentResult, groups: &[Group]) -> Vec<Reference> {
    let mut vias: Vec<&str> = groups.iter().map(|g| g.0.as_str()).collect();
    vias.dedup();
    vias.iter()
        .filter_map(|via| {
            let id = ring::Id::Control { via }.to_string();
            let c = e.cases.iter().find(|c| c.id == id)?;
            Some(Reference {
                label: format!("{via}: post + wait in one task (no switch)"),
                y: c.median_ns,
                band: None,
                colour: "#666666",
                dash: "6 3",
            })
        })
        .collect()
}

/// The hop panel with the controls as levels, and the per-switch panel when any switch cost
/// was derived, on one axis of N.
fn panels(ns: &[f64], hops: &[Line], switches: Vec<Line>, controls: &[Reference]) -> Vec<Panel> {
    let x = Axis::fit("tasks in the ring (N)", Unit::Plain, ns, Fit::AtData);
    let values = |lines: &[Line], refs: &[Reference]| -> Vec<f64> {
        super::marks::values(lines)
            .into_iter()
            .chain(refs.iter().map(|r| r.y))
            .collect()
    };
    let mut panels = vec![Panel {
        title: "time per hop (median, 95 % CI)".into(),
        x: x.clone(),
        y: Axis::fit(
            "time per hop",
            Unit::Ns,
            &values(hops, controls),
            Fit::Auto { zero: true },
        ),
        lines: hops.to_vec(),
        refs: controls.to_vec(),
        bars: Vec::new(),
    }];
    if !switches.is_empty() {
        panels.push(Panel {
            title: "cost of one switch (derived)".into(),
            x,
            y: Axis::fit(
                "time per switch",
                Unit::Ns,
                &values(&switches, &[]),
                Fit::Auto { zero: true },
            ),
            lines: switches,
            refs: Vec::new(),
            bars: Vec::new(),
        });
    }
    panels
}
