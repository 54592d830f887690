use super::*;
use crate::context::testing;

fn opts(extra: &[&str]) -> Options {
    crate::engine::defaults(extra)
}

/// A context on the last allowed CPU: other tests of this crate pin their one-task cases
/// to the first, where a burst of forks would preempt them.
fn with_ctx<T>(f: impl FnOnce(&Context) -> T) -> T {
    let last = *oscost_sys::affinity().unwrap().last().unwrap();
    testing::with_ctx(testing::tiny_sampler(), vec![last], false, f)
}

#[test]
fn plans_follow_the_options() {
    let all = plan(&opts(&[]), false);
    assert_eq!(all.ops.len(), 5);
    assert_eq!(all.targets, [Target::Static, Target::Dynamic]);
    assert_eq!(all.sizes, DEFAULT_PARENT_MIB);
    assert_eq!(plan(&opts(&[]), true).sizes, QUICK_PARENT_MIB);
    let threads = plan(&opts(&["--ops", "thread", "--parent-mib", "8"]), false);
    assert!(threads.sizes.is_empty() && threads.targets.is_empty());
    let p = plan(
        &opts(&["--ops", "fork,fork,vfork", "--parent-mib", "2,1,2"]),
        false,
    );
    assert_eq!(p.ops, [Op::Fork, Op::Vfork]);
    assert_eq!(p.sizes, [2, 1]);
    assert!(p.targets.is_empty());
    // Mappings go with fork alone, and only when asked for with --quick.
    assert_eq!(all.mappings, DEFAULT_MAPPINGS);
    assert!(plan(&opts(&[]), true).mappings.is_empty());
    assert!(plan(&opts(&["--ops", "vfork", "--mappings", "10"]), false)
        .mappings
        .is_empty());
    assert_eq!(
        plan(&opts(&["--mappings", "10,5,10"]), true).mappings,
        [10, 5]
    );
}

#[test]
fn mapping_counts_are_checked_when_parsed() {
    assert_eq!(parse_mappings("6000"), Ok(6000));
    for bad in ["0", "-1", "x", "1048577"] {
        let e = parse_mappings(bad).unwrap_err();
        assert!(
            e.contains("is not a number of mappings from 1 to 1048576"),
            "{e}"
        );
    }
}

#[test]
fn sizes_are_checked_when_parsed() {
    assert_eq!(parse_mib("64"), Ok(64));
    for bad in ["0", "-1", "x", "1048577"] {
        let e = parse_mib(bad).unwrap_err();
        assert!(e.contains("is not a size in MiB from 1 to 1048576"), "{e}");
    }
}

#[test]
fn preflight_counts_tasks_and_an_explicit_size() {
    let n = needs(&opts(&["--ops", "fork"]), false);
    assert_eq!(n.tasks.as_ref().unwrap().0, 3);
    // The default sizes degrade to "not measured" instead.
    assert_eq!(n.memory_kib, None);
    assert_eq!(n.what, "spawn");
    let n = needs(&opts(&["--parent-mib", "1,4096"]), false);
    assert_eq!(n.tasks.as_ref().unwrap().0, 4);
    assert_eq!(
        n.memory_kib.as_ref().unwrap().0,
        4096 * 1024 + MEMORY_MARGIN_KIB
    );
    let limits = Limits {
        mem_available_kib: Some(1 << 20),
        ..Limits::default()
    };
    let e = limits.check(&n).unwrap_err().to_string();
    assert!(
        e.starts_with("spawn --parent-mib 4096 needs about 4.2 GiB of memory")
            && e.contains("MemAvailable is 1.0 GiB")
            && e.ends_with("or use a smaller --parent-mib"),
        "{e}"
    );
    let limits = Limits {
        nproc: Some((Some(3), Some(3))),
        nproc_enforced: true,
        user_tasks: Some(1),
        ..Limits::default()
    };
    let e = limits
        .check(&needs(&opts(&["--ops", "fork"]), false))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("spawn needs about 4 processes and threads of this user")
            && e.contains("RLIMIT_NPROC is 3 (hard 3)")
            && e.contains("ulimit -u"),
        "{e}"
    );
}

#[test]
fn elf_files_are_told_apart() {
    let true_bin = std::fs::read("/bin/true").unwrap();
    assert!(linking_of(&true_bin).starts_with("dynamic (interpreter /"));
    if let Ok(helper) = sys::static_helper() {
        assert_eq!(linking_of(helper), "static");
    }
    assert!(linking_of(b"#!/bin/sh\n").starts_with("unknown"));
    assert!(elf_interpreter(b"\x7fELF\x02\x01").is_none());
}

#[test]
fn the_helper_is_written_owner_only_and_runs() {
    let Ok(_) = sys::static_helper() else {
        return; // the toolchain could not build it: the run reports the reason
    };
    let dir = tempfile::tempdir().unwrap();
    let prog = write_helper(dir.path()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&prog.path).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o700, "{mode:o}");
    assert_eq!(prog.linking, "static");
    assert_eq!(probe(&prog).unwrap(), Ok(()));
    // A program that cannot run is a reason, not an error.
    let bad = Program {
        path: dir.path().join("missing"),
        bytes: 0,
        linking: String::new(),
    };
    let reason = probe(&bad).unwrap().unwrap_err();
    assert!(reason.contains("could not be started"), "{reason}");
}

#[test]
fn ids_and_descriptions_name_the_op_the_program_and_the_size() {
    assert_eq!(case_id(Op::Fork, None, Some(64)), "spawn.fork.p64mib");
    assert_eq!(
        case_id(Op::PosixSpawn, Some(Target::Static), Some(1)),
        "spawn.posix-spawn.static.p1mib"
    );
    assert_eq!(case_id(Op::Thread, None, None), "spawn.thread");
    assert_eq!(
        description(Op::ForkExec, Some(Target::Dynamic), Some(1)),
        "fork + execve of /bin/true in the child + waitpid; parent holds 1 MiB of touched \
             memory"
    );
    assert_eq!(
        description(Op::PosixSpawn, Some(Target::Static), None),
        "posix_spawn of the static helper + waitpid"
    );
}

#[test]
fn a_tiny_run_gives_every_case_with_its_counts() {
    with_ctx(|ctx| {
        let out = run(
            &opts(&[
                "--ops",
                "fork,vfork,thread",
                "--parent-mib",
                "1,2",
                "--mappings",
                "40",
            ]),
            ctx,
        )
        .unwrap();
        let ids: Vec<&str> = out.cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "spawn.fork.p1mib",
                "spawn.vfork.p1mib",
                "spawn.fork.p2mib",
                "spawn.vfork.p2mib",
                "spawn.fork.maps40",
                "spawn.thread"
            ]
        );
        for c in &out.cases {
            assert!(
                c.samples.per_op_ns.len() >= sampler::MIN_SAMPLES,
                "{}",
                c.id
            );
            assert!(c.samples.per_op_ns.iter().all(|&v| v > 0.0), "{}", c.id);
            let reaped = c
                .checks
                .iter()
                .find(|k| k.name == "children_reaped" || k.name == "threads_joined")
                .unwrap();
            assert!(reaped.passed, "{}: {reaped:?}", c.id);
            assert!(c.counters["creations"] >= c.samples.per_op_ns.len() as f64);
        }
        for c in &out.cases[..4] {
            assert!(c.counters["vm_pte_kib"] > 0.0, "{}", c.id);
        }
        let d: Vec<&str> = out.derived.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(
            d,
            [
                "spawn.fork.p2mib.over_p1mib",
                "spawn.fork.maps40.per_mapping"
            ]
        );
        let maps = &out.cases[4];
        assert_eq!(maps.params["mappings"], 40);
        assert_eq!(maps.params["base_parent_mib"], 1);
        assert!(maps.counters["map_count"] >= 40.0);
        let weights: Vec<f64> = out.derived[1].terms.iter().map(|t| t.1).collect();
        assert_eq!(weights, [1.0 / 40.0, -1.0 / 40.0]);
    });
}

#[test]
fn a_size_beyond_the_machine_is_refused() {
    with_ctx(|ctx| {
        let e = run(&opts(&["--ops", "fork", "--parent-mib", "1048576"]), ctx)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--parent-mib 1048576: more than this machine's memory"),
            "{e}"
        );
    });
}
