//! Ending and reaping: this process as the reaper of its orphans, and signals to a worker.

use crate::last_error;
use std::io;
use std::time::{Duration, Instant};

/// Makes this process the reaper of its orphaned descendants: a worker whose measuring
/// process was killed is reparented here instead of to init, so [`reap_orphans`] can wait
/// for it and nothing is left behind.
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) takes plain integers.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } == 0 {
        Ok(())
    } else {
        Err(last_error("prctl(PR_SET_CHILD_SUBREAPER)"))
    }
}

/// Reaps every child of this process that has ended, waiting up to `patience` for the rest
/// (killed workers end within moments of their parent's death). Returns how many are left.
/// Call it only when no child is expected to be running.
pub fn reap_orphans(patience: Duration) -> usize {
    let deadline = Instant::now() + patience;
    loop {
        let mut st = 0;
        // SAFETY: st is writable; -1 waits for any child of this process.
        let r = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
        if r > 0 {
            continue;
        }
        if r < 0 {
            return 0; // ECHILD: none left
        }
        if Instant::now() >= deadline {
            return 1;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Every living descendant of process `root` (children, their children, ...), found through
/// `/proc`'s parent links; deepest last. A helper a measuring process started (the FUSE
/// server) is one: the coordinator can end it even while the measuring process cannot die.
pub fn descendants(root: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let links: Vec<(u32, u32)> = dir
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            Some((pid, parent_in_stat(&stat)?))
        })
        .collect();
    descendants_in(&links, root)
}

/// The parent pid (field 4) of a `/proc/PID/stat` text.
fn parent_in_stat(stat: &str) -> Option<u32> {
    // The command name (field 2) may hold spaces and parentheses: count after the last `)`.
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The descendants of `root` among `(pid, parent)` links, breadth first.
fn descendants_in(links: &[(u32, u32)], root: u32) -> Vec<u32> {
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        for &(pid, p) in links {
            if p == parent && pid != root && !found.contains(&pid) {
                found.push(pid);
            }
        }
        i += 1;
    }
    found.remove(0);
    found
}

/// Sends signal `sig` to process `pid` (tests use it to kill one worker of a running team).
pub fn send_signal(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: plain integers; kill has no memory effects on this process.
    if unsafe { libc::kill(pid, sig) } == 0 {
        Ok(())
    } else {
        Err(last_error("kill"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descendants_follow_parent_links_down_only() {
        let links = [(2, 1), (3, 2), (4, 3), (5, 1), (6, 9), (1, 0)];
        assert_eq!(descendants_in(&links, 2), vec![3, 4]);
        assert_eq!(descendants_in(&links, 1), vec![2, 5, 3, 4]);
        assert!(descendants_in(&links, 4).is_empty());
        assert_eq!(
            parent_in_stat("42 (a) b (c)) S 7 42 42 0"),
            Some(7),
            "a name with parentheses"
        );
    }

    #[test]
    fn a_grandchild_is_found() {
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let me = std::process::id();
        let deadline = Instant::now() + Duration::from_secs(10);
        // Only the shell's own subtree is killed: other tests of this process have children
        // of their own.
        let (found, under_sh) = loop {
            // The shell's first: whatever it found exists when the whole tree is read.
            let u = descendants(sh.id());
            let d = descendants(me);
            if !u.is_empty() || Instant::now() >= deadline {
                break (d, u);
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        for &p in under_sh.iter().rev() {
            let _ = send_signal(p as i32, libc::SIGKILL);
        }
        let _ = sh.kill();
        sh.wait().unwrap();
        assert!(found.contains(&sh.id()), "{found:?}");
        assert!(!under_sh.is_empty(), "the sleep under the shell");
        assert!(
            under_sh.iter().all(|p| found.contains(p)),
            "{under_sh:?} in {found:?}"
        );
    }
}
