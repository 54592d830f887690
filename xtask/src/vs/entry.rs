//! What one reference is: the types the table of entries ([`super::entries`]) is written in.
//!
//! An argument template may hold `{a}` (the measuring CPU), `{b}` (the second CPU), `{s}`
//! (the C program's samples), `{tmp}` (the run's scratch directory), `{oscost}` (the oscost
//! binary held, for a peer tool that records a run of it) and `{q:STANDARD:QUICK}`
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

/// What a reference needs that a machine may lack; an entry that cannot run says which, and is
/// counted as skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Root (namespaces, cgroups, a setting it changes for the run, tracepoints).
    Root,
    /// A peer tool's program on PATH, and where it comes from (`"Debian package linux-perf"`).
    Tool(&'static str, &'static str),
}

/// What an entry's reference is.
#[derive(Debug, Clone, Copy)]
pub enum Reference {
    /// A C program of ours, from the repository root, built with `-O2` and the entry's `cflags`
    /// and run with each [`Run::c`] invocation.
    C(&'static str),
    /// A peer tool: each run's [`Run::tool`] steps are its commands.
    Tool(Tool),
}

/// A peer tool held against oscost: perf, cyclictest, lmbench.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// Its name in the printed pairs, where a C reference's says `C`.
    pub label: &'static str,
    /// Environment of every step, as `(NAME, template)`.
    pub env: &'static [(&'static str, &'static str)],
    /// Commands run after every run of the steps however they ended, their outcome ignored:
    /// what stops a server a step left running.
    pub finally: &'static [&'static [&'static str]],
    /// It may mount tracefs (perf does, to resolve a tracepoint's name, when none is
    /// mounted): a tracefs mounted by the steps is unmounted after them.
    pub mounts_tracefs: bool,
}

/// The CPU a step is started on (`taskset -c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pin {
    /// CPU A, the measuring one.
    A,
    /// CPU B, the partner's.
    B,
}

/// Reads a peer tool's output (standard output, then standard error) into figures: `("", v)`
/// is the step's id itself, `("NAME", v)` is `ID.NAME`.
pub type Parse = fn(&str) -> anyhow::Result<Vec<(String, f64)>>;

/// One command of a peer tool, in a run's order.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    /// The program (found on PATH) and its arguments, templates.
    pub argv: &'static [&'static str],
    /// Started under `taskset -c` on this CPU; `None`: where the harness runs.
    pub pin: Option<Pin>,
    /// Environment besides the tool's, as `(NAME, template)`.
    pub env: &'static [(&'static str, &'static str)],
    /// A process spinning on CPU A for the step's whole run (a case under load).
    pub spinner: bool,
    /// The id (a template) of the figures its output gives.
    pub id: &'static str,
    /// What its output is read with; `None`: nothing (it starts or stops a server).
    pub parse: Option<Parse>,
    /// Milliseconds waited after it: a server's start to settle, its port to be freed.
    pub settle_ms: u64,
}

/// A step pinned nowhere, with no environment of its own, no spinner, read by nothing and
/// followed by no wait (`..STEP`).
pub const STEP: Step = Step {
    argv: &[],
    pin: None,
    env: &[],
    spinner: false,
    id: "",
    parse: None,
    settle_ms: 0,
};

/// A figure read from oscost's document, named as the C program names its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// Each case's median, under the case's id.
    Medians,
    /// A counter of each case that has it, under `CASE.COUNTER`: where the figure is a count
    /// or a rate, not a time (interruptions per second, a parent's KiB of page tables).
    Counter(&'static str),
    /// Each case's samples (`raw_ns`) cut down to whole µs and counted in 1 µs bins, as
    /// cyclictest counts its wake-ups: the bins where half and 99 % of them are reached, under
    /// `CASE.p50_us` and `CASE.p99_us` ([`super::run::bin_percentiles`]).
    WholeUsPercentiles,
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

/// One run of the reference (one or more invocations or steps, their figures joined) paired
/// with one oscost run: their figures are paired by case id.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    /// A C reference's invocations, by their arguments.
    pub c: &'static [&'static [&'static str]],
    /// A peer tool's steps.
    pub tool: &'static [Step],
    /// oscost's arguments after its global options (`--cpus`, `--quiet`, `--no-save`):
    /// the experiment and its options, `--json` added by the harness.
    pub oscost: &'static [&'static str],
    /// Only ids containing this are paired from this run (two runs measuring one case in
    /// different ways would otherwise pair it twice).
    pub only: Option<&'static str>,
    /// Left out when the harness is not root (a SCHED_FIFO case), saying so.
    pub root: bool,
    /// The reference runs inside oscost's run instead of before or after it: started this
    /// many ms (a template) after oscost, it must end before oscost does (perf counting
    /// through a window of oscost's traced pass).
    pub during: Option<&'static str>,
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
    /// The reference: a C program of ours or a peer tool.
    pub reference: Reference,
    /// A C reference's compiler flags besides `-O2`.
    pub cflags: &'static [&'static str],
    /// CPUs used.
    pub cpus: Cpus,
    /// What a machine must offer.
    pub needs: &'static [Needs],
    /// A C reference's samples per case: standard sampling and `--quick`.
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
    /// Helpers built before a C reference runs.
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
/// what differs and ends with `..BASE`; its name, about, reference and runs are always its own.
pub const BASE: Entry = Entry {
    name: "",
    about: "",
    reference: Reference::C(""),
    cflags: &[],
    cpus: Cpus::One,
    needs: &[],
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

/// What a run is unless it says otherwise: every figure paired, run as any user (`..RUN`).
pub const RUN: Run = Run {
    c: &[],
    tool: &[],
    oscost: &[],
    only: None,
    root: false,
    during: None,
};

impl Entry {
    /// The reference's name in the printed pairs: `C`, or the peer tool's.
    pub fn label(&self) -> &'static str {
        match self.reference {
            Reference::C(_) => "C",
            Reference::Tool(t) => t.label,
        }
    }
}

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
    /// The oscost binary.
    pub oscost: String,
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
                .replace("{oscost}", &slots.oscost)
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
            oscost: "/bin/oscost".into(),
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
            "{oscost}",
        ];
        assert_eq!(
            expand(&template, &slots),
            [
                "-a",
                "1",
                "--cpus",
                "1,0",
                "-s",
                "81",
                "/tmp/x/f",
                "{c}",
                "1024",
                "/bin/oscost"
            ]
        );
        let quick = Slots {
            quick: true,
            ..slots
        };
        assert_eq!(expand(&template, &quick)[8], "256");
    }
}
