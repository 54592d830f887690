//! `tick` in the shape of the tick-period study's table: per event source, one row for the
//! undisturbed work and one per period (events, time, cycles, extra cycles, cycles per event,
//! switches per event, overhead), and under it the slope of cycles against events with its
//! interval, beside what the kernel's own tick costs a spinning loop on the same CPU.

use super::View;
use crate::render::fmt_ns;
use oscost_model::schema::{CaseResult, ExperimentResult};
use serde_json::Value;

/// An integer in groups of three digits (`3 169 850 746`), as the study printed its cycles.
pub(crate) fn grouped(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    if v < 0.0 && digits != "0" {
        format!("-{out}")
    } else {
        out
    }
}

fn counter(c: &CaseResult, key: &str) -> Option<f64> {
    c.counters.get(key).copied()
}

fn cell(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "-".into(), f)
}

/// One table per event source, in the order the cases came.
pub fn views(e: &ExperimentResult) -> Vec<View> {
    let Some(base) = e.cases.iter().find(|c| c.id == "tick.undisturbed") else {
        return Vec::new();
    };
    let mut sources: Vec<&str> = Vec::new();
    for c in &e.cases {
        if let Some(s) = c.params.get("source").and_then(Value::as_str) {
            if !sources.contains(&s) {
                sources.push(s);
            }
        }
    }
    let natural = e.params.get("natural_tick").filter(|v| !v.is_null());
    sources
        .into_iter()
        .map(|source| {
            let mut rows = vec![vec![
                "undisturbed".into(),
                "0".into(),
                fmt_ns(base.median_ns),
                grouped(base.median_cycles),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]];
            let mut notes = Vec::new();
            for c in e
                .cases
                .iter()
                .filter(|c| c.params.get("source").and_then(Value::as_str) == Some(source))
            {
                let period = c
                    .params
                    .get("period_ns")
                    .and_then(Value::as_f64)
                    .map_or_else(|| "-".into(), fmt_ns);
                let flag = if c.checks_passed { "" } else { " *" };
                rows.push(vec![
                    format!("{period}{flag}"),
                    cell(counter(c, "events_per_run"), grouped),
                    fmt_ns(c.median_ns),
                    grouped(c.median_cycles),
                    cell(counter(c, "extra_cycles"), grouped),
                    cell(counter(c, "cycles_per_event"), grouped),
                    cell(counter(c, "switches_per_event"), |v| format!("{v:.2}")),
                    cell(counter(c, "overhead_pct"), |v| format!("{v:.1} %")),
                ]);
                for k in c.checks.iter().filter(|k| !k.passed) {
                    notes.push(format!(
                        "* {}: {} counted {:.2}, expected {:.2}",
                        c.id, k.name, k.counted, k.expected
                    ));
                }
            }
            let fit = e.params.get("slope").and_then(|s| s.get(source));
            let slope = fit
                .and_then(|f| f.get("cycles_per_event"))
                .and_then(Value::as_f64);
            if let (Some(f), Some(slope)) = (fit, slope) {
                let ci = |k: &str, i: usize| {
                    f.get(k)
                        .and_then(|v| v.get(i))
                        .and_then(Value::as_f64)
                        .unwrap_or(f64::NAN)
                };
                notes.push(format!(
                    "slope of cycles against events over {} runs (the undisturbed ones at 0): {} \
                     cycles per event, 95 % CI {} .. {} ({} per event)",
                    f.get("runs").and_then(Value::as_u64).unwrap_or(0),
                    grouped(slope),
                    grouped(ci("ci95_cycles", 0)),
                    grouped(ci("ci95_cycles", 1)),
                    fmt_ns(
                        f.get("ns_per_event")
                            .and_then(Value::as_f64)
                            .unwrap_or(f64::NAN)
                    ),
                ));
            }
            match (natural, slope) {
                (Some(n), Some(slope)) => {
                    let get = |k: &str| n.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
                    notes.push(format!(
                        "the kernel's own tick on this CPU, as a spinning loop sees it: every {}, \
                         {} ({} cycles) each over {:.0} ticks; the slope is {:.2} times that",
                        fmt_ns(get("period_ns")),
                        fmt_ns(get("median_ns")),
                        grouped(get("median_cycles")),
                        get("count"),
                        slope / get("median_cycles")
                    ));
                }
                (None, _) => notes.push(
                    "the kernel's own tick was not seen by the spinning loop: nothing to set \
                     beside the slope"
                        .into(),
                ),
                _ => {}
            }
            // The key to `*` only where a row carries one.
            let flagged = rows.iter().any(|r| r[0].ends_with(" *"));
            notes.push(format!(
                "events: counted per run (median); extra cycles: median run less the undisturbed \
                 median; cycles per event: extra cycles / events; overhead: extra cycles / \
                 undisturbed cycles{}",
                if flagged {
                    "; * a check failed (see the notes above)"
                } else {
                    ""
                }
            ));
            View {
                title: format!("{}: {source}, cost per timer event", e.name),
                head: [
                    "period",
                    "events",
                    "time",
                    "cycles",
                    "extra cycles",
                    "cycles/event",
                    "switches/event",
                    "overhead",
                ]
                .map(String::from)
                .to_vec(),
                rows,
                notes,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_of_three() {
        assert_eq!(grouped(3_169_850_746.0), "3 169 850 746");
        assert_eq!(grouped(860_977.0), "860 977");
        assert_eq!(grouped(1256.4), "1 256");
        assert_eq!(grouped(-45.0), "-45");
        assert_eq!(grouped(999.0), "999");
        assert_eq!(grouped(f64::NAN), "-");
    }
}
