//! A run's part of the page: what it ran on, its glance and datasheet, the studies and the
//! bill it holds, then its experiments.

use super::experiment::{experiment, Experiment};
use super::{anchor, ci_pct, figure, load_line, opt, table, Figure, Table};
use crate::envtext::render_environment;
use oscost_model::ResultDoc;
use serde::Serialize;

#[derive(Debug, Serialize)]
struct Fact {
    name: &'static str,
    value: String,
}

#[derive(Debug, Serialize, Default)]
struct Glance {
    experiments: usize,
    cases: usize,
    failed: Vec<String>,
    noisy: usize,
    warnings: usize,
    unavailable: usize,
    flagged: usize,
}

/// A study's section of a run: its tables and charts, the published figures beside the run's.
#[derive(Debug, Serialize)]
pub(super) struct StudySection {
    anchor: String,
    name: &'static str,
    citation: &'static str,
    tables: Vec<Table>,
    figures: Vec<Figure>,
}

pub(super) fn study_sections(
    prefix: &str,
    doc: &ResultDoc,
    asked: &[&'static crate::study::Study],
) -> Vec<StudySection> {
    // A study's section is the answer to `oscost study NAME` or to a study asked for by name
    // (`report published:NAME`); a plain run's page is its own experiments.
    let mut chosen = if study_run(doc) {
        crate::study::applying_to(doc)
    } else {
        Vec::new()
    };
    for s in asked {
        if !chosen.iter().any(|c| c.info.name == s.info.name) {
            chosen.push(s);
        }
    }
    chosen
        .into_iter()
        .map(|s| StudySection {
            anchor: anchor(&[prefix, "study", s.info.name]),
            name: s.info.name,
            citation: s.info.citation,
            tables: s.tables(Some(doc)).into_iter().map(table).collect(),
            figures: s.plots(Some(doc)).into_iter().map(figure).collect(),
        })
        .collect()
}

/// Whether `doc` was made by `oscost study NAME`.
pub(super) fn study_run(doc: &ResultDoc) -> bool {
    doc.environment
        .command_line
        .iter()
        .skip(1)
        .any(|w| w == "study")
}

#[derive(Debug, Serialize)]
pub(super) struct Run {
    pub(super) anchor: String,
    pub(super) studies: Vec<StudySection>,
    /// Whether the studies come before the run's experiments (a study run) or after them.
    pub(super) studies_first: bool,
    label: String,
    run_id: String,
    started_at: String,
    facts: Vec<Fact>,
    glance: Glance,
    /// The failed cases the datasheet does not already mark, named under it.
    failed_unlisted: Vec<String>,
    load: Vec<String>,
    environment: String,
    experiments: Vec<Experiment>,
    datasheet: Vec<SheetRow>,
    /// The headline times on one axis (a run alone on its page).
    datasheet_figure: Option<Figure>,
    /// A bill's run: what the OS cost one program.
    bill: Option<BillSection>,
}

/// A bill on the page: its tables and its two figures.
#[derive(Debug, Serialize)]
struct BillSection {
    tables: Vec<Table>,
    figures: Vec<Figure>,
}

fn bill_section(doc: &ResultDoc) -> Option<BillSection> {
    let bill = doc.bill.as_ref()?;
    Some(BillSection {
        tables: crate::bill::views(bill).into_iter().map(table).collect(),
        figures: crate::plot::bill::plots(bill)
            .into_iter()
            .map(figure)
            .collect(),
    })
}

/// A line of the run's datasheet.
#[derive(Debug, Serialize)]
struct SheetRow {
    label: String,
    value: String,
    ci: String,
    source: String,
    failed: bool,
    /// Who held the CPUs while a failed check's experiment ran, in words, where enough that
    /// the failure is not laid at the OS's door.
    held: Option<String>,
}

fn sheet_rows(doc: &ResultDoc) -> Vec<SheetRow> {
    crate::datasheet::datasheet(doc)
        .lines
        .into_iter()
        .map(|l| {
            // A figure without an interval (a percentile too few samples bound) shows none.
            let ci95 = l.value.ci95();
            let ci = if ci95.iter().all(|v| v.is_finite()) {
                ci_pct(l.value.number(), ci95)
            } else {
                String::new()
            };
            let value = l.value.text();
            SheetRow {
                label: l.label.to_owned(),
                value,
                ci,
                source: l.source,
                failed: l.failed,
                held: l.held.map(|h| oscost_model::Held::words(&[h])),
            }
        })
        .collect()
}

fn facts(doc: &ResultDoc) -> Vec<Fact> {
    let env = &doc.environment;
    let version = match &env.git_commit {
        Some(c) => format!("{} ({c})", env.oscost_version),
        None => env.oscost_version.clone(),
    };
    let clock = &env.clock;
    let virt = match (
        &env.virtualisation.sys_hypervisor_type,
        &env.virtualisation.cpuid_signature,
        env.virtualisation.hypervisor_flag,
    ) {
        (Some(t), _, _) => format!("virtual machine ({t})"),
        (None, Some(s), _) => format!("virtual machine ({s})"),
        (None, None, Some(true)) => "virtual machine".into(),
        (None, None, Some(false)) => "bare metal (no hypervisor flag)".into(),
        (None, None, None) => "n/a".into(),
    };
    vec![
        Fact {
            name: "kernel",
            // The Windows agent's runs name their system, and Wine when it ran under Wine.
            value: env
                .os
                .as_ref()
                .map_or_else(|| env.kernel_release.clone(), |o| o.describe()),
        },
        Fact {
            name: "CPU",
            value: opt(&env.cpu_model),
        },
        Fact {
            name: "CPUs used",
            value: oscost_model::cpulist::format(&env.cpus_used),
        },
        Fact {
            name: "clock",
            value: format!(
                "{} at {:.1} MHz ({})",
                clock.tick_unit,
                clock.frequency_hz / 1e6,
                clock.frequency_source
            ),
        },
        Fact {
            name: "machine",
            value: virt,
        },
        Fact {
            name: "oscost",
            value: version,
        },
        Fact {
            name: "command",
            value: env.command_line.join(" "),
        },
    ]
}

pub(super) fn run(i: usize, label: &str, doc: &ResultDoc, several: bool) -> Run {
    let prefix = if several {
        format!("run{}", i + 1)
    } else {
        "run".into()
    };
    let tick_unit = doc.environment.clock.tick_unit.clone();
    let mut glance = Glance {
        experiments: doc.experiments.len(),
        ..Glance::default()
    };
    for e in &doc.experiments {
        glance.cases += e.cases.len();
        glance.unavailable += e.unavailable.len();
        glance.warnings +=
            e.warnings.len() + e.cases.iter().map(|c| c.warnings.len()).sum::<usize>();
        glance.noisy += e.cases.iter().filter(|c| c.noisy).count();
        glance.flagged += e.derived.iter().filter(|d| d.flagged.is_some()).count();
        glance.failed.extend(
            e.cases
                .iter()
                .filter(|c| !c.checks_passed)
                .map(|c| c.id.clone()),
        );
    }
    let load = doc
        .environment
        .load
        .as_ref()
        .map(|l| {
            std::iter::once(format!("the whole run: {}", load_line(l)))
                .chain(l.warnings.iter().cloned())
                .collect()
        })
        .unwrap_or_default();
    let datasheet = sheet_rows(doc);
    let failed_unlisted = glance
        .failed
        .iter()
        .filter(|id| !datasheet.iter().any(|l| l.failed && &l.source == *id))
        .cloned()
        .collect();
    Run {
        studies: Vec::new(),
        studies_first: false,
        anchor: prefix.clone(),
        label: label.to_owned(),
        run_id: opt(&doc.run_id),
        started_at: opt(&doc.started_at),
        facts: facts(doc),
        glance,
        failed_unlisted,
        load,
        environment: render_environment(&doc.environment),
        datasheet,
        // With several runs the comparison draws them all on one chart.
        datasheet_figure: if several {
            None
        } else {
            crate::plot::datasheet::plot(&[("this run", &crate::datasheet::datasheet(doc))])
                .map(figure)
        },
        experiments: doc
            .experiments
            .iter()
            .map(|e| experiment(&prefix, e, &tick_unit))
            .collect(),
        bill: bill_section(doc),
    }
}
