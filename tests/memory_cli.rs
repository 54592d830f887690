//! `oscost fault`, `mmap` and `shootdown` as a user drives them: tiny runs whose every check
//! passes in oscost's single-threaded measuring process, bad input refused, and a memory limit
//! hit mid-run. No timing assertions: only what the kernel counted and what the command did.

mod common;
use common::{assert_args_refused, assert_every_check_passed, run_limited, tiny_run};

/// Runs `oscost --quick --quiet --samples 5 ARGS --json FILE` and returns the experiment's
/// result, with every case's checks passed.
fn tiny(args: &[&str]) -> oscost_model::ExperimentResult {
    let e = tiny_run(args);
    assert_every_check_passed(&e);
    for c in &e.cases {
        assert!(c.median_ns.is_finite(), "{}", c.id);
    }
    e
}

#[test]
fn fault_counts_one_fault_a_page_and_fault_around_for_a_cached_file() {
    let e = tiny(&[
        "fault",
        "--kinds",
        "anon-write,anon-read,cow,file-read",
        "--pages",
        "64",
    ]);
    let ids: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids[..4],
        [
            "fault.anon-write",
            "fault.anon-read",
            "fault.cow",
            "fault.file-read"
        ]
    );
    // The cached file again on /dev/shm, or said why not (the directory is a tmpfs already).
    let tmpfs = ids
        .get(4)
        .copied()
        .or(e.unavailable.first().map(|u| u.id.as_str()));
    assert_eq!(tmpfs, Some("fault.file-read.tmpfs"));
    for c in &e.cases[..3] {
        let f = c.counters["minor_faults_per_op"];
        assert!((0.95..=1.05).contains(&f), "{}: {f}", c.id);
        assert!(c.median_ns > 0.0, "{}", c.id);
    }
    // Fault-around maps the cached pages around the one touched: fewer faults than pages.
    assert!(e.cases[3].counters["minor_faults_per_op"] < 0.5);
    let d: Vec<&str> = e.derived.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(d[0], "fault.file-read.per_fault");
}

/// Drawn from two processes: each one's median kept, their samples joined, the checks
/// passed; with too few samples for two, from one.
#[test]
fn fault_draws_its_samples_from_several_processes() {
    let run = |samples: &str| {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        common::oscost()
            .env("TMPDIR", dir.path())
            .args(["--quick", "--quiet", "--samples", samples, "fault"])
            .args([
                "--kinds",
                "anon-write",
                "--pages",
                "16",
                "--processes",
                "2",
                "--json",
            ])
            .arg(&json)
            .assert()
            .success();
        common::read_doc(&json).experiments.remove(0)
    };
    let e = run("16");
    assert_every_check_passed(&e);
    let c = &e.cases[0];
    assert_eq!(c.process_medians_ns.len(), 2, "{:?}", c.process_medians_ns);
    assert_eq!(c.samples, 16);
    assert!(c.process_medians_ns.iter().all(|m| *m > 0.0));
    let one = run("10");
    assert!(one.cases[0].process_medians_ns.is_empty());
    assert_args_refused(&["fault", "--processes", "0"], "--processes");
}

#[test]
fn mmap_maps_unmaps_and_reads_what_it_says() {
    let e = tiny(&["mmap", "--pages", "1,16"]);
    assert_eq!(e.cases.len(), 10);
    let grew = e
        .cases
        .iter()
        .find(|c| c.id == "mmap.mmap.p16")
        .unwrap()
        .counters["address_space_kib_mapped_per_call"];
    assert_eq!(grew, 64.0);
}

#[test]
fn shootdown_alone_drops_each_page() {
    let e = tiny(&["shootdown", "--others", "0"]);
    let ids: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "shootdown.madvise.others0",
            "shootdown.munmap.others0",
            "shootdown.mprotect.others0"
        ]
    );
    assert!(e.cases.iter().all(|c| c
        .checks
        .iter()
        .any(|k| k.name == oscost_model::case::SINGLE_THREAD_CHECK)));
}

#[test]
fn bad_sizes_are_refused_with_one_line() {
    assert_args_refused(&["fault", "--pages", "0"], "at least one page");
    assert_args_refused(&["fault", "--pages", "99999999"], "at most");
    assert_args_refused(&["mmap", "--pages", "1,0"], "at least one page");
    assert_args_refused(&["shootdown", "--others", "99"], "--others 99");
}

#[test]
fn an_address_space_limit_hit_mid_run_ends_it_with_one_line() {
    // 400 MB of address space; a sample of 200 000 pages maps about 800 MB.
    let (code, err, written) = run_limited(
        "--as=400000000",
        false,
        &[
            "--quiet",
            "fault",
            "--kinds",
            "anon-write",
            "--pages",
            "200000",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("warning: "))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("--pages") && lines[0].contains("mmap"),
        "{err}"
    );
    assert!(!written, "{err}");
}
