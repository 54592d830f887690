//! What an entry needs made before its rounds and taken down after, however they end: the
//! mounts `fs` measures on.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{bail, Context as _};

/// Something made for an entry's whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// Nothing.
    Nothing,
    /// A 16 MiB tmpfs at `{tmp}/tmpfs` and oscost's own FUSE server (`oscost __fuse-serve`,
    /// the one its `fs` experiment starts) at `{tmp}/fuse`, pinned to CPU A: the two file
    /// systems oscost's `fs` cases run on, for the C program to run on the same (needs root).
    FsMounts,
}

/// The made things, taken down when dropped.
#[derive(Debug, Default)]
pub struct Made {
    tmpfs: Option<PathBuf>,
    server: Option<Child>,
}

impl Made {
    /// Makes `setup` in `dir` for oscost binary `bin` on CPU `cpu`.
    pub fn make(setup: Setup, dir: &Path, bin: &Path, cpu: usize) -> anyhow::Result<Made> {
        let mut made = Made::default();
        if setup == Setup::Nothing {
            return Ok(made);
        }
        let (tmpfs, fuse) = (dir.join("tmpfs"), dir.join("fuse"));
        std::fs::create_dir_all(&tmpfs)?;
        std::fs::create_dir_all(&fuse)?;
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=16m,mode=0700", "oscost-vs-tmpfs"])
            .arg(&tmpfs)
            .status()
            .context("cannot run mount")?;
        if !status.success() {
            bail!("cannot mount a tmpfs on {}", tmpfs.display());
        }
        made.tmpfs = Some(tmpfs);
        let mut server = Command::new("taskset")
            .arg("-c")
            .arg(cpu.to_string())
            .arg(bin)
            .arg("__fuse-serve")
            .arg(&fuse)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("cannot start oscost's FUSE server")?;
        // Its first line says whether it mounted; it then serves until its input ends.
        let mut first = String::new();
        let out = server.stdout.take();
        made.server = Some(server);
        if let Some(out) = out {
            BufReader::new(out).read_line(&mut first)?;
        }
        if first.trim() != "ready" {
            bail!("oscost's FUSE server did not mount: {}", first.trim());
        }
        Ok(made)
    }
}

impl Drop for Made {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            // Its input ends: it unmounts and exits.
            drop(server.stdin.take());
            let _ = server.wait();
        }
        if let Some(tmpfs) = self.tmpfs.take() {
            let unmounted = Command::new("umount")
                .arg(&tmpfs)
                .status()
                .is_ok_and(|s| s.success());
            if !unmounted {
                // Busy a moment after its last user: detached now, gone when it is free.
                let _ = Command::new("umount").arg("-l").arg(&tmpfs).status();
            }
        }
    }
}
