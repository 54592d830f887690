//! What `oscost spawn` is asked for: the ops, targets, parent sizes and mappings on its
//! command line, the plan they make and what that plan needs of the machine.

use super::*;

/// The ways of creating a task.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Op {
    /// fork; the child calls _exit(0) at once; waitpid
    Fork,
    /// clone(CLONE_VM|CLONE_VFORK), which is vfork on a stack of its own; the child calls
    /// _exit(0); waitpid
    Vfork,
    /// posix_spawn of a program (see --targets); waitpid
    PosixSpawn,
    /// fork; the child calls execve of a program (see --targets); waitpid
    ForkExec,
    /// pthread_create (64 KiB stack) of a thread that returns at once; pthread_join
    Thread,
}

impl Op {
    pub(super) fn id(self) -> String {
        engine::value_name(&self)
    }

    pub(super) fn method(self) -> Method {
        match self {
            Op::Fork => Method::Fork,
            Op::Vfork => Method::Vfork,
            Op::PosixSpawn => Method::PosixSpawn,
            Op::ForkExec => Method::ForkExec,
            Op::Thread => Method::Thread,
        }
    }

    pub(super) fn execs(self) -> bool {
        self.method().execs()
    }

    pub(super) fn is_process(self) -> bool {
        self != Op::Thread
    }
}

/// The programs the exec ops start.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Target {
    /// oscost's own helper: a static program whose whole code is exit_group(0)
    Static,
    /// /bin/true: a dynamically linked program (the loader and the C library start up)
    Dynamic,
}

impl Target {
    pub(super) fn id(self) -> String {
        engine::value_name(&self)
    }
}

/// Options of `oscost spawn`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Ways of creating a task, comma-separated (default: all)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "OP,...")]
    pub ops: Vec<Op>,

    /// Programs the posix-spawn and fork-exec ops start, comma-separated (default: both)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "TARGET,...")]
    pub targets: Vec<Target>,

    /// Touched private memory the parent holds while it creates processes, MiB,
    /// comma-separated [default: 1,64,1024, or 1,64 with --quick; a default size the available
    /// memory cannot hold is reported as not measured]
    #[arg(long, value_delimiter = ',', value_name = "MIB,...", allow_hyphen_values = true,
          value_parser = parse_mib)]
    pub parent_mib: Vec<u64>,

    /// Numbers of one-page shared mappings (each written once) the parent holds while it
    /// forks, comma-separated [default: 6000,12000, none with --quick]
    #[arg(long, value_delimiter = ',', value_name = "N,...", allow_hyphen_values = true,
          value_parser = parse_mappings)]
    pub mappings: Vec<u64>,

    /// Advise transparent huge pages for the parent memory (MADV_HUGEPAGE) instead of keeping
    /// it in 4 KiB pages (MADV_NOHUGEPAGE)
    #[arg(long)]
    pub huge_pages: bool,
}

pub(super) fn parse_mib(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=MAX_PARENT_MIB).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}` is not a size in MiB from 1 to {MAX_PARENT_MIB}"
        )),
    }
}

pub(super) fn parse_mappings(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=MAX_MAPPINGS).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}` is not a number of mappings from 1 to {MAX_MAPPINGS}"
        )),
    }
}

/// What a run measures, from the options.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Plan {
    pub(super) ops: Vec<Op>,
    pub(super) targets: Vec<Target>,
    /// Parent sizes, MiB, in the order given (empty when no process op is chosen).
    pub(super) sizes: Vec<u64>,
    /// Numbers of one-page mappings fork runs against (empty without fork).
    pub(super) mappings: Vec<u64>,
}

pub(super) fn plan(opts: &Options, quick: bool) -> Plan {
    use clap::ValueEnum;
    let ops = if opts.ops.is_empty() {
        Op::value_variants().to_vec()
    } else {
        engine::first_occurrences(&opts.ops)
    };
    let targets = if !ops.iter().any(|o| o.execs()) {
        Vec::new()
    } else if opts.targets.is_empty() {
        Target::value_variants().to_vec()
    } else {
        engine::first_occurrences(&opts.targets)
    };
    let sizes = if !ops.iter().any(|o| o.is_process()) {
        Vec::new()
    } else if !opts.parent_mib.is_empty() {
        engine::first_occurrences(&opts.parent_mib)
    } else if quick {
        QUICK_PARENT_MIB.to_vec()
    } else {
        DEFAULT_PARENT_MIB.to_vec()
    };
    let mappings = if !ops.contains(&Op::Fork) {
        Vec::new()
    } else if !opts.mappings.is_empty() {
        engine::first_occurrences(&opts.mappings)
    } else if quick {
        Vec::new()
    } else {
        DEFAULT_MAPPINGS.to_vec()
    };
    Plan {
        ops,
        targets,
        sizes,
        mappings,
    }
}

/// What a run needs at once, for the pre-flight check: the measuring process, the
/// coordinator's signal thread and the one task being created (and, for threads, the one just
/// joined, which the kernel may not have released yet); and, when `--parent-mib` was given,
/// the largest parent memory with its margin (a default size that does not fit is reported as
/// not measured instead).
pub(super) fn needs(opts: &Options, quick: bool) -> Needs {
    let p = plan(opts, quick);
    let thread = p.ops.contains(&Op::Thread);
    let tasks = 3 + u64::from(thread);
    let why = if thread {
        "the measuring process, the coordinator's signal thread, the task being created and \
         a thread just joined that the kernel may still be releasing"
    } else {
        "the measuring process, the coordinator's signal thread and the task being created"
    };
    let largest = p.sizes.iter().copied().max();
    let memory_kib = largest.filter(|_| !opts.parent_mib.is_empty()).map(|mib| {
        (
            mib * 1024 + MEMORY_MARGIN_KIB,
            format!(
                "{mib} MiB of touched parent memory and {} MiB left free",
                MEMORY_MARGIN_KIB / 1024
            ),
        )
    });
    let what = match (&memory_kib, largest) {
        (Some(_), Some(mib)) => format!("{NAME} --parent-mib {mib}"),
        _ => NAME.to_owned(),
    };
    Needs {
        what,
        instead: memory_kib
            .is_some()
            .then(|| "use a smaller --parent-mib".to_owned()),
        tasks: Some((tasks, why.to_owned())),
        memory_kib,
        ..Needs::default()
    }
}
