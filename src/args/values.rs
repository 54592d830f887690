//! The parsers of option values that clap's own do not cover: ranges and units, each refusal
//! naming what would be accepted.

/// A study's name: any word is taken (`study` refuses an unknown one itself, with the names
/// and a guess), but the studies are its possible values, so completions and `--help` offer
/// them.
#[derive(Clone, Copy, Debug)]
pub(super) struct StudyName;

impl clap::builder::TypedValueParser for StudyName {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            oscost_report::study::STUDIES
                .iter()
                .map(|s| clap::builder::PossibleValue::new(s.info.name)),
        ))
    }
}

/// A percentage from 0 to 10000 (`10`, `10%`).
pub(super) fn parse_pct(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').trim().parse::<f64>() {
        Ok(p) if p.is_finite() && (0.0..=10_000.0).contains(&p) => Ok(p),
        _ => Err(format!("`{s}` is not a percentage from 0 to 10000")),
    }
}

/// The start of a `--since` window, as RFC 3339 in UTC.
pub(super) fn parse_since(s: &str) -> Result<String, String> {
    oscost_history::since(s)
}

/// A positive number of operations per second (`10_000`).
pub(super) fn parse_rate(s: &str) -> Result<f64, String> {
    match s.trim().replace('_', "").parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!(
            "`{s}` is not a positive number of operations per second"
        )),
    }
}

/// How many comparisons `compare --group-by` runs at once, 1 to 1024 (`--jobs`).
pub(super) fn parse_jobs(s: &str) -> Result<usize, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if (1..=1024).contains(&n) => Ok(n as usize),
        _ => Err(format!(
            "`{s}` is not a number of comparisons at once from 1 to 1024"
        )),
    }
}

/// A number of samples per case, 3 to 100000.
pub(super) fn parse_samples(s: &str) -> Result<u32, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if (3..=100_000).contains(&n) => Ok(n as u32),
        _ => Err(format!("`{s}` is not a number of samples from 3 to 100000")),
    }
}

/// The fewest samples per case, 3 to 100000.
pub(super) fn parse_min_runs(s: &str) -> Result<u32, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if (3..=100_000).contains(&n) => Ok(n as u32),
        _ => Err(format!("`{s}` is not a number of samples from 3 to 100000")),
    }
}

/// A time from `min` to `max` (ns, spelled `shown` in the error), with its unit.
fn parse_time_in(
    s: &str,
    (min, max): (u64, u64),
    what: &str,
    shown: &str,
) -> Result<std::time::Duration, String> {
    let bounds = || format!("`{s}` is not {what} from {shown} (e.g. 40ms)");
    if s.trim().starts_with('-') {
        return Err(bounds());
    }
    match oscost_measure::experiments::parse_time(s)? {
        ns if (min..=max).contains(&ns) => Ok(std::time::Duration::from_nanos(ns)),
        _ => Err(bounds()),
    }
}

/// A warm-up time, 1us to 60s.
pub(super) fn parse_warmup(s: &str) -> Result<std::time::Duration, String> {
    parse_time_in(s, (1_000, 60_000_000_000), "a warm-up", "1us to 60s")
}

/// A time budget per case, 1us to 1h.
pub(super) fn parse_budget(s: &str) -> Result<std::time::Duration, String> {
    parse_time_in(s, (1_000, 3_600_000_000_000), "a time budget", "1us to 1h")
}

/// A positive duration of at most a day (`10s`, `1m`, `250ms`).
pub(super) fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    match humantime::parse_duration(s.trim()) {
        Ok(d) if !d.is_zero() && d <= std::time::Duration::from_secs(86_400) => Ok(d),
        _ => Err(format!(
            "`{s}` is not a duration from 1ns to 24h (e.g. 10s, 1m, 250ms)"
        )),
    }
}

/// A setting a bill's command runs under, or a bill is predicted under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting {
    /// `seccomp=default`: a container runtime's default profile, as oscost's `seccomp`
    /// experiment builds it.
    SeccompDefault,
    /// `seccomp=FILE`: a profile in Docker's JSON format, read from the file when it is used.
    SeccompFile(std::path::PathBuf),
    /// `container`: new mount, UTS, IPC, PID, network and cgroup namespaces, the command born
    /// in them, as oscost's `ns.container` child is.
    Container,
    /// `cpus=LIST`: pinned to these CPUs (`0`, `0,1`, `0-1`), sorted, each once.
    Cpus(Vec<usize>),
}

impl Setting {
    /// As the user writes it.
    pub fn name(&self) -> String {
        match self {
            Setting::SeccompDefault => "seccomp=default".into(),
            Setting::SeccompFile(p) => format!("seccomp={}", p.display()),
            Setting::Container => "container".into(),
            Setting::Cpus(cpus) => format!("cpus={}", oscost_model::cpulist::format(cpus)),
        }
    }
}

/// `seccomp=default`, `seccomp=FILE`, `container` or `cpus=LIST`.
pub(super) fn parse_setting(s: &str) -> Result<Setting, String> {
    match s.trim() {
        "cpus=" => Err("`cpus=` names no CPU (`cpus=0`, `cpus=0,1`, `cpus=0-1`)".into()),
        other if other.starts_with("cpus=") => oscost_model::cpulist::parse(&other[5..])
            .map(Setting::Cpus)
            .map_err(|e| format!("`{other}`: {e}")),
        "seccomp=default" => Ok(Setting::SeccompDefault),
        "container" => Ok(Setting::Container),
        "seccomp=" => Err(
            "`seccomp=` names no profile (`seccomp=default`, or a file in Docker's JSON format)"
                .into(),
        ),
        other if other.starts_with("seccomp=") => Ok(Setting::SeccompFile(
            other.trim_start_matches("seccomp=").into(),
        )),
        other => Err(format!(
            "`{other}` is not a setting oscost bills under (`seccomp=default`, \
             `seccomp=FILE.json`, `container`, `cpus=LIST`)"
        )),
    }
}

/// How `oscost bill` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BillTrace {
    /// BPF programs on raw tracepoints, adding up in the kernel.
    Bpf,
    /// perf's counting events on each system call's tracepoint: calls by name, counted only.
    Perf,
    /// No probe: the kernel's own accounting only.
    None,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_named_as_the_user_writes_them() {
        for s in [
            Setting::SeccompDefault,
            Setting::SeccompFile("mine.json".into()),
            Setting::Container,
            Setting::Cpus(vec![0]),
            Setting::Cpus(vec![0, 1, 3]),
        ] {
            assert_eq!(parse_setting(&s.name()), Ok(s));
        }
        let e = parse_setting("docker").unwrap_err();
        assert!(
            e.contains("`seccomp=default`, `seccomp=FILE.json`, `container`, `cpus=LIST`"),
            "{e}"
        );
        assert!(parse_setting("seccomp=")
            .unwrap_err()
            .contains("names no profile"));
    }

    #[test]
    fn a_cpu_list_is_read_in_the_kernels_syntax() {
        for (text, cpus) in [
            ("cpus=0", vec![0]),
            ("cpus=0,1", vec![0, 1]),
            ("cpus=0-1", vec![0, 1]),
            ("cpus=1,0,1", vec![0, 1]),
            ("cpus=0-2,5", vec![0, 1, 2, 5]),
        ] {
            assert_eq!(parse_setting(text), Ok(Setting::Cpus(cpus)), "{text}");
        }
        assert_eq!(Setting::Cpus(vec![0, 1]).name(), "cpus=0-1");
        assert!(parse_setting("cpus=").unwrap_err().contains("names no CPU"));
        for bad in ["cpus=x", "cpus=0-", "cpus=-1", "cpus=0,,1", "cpus=1.5"] {
            let e = parse_setting(bad).unwrap_err();
            assert!(e.contains("is not a CPU list"), "{bad}: {e}");
            assert!(e.starts_with(&format!("`{bad}`")), "{bad}: {e}");
        }
        let e = parse_setting("cpus=3-1").unwrap_err();
        assert!(e.contains("runs backwards"), "{e}");
    }

    #[test]
    fn jobs_are_a_whole_number_from_one() {
        assert_eq!(parse_jobs("1"), Ok(1));
        assert_eq!(parse_jobs(" 8 "), Ok(8));
        assert_eq!(parse_jobs("1024"), Ok(1024));
        for bad in ["0", "-2", "1025", "two", "", "1.5"] {
            let e = parse_jobs(bad).unwrap_err();
            assert!(e.contains("from 1 to 1024"), "{bad}: {e}");
        }
    }
}
