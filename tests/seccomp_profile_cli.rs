//! A seccomp profile in Docker's JSON format (`tests/fixtures/seccomp/small.json`) as a user
//! drives it: timed by `oscost seccomp --profile`, a command billed under it, a plain bill
//! predicted under it from a price filed by the file's content, and bad files refused in one
//! line. No timing assertions.

mod common;
use common::{assert_args_refused, assert_refused, oscost};
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seccomp/small.json")
}

fn setting(p: &Path) -> String {
    format!("seccomp={}", p.display())
}

/// Bills `cmd` quietly with `options`; its status code and standard error.
fn bill(options: &[&str], cmd: &[&str]) -> (Option<i32>, String) {
    let out = oscost()
        .args(["bill", "--quiet"])
        .args(options)
        .arg("--")
        .args(cmd)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The golden document with its `example` experiment made a `seccomp --profile` run of the
/// file of SHA-256 `digest`, its difference that file's price.
fn prices_for(dir: &Path, digest: &str) -> PathBuf {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/oscost-2.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(golden).unwrap()).unwrap();
    let e = doc["experiments"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|e| e["name"] == "example")
        .unwrap();
    e["name"] = "seccomp".into();
    e["params"]["profile_digest"] = digest.into();
    for d in e["derived"].as_array_mut().unwrap() {
        if d["id"] == "example.difference" {
            d["id"] = "seccomp.file.getpid.over_none".into();
        }
    }
    let path = dir.join("prices.json");
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    path
}

#[test]
fn a_profile_file_is_timed_as_its_own_cases() {
    let f = fixture();
    let e = common::tiny_run(&[
        "seccomp",
        "--sets",
        "none",
        "--calls",
        "getpid",
        "--profile",
        f.to_str().unwrap(),
    ]);
    let ids: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["seccomp.none.getpid", "seccomp.file.getpid"]);
    common::assert_every_check_passed(&e);
    let digest = oscost_measure::seccomp_file::digest(&std::fs::read(&f).unwrap());
    assert_eq!(e.params["profile_digest"], digest.as_str());
    assert_eq!(e.cases[1].params["profile_file"], "small.json");
    assert!(e
        .derived
        .iter()
        .any(|d| d.id == "seccomp.file.getpid.over_none"));
}

#[test]
fn a_command_runs_under_a_profile_file_and_a_bill_is_predicted_under_it() {
    if !common::is_root() {
        return common::skip("needs root for the kernel's counts");
    }
    let dir = tempfile::tempdir().unwrap();
    let f = fixture();
    let under = setting(&f);

    // Under the profile: `true` runs; `uname` is answered ENOSYS, as the file says, and fails.
    let json = dir.path().join("under.json");
    let (code, err) = bill(
        &["--under", &under, "--json", json.to_str().unwrap()],
        &["true"],
    );
    assert_eq!(code, Some(0), "{err}");
    let doc = common::read_doc(&json);
    assert_eq!(doc.bill.unwrap().under.as_deref(), Some(under.as_str()));
    let (code, err) = bill(&["--under", &under], &["uname"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("Function not implemented"), "{err}");

    // Plain bills predicted under it, with the price filed under the file's digest.
    let digest = oscost_measure::seccomp_file::digest(&std::fs::read(&f).unwrap());
    let prices = prices_for(dir.path(), &digest);
    let predict = |bill: &Path, profile: &str| {
        oscost()
            .args(["bill", "show"])
            .arg(bill)
            .args(["--predict-under", profile, "--prices"])
            .arg(&prices)
            .output()
            .unwrap()
    };
    let plain = dir.path().join("true.json");
    let (code, err) = bill(&["--json", plain.to_str().unwrap()], &["true"]);
    assert_eq!(code, Some(0), "{err}");
    let out = predict(&plain, &under);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(&format!("predicted under {under}")), "{text}");
    assert!(text.contains("seccomp.file.getpid.over_none"), "{text}");
    assert!(text.contains("added"), "{text}");

    let refused = dir.path().join("uname.json");
    let (code, err) = bill(&["--json", refused.to_str().unwrap()], &["uname"]);
    assert_eq!(code, Some(0), "{err}");
    let out = predict(&refused, &under);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("no prediction: the profile refuses calls this program made (uname ×1)"),
        "{text}"
    );
    assert!(!text.contains("added"), "{text}");

    // In rounds: the check is printed, whichever way it comes out.
    let out = oscost()
        .args(["bill", "--under", &under, "--rounds", "3", "--prices"])
        .arg(&prices)
        .args(["--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("checked under {under}: 3 rounds")),
        "{err}"
    );

    // Another content (one byte more) has no measured price: the line says what measures it.
    let other = dir.path().join("other.json");
    std::fs::write(&other, std::fs::read_to_string(&f).unwrap() + " ").unwrap();
    let out = predict(&plain, &setting(&other));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("`oscost seccomp --profile {}`", other.display())),
        "{err}"
    );
}

#[test]
fn bad_profile_files_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{}]}"#,
    )
    .unwrap();
    let bad_arg = bad.to_str().unwrap();
    assert_refused(
        oscost()
            .args(["bill", "--quiet", "--under", &setting(&bad), "--"])
            .arg("true"),
        "bad.json: not a profile in Docker's format: missing field `action`",
    );
    assert_args_refused(
        &["seccomp", "--profile", bad_arg],
        "bad.json: not a profile in Docker's format",
    );
    let none = dir.path().join("none.json");
    assert_args_refused(
        &["seccomp", "--profile", none.to_str().unwrap()],
        "none.json: cannot read it",
    );
    let args: Vec<String> = (0..70)
        .map(|i| format!(r#"{{"index": 0, "value": {i}, "op": "SCMP_CMP_NE"}}"#))
        .collect();
    let long = dir.path().join("long.json");
    std::fs::write(
        &long,
        format!(
            r#"{{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{{"names": ["getpid"],
              "action": "SCMP_ACT_ERRNO", "args": [{}]}}]}}"#,
            args.join(",")
        ),
    )
    .unwrap();
    assert_args_refused(
        &["seccomp", "--profile", long.to_str().unwrap()],
        "cannot be installed: the rule for getpid has too many argument comparisons",
    );
    assert_args_refused(
        &["bill", "--under", "seccomp=", "--", "true"],
        "names no profile",
    );
}
