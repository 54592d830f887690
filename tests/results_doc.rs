//! `docs/results.md` lists every field of the result document, at every level.
//!
//! The fields are taken from real documents, not from a list kept by hand: the golden document
//! `tests/golden/oscost-2.json`, read with `oscost_model::read` and written back as JSON, and
//! the same document as a busy machine with everything readable would have made it, so that
//! lists the golden file leaves empty (`busiest_foreign`) and values it leaves `null` show
//! their fields too. Each field is named by its path: `environment.load.busiest_foreign[].comm`
//! is the field `comm` of any element of the list `environment.load.busiest_foreign`. Maps
//! whose keys are data, not field names (`params`, `counters`, `boot_params`,
//! `vulnerabilities`, `steal_by_cpu_s`), are leaves.
//!
//! The matching rule: every object of the document has a section in `docs/results.md` whose
//! heading names its path in backticks (``### `environment.clock` ``; one section may name
//! several paths, the top-level object's section is headed "The document"). Every field of
//! the object must be named in backticks in the first cell of a table row of that section,
//! and every field such a row names must exist at each path the heading names, so that the
//! page neither misses a field nor keeps one that is gone.

use oscost_model::env::{ForeignProcess, RunLoad};
use oscost_model::ResultDoc;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Maps whose keys are data (parameter names, counter names, CPU numbers, file names): the map
/// is a field, its keys are not.
const FREE_FORM_MAPS: &[&str] = &[
    "environment.boot_params",
    "environment.security.vulnerabilities",
    "environment.load.steal_by_cpu_s",
    "experiments[].params",
    "experiments[].load.steal_by_cpu_s",
    "experiments[].cases[].params",
    "experiments[].cases[].counters",
];

/// The heading of the section documenting the top-level object, whose path is empty.
const DOCUMENT_HEADING: &str = "The document";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn golden() -> ResultDoc {
    let path = root().join("tests/golden/oscost-2.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    oscost_model::read(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn results_md() -> String {
    let path = root().join("docs/results.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A run on a busy machine: other processes named, steal time, warnings.
fn busy_load() -> RunLoad {
    let mut load = oscost_model::example::quiet_load(1.0);
    load.steal_s = Some(0.05);
    load.steal_by_cpu_s = BTreeMap::from([(1, 0.05)]);
    load.foreign_cpu_s = 0.4;
    load.foreign_cpu_share = 0.2;
    load.busiest_foreign = vec![ForeignProcess {
        pid: 4242,
        comm: "busy".into(),
        cpu_s: 0.4,
        share_of_one_cpu: 0.4,
    }];
    load.quiet = false;
    load.warnings = vec!["other processes used 20.0 % of the CPUs during the run".into()];
    load
}

/// The golden document as a busy machine with every value readable would have made it: every
/// list has an element and every optional value is set somewhere, so every field is seen.
fn busy_document(mut doc: ResultDoc) -> ResultDoc {
    let s = |v: &str| Some(v.to_owned());
    let env = &mut doc.environment;
    env.git_commit = s("0123456789ab");
    env.rustc_version = s("rustc 1.80.0");
    env.hostname = s("node-1");
    env.fleet = Some(oscost_model::env::FleetRun {
        host_name: s("rack1-node-1"),
        runner: s("ansible-core 2.14.18, shell module over ssh"),
    });
    env.sampling = Some(oscost_model::env::Sampling {
        quick: true,
        samples: 10,
        min_runs: 5,
        warmup_ns: 4_000_000,
        min_sample_ns: 1_000_000,
        budget_ns: 300_000_000,
    });
    env.nice = Some(-19);
    env.clock.kernel_stated_hz = Some(1e9);
    env.clock.fallback_reason = s("an example reason");
    env.virtualisation.cpuid_signature = s("KVMKVMKVM");
    env.virtualisation.sys_hypervisor_type = s("xen");
    env.security.cmdline_pti = s("off");
    env.security.seccomp_filters = Some(2);
    env.power.cpufreq_driver = s("acpi-cpufreq");
    env.power.cpufreq_governor = s("performance");
    env.power.cpufreq_cur_khz = Some(1_000_000);
    env.power.boost = Some(true);
    env.power.boost_source = s("/sys/devices/system/cpu/cpufreq/boost");
    env.scheduler.preempt_boot_param = s("full");
    env.scheduler.isolated_cpus = Some(vec![1]);
    env.scheduler.nohz_full_cpus = Some(vec![1]);
    env.load = Some(busy_load());
    let mut checks_seen = 0;
    for experiment in &mut doc.experiments {
        experiment.load = Some(busy_load());
        experiment.notes.push("an example note".into());
        experiment.controls = Some(oscost_model::MachineControls {
            kernel_entry_ns: vec![100.0, 101.0],
            user_loop_ns: vec![40_000.0, 40_100.0],
            kernel_entry_during_ns: vec![99.0, 102.0, 100.0],
            user_loop_during_ns: vec![40_050.0, 39_900.0, 40_000.0],
        });
        if let Some(case) = experiment.cases.last_mut() {
            case.control = oscost_model::ControlKind::UserLoop;
            case.process_medians_ns = vec![620.0, 790.0];
        }
        for case in &mut experiment.cases {
            case.warnings.push("an example warning".into());
            case.notes.push("an example note".into());
            for check in &mut case.checks {
                use oscost_model::case::Bound;
                let bounds = [
                    Bound::AtLeast(1.0),
                    Bound::AtMost(1.0),
                    Bound::Within(0.05),
                    Bound::Between(0.95, 2.0),
                ];
                check.bound = Some(bounds[checks_seen % bounds.len()]);
                checks_seen += 1;
            }
        }
        for derived in &mut experiment.derived {
            derived.warnings.push("an example warning".into());
        }
    }
    doc
}

/// What a walk over documents saw.
#[derive(Default)]
struct Fields {
    /// (path of the object, field name) for every field of every object.
    fields: BTreeSet<(String, String)>,
    /// Paths of values that were `null` somewhere, and of those that were not somewhere.
    null: BTreeSet<String>,
    not_null: BTreeSet<String>,
    /// Paths of lists that were empty somewhere, and of those that had an element somewhere.
    empty: BTreeSet<String>,
    filled: BTreeSet<String>,
}

impl Fields {
    fn of(docs: &[&ResultDoc]) -> Fields {
        let mut seen = Fields::default();
        for doc in docs {
            seen.walk(&serde_json::to_value(doc).unwrap(), "");
        }
        seen
    }

    fn walk(&mut self, value: &Value, path: &str) {
        match value {
            Value::Null => {
                self.null.insert(path.to_owned());
            }
            Value::Object(map) => {
                self.not_null.insert(path.to_owned());
                for (name, child) in map {
                    self.fields.insert((path.to_owned(), name.clone()));
                    let child_path = if path.is_empty() {
                        name.clone()
                    } else {
                        format!("{path}.{name}")
                    };
                    if FREE_FORM_MAPS.contains(&child_path.as_str()) {
                        self.not_null.insert(child_path);
                    } else {
                        self.walk(child, &child_path);
                    }
                }
            }
            Value::Array(items) => {
                self.not_null.insert(path.to_owned());
                if items.is_empty() {
                    self.empty.insert(path.to_owned());
                } else {
                    self.filled.insert(path.to_owned());
                }
                for item in items {
                    self.walk(item, &format!("{path}[]"));
                }
            }
            _ => {
                self.not_null.insert(path.to_owned());
            }
        }
    }

    /// Paths of the objects that have fields.
    fn objects(&self) -> BTreeSet<&str> {
        self.fields.iter().map(|(o, _)| o.as_str()).collect()
    }

    /// Values the walk could not look inside: a list empty wherever it appears, or a value
    /// `null` wherever it appears, may hide fields.
    fn blind_spots(&self) -> Vec<String> {
        let lists = self
            .empty
            .difference(&self.filled)
            .map(|p| format!("`{p}` is always empty"));
        let nulls = self
            .null
            .difference(&self.not_null)
            .map(|p| format!("`{p}` is always null"));
        lists.chain(nulls).collect()
    }
}

/// One section of the page: the object paths its heading names and the field names its
/// tables' rows name.
#[derive(Debug)]
struct Section {
    heading: String,
    objects: Vec<String>,
    fields: BTreeSet<String>,
}

/// The spans of `text` between backticks.
fn backticked(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// The page's sections, each with the known object paths its heading names (the top-level
/// object's is the empty path) and the names in the first cell of its table rows.
fn sections(markdown: &str, objects: &BTreeSet<&str>) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    let mut in_code = false;
    for line in markdown.lines() {
        let line = line.trim();
        if line.starts_with("```") {
            in_code = !in_code;
        } else if in_code {
            continue;
        } else if line.starts_with('#') {
            let heading = line.trim_start_matches('#').trim().to_owned();
            let objects = if heading == DOCUMENT_HEADING {
                vec![String::new()]
            } else {
                backticked(&heading)
                    .filter(|span| objects.contains(span))
                    .map(str::to_owned)
                    .collect()
            };
            out.push(Section {
                heading,
                objects,
                fields: BTreeSet::new(),
            });
        } else if let Some(row) = line.strip_prefix('|') {
            let first = row.split('|').next().unwrap_or("").trim();
            if first == "field" || first.chars().all(|c| c == '-' || c == ':') {
                continue;
            }
            if let Some(section) = out.last_mut() {
                section.fields.extend(backticked(first).map(str::to_owned));
            }
        }
    }
    out
}

/// Every way `markdown` fails the matching rule for `seen`, one line each.
fn problems(markdown: &str, seen: &Fields) -> Vec<String> {
    let objects = seen.objects();
    let sections = sections(markdown, &objects);
    let mut found = Vec::new();
    let mut documented: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for section in &sections {
        for object in &section.objects {
            documented
                .entry(object.as_str())
                .or_default()
                .extend(section.fields.iter().map(String::as_str));
        }
        if section.objects.is_empty() && !section.fields.is_empty() {
            found.push(format!(
                "the section \"{}\" lists fields but its heading names no object of the \
                 document (known: {objects:?})",
                section.heading
            ));
        }
    }
    for (object, name) in &seen.fields {
        let full = if object.is_empty() {
            name.clone()
        } else {
            format!("{object}.{name}")
        };
        match documented.get(object.as_str()) {
            None => found.push(format!(
                "`{full}`: no section's heading names `{object}`{}",
                if object.is_empty() {
                    format!(" (the top-level object's section is headed \"{DOCUMENT_HEADING}\")")
                } else {
                    String::new()
                }
            )),
            Some(names) if !names.contains(name.as_str()) => found.push(format!(
                "`{full}`: not in a table row of the section on `{object}`"
            )),
            Some(_) => {}
        }
    }
    for section in &sections {
        for object in &section.objects {
            for name in &section.fields {
                if !seen.fields.contains(&(object.clone(), name.clone())) {
                    found.push(format!(
                        "the section \"{}\" lists `{name}`, which `{object}` does not have",
                        section.heading
                    ));
                }
            }
        }
    }
    found
}

fn seen() -> Fields {
    let golden = golden();
    let busy = busy_document(golden.clone());
    // The Windows agent's document (made under Wine) has what oscost's own never write.
    let windows =
        oscost_model::read(include_str!("golden/windows-agent-wine.json")).expect("agent doc");
    Fields::of(&[&golden, &busy, &windows])
}

#[test]
fn every_field_of_the_document_is_on_the_results_page() {
    let seen = seen();
    let blind = seen.blind_spots();
    assert!(
        blind.is_empty(),
        "fields hidden from this test (give them a value in `busy_document`):\n{}",
        blind.join("\n")
    );
    // The walk saw every level, down to the elements of lists the golden file leaves empty.
    for field in [
        ("", "schema"),
        ("environment.clock", "kernel_stated_hz"),
        ("environment.power.idle_states[]", "latency_us"),
        ("environment.load", "probe_s"),
        ("environment.load.busiest_foreign[]", "comm"),
        ("experiments[].load.busiest_foreign[]", "share_of_one_cpu"),
        ("experiments[].cases[].checks[]", "counted"),
        ("experiments[].cases[].series[]", "points"),
        ("experiments[].derived[]", "flagged"),
        ("experiments[].unavailable[]", "reason"),
    ] {
        let field = (field.0.to_owned(), field.1.to_owned());
        assert!(seen.fields.contains(&field), "not seen: {field:?}");
    }
    let found = problems(&results_md(), &seen);
    assert!(
        found.is_empty(),
        "docs/results.md does not match the result document:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_golden_document_alone_hides_fields_and_the_busy_one_shows_them() {
    let blind = Fields::of(&[&golden()]).blind_spots();
    for hidden in [
        "`environment.load.busiest_foreign` is always empty",
        "`experiments[].load.busiest_foreign` is always empty",
    ] {
        assert!(blind.iter().any(|b| b == hidden), "{hidden}: {blind:?}");
    }
    assert_eq!(seen().blind_spots(), Vec::<String>::new());
}

#[test]
fn free_form_maps_are_leaves() {
    let seen = seen();
    for map in FREE_FORM_MAPS {
        assert!(
            seen.not_null.contains(*map),
            "{map} is not in the document: remove it from FREE_FORM_MAPS"
        );
        assert!(
            !seen.objects().contains(map),
            "{map}'s keys were taken for field names"
        );
    }
}

/// The page without the table row naming `name` in the section headed `heading`.
fn without_row(markdown: &str, heading: &str, name: &str) -> String {
    let mut current = String::new();
    let mut removed = 0;
    let kept: Vec<&str> = markdown
        .lines()
        .filter(|line| {
            if line.starts_with('#') {
                current = line.trim_start_matches('#').trim().to_owned();
            }
            let drop = current.starts_with(heading) && line.starts_with(&format!("| `{name}` |"));
            removed += usize::from(drop);
            !drop
        })
        .collect();
    assert_eq!(removed, 1, "no single row `{name}` under \"{heading}\"");
    kept.join("\n")
}

#[test]
fn a_missing_row_is_caught() {
    let seen = seen();
    let page = results_md();
    for (heading, object, name) in [
        (DOCUMENT_HEADING, "", "schema"),
        ("`environment.load`", "environment.load", "probe_s"),
        (
            "`environment.load.busiest_foreign[]`",
            "environment.load.busiest_foreign[]",
            "comm",
        ),
        ("`experiments[].cases[]`", "experiments[].cases[]", "raw_ns"),
        (
            "`experiments[].cases[].checks[]`",
            "experiments[].cases[].checks[]",
            "detail",
        ),
    ] {
        let full = if object.is_empty() {
            name.to_owned()
        } else {
            format!("{object}.{name}")
        };
        let found = problems(&without_row(&page, heading, name), &seen);
        assert!(
            found.iter().any(|p| p.starts_with(&format!("`{full}`:"))),
            "removing `{full}` went unnoticed: {found:?}"
        );
    }
}

#[test]
fn a_row_for_a_field_that_does_not_exist_is_caught() {
    let page = results_md().replacen(
        "| `probe_s` |",
        "| `probe_s` | the probes' time |\n| `no_such_field` |",
        1,
    );
    let found = problems(&page, &seen());
    assert!(
        found.iter().any(|p| p.contains("`no_such_field`")),
        "{found:?}"
    );
}
