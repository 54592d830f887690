//! The names a BPF record cannot carry (threads', interrupts'), read from `/proc` when the
//! trace is read.

use std::collections::HashMap;

/// Names the records cannot carry, read from `/proc` once the trace is read: threads'
/// (`/proc/<tid>/comm`, else as they were when the tracer was opened; a thread gone by then
/// and born after reads as `tid <N>`) and interrupts' (`/proc/interrupts`).
#[derive(Default)]
pub(super) struct Names {
    pub(super) threads: HashMap<u32, String>,
    /// Every thread's name when the tracer was opened.
    pub(super) early: HashMap<u32, String>,
    pub(super) irqs: Option<HashMap<i64, String>>,
    /// Set by tests: names to use instead of `/proc`'s.
    pub(super) fixed: Option<HashMap<u32, String>>,
}

impl Names {
    pub(super) fn thread(&mut self, tid: i64, cpu: usize) -> String {
        if tid == 0 {
            return format!("swapper/{cpu}");
        }
        let Ok(tid) = u32::try_from(tid) else {
            return String::new();
        };
        if let Some(f) = &self.fixed {
            return f.get(&tid).cloned().unwrap_or_else(|| format!("tid {tid}"));
        }
        self.threads
            .entry(tid)
            .or_insert_with(|| {
                std::fs::read_to_string(format!("/proc/{tid}/comm"))
                    .map(|s| s.trim_end().to_owned())
                    .ok()
                    .or_else(|| self.early.get(&tid).cloned())
                    .unwrap_or_else(|| format!("tid {tid}"))
            })
            .clone()
    }

    /// Every thread's name now (`/proc/<pid>/task/<tid>/comm`).
    pub(super) fn snapshot() -> HashMap<u32, String> {
        let mut out = HashMap::new();
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return out;
        };
        for p in procs.flatten() {
            let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
                continue;
            };
            for t in tasks.flatten() {
                let tid = t.file_name().to_str().and_then(|n| n.parse::<u32>().ok());
                if let (Some(tid), Ok(c)) = (tid, std::fs::read_to_string(t.path().join("comm"))) {
                    out.insert(tid, c.trim_end().to_owned());
                }
            }
        }
        out
    }

    pub(super) fn irq(&mut self, irq: i64) -> String {
        self.irqs
            .get_or_insert_with(|| {
                std::fs::read_to_string("/proc/interrupts")
                    .map(|t| irq_names(&t))
                    .unwrap_or_default()
            })
            .get(&irq)
            .cloned()
            .unwrap_or_default()
    }
}

/// Each numbered interrupt's name in `/proc/interrupts` (its last column: the handlers'
/// names, as `irq_handler_entry` gives them).
pub(super) fn irq_names(text: &str) -> HashMap<i64, String> {
    let mut cpus = 0;
    let mut out = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        if i == 0 {
            cpus = line.split_whitespace().count();
            continue;
        }
        let Some((n, rest)) = line.split_once(':') else {
            continue;
        };
        let Ok(n) = n.trim().parse::<i64>() else {
            continue;
        };
        // The counts, then the chip, the hardware irq and the handlers' names.
        let words: Vec<&str> = rest.split_whitespace().skip(cpus).collect();
        if let Some(name) = words.last() {
            out.insert(n, (*name).to_owned());
        }
    }
    out
}
