//! The value parsers and option types several experiments' command lines share: task lists,
//! times, enum names, `--multi-threaded` lists.

use clap::builder::TypedValueParser as _;
use oscost_sys::ipc::Via;
use oscost_sys::task::Kind;
use serde::{Deserialize, Serialize};

/// Each value once, in the order first given: a repeated value would produce two cases with
/// one id.
pub(crate) fn first_occurrences<T: Copy + PartialEq>(values: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(values.len());
    for &v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// Task counts from `--tasks` (ring sizes, split's N).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TaskList(pub Vec<usize>);

/// Parses `5`, `2,4,16` or `2..1024` (powers of two from 2 up to 1024; both ends included).
/// Only the syntax is checked here; `run` checks the values so the message names the flag.
pub(crate) fn parse_tasks(s: &str) -> Result<TaskList, String> {
    let num = |t: &str| {
        t.trim()
            .parse::<usize>()
            .map_err(|_| format!("`{s}` is not a list like `2,4,16` or a range like `2..1024`"))
    };
    if let Some((a, b)) = s.split_once("..") {
        let (a, b) = (num(a)?, num(b)?);
        if a == 0 || a > b {
            return Err(format!("`{s}`: a range needs 1 <= start <= end"));
        }
        let mut v = Vec::new();
        let mut n = a;
        while n < b {
            v.push(n);
            n = n.saturating_mul(2);
        }
        v.push(b);
        return Ok(TaskList(v));
    }
    let sizes: Vec<usize> = s.split(',').map(num).collect::<Result<_, _>>()?;
    Ok(TaskList(first_occurrences(&sizes)))
}

/// A time with its unit (`5s`, `300ms`, `49us`, `9.2µs`, `500ns`), in ns.
pub fn parse_time(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" => return Err(format!("`{s}` has no unit: add one, e.g. 5s, 300ms, 49us")),
        _ => {
            return Err(format!(
                "`{s}` is not a time (a number and one of ns, us, ms, s)"
            ))
        }
    };
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v * scale < 1e13 => Ok((v * scale).round() as u64),
        _ => Err(format!(
            "`{s}` is not a time (a number and one of ns, us, ms, s)"
        )),
    }
}

/// A run length: above 0, at most an hour.
pub(crate) fn parse_duration(s: &str) -> Result<u64, String> {
    match parse_time(s)? {
        0 => Err(format!("`{s}` is not a duration above 0 (e.g. 5s, 300ms)")),
        ns if ns > 3_600_000_000_000 => Err(format!("`{s}` is longer than an hour")),
        ns => Ok(ns),
    }
}

/// The command-line spelling of an option value, which is also its part of a case id.
pub(crate) fn value_name<T: clap::ValueEnum>(value: &T) -> String {
    value
        .to_possible_value()
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default()
}

/// Parses the kinds of [`Via`] for clap, listing each with its summary in `--help`.
pub(crate) fn via_parser() -> impl clap::builder::TypedValueParser<Value = Via> {
    let names = Via::ALL
        .into_iter()
        .map(|v| clap::builder::PossibleValue::new(v.name()).help(v.summary()));
    clap::builder::PossibleValuesParser::new(names)
        .map(|s| Via::from_name(&s).expect("clap accepted only known names"))
}

/// Parses the kinds of [`Kind`] for clap, listing each with its summary in `--help`.
pub(crate) fn kind_parser() -> impl clap::builder::TypedValueParser<Value = Kind> {
    let names = Kind::ALL
        .into_iter()
        .map(|k| clap::builder::PossibleValue::new(k.name()).help(k.summary()));
    clap::builder::PossibleValuesParser::new(names)
        .map(|s| Kind::from_name(&s).expect("clap accepted only known names"))
}

/// One value of a `--multi-threaded` list: a case to measure again with one idle extra thread,
/// or `none` (`Mt(None)`), which turns the variants off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mt<T>(pub Option<T>);

/// Parses one value of a `--multi-threaded` list; an unknown name lists the choices.
pub(crate) fn parse_mt<T: clap::ValueEnum>(s: &str, what: &str) -> Result<Mt<T>, String> {
    if s == "none" {
        return Ok(Mt(None));
    }
    T::from_str(s, false).map(|v| Mt(Some(v))).map_err(|_| {
        let names: Vec<String> = T::value_variants().iter().map(value_name).collect();
        format!("`{s}` is not a {what} (one of: none, {})", names.join(", "))
    })
}

/// The values of a `--multi-threaded` list that are among `measured`, each once; none when
/// the list says `none` anywhere.
pub(crate) fn pick_mt<T: Copy + PartialEq>(list: &[Mt<T>], measured: &[T]) -> Vec<T> {
    if list.iter().any(|m| m.0.is_none()) {
        return Vec::new();
    }
    let named: Vec<T> = list.iter().filter_map(|m| m.0).collect();
    first_occurrences(&named)
        .into_iter()
        .filter(|v| measured.contains(v))
        .collect()
}

/// A count that cannot be negative, with a message that says so (clap would otherwise read
/// A number of 4 KiB pages from 1 to `max` (`what` names one in the refusal of 0: "a sample",
/// "a region"), with the size `max` comes to in the refusal of more.
pub(crate) fn parse_pages(s: &str, max: u64, what: &str) -> Result<u64, String> {
    let size = if max >= 1 << 18 {
        format!("{} GiB", max >> 18)
    } else {
        format!("{} MiB", max >> 8)
    };
    match s.trim().parse::<u64>() {
        Ok(0) => Err(format!("`0`: {what} has at least one page")),
        Ok(n) if n <= max => Ok(n),
        Ok(_) => Err(format!("`{s}`: at most {max} pages ({size})")),
        Err(_) => Err(format!("`{s}` is not a number of pages")),
    }
}

/// `-4` as an unknown flag).
pub(crate) fn parse_count(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .map_err(|_| format!("`{s}` is not a whole number of 0 or more"))
}

/// A rate of calls per second, above 0 and at most 1e9.
pub(crate) fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 && r <= 1e9 => Ok(r),
        _ => Err(format!(
            "`{s}` is not a number of calls per second above 0 and at most 1e9"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_ranges() {
        assert_eq!(parse_tasks("2..16").unwrap().0, vec![2, 4, 8, 16]);
        assert_eq!(parse_tasks("3..10").unwrap().0, vec![3, 6, 10]);
        assert_eq!(parse_tasks("5,2").unwrap().0, vec![5, 2]);
        assert!(parse_tasks("x").is_err() && parse_tasks("8..2").is_err());
    }
}
