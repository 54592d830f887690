//! `poll`: select, poll and epoll_wait over N sockets, one ready.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Poll.as_str();

/// Every case id `poll` writes; calls named as the command line spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// `poll.<call>.<n>`: the call watching `n` descriptors.
    Call(&'a str, usize),
    /// `poll.select.<n>.high`: select over `n` descriptors numbered high.
    SelectHigh(usize),
    /// `poll.epoll-ctl`: adding and removing one descriptor of an epoll set.
    EpollCtl,
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Call(c, n) => write!(f, "{NAME}.{c}.{n}"),
            Id::SelectHigh(n) => write!(f, "{NAME}.select.{n}.high"),
            Id::EpollCtl => write!(f, "{NAME}.epoll-ctl"),
        }
    }
}

impl<'a> Id<'a> {
    /// The case id's parts, or `None` for an id `poll` never writes as a case.
    pub fn parse(id: &'a str) -> Option<Self> {
        match super::parts(NAME, id)?.as_slice() {
            ["epoll-ctl"] => Some(Id::EpollCtl),
            ["select", n, "high"] => Some(Id::SelectHigh(super::number(n, "", "")?)),
            [c, n] => Some(Id::Call(super::name(c)?, super::number(n, "", "")?)),
            _ => None,
        }
    }
}

/// `poll.<call>.per_fd`: derived, the call's cost per watched descriptor.
pub fn per_fd(call: &str) -> String {
    format!("{NAME}.{call}.per_fd")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for (id, text) in [
            (Id::Call("epoll-wait", 64), "poll.epoll-wait.64"),
            (Id::SelectHigh(8), "poll.select.8.high"),
            (Id::EpollCtl, "poll.epoll-ctl"),
        ] {
            assert_eq!(id.to_string(), text);
            assert_eq!(Id::parse(text), Some(id), "{text}");
        }
        for id in [
            "poll.select",
            "poll.select.08",
            "poll.select.8.low",
            "net.poll.1",
        ] {
            assert_eq!(Id::parse(id), None, "{id}");
        }
        assert_eq!(per_fd("poll"), "poll.poll.per_fd");
    }
}
