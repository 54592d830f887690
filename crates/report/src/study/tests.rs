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
        assert!(list_text().contains(s.info.name));
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
