//! The binary as a user drives it: tiny real runs, output files, and bad input.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn oscost() -> Command {
    Command::cargo_bin("oscost").unwrap()
}

fn case<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["cases"].as_array().unwrap())
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no case {id}"))
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
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["schema"], "oscost/1");
    let med = |id: &str| case(&doc, id)["median_ns"].as_f64().unwrap();
    for id in ["syscall.enosys", "syscall.getpid", "syscall.read64k"] {
        let c = case(&doc, id);
        let m = c["median_ns"].as_f64().unwrap();
        assert!(m > 0.0, "{id} median {m}");
        let ci = c["ci95_ns"].as_array().unwrap();
        assert!(ci[0].as_f64().unwrap() <= m && m <= ci[1].as_f64().unwrap());
        assert_eq!(
            c["raw_ns"].as_array().unwrap().len(),
            c["samples"].as_u64().unwrap() as usize
        );
        assert!(c["median_cycles"].as_f64().unwrap() > 0.0);
    }
    // Copying 64 KiB costs more than the null call.
    assert!(med("syscall.read64k") > med("syscall.getpid"));
    assert_eq!(
        case(&doc, "syscall.clock-gettime-vdso")["params"]["system_call"],
        false
    );
    // The share at the default rate is median x 10 000 / 1e9.
    let share = case(&doc, "syscall.getpid")["at_rate"]["share_pct"]
        .as_f64()
        .unwrap();
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
    let doc: Value = serde_json::from_slice(&out).expect("stdout is pure JSON");
    assert_eq!(doc["experiments"][0]["name"], "syscall");
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
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("oscost"))
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
