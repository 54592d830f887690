//! What one reference is: the types the table of entries ([`super::entries`]) is written in.
//!
//! An argument template may hold `{a}` (the measuring CPU), `{b}` (the second CPU), `{s}`
//! (the C program's samples), `{tmp}` (the run's scratch directory) and `{q:STANDARD:QUICK}`
//! (one word under standard sampling, another under `--quick`); [`expand`] fills them. A C
//! template may also hold `{param:NAME}`, oscost's experiment parameter NAME from the same
//! round's document (a count oscost calibrated, for the C program to do the same work): such a
//! run has oscost run first in every round.

/// How many CPUs an entry places its tasks on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cpus {
    /// Everything on CPU A.
    One,
    /// The measuring task on CPU A, a partner on CPU B.
    Two,
}

/// What a reference needs that a machine may lack; an entry that cannot run says which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Nothing beyond a C compiler.
    Nothing,
    /// Root (namespaces, cgroups, a setting it changes for the run).
    Root,
}

/// A figure read from oscost's document, named as the C program names its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// Each case's median, under the case's id.
    Medians,
    /// A counter of each case that has it, under `CASE.COUNTER`: where the figure is a count
    /// or a rate, not a time (interruptions per second, a parent's KiB of page tables).
    Counter(&'static str),
    /// The machine's controls of the first experiment, each the median of its bursts'
    /// samples, under their comparison ids (`control.kernel_entry`, `control.user_loop`).
    Controls,
}

/// Every case's median and nothing else: what most entries read.
pub const MEDIANS: &[Read] = &[Read::Medians];

/// A second C program built beside the reference for it to run (a static helper a child
/// executes), into the run's scratch directory.
#[derive(Debug, Clone, Copy)]
pub struct Helper {
    /// The C file, from the repository root.
    pub source: &'static str,
    /// The binary's name in the scratch directory (`{tmp}/NAME` in a template).
    pub name: &'static str,
    /// Compiler flag sets tried in turn until one builds (a toolchain may refuse the
    /// smallest link).
    pub flags: &'static [&'static [&'static str]],
}

/// One C run (one or more invocations, their outputs joined) paired with one oscost run:
/// their figures are paired by case id.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    /// The C program's invocations, by their arguments.
    pub c: &'static [&'static [&'static str]],
    /// oscost's arguments after its global options (`--cpus`, `--quiet`, `--no-save`):
    /// the experiment and its options, `--json` added by the harness.
    pub oscost: &'static [&'static str],
    /// Only ids containing this are paired from this run (two runs measuring one case in
    /// different ways would otherwise pair it twice).
    pub only: Option<&'static str>,
}

impl Run {
    /// The figures this run pairs: those whose id holds [`Run::only`], or all.
    pub fn keep(&self, figures: Vec<(String, f64)>) -> Vec<(String, f64)> {
        match self.only {
            Some(part) => figures
                .into_iter()
                .filter(|(id, _)| id.contains(part))
                .collect(),
            None => figures,
        }
    }
}

/// A figure derived on both sides from the measured ones before pairing (a case over the
/// bare one): `(id, figures) -> value`, given every `ID NS` of the round.
pub type Derive = fn(&[(String, f64)]) -> Vec<(String, f64)>;

/// One reference held against one oscost experiment.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// `cargo xtask vs NAME`.
    pub name: &'static str,
    /// What the reference does, one line, for `--list`.
    pub about: &'static str,
    /// The C program, from the repository root.
    pub source: &'static str,
    /// Compiler flags besides `-O2`.
    pub cflags: &'static [&'static str],
    /// CPUs used.
    pub cpus: Cpus,
    /// What a machine must offer.
    pub needs: Needs,
    /// The C program's samples per case: standard sampling and `--quick`.
    pub c_samples: [u32; 2],
    /// Appended to every C run under `--quick`.
    pub c_quick: &'static [&'static str],
    /// Both programs started under `taskset -c A` (besides their own pinning).
    pub taskset: bool,
    /// Whether the experiment takes `--idle-poll`.
    pub idle_poll: bool,
    /// The paired runs of a round.
    pub runs: &'static [Run],
    /// Figures derived on both sides before pairing.
    pub derive: Option<Derive>,
    /// oscost counters printed beside each pair (median over the rounds).
    pub show: &'static [&'static str],
    /// What is read from oscost's document to pair with the C program's lines.
    pub read: &'static [Read],
    /// Helpers built before the C program runs.
    pub helpers: &'static [Helper],
    /// What is made before the entry's rounds and taken down after them.
    pub setup: super::setup::Setup,
    /// Cases held sample by sample (`--alternate`): both programs run one case and take
    /// their samples in turn ([`super::conduct`]). Empty: the references cannot alternate.
    pub alternate: &'static [Run],
}

/// What an entry is unless it says otherwise: one CPU, nothing needed, a C program without
/// extra flags run under `taskset` with 81 samples a case (10 under `--quick`), its medians
/// paired, nothing derived, shown, built beside or set up, no case alternated. An entry names
/// what differs and ends with `..BASE`; its name, about, source and runs are always its own.
pub const BASE: Entry = Entry {
    name: "",
    about: "",
    source: "",
    cflags: &[],
    cpus: Cpus::One,
    needs: Needs::Nothing,
    c_samples: [81, 10],
    c_quick: &[],
    taskset: true,
    idle_poll: false,
    runs: &[],
    derive: None,
    show: &[],
    read: MEDIANS,
    helpers: &[],
    setup: super::setup::Setup::Nothing,
    alternate: &[],
};

/// What a run is unless it says otherwise: every figure paired (`..RUN`).
pub const RUN: Run = Run {
    c: &[],
    oscost: &[],
    only: None,
};

/// The values a template's placeholders take.
#[derive(Debug, Clone)]
pub struct Slots {
    /// CPU A.
    pub a: usize,
    /// CPU B (A when the entry uses one CPU).
    pub b: usize,
    /// The C program's samples.
    pub samples: u32,
    /// The scratch directory.
    pub tmp: String,
    /// `--quick`: `{q:A:B}` reads B.
    pub quick: bool,
}

/// `template` with its placeholders filled.
pub fn expand(template: &[&str], slots: &Slots) -> Vec<String> {
    template
        .iter()
        .map(|t| {
            let t = match t.strip_prefix("{q:").and_then(|r| r.strip_suffix('}')) {
                Some(choice) => match choice.split_once(':') {
                    Some((standard, quick)) => {
                        if slots.quick {
                            quick
                        } else {
                            standard
                        }
                    }
                    None => t,
                },
                None => t,
            };
            t.replace("{a}", &slots.a.to_string())
                .replace("{b}", &slots.b.to_string())
                .replace("{s}", &slots.samples.to_string())
                .replace("{tmp}", &slots.tmp)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_and_the_rest_left_alone() {
        let slots = Slots {
            a: 1,
            b: 0,
            samples: 81,
            tmp: "/tmp/x".into(),
            quick: false,
        };
        let template = [
            "-a",
            "{a}",
            "--cpus",
            "{a},{b}",
            "-s",
            "{s}",
            "{tmp}/f",
            "{c}",
            "{q:1024:256}",
        ];
        assert_eq!(
            expand(&template, &slots),
            ["-a", "1", "--cpus", "1,0", "-s", "81", "/tmp/x/f", "{c}", "1024"]
        );
        let quick = Slots {
            quick: true,
            ..slots
        };
        assert_eq!(expand(&template, &quick)[8], "256");
    }
}
