//! CPU lists in the kernel's syntax (`0-3,8`), parsed and printed.

use thiserror::Error;

/// Why a CPU list was rejected.
#[derive(Debug, Error, PartialEq)]
pub enum CpuListError {
    /// The text is not a CPU list.
    #[error("`{0}` is not a CPU list (expected numbers and ranges like `0-3,8`)")]
    Syntax(String),
    /// A range runs backwards.
    #[error("range `{0}` runs backwards")]
    Backwards(String),
    /// CPUs that are not online on this machine.
    #[error("{} not online (online: {online})", cpus_are(.cpus))]
    NotOnline {
        /// The offending CPUs, in list syntax.
        cpus: String,
        /// The online list.
        online: String,
    },
}

/// "CPU 5 is" or "CPUs 2-9 are".
fn cpus_are(list: &str) -> String {
    if list.contains([',', '-']) {
        format!("CPUs {list} are")
    } else {
        format!("CPU {list} is")
    }
}

/// Parses `0-3,8` into a sorted, de-duplicated list.
pub fn parse(text: &str) -> Result<Vec<usize>, CpuListError> {
    let mut cpus = Vec::new();
    let text = text.trim();
    if text.is_empty() {
        return Err(CpuListError::Syntax(text.into()));
    }
    for part in text.split(',') {
        let num = |s: &str| {
            s.trim()
                .parse::<usize>()
                .map_err(|_| CpuListError::Syntax(text.into()))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(CpuListError::Backwards(part.into()));
                }
                if b - a > 65536 {
                    return Err(CpuListError::Syntax(text.into()));
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(num(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Prints a list in the kernel's compact syntax.
pub fn format(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_singles() {
        assert_eq!(parse("0-3,8").unwrap(), vec![0, 1, 2, 3, 8]);
        assert_eq!(parse("3,1,1").unwrap(), vec![1, 3]);
        assert_eq!(format(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
    }

    #[test]
    fn rejects_bad_lists() {
        assert!(matches!(parse("x-y"), Err(CpuListError::Syntax(_))));
        assert!(matches!(parse(""), Err(CpuListError::Syntax(_))));
        assert!(matches!(parse("3-1"), Err(CpuListError::Backwards(_))));
    }
}
