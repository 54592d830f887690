//! `compare` on fixed documents: the golden run against itself and against copies with a known
//! change, so each verdict and every rendering is pinned.

mod common;
use common::scaled;
use oscost_model::ResultDoc;
use oscost_report::compare::{self, Settings, Source, Verdict};
use std::path::PathBuf;

fn golden() -> ResultDoc {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/oscost-2.json");
    oscost_model::read(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn run(a: &ResultDoc, b: &ResultDoc, settings: Settings) -> Vec<compare::Comparison> {
    compare::compare(
        &[
            ("before.json".into(), Source::Measured(a)),
            ("after.json".into(), Source::Measured(b)),
        ],
        settings,
    )
}

fn verdict_of<'a>(c: &'a compare::Comparison, id: &str) -> &'a compare::Row {
    c.rows.iter().find(|r| r.id == id).unwrap()
}

#[test]
fn a_run_against_itself_differs_nowhere() {
    let doc = golden();
    let c = run(&doc, &doc, Settings::default());
    assert_eq!(c.len(), 1);
    assert!(c[0].environment.is_empty());
    assert!(c[0].only_in_baseline.is_empty() && c[0].only_in_other.is_empty());
    assert!(c[0].rows.iter().all(|r| r.verdict == Verdict::NoDifference));
    assert!(compare::slower_than(&c, 0.0).is_empty());
}

#[test]
fn a_known_shift_is_found_and_gated() {
    let a = golden();
    let b = scaled(
        scaled(golden(), "example.cost250", 1.2),
        "example-more.cost60",
        0.7,
    );
    let c = run(&a, &b, Settings::default());
    let slower = verdict_of(&c[0], "example.cost250");
    assert_eq!(slower.verdict, Verdict::Slower);
    let [lo, hi] = slower.ratio_ci95.unwrap();
    assert!(
        lo > 1.0 && lo <= 1.2 + 1e-9 && 1.2 - 1e-9 <= hi,
        "{lo} {hi}"
    );
    assert!((slower.diff_pct - 20.0).abs() < 1e-6);
    assert_eq!(
        verdict_of(&c[0], "example-more.cost60").verdict,
        Verdict::Faster
    );
    assert_eq!(
        verdict_of(&c[0], "example.cost100").verdict,
        Verdict::NoDifference
    );
    // --fail-above: gated at 10 %, not at 25 %.
    assert_eq!(compare::slower_than(&c, 10.0).len(), 1);
    assert!(compare::slower_than(&c, 25.0).is_empty());
    // A shift below the noise threshold is no difference, however clear the statistics.
    let small = scaled(golden(), "example.cost250", 1.03);
    let c = run(&a, &small, Settings::default());
    assert_eq!(
        verdict_of(&c[0], "example.cost250").verdict,
        Verdict::NoDifference
    );
    let strict = Settings {
        threshold_pct: 1.0,
        ..Settings::default()
    };
    let c = run(&a, &small, strict);
    assert_eq!(
        verdict_of(&c[0], "example.cost250").verdict,
        Verdict::Slower
    );
}

#[test]
fn cases_in_one_input_only_are_listed_and_environment_differences_named() {
    let a = golden();
    let mut b = golden();
    b.experiments[0].cases.remove(0);
    b.environment.kernel_release = "9.9.9-other".into();
    b.environment.cpus_used = vec![1];
    let c = run(&a, &b, Settings::default());
    assert_eq!(c[0].only_in_baseline, vec!["example.cost100".to_string()]);
    let fields: Vec<&str> = c[0].environment.iter().map(|d| d.field.as_str()).collect();
    assert!(fields.contains(&"kernel"), "{fields:?}");
    assert!(fields.contains(&"CPUs used"), "{fields:?}");
    let text = compare::terminal(&c);
    assert!(
        text.contains("Only in before.json (1): example.cost100"),
        "{text}"
    );
}

/// Two runs of different experiments: one line says there is nothing to compare and what each
/// holds, in the terminal and in Markdown, instead of environments, a summary of nothing, the
/// rule of the verdicts and every id of both sides.
#[test]
fn runs_with_no_common_figure_say_so_in_one_line() {
    let a = golden();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/suite.json");
    let b = oscost_model::read(&std::fs::read_to_string(path).unwrap()).unwrap();
    let c = run(&a, &b, Settings::default());
    let line = compare::nothing_in_common(&c[0]).unwrap();
    assert_eq!(
        line,
        "B = after.json against A = before.json: no common figure, so nothing to compare (A \
         has 10 figures of example, example-more; B has 192 figures of syscall, primitives, \
         switch, ring, split, spawn and 3 more experiments): give runs of the same experiments"
    );
    assert_eq!(compare::terminal(&c), format!("{line}\n\n"));
    assert_eq!(compare::markdown(&c), format!("{line}\n\n"));
    // Runs that share a figure render in full.
    assert!(compare::nothing_in_common(&run(&a, &a, Settings::default())[0]).is_none());
}

#[test]
fn renderings_match_their_snapshots() {
    let a = golden();
    let mut b = scaled(golden(), "example.cost250", 1.2);
    b.environment.kernel_release = "9.9.9-other".into();
    b.experiments[1].cases.pop();
    let settings = Settings {
        threshold_pct: 5.0,
        rate_per_s: Some(10_000.0),
    };
    let c = run(&a, &b, settings);
    insta::assert_snapshot!("compare-terminal", compare::terminal(&c));
    insta::assert_snapshot!("compare-markdown", compare::markdown(&c));
    insta::assert_snapshot!("compare-csv", compare::csv(&c).unwrap());
    insta::assert_snapshot!("compare-json", compare::json(&c).unwrap());
}

#[test]
fn a_published_baseline_gives_ratios_and_no_verdict() {
    let minix = oscost_report::baselines::find("minix3-kernel-drivers").unwrap();
    // The golden run, its first case renamed to the case the baseline maps getpid to.
    let mut today = golden();
    today.experiments[0].cases[0].id = "fs.tmpfs.getpid".into();
    let c = compare::compare(
        &[
            (
                "published:minix3-kernel-drivers".into(),
                Source::Published(&minix),
            ),
            ("today.json".into(), Source::Measured(&today)),
        ],
        Settings {
            rate_per_s: Some(10_000.0),
            ..Settings::default()
        },
    );
    let row = verdict_of(&c[0], "fs.tmpfs.getpid");
    assert_eq!(row.verdict, Verdict::NotMeasuredHere);
    assert_eq!(row.baseline.median_ns, 831.0);
    assert!((row.ratio.unwrap() - 107.5 / 831.0).abs() < 1e-3);
    assert!(row.ratio_ci95.is_none() && row.mann_whitney_p.is_none());
    // Figures with no time per operation are listed with the reason, never dropped.
    assert!(!c[0].unmatched_published.is_empty());
    assert!(compare::slower_than(&c, 0.0).is_empty());
    let text = compare::terminal(&c);
    assert!(text.contains("They were not measured here"), "{text}");
    assert!(text.contains("Herder"), "{text}");
    insta::assert_snapshot!("compare-published-terminal", text);
}

#[test]
fn a_published_percentage_stands_beside_the_same_percentage_computed_from_the_run() {
    let minix = oscost_report::baselines::find("minix3-user-drivers").unwrap();
    // Two of the golden run's cases as the kernel's and the user-space file system's lseek.
    let mut today = golden();
    let e = &mut today.experiments[0];
    e.name = "fs".into();
    let (k, u) = (e.cases[0].median_ns, e.cases[1].median_ns);
    e.cases[0].id = "fs.tmpfs.lseek".into();
    e.cases[1].id = "fs.fuse.lseek".into();
    let c = compare::compare(
        &[
            (
                "published:minix3-user-drivers".into(),
                Source::Published(&minix),
            ),
            ("today.json".into(), Source::Measured(&today)),
        ],
        Settings::default(),
    );
    let row = c[0]
        .study_rows
        .iter()
        .find(|r| r.id == "lseek.slowdown")
        .expect("the slowdown set beside the run's");
    assert_eq!(row.measured_id, "study.minix3.lseek.slowdown");
    assert_eq!(row.unit, "%");
    assert_eq!(row.published, 11.0);
    assert!(
        (row.measured - (u / k - 1.0) * 100.0).abs() < 1e-6,
        "{row:?}"
    );
    assert!((row.difference - (row.measured - 11.0)).abs() < 1e-9);
    // The other calls' slowdowns cannot be computed from this run: said, never invented.
    assert!(c[0]
        .unmatched_published
        .iter()
        .any(|u| u.id == "open_close.slowdown" && u.why.contains("cannot be computed")));
    assert!(compare::terminal(&c).contains("study.minix3.lseek.slowdown"));
}

#[test]
fn many_figures_moving_at_once_are_called_a_drift_of_the_machine() {
    let a = golden();
    let mut b = golden();
    for id in ["example.cost100", "example.cost250", "example-more.cost60"] {
        b = scaled(b, id, 1.3);
    }
    let c = run(&a, &b, Settings::default());
    let d = c[0].drift.as_deref().expect("a drift warning");
    assert!(d.starts_with("3 of 10 figures differ"), "{d}");
    assert!(compare::terminal(&c).contains("Warning: "));
    // One figure in ten is a row to believe, not a drift.
    let c = run(
        &a,
        &scaled(golden(), "example.cost250", 1.3),
        Settings::default(),
    );
    assert!(c[0].drift.is_none());
}

/// A file whose `median_ns` says one thing and its `raw_ns` another (edited by hand): the row's
/// percentage, difference and ratio come from the same figures as its verdict, and it says why.
#[test]
fn a_summary_that_disagrees_with_its_samples_does_not_split_the_row() {
    let a = golden();
    let mut b = golden();
    let case = b
        .experiments
        .iter_mut()
        .flat_map(|e| e.cases.iter_mut())
        .find(|c| c.id == "example.cost250")
        .unwrap();
    // The summary claims a far faster figure; the samples are unchanged.
    case.median_ns = -12.0;
    let c = run(&a, &b, Settings::default());
    let r = verdict_of(&c[0], "example.cost250");
    assert_eq!(r.verdict, Verdict::NoDifference);
    assert!(r.diff_pct.abs() < 1e-9, "{}", r.diff_pct);
    assert!(r.diff_ns.abs() < 1e-9, "{}", r.diff_ns);
    assert_eq!(r.ratio, Some(1.0));
    assert!((r.other.median_ns - r.baseline.median_ns).abs() < 1e-9);
    assert!(r.other.ci95_ns.is_none() && r.baseline.ci95_ns.is_some());
    let note = r.note.as_deref().unwrap();
    assert!(
        note.contains("B's median_ns") && note.contains("raw samples"),
        "{note}"
    );
    let t = compare::terminal(&c);
    assert!(t.contains("  example.cost250: B's median_ns"), "{t}");
    assert!(!t.contains("-104") && !t.contains("−104"), "{t}");
    // Every other row still shows its summary and its interval.
    assert!(c[0]
        .rows
        .iter()
        .filter(|r| r.id != "example.cost250" && r.kind == "case")
        .all(|r| !r.note.as_deref().unwrap_or("").contains("median_ns")
            && r.baseline.ci95_ns.is_some()
            && r.other.ci95_ns.is_some()));
    // A real change with a summary that hides it: the percentage follows the samples.
    let mut b = scaled(golden(), "example.cost250", 1.5);
    let case = b
        .experiments
        .iter_mut()
        .flat_map(|e| e.cases.iter_mut())
        .find(|c| c.id == "example.cost250")
        .unwrap();
    case.median_ns /= 1.5;
    let c = run(&a, &b, Settings::default());
    let r = verdict_of(&c[0], "example.cost250");
    assert_eq!(r.verdict, Verdict::Slower);
    assert!((r.diff_pct - 50.0).abs() < 1e-6, "{}", r.diff_pct);
    assert_eq!(compare::slower_than(&c, 40.0).len(), 1);
}

#[test]
fn three_rounds_a_side_with_a_large_change_are_too_few_samples_never_no_difference() {
    // Keep three samples a side: the rank test cannot reach p < 0.05 with them.
    let keep3 = |mut d: ResultDoc| {
        for e in &mut d.experiments {
            for c in &mut e.cases {
                c.raw_ns.truncate(3);
                c.median_ns = oscost_stats::median(&c.raw_ns);
                c.samples = 3;
            }
        }
        d
    };
    let a = keep3(golden());
    let b = keep3(scaled(golden(), "example.cost250", 2.35));
    let c = run(&a, &b, Settings::default());
    let row = verdict_of(&c[0], "example.cost250");
    assert!(row.mann_whitney_p.unwrap() >= 0.05);
    assert_eq!(row.verdict, Verdict::TooFewSamples);
    let text = compare::terminal(&c);
    assert!(text.contains("too few samples to tell"), "{text}");
}

#[test]
fn the_change_since_the_last_run_names_what_moved() {
    let a = golden();
    let b = scaled(golden(), "example.cost250", 1.2);
    let text = compare::since_last(&a, "abcd1234", &b, None, Some(60)).expect("common figures");
    assert!(text.starts_with("Change since run abcd1234"), "{text}");
    // One line's worth, so the datasheet above stays on the screen: the counts and the command.
    let one = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(one.contains("1 slower"), "{text}");
    assert!(
        one.contains("oscost compare abcd1234 latest --only-changed"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 60), "{text}");
    assert!(!text.contains("example.cost250"), "{text}");
    // --only-changed keeps the one row that moved.
    let c = run(&a, &b, Settings::default());
    let view = compare::View {
        width: None,
        only_changed: true,
    };
    let shown = compare::terminal_view(&c, view);
    assert!(shown.contains("example.cost250") && !shown.contains("example.cost100 "));
}

/// The golden run with its first case made a latency case from `from` ns.
fn with_latency_case(from: f64) -> ResultDoc {
    common::with_latency_case(golden(), from)
}

/// A case that keeps the lateness percentiles gets them side by side with their intervals in
/// the JSON and the terminal table; a document without such a case has none.
#[test]
fn a_latency_case_gets_its_percentiles_side_by_side() {
    let a = with_latency_case(10_000.0);
    let id = a.experiments[0].cases[0].id.clone();
    let cmp = run(&a, &a, Settings::default());
    let p = &cmp[0].percentiles;
    assert_eq!(p.len(), 4);
    assert!(p.iter().all(|r| r.id == id && r.ratio == 1.0 && !r.apart));
    assert!(p[0].baseline_ci95_ns.is_some() && p[3].baseline_ci95_ns.is_none());
    let text = compare::terminal(&cmp);
    assert!(text.contains("Percentiles side by side"), "{text}");
    assert!(text.contains("p99.9"), "{text}");
    assert!(compare::json(&cmp).unwrap().contains("\"percentiles\""));
    let plain = run(&golden(), &golden(), Settings::default());
    assert!(plain[0].percentiles.is_empty());
    assert!(!compare::json(&plain).unwrap().contains("\"percentiles\""));
}

/// The Markdown and the CSV carry the percentiles too: the Markdown a table of them, the CSV one
/// row of kind `percentile` each with both values and intervals in its last columns; the CSV
/// read back gives the same figures, and both are pinned.
#[test]
fn the_percentiles_are_in_the_markdown_and_the_csv() {
    let a = with_latency_case(10_000.0);
    let b = with_latency_case(12_000.0);
    let cmp = run(&a, &b, Settings::default());
    let p = &cmp[0].percentiles;
    assert_eq!(p.len(), 4);
    let md = compare::markdown(&cmp);
    assert!(md.contains("Percentiles side by side"), "{md}");
    assert!(
        md.contains("| case |  | A (95 % CI) | B (95 % CI) | B / A | intervals |"),
        "{md}"
    );
    for r in p {
        assert!(md.contains(&format!("| {} |", r.percentile)), "{md}");
    }
    let text = compare::csv(&cmp).unwrap();
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    let head = rd.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    let pct: Vec<&csv::StringRecord> = rows
        .iter()
        .filter(|r| &r[col("kind")] == "percentile")
        .collect();
    assert_eq!(pct.len(), 4);
    for (r, want) in pct.iter().zip(p) {
        assert_eq!(&r[col("id")], want.id);
        assert_eq!(&r[col("percentile")], want.percentile);
        let num = |name: &str| r[col(name)].parse::<f64>().unwrap();
        assert_eq!(num("baseline_percentile_ns"), want.baseline_ns);
        assert_eq!(num("other_percentile_ns"), want.other_ns);
        assert_eq!(num("ratio"), want.ratio);
        assert!(r[col("baseline_median_ns")].is_empty());
        match (want.baseline_ci95_ns, want.other_ci95_ns) {
            (Some(x), Some(y)) => {
                assert_eq!(num("baseline_percentile_ci_low_ns"), x[0]);
                assert_eq!(num("other_percentile_ci_high_ns"), y[1]);
                assert_eq!(
                    &r[col("intervals")],
                    if want.apart { "apart" } else { "overlap" }
                );
            }
            _ => assert_eq!(&r[col("intervals")], ""),
        }
    }
    // The figure rows leave the percentile columns empty.
    assert!(rows
        .iter()
        .filter(|r| &r[col("kind")] != "percentile")
        .all(|r| r[col("percentile")].is_empty()));
    // 2 µs later everywhere: the median's interval and the p50's are apart.
    assert_eq!(&pct[0][col("intervals")], "apart");
    insta::assert_snapshot!("compare-percentiles-markdown", md);
    insta::assert_snapshot!("compare-percentiles-csv", text);
}

/// The golden run with its first experiment copied as `name`, one case per id, each a copy of
/// the experiment's first case under that id.
fn with_family(mut doc: ResultDoc, name: &str, ids: &[&str]) -> ResultDoc {
    let mut e = doc.experiments[0].clone();
    let model = e.cases[0].clone();
    e.name = name.to_owned();
    e.derived.clear();
    e.cases = ids
        .iter()
        .map(|id| {
            let mut c = model.clone();
            c.id = (*id).to_owned();
            c
        })
        .collect();
    doc.experiments.push(e);
    doc
}

#[test]
fn io_uring_poll_and_net_cases_each_get_a_row_in_every_rendering() {
    let families: [(&str, &[&str]); 3] = [
        (
            "uring",
            &[
                "uring.nop.b1",
                "uring.nop.sqpoll",
                "uring.read1.b32",
                "uring.read1.fixed.b32",
                "uring.syscall-read1",
                "uring.read64k.fixed.b1",
                "uring.syscall-pread64k",
            ],
        ),
        (
            "poll",
            &["poll.select.10", "poll.epoll.1000", "poll.epoll-ctl"],
        ),
        (
            "net",
            &[
                "net.tcp.rtt.same",
                "net.udp.rtt.cross",
                "net.unix.rtt.same",
                "net.unix-dgram.rtt.cross",
                "net.pipe.bw.cross",
            ],
        ),
    ];
    let mut a = golden();
    for (name, ids) in families {
        a = with_family(a, name, ids);
    }
    let b = scaled(a.clone(), "uring.read1.fixed.b32", 1.5);
    let c = run(&a, &b, Settings::default());
    let (term, md, csv) = (
        compare::terminal(&c),
        compare::markdown(&c),
        compare::csv(&c).unwrap(),
    );
    for id in families.iter().flat_map(|(_, ids)| ids.iter()) {
        assert!(c[0].rows.iter().any(|r| r.id == *id), "{id}: no row");
        for (what, text) in [("terminal", &term), ("markdown", &md), ("csv", &csv)] {
            assert!(text.contains(id), "{id} missing from the {what} rendering");
        }
    }
    assert_eq!(
        verdict_of(&c[0], "uring.read1.fixed.b32").verdict,
        Verdict::Slower
    );
    let docs = [("a.json".to_owned(), &a), ("b.json".to_owned(), &b)];
    let names: Vec<String> = oscost_report::plot::comparison_plots(&docs)
        .into_iter()
        .map(|p| p.name)
        .collect();
    for (name, _) in families {
        assert!(names.contains(&format!("{name}.runs")), "{name}: {names:?}");
    }
}
