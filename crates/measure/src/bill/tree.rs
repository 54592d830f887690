//! An attached process's descendants already running, found in `/proc` and given to the
//! probe: it follows the processes made once it is attached by itself, the older ones only
//! when told.

use oscost_sys::bill::Probe;
use std::collections::BTreeSet;
use std::fs;
use std::io;

/// The children of process `pid`: those of each of its threads (`/proc/PID/task/TID/children`).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Calls `visit` on each descendant of process `pid`, a process before its children are
/// looked for: a process followed by `visit` and then making a child has it followed by the
/// probe; one made before is in the list read after.
fn walk(pid: u32, mut visit: impl FnMut(u32)) {
    let mut seen = BTreeSet::from([pid]);
    let mut todo = children(pid);
    while let Some(c) = todo.pop() {
        if !seen.insert(c) {
            continue;
        }
        visit(c);
        todo.extend(children(c));
    }
}

/// Gives the probe (attached) the descendants of process `pid` already running: the ids it
/// follows now, and the first error.
pub(super) fn follow_descendants(p: &Probe, pid: u32) -> (Vec<u32>, Option<io::Error>) {
    let mut followed = Vec::new();
    let mut error = None;
    walk(pid, |c| match p.follow(c) {
        Ok(true) => followed.push(c),
        Ok(false) => {}
        Err(e) => {
            error.get_or_insert(e);
        }
    });
    (followed, error)
}

/// The descendants of process `pid` running now.
pub(super) fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    walk(pid, |c| out.push(c));
    out
}

/// The thread ids of process `pid`.
pub(super) fn threads(pid: u32) -> Vec<i32> {
    fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child of this process and the grandchild it started are both found.
    #[test]
    fn the_walk_finds_children_and_grandchildren() {
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 2 & sleep 2; wait"])
            .spawn()
            .expect("sh");
        let me = std::process::id();
        for _ in 0..200 {
            if children(sh.id()).len() == 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let grandchildren = children(sh.id());
        let mut found = Vec::new();
        walk(me, |c| found.push(c));
        let _ = sh.kill();
        let _ = sh.wait();
        assert!(found.contains(&sh.id()), "{found:?}");
        assert_eq!(grandchildren.len(), 2, "{grandchildren:?}");
        for g in grandchildren {
            assert!(found.contains(&g), "{g} not in {found:?}");
        }
        assert!(!found.contains(&me));
    }
}
