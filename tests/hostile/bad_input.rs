//! Bad options and arguments, one table row each: refused with exit 2 in one `oscost: ` line
//! matching the row's pattern, nothing on stdout, the working directory untouched.

use std::ffi::OsString;

use crate::runner::{arg, case, table, QUICK_SYS};

/// One bad command line.
struct Row {
    /// The case's name.
    name: &'static str,
    /// What the one line must match.
    re: &'static str,
    /// oscost's arguments; `QS` stands for [`QUICK_SYS`], `{OFFLINE}` for a CPU that is not
    /// online, `{N300}` for a name of 300 characters, `\xHH` for a byte that is not UTF-8.
    args: &'static [&'static str],
}

/// A CPU this machine does not have online: 99, unless it has that one.
fn offline_cpu() -> String {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let mut last = 0;
    let mut has_99 = false;
    for part in online.trim().split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi): (u32, u32) = (lo.parse().unwrap(), hi.parse().unwrap());
        has_99 |= (lo..=hi).contains(&99);
        last = last.max(hi);
    }
    if has_99 { last + 1 } else { 99 }.to_string()
}

/// A row's arguments, its stand-ins replaced.
fn expand(args: &[&str]) -> Vec<OsString> {
    let mut out = Vec::new();
    for a in args {
        match *a {
            "QS" => out.extend(QUICK_SYS.iter().map(OsString::from)),
            "{OFFLINE}" => out.push(offline_cpu().into()),
            _ => out.push(arg(&a.replace("{N300}", &"n".repeat(300)))),
        }
    }
    out
}

/// Runs the rows, each in a working directory holding `keep.csv` (which many of them also name
/// as an output, so that a file written before the refusal would show).
fn run(rows: &[Row]) {
    table(
        rows,
        |r| r.name,
        |r| {
            case(false, |c| {
                c.write("keep.csv", "precious\n");
                c.refused(r.re, &expand(r.args));
            })
        },
    );
}

/// Options of the measuring commands.
#[test]
fn bad_measuring_options_are_refused() {
    run(MEASURING);
}

/// Commands, files and the options of the other commands.
#[test]
fn bad_commands_and_files_are_refused() {
    run(OTHERS);
}

const MEASURING: &[Row] = &[
    Row {
        name: "cpus-offline",
        re: "not online",
        args: &[
            "--cpus",
            "{OFFLINE}",
            "QS",
            "--json",
            "r.json",
            "--csv",
            "keep.csv",
        ],
    },
    Row {
        name: "cpus-negative",
        re: "not a CPU list",
        args: &[
            "--cpus", "-1", "QS", "--json", "r.json", "--csv", "keep.csv",
        ],
    },
    Row {
        name: "cpus-0-99999",
        re: "not online",
        args: &[
            "--cpus", "0-99999", "QS", "--json", "r.json", "--csv", "keep.csv",
        ],
    },
    Row {
        name: "cpus-x-y",
        re: "not a CPU list",
        args: &[
            "--cpus", "x-y", "QS", "--json", "r.json", "--csv", "keep.csv",
        ],
    },
    Row {
        name: "cpus-backwards",
        re: "backwards",
        args: &["--cpus", "1-0", "QS", "--json", "r.json"],
    },
    Row {
        name: "cpus-empty-item",
        re: "not a CPU list",
        args: &["--cpus", "0,,1", "QS", "--json", "r.json"],
    },
    Row {
        name: "samples-0",
        re: "samples from 3",
        args: &[
            "syscall",
            "--quick",
            "--samples",
            "0",
            "--json",
            "r.json",
            "--csv",
            "keep.csv",
        ],
    },
    Row {
        name: "samples-negative",
        re: "samples from 3",
        args: &["syscall", "--quick", "--samples", "-1", "--json", "r.json"],
    },
    Row {
        name: "samples-2",
        re: "samples from 3",
        args: &["syscall", "--quick", "--samples", "2", "--json", "r.json"],
    },
    Row {
        name: "samples-overflow",
        re: "samples from 3",
        args: &[
            "syscall",
            "--quick",
            "--samples",
            "99999999999999999999",
            "--json",
            "r.json",
        ],
    },
    Row {
        name: "nice-40",
        re: "nice",
        args: &[
            "--nice", "40", "QS", "--json", "r.json", "--csv", "keep.csv",
        ],
    },
    Row {
        name: "nice-not-a-number",
        re: "nice",
        args: &["--nice", "abc", "QS", "--json", "r.json"],
    },
    Row {
        name: "rate-negative",
        re: "rate",
        args: &[
            "QS", "--rate", "-5", "--json", "r.json", "--csv", "keep.csv",
        ],
    },
    Row {
        name: "rate-1e999",
        re: "rate",
        args: &["QS", "--rate", "1e999", "--json", "r.json"],
    },
    Row {
        name: "calls-nope",
        re: "choose from.*getpid",
        args: &[
            "syscall", "--calls", "nope", "--json", "r.json", "--csv", "keep.csv",
        ],
    },
    Row {
        name: "calls-non-utf8",
        re: "choose from",
        args: &["syscall", "--calls", r"\xff", "--json", "r.json"],
    },
    Row {
        name: "run-nosuch",
        re: "choose from.*syscall",
        args: &["run", "nosuch", "--json", "r.json", "--csv", "keep.csv"],
    },
    Row {
        name: "ring-tasks-1",
        re: "at least 2 tasks",
        args: &[
            "ring", "--tasks", "1", "--json", "r.json", "--csv", "keep.csv",
        ],
    },
    Row {
        name: "ring-tokens-0",
        re: "token",
        args: &[
            "ring", "--tokens", "0", "--json", "r.json", "--csv", "keep.csv",
        ],
    },
    Row {
        name: "ring-tasks-negative",
        re: "tasks",
        args: &["ring", "--tasks", "-4", "--json", "r.json"],
    },
    Row {
        name: "ring-tokens-as-tasks",
        re: "tokens 4",
        args: &["ring", "--tasks", "4", "--tokens", "4", "--json", "r.json"],
    },
    Row {
        name: "switch-carrier-pigeon",
        re: "choose from.*pipe",
        args: &[
            "switch",
            "--via",
            "carrier-pigeon",
            "--json",
            "r.json",
            "--csv",
            "keep.csv",
        ],
    },
    Row {
        name: "lockring-verify-order-pipe",
        re: "add mutex to --forms",
        args: &[
            "lockring",
            "--verify-order",
            "--forms",
            "pipe",
            "--json",
            "r.json",
            "--csv",
            "keep.csv",
        ],
    },
    Row {
        name: "fs-calls-nope",
        re: "choose from.*getpid",
        args: &[
            "fs", "--calls", "nope", "--json", "r.json", "--csv", "keep.csv",
        ],
    },
    Row {
        name: "fs-rate-0",
        re: "calls per sec",
        args: &["fs", "--rate", "0", "--json", "r.json"],
    },
    Row {
        name: "fs-rate-negative",
        re: "calls per sec",
        args: &["fs", "--rate", "-5", "--json", "r.json"],
    },
    Row {
        name: "fs-rate-nan",
        re: "calls per sec",
        args: &["fs", "--rate", "nan", "--json", "r.json"],
    },
    Row {
        name: "fs-calls-empty",
        re: "value is required",
        args: &["fs", "--calls", ",", "--json", "r.json"],
    },
    Row {
        name: "tick-rr-slice-0",
        re: "slice in ms",
        args: &[
            "tick",
            "--rr-slices",
            "0",
            "--json",
            "r.json",
            "--csv",
            "keep.csv",
        ],
    },
    Row {
        name: "tick-rr-slice-negative",
        re: "slice in ms",
        args: &["tick", "--rr-slices", "-1", "--json", "r.json"],
    },
    Row {
        name: "tick-period-0",
        re: "below 1us",
        args: &["tick", "--periods", "0ms", "--json", "r.json"],
    },
    Row {
        name: "tick-runs-0",
        re: "number of runs",
        args: &["tick", "--runs", "0", "--json", "r.json"],
    },
    Row {
        name: "timeline-rr-slice-0",
        re: "round-robin slice",
        args: &["timeline", "--rr-slice-ms", "0", "--json", "r.json"],
    },
    Row {
        name: "timeline-workers-0",
        re: "number of workers",
        args: &["timeline", "--workers", "0", "--json", "r.json"],
    },
    Row {
        name: "signal-cases-nope",
        re: "choose from",
        args: &["signal", "--cases", "nope", "--json", "r.json"],
    },
    Row {
        name: "wakeup-period-no-unit",
        re: "no unit",
        args: &["wakeup", "--period", "0", "--json", "r.json"],
    },
    Row {
        name: "wakeup-period-negative",
        re: "not a time",
        args: &["wakeup", "--period", "-1ms", "--json", "r.json"],
    },
    Row {
        name: "lockring-forms-nope",
        re: "choose from: mutex, pipe",
        args: &["lockring", "--forms", "nope", "--json", "r.json"],
    },
    Row {
        name: "seccomp-sets-nope",
        re: "choose from",
        args: &["seccomp", "--sets", "nope", "--json", "r.json"],
    },
    Row {
        name: "seccomp-profile-missing",
        re: "seccomp profile nope.json: cannot read it",
        args: &["seccomp", "--profile", "nope.json", "--json", "r.json"],
    },
    Row {
        name: "bill-under-seccomp-file-missing",
        re: "seccomp profile nope.json: cannot read it",
        args: &["bill", "--under", "seccomp=nope.json", "--", "true"],
    },
    Row {
        name: "uring-ops-nope",
        re: "choose from",
        args: &["uring", "--ops", "nope", "--json", "r.json"],
    },
];

const OTHERS: &[Row] = &[
    Row {
        name: "frobnicate",
        re: "frobnicate",
        args: &["frobnicate", "--json", "r.json"],
    },
    Row {
        name: "missing-argument-named",
        re: "not provided: <RUN>",
        args: &["history", "show"],
    },
    Row {
        name: "missing-files-named",
        re: "not provided: <FILE>",
        args: &["history", "import"],
    },
    Row {
        name: "command-non-utf8",
        re: "subcommand",
        args: &[r"\xfe\xff", "--json", "r.json"],
    },
    Row {
        name: "same-file-json-csv",
        re: "both write same.out",
        args: &["QS", "--json", "same.out", "--csv", "same.out"],
    },
    Row {
        name: "same-file-via-dot-slash",
        re: "both write",
        args: &["QS", "--json", "keep.csv", "--markdown", "./keep.csv"],
    },
    Row {
        name: "two-formats-to-stdout",
        re: "stdout",
        args: &[
            "--scripted",
            "example",
            "--json",
            "-",
            "--csv",
            "/dev/stdout",
        ],
    },
    Row {
        name: "output-is-directory",
        re: "directory",
        args: &["QS", "--json", ".", "--csv", "keep.csv"],
    },
    Row {
        name: "output-missing-directory",
        re: "does not exist",
        args: &["QS", "--json", "nodir/r.json", "--csv", "keep.csv"],
    },
    Row {
        name: "output-non-utf8-missing-dir",
        re: "does not exist",
        args: &["--scripted", "example", "--json", r"\xff/r.json"],
    },
    Row {
        name: "output-name-too-long",
        re: "too long",
        args: &["--scripted", "example", "--json", "{N300}.json"],
    },
    Row {
        name: "history-show-nosuch",
        re: "no run `nosuch`",
        args: &["history", "show", "nosuch"],
    },
    Row {
        name: "history-rm-nosuch",
        re: "no run `nosuch`",
        args: &["history", "rm", "nosuch"],
    },
    Row {
        name: "history-trend-nosuch",
        re: "has a case `nosuch.case`",
        args: &["history", "trend", "nosuch.case"],
    },
    Row {
        name: "report-without-output",
        re: "report needs -o FILE",
        args: &["report", "r.json"],
    },
    Row {
        name: "compare-one-file",
        re: "two results or more",
        args: &["compare", "r.json"],
    },
    Row {
        name: "datasheet-json-file",
        re: "datasheet does not use --json",
        args: &["datasheet", "r.json", "--json", "ds.json"],
    },
    Row {
        name: "datasheet-csv-file",
        re: "datasheet does not use --csv",
        args: &["datasheet", "r.json", "--csv", "ds.csv"],
    },
    Row {
        name: "datasheet-markdown-file",
        re: "datasheet does not use --markdown",
        args: &["datasheet", "r.json", "--markdown", "ds.md"],
    },
    Row {
        name: "datasheet-missing-file",
        re: "no such file",
        args: &["datasheet", "/nonexistent/r.json"],
    },
    Row {
        name: "baselines-nosuch",
        re: "no published baseline",
        args: &["baselines", "nosuch"],
    },
    Row {
        name: "study-nosuch",
        re: "no study named",
        args: &["study", "nosuch"],
    },
    Row {
        name: "man-nosuch",
        re: "no such subcommand",
        args: &["man", "nosuch"],
    },
    Row {
        name: "history-import-missing-file",
        re: "no such file",
        args: &["history", "import", "/nonexistent/r.json"],
    },
];
