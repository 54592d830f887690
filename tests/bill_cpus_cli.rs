//! `oscost bill --under cpus=LIST` as a user drives it: the command pinned to the list before it
//! executes, a bad list or a CPU oscost may not use refused in one line, and a plain bill's
//! wake-ups across CPUs predicted on one CPU from a run's same-CPU and cross-CPU figures.

mod common;

use common::{is_root, oscost};
use oscost_model::bill::Bill;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The command these tests bill: three wake-ups of `cat` by the shell's `echo` over a pipe,
/// and its own view of the CPUs it may run on.
const PIPELINE: &str =
    "for i in 1 2 3; do echo; done | cat; grep Cpus_allowed_list /proc/self/status";

/// The bill of an `oscost bill --json` document.
fn read_bill(path: &Path) -> Bill {
    let doc = oscost_model::read(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc.bill.expect("a bill")
}

/// The golden result document with its two derived figures renamed to a pipe's wake-up on one
/// CPU (150 ns) and across two (90 ns): a file `--prices` reads.
fn prices_file(dir: &Path) -> PathBuf {
    let golden = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/oscost-2.json");
    let text = std::fs::read_to_string(golden)
        .unwrap()
        .replace(
            "\"example.difference\"",
            "\"switch.pipe.threads.same.one_way\"",
        )
        .replace(
            "\"example-more.difference\"",
            "\"switch.pipe.threads.cross.one_way\"",
        );
    let path = dir.join("switch.json");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs oscost with `args`; its exit status, stdout and stderr.
fn run(args: &[&OsStr]) -> (Option<i32>, String, String) {
    let out = oscost().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(Into::into).collect()
}

#[test]
fn a_bad_cpu_list_or_a_cpu_not_allowed_is_refused_in_one_line() {
    let allowed = oscost_sys::affinity().unwrap();
    let beyond = format!("cpus={}", allowed.iter().max().unwrap() + 1);
    let both = format!("cpus={},{}", allowed[0], allowed.iter().max().unwrap() + 1);
    for (setting, needle) in [
        ("cpus=", "names no CPU"),
        ("cpus=x", "`cpus=x`: `x` is not a CPU list"),
        ("cpus=3-1", "range `3-1` runs backwards"),
        ("cpus=0-", "is not a CPU list"),
        (beyond.as_str(), "is not among the CPUs oscost may run on"),
        (both.as_str(), "is not among the CPUs oscost may run on"),
    ] {
        let args = os(&["bill", "--no-save", "--under", setting, "--", "true"]);
        let args: Vec<&OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let (code, out, err) = run(&args);
        assert_eq!(code, Some(2), "{setting}: {err}");
        assert_eq!(err.lines().count(), 1, "{setting}: {err}");
        assert!(err.contains(needle), "{setting}: {err}");
        assert!(out.is_empty(), "{setting}: the command did not run: {out}");
    }
    // The refusal names the CPU not allowed, not the whole list.
    let args = os(&["bill", "--no-save", "--under", &both, "--", "true"]);
    let args: Vec<&OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let (_, _, err) = run(&args);
    let cpu = allowed.iter().max().unwrap() + 1;
    assert!(err.contains(&format!(": CPU {cpu} is not")), "{err}");
}

/// The command sees itself pinned (no root needed: without a cgroup it is pinned all the
/// same); as root, its bill says what it ran under, and counts its wake-ups across CPUs.
#[test]
fn the_command_runs_pinned_and_its_bill_says_so() {
    let allowed = oscost_sys::affinity().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("b.json");
    let mut lists = vec![(format!("cpus={}", allowed[0]), allowed[0].to_string())];
    if allowed.len() >= 2 {
        let two = format!("{},{}", allowed[0], allowed[1]);
        let named = oscost_model::cpulist::format(&allowed[..2]);
        lists.push((format!("cpus={two}"), named));
    }
    for (setting, listed) in lists {
        let args = [
            "bill",
            "--quiet",
            "--no-save",
            "--under",
            &setting,
            "--json",
            json.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            PIPELINE,
        ];
        let args = os(&args);
        let args: Vec<&OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let (code, out, err) = run(&args);
        assert_eq!(code, Some(0), "{setting}: {err}");
        assert_eq!(
            out,
            format!("\n\n\nCpus_allowed_list:\t{listed}\n"),
            "{setting}"
        );
        let b = read_bill(&json);
        assert_eq!(
            b.under.as_deref(),
            Some(format!("cpus={listed}").as_str()),
            "{setting}"
        );
        assert!(
            b.notes
                .iter()
                .any(|n| n.contains("sched_setaffinity call is oscost pinning it")),
            "{:?}",
            b.notes
        );
        if is_root() {
            let s = b.sched.as_ref().expect("the probe's scheduler counts");
            let cross = s.cross_cpu_wakeups.expect("wake-ups across CPUs counted");
            if allowed.len() == 1 || setting == format!("cpus={}", allowed[0]) {
                assert_eq!(cross, 0, "{setting}: pinned to one CPU, none cross: {s:?}");
            }
            assert!(cross <= s.wakeups, "{s:?}");
        }
    }
}

/// Root only (the count comes from the probe): a plain bill predicted on one CPU, its
/// wake-ups across CPUs × (150 − 90 ns); on two, no figure; without a `switch` run, the one
/// line naming it; an old bill without the count still shown, and refused a prediction.
#[test]
fn a_plain_bill_is_predicted_on_one_cpu() {
    if !is_root() {
        return common::skip("needs root: the probe counts the wake-ups across CPUs");
    }
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("h.db");
    let json = dir.path().join("b.json");
    let prices = prices_file(dir.path());
    let (code, _, err) = run(&[
        OsStr::new("bill"),
        OsStr::new("--quiet"),
        OsStr::new("--history"),
        history.as_os_str(),
        OsStr::new("--json"),
        json.as_os_str(),
        OsStr::new("--"),
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new(PIPELINE),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let b = read_bill(&json);
    let cross = b.sched.as_ref().unwrap().cross_cpu_wakeups.unwrap();
    let predict = |setting: &str, bill: Option<&Path>, prices: Option<&Path>| {
        let mut args: Vec<&OsStr> = vec![OsStr::new("bill"), OsStr::new("show")];
        if let Some(b) = bill {
            args.push(b.as_os_str());
        }
        args.extend([OsStr::new("--predict-under"), OsStr::new(setting)]);
        if let Some(p) = prices {
            args.extend([OsStr::new("--prices"), p.as_os_str()]);
        }
        args.extend([OsStr::new("--history"), history.as_os_str()]);
        run(&args)
    };
    let (code, out, err) = predict("cpus=0", None, Some(&prices));
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("predicted under cpus=0:"), "{out}");
    assert!(
        out.contains(&format!(
            "{cross} wake-ups by the program that crossed CPUs"
        )),
        "{cross}: {out}"
    );
    assert!(out.contains("switch.pipe.threads.same.one_way"), "{out}");
    assert!(out.contains("switch.pipe.threads.cross.one_way"), "{out}");
    // 149.9997 ns less 90.0049 ns, to the nearest 0.01 ns.
    assert!(out.contains("+59.99 ns"), "{out}");

    let (code, out, err) = predict("cpus=0-1", None, Some(&prices));
    assert_eq!(code, Some(2), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no prediction under cpus=0-1"), "{err}");
    assert!(err.contains("the scheduler's choice"), "{err}");

    let (code, _, err) = predict("cpus=0", None, None);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("`oscost switch --via pipe --kind threads --placement same,cross`"),
        "{err}"
    );

    // A bill made before the count was kept: shown as it was, no prediction from it.
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let sched = doc["bill"]["sched"].as_object_mut().unwrap();
    assert!(sched.remove("cross_cpu_wakeups").is_some());
    let old = dir.path().join("old.json");
    std::fs::write(&old, doc.to_string()).unwrap();
    let (code, out, err) = run(&[OsStr::new("bill"), OsStr::new("show"), old.as_os_str()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("bill of sh"), "{out}");
    let (code, _, err) = predict("cpus=0", Some(&old), Some(&prices));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("cpus=0: the bill holds no count of its wake-ups across CPUs"),
        "{err}"
    );

    // In rounds: the check is printed, held in the wall time, whichever way it comes out.
    let (code, _, err) = run(&[
        OsStr::new("bill"),
        OsStr::new("--under"),
        OsStr::new("cpus=0"),
        OsStr::new("--rounds"),
        OsStr::new("3"),
        OsStr::new("--prices"),
        prices.as_os_str(),
        OsStr::new("--"),
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new(PIPELINE),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("checked under cpus=0: 3 rounds"), "{err}");
    assert!(err.contains("wall time (median)"), "{err}");
    assert!(err.contains("the prediction holds") || err.contains("the prediction misses"));
}
