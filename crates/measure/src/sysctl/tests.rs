//! Records, holders and sweeps in temporary directories, with files standing in for the
//! settings; what needs tracefs or cgroups skips where it cannot run.

use super::*;
use crate::skip::skip;

fn setting(dir: &Path, value: &str) -> PathBuf {
    let p = dir.join("slice");
    fs::write(&p, format!("{value}\n")).unwrap();
    p
}

/// A holder no live process matches: a start time this process does not have.
fn dead() -> Holder {
    let me = Holder::this_process().unwrap();
    Holder {
        pid: me.pid,
        start: me.start + 1,
    }
}

#[test]
fn a_mount_record_goes_with_its_holder_and_a_dead_ones_with_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("s");
    let point = Path::new("/nonexistent/oscost-test");
    let me = Holder::this_process().unwrap();
    let r = record_mount(&d, point, "tracefs", me).unwrap();
    let file = d.join("nonexistent.oscost-test.mount");
    assert!(file.exists());
    // A live holder's mount is not touched.
    assert!(sweep(&d).is_empty());
    drop(r);
    assert!(!file.exists());
    // A killed holder's record of a mount that is gone is removed without a word.
    drop(record_mount(&d, point, "tracefs", dead()).map(std::mem::forget));
    assert!(file.exists());
    assert!(sweep(&d).is_empty());
    assert!(!file.exists());
}

/// A killed run's ftrace instance is removed by the sweep (where one can be made here).
#[test]
fn a_dead_runs_ftrace_instance_is_swept() {
    let fs = match oscost_sys::ktrace::Tracefs::open() {
        Ok(fs) => fs,
        Err(e) => return skip(&format!("needs tracefs: {e}")),
    };
    let inst = fs.root().join("instances").join("oscost-sweep-test");
    if std::fs::create_dir(&inst).is_err() {
        return skip("needs an ftrace instance, which cannot be made here");
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("s");
    drop(record_mount(&d, &inst, FTRACE_INSTANCE, dead()).map(std::mem::forget));
    let swept = sweep(&d);
    assert_eq!(swept.len(), 1, "{swept:?}");
    assert!(swept[0].error.is_none(), "{swept:?}");
    assert!(swept[0]
        .summary()
        .starts_with("removed the ftrace instance"));
    assert!(!inst.exists());
    assert!(sweep(&d).is_empty());
}

#[test]
fn a_killed_runs_cgroup_is_removed_by_the_sweep_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("s");
    // A plain directory stands in for the cgroup: rmdir removes both alike.
    let cg = dir.path().join("oscost-1-a");
    let me = Holder::this_process().unwrap();
    let r = record_cgroup(&d, &cg, me).unwrap();
    fs::create_dir(&cg).unwrap();
    assert!(
        sweep_in(&d, false).is_empty(),
        "a live holder's cgroup is kept"
    );
    assert!(cg.exists());
    drop(r);
    drop(record_cgroup(&d, &cg, dead()).map(std::mem::forget));
    let swept = sweep_in(&d, false);
    assert_eq!(swept.len(), 1);
    assert!(swept[0].cgroup && swept[0].error.is_none());
    assert!(
        swept[0].summary().starts_with("removed the cgroup"),
        "{}",
        swept[0].summary()
    );
    assert!(!cg.exists());
    assert!(
        sweep_in(&d, false).is_empty(),
        "the record went with the directory"
    );
    // The real sweep touches only oscost's own cgroups under /sys/fs/cgroup.
    let other = dir.path().join("not-ours");
    fs::create_dir(&other).unwrap();
    drop(record_cgroup(&d, &other, dead()).map(std::mem::forget));
    let swept = sweep(&d);
    assert!(swept[0].error.is_some());
    assert!(other.exists());
}

#[test]
fn records_round_trip() {
    let r = Record {
        path: "/proc/sys/kernel/x".into(),
        original: "100".into(),
        holders: vec![Holder { pid: 7, start: 9 }],
    };
    assert_eq!(Record::parse(&r.to_text()), Some(r));
    assert_eq!(Record::parse("garbage\n"), None);
    assert_eq!(
        record_file(Path::new("/run/oscost"), Path::new(RR_TIMESLICE)),
        Path::new("/run/oscost/kernel.sched_rr_timeslice_ms.setting")
    );
}

#[test]
fn the_holder_puts_it_back_and_leaves_no_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state");
    let s = setting(tmp.path(), "100");
    let me = Holder::this_process().unwrap();
    let t = take(&dir, &s, "1", me).unwrap();
    assert_eq!(t.original, "100");
    assert_eq!(read_trim(&s).unwrap(), "1");
    assert!(record_file(&dir, &s).exists());
    assert_eq!(give_back(&dir, &s, me).unwrap().as_deref(), Some("100"));
    assert_eq!(read_trim(&s).unwrap(), "100");
    assert!(!record_file(&dir, &s).exists());
}

/// A holder killed before it put the setting back: the next sweep does, once.
#[test]
fn a_killed_holders_change_is_put_back_by_the_next_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state");
    let s = setting(tmp.path(), "100");
    take(&dir, &s, "1", dead()).unwrap();
    assert_eq!(read_trim(&s).unwrap(), "1");
    let swept = sweep_in(&dir, false);
    assert_eq!(swept.len(), 1);
    assert_eq!(swept[0].original, "100");
    assert_eq!(swept[0].error, None);
    assert_eq!(read_trim(&s).unwrap(), "100");
    assert!(sweep_in(&dir, false).is_empty());
    // A record naming a file outside /proc/sys is never written by the real sweep.
    take(&dir, &s, "1", dead()).unwrap();
    let swept = sweep(&dir);
    assert!(swept[0].error.is_some());
    assert_eq!(read_trim(&s).unwrap(), "1");
}

/// Two overlapping runs: the second never takes the first's value as the one before,
/// the first to end leaves it changed for the other, the last puts back the first value.
#[test]
fn overlapping_holders_end_at_the_first_value() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state");
    let s = setting(tmp.path(), "100");
    let mut other = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let b = Holder {
        pid: other.id(),
        start: start_time(other.id()).unwrap(),
    };
    let me = Holder::this_process().unwrap();
    take(&dir, &s, "5", me).unwrap();
    let t = take(&dir, &s, "1", b).unwrap();
    assert_eq!(t.original, "100");
    assert_eq!(t.others, vec![me.pid]);
    assert_eq!(give_back(&dir, &s, me).unwrap(), None);
    assert_eq!(read_trim(&s).unwrap(), "1");
    // The other is still alive: a sweep leaves it alone.
    assert!(sweep_in(&dir, false).is_empty());
    assert_eq!(read_trim(&s).unwrap(), "1");
    // It is killed: the setting goes back to the first value.
    other.kill().unwrap();
    other.wait().unwrap();
    let swept = sweep_in(&dir, false);
    assert_eq!(swept[0].dead, vec![b.pid]);
    assert_eq!(read_trim(&s).unwrap(), "100");
}

/// A run that starts after a killed one takes the killed run's value before, not the
/// value the killed run left.
#[test]
fn taking_after_a_killed_holder_keeps_the_real_value_before() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state");
    let s = setting(tmp.path(), "100");
    take(&dir, &s, "5", dead()).unwrap();
    let me = Holder::this_process().unwrap();
    let t = take(&dir, &s, "1", me).unwrap();
    assert_eq!(t.original, "100");
    assert!(t.put_back);
    assert!(t.others.is_empty());
    give_back(&dir, &s, me).unwrap();
    assert_eq!(read_trim(&s).unwrap(), "100");
}

#[test]
fn a_directory_others_may_write_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
    let s = setting(tmp.path(), "100");
    assert!(take(&dir, &s, "1", Holder::this_process().unwrap()).is_err());
    assert_eq!(read_trim(&s).unwrap(), "100");
}
