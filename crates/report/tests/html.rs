//! The HTML report of fixed documents: well-formed (the page parses as XML, every inline figure
//! with it), self-contained (no script, no URL), every text from a result escaped, and the page
//! pinned with each inline figure replaced by its name (the figures are pinned on their own in
//! `figures.rs`).

mod common;

use oscost_model::ResultDoc;
use oscost_report::export::html::report;
use std::path::PathBuf;

fn read(rel: &str) -> ResultDoc {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
    oscost_model::read(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn golden() -> ResultDoc {
    read("../../tests/golden/oscost-2.json")
}

fn suite() -> ResultDoc {
    read("tests/fixtures/suite.json")
}

/// Parses the page as XML; returns the document's text and the number of `<svg>` elements.
fn parse(html: &str) -> (String, usize) {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(html, opts)
        .unwrap_or_else(|e| panic!("the page is not well-formed: {e}"));
    assert_eq!(doc.root_element().tag_name().name(), "html");
    let text: String = doc
        .descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect::<Vec<_>>()
        .join("\n");
    let svgs = doc.descendants().filter(|n| n.has_tag_name("svg")).count();
    (text, svgs)
}

/// Each inline `<svg>…</svg>` parsed on its own, then replaced by a line naming it.
fn without_figures(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg ") {
        let end = rest[start..].find("</svg>").expect("every <svg> is closed") + start + 6;
        let svg = &rest[start..end];
        let doc = roxmltree::Document::parse(svg)
            .unwrap_or_else(|e| panic!("an inline figure is not valid XML: {e}"));
        let title = doc
            .root_element()
            .children()
            .find(|n| n.has_tag_name("title"))
            .and_then(|n| n.text())
            .unwrap_or("untitled");
        out.push_str(&rest[..start]);
        out.push_str(&format!("[figure: {title}]"));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn self_contained(html: &str) {
    let lower = html.to_ascii_lowercase();
    for banned in [
        "<script", "http:", "https:", "src=", "url(", "@import", "<link", "<img", "<iframe",
    ] {
        assert!(!lower.contains(banned), "the page holds {banned:?}");
    }
    assert!(lower.contains("content-security-policy"));
    assert!(lower.contains("@media print"));
}

#[test]
fn one_run_gives_a_well_formed_self_contained_page() {
    let doc = suite();
    let html = report(&[("suite.json".into(), &doc)]).unwrap();
    self_contained(&html);
    let (text, svgs) = parse(&html);
    let figures: usize = doc
        .experiments
        .iter()
        .map(|e| oscost_report::experiments::plots(e).len())
        .sum::<usize>()
        // The datasheet's chart, when the run measured a headline time.
        + usize::from(
            oscost_report::plot::datasheet::plot(&[(
                "this run",
                &oscost_report::datasheet::datasheet(&doc),
            )])
            .is_some(),
        );
    assert_eq!(
        svgs, figures,
        "every figure of every experiment, and the datasheet's, inline"
    );
    // A plain run's page holds no study nobody asked for, though its cases would fill one.
    assert!(!oscost_report::study::applying_to(&doc).is_empty());
    assert!(!html.contains("class=\"experiment study\""));
    assert!(html.contains("<figcaption>datasheet.svg</figcaption>"));
    for e in &doc.experiments {
        assert!(text.contains(&e.name));
        for c in &e.cases {
            assert!(text.contains(&c.id), "{}", c.id);
        }
        for u in &e.unavailable {
            assert!(text.contains(&u.reason));
        }
        for w in &e.warnings {
            assert!(text.contains(w.as_str()), "{w}");
        }
    }
    assert!(text.contains(doc.run_id.as_deref().unwrap()));
    insta::assert_snapshot!("suite", without_figures(&html));
}

#[test]
fn the_golden_file_shows_unavailable_cases_flags_and_warnings() {
    let doc = golden();
    let html = report(&[("oscost-2.json".into(), &doc)]).unwrap();
    self_contained(&html);
    let (text, _) = parse(&html);
    assert!(text.contains("example.missing"));
    assert!(text.contains("a scripted warning on one case"));
    assert!(text.contains("a scripted warning on the whole experiment"));
    assert!(
        html.contains("class=\"tag bad\""),
        "a flagged figure is marked"
    );
    insta::assert_snapshot!("golden", without_figures(&html));
}

#[test]
fn several_runs_open_with_their_common_cases_side_by_side() {
    let a = golden();
    let mut b = golden();
    b.run_id = Some("00000000-0000-4000-8000-000000000002".into());
    for e in &mut b.experiments {
        for c in &mut e.cases {
            c.median_ns *= 2.0;
            c.ci95_ns = c.ci95_ns.map(|v| v * 2.0);
            c.raw_ns.iter_mut().for_each(|v| *v *= 2.0);
        }
        // A case only the first run has is left out of the comparison.
        e.cases.pop();
    }
    let html = report(&[("a.json".into(), &a), ("b.json".into(), &b)]).unwrap();
    self_contained(&html);
    let (text, svgs) = parse(&html);
    assert!(text.contains("Runs compared"));
    assert!(text.contains("+100 %"));
    assert!(html.contains("class=\"num slower\""));
    let per_run: usize = [&a, &b]
        .iter()
        .flat_map(|d| &d.experiments)
        .map(|e| oscost_report::experiments::plots(e).len())
        .sum();
    assert_eq!(
        svgs,
        per_run + 2,
        "each run's figures and one comparison per experiment"
    );
    insta::assert_snapshot!("golden-two-runs", without_figures(&html));
}

#[test]
fn every_string_from_a_result_file_is_escaped() {
    let hostile = "<script>alert(1)</script> \"quoted\" & 'apostrophe'";
    let mut doc = golden();
    doc.run_id = Some(hostile.into());
    doc.started_at = Some(hostile.into());
    doc.environment.cpu_model = Some(hostile.into());
    doc.environment.command_line = vec![hostile.into()];
    for e in &mut doc.experiments {
        e.warnings.push(hostile.into());
        e.params.insert(hostile.into(), hostile.into());
        for u in &mut e.unavailable {
            u.reason = hostile.into();
            u.description = hostile.into();
        }
        for d in &mut e.derived {
            d.description = hostile.into();
            d.flagged = Some(hostile.into());
        }
        for c in &mut e.cases {
            c.description = hostile.into();
            c.unit = hostile.into();
            c.warnings.push(hostile.into());
            for k in &mut c.checks {
                k.detail = hostile.into();
            }
        }
        e.cases[0].id = format!("example.{hostile}");
    }
    let html = report(&[(hostile.into(), &doc), ("second".into(), &doc)]).unwrap();
    assert!(!html.contains("<script"), "a tag came through unescaped");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;"));
    assert!(html.contains("&quot;quoted&quot; &amp; "));
    self_contained(&html);
    // Parsed back, the page gives the very text the result held.
    let (text, _) = parse(&html);
    assert!(text.matches(hostile).count() > 20, "{text}");
}

/// A latency case both runs measured: its percentiles side by side in the comparison, each
/// run's value with its interval and the later run's ratio against the first; a page of runs
/// without one has no such table.
#[test]
fn the_comparison_sets_a_latency_cases_percentiles_side_by_side() {
    let latency = |from| common::with_latency_case(golden(), from);
    let (a, b) = (latency(10_000.0), latency(20_000.0));
    let id = a.experiments[0].cases[0].id.clone();
    let html = report(&[("a.json".into(), &a), ("b.json".into(), &b)]).unwrap();
    self_contained(&html);
    let (text, _) = parse(&html);
    assert!(text.contains("Percentiles side by side"), "{text}");
    let table = &html[html.find("class=\"side percentiles\"").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    for p in ["p50", "p90", "p99", "p99.9"] {
        assert!(table.contains(&format!("<td>{p}</td>")), "{table}");
    }
    assert!(table.contains(&format!("<td class=\"id\">{id}</td>")));
    // p50: 11 µs against 21 µs, each interval from the samples, and apart.
    assert!(table.contains("1.909"), "{table}");
    assert!(table.contains("apart"), "{table}");
    insta::assert_snapshot!("percentiles-two-runs", table);
    let plain = report(&[("a.json".into(), &golden()), ("b.json".into(), &golden())]).unwrap();
    assert!(!plain.contains("Percentiles side by side"));
}

#[test]
fn the_report_draws_net_round_trips_by_socket_kind() {
    let mut doc = golden();
    let mut e = doc.experiments[0].clone();
    let model = e.cases[0].clone();
    e.name = "net".into();
    e.derived.clear();
    e.cases = ["tcp", "udp", "unix", "unix-dgram"]
        .iter()
        .flat_map(|k| ["same", "cross"].map(|p| format!("net.{k}.rtt.{p}")))
        .map(|id| {
            let mut c = model.clone();
            c.id = id;
            c
        })
        .collect();
    doc.experiments.push(e);
    let html = report(&[("net.json".to_owned(), &doc)]).unwrap();
    parse(&html);
    assert!(
        html.contains("net: a 1-byte round trip by socket kind"),
        "the by-kind figure is in the page"
    );
    assert!(html.contains("net.unix-dgram.rtt.cross"));
}

/// A failed case the datasheet marks is not named again in the list under it; one it does not
/// show is.
#[test]
fn a_failed_case_is_named_once() {
    let mut doc = suite();
    for c in doc.experiments.iter_mut().flat_map(|e| e.cases.iter_mut()) {
        if c.id == "syscall.getpid" || c.id == "syscall.lseek" {
            c.checks_passed = false;
        }
    }
    let html = report(&[("suite.json".into(), &doc)]).unwrap();
    // getpid in the datasheet's row, lseek (no datasheet line) in the list.
    for id in ["syscall.getpid", "syscall.lseek"] {
        let code = format!("<code>{id}</code>");
        assert_eq!(html.matches(&code).count(), 1, "{id}");
    }
    assert!(!html.contains("failed a check</span> <code>syscall.getpid"));
}

/// A datasheet line whose check failed while the host held the CPUs says so, as a warning,
/// not as a failure of the OS.
#[test]
fn a_check_failed_while_the_host_held_the_cpus_is_a_warning_in_the_datasheet() {
    let mut doc = suite();
    let e = doc
        .experiments
        .iter_mut()
        .find(|e| e.cases.iter().any(|c| c.id == "syscall.getpid"))
        .unwrap();
    for c in e.cases.iter_mut().filter(|c| c.id == "syscall.getpid") {
        c.checks_passed = false;
    }
    e.load = Some(oscost_model::env::RunLoad {
        steal_s: Some(0.5),
        quiet: false,
        ..oscost_model::example::quiet_load(1.0)
    });
    let html = report(&[("suite.json".into(), &doc)]).unwrap();
    parse(&html);
    assert!(
        html.contains(
            "<span class=\"tag warn\">failed a check while the host took 25 % of the CPUs \
             (steal): not the OS&#x27;s doing</span>"
        ) || html.contains(
            "<span class=\"tag warn\">failed a check while the host took 25 % of the CPUs \
             (steal): not the OS's doing</span>"
        ),
        "{}",
        &html[html.find("failed a check").unwrap_or(0)..][..300]
    );
}
