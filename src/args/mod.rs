//! The command line: every clap definition of oscost and nothing else. The values are checked
//! against the machine in `config`; what each command does is in `commands`.

mod uses;
mod values;
pub use uses::uses;
pub use values::{BillTrace, Setting};

use crate::lists;
use clap::{Args, Parser, Subcommand};
use oscost_measure::experiments::{ExperimentArgs, REGISTRY};
use std::path::PathBuf;
use values::{
    parse_budget, parse_jobs, parse_min_runs, parse_pct, parse_rate, parse_samples, parse_since,
    parse_warmup, StudyName,
};

const ABOUT: &str = "oscost measures what the operating system costs a program: system calls, \
context switches, wake-ups, with the loop overhead subtracted, every figure in ns and counter \
ticks, a median with a bootstrap 95 % CI, and checks that what was timed really happened.";

const AFTER_HELP: &str = "Examples:
  oscost                          run the default suite (same as `oscost run`; about 54 s on a
                                  2-vCPU virtual machine)
  oscost --quick                  the suite at each experiment's --quick size (some at fewer
                                  cases), without the kernel's traced passes (about 5.6 s there)
  oscost syscall --quick          the system-call table, fast (about 0.6 s)
  oscost syscall --calls getpid,read64k --json r.json
  oscost switch --via pipe,futex --kind processes   ping-pong, switches counted
  oscost ring --tasks 2..1024 --via futex            token ring sweep
  oscost timeline --workers 2 --worker-nice 0,5 --svg .   CPU shares by nice, drawn
  oscost run syscall --cpus 1 --nice -19 --csv r.csv
  oscost --report r.html          the default suite, and a page of its tables and figures
  oscost report a.json b.json -o ab.html   two runs' results side by side in one page
  oscost list                     experiments and what they measure
  oscost env                      the machine description stored with every result
  oscost history list             the runs kept in the history (every run is saved there)
  oscost history trend syscall.getpid --svg t.svg   one figure across runs, drawn

Width: tables and text fit COLUMNS when it is set, else the terminal, else 80 columns (piped
or redirected): columns of less weight are dropped first, then tables fold. For every row
whole at any width, write --csv FILE or --json FILE (`-` for stdout).";

/// Top-level command line.
#[derive(Debug, Parser)]
#[command(name = "oscost", version, about = ABOUT, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOpts,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options every command takes, before or after the subcommand.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Output and sampling (any command)")]
pub struct GlobalOpts {
    /// Write the full results (schema oscost/2, raw samples included) to FILE; `-` for stdout
    #[arg(long, global = true, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write one CSV row per case to FILE, whole at any width; `-` for stdout
    #[arg(long, global = true, value_name = "FILE")]
    pub csv: Option<PathBuf>,

    /// Write Markdown tables to FILE; `-` for stdout
    #[arg(long, global = true, value_name = "FILE")]
    pub markdown: Option<PathBuf>,

    /// Write a self-contained HTML page of the run (tables, figures, the machine) to FILE; `-`
    /// for stdout
    #[arg(long, global = true, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// Write each figure of the run into the existing directory DIR (the experiments with
    /// figures of their own are listed from the registries)
    #[arg(long, global = true, value_name = "DIR", help = lists::svg_help())]
    pub svg: Option<PathBuf>,

    /// Write each series a case carries (a timeline's trace) into the existing directory DIR,
    /// as `<case id>.<series>.csv`
    #[arg(long, global = true, value_name = "DIR")]
    pub series: Option<PathBuf>,

    /// A rough look: smaller sizes, fewer and shorter samples (each experiment's --help says how
    /// long it takes); a suite with --quick runs each experiment at its --quick size
    #[arg(long, global = true)]
    pub quick: bool,

    /// Samples per case (which experiments take it is listed from the registry)
    #[arg(long, global = true, value_name = "N", allow_negative_numbers = true,
          value_parser = parse_samples, help = lists::samples_help())]
    pub samples: Option<u32>,

    /// Fewest samples per case before --budget may stop sampling, 3 or more and at most
    /// --samples (default 5); the same experiments as --samples
    #[arg(long, global = true, value_name = "N", allow_negative_numbers = true,
          value_parser = parse_min_runs)]
    pub min_runs: Option<u32>,

    /// Minimum warm-up per case (which experiments take it is listed from the registry)
    #[arg(long, global = true, value_name = "TIME", allow_hyphen_values = true,
          value_parser = parse_warmup, help = lists::warmup_help())]
    pub warmup: Option<std::time::Duration>,

    /// Time budget per case, e.g. 2s: once spent, sampling stops after --min-runs samples
    /// (default 2s, or 300ms with --quick, and more with a larger --samples; 1us to 1h). The
    /// same experiments as --samples
    #[arg(long, global = true, value_name = "TIME", allow_hyphen_values = true,
          value_parser = parse_budget)]
    pub budget: Option<std::time::Duration>,

    /// CPUs to measure on, kernel list syntax (`0-3,8`); single-task cases use the first
    #[arg(long, global = true, value_name = "LIST", allow_hyphen_values = true)]
    pub cpus: Option<String>,

    /// Nice value for the measuring tasks (-20..19; a negative value such as -19 needs root or
    /// CAP_SYS_NICE). Default: leave it as inherited; the value used is recorded
    #[arg(long, global = true, value_name = "N", allow_hyphen_values = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub nice: Option<i32>,

    /// No progress bar and no warnings (tables and errors still print; warnings stay in the
    /// result files)
    #[arg(long, short, global = true)]
    pub quiet: bool,

    /// A suite's full tables, views and notes instead of a line per figure; under each
    /// table, every case's warning in full (by default one line per kind of warning, saying
    /// how many cases it touched); each passed check with its figures (by default counted),
    /// every row of a view and how its figures were worked out
    #[arg(long, short, global = true, conflicts_with = "quiet")]
    pub verbose: bool,

    /// The history: where each run is saved and what `oscost history`, `compare` and
    /// `report` read. An SQLite file, a postgres://USER@HOST/DB URL (a store a fleet
    /// shares), or @FILE for a file holding either, so a password stays off the command
    /// line. Default: $OSCOST_HISTORY, else the file $OSCOST_HISTORY_FILE names, else
    /// $XDG_DATA_HOME/oscost/history.sqlite3 (~/.local/share/oscost/history.sqlite3)
    #[arg(long, global = true, value_name = "PATH|URL")]
    pub history: Option<String>,

    /// Do not save this run in the history
    #[arg(long, global = true, conflicts_with = "history")]
    pub no_save: bool,

    /// The name this host goes by in a fleet (an inventory name), recorded with the run and
    /// used by `compare --group-by host` (default: the machine's host name)
    #[arg(long, global = true, value_name = "NAME")]
    pub host_name: Option<String>,

    /// What started this run on the host (`ansible-core 2.14, command module over ssh`),
    /// recorded with the run as part of the machine's state
    #[arg(long, global = true, value_name = "TEXT")]
    pub runner: Option<String>,

    /// Tests only: a fictional machine and a scripted clock, for the example experiments
    #[arg(long, global = true, hide = true)]
    pub scripted: bool,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run experiments at their suite size (no names: the default suite; `ring` runs 2, 4, 16 and
    /// 64 tasks), or with --quick each at its --quick size
    Run {
        /// Experiments to run, in order
        #[arg(value_name = "EXPERIMENT", value_parser = experiment_names())]
        experiments: Vec<String>,
    },
    /// List the experiments
    List,
    /// Print the machine description recorded with every result
    Env,
    /// Compare results: each against the first, case by case, with the environment
    /// differences that can explain a difference
    #[command(after_help = COMPARE_HELP)]
    Compare(CompareArgs),
    /// List the published baselines (the studies' own figures), or describe one
    Baselines {
        /// A baseline to describe in full: its citation, machine, method and every figure
        #[arg(value_name = "NAME")]
        name: Option<String>,
    },
    /// The five published studies oscost repeats: list them, or run one on this machine and
    /// print its own tables with the published figures beside this machine's
    #[command(after_help = STUDY_HELP)]
    Study {
        /// The study to run (none: list them)
        #[arg(value_name = "NAME", value_parser = StudyName)]
        name: Option<String>,
        /// At the study's own sizes (longer: --quick takes seconds, the default up to about a
        /// minute and a half)
        #[arg(long, conflicts_with = "quick")]
        full: bool,
    },
    /// Print a shell completion script (`d=~/.local/share/bash-completion/completions; mkdir -p
    /// $d && oscost completions bash > $d/oscost`)
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a manual page in roff: oscost's own (`oscost man > oscost.1; man ./oscost.1`) or a
    /// subcommand's (`oscost man syscall > oscost-syscall.1`); `--dir DIR` writes them all
    Man {
        /// The subcommand whose page to print, with its options (none: oscost's own page)
        #[arg(value_name = "SUBCOMMAND")]
        name: Option<String>,
        /// Write every page into DIR instead: oscost.1 and oscost-SUBCOMMAND.1 for each
        /// subcommand (oscost-history-list.1 and so on below history)
        #[arg(long, value_name = "DIR", conflicts_with = "name")]
        dir: Option<PathBuf>,
    },
    /// The runs kept in the history: list, show, trend, export, import, rm
    #[command(subcommand)]
    History(HistoryCommand),
    /// Write one HTML page of result files (`--json` output): tables, figures, the machine;
    /// with several files, the cases they share side by side against the first
    Report {
        /// Result files written by `oscost --json`, or runs of the history (`latest`;
        /// `latest~1`, the run before it; `latest~N`; an id), the first the reference
        #[arg(value_name = "RUN")]
        files: Vec<PathBuf>,
        /// The HTML file to write (`-` for stdout); replaced whole, never half written
        #[arg(short, long, value_name = "OUT.html")]
        output: Option<PathBuf>,
    },
    /// One screen of what the OS costs a program on the machine of a run: each headline cost
    /// with its median, CI and the case it comes from, the failed checks and the noisy figures
    /// (every measuring run ends with it)
    Datasheet {
        /// A result file written by `oscost --json`, or a run of the history (`latest`;
        /// `latest~1`, the run before it; `latest~N`; an id or its first characters) [default:
        /// the newest run holding a third of the sheet's costs or more, named when it is not
        /// `latest`]; two: side by side, the first the reference
        #[arg(value_name = "RUN", num_args = 0..=2)]
        runs: Vec<String>,
    },
    /// What the OS costs a program: run a command (or attach to a process) with the kernel
    /// counting every system call, page fault, switch, wait and interrupt of it, and print
    /// its bill: each part's count, time, share of the program's time and price
    #[command(after_help = BILL_HELP)]
    Bill(BillArgs),
    #[command(flatten)]
    Experiment(ExperimentArgs),
}

/// The arguments of `oscost bill`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BillArgs {
    /// A bill already made
    #[command(subcommand)]
    pub saved: Option<BillCommand>,
    /// Attach to this running process (its threads, and its descendants: those already
    /// running and those it starts once attached) instead of starting a command; billing ends
    /// when it exits, at Ctrl-C (which it does not receive), or after --for
    #[arg(long, value_name = "PID", conflicts_with = "command")]
    pub pid: Option<u32>,
    /// With --pid: stop billing after this long (`10s`, `1m`)
    #[arg(long = "for", value_name = "DURATION", requires = "pid",
          value_parser = values::parse_duration)]
    pub for_: Option<std::time::Duration>,
    /// Count each system call at its entry only: cheaper (on a loop of getppid calls the
    /// program ran 1.4–1.6× its untraced time, against 2.4–2.8× timed), but no time per call
    /// and no errors
    #[arg(long)]
    pub count_only: bool,
    /// Count the system calls a second time with perf_event_open and check the probe's count
    /// against it (the check costs about as much again as the probe)
    #[arg(long)]
    pub verify: bool,
    /// How to count: `bpf` (the probe in the kernel; the default; where the kernel refuses
    /// BPF, perf's counts are taken instead and a line says why), `perf` (system calls counted
    /// by name with perf's events on their tracepoints: counts only, no times, faults or
    /// switches beyond the kernel's own accounting), or `none` (no probe: the kernel's own
    /// accounting of the program, getrusage or /proc, at no cost to it)
    #[arg(long, value_name = "MECHANISM", value_enum, default_value_t = values::BillTrace::Bpf)]
    pub trace_with: values::BillTrace,
    /// Price the bill with this run of the history (`latest`, an id) or result file
    /// [default: for each price, the newest run of the history that measured it]
    #[arg(long, value_name = "RUN|FILE")]
    pub prices: Option<String>,
    /// Write the bill here instead of to stderr (the command's stdout and stderr stay its own)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Run the command under this setting: `seccomp=default` installs a container runtime's
    /// default profile (about 300 calls allowed, the rest refused with EPERM, clone3 answered
    /// ENOSYS) with no_new_privs, just before it executes; `seccomp=FILE.json` does the same
    /// with a profile in Docker's JSON format (moby's `default.json` and the like), its rules
    /// chosen for this machine; `container` has it born in new
    /// mount, UTS, IPC, PID, network and cgroup namespaces, as a runtime starts one (root;
    /// the command is its PID namespace's init, its network only a loopback, down);
    /// `cpus=LIST` pins it to those CPUs (`cpus=0`, `cpus=0,1`, `cpus=0-1`; each one oscost
    /// may run on), with sched_setaffinity just before it executes
    #[arg(long, value_name = "SETTING", conflicts_with = "pid",
          value_parser = values::parse_setting)]
    pub under: Option<values::Setting>,
    /// With --under: bill the command this many times plainly and as many under the
    /// setting, in turn, and hold the measured change (of its time on a CPU for a seccomp
    /// profile, of its wall time for a container or one CPU: the median of the rounds'
    /// ratios, with its 95 % CI) against the change predicted from the plain bill and the
    /// setting's measured price; prints the check and the last bill under the setting, saves
    /// nothing
    #[arg(long, value_name = "N", requires = "under",
          value_parser = clap::value_parser!(u32).range(3..=1000))]
    pub rounds: Option<u32>,
    /// The command to run and its arguments, after `--`
    #[arg(last = true, value_name = "COMMAND", required_unless_present = "pid")]
    pub command: Vec<std::ffi::OsString>,
}

/// What `oscost bill` does with a bill already made.
#[derive(Debug, Subcommand)]
pub enum BillCommand {
    /// Print a saved bill again; with --prices, its counts re-priced with another run's
    /// datasheet (another machine, setting or day): each operation's price here and there,
    /// the difference with its 95 % interval, and the total
    #[command(after_help = BILL_SHOW_HELP)]
    Show {
        /// The bill: a run of the history (an id, `latest`) or a file `oscost bill --json`
        /// wrote [default: the history's newest bill]
        #[arg(value_name = "BILL")]
        bill: Option<String>,
        /// Re-price it with this run of the history or result file (with --predict-under:
        /// take the setting's price from it)
        #[arg(long, value_name = "RUN|FILE")]
        prices: Option<String>,
        /// Predict what it would cost under this setting (`seccomp=default`,
        /// `seccomp=FILE.json`, `container`, `cpus=ONE`) from its counts and the setting's
        /// measured price (from --prices, else the history's newest `oscost seccomp`, `oscost
        /// ns` or `oscost switch`; for a profile file, the newest `oscost seccomp --profile` of
        /// a file with the same content), without running it. On one CPU, each of its
        /// wake-ups that crossed CPUs costs a same-CPU wake-up instead; on several, which
        /// cross is the scheduler's choice, and no figure is given
        #[arg(long, value_name = "SETTING", value_parser = values::parse_setting)]
        predict_under: Option<values::Setting>,
    },
}

const BILL_SHOW_HELP: &str = "Examples:
  oscost bill show                          the newest bill of the history, again
  oscost bill show 3f1c2b9e --prices other.json
                                            its counts at another machine's prices

Re-pricing keeps the counts and changes only what they would cost: a line per operation (each
system call, each kind of page fault, switches), priced here (the prices the bill was made
with) and there, their difference with a 95 % interval (the two prices' intervals combined as
independent), and the total over the lines both sides price. Lines only one side prices are
named and left out of the total. It predicts from the datasheets' warm loops: what a program
pays beyond them (cold caches, contention) is in the measured bill, not in a price.";

const BILL_HELP: &str = "Examples:
  oscost bill -- gzip -9 -k big.tar        bill a command (its exit status is oscost's)
  oscost bill --json b.json -- make -j2    and keep it as data (an oscost/2 document)
  oscost bill --count-only -- ./server     the cheaper probe: counts, no time per call
  oscost bill --pid 4242 --for 10s         a running process (and its new children), 10 s
  oscost bill show latest --prices B.json  the newest bill re-priced with another datasheet
  oscost bill --under seccomp=default -- ./server
                                           under a container runtime's default seccomp profile
  oscost bill show --predict-under seccomp=default
                                           the same predicted from the newest plain bill
  oscost bill --under seccomp=profile.json -- ./server
                                           under a seccomp profile in Docker's JSON format
  oscost bill --under seccomp=default --rounds 9 -- ./a.out
                                           the prediction checked: plain and under, in turn
  oscost bill --under container --rounds 9 -- ./a.out
                                           the same in a container's namespaces
  oscost bill --under cpus=0 -- ./server   pinned to CPU 0
  oscost bill show --predict-under cpus=0  its wake-ups across CPUs priced as same-CPU ones

The bill goes to stderr (or --output), so the command's own output is untouched. Each line is
a part of the program's time: user CPU, kernel CPU (system calls by name, interrupts, page
faults and the rest), waiting for a CPU, blocked; the residual is what the parts leave
unexplained. `priced` is the count times this machine's datasheet figure for that operation
(`oscost syscall`, `fault`, `switch` measure them); a price marked ≥ is a floor (the entry and
exit of any call). The kernel's counts need BPF (root) and, for a command, cgroup v2; without
them the bill holds the kernel's own accounting (getrusage) only, and says why.";

/// The arguments of `oscost compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Results to compare: result files (`--json` output), history runs (`latest`,
    /// `latest~N` for the one N runs before it, or an id or its first characters, from
    /// `oscost history list`), or published
    /// baselines (`published:NAME`, listed by `oscost baselines`). Each is compared
    /// against the first. Two bills (`oscost bill`) compare as bills: counts exactly, each
    /// call's cost beyond the kernel histogram's ±10 %. With --group-by, one or more runs, or
    /// none for every run of the history
    #[arg(required_unless_present = "group_by", value_name = "RESULT")]
    pub inputs: Vec<String>,
    /// Compare groups of runs, one column each: `host` (the fleet's name for the host,
    /// else its host name), `kernel`, or any environment field by its JSON path
    /// (`scheduler.preempt_model`); each group's latest run stands for it. Given bills of
    /// one program, its bill a column per group
    #[arg(long, value_name = "FIELD")]
    pub group_by: Option<String>,
    /// With --group-by: the group every other is compared against (default: the first
    /// group in name order)
    #[arg(long, value_name = "NAME", requires = "group_by")]
    pub reference: Option<String>,
    /// With --group-by: how many groups are compared with the reference at once, each
    /// holding its run's document while it is compared (default: the CPUs oscost may use)
    #[arg(long, value_name = "N", requires = "group_by", value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    /// Changes smaller than PCT percent are noise whatever the statistics say: two runs
    /// of one build on one machine differ by several percent, a virtual machine's by more
    #[arg(long, value_name = "PCT", default_value_t = 10.0,
          value_parser = parse_pct)]
    pub threshold: f64,
    /// Also show each difference as time per second at N operations per second (Herder et
    /// al., "MINIX 3: A Highly Reliable, Self-Repairing Operating System", 2006, priced the
    /// 180 ns getpid difference at 10 000 calls a second)
    #[arg(long, value_name = "N", value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Exit with status 1 when any figure is slower by more than PCT percent beyond
    /// noise, to gate a CI pipeline (only figures beyond --threshold count, so a PCT
    /// below it gates at the threshold)
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub fail_above: Option<f64>,
    /// Show only the figures called slower or faster in the terminal table (the summary
    /// still counts every figure; --json and --csv keep every row)
    #[arg(long)]
    pub only_changed: bool,
}

const COMPARE_HELP: &str = "Examples:
  oscost compare before.json after.json
  oscost compare before.json after.json --fail-above 10     exit 1 on a regression
  oscost compare published:minix3-kernel-drivers today.json --rate 10000
  oscost compare latest~1 latest --markdown -               history runs, as Markdown
  oscost compare --group-by host results/*.json             one column per host (docs/fleet.md)
  oscost compare --group-by host bills/*.json               one program's bill, a column per host

Verdicts: faster or slower when the bootstrap 95 % CI of the ratio of medians excludes 1,
Mann-Whitney p < 0.05 once adjusted for every figure compared (Benjamini-Hochberg) and the
change exceeds --threshold; no difference when the whole CI
lies within ±threshold; otherwise too few samples to tell. A published baseline was not
measured here: ratios only, no verdict.";

const STUDY_HELP: &str = "Examples:
  oscost study                           the five studies: who, when, on what, what they measured
  oscost study windows-yield --quick     run one here, print its tables (seconds)
  oscost study qnx-tick --report q.html  its tables and charts in one page
  oscost compare published:qnx-tick latest   every published figure with a counterpart, beside it
  oscost report published:qnx-tick r.json -o r.html   the study's page from a saved run

A study run is an ordinary run of oscost's experiments: it is saved in the history and writes
--json, --report and --svg like any other.";

/// The runs `history list` and `history trend` read: chosen in the store, so that a store of
/// any size costs what is shown.
#[derive(Debug, Args)]
pub struct WindowArgs {
    /// Only runs started since WHEN: a date (2026-11-01), a UTC time (2026-11-01T12:00:00Z)
    /// or an age (7d, 12h, 2weeks)
    #[arg(long, value_name = "WHEN", value_parser = parse_since)]
    pub since: Option<String>,
    /// Every run (of the --since window), not only the newest 100
    #[arg(long)]
    pub all_runs: bool,
}

/// What to do with the history.
#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// The runs in the history, newest first (the newest 100 unless --all-runs), with the host
    /// each ran on; with --json FILE or --csv FILE (`-` for stdout) also as data: run_id,
    /// started_at, saved_at, hostname, oscost_version, kernel, cpu_model, experiments,
    /// case_count
    List {
        #[command(flatten)]
        window: WindowArgs,
    },
    /// A run's machine and tables
    Show {
        /// The run: its id, the first 4 or more characters of it, `latest`, or `latest~N` (N runs
        /// before the latest)
        run: String,
    },
    /// One case's (or derived figure's) median in every run that has it, oldest first, marking
    /// where the machine's environment changed; with --svg FILE also drawn as a line chart
    /// (--svg DIR: into DIR/<case id>.svg)
    Trend {
        /// The case id, as the tables name it (`syscall.getpid`,
        /// `switch.pipe.threads.same.switch_cost`)
        case_id: String,
        #[command(flatten)]
        window: WindowArgs,
    },
    /// A run's full result document (schema oscost/2) on stdout, or into the file of --json
    Export {
        /// The run: its id, the first 4 or more characters of it, `latest`, or `latest~N` (N runs
        /// before the latest)
        run: String,
    },
    /// Result files (written with --json, any schema oscost reads) into the history; a run
    /// already there is left as it is, and one stored with other content is refused by name
    Import {
        /// The result files
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Result files into another store, a PostgreSQL database a fleet shares
    /// (`--to postgres://USER@HOST/DB`) or an SQLite file: one line per file, then `pushed N,
    /// already there M`; a run already there (the same run_id) is left as it is, and one stored
    /// with other content is refused by name
    Push {
        /// The result files
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The store: a postgres:// URL, an SQLite file, or @FILE holding either (default: the
        /// history, as --history, OSCOST_HISTORY or OSCOST_HISTORY_FILE name it)
        #[arg(long, value_name = "URL")]
        to: Option<String>,
    },
    /// Removes a run from the history
    Rm {
        /// The run: its id, the first 4 or more characters of it, `latest`, or `latest~N` (N runs
        /// before the latest)
        run: String,
    },
}

/// `cmd` (not yet built) with the global options a command does not use hidden from its page,
/// its manual page and its completions (`list`, `env` and `datasheet` take no sampling
/// option): see [`uses`]. Such a command gets its own copy of each global
/// option, hidden where unused, which clap then does not propagate over; given anyway, an
/// unused option is still refused in one line.
pub fn hide_unused_options(cmd: clap::Command) -> clap::Command {
    let globals: Vec<clap::Arg> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .cloned()
        .collect();
    hide_below(cmd, "", &globals)
}

fn hide_below(mut cmd: clap::Command, path: &str, globals: &[clap::Arg]) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in names {
        let full = if path.is_empty() {
            name.clone()
        } else {
            format!("{path} {name}")
        };
        cmd = cmd.mut_subcommand(&name, |mut sub| {
            if let Some(used) = uses(&full) {
                for g in globals {
                    let used = g.get_long().is_none_or(|long| {
                        ["quiet", "verbose"].contains(&long)
                            || used.contains(&format!("--{long}").as_str())
                    });
                    let hidden = g.is_hide_set() || !used;
                    // What is left is not the sampling: a heading of its own.
                    sub = sub.arg(g.clone().hide(hidden).help_heading("Global options"));
                }
            }
            hide_below(sub, &full, globals)
        });
    }
    cmd
}

fn experiment_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        REGISTRY
            .iter()
            .map(|e| clap::builder::PossibleValue::new(e.name).hide(e.hidden)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
