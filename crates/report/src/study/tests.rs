use super::*;

#[test]
fn five_studies_each_with_its_baselines() {
    assert_eq!(STUDIES.len(), 5);
    for s in STUDIES {
        for b in s.info.baselines {
            assert!(crate::baselines::find(b).is_some(), "{}: {b}", s.info.name);
            assert_eq!(of_baseline(b).map(|x| x.info.name), Some(s.info.name));
        }
        assert!(find(s.info.name).is_some());
        assert!(list_text(None).contains(s.info.name));
    }
}

#[test]
fn with_no_run_the_tables_hold_the_published_figures_alone() {
    for s in STUDIES {
        let tables = s.tables(None);
        assert!(!tables.is_empty(), "{}", s.info.name);
        for t in &tables {
            for r in &t.rows {
                assert_eq!(r.len(), t.head.len(), "{}: {}", s.info.name, t.title);
            }
        }
        assert_eq!(s.plots(None).len(), 1, "{}", s.info.name);
    }
}

#[test]
fn a_figure_from_a_noisy_case_is_marked_and_a_failed_check_outranks_it() {
    let quiet = crate::views::testkit::case("split.threads.one.1", "run", 100.0);
    let mut noisy = crate::views::testkit::case("split.threads.one.2", "run", 80.0);
    noisy.noisy = true;
    let f = overhead_figure("study.x.o".into(), String::new(), &quiet, &noisy).unwrap();
    assert_eq!(
        f.doubt.as_deref(),
        Some("noisy or disturbed: split.threads.one.2")
    );
    assert!(cell(Some(&f)).ends_with(" ~"), "{}", cell(Some(&f)));
    let mut failed = f.clone();
    failed.flagged = Some("a check failed in split.threads.one.2".into());
    assert!(cell(Some(&failed)).ends_with(" !"));
    let calm = overhead_figure("study.x.p".into(), String::new(), &quiet, &quiet).unwrap();
    assert_eq!(calm.doubt, None);
    assert!(!cell(Some(&calm)).ends_with('~'));
    // A figure made of others carries their doubt.
    assert_eq!(doubt_of_figures([&f, &calm]), f.doubt);
}

#[test]
fn the_list_of_studies_fits_a_narrow_terminal_with_every_word() {
    let wide = list_text(None);
    let narrow = list_text(Some(60));
    assert!(narrow.lines().all(|l| l.chars().count() <= 60), "{narrow}");
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(words(&narrow), words(&wide));
}
