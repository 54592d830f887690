//! The binary as a user drives it: tiny real runs, output files, and bad input.

mod common;
use common::{oscost, read_doc};

use oscost_model::case::SINGLE_THREAD_CHECK;
use oscost_model::{CaseResult, ResultDoc};
use predicates::prelude::*;
use std::path::Path;
use std::time::{Duration, Instant};

fn case<'a>(doc: &'a ResultDoc, id: &str) -> &'a CaseResult {
    doc.experiments
        .iter()
        .flat_map(|e| &e.cases)
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id}"))
}

/// Runs `oscost --quick --quiet --samples 5 ARGS --json DIR/<first arg>.json` and reads it.
fn quick_run(dir: &Path, args: &[&str]) -> ResultDoc {
    let json = dir.join(format!("{}.json", args[0]));
    oscost()
        .args(["--quick", "--quiet", "--samples", "5"])
        .args(args)
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    read_doc(&json)
}

/// Asserts every case of `doc` carries a passed `threads_in_process` check that counted one
/// thread; returns the case ids.
fn assert_single_threaded(doc: &ResultDoc) -> Vec<String> {
    let cases: Vec<&CaseResult> = doc.experiments.iter().flat_map(|e| &e.cases).collect();
    for c in &cases {
        let check = c
            .checks
            .iter()
            .find(|k| k.name == SINGLE_THREAD_CHECK)
            .unwrap_or_else(|| panic!("{}: no {SINGLE_THREAD_CHECK} check: {:?}", c.id, c.checks));
        assert!(check.passed, "{}: {check:?}", c.id);
        assert_eq!(check.expected, 1.0, "{}: {check:?}", c.id);
        assert_eq!(check.counted, 1.0, "{}: {check:?}", c.id);
    }
    cases.iter().map(|c| c.id.clone()).collect()
}

#[test]
fn list_names_the_experiments() {
    oscost()
        .arg("list")
        .assert()
        .success()
        .stdout(predicate::str::contains("syscall"));
}

#[test]
fn syscall_quick_gives_positive_ordered_self_consistent_figures() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    oscost()
        .env("TMPDIR", tmp.path())
        .args(["syscall", "--quick", "--quiet", "--samples", "7"])
        .args([
            "--calls",
            "enosys,getpid,read64k,clock-gettime-vdso,creat-write-unlink",
        ])
        .arg("--json")
        .arg(&json)
        .assert()
        .success()
        .stdout(predicate::str::contains("syscall.getpid"));
    let doc = read_doc(&json);
    assert_eq!(doc.schema, "oscost/2");
    let med = |id: &str| case(&doc, id).median_ns;
    for id in ["syscall.enosys", "syscall.getpid", "syscall.read64k"] {
        let c = case(&doc, id);
        let m = c.median_ns;
        assert!(m > 0.0, "{id} median {m}");
        let ci = c.ci95_ns;
        assert!(ci[0] <= m && m <= ci[1], "{id}: median {m} outside {ci:?}");
        assert_eq!(c.raw_ns.len(), c.samples, "{id}");
        assert!(c.median_cycles > 0.0, "{id}");
    }
    // Copying 64 KiB costs more than the null call.
    assert!(med("syscall.read64k") > med("syscall.getpid"));
    assert_eq!(
        case(&doc, "syscall.clock-gettime-vdso")
            .params
            .get("system_call"),
        Some(&serde_json::Value::Bool(false))
    );
    // The share at the default rate is median x 10 000 / 1e9.
    let share = case(&doc, "syscall.getpid")
        .at_rate
        .as_ref()
        .expect("syscall.getpid has no at_rate")
        .share_pct;
    assert!((share - med("syscall.getpid") * 1e4 / 1e9 * 100.0).abs() < 1e-9);
    // The private temporary directory is gone.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn csv_markdown_and_json_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("r.csv");
    let md = dir.path().join("r.md");
    let out = oscost()
        .args([
            "syscall",
            "--quick",
            "--quiet",
            "--samples",
            "5",
            "--calls",
            "getppid",
        ])
        .arg("--csv")
        .arg(&csv)
        .arg("--markdown")
        .arg(&md)
        .args(["--json", "-"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: ResultDoc = serde_json::from_slice(&out).expect("stdout is one pure result document");
    assert_eq!(doc.experiments[0].name, "syscall");
    let csv = std::fs::read_to_string(csv).unwrap();
    assert!(csv.starts_with("experiment,id,unit,median_ns"));
    assert_eq!(csv.lines().count(), 2);
    assert!(std::fs::read_to_string(md)
        .unwrap()
        .contains("| syscall.getppid |"));
}

/// Every bad input: exit 2, one line naming the problem, no file written, no panic.
#[test]
fn bad_input_is_one_clear_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let cases: &[(&[&str], &str)] = &[
        (&["syscall", "--samples", "0"], "--samples"),
        (&["syscall", "--cpus", "99"], "--cpus"),
        (&["syscall", "--cpus", "x-y"], "--cpus"),
        (&["run", "nosuch"], "nosuch"),
        (&["syscall", "--calls", "getpid,nosuch"], "--calls"),
        (&["syscall", "--rate", "-5"], "--rate"),
        (&["syscall", "--nice", "40"], "--nice"),
        (&["frobnicate"], "frobnicate"),
        (&["syscall", "--samples", "2"], "from 3 to 100000"),
        (&["syscall", "--min-runs", "0"], "--min-runs"),
        (&["syscall", "--min-runs", "-3"], "--min-runs"),
        (
            &["syscall", "--min-runs", "20", "--samples", "10"],
            "--min-runs 20",
        ),
        (
            &["syscall", "--quick", "--min-runs", "11"],
            "10 samples per case by default",
        ),
        (&["syscall", "--warmup", "0s"], "--warmup"),
        (&["syscall", "--warmup", "-5ms"], "--warmup"),
        (&["syscall", "--warmup", "40"], "has no unit"),
        (&["syscall", "--warmup", "2min"], "--warmup"),
        (&["syscall", "--warmup", "61s"], "from 1us to 60s"),
        (&["syscall", "--budget", "0ms"], "--budget"),
        (&["syscall", "--budget", "3601s"], "from 1us to 1h"),
        (&["list", "--budget", "1s"], "--budget"),
    ];
    for (args, needle) in cases {
        let out = oscost()
            .args(*args)
            .arg("--json")
            .arg(&json)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("oscost: ") && err.contains(needle),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"));
        assert!(!json.exists(), "{args:?} wrote a result file");
    }
}

#[test]
fn unwritable_output_fails_before_measuring() {
    for flag in ["--json", "--csv", "--markdown"] {
        oscost()
            .args(["syscall", "--quick", flag, "/nonexistent-dir/r.out"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(flag).and(predicate::str::contains("does not exist")))
            .stdout(predicate::str::is_empty());
    }
}

#[test]
fn env_describes_the_machine() {
    oscost()
        .arg("env")
        .assert()
        .success()
        .stdout(predicate::str::contains("kernel"));
}

/// Ctrl-C mid-run: exit 130, nothing written, the temporary directory removed.
#[test]
fn ctrl_c_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let child = common::oscost_std()
        .env("TMPDIR", tmp.path())
        .args([
            "syscall",
            "--quiet",
            "--samples",
            "400",
            "--calls",
            "read64k,write64k",
        ])
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the scratch directory exists, so the interrupt lands mid-measurement.
    let t0 = std::time::Instant::now();
    while std::fs::read_dir(tmp.path()).unwrap().count() == 0 {
        assert!(
            t0.elapsed().as_secs() < 20,
            "oscost never created its scratch directory"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"));
    assert!(!json.exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

/// Every one-task case is measured in a single-threaded process, and says so.
#[test]
fn one_task_cases_count_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let runs: [(&[&str], &[&str]); 2] = [
        (
            &[
                "syscall",
                "--calls",
                "getpid,lseek,read64k",
                "--multi-threaded",
                "none",
            ],
            &["syscall.getpid", "syscall.lseek", "syscall.read64k"],
        ),
        (
            &[
                "primitives",
                "--only",
                "pipe,futex-wake",
                "--multi-threaded",
                "none",
            ],
            &["primitives.pipe", "primitives.futex-wake"],
        ),
    ];
    for (args, want) in runs {
        let doc = quick_run(dir.path(), args);
        let ids = assert_single_threaded(&doc);
        assert_eq!(ids, want, "{args:?}");
    }
}

/// Processes whose parent is `parent`, as (pid, command line with NULs as spaces).
fn children_of(parent: u32) -> Vec<(u32, String)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let ppid: u32 = stat[stat.rfind(')')? + 2..]
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            (ppid == parent).then(|| (pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")))
        })
        .collect()
}

/// `State:` and `Threads:` of `/proc/PID/status`, if the process still exists.
fn state_and_threads(pid: u32) -> Option<(String, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_owned())
    };
    Some((field("State:")?, field("Threads:")?.parse().ok()?))
}

/// While `oscost syscall` measures, its measuring process (`oscost __measure`, the child of
/// the coordinator) has exactly one thread: the coordinator's signal thread stays in the
/// coordinator. No timing is asserted: the run only has to last long enough to be looked at.
#[test]
fn the_measuring_process_has_one_thread() {
    let mut child = common::oscost_std()
        .args([
            "syscall",
            "--calls",
            "getpid,lseek",
            "--multi-threaded",
            "none",
            "--samples",
            "200",
            "--quiet",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let oscost_pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut readings = Vec::new();
    let mut measuring = None;
    // Polled for the whole run, every case included; stopped only if it never ends.
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        let found: Vec<(u32, String)> = children_of(oscost_pid)
            .into_iter()
            .filter(|(_, cmd)| cmd.contains("__measure"))
            .collect();
        assert!(
            found.len() <= 1,
            "more than one measuring process: {found:?}"
        );
        if let Some(&(pid, _)) = found.first() {
            assert!(
                measuring.is_none() || measuring == Some(pid),
                "a second measuring process {pid} for one experiment (first: {measuring:?})"
            );
            measuring = Some(pid);
            // A zombie waiting to be reaped has no threads left to count.
            if let Some((state, threads)) = state_and_threads(pid) {
                if !state.starts_with('Z') {
                    readings.push(threads);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let finished = child.try_wait().unwrap().is_some();
    if !finished {
        let kill = std::process::Command::new("kill")
            .args(["-TERM", &oscost_pid.to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if finished {
        assert_eq!(out.status.code(), Some(0), "{err}");
    } else {
        // The interrupt may land just after the run ended on its own.
        assert!(
            matches!(out.status.code(), Some(0 | 130)),
            "{:?}: {err}",
            out.status
        );
    }
    assert!(
        readings.len() >= 5,
        "too few thread counts of the measuring process ({measuring:?}) were taken: {readings:?}"
    );
    assert!(
        readings.iter().all(|&n| n == 1),
        "the measuring process {measuring:?} had more than one thread: {readings:?}"
    );
}

/// The multi-threaded variants: measured with exactly one extra thread (checked), after the
/// single-threaded figure, and a penalty derived from the pair.
#[test]
fn multi_threaded_variants_have_two_threads_and_a_penalty() {
    let dir = tempfile::tempdir().unwrap();
    let runs: [(&[&str], &str); 2] = [
        (
            &[
                "syscall",
                "--calls",
                "getpid,lseek",
                "--multi-threaded",
                "lseek",
            ],
            "syscall.lseek",
        ),
        (
            &["primitives", "--only", "pipe", "--multi-threaded", "pipe"],
            "primitives.pipe",
        ),
    ];
    for (args, base) in runs {
        let doc = quick_run(dir.path(), args);
        let ids: Vec<&str> = doc.experiments[0]
            .cases
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        let mt = format!("{base}.mt");
        assert_eq!(
            ids.last(),
            Some(&mt.as_str()),
            "the variant comes last: {ids:?}"
        );
        let check = case(&doc, &mt)
            .checks
            .iter()
            .find(|k| k.name == SINGLE_THREAD_CHECK)
            .unwrap();
        assert!(
            check.passed && check.expected == 2.0 && check.counted == 2.0,
            "{check:?}"
        );
        let single = case(&doc, base)
            .checks
            .iter()
            .find(|k| k.name == SINGLE_THREAD_CHECK)
            .unwrap();
        assert!(single.passed && single.counted == 1.0, "{single:?}");
        let penalty = doc.experiments[0]
            .derived
            .iter()
            .find(|d| d.id == format!("{base}.mt_penalty"))
            .expect("a penalty figure");
        assert_eq!(
            penalty.terms,
            vec![(mt.clone(), 1.0), (base.to_owned(), -1.0)]
        );
        assert_eq!(penalty.flagged, None);
    }
}

/// Every read or write case records where its buffer starts: on a page.
#[test]
fn buffers_are_page_aligned_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    oscost()
        .args(["--quick", "--quiet", "--samples", "5", "syscall"])
        .args(["--calls", "read1,write1,read64k,write64k,getpid"])
        .args(["--multi-threaded", "none", "--json"])
        .arg(&json)
        .assert()
        .success();
    let doc = read_doc(&json);
    for id in ["read1", "write1", "read64k", "write64k"] {
        let c = case(&doc, &format!("syscall.{id}"));
        let align = c.params["buffer_alignment_bytes"].as_u64().unwrap();
        assert!(align >= 4096, "{id}: {align}");
    }
    assert!(!case(&doc, "syscall.getpid")
        .params
        .contains_key("buffer_alignment_bytes"));
}

/// Bad input says what would have been right: the valid choices, the validator's own message
/// for a negative number (never "unexpected argument"), the CPUs that are not online.
#[test]
fn errors_name_the_choices_and_the_problem() {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let online = online.trim();
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["syscall", "--calls", "nope"],
            &["'nope'", "choose from:", "getpid", "read1"],
        ),
        (&["switch", "--via", "pigeon"], &["choose from:", "futex"]),
        (&["run", "nosuch"], &["choose from:", "syscall", "ring"]),
        (
            &["syscall", "--samples", "-1"],
            &["`-1` is not a number of samples from 3 to 100000"],
        ),
        (&["ring", "--tasks", "-4"], &["`-4` is not a list"]),
        (&["ring", "--tokens", "-2"], &["`-2` is not a whole number"]),
        (
            &["syscall", "--cpus", "-1"],
            &["--cpus", "`-1` is not a CPU list"],
        ),
        (
            &["syscall", "--cpus", "0-99999"],
            &["are not online", "-99999", online],
        ),
    ];
    for (args, needles) in cases {
        let out = oscost()
            .args(["--quick", "--quiet"])
            .args(*args)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
        for n in *needles {
            assert!(err.contains(n), "{args:?}: `{n}` missing from {err}");
        }
    }
}

/// `--min-runs`, `--samples` and `--budget` as hyperfine has them: a spent budget stops
/// sampling at `--min-runs` samples, never before, and the run records how it sampled.
#[test]
fn min_runs_samples_and_budget_are_honoured_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    // (arguments, samples expected per case): on the scripted clock every sample spends
    // far more than a 1 ms budget, so sampling stops at the first round the budget allows.
    let runs: &[(&[&str], usize)] = &[
        (&["--min-runs", "3", "--samples", "3", "--budget", "1ms"], 3),
        (
            &["--min-runs", "4", "--samples", "20", "--budget", "1us"],
            4,
        ),
    ];
    for (k, (args, expected)) in runs.iter().enumerate() {
        let json = dir.path().join(format!("r{k}.json"));
        oscost()
            .args([
                "--scripted",
                "--quiet",
                "--no-save",
                "--warmup",
                "2ms",
                "example",
            ])
            .args(*args)
            .arg("--json")
            .arg(&json)
            .assert()
            .success();
        let doc = read_doc(&json);
        let measured: Vec<_> = doc.experiments[0]
            .cases
            .iter()
            .filter(|c| !c.raw_ns.is_empty())
            .collect();
        assert!(!measured.is_empty());
        for c in measured {
            assert_eq!(c.raw_ns.len(), *expected, "{} with {args:?}", c.id);
        }
        let s = doc.environment.sampling.expect("the sampling is recorded");
        assert_eq!(s.min_runs, *expected as u64);
        assert_eq!(s.warmup_ns, 2_000_000);
        assert_eq!(s.budget_ns, if k == 0 { 1_000_000 } else { 1_000 });
        assert_eq!(s.samples, if k == 0 { 3 } else { 20 });
    }
}

/// A run of several experiments prints each briefly (a line per figure, no boxes, the run's
/// warnings once at the end); one experiment, or `--verbose`, prints its full tables.
#[test]
fn a_suite_prints_briefly_and_verbose_prints_the_full_tables() {
    let brief = |extra: &[&str]| {
        let o = oscost()
            .args(["--quick", "--samples", "5", "--no-save"])
            .args(extra)
            .output()
            .expect("runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).expect("UTF-8")
    };
    let suite = brief(&["run", "syscall", "fault"]);
    assert!(!suite.contains('┌'), "{suite}");
    assert!(suite.lines().any(|l| l.starts_with("syscall ")), "{suite}");
    assert!(suite.lines().any(|l| l.starts_with("  getpid ")), "{suite}");
    assert!(suite.lines().any(|l| l.starts_with("fault ")), "{suite}");
    assert!(suite.contains("--verbose, the report"), "{suite}");
    // The datasheet still ends it.
    assert!(
        suite.contains("What the OS costs a program here"),
        "{suite}"
    );

    let verbose = brief(&["--verbose", "run", "syscall", "fault"]);
    assert!(verbose.contains('┌'), "{verbose}");
    assert!(verbose.contains("│ syscall.getpid"), "{verbose}");
    let one = brief(&["syscall"]);
    assert!(one.contains("│ syscall.getpid"), "{one}");
}
