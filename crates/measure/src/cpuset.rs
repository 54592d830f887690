//! The CPUs of this machine, in the kernel's list syntax (`0-3,8`).

pub use oscost_model::cpulist::{format, parse, CpuListError};

/// Restores the calling thread's CPU set when dropped: experiments pin the measuring thread,
/// and must hand it back as they found it on every way out.
pub(crate) struct AffinityRestore(Option<Vec<usize>>);

impl AffinityRestore {
    /// Remembers the calling thread's CPU set.
    pub(crate) fn save() -> AffinityRestore {
        AffinityRestore(oscost_sys::affinity().ok())
    }

    /// Remembers the calling thread's CPU set, then pins it to `cpus`.
    pub(crate) fn pin(cpus: &[usize]) -> anyhow::Result<AffinityRestore> {
        let restore = AffinityRestore::save();
        oscost_sys::set_affinity(cpus)
            .map_err(|e| anyhow::anyhow!("pinning to CPUs {}: {e}", format(cpus)))?;
        Ok(restore)
    }
}

impl Drop for AffinityRestore {
    fn drop(&mut self) {
        if let Some(cpus) = &self.0 {
            let _ = oscost_sys::set_affinity(cpus);
        }
    }
}

/// The online CPUs (`/sys/devices/system/cpu/online`), or CPU 0..available_parallelism.
pub fn online() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse(&s).ok())
        .unwrap_or_else(|| {
            (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
        })
}

/// Parses `text` and checks every CPU is online; the error names every CPU that is not (a
/// range far beyond the machine, such as `0-99999`, included).
pub fn parse_online(text: &str) -> Result<Vec<usize>, CpuListError> {
    let on = online();
    let mut missing: Vec<(usize, usize)> = Vec::new();
    for part in text.trim().split(',') {
        let bounds = match part.split_once('-') {
            Some((a, b)) => a
                .trim()
                .parse::<usize>()
                .ok()
                .zip(b.trim().parse::<usize>().ok()),
            None => part.trim().parse::<usize>().ok().map(|a| (a, a)),
        };
        let Some((a, b)) = bounds.filter(|(a, b)| a <= b) else {
            continue; // the syntax error is reported by `parse`
        };
        // [a, b] minus the online CPUs, as ranges, without expanding [a, b].
        let mut from = a;
        for &c in on.iter().filter(|&&c| c >= a && c <= b) {
            if c > from {
                missing.push((from, c - 1));
            }
            from = c + 1;
        }
        if from <= b {
            missing.push((from, b));
        }
    }
    if !missing.is_empty() && parse_syntax_only(text) {
        let named: Vec<String> = missing
            .iter()
            .map(|&(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect();
        return Err(CpuListError::NotOnline {
            cpus: named.join(","),
            online: format(&on),
        });
    }
    parse(text)
}

/// Whether `text` is a CPU list in syntax (numbers, ranges that do not run backwards).
fn parse_syntax_only(text: &str) -> bool {
    let text = text.trim();
    !text.is_empty()
        && text.split(',').all(|part| {
            let num = |s: &str| s.trim().parse::<usize>().ok();
            match part.split_once('-') {
                Some((a, b)) => matches!((num(a), num(b)), (Some(a), Some(b)) if a <= b),
                None => num(part).is_some(),
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_cpus_that_are_not_online() {
        assert!(matches!(
            parse_online("99999"),
            Err(CpuListError::NotOnline { ref cpus, .. }) if cpus == "99999"
        ));
        let e = parse_online("0-99999").unwrap_err().to_string();
        assert!(e.contains("-99999 are not online"), "{e}");
        assert!(matches!(parse_online("x"), Err(CpuListError::Syntax(_))));
    }
}
