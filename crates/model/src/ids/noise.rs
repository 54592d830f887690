//! `noise`: the interruptions of a busy loop on each CPU.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Noise.as_str();

/// Every id `noise` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id {
    /// `noise.cpu<N>`: the gaps of a busy loop on CPU N.
    Cpu(usize),
    /// `noise.cpu<N>.kernel`: the same CPU's traced pass, the gaps put down to their sources.
    Traced(usize),
    /// `noise.kernel`: the traced passes as a whole, when they could not run.
    Kernel,
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Cpu(cpu) => write!(f, "{NAME}.cpu{cpu}"),
            Id::Traced(cpu) => write!(f, "{NAME}.cpu{cpu}.kernel"),
            Id::Kernel => write!(f, "{NAME}.kernel"),
        }
    }
}

impl Id {
    /// The id's parts, or `None` for an id `noise` never writes.
    pub fn parse(id: &str) -> Option<Self> {
        match super::parts(NAME, id)?.as_slice() {
            ["kernel"] => Some(Id::Kernel),
            [cpu] => Some(Id::Cpu(super::number(cpu, "cpu", "")?)),
            [cpu, "kernel"] => Some(Id::Traced(super::number(cpu, "cpu", "")?)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for (id, text) in [
            (Id::Cpu(3), "noise.cpu3"),
            (Id::Traced(0), "noise.cpu0.kernel"),
            (Id::Kernel, "noise.kernel"),
        ] {
            assert_eq!(id.to_string(), text);
            assert_eq!(Id::parse(text), Some(id), "{text}");
        }
        for id in ["noise.cpu", "noise.cpu1.other", "noise.gpu1"] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
    }
}
