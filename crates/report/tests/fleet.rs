//! `compare --group-by` on fixed documents: the golden run copied to several hosts, some with a
//! known change, so the columns, the reference, the verdicts and the environment differences
//! are pinned.

use oscost_model::env::FleetRun;
mod common;
use common::scaled;
use oscost_model::ResultDoc;
use oscost_report::compare::{Settings, Verdict};
use oscost_report::fleet::{self, FleetError, GroupBy};
use std::path::PathBuf;

fn golden() -> ResultDoc {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/oscost-2.json");
    oscost_model::read(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The golden run as made on `host` (its fleet name), started at `at`.
fn on_host(host: &str, at: &str) -> ResultDoc {
    let mut d = golden();
    d.run_id = Some(format!("{host}-{at}"));
    d.started_at = Some(at.into());
    d.environment.hostname = Some("same-box".into());
    d.environment.fleet = Some(FleetRun {
        host_name: Some(host.into()),
        runner: Some("ansible-core 2.14".into()),
    });
    d
}

fn labelled(docs: &[ResultDoc]) -> Vec<(String, &ResultDoc)> {
    docs.iter()
        .map(|d| (d.run_id.clone().unwrap(), d))
        .collect()
}

#[test]
fn one_column_per_host_each_against_the_first() {
    let docs = vec![
        on_host("host10", "2026-11-24T01:00:00Z"),
        scaled(
            on_host("host2", "2026-11-24T01:00:00Z"),
            "example.cost250",
            1.3,
        ),
        on_host("host1", "2026-11-24T01:00:00Z"),
    ];
    let f = fleet::build(&labelled(&docs), &GroupBy::Host, None, Settings::default()).unwrap();
    let names: Vec<&str> = f.groups.iter().map(|g| g.name.as_str()).collect();
    // Numbers in names order as numbers: host2 before host10.
    assert_eq!(names, ["host1", "host2", "host10"]);
    assert_eq!(f.reference, 0);
    let row = f.rows.iter().find(|r| r.id == "example.cost250").unwrap();
    assert!(
        row.cells[0].is_none(),
        "the reference has no ratio to itself"
    );
    let slow = row.cells[1].as_ref().unwrap();
    assert_eq!(slow.verdict, Verdict::Slower);
    assert!((slow.ratio.unwrap() - 1.3).abs() < 0.01, "{:?}", slow.ratio);
    let [lo, hi] = slow.ratio_ci95.unwrap();
    assert!(lo > 1.0 && lo <= 1.3 && hi >= 1.3, "{lo} {hi}");
    assert_eq!(
        row.cells[2].as_ref().unwrap().verdict,
        Verdict::NoDifference
    );
    // Every other figure is the same everywhere.
    for r in f.rows.iter().filter(|r| r.id != "example.cost250") {
        for c in r.cells.iter().flatten() {
            assert_eq!(c.verdict, Verdict::NoDifference, "{}", r.id);
        }
    }
    let text = fleet::terminal(&f);
    assert!(text.contains("host1 (reference)"), "{text}");
    assert!(text.contains("slower"), "{text}");
}

#[test]
fn a_chosen_reference_turns_the_ratios_around() {
    let docs = vec![
        on_host("a", "2026-11-24T01:00:00Z"),
        scaled(on_host("b", "2026-11-24T01:00:00Z"), "example.cost250", 0.5),
    ];
    let f = fleet::build(
        &labelled(&docs),
        &GroupBy::Host,
        Some("b"),
        Settings::default(),
    )
    .unwrap();
    assert_eq!(f.groups[f.reference].name, "b");
    let row = f.rows.iter().find(|r| r.id == "example.cost250").unwrap();
    let a = row.cells[0].as_ref().unwrap();
    assert_eq!(a.verdict, Verdict::Slower);
    assert!((a.ratio.unwrap() - 2.0).abs() < 0.02);
    let e = fleet::build(
        &labelled(&docs),
        &GroupBy::Host,
        Some("c"),
        Settings::default(),
    )
    .unwrap_err();
    assert!(matches!(e, FleetError::NoSuchReference { .. }));
    assert!(e.to_string().contains("choose from: a, b"), "{e}");
}

#[test]
fn environment_differences_come_first_with_every_groups_value() {
    let mut b = on_host("b", "2026-11-24T01:00:00Z");
    b.environment.kernel_release = "9.9.9-other".into();
    let docs = vec![
        on_host("a", "2026-11-24T01:00:00Z"),
        b,
        on_host("c", "2026-11-24T01:00:00Z"),
    ];
    let f = fleet::build(&labelled(&docs), &GroupBy::Host, None, Settings::default()).unwrap();
    let kernel = f.environment.iter().find(|d| d.field == "kernel").unwrap();
    let reference = &docs[0].environment.kernel_release;
    assert_eq!(
        kernel.values,
        [reference.clone(), "9.9.9-other".into(), reference.clone()]
    );
    for text in [fleet::terminal(&f), fleet::markdown(&f), fleet::html(&f)] {
        let env_at = text.find("9.9.9-other").unwrap();
        let fig_at = text.find("example.cost250").unwrap();
        assert!(env_at < fig_at, "environment after the figures:\n{text}");
    }
}

#[test]
fn a_group_with_several_runs_is_its_latest_and_the_others_are_counted() {
    let old = scaled(on_host("a", "2026-11-20T01:00:00Z"), "example.cost250", 3.0);
    let docs = vec![
        old,
        on_host("a", "2026-11-24T01:00:00Z"),
        on_host("b", "2026-11-24T01:00:00Z"),
    ];
    let f = fleet::build(&labelled(&docs), &GroupBy::Host, None, Settings::default()).unwrap();
    assert_eq!(f.groups.len(), 2);
    assert_eq!(
        f.groups[0].run_id.as_deref(),
        Some("a-2026-11-24T01:00:00Z")
    );
    assert_eq!(f.groups[0].older_runs, 1);
    let row = f.rows.iter().find(|r| r.id == "example.cost250").unwrap();
    assert_eq!(
        row.cells[1].as_ref().unwrap().verdict,
        Verdict::NoDifference
    );
    assert!(fleet::terminal(&f).contains("older runs not used: a (1)"));
}

#[test]
fn any_environment_field_groups_and_a_bad_one_is_named() {
    let mut b = on_host("b", "2026-11-24T01:00:00Z");
    b.environment.scheduler.preempt_model = Some("full".into());
    let mut a = on_host("a", "2026-11-24T01:00:00Z");
    a.environment.scheduler.preempt_model = Some("voluntary".into());
    let docs = vec![a, b];
    let by = GroupBy::parse("scheduler.preempt_model").unwrap();
    let f = fleet::build(&labelled(&docs), &by, None, Settings::default()).unwrap();
    let names: Vec<&str> = f.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["full", "voluntary"]);

    let bad = GroupBy::parse("scheduler.no_such").unwrap();
    let e = fleet::build(&labelled(&docs), &bad, None, Settings::default()).unwrap_err();
    assert_eq!(e, FleetError::NoSuchField("scheduler.no_such".into()));
    assert!(e.to_string().contains("no such environment field"));
    assert!(GroupBy::parse("scheduler.").is_err());
    assert!(GroupBy::parse(" ").is_err());

    // Every run on one kernel: nothing to compare, said so.
    let e = fleet::build(
        &labelled(&docs),
        &GroupBy::Kernel,
        None,
        Settings::default(),
    )
    .unwrap_err();
    assert!(matches!(e, FleetError::OneGroup { .. }), "{e}");
}

#[test]
fn hosts_without_a_fleet_name_go_by_their_host_name() {
    let mut a = golden();
    a.environment.hostname = Some("alpha".into());
    let mut b = golden();
    b.environment.hostname = Some("beta".into());
    b.run_id = Some("other".into());
    let mut c = golden();
    c.environment.hostname = None;
    c.run_id = Some("third".into());
    let docs = vec![a, b, c];
    let f = fleet::build(&labelled(&docs), &GroupBy::Host, None, Settings::default()).unwrap();
    let names: Vec<&str> = f.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["(not recorded)", "alpha", "beta"]);
}

#[test]
fn csv_has_a_row_per_figure_and_group_and_json_its_schema() {
    let docs = vec![
        on_host("a", "2026-11-24T01:00:00Z"),
        on_host("b", "2026-11-24T01:00:00Z"),
        on_host("c", "2026-11-24T01:00:00Z"),
    ];
    let f = fleet::build(&labelled(&docs), &GroupBy::Host, None, Settings::default()).unwrap();
    let text = fleet::csv(&f).unwrap();
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), f.rows.len() * 3);
    assert!(rows.iter().any(|r| &r[3] == "a" && &r[10] == "reference"));
    assert!(rows
        .iter()
        .any(|r| &r[3] == "c" && &r[10] == "no_difference"));
    let v: serde_json::Value = serde_json::from_str(&fleet::json(&f).unwrap()).unwrap();
    assert_eq!(v["schema"], fleet::FLEET_SCHEMA);
    assert_eq!(v["groups"].as_array().unwrap().len(), 3);
    let md = fleet::markdown(&f);
    assert!(md.contains("| figure | a (reference) | b | c |"), "{md}");
}

#[test]
fn the_fleet_page_escapes_what_the_files_hold() {
    let docs = vec![
        on_host("<b>x</b>", "2026-11-24T01:00:00Z"),
        on_host("y", "2026-11-24T01:00:00Z"),
    ];
    let f = fleet::build(&labelled(&docs), &GroupBy::Host, None, Settings::default()).unwrap();
    let page = fleet::html(&f);
    assert!(!page.contains("<b>x</b>"));
    assert!(page.contains("&lt;b&gt;x&lt;/b&gt;"));
    roxmltree::Document::parse(&page.replace("<!DOCTYPE html>", "").replace("&nbsp;", " "))
        .map(|_| ())
        .unwrap_or_else(|e| panic!("the page is not well formed: {e}\n{page}"));
}

/// `doc` with every case's samples and every derived figure scaled by `factor`.
fn all_scaled(mut doc: ResultDoc, factor: f64) -> ResultDoc {
    for e in &mut doc.experiments {
        for c in &mut e.cases {
            c.raw_ns.iter_mut().for_each(|x| *x *= factor);
            c.median_ns *= factor;
            c.ci95_ns = c.ci95_ns.map(|x| x * factor);
        }
        for d in &mut e.derived {
            d.estimate_ns *= factor;
            d.ci95_ns = d.ci95_ns.map(|x| x * factor);
        }
    }
    doc
}

/// `doc` with one case's samples replaced: few and widely spread, as a noisy case's.
fn spread(mut doc: ResultDoc, case: &str) -> ResultDoc {
    let c = doc
        .experiments
        .iter_mut()
        .flat_map(|e| e.cases.iter_mut())
        .find(|c| c.id == case)
        .unwrap();
    c.raw_ns = vec![120.0, 35.0, 900.0, 110.0, 480.0, 60.0, 300.0];
    c.samples = c.raw_ns.len();
    c.median_ns = oscost_stats::median(&c.raw_ns);
    doc
}

#[test]
fn every_sample_scaled_by_one_and_a_half_is_never_same() {
    let a = spread(on_host("a", "2026-11-24T01:00:00Z"), "example.cost100");
    let b = all_scaled(
        spread(on_host("b", "2026-11-24T01:00:00Z"), "example.cost100"),
        1.5,
    );
    let docs = vec![a, b];
    let f = fleet::build(&labelled(&docs), &GroupBy::Host, None, Settings::default()).unwrap();
    let mut judged = 0;
    for r in &f.rows {
        let Some(c) = r.cells[1].as_ref().filter(|c| c.ratio.is_some()) else {
            continue;
        };
        judged += 1;
        assert_ne!(c.verdict, Verdict::NoDifference, "{}: {c:?}", r.id);
    }
    assert!(judged > 3, "{judged}");
    let noisy = f.rows.iter().find(|r| r.id == "example.cost100").unwrap();
    let cell = noisy.cells[1].as_ref().unwrap();
    let [lo, hi] = cell.ratio_ci95.unwrap();
    // The interval reaches past the ±10 % band on both sides: the samples cannot tell.
    assert!(lo < 0.9 && hi > 1.1, "{lo} {hi}");
    assert_eq!(cell.verdict, Verdict::TooFewSamples);
    assert!(fleet::terminal(&f).contains("too few samples"));
}

#[test]
fn a_cell_is_the_pairwise_compare_of_its_two_runs() {
    use oscost_report::compare::{self, Source};
    let docs = vec![
        on_host("h1", "2026-11-24T01:00:00Z"),
        scaled(
            on_host("h2", "2026-11-24T01:00:00Z"),
            "example.cost250",
            1.3,
        ),
        all_scaled(
            spread(on_host("h3", "2026-11-24T01:00:00Z"), "example.cost100"),
            1.5,
        ),
        spread(on_host("h4", "2026-11-24T01:00:00Z"), "example.cost100"),
    ];
    let f = fleet::build(&labelled(&docs), &GroupBy::Host, None, Settings::default()).unwrap();
    for (g, doc) in docs.iter().enumerate().skip(1) {
        let pair = compare::compare(
            &[
                ("h1".into(), Source::Measured(&docs[0])),
                (format!("h{}", g + 1), Source::Measured(doc)),
            ],
            Settings::default(),
        );
        let column = f
            .groups
            .iter()
            .position(|x| x.name == pair[0].other)
            .unwrap();
        assert_eq!(pair[0].rows.len(), f.rows.len());
        for row in &pair[0].rows {
            let r = f.rows.iter().find(|r| r.id == row.id).unwrap();
            let cell = r.cells[column].as_ref().unwrap();
            assert_eq!(cell.ratio, row.ratio, "{}", row.id);
            assert_eq!(cell.ratio_ci95, row.ratio_ci95, "{}", row.id);
            assert_eq!(cell.verdict, row.verdict, "{}", row.id);
            assert_eq!(cell.median_ns, row.other.median_ns, "{}", row.id);
        }
    }
}

/// `doc` with its run id made a UUID, as a file read with `oscost_model::read` must hold.
fn with_uuid(mut doc: ResultDoc) -> ResultDoc {
    let n = fnv(doc.run_id.as_deref().unwrap().as_bytes());
    doc.run_id = Some(format!(
        "00000000-0000-4000-8000-{:012x}",
        n & 0xffff_ffff_ffff
    ));
    doc
}

/// Runs of several hosts, some with older runs, some with a changed figure: what the on-demand
/// build must give as the in-memory one does.
fn a_fleet() -> Vec<ResultDoc> {
    vec![
        on_host("h10", "2026-11-24T01:00:00Z"),
        scaled(
            on_host("h2", "2026-11-24T01:00:00Z"),
            "example.cost250",
            1.3,
        ),
        all_scaled(on_host("h2", "2026-11-23T01:00:00Z"), 3.0),
        spread(on_host("h1", "2026-11-24T02:00:00Z"), "example.cost100"),
        on_host("h1", "2026-11-22T01:00:00Z"),
        all_scaled(on_host("h3", "2026-11-24T01:00:00Z"), 1.5),
        on_host("h4", "2026-11-24T01:00:00Z"),
    ]
    .into_iter()
    .map(with_uuid)
    .collect()
}

/// The heads of `docs` read from their JSON, each with its bytes' digest, as the command reads
/// files.
fn heads_of(texts: &[String]) -> Vec<fleet::RunHead> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let head = oscost_model::read_head(t).unwrap();
            fleet::RunHead {
                label: format!("f{i}.json"),
                run_id: head.run_id,
                started_at: head.started_at,
                environment: head.environment,
                digest: Some(format!("{:x}", fnv(t.as_bytes()))),
            }
        })
        .collect()
}

/// A digest good enough to tell the test's texts apart.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[test]
fn read_on_demand_the_fleet_is_the_one_built_in_memory_at_any_number_of_jobs() {
    let docs = a_fleet();
    let texts: Vec<String> = docs
        .iter()
        .map(|d| serde_json::to_string(d).unwrap())
        .collect();
    let by_file: Vec<(String, ResultDoc)> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("f{i}.json"), serde_json::from_str(t).unwrap()))
        .collect();
    let refs: Vec<(String, &ResultDoc)> = by_file.iter().map(|(l, d)| (l.clone(), d)).collect();
    for reference in [None, Some("h3")] {
        let whole = fleet::build(&refs, &GroupBy::Host, reference, Settings::default()).unwrap();
        let expected = serde_json::to_string(&whole).unwrap();
        let heads = heads_of(&texts);
        let reads = std::sync::atomic::AtomicUsize::new(0);
        // Parsed, not read: the scaled runs' summaries are not their samples' (no matter here).
        let load = |i: usize| {
            reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            serde_json::from_str::<ResultDoc>(&texts[i]).map(std::borrow::Cow::Owned)
        };
        let plan = fleet::plan(&heads, &GroupBy::Host, reference, &load).unwrap();
        assert_eq!(reads.load(std::sync::atomic::Ordering::Relaxed), 0);
        assert_eq!(plan.groups().len(), 5);
        for jobs in [1, 2, 3, 64] {
            reads.store(0, std::sync::atomic::Ordering::Relaxed);
            let f = fleet::build_planned(&plan, load, Settings::default(), jobs).unwrap();
            assert_eq!(serde_json::to_string(&f).unwrap(), expected, "{jobs} jobs");
            // The chosen runs only, each once: not the older runs of h1 and h2.
            assert_eq!(reads.load(std::sync::atomic::Ordering::Relaxed), 5);
        }
    }
}

/// A file given twice is read once as a head and never whole; two documents of one id are
/// read whole only when their bytes differ, and named when they differ as documents.
#[test]
fn one_run_id_twice_is_one_run_when_the_documents_agree() {
    let a = with_uuid(on_host("a", "2026-11-24T01:00:00Z"));
    let b = with_uuid(on_host("b", "2026-11-24T01:00:00Z"));
    let mut edited = a.clone();
    edited.experiments[0].cases[0].description = "edited".into();
    let spaced = serde_json::to_string_pretty(&a).unwrap();
    let texts: Vec<String> = [&a, &a, &b, &edited]
        .iter()
        .map(|d| serde_json::to_string(d).unwrap())
        .chain([spaced])
        .collect();
    let heads = heads_of(&texts);
    // The plan of the texts `ix`, and the texts read whole to make it.
    let plan_of = |ix: &[usize]| {
        let reads = std::sync::Mutex::new(Vec::new());
        let load = |i: usize| {
            reads.lock().unwrap().push(ix[i]);
            oscost_model::read(&texts[ix[i]]).map(std::borrow::Cow::Owned)
        };
        let picked: Vec<fleet::RunHead> = ix.iter().map(|&i| heads[i].clone()).collect();
        let plan = fleet::plan(&picked, &GroupBy::Host, None, &load);
        (plan, reads.into_inner().unwrap())
    };
    // The same bytes twice: one run, neither read.
    let (plan, reads) = plan_of(&[0, 1, 2]);
    assert_eq!(plan.unwrap().groups()[0].older_runs, 0);
    assert!(reads.is_empty());
    // Other bytes, the same document: one run, both read to tell.
    let (plan, reads) = plan_of(&[0, 4, 2]);
    assert_eq!(plan.unwrap().groups()[0].older_runs, 0);
    assert_eq!(reads, [0, 4]);
    // Another document under the same id: named.
    let e = plan_of(&[0, 3, 2]).0.unwrap_err();
    match e {
        fleet::BuildError::Fleet(FleetError::Disagree {
            first,
            second,
            run_id,
        }) => {
            assert_eq!((first.as_str(), second.as_str()), ("f0.json", "f3.json"));
            assert_eq!(plan_of(&[0, 3, 2]).1, [0, 3]);
            assert_eq!(Some(run_id), a.run_id);
        }
        e => panic!("{e}"),
    }
}

/// A document that cannot be read when its comparison starts stops the build with its error:
/// the first failing group's in name order, whatever the number of jobs.
#[test]
fn a_run_that_cannot_be_read_is_the_error_of_the_first_group_that_failed() {
    let docs: Vec<ResultDoc> = (1..=6)
        .map(|h| on_host(&format!("h{h}"), "2026-11-24T01:00:00Z"))
        .collect();
    let heads: Vec<fleet::RunHead> = docs
        .iter()
        .map(|d| fleet::RunHead::of(d.run_id.as_deref().unwrap(), d))
        .collect();
    let load = |i: usize| match i {
        2 | 4 => Err(format!("h{} cannot be read", i + 1)),
        _ => Ok(std::borrow::Cow::Borrowed(&docs[i])),
    };
    let plan = fleet::plan(&heads, &GroupBy::Host, None, &load).unwrap();
    for jobs in [1, 2, 5] {
        match fleet::build_planned(&plan, load, Settings::default(), jobs) {
            Err(fleet::BuildError::Load(e)) => assert_eq!(e, "h3 cannot be read"),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("built without h3"),
        }
    }
    let plan = fleet::plan(&heads, &GroupBy::Host, Some("h3"), &load).unwrap();
    match fleet::build_planned(&plan, load, Settings::default(), 2) {
        Err(fleet::BuildError::Load(e)) => assert_eq!(e, "h3 cannot be read"),
        _ => panic!("the reference cannot be read"),
    }
}
