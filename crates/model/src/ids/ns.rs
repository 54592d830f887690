//! `ns`: a child that makes new namespaces and ends, by kind.

use std::fmt;

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Ns.as_str();

/// Suffix of a case made inside a new user namespace (a normal user's way).
const IN_USER: &str = "in-user";

/// What a case's child makes: `none`, a kind (`mount`, `net`, …), `net.lo` or `container`.
pub const WHATS: [&str; 11] = [
    "none",
    "mount",
    "uts",
    "ipc",
    "pid",
    "net",
    "net.lo",
    "user",
    "cgroup",
    "time",
    "container",
];

/// `ns.container.over_none`: a container's set of namespaces, less the bare child.
pub const CONTAINER_OVER_NONE: &str = "ns.container.over_none";
/// `ns.container.in-user.over_none`: the same made inside a new user namespace.
pub const CONTAINER_IN_USER_OVER_NONE: &str = "ns.container.in-user.over_none";

/// A case: `ns.<what>[.in-user]`, e.g. `ns.net.lo` or, as a normal user, `ns.mount.in-user`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case<'a> {
    /// One of [`WHATS`].
    pub what: &'a str,
    /// Made together with a new user namespace (the namespaces it owns then need no
    /// privilege).
    pub in_user: bool,
}

/// A derived figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Derived {
    /// `<case>.over_none`: the case less the bare child.
    OverNone,
    /// `<case>.over_user`: a case made inside a user namespace less `ns.user`.
    OverUser,
}

impl Derived {
    fn name(self) -> &'static str {
        match self {
            Derived::OverNone => "over_none",
            Derived::OverUser => "over_user",
        }
    }
}

/// Every id `ns` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id<'a> {
    /// A case.
    Case(Case<'a>),
    /// A figure derived from a case.
    Derived(Case<'a>, Derived),
}

impl fmt::Display for Case<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{NAME}.{}", self.what)?;
        if self.in_user {
            write!(f, ".{IN_USER}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Case(c) => write!(f, "{c}"),
            Id::Derived(c, d) => write!(f, "{c}.{}", d.name()),
        }
    }
}

impl<'a> Id<'a> {
    /// The id's parts, or `None` for an id `ns` never writes.
    pub fn parse(id: &'a str) -> Option<Self> {
        let rest = super::within(NAME, id)?;
        let (rest, derived) = [Derived::OverNone, Derived::OverUser]
            .into_iter()
            .find_map(|d| Some((rest.strip_suffix(&format!(".{}", d.name()))?, Some(d))))
            .unwrap_or((rest, None));
        let (what, in_user) = match rest.strip_suffix(&format!(".{IN_USER}")) {
            Some(w) => (w, true),
            None => (rest, false),
        };
        let what = *WHATS.iter().find(|w| **w == what)?;
        let rest_what = &rest[..what.len()];
        // Borrow from `id`, not from the table, so the parts point into the id.
        let case = Case {
            what: rest_what,
            in_user,
        };
        if in_user && matches!(what, "none" | "user") {
            return None;
        }
        Some(match derived {
            None => Id::Case(case),
            Some(Derived::OverUser) if !in_user => return None,
            Some(Derived::OverNone) if what == "none" => return None,
            Some(d) => Id::Derived(case, d),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_ids_are_built_ids() {
        for (in_user, text) in [
            (false, CONTAINER_OVER_NONE),
            (true, CONTAINER_IN_USER_OVER_NONE),
        ] {
            let c = Case {
                what: "container",
                in_user,
            };
            assert_eq!(Id::Derived(c, Derived::OverNone).to_string(), text);
        }
    }

    #[test]
    fn ids_round_trip() {
        for what in WHATS {
            for in_user in [false, true] {
                let c = Case { what, in_user };
                let ids = [
                    Id::Case(c),
                    Id::Derived(c, Derived::OverNone),
                    Id::Derived(c, Derived::OverUser),
                ];
                for id in ids {
                    let text = id.to_string();
                    match Id::parse(&text) {
                        Some(back) => assert_eq!(back, id, "{text}"),
                        None => assert!(
                            (in_user && matches!(what, "none" | "user"))
                                || matches!(id, Id::Derived(_, Derived::OverUser) if !in_user)
                                || matches!(id, Id::Derived(c, Derived::OverNone) if c.what == "none"),
                            "{text}"
                        ),
                    }
                }
            }
        }
        assert_eq!(
            Case {
                what: "net.lo",
                in_user: true
            }
            .to_string(),
            "ns.net.lo.in-user"
        );
        assert_eq!(Id::parse("ns.nosuch"), None);
        assert_eq!(Id::parse("nsx.mount"), None);
    }
}
