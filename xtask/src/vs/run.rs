//! Building and running the two sides: the C reference and oscost, each read into the same
//! shape, `(case id, median ns)` in the order printed, with oscost's counters beside.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context as _};

use super::entry::{Entry, Read};

/// What one run of a side measured: each case's median, in order.
pub type Figures = Vec<(String, f64)>;

/// What one oscost run measured: the figures, and each case's counters.
#[derive(Debug, Default)]
pub struct Measured {
    /// `(id, median_ns)` in the document's order.
    pub figures: Figures,
    /// Each case's counters by id.
    pub counters: BTreeMap<String, BTreeMap<String, f64>>,
    /// The experiments' parameters, as text (a number or string as written, without quotes).
    pub params: BTreeMap<String, String>,
}

/// Compiles `entry`'s C program `source` into `dir`; returns the binary.
pub fn build_c(entry: &Entry, source: &str, root: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    let stem = Path::new(source)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("reference");
    let out = dir.join(stem);
    let status = Command::new("cc")
        .arg("-O2")
        .args(entry.cflags)
        .arg("-o")
        .arg(&out)
        .arg(root.join(source))
        .status()
        .context("cannot run cc (a C compiler is needed: apt-get install gcc)")?;
    if !status.success() {
        bail!("cc failed on {source}");
    }
    for h in entry.helpers {
        let built = h.flags.iter().any(|flags| {
            Command::new("cc")
                .args(*flags)
                .arg("-o")
                .arg(dir.join(h.name))
                .arg(root.join(h.source))
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
        if !built {
            bail!("cc cannot build {} with any of its flag sets", h.source);
        }
    }
    Ok(out)
}

/// oscost's release binary: `given`, or built with cargo.
pub fn oscost_binary(given: Option<&Path>, root: &Path) -> anyhow::Result<PathBuf> {
    if let Some(path) = given {
        if !path.is_file() {
            bail!("--oscost {}: no such file", path.display());
        }
        return Ok(path.to_path_buf());
    }
    eprintln!("building oscost (release)...");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "-q", "--bin", "oscost"])
        .current_dir(root)
        .status()
        .context("cannot run cargo")?;
    if !status.success() {
        bail!("cargo build --release failed");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    Ok(target.join("release/oscost"))
}

/// The command for `program args`, under `taskset -c cpu` when `pin` is set.
pub fn command(program: &Path, args: &[String], pin: Option<usize>) -> Command {
    match pin {
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(cpu.to_string()).arg(program).args(args);
            c
        }
        None => {
            let mut c = Command::new(program);
            c.args(args);
            c
        }
    }
}

/// Runs `cmd` to its end; its standard output, or an error with its standard error.
pub fn output(mut cmd: Command, what: &str) -> anyhow::Result<String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot start {what}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        bail!("{what} failed ({}): {}", out.status, err.trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A C reference's output: `ID NS [more]` a line; lines starting `#` are remarks.
pub fn parse_c(text: &str) -> anyhow::Result<Figures> {
    let mut figures = Figures::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(id), Some(ns)) = (words.next(), words.next()) else {
            bail!("a line of the reference's output is not `ID NS`: {line:?}");
        };
        let ns: f64 = ns
            .parse()
            .with_context(|| format!("not a number in the reference's output: {line:?}"))?;
        figures.push((id.to_string(), ns));
    }
    Ok(figures)
}

/// The first bin of `bins` (bin -> count) whose running count reaches the fraction `p` of
/// all the values, `overflow` (values beyond the last bin) included: `None` when it lies
/// among the overflow, or there are no values. How both sides' whole-µs percentiles are read.
pub fn bin_percentiles(bins: &BTreeMap<u64, u64>, overflow: u64, p: f64) -> Option<u64> {
    let all = bins.values().sum::<u64>() + overflow;
    if all == 0 {
        return None;
    }
    let mut running = 0;
    bins.iter().find_map(|(&bin, &n)| {
        running += n;
        (running as f64 >= p * all as f64).then_some(bin)
    })
}

/// oscost's result document, read through the model: the figures `read` names, and every
/// case's counters.
pub fn parse_oscost(text: &str, read: &[Read]) -> anyhow::Result<Measured> {
    let doc = oscost_model::schema::read(text).context("oscost's result document")?;
    let mut m = Measured::default();
    for r in read {
        match *r {
            Read::Medians => {
                for c in doc.experiments.iter().flat_map(|e| &e.cases) {
                    m.figures.push((c.id.clone(), c.median_ns));
                }
            }
            Read::Counter(key) => {
                for c in doc.experiments.iter().flat_map(|e| &e.cases) {
                    if let Some(&v) = c.counters.get(key) {
                        m.figures.push((format!("{}.{key}", c.id), v));
                    }
                }
            }
            Read::WholeUsPercentiles => {
                for c in doc.experiments.iter().flat_map(|e| &e.cases) {
                    let mut bins = BTreeMap::new();
                    for &ns in &c.raw_ns {
                        // Cut down, as cyclictest counts whole µs.
                        *bins.entry((ns / 1000.0).floor() as u64).or_insert(0) += 1;
                    }
                    for (name, p) in [("p50_us", 0.50), ("p99_us", 0.99)] {
                        if let Some(bin) = bin_percentiles(&bins, 0, p) {
                            m.figures.push((format!("{}.{name}", c.id), bin as f64));
                        }
                    }
                }
            }
            Read::Controls => {
                let controls = doc.experiments.iter().find_map(|e| e.controls.as_ref());
                for kind in oscost_model::ControlKind::ALL {
                    if let Some(c) = controls.filter(|c| !c.samples(kind).is_empty()) {
                        let median = oscost_stats::median(c.samples(kind));
                        m.figures.push((kind.id().to_string(), median));
                    }
                }
            }
        }
    }
    for e in doc.experiments {
        for (k, v) in e.params {
            let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            m.params.entry(k).or_insert(text);
        }
        for c in e.cases {
            m.counters.insert(c.id, c.counters);
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_output_is_read_and_a_bad_line_named() {
        let f =
            parse_c("net.tcp.rtt.cross 13888.4\n# poller_cpu_share 0.9\n\nsignal.catch 1119 x\n")
                .unwrap();
        assert_eq!(
            f,
            [
                ("net.tcp.rtt.cross".into(), 13888.4),
                ("signal.catch".into(), 1119.0)
            ]
        );
        let e = parse_c("net.tcp.rtt.cross\n").unwrap_err().to_string();
        assert!(e.contains("not `ID NS`"), "{e}");
        let e = parse_c("a b\n").unwrap_err().to_string();
        assert!(e.contains("not a number"), "{e}");
    }

    #[test]
    fn counters_and_controls_are_read_as_figures_under_their_ids() {
        let golden = include_str!("../../../tests/golden/oscost-2.json");
        // The scripted document has no counter and no controls: give its first case one and
        // its first experiment the others (the experiment's own `"load"` key follows the
        // machine's, so the second one is the experiment's).
        let text = golden.replacen(
            r#""counters": {}"#,
            r#""counters": {"gaps_per_s": 12.5}"#,
            1,
        );
        let at = text.match_indices(r#""load": {"#).nth(1).unwrap().0;
        let text = format!(
            r#"{}"controls": {{"kernel_entry_ns": [3, 1, 2], "user_loop_ns": [10, 40]}}, {}"#,
            &text[..at],
            &text[at..]
        );
        let m = parse_oscost(&text, &[Read::Counter("gaps_per_s"), Read::Controls]).unwrap();
        assert_eq!(
            m.figures,
            [
                ("example.cost100.gaps_per_s".into(), 12.5),
                ("control.kernel_entry".into(), 2.0),
                ("control.user_loop".into(), 25.0)
            ]
        );
        let medians = parse_oscost(golden, &[Read::Medians]).unwrap();
        assert_eq!(medians.figures[0].0, "example.cost100");
        assert_eq!(medians.params["rate_per_s"], "10000.0");
    }

    #[test]
    fn bin_percentiles_reach_their_share_and_not_into_the_overflow() {
        let bins = BTreeMap::from([(3, 49), (4, 1), (7, 49)]);
        assert_eq!(bin_percentiles(&bins, 1, 0.50), Some(4));
        assert_eq!(bin_percentiles(&bins, 1, 0.99), Some(7));
        assert_eq!(bin_percentiles(&bins, 2, 0.99), None);
        assert_eq!(bin_percentiles(&BTreeMap::new(), 0, 0.5), None);
    }

    #[test]
    fn a_document_that_is_not_oscost_s_is_refused() {
        assert!(parse_oscost("{}", &[Read::Medians]).is_err());
    }
}
