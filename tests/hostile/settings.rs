//! System settings and kernel state a run changes or depends on: the round-robin slice a
//! killed run left changed, tracing a killed run left behind, descriptors and address space
//! running out, io_uring disabled, no loopback interface. Most need root.

use std::path::Path;
use std::process::Command;

use crate::common;
use crate::runner::{case, kill, measuring_of, wait_for, Case};

/// The round-robin slice, which some cases change through oscost.
const RR: &str = "/proc/sys/kernel/sched_rr_timeslice_ms";

fn rr() -> String {
    std::fs::read_to_string(RR).unwrap().trim().to_owned()
}

/// Puts the round-robin slice back however the case ends (oscost should have: the case
/// checks that; this only leaves the machine as it was found).
struct RrGuard(String);

impl RrGuard {
    fn new() -> RrGuard {
        RrGuard(rr())
    }
}

impl Drop for RrGuard {
    fn drop(&mut self) {
        if rr() != self.0 {
            let _ = std::fs::write(RR, &self.0);
        }
    }
}

/// The first online CPU.
fn first_cpu() -> String {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    online.trim().split([',', '-']).next().unwrap().to_owned()
}

/// `tick` with round-robin slices 1 and 10 ms.
fn rr_tick() -> Vec<String> {
    let cpu = first_cpu();
    [
        "--cpus",
        &cpu,
        "tick",
        "--rr-slices",
        "1,10",
        "--source",
        "signal",
        "--periods",
        "20ms",
        "--runs",
        "3",
    ]
    .map(String::from)
    .to_vec()
}

/// `timeline` under round-robin with a slice of `ms`, long enough to overlap another.
fn rr_timeline(ms: &str) -> Vec<String> {
    let args = [
        "timeline",
        "--policy",
        "rr",
        "--rr-slice-ms",
        ms,
        "--workers",
        "2",
        "--chunks",
        "20000",
        "--chunk-us",
        "100",
        "--rounds",
        "1",
    ];
    args.map(String::from).to_vec()
}

/// A run killed with SIGKILL while the slice reads `want`; then `next` (oscost's arguments):
/// it puts the slice back, and says so.
fn rr_kill9(want: &str, args: Vec<String>, next: &[&str]) {
    if !common::is_root() {
        return common::skip("needs root: changing the round-robin slice");
    }
    case(true, |c| {
        let _guard = RrGuard::new();
        let before = rr();
        let mut all = vec!["-q".to_owned()];
        all.extend(args);
        let bg = c.spawn_osc(&all);
        assert!(
            wait_for(30, || rr() == want),
            "the slice never read {want} in 30 s"
        );
        kill("KILL", bg.pid());
        let out = bg.collect();
        assert_eq!(out.rc, 137, "expected killed: {}", out.err);
        assert!(
            wait_for(5, || c.processes().is_empty()),
            "processes of the killed run still running 5 s later"
        );
        let out = c.osc(next);
        out.rc(0);
        assert_eq!(
            rr(),
            before,
            "after `oscost {}` the slice is not back",
            next.join(" ")
        );
        let said = format!("put {RR} back to {before}");
        assert!(
            out.err.contains(&said),
            "`oscost {}` did not say it put the slice back: {}",
            next.join(" "),
            out.err
        );
    });
}

/// The run after the killed one.
const NEXT_RUN: &[&str] = &["--scripted", "--quiet", "--no-save", "example"];

#[test]
#[ignore = "needs root: changes the round-robin slice"]
fn rr_slice_tick_kill9_next_run() {
    rr_kill9("1", rr_tick(), NEXT_RUN);
}

#[test]
#[ignore = "needs root: changes the round-robin slice"]
fn rr_slice_timeline_kill9_next_run() {
    rr_kill9("5", rr_timeline("5"), NEXT_RUN);
}

#[test]
#[ignore = "needs root: changes the round-robin slice"]
fn rr_slice_tick_kill9_then_syscall() {
    rr_kill9(
        "1",
        rr_tick(),
        &[
            "--no-save",
            "syscall",
            "--quick",
            "--samples",
            "5",
            "--calls",
            "getpid",
            "-q",
        ],
    );
}

#[test]
#[ignore = "needs root: changes the round-robin slice"]
fn rr_slice_tick_kill9_then_list() {
    rr_kill9("1", rr_tick(), &["list"]);
}

#[test]
#[ignore = "needs root: changes the round-robin slice"]
fn rr_slice_tick_kill9_then_history_list() {
    rr_kill9("1", rr_tick(), &["history", "list"]);
}

#[test]
#[ignore = "needs root: changes the round-robin slice"]
fn rr_slice_tick_kill9_then_baselines() {
    rr_kill9("1", rr_tick(), &["baselines"]);
}

/// Two overlapping runs changing the slice: it ends at its value before the first, and the
/// second warns of the first.
#[test]
#[ignore = "needs root: changes the round-robin slice"]
fn rr_slice_two_runs_overlapping() {
    if !common::is_root() {
        return common::skip("needs root: changing the round-robin slice");
    }
    case(true, |c| {
        let _guard = RrGuard::new();
        let before = rr();
        let with_json = |ms: &str, json: &str| {
            let mut a = vec!["-q".to_owned()];
            a.extend(rr_timeline(ms));
            a.extend(["--json".to_owned(), json.to_owned()]);
            a
        };
        let a = c.spawn_osc(&with_json("5", "a.json"));
        assert!(
            wait_for(30, || rr() == "5"),
            "the first run never set the slice to 5"
        );
        let b = c.spawn_osc(&with_json("7", "b.json"));
        assert!(
            wait_for(30, || rr() == "7"),
            "the second run never set the slice to 7"
        );
        let oa = a.collect();
        assert_eq!(oa.rc, 0, "first run: {}", oa.err);
        let ob = b.collect();
        assert_eq!(ob.rc, 0, "second run: {}", ob.err);
        assert_eq!(rr(), before, "the slice did not end where it was");
        let text = std::fs::read_to_string(c.at("b.json")).unwrap();
        let re = format!(r"another oscost process \(pid [0-9]+\) has {RR} changed too");
        assert!(
            crate::runner::matches(&re, &text),
            "b.json does not warn that the first run had the slice changed"
        );
    });
}

/// The BPF programs loaded now whose name says they are oscost's (`osc_`), one name a line:
/// listed through bpf(2) by Python's ctypes, which needs no tool of its own.
fn oscost_bpf_progs() -> String {
    const LIST: &str = r#"
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(321, cmd, buf, 128)  # __NR_bpf on x86-64
    return r, buf.raw
next_id = 0
while True:
    r, out = bpf(11, struct.pack("I", next_id))  # BPF_PROG_GET_NEXT_ID
    if r < 0:
        break
    next_id = struct.unpack_from("I", out, 4)[0]
    fd, _ = bpf(13, struct.pack("I", next_id))  # BPF_PROG_GET_FD_BY_ID
    if fd < 0:
        continue
    info = ctypes.create_string_buffer(232)
    attr = struct.pack("IIQ", fd, 232, ctypes.addressof(info))
    if bpf(15, attr)[0] == 0:  # BPF_OBJ_GET_INFO_BY_FD
        name = info.raw[64:80].split(b"\0")[0].decode()
        if name.startswith("osc_"):
            print(name)
    os.close(fd)
"#;
    let out = Command::new("python3")
        .args(["-c", LIST])
        .output()
        .expect("python3 must be installed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Where tracefs is mounted in this namespace.
fn tracefs_mounts() -> Vec<String> {
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<_> = l.split_whitespace().collect();
            (f.get(2) == Some(&"tracefs")).then(|| f[1].to_owned())
        })
        .collect()
}

/// oscost's ftrace instances under the tracefs mounts here.
fn ftrace_instances() -> Vec<String> {
    tracefs_mounts()
        .iter()
        .flat_map(|m| {
            std::fs::read_dir(Path::new(m).join("instances"))
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("oscost-"))
        .collect()
}

/// Every instance of oscost's the kernel holds, mounted or not (an instance outlives the
/// tracefs mount it was made under): looked at through a mount of a namespace of its own.
fn all_ftrace_instances() -> Vec<String> {
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c", "mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && ls /sys/kernel/tracing/instances"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("oscost-"))
        .map(str::to_owned)
        .collect()
}

/// SIGKILL mid traced pass (`mech`: bpf or ftrace): the run's programs go with it; the next
/// oscost command of any kind removes the ftrace instance and unmounts the tracefs the kill
/// left, and says so; nothing is left after it.
fn trace_kill9(mech: &str) {
    if !common::is_root() {
        return common::skip("needs root: the kernel's view");
    }
    case(true, |c| {
        let mounted_before = tracefs_mounts();
        assert_eq!(
            oscost_bpf_progs(),
            "",
            "oscost's BPF programs were loaded before the case"
        );
        let cpu = first_cpu();
        let bg = c.spawn_osc(&[
            "-q",
            "--no-save",
            "--cpus",
            &cpu,
            "noise",
            "--duration",
            "3s",
            "--trace-with",
            mech,
        ]);
        if mech == "bpf" {
            assert!(
                wait_for(30, || !oscost_bpf_progs().is_empty()),
                "no BPF program of oscost's was ever loaded"
            );
        } else {
            assert!(
                wait_for(30, || !ftrace_instances().is_empty()),
                "no ftrace instance of oscost's was ever made"
            );
        }
        let pid = bg.pid();
        let m = measuring_of(pid);
        if let Some(m) = m {
            kill("KILL", m);
        }
        kill("KILL", pid);
        bg.collect();
        assert!(
            wait_for(5, || c.processes().is_empty()),
            "processes of the killed run still running 5 s later"
        );
        assert!(
            wait_for(5, || oscost_bpf_progs().is_empty()),
            "BPF programs left after the kill: {}",
            oscost_bpf_progs()
        );
        // What the kill left depends on where in its pass the run was (an instance or a mount
        // can come and go within it): the next run must remove and name whatever it left.
        let killed: Vec<String> = [Some(pid), m]
            .into_iter()
            .flatten()
            .map(|p| format!("oscost-{p}"))
            .collect();
        let of_killed = || -> Vec<String> {
            all_ftrace_instances()
                .into_iter()
                .filter(|i| killed.contains(i))
                .collect()
        };
        let instance_left = !of_killed().is_empty();
        let mount_left = tracefs_mounts() != mounted_before;
        let out = c.osc(&["list"]);
        out.rc(0);
        assert!(
            of_killed().is_empty(),
            "the killed run's ftrace instance is left after the next run: {:?}",
            of_killed()
        );
        assert_eq!(tracefs_mounts(), mounted_before, "tracefs mounts changed");
        if instance_left {
            assert!(
                out.err.contains("removed the ftrace instance"),
                "the next run did not say it removed the instance: {}",
                out.err
            );
        }
        if mount_left && mounted_before.is_empty() {
            assert!(
                out.err.contains("unmounted the tracefs"),
                "the next run did not say it unmounted tracefs: {}",
                out.err
            );
        }
    });
}

#[test]
#[ignore = "needs root: kernel tracing"]
fn trace_kill9_bpf() {
    trace_kill9("bpf");
}

#[test]
#[ignore = "needs root: kernel tracing"]
fn trace_kill9_ftrace() {
    trace_kill9("ftrace");
}

/// Tracepoints refused for want of descriptors: named as such with the fix, never taken for
/// tracepoints the kernel lacks.
#[test]
#[ignore = "needs root: kernel tracing"]
fn trace_out_of_fds_noise() {
    trace_out_of_fds(24, Some(first_cpu()));
}

/// Enough descriptors to load BPF's programs, too few to attach them all (issue 51's
/// `prlimit --nofile=40 oscost noise --quick`, every CPU): found when the tracer is opened,
/// and another mechanism records, never the run lost when recording starts.
#[test]
#[ignore = "needs root: kernel tracing"]
fn trace_out_of_fds_at_attach_noise() {
    trace_out_of_fds(40, None);
}

fn trace_out_of_fds(nofile: u32, cpus: Option<String>) {
    if !common::is_root() {
        return common::skip("needs root: the kernel's view");
    }
    case(true, |c| {
        let mut cmd = c.wrapped(&["prlimit", &format!("--nofile={nofile}")]);
        cmd.args(["--no-save", "noise", "--quick"]);
        if let Some(cpus) = &cpus {
            cmd.args(["--cpus", cpus]);
        }
        let out = c.run(&mut cmd);
        out.rc(0);
        assert!(
            out.either_matches("for want of file descriptors.*raise the open-file limit"),
            "the refusal does not name the open-file limit: {}",
            out.err
        );
        assert!(
            !out.either_matches("lacks.*refused"),
            "a tracepoint refused for want of descriptors is listed as lacking"
        );
    });
}

/// `wakeup --trace-with bpf`, whose pass reads tracepoints BPF's programs cannot record:
/// says so, and which mechanism recorded instead, never another one without a word.
#[test]
#[ignore = "needs root: kernel tracing"]
fn trace_with_bpf_wakeup() {
    if !common::is_root() {
        return common::skip("needs root: the kernel's view");
    }
    case(true, |c| {
        let mut cmd = c.oscost();
        cmd.args(["--no-save", "wakeup", "--quick", "--trace-with", "bpf"]);
        let out = c.run(&mut cmd);
        out.rc(0);
        // The note as one line, however the terminal's width wrapped it.
        let all = format!("{}\n{}", out.stdout(), out.err);
        let text = all.split_whitespace().collect::<Vec<_>>().join(" ");
        let traced_with_bpf = text.contains("traced (bpf)");
        assert!(
            traced_with_bpf
                || crate::runner::matches(
                    r"recorded by (an ftrace|perf)[^:]*, not by BPF[^:]*: oscost's BPF programs (cannot|do not) record",
                    &text
                ),
            "BPF passed over without a word: {text}"
        );
    });
}

/// Puts io_uring_disabled back however the case ends.
struct UringGuard(String);

/// The setting of io_uring.
const URING: &str = "/proc/sys/kernel/io_uring_disabled";

impl Drop for UringGuard {
    fn drop(&mut self) {
        let _ = std::fs::write(URING, &self.0);
    }
}

/// io_uring disabled: every uring case not measured, one line naming the setting and the fix,
/// exit 0, and the other experiment of the run still measured.
#[test]
#[ignore = "needs root: sets /proc/sys/kernel/io_uring_disabled"]
fn uring_io_uring_disabled() {
    let Ok(old) = std::fs::read_to_string(URING) else {
        return common::skip("needs /proc/sys/kernel/io_uring_disabled (Linux 6.6 or later)");
    };
    if !common::is_root() {
        return common::skip("needs root: setting io_uring_disabled");
    }
    case(true, |c| {
        let guard = UringGuard(old.trim().to_owned());
        std::fs::write(URING, "2").expect("cannot set io_uring_disabled to 2");
        let out = c.osc(&[
            "--no-save",
            "run",
            "uring",
            "syscall",
            "--quick",
            "--json",
            "r.json",
        ]);
        drop(guard);
        assert_eq!(
            std::fs::read_to_string(URING).unwrap().trim(),
            old.trim(),
            "not put back"
        );
        out.rc(0);
        assert!(
            out.either_matches(r"uring\.\*: io_uring is disabled here \(/proc/sys/kernel/io_uring_disabled is 2\): set it to 0"),
            "the uring cases do not say io_uring is disabled and how to enable it: {}",
            out.err
        );
        assert_eq!(
            cases_of(c, "uring"),
            0,
            "a uring case was measured with io_uring disabled"
        );
        assert!(
            cases_of(c, "syscall") > 0,
            "syscall was not measured beside the disabled io_uring"
        );
    });
}

/// The cases of experiment `name` in the case's r.json.
fn cases_of(c: &Case, name: &str) -> usize {
    let d: serde_json::Value =
        serde_json::from_slice(&std::fs::read(c.at("r.json")).unwrap()).unwrap();
    d["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == name)
        .map(|e| e["cases"].as_array().map_or(0, Vec::len))
        .sum()
}

/// No loopback interface (a network namespace of its own, `lo` left down): the TCP and UDP
/// cases not measured, each saying so and how to bring `lo` up; AF_UNIX and the pipe still
/// measured; exit 0.
#[test]
fn net_no_loopback() {
    if !Command::new("unshare")
        .args(["-n", "true"])
        .status()
        .is_ok_and(|s| s.success())
    {
        return common::skip("cannot make a network namespace (unshare -n)");
    }
    case(true, |c| {
        let mut cmd = c.wrapped(&["unshare", "-n"]);
        cmd.args([
            "--no-save",
            "net",
            "--quick",
            "--cases",
            "tcp.rtt,udp.rtt,unix.rtt,pipe.bw",
            "--json",
            "r.json",
        ]);
        let out = c.run(&mut cmd);
        out.rc(0);
        assert!(
            out.either_matches("no loopback interface.*ip link set lo up"),
            "the TCP and UDP cases do not say there is no loopback interface and how to bring it up: {}",
            out.err
        );
        let d: serde_json::Value =
            serde_json::from_slice(&std::fs::read(c.at("r.json")).unwrap()).unwrap();
        let ids: Vec<String> = d["experiments"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|e| {
                e["cases"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x["id"].as_str().unwrap().to_owned())
            })
            .collect();
        let has = |p: &str| ids.iter().any(|i| i.contains(p));
        assert!(
            has("net.unix.rtt.same") && has("net.pipe.bw.same"),
            "AF_UNIX and pipe cases not measured: {ids:?}"
        );
        assert!(
            !has("net.tcp.") && !has("net.udp."),
            "a TCP or UDP case was measured: {ids:?}"
        );
    });
}

/// Threads that run out of address space (prlimit --as) are never blamed on the process
/// limit: the one line of the run's failure (before it starts, or mid-run should the estimate
/// fall short) names RLIMIT_AS or prlimit --as.
#[test]
fn as_300mb_split_4096_threads() {
    case(true, |c| {
        let mut cmd = c.wrapped(&["prlimit", "--as=300000000"]);
        cmd.args([
            "--no-save",
            "split",
            "--quick",
            "--form",
            "threads",
            "--tasks",
            "4096",
        ]);
        let out = c.run(&mut cmd);
        out.rc(2);
        assert!(
            !out.err.contains("RLIMIT_NPROC"),
            "the address-space limit is blamed on RLIMIT_NPROC: {}",
            out.err
        );
        out.err_matches("RLIMIT_AS|prlimit --as");
    });
}
