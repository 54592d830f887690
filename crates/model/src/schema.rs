//! The versioned result document (`"schema": "oscost/2"`), documented in `docs/results.md`.
//!
//! Units live in field names (`median_ns`, `median_cycles`). Deserialisation rejects unknown
//! fields, so a schema change that forgets to bump the version fails the golden-file test.

use crate::case::{Check, Series};
use crate::env::{Environment, RunLoad};
use crate::message::Message;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema identifier written into every document.
pub const SCHEMA: &str = "oscost/2";

/// Earlier schema versions [`read`] still accepts. `oscost/1` lacks only the run's id and
/// start time, which `oscost/2` added.
pub const OLDER_SCHEMAS: &[&str] = &["oscost/1"];

/// Why a result document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Not JSON, or no `schema` string at its top.
    #[error("not an oscost result document: {0}")]
    NotADocument(String),
    /// A schema this version of oscost does not know.
    #[error("result schema `{0}` is not one this oscost reads ({SCHEMA} or older); use the oscost that wrote it, or a newer one")]
    Unsupported(String),
    /// The right schema, but the fields do not match it.
    #[error("not a valid {SCHEMA} document: {0}")]
    Invalid(serde_json::Error),
}

/// Reads a result document of any schema version this oscost knows ([`SCHEMA`] and
/// [`OLDER_SCHEMAS`]); the version is checked first, so a document of another version is named
/// as such instead of failing on its first unknown field. An older document comes back in the
/// current form, its `schema` field updated and what it lacks left `None`.
pub fn read(text: &str) -> Result<ResultDoc, ReadError> {
    #[derive(Deserialize)]
    struct Header {
        schema: String,
    }
    let header = |text: &str| -> Result<Header, ReadError> {
        serde_json::from_str(text).map_err(|e| ReadError::NotADocument(e.to_string()))
    };
    // The schema from the first key, where oscost writes it, so that a document is parsed
    // once; from a look through the whole object otherwise.
    let header = match leading_schema(text) {
        Some(schema) => Header { schema },
        None => header(text)?,
    };
    // A document that fails to parse is first asked whether it is JSON at all, as above.
    let parse = |text: &str| -> Result<ResultDoc, ReadError> {
        serde_json::from_str(text).map_err(|e| match serde_json::from_str::<Header>(text) {
            Err(h) => ReadError::NotADocument(h.to_string()),
            Ok(_) => ReadError::Invalid(e),
        })
    };
    let invalid = |e: String| ReadError::Invalid(serde::de::Error::custom(e));
    check_no_nul(text).map_err(invalid)?;
    if header.schema == SCHEMA {
        let mut doc: ResultDoc = parse(text)?;
        check_identity(&doc).map_err(invalid)?;
        check_samples(&doc).map_err(invalid)?;
        check_times(&doc).map_err(invalid)?;
        check_summaries(&doc).map_err(invalid)?;
        check_unique_ids(&doc).map_err(invalid)?;
        // One run, one id: `3F1C…` and `3f1c…` are the same UUID.
        doc.run_id = doc.run_id.map(|id| id.to_ascii_lowercase());
        return Ok(doc);
    }
    if !OLDER_SCHEMAS.contains(&header.schema.as_str()) {
        return Err(ReadError::Unsupported(header.schema));
    }
    let mut doc: ResultDoc = parse(text)?;
    if doc.run_id.is_some() || doc.started_at.is_some() {
        return Err(ReadError::Invalid(serde::de::Error::custom(format!(
            "{} has no run_id or started_at",
            header.schema
        ))));
    }
    check_samples(&doc).map_err(invalid)?;
    check_times(&doc).map_err(invalid)?;
    check_summaries(&doc).map_err(invalid)?;
    check_unique_ids(&doc).map_err(invalid)?;
    doc.schema = SCHEMA.into();
    Ok(doc)
}

/// The `schema` string when it is the document's first key; `None` otherwise (or not JSON).
pub(crate) fn leading_schema(text: &str) -> Option<String> {
    use serde::de::{Deserializer as _, Error as _, MapAccess, Visitor};
    struct First<'a>(&'a mut Option<String>);
    impl<'de> Visitor<'de> for First<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            if map.next_key::<String>()?.as_deref() == Some("schema") {
                *self.0 = map.next_value()?;
            }
            // Stop here: the rest is read once, by the parse that follows.
            Err(A::Error::custom("first key read"))
        }
    }
    let mut found = None;
    let _ = serde_json::Deserializer::from_str(text).deserialize_map(First(&mut found));
    found
}

/// No case keeps more raw samples than its `samples` says it took (a document may keep fewer:
/// thinned, or none): a document cannot make a reader work through millions of values it does
/// not declare.
fn check_samples(doc: &ResultDoc) -> Result<(), String> {
    for c in doc.experiments.iter().flat_map(|e| &e.cases) {
        if c.raw_ns.len() > c.samples {
            return Err(format!(
                "case `{}` has {} raw_ns values, more than its samples ({})",
                c.id,
                c.raw_ns.len(),
                c.samples
            ));
        }
    }
    Ok(())
}

/// No text of the document holds a NUL character (`\u0000`): oscost never writes one, and a
/// PostgreSQL store cannot keep one in its JSON, so a push would fail on it after the documents
/// before it.
pub(crate) fn check_no_nul(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    // memmem's vectorised search: a push reads every document through this, and the
    // standard library's substring search took 5 % of its CPU.
    for at in memchr::memmem::find_iter(bytes, b"u0000") {
        // An escape only when preceded by an odd run of backslashes (`\\u0000` is text).
        let slashes = bytes[..at]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if slashes % 2 == 1 {
            let before = &text[..at];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1);
            return Err(format!(
                "a NUL character (\\u0000) at line {line} column {column}, which oscost never \
                 writes and a history cannot store"
            ));
        }
    }
    Ok(())
}

/// Every time a case gives is finite and no further below zero than its loop overhead (a
/// sample is a timed loop less that overhead, so a little below zero for the cheapest calls;
/// far below it is no time at all); a derived figure, a difference, may be negative but is
/// finite.
fn check_times(doc: &ResultDoc) -> Result<(), String> {
    for c in doc.experiments.iter().flat_map(|e| &e.cases) {
        let overhead = c.loop_overhead_ns;
        if !overhead.is_finite() || overhead < 0.0 {
            return Err(format!(
                "case `{}` has loop_overhead_ns {overhead}, not a time (a loop's cost is finite \
                 and at least 0)",
                c.id
            ));
        }
        // Rounding of the tick-to-ns conversion aside.
        let floor = -(overhead * (1.0 + 1e-9) + 1e-6);
        let named = [
            ("median_ns", c.median_ns),
            ("min_ns", c.min_ns),
            ("max_ns", c.max_ns),
            ("mean_ns", c.mean_ns),
            ("p5_ns", c.p5_ns),
            ("p95_ns", c.p95_ns),
            ("ci95_ns", c.ci95_ns[0]),
            ("ci95_ns", c.ci95_ns[1]),
        ];
        let raw = c.raw_ns.iter().map(|&v| ("raw_ns", v));
        if let Some((field, v)) = named
            .into_iter()
            .chain(raw)
            .find(|&(_, v)| !v.is_finite() || v < floor)
        {
            return Err(format!(
                "case `{}` has {field} {v} ns, below zero by more than its loop overhead \
                 ({overhead} ns): no time is negative",
                c.id
            ));
        }
        if !c.mad_ns.is_finite() || c.mad_ns < 0.0 || !c.stddev_ns.is_finite() || c.stddev_ns < 0.0
        {
            return Err(format!(
                "case `{}` has a negative or infinite spread (mad_ns {}, stddev_ns {})",
                c.id, c.mad_ns, c.stddev_ns
            ));
        }
    }
    for d in doc.experiments.iter().flat_map(|e| &e.derived) {
        if [d.estimate_ns, d.ci95_ns[0], d.ci95_ns[1]]
            .iter()
            .any(|v| !v.is_finite())
        {
            return Err(format!("derived figure `{}` is not a finite time", d.id));
        }
    }
    Ok(())
}

/// The relative gap above which two medians of the same samples differ: beyond the last bits
/// a JSON round trip (or another writer's formatting) may change.
pub const SUMMARY_TOLERANCE: f64 = 1e-9;

/// Every case's `median_ns` is a median of its own samples: within its `min_ns..max_ns`, and
/// when it keeps every sample (`raw_ns` as long as `samples`; a thinned one may keep fewer)
/// the median of them. A summary edited away from its samples would otherwise be shown as
/// the case's figure by one command and disagree with what another computes from the samples.
fn check_summaries(doc: &ResultDoc) -> Result<(), String> {
    let apart = |a: f64, b: f64, scale: f64| (a - b).abs() > SUMMARY_TOLERANCE * scale;
    for c in doc.experiments.iter().flat_map(|e| &e.cases) {
        let m = c.median_ns;
        let scale = m.abs().max(c.min_ns.abs()).max(c.max_ns.abs());
        if (m < c.min_ns && apart(m, c.min_ns, scale))
            || (m > c.max_ns && apart(m, c.max_ns, scale))
        {
            return Err(format!(
                "case `{}` has median_ns {} ns, outside its own min_ns..max_ns ({}..{} ns): the \
                 document is inconsistent with its samples",
                c.id,
                shown(m),
                shown(c.min_ns),
                shown(c.max_ns)
            ));
        }
        if !c.raw_ns.is_empty() && c.raw_ns.len() == c.samples {
            let raw = median(&c.raw_ns);
            if apart(m, raw, m.abs().max(raw.abs())) {
                return Err(format!(
                    "case `{}` has median_ns {} ns, which is not the median of its raw_ns ({} \
                     ns): the document is inconsistent with its samples",
                    c.id,
                    shown(m),
                    shown(raw)
                ));
            }
        }
    }
    Ok(())
}

/// Each id names one case or derived figure of the document: every reader looks a figure up
/// by its id (compare pairs them, the history keys them), so a second one would be dropped or
/// paired at random.
fn check_unique_ids(doc: &ResultDoc) -> Result<(), String> {
    let mut seen: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for e in &doc.experiments {
        let ids = e
            .cases
            .iter()
            .map(|c| &c.id)
            .chain(e.derived.iter().map(|d| &d.id));
        for id in ids {
            if let Some(first) = seen.insert(id, &e.name) {
                let place = if first == e.name {
                    format!("twice in experiment `{first}`")
                } else {
                    format!("in experiments `{first}` and `{}`", e.name)
                };
                return Err(format!(
                    "the id `{id}` is given to two cases or figures ({place}): each id names one"
                ));
            }
        }
    }
    Ok(())
}

/// The median of finite `values` (not empty): the middle one, or halfway between the two
/// middle ones, computed as the statistics crate does so that both agree to the last bit.
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    let k = v.len() / 2;
    let (below, &mut upper, _) = v.select_nth_unstable_by(k, f64::total_cmp);
    if values.len() % 2 == 1 {
        return upper;
    }
    let lower = below.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    0.5 * lower + 0.5 * upper
}

/// A time for a message: as written, unless that takes more than a line's worth of digits
/// (`1e300` rather than 301 of them).
fn shown(v: f64) -> String {
    let plain = v.to_string();
    if plain.len() > 20 {
        format!("{v:e}")
    } else {
        plain
    }
}

/// Whether `t` (`dddd-dd-ddTdd:dd:ddZ`, digits checked) is a real time: a month of 1 to 12,
/// a day that month has (29 February in leap years only), hours, minutes and seconds in range.
fn real_time(t: &str) -> bool {
    let n = |r: std::ops::Range<usize>| t[r].parse::<u32>().unwrap_or(u32::MAX);
    let (year, month, day) = (n(0..4), n(5..7), n(8..10));
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day) && n(11..13) < 24 && n(14..16) < 60 && n(17..19) < 60
}

/// An `oscost/2` document names its run as oscost writes it: a UUID and a start time in UTC
/// to the second (`2026-11-23T03:12:00Z`), which is what the history sorts and keys by; the
/// time is `None` only for a run first written as `oscost/1`.
fn check_identity(doc: &ResultDoc) -> Result<(), String> {
    check_run_identity(doc.run_id.as_deref(), doc.started_at.as_deref())
}

/// [`check_identity`] of a run's id and start time alone.
pub(crate) fn check_run_identity(id: Option<&str>, started_at: Option<&str>) -> Result<(), String> {
    let id = id.ok_or("run_id is missing")?;
    let hex_groups: Vec<&str> = id.split('-').collect();
    let uuid_shaped = hex_groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && hex_groups
            .iter()
            .all(|g| g.chars().all(|c| c.is_ascii_hexdigit()));
    if !uuid_shaped {
        return Err(format!("run_id `{id}` is not a UUID"));
    }
    // None only for a run first written as `oscost/1`, kept since under an id of its own.
    let Some(t) = started_at else {
        return Ok(());
    };
    let shape = "dddd-dd-ddTdd:dd:ddZ";
    let fits = t.len() == shape.len()
        && t.chars().zip(shape.chars()).all(|(c, s)| match s {
            'd' => c.is_ascii_digit(),
            s => c == s,
        });
    if !fits || !real_time(t) {
        return Err(format!(
            "started_at `{t}` is not a UTC time to the second (2026-11-23T03:12:00Z)"
        ));
    }
    Ok(())
}

/// One oscost run: the machine and every experiment's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultDoc {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The run's UUID (version 4), made on the machine that ran it; history keys runs by it,
    /// so importing a run twice changes nothing. `None` only in an `oscost/1` document.
    #[serde(default)]
    pub run_id: Option<String>,
    /// When the run started, RFC 3339 in UTC to the second (`2026-11-23T03:12:00Z`). `None`
    /// only for a run first written as `oscost/1`.
    #[serde(default)]
    pub started_at: Option<String>,
    /// The machine and the run's settings.
    pub environment: Environment,
    /// Results, in the order the experiments ran.
    pub experiments: Vec<ExperimentResult>,
    /// What the OS cost one program (`oscost bill`); a bill's run has no experiments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bill: Option<crate::bill::Bill>,
}

/// The results of one experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentResult {
    /// Experiment name (`syscall`).
    pub name: String,
    /// Experiment-wide parameters.
    pub params: BTreeMap<String, serde_json::Value>,
    /// Measured cases.
    pub cases: Vec<CaseResult>,
    /// Cases that could not be measured here, with the reason.
    pub unavailable: Vec<UnavailableCase>,
    /// Figures computed from other cases, with their uncertainty.
    pub derived: Vec<DerivedResult>,
    /// Experiment-wide warnings (including a noisy machine): what makes figures less
    /// trustworthy and the user could act on.
    pub warnings: Vec<Message>,
    /// Experiment-wide notes: context, not a problem. Absent from older documents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Message>,
    /// How busy the machine was while this experiment ran.
    pub load: Option<RunLoad>,
    /// The machine's controls, timed just before and just after the experiment. Absent from
    /// older documents and from a fictional machine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controls: Option<crate::MachineControls>,
}

impl ExperimentResult {
    /// Which experiment this is, or `None` for one this version does not know (a document
    /// from a newer version, which still reads).
    pub fn id(&self) -> Option<crate::ExperimentId> {
        crate::ExperimentId::from_name(&self.name)
    }

    /// Who held the CPUs while it ran, where enough that a check it failed is not the OS's
    /// doing ([`RunLoad::held`]); `None` without a load or below the thresholds.
    pub fn held(&self) -> Option<crate::env::Held> {
        self.load.as_ref().and_then(RunLoad::held)
    }
}

/// A case that could not be measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnavailableCase {
    /// The id it would have had.
    pub id: String,
    /// What it would have measured.
    pub description: String,
    /// Why it was not measured.
    pub reason: String,
}

/// The cost of a case at a chosen call rate (as Herder et al., "MINIX 3: A Highly Reliable,
/// Self-Repairing Operating System", 2006, priced the 180 ns getpid difference at 10 000 calls per second).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AtRate {
    /// Operations per second assumed.
    pub ops_per_s: f64,
    /// Time spent per second of wall time, ns.
    pub ns_per_s: f64,
    /// The same as a percentage of one second (of one CPU).
    pub share_pct: f64,
}

/// One measured case, summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseResult {
    /// Stable dotted id.
    pub id: String,
    /// What was timed.
    pub description: String,
    /// What one operation is.
    pub unit: String,
    /// Parameters of this point.
    pub params: BTreeMap<String, serde_json::Value>,
    /// Number of samples.
    pub samples: usize,
    /// Operations timed per sample.
    pub iterations_per_sample: u64,
    /// Per-operation loop overhead already subtracted, ns.
    pub loop_overhead_ns: f64,
    /// Median per-operation time, ns.
    pub median_ns: f64,
    /// Median absolute deviation, ns (unscaled).
    pub mad_ns: f64,
    /// Smallest sample, ns.
    pub min_ns: f64,
    /// Largest sample, ns.
    pub max_ns: f64,
    /// Mean, ns.
    pub mean_ns: f64,
    /// Sample standard deviation, ns.
    pub stddev_ns: f64,
    /// 5th percentile, ns.
    pub p5_ns: f64,
    /// 95th percentile, ns.
    pub p95_ns: f64,
    /// Bootstrap 95 % confidence interval of the median, ns.
    pub ci95_ns: [f64; 2],
    /// Median in counter ticks: reference cycles for the TSC (see `environment.clock.tick_unit`).
    pub median_cycles: f64,
    /// Confidence interval in counter ticks.
    pub ci95_cycles: [f64; 2],
    /// Tukey outlier counts (kept in every figure, only counted).
    pub outliers: Outliers,
    /// CI half-width above 5 % of the median.
    pub noisy: bool,
    /// Mechanism checks.
    pub checks: Vec<Check>,
    /// Whether every check passed (true when there are none).
    pub checks_passed: bool,
    /// Other measured figures, unit in the key.
    pub counters: BTreeMap<String, f64>,
    /// Cost at the experiment's chosen rate, where it has one.
    pub at_rate: Option<AtRate>,
    /// Warnings met while measuring, and the cause found for a wide interval.
    pub warnings: Vec<Message>,
    /// Context met while measuring, not a problem. Absent from older documents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Message>,
    /// Attached series.
    pub series: Vec<Series>,
    /// Every per-operation sample, ns, in the order taken.
    pub raw_ns: Vec<f64>,
    /// How a traced figure's tracepoints were recorded and what that cost. Absent from other
    /// cases and older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::case::TraceCost>,
    /// The machine control the figure moves with; absent for the system-call floor.
    #[serde(default, skip_serializing_if = "crate::ControlKind::is_kernel_entry")]
    pub control: crate::ControlKind,
    /// Drawn from several processes: each one's median, ns, in the order they ran. Absent for
    /// a figure of one process and from older documents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub process_medians_ns: Vec<f64>,
}

/// A figure computed from other cases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DerivedResult {
    /// Stable dotted id.
    pub id: String,
    /// What it means.
    pub description: String,
    /// `(case id, coefficient)` terms of the linear combination of medians.
    pub terms: Vec<(String, f64)>,
    /// The estimate, ns.
    pub estimate_ns: f64,
    /// Bootstrap 95 % CI of the estimate, ns.
    pub ci95_ns: [f64; 2],
    /// The estimate in counter ticks.
    pub estimate_cycles: f64,
    /// Why the figure is not trusted, when it is not.
    pub flagged: Option<String>,
    /// What makes the figure less precise: a 95 % interval wider than ±5 % of the estimate,
    /// with the cause found. Absent from older documents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Message>,
}

/// Samples beyond Tukey's fences (1.5 IQR mild, 3 IQR severe): counted and kept, never removed,
/// because on a busy system the tail is part of the cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outliers {
    /// Below Q1 − 3·IQR.
    pub low_severe: usize,
    /// Between Q1 − 3·IQR and Q1 − 1.5·IQR.
    pub low_mild: usize,
    /// Between Q3 + 1.5·IQR and Q3 + 3·IQR.
    pub high_mild: usize,
    /// Above Q3 + 3·IQR.
    pub high_severe: usize,
}

impl Outliers {
    /// All four classes together.
    pub fn total(&self) -> usize {
        self.low_severe + self.low_mild + self.high_mild + self.high_severe
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_names_the_schema_it_cannot_read() {
        assert!(matches!(read("[]"), Err(ReadError::NotADocument(_))));
        assert!(matches!(
            read("{\"x\": 1}"),
            Err(ReadError::NotADocument(_))
        ));
        let e = read("{\"schema\": \"oscost/9\"}").unwrap_err();
        assert!(e.to_string().contains("`oscost/9`"), "{e}");
        let e = read("{\"schema\": \"oscost/2\"}").unwrap_err();
        assert!(matches!(e, ReadError::Invalid(_)), "{e}");
    }

    #[test]
    fn a_current_document_names_its_run_as_oscost_writes_it() {
        let ok = ResultDoc {
            schema: SCHEMA.into(),
            run_id: Some("3f1c2b9e-8a4d-4c1e-9b7a-2d5e6f708192".into()),
            started_at: Some("2026-11-23T03:13:14Z".into()),
            environment: crate::example::environment(),
            experiments: Vec::new(),
            bill: None,
        };
        assert_eq!(check_identity(&ok), Ok(()));
        for (id, t) in [
            (None, Some("2026-11-23T03:13:14Z")),
            (Some("not-a-uuid"), Some("2026-11-23T03:13:14Z")),
            (
                Some("3f1c2b9e-8a4d-4c1e-9b7a-2d5e6f708192"),
                Some("2026-11-23T05:13:14+02:00"),
            ),
        ] {
            let mut d = ok.clone();
            d.run_id = id.map(String::from);
            d.started_at = t.map(String::from);
            assert!(check_identity(&d).is_err(), "{id:?} {t:?}");
        }
    }

    #[test]
    fn start_times_are_real_dates() {
        for t in [
            "2026-11-23T03:13:14Z",
            "2024-02-29T23:59:59Z",
            "2000-02-29T00:00:00Z",
        ] {
            assert!(real_time(t), "{t}");
        }
        for t in [
            "9999-99-99T99:99:99Z",
            "2026-13-01T00:00:00Z",
            "2026-00-10T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2026-11-23T24:00:00Z",
            "2026-11-23T03:60:00Z",
            "2026-11-23T03:13:60Z",
        ] {
            assert!(!real_time(t), "{t}");
        }
    }

    /// A document written before notes existed reads with none, writes back without the key,
    /// and notes survive a round trip.
    #[test]
    fn notes_are_optional_and_round_trip() {
        let text = include_str!("../../../tests/golden/oscost-2.json");
        assert!(!text.contains("\"notes\""));
        let mut doc: ResultDoc = read(text).unwrap();
        assert!(doc
            .experiments
            .iter()
            .all(|e| e.notes.is_empty() && e.cases.iter().all(|c| c.notes.is_empty())));
        let back = serde_json::to_string(&doc).unwrap();
        assert!(!back.contains("\"notes\""));
        doc.experiments[0]
            .notes
            .push("a period was left out".into());
        doc.experiments[0].cases[0]
            .notes
            .push("an operation of 2.6 ns".into());
        let again: ResultDoc = read(&serde_json::to_string(&doc).unwrap()).unwrap();
        assert_eq!(again, doc);
    }

    /// A traced case's mechanism and cost survive a round trip; documents without them read
    /// with none and write back without the key.
    #[test]
    fn a_trace_cost_is_optional_and_round_trips() {
        let text = include_str!("../../../tests/golden/oscost-2.json");
        let mut doc: ResultDoc = read(text).unwrap();
        assert!(doc.experiments[0].cases.iter().all(|c| c.trace.is_none()));
        let back = serde_json::to_value(&doc).unwrap();
        let cases = back["experiments"][0]["cases"].as_array().unwrap();
        assert!(cases.iter().all(|c| c.get("trace").is_none()));
        doc.experiments[0].cases[0].trace = Some(crate::TraceCost {
            mechanism: "bpf".into(),
            per: "round trip".into(),
            untraced_ns: 5050.0,
            traced_ns: 6600.0,
            lost: 3,
        });
        let again: ResultDoc = read(&serde_json::to_string(&doc).unwrap()).unwrap();
        assert_eq!(again, doc);
        // An unknown field inside it is refused, as everywhere in the document.
        let bad = serde_json::to_string(&doc)
            .unwrap()
            .replace("\"lost\":3", "\"lost\":3,\"extra\":1");
        assert!(read(&bad).is_err());
    }

    /// An upper-case id reads as the same run; raw samples must match `samples`.
    #[test]
    fn ids_are_canonical_and_raw_samples_counted() {
        let mut doc = ResultDoc {
            schema: SCHEMA.into(),
            run_id: Some("3F1C2B9E-8A4D-4C1E-9B7A-2D5E6F708192".into()),
            started_at: Some("2026-11-23T03:13:14Z".into()),
            environment: crate::example::environment(),
            experiments: Vec::new(),
            bill: None,
        };
        let text = serde_json::to_string(&doc).unwrap();
        assert_eq!(
            read(&text).unwrap().run_id.as_deref(),
            Some("3f1c2b9e-8a4d-4c1e-9b7a-2d5e6f708192")
        );
        doc.run_id = Some("3f1c2b9e-8a4d-4c1e-9b7a-2d5e6f708192".into());
        let golden: ResultDoc = read(include_str!("../../../tests/golden/oscost-2.json")).unwrap();
        doc.experiments = golden.experiments;
        let case = &mut doc.experiments[0].cases[0];
        case.raw_ns = vec![1.0; case.samples + 1];
        let e = read(&serde_json::to_string(&doc).unwrap()).unwrap_err();
        assert!(
            e.to_string()
                .contains("raw_ns values, more than its samples"),
            "{e}"
        );
    }

    /// A median edited away from its samples is refused by its case when read: outside its
    /// own min..max, or (with every sample kept) not their median; thinned raw samples hold
    /// it to min..max alone.
    #[test]
    fn a_median_that_its_samples_contradict_is_refused() {
        let golden = include_str!("../../../tests/golden/oscost-2.json");
        let doc: ResultDoc = read(golden).unwrap();
        let refused = |doc: &ResultDoc| read(&serde_json::to_string(doc).unwrap()).unwrap_err();
        let mut far = doc.clone();
        far.experiments[0].cases[0].median_ns = 1e300;
        let e = refused(&far).to_string();
        assert!(
            e.contains("case `example.cost100` has median_ns 1e300 ns, outside its own min_ns")
                && e.contains("inconsistent with its samples"),
            "{e}"
        );
        assert!(e.len() < 300, "{e}");
        // Within min..max, but not the median of the 81 samples it keeps.
        let mut off = doc.clone();
        let c = &mut off.experiments[0].cases[0];
        c.median_ns = (c.min_ns + c.max_ns) / 2.0 + (c.max_ns - c.min_ns) / 4.0;
        let e = refused(&off).to_string();
        assert!(
            e.contains("is not the median of its raw_ns (107.49951646698544 ns)"),
            "{e}"
        );
        // Thinned to a few samples: their median is not the case's, and need not be.
        let c = &mut off.experiments[0].cases[0];
        c.raw_ns.truncate(5);
        assert!(read(&serde_json::to_string(&off).unwrap()).is_ok());
        // The last bits a JSON round trip may change are no contradiction.
        let mut near = doc.clone();
        near.experiments[0].cases[0].median_ns *= 1.0 + 1e-12;
        assert!(read(&serde_json::to_string(&near).unwrap()).is_ok());
        let mut even = doc;
        let c = &mut even.experiments[0].cases[0];
        // An even count: halfway between the two middle samples, in any order.
        c.raw_ns = vec![c.max_ns, 107.46, c.min_ns, 107.5];
        c.samples = 4;
        c.median_ns = 107.48;
        let r = read(&serde_json::to_string(&even).unwrap());
        assert!(r.is_ok(), "{r:?}");
    }

    /// A case id given twice, in one experiment or in two, or shared by a case and a derived
    /// figure, is refused by name when read.
    #[test]
    fn an_id_given_twice_is_refused() {
        let golden = include_str!("../../../tests/golden/oscost-2.json");
        let doc: ResultDoc = read(golden).unwrap();
        let refused = |doc: &ResultDoc| {
            read(&serde_json::to_string(doc).unwrap())
                .unwrap_err()
                .to_string()
        };
        let mut same = doc.clone();
        let twin = same.experiments[0].cases[0].clone();
        same.experiments[0].cases.push(twin);
        let e = refused(&same);
        assert!(
            e.contains(
                "the id `example.cost100` is given to two cases or figures (twice in \
                 experiment `example`)"
            ),
            "{e}"
        );
        let mut apart = doc.clone();
        apart.experiments[1].cases[0].id = "example.cost100".into();
        let e = refused(&apart);
        assert!(
            e.contains("(in experiments `example` and `example-more`)"),
            "{e}"
        );
        let mut derived = doc;
        let case_id = derived.experiments[0].cases[1].id.clone();
        derived.experiments[0].derived[0].id = case_id.clone();
        let e = refused(&derived);
        assert!(e.contains(&format!("the id `{case_id}`")), "{e}");
    }

    /// A time far below zero, or a NUL in a text, makes the document invalid, named; a sample
    /// a little below zero (the loop overhead subtracted from a cheap call) does not.
    #[test]
    fn times_below_zero_and_nul_characters_are_refused() {
        let golden = include_str!("../../../tests/golden/oscost-2.json");
        let mut doc: ResultDoc = read(golden).unwrap();
        let case = &mut doc.experiments[0].cases[0];
        case.loop_overhead_ns = 1.5;
        case.min_ns = -1.0;
        assert!(read(&serde_json::to_string(&doc).unwrap()).is_ok());
        let case = &mut doc.experiments[0].cases[0];
        case.median_ns = -89_120.0;
        let e = read(&serde_json::to_string(&doc).unwrap()).unwrap_err();
        assert!(
            e.to_string().contains("median_ns -89120 ns, below zero"),
            "{e}"
        );
        let mut doc: ResultDoc = read(golden).unwrap();
        doc.experiments[0].cases[0].description = "a\0b".into();
        let text = serde_json::to_string(&doc).unwrap();
        let e = read(&text).unwrap_err();
        assert!(e.to_string().contains("a NUL character"), "{e}");
        // An escaped backslash before `u0000` is text, not a NUL.
        doc.experiments[0].cases[0].description = "a\\u0000b".into();
        assert!(read(&serde_json::to_string(&doc).unwrap()).is_ok());
    }
}
