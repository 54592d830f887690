//! `oscost compare`: reads results, baselines and history runs, and prints the comparison.

use crate::args::CompareArgs;
use crate::config::Config;
use crate::inputs::{load, HistoryAt, Loaded};
use oscost_report::compare::{self, Settings, Source};
use std::process::ExitCode;

/// Runs `compare`, or with `--group-by` its fleet form, looking runs up in the history `cfg`
/// names.
pub fn run(args: CompareArgs, cfg: &Config) -> anyhow::Result<ExitCode> {
    let settings = Settings {
        threshold_pct: args.threshold,
        rate_per_s: args.rate,
    };
    let db = cfg.history_location()?;
    if let Some(field) = &args.group_by {
        if args.fail_above.is_some() || args.rate.is_some() || args.only_changed {
            anyhow::bail!(
                "--group-by takes neither --fail-above, --rate nor --only-changed (compare two \
                 runs for those)"
            );
        }
        let reference = args.reference.as_deref();
        // Bills go by program, a column per group: told by the first input.
        if let Some(first) = args.inputs.first() {
            if let Loaded::Measured(d) = load(first, db.as_ref())? {
                if d.bill.is_some() {
                    return bill_fleet(&args.inputs, field, reference, cfg, db.as_ref());
                }
            }
        }
        return super::fleet::run(
            &args.inputs,
            field,
            reference,
            settings,
            args.jobs,
            cfg,
            db.as_ref(),
        );
    }
    if args.inputs.len() < 2 {
        anyhow::bail!("compare needs two results or more (or --group-by FIELD for groups of runs)");
    }
    let view = compare::View {
        // Standard error when standard output carries a file format.
        width: oscost_report::export::terminal::layout_width(cfg.stdout_taken()),
        only_changed: args.only_changed,
    };
    two_or_more(
        &args.inputs,
        settings,
        args.fail_above,
        view,
        cfg,
        db.as_ref(),
    )
}

/// `compare --group-by FIELD BILL…`: one program's bills, the newest of each group, a column
/// per group against the reference group's (`--reference`, else the first by name).
fn bill_fleet(
    inputs: &[String],
    field: &str,
    reference: Option<&str>,
    cfg: &Config,
    history: HistoryAt,
) -> anyhow::Result<ExitCode> {
    if cfg.csv.is_some() || cfg.markdown.is_some() || cfg.report.is_some() {
        anyhow::bail!(
            "bills by group go to the terminal or --json (not --csv, --markdown or --report)"
        );
    }
    let by = oscost_report::fleet::GroupBy::parse(field).map_err(|e| anyhow::anyhow!(e))?;
    // Group name → (started at, source, document): the newest bill of each group.
    let mut groups: std::collections::BTreeMap<String, (String, String, oscost_model::ResultDoc)> =
        std::collections::BTreeMap::new();
    let mut subject: Option<(String, String)> = None;
    for arg in inputs {
        let Loaded::Measured(doc) = load(arg, history)? else {
            anyhow::bail!("{arg}: a published baseline is not a bill (give bills only)");
        };
        let Some(bill) = &doc.bill else {
            anyhow::bail!(
                "{arg} is a run of experiments: --group-by sets bills of one program beside each \
                 other, or runs of experiments, not both"
            );
        };
        let what = oscost_report::bill::subject(bill);
        match &subject {
            None => subject = Some((arg.clone(), what)),
            Some((first, w)) if *w != what => anyhow::bail!(
                "{arg} is the bill of {what}, {first} of {w}: the groups' bills must be of one \
                 program"
            ),
            Some(_) => {}
        }
        let name = by.key(&doc.environment).ok_or_else(|| {
            anyhow::anyhow!("{arg} records no {}: nothing to group it by", by.name())
        })?;
        let started = doc.started_at.clone().unwrap_or_default();
        if groups.get(&name).is_none_or(|(s, _, _)| started > *s) {
            groups.insert(name, (started, arg.clone(), *doc));
        }
    }
    if groups.len() < 2 {
        anyhow::bail!(
            "every bill is of one {} ({}): --group-by needs bills of two groups or more",
            by.name(),
            groups.keys().next().map_or("", String::as_str)
        );
    }
    let mut names: Vec<String> = groups.keys().cloned().collect();
    if let Some(r) = reference {
        let at = names.iter().position(|n| n == r).ok_or_else(|| {
            anyhow::anyhow!(
                "--reference {r}: no group of that {} (there are: {})",
                by.name(),
                names.join(", ")
            )
        })?;
        let r = names.remove(at);
        names.insert(0, r);
    }
    let bills: Vec<(String, String, &oscost_model::bill::Bill)> = names
        .iter()
        .map(|n| {
            let (_, source, doc) = &groups[n];
            (
                n.clone(),
                source.clone(),
                doc.bill.as_ref().expect("a bill"),
            )
        })
        .collect();
    let f = oscost_report::bill::bill_fleet(by.name(), &bills);
    super::emit::emit(cfg, "a fleet of bills", &f)?;
    Ok(ExitCode::SUCCESS)
}

/// Two bills, B against A: the terminal table, or `--json`.
fn compare_bills(
    inputs: &[String],
    a: &oscost_model::bill::Bill,
    b: &oscost_model::bill::Bill,
    cfg: &Config,
) -> anyhow::Result<ExitCode> {
    if cfg.csv.is_some() || cfg.markdown.is_some() {
        anyhow::bail!("two bills compare in the terminal or as --json (not --csv or --markdown)");
    }
    let c = oscost_report::bill::compare_bills(a, b, [&inputs[0], &inputs[1]]);
    super::emit::emit(cfg, "a comparison of bills", &c)?;
    Ok(ExitCode::SUCCESS)
}

/// Compares each of `inputs` with the first, found in `history`.
fn two_or_more(
    inputs: &[String],
    settings: Settings,
    fail_above: Option<f64>,
    view: compare::View,
    cfg: &Config,
    history: HistoryAt,
) -> anyhow::Result<ExitCode> {
    let loaded = inputs
        .iter()
        .map(|a| load(a, history))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let bills: Vec<&oscost_model::bill::Bill> = loaded
        .iter()
        .filter_map(|l| match l {
            Loaded::Measured(d) => d.bill.as_ref(),
            Loaded::Published(_) => None,
        })
        .collect();
    if let [a, b] = bills[..] {
        if inputs.len() == 2 {
            return compare_bills(inputs, a, b, cfg);
        }
    }
    for (arg, l) in inputs.iter().zip(&loaded) {
        if let Loaded::Measured(d) = l {
            if let Some(bill) = &d.bill {
                anyhow::bail!(
                    "{arg} is the bill of {}: compare sets a bill beside one other bill, and \
                     the figures of experiments beside each other (`oscost history show {arg}` \
                     prints it)",
                    oscost_report::bill::subject(bill)
                );
            }
        }
    }
    let sources: Vec<(String, Source)> = inputs
        .iter()
        .zip(&loaded)
        .map(|(label, l)| {
            let s = match l {
                Loaded::Measured(d) => Source::Measured(d),
                Loaded::Published(p) => Source::Published(p),
            };
            (label.clone(), s)
        })
        .collect();
    let mut comparisons = compare::compare(&sources, settings);
    run_to_run_spread(&mut comparisons, &loaded, history);
    // Nothing compared at all is a mistaken input, not a passed gate: refused, in one line.
    let nothing: Vec<String> = comparisons
        .iter()
        .filter_map(compare::nothing_in_common)
        .collect();
    if nothing.len() == comparisons.len() {
        if let [line] = &nothing[..] {
            anyhow::bail!("{line}");
        }
        anyhow::bail!(
            "no input has a figure in common with A = {}, so there is nothing to compare: give \
             runs of the same experiments",
            inputs[0]
        );
    }
    super::emit::emit(
        cfg,
        "a comparison",
        &compare::Compared {
            comparisons: &comparisons,
            only_changed: view.only_changed,
        },
    )?;
    if let Some(pct) = fail_above {
        let slower = compare::slower_than(&comparisons, pct);
        if !slower.is_empty() {
            let names: Vec<String> = slower
                .iter()
                .take(8)
                .map(|(c, r)| format!("{} in {} ({:+.1} %)", r.id, c.other, r.diff_pct))
                .collect();
            let line = format!(
                "{} figure{} slower by more than {pct} % beyond noise: {}{}",
                slower.len(),
                if slower.len() == 1 { "" } else { "s" },
                names.join(", "),
                if slower.len() > names.len() {
                    ", ..."
                } else {
                    ""
                }
            );
            // The ids and labels come from the files: one line whatever they hold.
            eprintln!("oscost: {}", oscost_report::termtext::one_line(&line));
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Earlier runs of B's machine read for its figures' run-to-run spread.
pub(crate) const SPREAD_RUNS: usize = 10;

/// Widens each comparison's intervals by the spread between earlier runs comparable with its
/// B (same host, fingerprint, experiments and size) where the history holds enough of them,
/// else by the machine's wander within A and B. A history that cannot be read (or none) reads
/// as no earlier runs.
fn run_to_run_spread(
    comparisons: &mut [compare::Comparison],
    loaded: &[Loaded],
    history: HistoryAt,
) {
    let store = history.and_then(|(location, explicit)| {
        if let oscost_history::Location::File(path) = location {
            if !path.exists() {
                return None;
            }
        }
        crate::store::open_read_only(location, *explicit, "").ok()
    });
    let Some(Loaded::Measured(a)) = loaded.first() else {
        return;
    };
    for (c, l) in comparisons.iter_mut().zip(&loaded[1..]) {
        let Loaded::Measured(b) = l else {
            continue;
        };
        let besides: Vec<&str> = [a.run_id.as_deref(), b.run_id.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        let runs = store
            .as_ref()
            .and_then(|s| s.comparable_runs(b, &besides, SPREAD_RUNS).ok())
            .unwrap_or_default();
        compare::with_spread(c, &compare::spread_of(&runs).or_wander(a, b));
    }
}
