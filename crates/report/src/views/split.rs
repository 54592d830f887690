//! `split` read as the studies read it: each point's time against the ideal T1 / min(N, CPUs),
//! and the speed-up that the extra CPUs gave.

use super::View;
use crate::format::{fmt_ns, pct_signed as pct};
use oscost_model::{CaseResult, ExperimentResult, MessageKind};

/// The ideal time of N tasks sharing work that takes one flow `t1` on one CPU, on `cpus` CPUs.
pub fn ideal(t1: f64, tasks: u64, cpus: u64) -> f64 {
    t1 / tasks.min(cpus).max(1) as f64
}

/// How much longer `t` is than the ideal for N tasks on `cpus` CPUs, in percent.
pub fn overhead_pct(t: f64, t1: f64, tasks: u64, cpus: u64) -> f64 {
    (t / ideal(t1, tasks, cpus) - 1.0) * 100.0
}

fn param_u64(c: &CaseResult, key: &str) -> Option<u64> {
    c.params.get(key).and_then(|v| v.as_u64())
}

fn param_str<'a>(c: &'a CaseResult, key: &str) -> Option<&'a str> {
    c.params.get(key).and_then(|v| v.as_str())
}

fn counter(c: &CaseResult, key: &str) -> Option<f64> {
    c.counters.get(key).copied()
}

fn num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
        None => "-".into(),
    }
}

const SETS: [(&str, &str); 4] = [
    ("one", "on one CPU"),
    ("two", "on the first two CPUs of the set"),
    ("all", "on all CPUs of the set, placed by the scheduler"),
    ("balanced", "pinned evenly, N / CPUs tasks per CPU"),
];

/// The case every split figure is held against (T1: one flow on one CPU), which the
/// experiment names in its `baseline` parameter.
pub(crate) fn baseline(e: &ExperimentResult) -> Option<&CaseResult> {
    e.params
        .get("baseline")
        .and_then(|v| v.as_str())
        .and_then(|id| e.cases.iter().find(|c| c.id == id))
}

/// The overhead tables (one per CPU set) and the speed-up table.
pub fn views(e: &ExperimentResult) -> Vec<View> {
    let Some(base) = baseline(e) else {
        return Vec::new();
    };
    let t1 = base.median_ns;
    let t1_work = counter(base, "work_ns").unwrap_or(t1);
    let mut out = Vec::new();
    for (set, what) in SETS {
        let cases: Vec<&CaseResult> = e
            .cases
            .iter()
            .filter(|c| param_str(c, "set") == Some(set))
            .collect();
        if cases.is_empty() {
            continue;
        }
        let mut rows: Vec<(u64, u8, Vec<String>)> = cases
            .iter()
            .filter_map(|c| {
                let n = param_u64(c, "tasks")?;
                let cpus = param_u64(c, "cpu_count")?;
                let form = param_str(c, "form")?;
                let order = match form {
                    "single" => 0,
                    "threads" => 1,
                    _ => 2,
                };
                let work = counter(c, "work_ns");
                Some((
                    n,
                    order,
                    vec![
                        n.to_string(),
                        form.to_string(),
                        fmt_ns(c.median_ns),
                        pct(overhead_pct(c.median_ns, t1, n, cpus)),
                        work.map_or("-".into(), |w| pct(overhead_pct(w, t1_work, n, cpus))),
                        num(counter(c, "switches_per_task")),
                        num(counter(c, "migrations")),
                        counter(c, "finish_spread_ns").map_or("-".into(), fmt_ns),
                    ],
                ))
            })
            .collect();
        rows.sort_by_key(|r| (r.0, r.1));
        out.push(View {
            detail: Vec::new(),
            title: format!("split {what}: time against the ideal T1 / min(N, CPUs)"),
            head: [
                "N",
                "form",
                "time",
                "vs ideal",
                "work only",
                "switches/task",
                "migrations",
                "finish spread",
            ]
            .map(String::from)
            .to_vec(),
            rows: rows.into_iter().map(|r| r.2).collect(),
            notes: Vec::new(),
        });
    }
    if let Some(last) = out.last_mut() {
        last.notes.push(format!(
            "T1 = {} ({}: one flow, one CPU, measured in the same rounds); `vs ideal` counts \
             creating and joining the tasks, `work only` runs from the barrier start to the \
             last finish (its T1: {}); switches per task are the kernel's voluntary + \
             involuntary counts; the finish spread is last minus first finish.",
            fmt_ns(t1),
            base.id,
            fmt_ns(t1_work)
        ));
    }
    if let Some(v) = speedup(e) {
        out.push(v);
    }
    if let Some(v) = speedup_two(e) {
        out.push(v);
    }
    out
}

/// The line under a speed-up table for a point whose speed-up was withheld: `N form: +3 % of
/// a possible +100 %: the machine withheld the CPUs: steal 41 % …`.
fn withheld_note(c: &CaseResult, n: u64, form: &str) -> Option<String> {
    let w = c
        .warnings
        .iter()
        .filter(|w| w.kind() == MessageKind::SpeedUpWithheld)
        .find_map(|w| w.rest().strip_prefix(": "))?;
    Some(format!("{n} {form}: {w}"))
}

fn find<'a>(e: &'a ExperimentResult, form: &str, set: &str, n: u64) -> Option<&'a CaseResult> {
    e.cases.iter().find(|c| {
        param_str(c, "form") == Some(form)
            && param_str(c, "set") == Some(set)
            && param_u64(c, "tasks") == Some(n)
    })
}

/// Time on one CPU over time on the first two, per form and N, where both were measured: the
/// Windows study's summary of two CPUs against one.
fn speedup_two(e: &ExperimentResult) -> Option<View> {
    let mut rows = Vec::new();
    let mut why = Vec::new();
    for c in e
        .cases
        .iter()
        .filter(|c| param_str(c, "set") == Some("one"))
    {
        let (Some(form), Some(n)) = (param_str(c, "form"), param_u64(c, "tasks")) else {
            continue;
        };
        let Some(two) = find(e, form, "two", n) else {
            continue;
        };
        why.extend(withheld_note(two, n, form).map(|w| ((n, form == "processes"), w)));
        rows.push((
            n,
            form == "processes",
            vec![
                n.to_string(),
                form.to_string(),
                fmt_ns(c.median_ns),
                fmt_ns(two.median_ns),
                pct((c.median_ns / two.median_ns - 1.0) * 100.0),
            ],
        ));
    }
    if rows.is_empty() {
        return None;
    }
    rows.sort_by_key(|r| (r.0, r.1));
    why.sort();
    let mut notes = vec![
        "speed-up = time on one CPU / time on the first two CPUs of the set - 1 (a perfect \
         two-fold speed-up would read +100 %)"
            .to_string(),
    ];
    notes.extend(why.into_iter().map(|(_, w)| w));
    Some(View {
        detail: Vec::new(),
        title: "split: what two CPUs gave over one".into(),
        head: ["N", "form", "one CPU", "two CPUs", "speed-up"]
            .map(String::from)
            .to_vec(),
        rows: rows.into_iter().map(|r| r.2).collect(),
        notes,
    })
}

/// Time on one CPU over time on all CPUs, per form and N, where both were measured.
fn speedup(e: &ExperimentResult) -> Option<View> {
    let find = |form: &str, set: &str, n: u64| find(e, form, set, n);
    let mut rows = Vec::new();
    let mut why = Vec::new();
    for c in e
        .cases
        .iter()
        .filter(|c| param_str(c, "set") == Some("one"))
    {
        let (Some(form), Some(n)) = (param_str(c, "form"), param_u64(c, "tasks")) else {
            continue;
        };
        let Some(all) = find(form, "all", n) else {
            continue;
        };
        let balanced = find(form, "balanced", n);
        why.extend(withheld_note(all, n, form).map(|w| ((n, form == "processes"), w)));
        rows.push((
            n,
            form == "processes",
            vec![
                n.to_string(),
                form.to_string(),
                fmt_ns(c.median_ns),
                fmt_ns(all.median_ns),
                pct((c.median_ns / all.median_ns - 1.0) * 100.0),
                balanced.map_or("-".into(), |b| fmt_ns(b.median_ns)),
            ],
        ));
    }
    if rows.is_empty() {
        return None;
    }
    rows.sort_by_key(|r| (r.0, r.1));
    why.sort();
    let cpus = e
        .cases
        .iter()
        .find(|c| param_str(c, "set") == Some("all"))
        .and_then(|c| param_u64(c, "cpu_count"))
        .unwrap_or(0);
    Some(View {
        detail: Vec::new(),
        title: format!("split: what {cpus} CPUs gave over one"),
        head: ["N", "form", "one CPU", "all CPUs", "speed-up", "balanced"]
            .map(String::from)
            .to_vec(),
        rows: rows.into_iter().map(|r| r.2).collect(),
        notes: std::iter::once(format!(
            "speed-up = time on one CPU / time on all {cpus} CPUs - 1 (a perfect {cpus}-fold \
             speed-up would read {:+.0} %)",
            (cpus as f64 - 1.0) * 100.0
        ))
        .chain(why.into_iter().map(|(_, w)| w))
        .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::testkit;

    #[test]
    fn overhead_is_against_t1_over_the_usable_cpus() {
        // One CPU: every N has the ideal T1.
        assert_eq!(ideal(100.0, 64, 1), 100.0);
        assert!((overhead_pct(110.0, 100.0, 64, 1) - 10.0).abs() < 1e-9);
        // Two CPUs: one task cannot use the second; two or more halve T1.
        assert_eq!(ideal(100.0, 1, 2), 100.0);
        assert_eq!(ideal(100.0, 2, 2), 50.0);
        assert_eq!(ideal(100.0, 8192, 2), 50.0);
        assert!((overhead_pct(60.0, 100.0, 4, 2) - 20.0).abs() < 1e-9);
        // The Windows study, two CPUs, N = 8192: 8343 ms against N = 2's 5453 ms, which is
        // the ideal there (T1 = 2 x 5453): +53 %.
        assert!((overhead_pct(8343.0, 2.0 * 5453.0, 8192, 2) - 53.0).abs() < 0.1);
        // Faster than ideal reads negative.
        assert!(overhead_pct(90.0, 100.0, 1, 1) < 0.0);
    }

    fn case(form: &str, set: &str, n: u64, median: f64, warning: Option<&str>) -> CaseResult {
        let mut c = testkit::case(&format!("split.{form}.{set}.{n}"), "run", median);
        c.params.insert("form".into(), form.into());
        c.params.insert("set".into(), set.into());
        c.params.insert("tasks".into(), n.into());
        c.params.insert("cpu_count".into(), 2.into());
        c.warnings.extend(warning.map(oscost_model::Message::from));
        c
    }

    #[test]
    fn a_withheld_speedup_is_said_under_its_table() {
        let why = "speed-up withheld: +3 % of a possible +100 %: the machine withheld the \
                   CPUs: steal 41 % of CPUs 0-1 during these runs (9 of 11 over 5 %)";
        let e = ExperimentResult {
            name: "split".into(),
            params: [(
                "baseline".to_owned(),
                serde_json::json!("split.single.one.1"),
            )]
            .into_iter()
            .collect(),
            cases: vec![
                case("single", "one", 1, 30e6, None),
                case("threads", "one", 2, 30e6, None),
                case("threads", "all", 2, 29e6, Some(why)),
                case("processes", "one", 2, 30e6, None),
                case("processes", "all", 2, 16e6, None),
            ],
            unavailable: vec![],
            derived: vec![],
            warnings: vec![],
            notes: vec![],
            load: None,
            controls: None,
        };
        let v = views(&e);
        let speedup = v.iter().find(|v| v.title.contains("CPUs gave")).unwrap();
        assert_eq!(speedup.rows.len(), 2);
        assert_eq!(speedup.notes.len(), 2, "{:?}", speedup.notes);
        assert_eq!(
            speedup.notes[1],
            "2 threads: +3 % of a possible +100 %: the machine withheld the CPUs: steal 41 % of \
             CPUs 0-1 during these runs (9 of 11 over 5 %)"
        );
    }
}
