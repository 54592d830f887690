//! `cargo xtask vs NAME…`: holds an oscost experiment against its independent reference (a C
//! program in `benches/`, or a peer tool: perf, cyclictest, lmbench), in interleaved rounds on
//! pinned CPUs (the reference then oscost, oscost first in every second round), and prints
//! each round's pairs and, per case, both medians, the median ratio oscost / reference and the
//! per-round ratios. `--alternate` runs the cases that drift between sittings (across CPUs,
//! `net`'s connections and two of `fault`'s kinds) with both programs started once and their
//! samples taken in turn ([`conduct`]). `--smoke` runs
//! every entry once at a tiny size to prove it still pairs, and counts an entry this machine
//! cannot run (no root, one CPU, a peer tool missing) as skipped with its reason: what CI runs.
//! A measurement, not a test: the ratios never fail it.

mod conduct;
mod entries;
mod entry;
mod run;
mod setup;
mod table;
mod tool;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _};
use clap::Parser;

use entry::{expand, Cpus, Entry, Needs, Reference, Run, Slots};
use run::Figures;
use table::Pairs;

/// The harness's options.
#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask vs",
    about = "Hold oscost's figures against independent references (the C programs in benches/, \
             perf, cyclictest, lmbench), side by side",
    after_help = "Run it alone on an idle machine: two benchmarks at once spoil both.\n\
                  Examples:\n  cargo xtask vs --list\n  cargo xtask vs net --rounds 7\n  \
                  cargo xtask vs net signal --alternate\n  cargo xtask vs all --smoke"
)]
struct Args {
    /// References to run, by name, or `all`.
    names: Vec<String>,
    /// Name every reference and what it holds.
    #[arg(long)]
    list: bool,
    /// Interleaved rounds (each a fresh pair of runs).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// CPU A (the measuring task), or A,B (B for the partner of a two-CPU reference)
    /// [default: the last allowed CPU for one, the first and last for two].
    #[arg(long, value_name = "A[,B]")]
    cpus: Option<String>,
    /// Fewer samples on both sides: rough, not a figure to quote.
    #[arg(long)]
    quick: bool,
    /// One round of every entry at a tiny size (and one alternated case where an entry has
    /// them): proves each still builds, runs and pairs.
    #[arg(long)]
    smoke: bool,
    /// Hold the entry's cases that drift between sittings (across CPUs, `net`'s connections,
    /// `fault`'s thp and anon-read)
    /// with the two programs' samples taken in turn.
    #[arg(long)]
    alternate: bool,
    /// Run the C program a second time in every round and print its second run over its
    /// first: the band the reference moves by against itself.
    #[arg(long)]
    control: bool,
    /// Hold /dev/cpu_dma_latency at 0 for the whole run (idle CPUs poll instead of halting)
    /// and tell oscost so (needs root).
    #[arg(long)]
    idle_poll: bool,
    /// The oscost binary to hold [default: built with `cargo build --release`].
    #[arg(long, value_name = "FILE")]
    oscost: Option<PathBuf>,
}

/// Runs `cargo xtask vs` with `args` (after `vs`).
pub fn main(args: Vec<String>) -> ExitCode {
    let args = match Args::try_parse_from(std::iter::once("vs".to_string()).chain(args)) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    if args.list {
        let w = entries::ENTRIES
            .iter()
            .map(|e| e.name.len())
            .max()
            .unwrap_or(0);
        for e in entries::ENTRIES {
            let alt = if e.alternate.is_empty() {
                ""
            } else {
                " [--alternate]"
            };
            println!("{:<w$} {}{alt}", e.name, e.about);
        }
        return ExitCode::SUCCESS;
    }
    match run_all(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("xtask vs: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Removes the scratch directory however the run ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// This process's allowed CPUs and whether it runs as root, from /proc/self/status.
fn allowed_and_root() -> anyhow::Result<(Vec<usize>, bool)> {
    let status = std::fs::read_to_string("/proc/self/status").context("/proc/self/status")?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .unwrap_or("")
    };
    let cpus = oscost_model::cpulist::parse(field("Cpus_allowed_list:"))
        .map_err(|e| anyhow::anyhow!("Cpus_allowed_list: {e}"))?;
    let root = field("Uid:").split_whitespace().nth(1) == Some("0");
    Ok((cpus, root))
}

fn run_all(args: &Args) -> anyhow::Result<bool> {
    let chosen: Vec<&Entry> =
        if args.names.iter().any(|n| n == "all") || (args.smoke && args.names.is_empty()) {
            entries::ENTRIES.iter().collect()
        } else if args.names.is_empty() {
            bail!("name a reference (`cargo xtask vs --list` names them) or `all`");
        } else {
            args.names
                .iter()
                .map(|n| {
                    entries::find(n).with_context(|| {
                        let names: Vec<&str> = entries::ENTRIES.iter().map(|e| e.name).collect();
                        format!("no reference called {n:?}; there are: {}", names.join(", "))
                    })
                })
                .collect::<anyhow::Result<_>>()?
        };
    let (allowed, root) = allowed_and_root()?;
    let chosen_cpus = match &args.cpus {
        Some(list) => {
            let v = oscost_model::cpulist::parse(list)
                .map_err(|e| anyhow::anyhow!("--cpus {list}: {e}"))?;
            if let Some(c) = v.iter().find(|c| !allowed.contains(c)) {
                bail!("--cpus {list}: CPU {c} is not one this process may run on");
            }
            v
        }
        None => Vec::new(),
    };
    let _qos = if args.idle_poll {
        Some(hold_idle_poll()?)
    } else {
        None
    };
    let root_dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).to_path_buf();
    let scratch = Scratch(std::env::temp_dir().join(format!("oscost-vs-{}", std::process::id())));
    std::fs::create_dir_all(&scratch.0)?;
    let bin = run::oscost_binary(args.oscost.as_deref(), &root_dir)?;
    // A stop request (Ctrl-C reaches the running programs too, which end) only sets a flag
    // here, so the entry's setup and the scratch directory are taken down before the harness
    // ends: a tmpfs mounted for `fs` must not outlive it.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(signal, std::sync::Arc::clone(&stop))
            .context("cannot install the stop handler")?;
    }
    let mut ok = true;
    let (mut ran, mut skipped, mut failed) = (0, Vec::new(), Vec::new());
    for entry in chosen {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            println!("\nstopped: the remaining references are not run");
            ok = false;
            break;
        }
        let (a, b) = match (entry.cpus, chosen_cpus.as_slice(), allowed.as_slice()) {
            (_, [a, b, ..], _) => (*a, *b),
            (Cpus::One, [a], _) => (*a, *a),
            (Cpus::Two, [a], all) => match all.iter().rev().find(|&c| c != a) {
                Some(b) => (*a, *b),
                None => (*a, *a),
            },
            (Cpus::One, [], all) => (*all.last().unwrap_or(&0), *all.last().unwrap_or(&0)),
            (Cpus::Two, [], all) => (*all.first().unwrap_or(&0), *all.last().unwrap_or(&0)),
        };
        println!("\n== {}: {}", entry.name, entry.about);
        if let Some(reason) = lacks(entry, a, b, root) {
            println!("skipped: {reason}");
            skipped.push(format!("{} ({reason})", entry.name));
            continue;
        }
        let dir = scratch.0.join(entry.name);
        std::fs::create_dir_all(&dir)?;
        let quick = args.quick || args.smoke;
        let slots = Slots {
            a,
            b,
            samples: if args.smoke {
                5
            } else {
                entry.c_samples[usize::from(quick)]
            },
            tmp: dir.display().to_string(),
            oscost: bin.display().to_string(),
            quick,
        };
        let mut side = Side {
            entry,
            bin: &bin,
            slots,
            smoke: args.smoke,
            paced: false,
            idle_poll: args.idle_poll,
            root,
            dir: &dir,
        };
        let rounds = if args.smoke { 1 } else { args.rounds };
        let result = (|| -> anyhow::Result<()> {
            let c_bin = match entry.reference {
                Reference::C(source) => Some(run::build_c(entry, source, &root_dir, &dir)?),
                Reference::Tool(_) => None,
            };
            let c_bin = c_bin.as_deref();
            let _made = setup::Made::make(entry.setup, &dir, &bin, a)?;
            let mode = if args.smoke {
                "SMOKE: tiny, not a figure".to_string()
            } else if quick {
                "QUICK: rough, not a figure to quote".to_string()
            } else {
                "standard sampling".to_string()
            };
            let cpus = if entry.cpus == Cpus::Two {
                format!("CPUs {a} and {b}")
            } else {
                format!("CPU {a}")
            };
            let idle = if args.idle_poll {
                "/dev/cpu_dma_latency held at 0"
            } else {
                "idle CPUs as found"
            };
            if !args.alternate || args.smoke {
                println!(
                    "{cpus}, {rounds} interleaved rounds ({mode}), {idle}; ratio = oscost / {}",
                    entry.label()
                );
                let (pairs, again) = side.rounds(c_bin, entry.runs, rounds, args.control)?;
                println!("\n{}", pairs.table(entry.show));
                if args.control {
                    println!(
                        "the {} reference's second run over its first, each round (--control):",
                        entry.label()
                    );
                    println!("{}", again.table(&[]));
                }
            }
            if args.alternate || args.smoke {
                if entry.alternate.is_empty() {
                    if args.alternate {
                        println!(
                            "no case of {} alternates (none drifts between sittings)",
                            entry.name
                        );
                    }
                    return Ok(());
                }
                let cases = if args.smoke {
                    &entry.alternate[..1]
                } else {
                    entry.alternate
                };
                println!(
                    "{cpus}, {rounds} rounds, each one case with both programs' samples taken in turn ({mode}), {idle}"
                );
                let mut pairs = Pairs::labelled([entry.label(), "oscost"]);
                side.paced = true;
                for run in cases {
                    side.alternated(c_bin, run, rounds, &mut pairs)?;
                }
                println!("\n{}", pairs.table(entry.show));
            }
            Ok(())
        })();
        match result {
            Ok(()) => ran += 1,
            Err(e) => {
                println!("FAILED: {e:#}");
                failed.push(entry.name);
                ok = false;
            }
        }
        let _ = std::io::stdout().flush();
    }
    // A reference that could not run here is counted apart, with its reason: never as paired.
    println!(
        "\nvs: {ran} ran, {} skipped, {} failed",
        skipped.len(),
        failed.len()
    );
    for s in &skipped {
        println!("  skipped: {s}");
    }
    if !failed.is_empty() {
        println!("  failed: {}", failed.join(", "));
    }
    Ok(ok)
}

/// Why `entry` cannot run here on CPUs `a` and `b` (`root`: the harness runs as root), or
/// `None` when it can.
fn lacks(entry: &Entry, a: usize, b: usize, root: bool) -> Option<String> {
    if entry.cpus == Cpus::Two && a == b {
        return Some(format!("needs two CPUs, and only CPU {a} is usable"));
    }
    entry.needs.iter().find_map(|need| match *need {
        Needs::Root => (!root).then(|| "needs root".to_string()),
        Needs::Tool(program, from) => tool::on_path(program)
            .is_none()
            .then(|| format!("needs {program}, not found on PATH ({from})")),
    })
}

/// What running one entry's sides needs.
struct Side<'a> {
    entry: &'a Entry,
    bin: &'a Path,
    slots: Slots,
    smoke: bool,
    /// Running alternated: oscost takes the C side's number of samples.
    paced: bool,
    idle_poll: bool,
    /// The harness runs as root: runs that need it are not left out.
    root: bool,
    dir: &'a Path,
}

impl Side<'_> {
    fn pin(&self) -> Option<usize> {
        self.entry.taskset.then_some(self.slots.a)
    }

    /// oscost's command for `run`, writing its document to `json`.
    fn oscost(&self, run: &Run, json: &Path) -> std::process::Command {
        let s = &self.slots;
        let cpus = match self.entry.cpus {
            Cpus::One => s.a.to_string(),
            Cpus::Two => format!("{},{}", s.a, s.b),
        };
        let mut args = vec![
            "--cpus".to_string(),
            cpus,
            "--quiet".into(),
            "--no-save".into(),
        ];
        args.extend(expand(run.oscost, s));
        // An entry whose oscost run is always quick (the controls) names it once.
        if s.quick && !args.iter().any(|a| a == "--quick") {
            args.push("--quick".into());
        }
        if self.smoke {
            args.extend([
                "--samples".into(),
                "5".into(),
                "--min-runs".into(),
                "5".into(),
            ]);
        }
        if self.idle_poll && self.entry.idle_poll {
            args.push("--idle-poll".into());
        }
        args.extend(["--json".into(), json.display().to_string()]);
        run::command(self.bin, &args, self.pin())
    }

    fn c_args(&self, invocation: &[&str]) -> Vec<String> {
        let mut args = expand(invocation, &self.slots);
        if self.slots.quick {
            args.extend(expand(self.entry.c_quick, &self.slots));
        }
        args
    }

    /// The reference's figures for `run`: the C program's (`c_bin`) or the peer tool's;
    /// `oscost` is the same round's oscost run, whose parameters fill a C template's
    /// `{param:NAME}`.
    fn run_c(
        &self,
        c_bin: Option<&Path>,
        run: &Run,
        oscost: &run::Measured,
    ) -> anyhow::Result<Figures> {
        let (Reference::C(source), Some(c_bin)) = (self.entry.reference, c_bin) else {
            let Reference::Tool(tool) = self.entry.reference else {
                bail!("the C reference was not built");
            };
            return tool::run(&tool, run.tool, &self.slots);
        };
        let mut figures = Figures::new();
        for invocation in run.c {
            let args = fill_params(self.c_args(invocation), &oscost.params)?;
            let cmd = run::command(c_bin, &args, self.pin());
            figures.extend(run::parse_c(&run::output(cmd, source)?)?);
        }
        Ok(figures)
    }

    fn run_oscost(&self, run: &Run, json: &Path) -> anyhow::Result<run::Measured> {
        run::output(self.oscost(run, json), "oscost")?;
        let text = std::fs::read_to_string(json).with_context(|| format!("{}", json.display()))?;
        run::parse_oscost(&text, self.entry.read)
    }

    /// `run`'s reference started `after` (a template, ms) into oscost's run and ended before
    /// it (perf counting through a window of oscost's traced pass): both sides' figures.
    fn during(
        &self,
        c_bin: Option<&Path>,
        run: &Run,
        json: &Path,
        after: &str,
    ) -> anyhow::Result<(Figures, run::Measured)> {
        let ms: u64 = expand(&[after], &self.slots)
            .concat()
            .parse()
            .with_context(|| format!("not a number of ms: {after:?}"))?;
        let mut oscost = self
            .oscost(run, json)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .context("cannot start oscost")?;
        std::thread::sleep(std::time::Duration::from_millis(ms));
        let c = self.run_c(c_bin, run, &run::Measured::default());
        if c.is_err() {
            let _ = oscost.kill();
        }
        let out = oscost.wait_with_output()?;
        let c = c?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            bail!("oscost failed ({}): {}", out.status, err.trim());
        }
        let text = std::fs::read_to_string(json).with_context(|| format!("{}", json.display()))?;
        Ok((c, run::parse_oscost(&text, self.entry.read)?))
    }

    /// `rounds` rounds of every run, C first in odd rounds and oscost first in even ones;
    /// with `control`, the C program again after each pair, held against its first run.
    fn rounds(
        &self,
        c_bin: Option<&Path>,
        runs: &[Run],
        rounds: u32,
        control: bool,
    ) -> anyhow::Result<(Pairs, Pairs)> {
        let label = self.entry.label();
        let mut pairs = Pairs::labelled([label, "oscost"]);
        let again_label = format!("{label} again");
        let mut again = Pairs::labelled([label, &again_label]);
        let given = runs.len();
        let runs: Vec<&Run> = runs.iter().filter(|r| self.root || !r.root).collect();
        if runs.len() < given {
            println!("not root: the runs that need root (SCHED_FIFO) are left out");
        }
        for round in 1..=rounds {
            eprintln!("round {round} of {rounds}...");
            let mut c_all = Figures::new();
            let mut o_all = Figures::new();
            for (k, run) in runs.iter().enumerate() {
                let json = self.dir.join(format!("o{round}.{k}.json"));
                // A C run that takes a parameter from oscost's document runs after it always.
                let (c, o) = if let Some(after) = run.during {
                    self.during(c_bin, run, &json, after)?
                } else if round % 2 == 1 && !takes_params(run) {
                    let c = self.run_c(c_bin, run, &run::Measured::default())?;
                    (c, self.run_oscost(run, &json)?)
                } else {
                    let o = self.run_oscost(run, &json)?;
                    (self.run_c(c_bin, run, &o)?, o)
                };
                let (c, o_figures) = (run.keep(c), run.keep(o.figures.clone()));
                for line in pairs.add_round(
                    round as usize,
                    &c,
                    &o_figures,
                    &o.counters,
                    self.entry.show,
                    None,
                ) {
                    println!("{line}");
                }
                // A reference that runs inside oscost's run has no second run of its own.
                if control && run.during.is_none() {
                    let c2 = run.keep(self.run_c(c_bin, run, &o)?);
                    for line in
                        again.add_round(round as usize, &c, &c2, &Default::default(), &[], None)
                    {
                        println!("{line}");
                    }
                }
                c_all.extend(c);
                o_all.extend(o_figures);
            }
            // Figures derived from the whole round, once both sides have all of theirs.
            let Some(derive) = self.entry.derive else {
                continue;
            };
            let (c_new, o_new) = (derive(&c_all), derive(&o_all));
            for line in pairs.add_round(
                round as usize,
                &c_new,
                &o_new,
                &Default::default(),
                &[],
                None,
            ) {
                println!("{line}");
            }
        }
        if pairs.len() == 0 {
            bail!("no case paired: the two sides measured no case of the same id");
        }
        Ok((pairs, again))
    }

    /// `rounds` rounds of one case with the two programs' samples in turn.
    fn alternated(
        &self,
        c_bin: Option<&Path>,
        run: &Run,
        rounds: u32,
        pairs: &mut Pairs,
    ) -> anyhow::Result<()> {
        let before = pairs.len();
        for round in 1..=rounds {
            let dir = self.dir.join(format!(
                "alt{round}-{}",
                // Only letters, digits, `.` and `-`: the FIFOs' paths go in OSCOST_PACE as
                // GO:DONE, where a template's `{q:…}` would put a colon.
                run.oscost.join("-").replace(
                    |c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'),
                    "_"
                )
            ));
            std::fs::create_dir_all(&dir)?;
            let json = dir.join("o.json");
            let [c_args] = run.c else {
                bail!("an alternated case runs the C program once");
            };
            if takes_params(run) {
                bail!("an alternated case cannot wait for oscost's parameters");
            }
            let Some(c_bin) = c_bin else {
                bail!("only a C reference alternates");
            };
            let c_cmd = run::command(c_bin, &self.c_args(c_args), self.pin());
            let first = usize::from(round % 2 == 0);
            let done = conduct::alternate([c_cmd, self.oscost(run, &json)], first, &dir)?;
            let c = run::parse_c(&done.stdout[0])?;
            let text =
                std::fs::read_to_string(&json).with_context(|| format!("{}", json.display()))?;
            let o = run::parse_oscost(&text, self.entry.read)?;
            for line in pairs.add_round(
                round as usize,
                &run.keep(c),
                &run.keep(o.figures),
                &o.counters,
                self.entry.show,
                None,
            ) {
                println!(
                    "{line}  (turns C {} oscost {})",
                    done.turns[0], done.turns[1]
                );
            }
        }
        if pairs.len() == before {
            bail!("{}: no case paired", run.oscost.join(" "));
        }
        Ok(())
    }
}

/// Whether `run`'s C program takes a parameter of oscost's document (`{param:NAME}`).
fn takes_params(run: &Run) -> bool {
    run.c
        .iter()
        .flat_map(|i| i.iter())
        .any(|a| a.contains("{param:"))
}

/// `args` with each `{param:NAME}` replaced by oscost's experiment parameter NAME; an
/// argument that is the placeholder alone and whose parameter is a list becomes one argument
/// per item (the periods the machine could keep, say).
fn fill_params(
    args: Vec<String>,
    params: &std::collections::BTreeMap<String, String>,
) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        let Some((before, rest)) = a.split_once("{param:") else {
            out.push(a);
            continue;
        };
        let Some((name, after)) = rest.split_once('}') else {
            bail!("unclosed {{param:}} in {a:?}");
        };
        let value = params
            .get(name)
            .with_context(|| format!("oscost's document has no parameter {name}"))?;
        match serde_json::from_str::<Vec<serde_json::Value>>(value) {
            Ok(items) if before.is_empty() && after.is_empty() => {
                out.extend(items.iter().map(|v| v.to_string()));
            }
            _ => out.push(format!("{before}{value}{after}")),
        }
    }
    Ok(out)
}

/// Holds /dev/cpu_dma_latency at 0 while the returned file is open.
fn hold_idle_poll() -> anyhow::Result<std::fs::File> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")
        .context("--idle-poll: cannot open /dev/cpu_dma_latency (needs root)")?;
    f.write_all(&0i32.to_ne_bytes())?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_of_oscost_s_document_fills_its_placeholder_or_is_named_missing() {
        let params = [("work_iterations".to_string(), "123456".to_string())].into();
        let args = vec![
            "{param:work_iterations}".into(),
            "-n{param:work_iterations}x".into(),
        ];
        assert_eq!(fill_params(args, &params).unwrap(), ["123456", "-n123456x"]);
        let list = [("periods_ns".to_string(), "[1000000,200000]".to_string())].into();
        let args = vec!["a".into(), "{param:periods_ns}".into(), "z".into()];
        assert_eq!(
            fill_params(args, &list).unwrap(),
            ["a", "1000000", "200000", "z"]
        );
        let e = fill_params(vec!["{param:other}".into()], &params).unwrap_err();
        assert!(e.to_string().contains("no parameter other"), "{e}");
        let tick = entries::find("tick").unwrap();
        assert!(takes_params(&tick.runs[0]));
        assert!(!takes_params(&entries::find("mmap").unwrap().runs[0]));
    }
}
