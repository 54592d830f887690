//! The alternation: oscost and a C reference started once each, their samples taken in turn,
//! one by one, so that a drift of the machine while they run (a halted CPU's wake-up time
//! moving with what ran before) touches both alike and leaves their ratio.
//!
//! Each side gets two FIFOs in `OSCOST_PACE=GO:DONE`; at each calibration and each sample it
//! writes a byte to DONE and waits for one on GO (oscost's `pace` module, `benches/pace.h`).
//! The conductor waits until both sides stand at their first turn, then grants turns
//! alternately, so exactly one side runs at any time; a side that ended is passed over.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{bail, Context as _};

/// The variable both sides read.
const PACE_ENV: &str = "OSCOST_PACE";

/// How long a side may hold its turn before the conductor gives up on it.
const TURN_LIMIT: Duration = Duration::from_secs(300);

enum Event {
    /// The side stands at a turn.
    Turn(usize),
    /// The side ended.
    Exit(usize, std::io::Result<ExitStatus>),
}

/// What the alternation did: each side's standard output and how many turns each took.
#[derive(Debug)]
pub struct Alternated {
    /// Standard output of side 0 and side 1.
    pub stdout: [String; 2],
    /// Turns granted to each side.
    pub turns: [u64; 2],
}

fn fifo(dir: &Path, name: &str) -> anyhow::Result<(String, File)> {
    let path = dir.join(name);
    let status = Command::new("mkfifo")
        .arg(&path)
        .status()
        .context("cannot run mkfifo")?;
    if !status.success() {
        bail!("mkfifo {} failed", path.display());
    }
    // Read and write: opening never waits for the other end, and neither end ever sees the
    // other close; a side's end is seen through its exit instead.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    Ok((path.display().to_string(), file))
}

/// Runs `sides` (their standard output to files in `dir`) in turns, `first` granted first.
pub fn alternate(mut sides: [Command; 2], first: usize, dir: &Path) -> anyhow::Result<Alternated> {
    let (tx, rx) = mpsc::channel();
    let mut go = Vec::new();
    let mut done_ends = Vec::new();
    let mut pids = Vec::new();
    let mut outs = Vec::new();
    for (k, cmd) in sides.iter_mut().enumerate() {
        let (go_path, go_end) = fifo(dir, &format!("go{k}"))?;
        let (done_path, done_end) = fifo(dir, &format!("done{k}"))?;
        let out_path = dir.join(format!("out{k}"));
        let err_path = dir.join(format!("err{k}"));
        cmd.env(PACE_ENV, format!("{go_path}:{done_path}"))
            .stdin(Stdio::null())
            .stdout(File::create(&out_path)?)
            .stderr(File::create(&err_path)?);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start side {k}"))?;
        pids.push(child.id());
        let txk = tx.clone();
        std::thread::spawn(move || {
            let _ = txk.send(Event::Exit(k, child.wait()));
        });
        let mut reader = done_end.try_clone()?;
        let txk = tx.clone();
        std::thread::spawn(move || {
            let mut byte = [0u8];
            // Ends when the conductor drops its receiver and writes the last byte.
            while reader.read_exact(&mut byte).is_ok() && txk.send(Event::Turn(k)).is_ok() {}
        });
        go.push(go_end);
        done_ends.push(done_end);
        outs.push((out_path, err_path));
    }
    drop(tx);
    let mut conductor = Conductor {
        rx,
        alive: [true; 2],
        at_turn: [false; 2],
        status: [None, None],
    };
    let result = conductor.run(&mut go, first);
    if result.is_err() || conductor.alive.iter().any(|&a| a) {
        for pid in &pids {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(pid.to_string())
                .status();
        }
    }
    drop(conductor.rx);
    for mut end in done_ends {
        // Wakes the reader thread, whose send now fails: it ends.
        let _ = end.write_all(b"x");
    }
    let stderr = |k: usize| {
        std::fs::read_to_string(&outs[k].1)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let turns = result.map_err(|e| {
        anyhow::anyhow!(
            "{e}; side 0 said: {:?}; side 1 said: {:?}",
            stderr(0),
            stderr(1)
        )
    })?;
    let mut stdout = [String::new(), String::new()];
    for (k, out) in stdout.iter_mut().enumerate() {
        *out = std::fs::read_to_string(&outs[k].0)?;
    }
    Ok(Alternated { stdout, turns })
}

struct Conductor {
    rx: mpsc::Receiver<Event>,
    alive: [bool; 2],
    at_turn: [bool; 2],
    status: [Option<std::io::Result<ExitStatus>>; 2],
}

impl Conductor {
    fn next(&mut self) -> anyhow::Result<()> {
        match self.rx.recv_timeout(TURN_LIMIT) {
            Ok(Event::Turn(k)) => self.at_turn[k] = true,
            Ok(Event::Exit(k, status)) => {
                self.alive[k] = false;
                self.status[k] = Some(status);
            }
            Err(_) => bail!("a side held its turn for {} s", TURN_LIMIT.as_secs()),
        }
        Ok(())
    }

    fn run(&mut self, go: &mut [File], first: usize) -> anyhow::Result<[u64; 2]> {
        while (0..2).any(|k| self.alive[k] && !self.at_turn[k]) {
            self.next()?;
        }
        let mut turns = [0u64; 2];
        let mut k = first;
        while self.alive.iter().any(|&a| a) {
            if !self.alive[k] {
                k ^= 1;
                continue;
            }
            self.at_turn[k] = false;
            turns[k] += 1;
            go[k].write_all(b"g")?;
            while self.alive[k] && !self.at_turn[k] {
                self.next()?;
            }
            k ^= 1;
        }
        for (k, status) in self.status.iter().enumerate() {
            match status {
                Some(Ok(s)) if s.success() => {}
                Some(Ok(s)) => bail!("side {k} ended with {s}"),
                Some(Err(e)) => bail!("side {k}: {e}"),
                None => bail!("side {k} never ended"),
            }
        }
        Ok(turns)
    }
}
