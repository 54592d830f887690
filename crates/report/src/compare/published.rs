//! A run beside a study's published figures, or two studies beside each other: ratios, no
//! verdict.

use super::*;

fn citation(p: &PublishedDoc) -> PublishedSide {
    let machine = [
        Some(p.machine.os.clone()),
        p.machine.cpu.clone(),
        p.machine
            .cpus
            .map(|n| format!("{n} CPU{}", if n == 1 { "" } else { "s" })),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    PublishedSide {
        name: p.name.clone(),
        citation: crate::baselines::full_citation(&p.citation),
        machine,
    }
}

fn published_value(f: &oscost_model::PublishedFigure) -> String {
    format!("{} {}", crate::format::plain(f.value), f.unit)
}

/// `v` in unit `from` expressed in unit `to`, when they measure the same kind of thing.
fn convert(v: f64, from: &str, to: &str) -> Option<f64> {
    let ns = |u: &str| match u {
        "ns" => Some(1.0),
        "us" | "µs" => Some(1e3),
        "ms" => Some(1e6),
        "s" => Some(1e9),
        _ => None,
    };
    if from == to {
        return Some(v);
    }
    Some(v * ns(from)? / ns(to)?)
}

/// Today's figures beside a study's. `measured_first`: the measured run is the baseline.
pub(super) fn published_pair(
    c: &mut Comparison,
    p: &PublishedDoc,
    m: &ResultDoc,
    measured_first: bool,
) {
    let side = citation(p);
    let kernel = |e: &Environment| {
        format!(
            "{} ({})",
            e.system(),
            e.cpu_model.as_deref().unwrap_or("CPU unknown")
        )
    };
    let (pub_text, today) = (
        format!("{} (as published)", side.machine),
        kernel(&m.environment),
    );
    c.environment.push(if measured_first {
        EnvDiff {
            field: "machine".into(),
            baseline: today,
            other: pub_text,
        }
    } else {
        EnvDiff {
            field: "machine".into(),
            baseline: pub_text,
            other: today,
        }
    });
    c.published = Some(side);
    let figs = figures(m);
    let by_id: BTreeMap<&str, &Measured> = figs.iter().map(|(id, f)| (*id, f)).collect();
    let study_figs = crate::study::all_figures(m);
    for f in &p.figures {
        if let Some(id) = f.case_id.as_deref().filter(|id| id.starts_with("study.")) {
            study_row(c, f, id, &study_figs);
            continue;
        }
        let found = f
            .case_id
            .as_deref()
            .and_then(|id| by_id.get(id).map(|m| (id, m)));
        let (Some(per_op), Some((id, m))) = (f.per_op_ns, found) else {
            let why = match (&f.case_id, f.per_op_ns, found) {
                (None, _, _) => {
                    let why = f
                        .mapping_note
                        .clone()
                        .unwrap_or_else(|| "no oscost case measures the same thing".into());
                    match &f.nearest {
                        Some(n) => format!("{why}; nearest on Linux: {n}"),
                        None => why,
                    }
                }
                // A figure only another system measures (the Windows agent's Win32 locks)
                // keeps its note and nearest figure here, as an unmapped one does.
                (Some(id), _, None) => match (&f.mapping_note, &f.nearest) {
                    (Some(n), Some(near)) => {
                        format!("{id} is not in this result: {n}; nearest on Linux: {near}")
                    }
                    _ => format!("{id} is not in this result"),
                },
                (Some(id), None, Some(_)) => format!(
                    "not a time per operation, so not set beside {id}{}",
                    f.mapping_note
                        .as_ref()
                        .map(|n| format!(": {n}"))
                        .unwrap_or_default()
                ),
                (Some(_), Some(_), Some(_)) => unreachable!("handled above"),
            };
            c.unmatched_published.push(Unmatched {
                id: f.id.clone(),
                value: published_value(f),
                meaning: f.meaning.clone(),
                why,
            });
            continue;
        };
        let (today, unit, ok) = match m {
            Measured::Case(x) => (
                Figure {
                    median_ns: x.median_ns,
                    ci95_ns: Some(x.ci95_ns),
                    samples: x.samples,
                    checks_passed: x.checks_passed,
                },
                x.unit.clone(),
                x.checks_passed,
            ),
            Measured::Derived(d) => (
                Figure {
                    median_ns: d.estimate_ns,
                    ci95_ns: Some(d.ci95_ns),
                    samples: 0,
                    checks_passed: d.flagged.is_none(),
                },
                "op".into(),
                d.flagged.is_none(),
            ),
        };
        let published = Figure {
            median_ns: per_op,
            ci95_ns: None,
            samples: 0,
            checks_passed: true,
        };
        let (a, b) = if measured_first {
            (today, published)
        } else {
            (published, today)
        };
        let mut note = format!("{} = {}: {}", f.id, published_value(f), f.meaning);
        if let Some(n) = &f.mapping_note {
            note += &format!(" ({n})");
        }
        if !ok {
            note += "; today's mechanism check failed";
        }
        c.rows.push(Row {
            id: id.to_string(),
            kind: "published",
            unit,
            diff_ns: b.median_ns - a.median_ns,
            diff_pct: pct(a.median_ns, b.median_ns),
            ratio: (a.median_ns > 0.0).then(|| b.median_ns / a.median_ns),
            ratio_ci95: None,
            mann_whitney_p: None,
            mann_whitney_q: None,
            verdict: Verdict::NotMeasuredHere,
            at_rate: at_rate(a.median_ns, b.median_ns, c.settings),
            note: Some(note),
            baseline: a,
            other: b,
            net: None,
        });
    }
}

/// Two studies' figures: the rows they share by figure id, ratios only.
pub(super) fn published_only(c: &mut Comparison, p: &PublishedDoc, q: &PublishedDoc) {
    let (sp, sq) = (citation(p), citation(q));
    if sp.machine != sq.machine {
        c.environment.push(EnvDiff {
            field: "machine (as published)".into(),
            baseline: sp.machine.clone(),
            other: sq.machine.clone(),
        });
    }
    // Both studies are cited: neither figure was measured here.
    c.published = Some(PublishedSide {
        name: format!("{} and {}", sp.name, sq.name),
        citation: format!("{} (A) and {} (B)", sp.citation, sq.citation),
        machine: if sp.machine == sq.machine {
            sq.machine.clone()
        } else {
            format!("{} (A) and {} (B)", sp.machine, sq.machine)
        },
    });
    let in_q: BTreeMap<&str, _> = q.figures.iter().map(|f| (f.id.as_str(), f)).collect();
    for f in &p.figures {
        let Some(g) = in_q.get(f.id.as_str()) else {
            c.only_in_baseline.push(f.id.clone());
            continue;
        };
        let (Some(a), Some(b)) = (f.per_op_ns, g.per_op_ns) else {
            c.unmatched_published.push(Unmatched {
                id: f.id.clone(),
                value: format!("{} against {}", published_value(f), published_value(g)),
                meaning: f.meaning.clone(),
                why: "not a time per operation".into(),
            });
            continue;
        };
        let fig = |v| Figure {
            median_ns: v,
            ci95_ns: None,
            samples: 0,
            checks_passed: true,
        };
        c.rows.push(Row {
            id: f.id.clone(),
            kind: "published",
            unit: f.unit.clone(),
            baseline: fig(a),
            other: fig(b),
            diff_ns: b - a,
            diff_pct: pct(a, b),
            ratio: (a > 0.0).then(|| b / a),
            ratio_ci95: None,
            mann_whitney_p: None,
            mann_whitney_q: None,
            verdict: Verdict::NotMeasuredHere,
            at_rate: at_rate(a, b, c.settings),
            note: Some(f.meaning.clone()),
            net: None,
        });
    }
    let in_p: BTreeMap<&str, ()> = p.figures.iter().map(|f| (f.id.as_str(), ())).collect();
    c.only_in_other = q
        .figures
        .iter()
        .filter(|g| !in_p.contains_key(g.id.as_str()))
        .map(|g| g.id.clone())
        .collect();
}

/// A published figure that is a study figure (`study.…`) beside the same figure computed from
/// the run, or why it cannot be.
fn study_row(
    c: &mut Comparison,
    f: &oscost_model::PublishedFigure,
    id: &str,
    study_figs: &[crate::study::StudyFigure],
) {
    match study_figs.iter().find(|s| s.id == id) {
        Some(s) => match convert(f.value, &f.unit, &s.unit) {
            Some(v) => c.study_rows.push(StudyRow {
                id: f.id.clone(),
                measured_id: s.id.clone(),
                unit: s.unit.clone(),
                published: v,
                measured: s.value,
                measured_ci95: s.ci95,
                difference: s.value - v,
                note: format!(
                    "{}{}{}",
                    f.meaning,
                    f.mapping_note
                        .as_ref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default(),
                    s.flagged
                        .as_ref()
                        .map(|x| format!("; today's figure is flagged: {x}"))
                        .unwrap_or_default()
                ),
            }),
            None => c.unmatched_published.push(Unmatched {
                id: f.id.clone(),
                value: published_value(f),
                meaning: f.meaning.clone(),
                why: format!("{id} is in {}, not in {}", s.unit, f.unit),
            }),
        },
        None => c.unmatched_published.push(Unmatched {
            id: f.id.clone(),
            value: published_value(f),
            meaning: f.meaning.clone(),
            why: format!("{id} cannot be computed from this result (its cases are not in it)"),
        }),
    }
}
