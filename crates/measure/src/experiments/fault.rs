//! `fault`: what one page fault costs, by kind, each sample's faults counted by the kernel.
//!
//! A sample maps a fresh region (untimed), touches one byte of each page in a timed pass (every
//! touch a first touch the kernel must serve), then times the same pass again over the pages
//! now present: that second pass is the loop's own cost, subtracted. The region is unmapped
//! after the sample, outside the timing. `getrusage(RUSAGE_THREAD)` counts the minor and major
//! faults of the timed pass alone, so each case carries the faults that really happened per
//! page, and its check fails when they are not what the kind must give.

use crate::context::Context;
use crate::engine::{self, first_occurrences, value_name};
use crate::limits::{Limits, Needs};
use crate::sampler::{self, single_task_check};
use crate::scratch::ScratchDir;
use anyhow::Context as _;
use oscost_model::case::{Case, Check, DerivedSpec, ExperimentOutput, Samples, Unavailable};
use oscost_model::ids::fault as ids;
use oscost_sys::pages::{self, CowChild, Mapping, HUGE_PAGE, PAGE};
use std::io::Write;
use std::os::fd::AsFd;
use std::path::Path;

/// Subcommand name and id prefix.
pub const NAME: &str = ids::NAME;

/// Pages touched per sample by default, and with `--quick`.
const DEFAULT_PAGES: u64 = 1024;
const QUICK_PAGES: u64 = 256;

/// The kernel's default fault-around window (`fault_around_bytes`): a read fault on a cached
/// file maps up to this much of the file around the page.
const FAULT_AROUND_BYTES: u64 = 65536;

/// The kinds of fault.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Kind {
    /// first write to a private anonymous page: a zeroed page is allocated
    AnonWrite,
    /// first read of a private anonymous page: the shared zero page is mapped
    AnonRead,
    /// first read of a private mapping of a cached file (fault-around maps several pages)
    FileRead,
    /// first write to a shared mapping of a cached file
    FileWriteShared,
    /// first write to a page shared copy-on-write with a forked child: the page is copied
    Cow,
    /// first write to a 2 MiB-aligned MADV_HUGEPAGE region: a whole huge page
    Thp,
    /// first read of a file page whose cache was dropped: read from the device
    FileMajor,
}

impl Kind {
    const ALL: [Kind; 7] = [
        Kind::AnonWrite,
        Kind::AnonRead,
        Kind::FileRead,
        Kind::FileWriteShared,
        Kind::Cow,
        Kind::Thp,
        Kind::FileMajor,
    ];

    fn description(self) -> &'static str {
        match self {
            Kind::AnonWrite => "first write to each page of a fresh private anonymous mapping",
            Kind::AnonRead => {
                "first read of each page of a fresh private anonymous mapping (the zero page)"
            }
            Kind::FileRead => {
                "first read of each page of a private mapping of a file in the page cache"
            }
            Kind::FileWriteShared => {
                "first write to each page of a shared mapping of a file in the page cache"
            }
            Kind::Cow => {
                "first write, in the parent, to each page shared copy-on-write with a forked child"
            }
            Kind::Thp => {
                "first write to each 2 MiB of a 2 MiB-aligned MADV_HUGEPAGE anonymous mapping"
            }
            Kind::FileMajor => {
                "first read of each page of a file whose cached pages were dropped \
                 (POSIX_FADV_DONTNEED, MADV_RANDOM: no read-ahead)"
            }
        }
    }

    /// Whether the timed pass writes (else it reads).
    fn writes(self) -> bool {
        matches!(
            self,
            Kind::AnonWrite | Kind::FileWriteShared | Kind::Cow | Kind::Thp
        )
    }

    /// What one operation of the case is.
    fn unit(self) -> &'static str {
        if self == Kind::Thp {
            "2 MiB page"
        } else {
            "page"
        }
    }
}

/// Options of `oscost fault`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Kinds of fault to measure, comma-separated (default: all)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "KIND,...")]
    pub kinds: Vec<Kind>,

    /// 4 KiB pages touched in each sample [default: 1024, with --quick 256]. The huge-page
    /// case touches one 2 MiB page per 128 of these (at least 2), the major-fault case one
    /// page in 16 (at least 16): a read from the device takes far longer
    #[arg(long, value_name = "N", value_parser = parse_pages)]
    pub pages: Option<u64>,

    /// Directory whose file system holds the files of file-read and file-write-shared
    /// [default: the temporary directory, $TMPDIR or /tmp]. Where it is not a tmpfs, both
    /// kinds are also measured on /dev/shm as fault.KIND.tmpfs: a file system's folio size
    /// and fault-around decide how many pages a fault maps
    #[arg(long, value_name = "DIR")]
    #[serde(default)]
    pub dir: Option<std::path::PathBuf>,

    /// Measuring processes the samples are drawn from, one after another, each with its share
    /// (at least 8 each, so fewer with few samples): a process can keep one of two levels of
    /// fault cost for its life, and processes that fall into two modes are said with both
    #[arg(long, value_name = "N", default_value_t = DEFAULT_PROCESSES,
          value_parser = clap::value_parser!(u16).range(1..=64))]
    #[serde(default = "default_processes")]
    pub processes: u16,
}

/// Processes a fault figure is drawn from by default.
const DEFAULT_PROCESSES: u16 = 5;

fn default_processes() -> u16 {
    DEFAULT_PROCESSES
}

/// Where a file kind's file lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The directory of `--dir` (the temporary directory by default), whatever its file system.
    Dir,
    /// A tmpfs (/dev/shm), where the directory is on another file system.
    Tmpfs,
}

/// Whether `kind` maps a cached file (and so is measured per file system).
fn on_a_file(kind: Kind) -> bool {
    matches!(kind, Kind::FileRead | Kind::FileWriteShared)
}

/// At most 4 GiB of pages a sample: more says nothing a smaller sample does not.
const MAX_PAGES: u64 = 1 << 20;

fn parse_pages(s: &str) -> Result<u64, String> {
    engine::parse_pages(s, MAX_PAGES, "a sample")
}

/// What a run measures, resolved once from the options and `--quick` for both the pre-flight
/// check and the run.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    kinds: Vec<Kind>,
    /// `--dir`.
    dir: Option<std::path::PathBuf>,
    /// 4 KiB pages a sample, for the kinds that touch 4 KiB pages.
    pages: u64,
    /// 2 MiB pages a sample of `thp`.
    huge: u64,
    /// Pages a sample of `file-major`.
    major: u64,
}

fn plan(opts: &Options, quick: bool) -> Plan {
    let kinds = if opts.kinds.is_empty() {
        Kind::ALL.to_vec()
    } else {
        first_occurrences(&opts.kinds)
    };
    let pages = opts
        .pages
        .unwrap_or(if quick { QUICK_PAGES } else { DEFAULT_PAGES });
    Plan {
        kinds,
        dir: opts.dir.clone(),
        pages,
        huge: (pages / 128).max(2),
        major: (pages / 16).max(16),
    }
}

impl Plan {
    /// Operations a sample of `kind` times.
    fn ops(&self, kind: Kind) -> u64 {
        match kind {
            Kind::Thp => self.huge,
            Kind::FileMajor => self.major,
            _ => self.pages,
        }
    }

    /// Bytes a sample of `kind` maps.
    fn bytes(&self, kind: Kind) -> u64 {
        if kind == Kind::Thp {
            self.huge * HUGE_PAGE as u64
        } else {
            self.ops(kind) * PAGE as u64
        }
    }

    /// The most memory the run holds at once, KiB: the largest sample's region (twice for a
    /// copy-on-write sample, whose child holds the originals) and the files, all resident
    /// (twice with the copy on /dev/shm).
    fn memory_kib(&self) -> u64 {
        let one = |k: Kind| self.bytes(k) * if k == Kind::Cow { 2 } else { 1 };
        let largest = self.kinds.iter().map(|&k| one(k)).max().unwrap_or(0);
        let copies = if self.kinds.iter().any(|&k| on_a_file(k)) {
            2
        } else {
            1
        };
        let files = copies * self.pages * PAGE as u64;
        (largest + files) / 1024
    }
}

/// Memory left free beyond what the run holds.
const MEMORY_MARGIN_KIB: u64 = 256 * 1024;

fn needs(opts: &Options, quick: bool) -> Needs {
    let p = plan(opts, quick);
    let kib = p.memory_kib();
    Needs {
        what: format!("{NAME} --pages {}", p.pages),
        instead: Some("use a smaller --pages".into()),
        memory_kib: Some((
            kib + MEMORY_MARGIN_KIB,
            format!(
                "{} MiB of touched pages at once and {} MiB left free",
                kib.div_ceil(1024),
                MEMORY_MARGIN_KIB / 1024
            ),
        )),
        tasks: Some((
            3,
            "the measuring process, the coordinator's signal thread and the copy-on-write child"
                .into(),
        )),
        ..Needs::default()
    }
}

/// The page-cache files the file kinds map, in private directories removed on drop.
struct Files {
    _dir: ScratchDir,
    /// Kept in the page cache: `file-read` and `file-write-shared`.
    cached: std::fs::File,
    /// File system of the cached file.
    cached_fs: &'static str,
    /// The same file on /dev/shm, or why not; `None` when no file kind is measured there.
    tmpfs: Option<Result<(ScratchDir, std::fs::File), String>>,
    /// Dropped from the cache before each sample: `file-major`, on a disk-backed file system,
    /// or why there is none; `None` when `file-major` is not measured.
    major: Option<Result<(ScratchDir, std::fs::File, &'static str), String>>,
}

fn filled_file(dir: &Path, name: &str, bytes: u64) -> anyhow::Result<std::fs::File> {
    let path = dir.join(name);
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("creating {}", path.display()))?;
    let chunk = vec![0x5au8; 1 << 16];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])
            .with_context(|| format!("writing {}", path.display()))?;
        left -= n as u64;
    }
    f.sync_data()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(f)
}

/// A directory on a file system with a device behind it, for the major faults: the
/// temporary directory, else /var/tmp; the reason when neither is.
fn disk_dir() -> Result<(std::path::PathBuf, &'static str), String> {
    let mut seen = Vec::new();
    for dir in [std::env::temp_dir(), std::path::PathBuf::from("/var/tmp")] {
        match pages::file_system(&dir) {
            Ok(fs) if !pages::memory_backed(fs) => return Ok((dir, fs)),
            Ok(fs) => seen.push(format!("{} is {fs}", dir.display())),
            Err(e) => seen.push(format!("{}: {e}", dir.display())),
        }
    }
    Err(format!(
        "no temporary directory on a disk-backed file system ({}): a page of a memory-backed \
         file is never read from a device; set TMPDIR to a directory on a disk",
        seen.join(", ")
    ))
}

/// A file of `bytes` on /dev/shm, or why there is none.
fn tmpfs_file(bytes: u64) -> Result<(ScratchDir, std::fs::File), String> {
    let shm = Path::new("/dev/shm");
    match pages::file_system(shm) {
        Ok("tmpfs") => {}
        Ok(fs) => return Err(format!("/dev/shm is {fs}, not a tmpfs")),
        Err(e) => return Err(format!("/dev/shm: {e}")),
    }
    let d = ScratchDir::new_in(shm, "oscost-fault-")
        .map_err(|e| format!("creating a directory in /dev/shm: {e}"))?;
    let f = filled_file(d.path(), "cached", bytes).map_err(|e| format!("{e:#}"))?;
    Ok((d, f))
}

impl Files {
    fn new(p: &Plan) -> anyhow::Result<Files> {
        let dir = match &p.dir {
            Some(base) => ScratchDir::new_in(base, "oscost-fault-").with_context(|| {
                format!(
                    "--dir {}: creating a private directory there (it must be a writable \
                     directory)",
                    base.display()
                )
            })?,
            None => ScratchDir::new("oscost-fault-")
                .context("creating a private temporary directory")?,
        };
        let cached = filled_file(dir.path(), "cached", p.pages * PAGE as u64)?;
        let cached_fs = pages::file_system(dir.path()).unwrap_or("other");
        let tmpfs = (p.kinds.iter().any(|&k| on_a_file(k))).then(|| {
            if cached_fs == "tmpfs" {
                Err(format!(
                    "{} is already a tmpfs: the case without .tmpfs is measured there (--dir on \
                     another file system gives that one's figure)",
                    dir.path().parent().unwrap_or(dir.path()).display()
                ))
            } else {
                tmpfs_file(p.pages * PAGE as u64)
            }
        });
        let major = match p.kinds.contains(&Kind::FileMajor).then(disk_dir) {
            Some(Ok((base, fs))) => {
                let d = ScratchDir::new_in(&base, "oscost-fault-")
                    .with_context(|| format!("creating a directory in {}", base.display()))?;
                let f = filled_file(d.path(), "major", p.major * PAGE as u64)?;
                Some(Ok((d, f, fs)))
            }
            Some(Err(why)) => Some(Err(why)),
            None => None,
        };
        Ok(Files {
            _dir: dir,
            cached,
            cached_fs,
            tmpfs,
            major,
        })
    }
}

/// `AnonHugePages` of this process (`/proc/self/smaps_rollup`), KiB.
fn anon_huge_kib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Why huge pages cannot be asked for here, if they cannot (`enabled` reads `[never]`).
fn thp_refused() -> Option<String> {
    let path = "/sys/kernel/mm/transparent_hugepage/enabled";
    match std::fs::read_to_string(path) {
        Ok(s) if s.contains("[never]") => Some(format!(
            "transparent huge pages are off ({path} reads [never]): no huge page is ever given"
        )),
        Ok(_) => None,
        Err(e) => Some(format!(
            "{path}: {e}: this kernel has no transparent huge pages"
        )),
    }
}

/// One kind's samples and counts as they are taken.
struct Slot {
    kind: Kind,
    place: Place,
    ops: u64,
    fault_ticks: Vec<f64>,
    loop_ticks: Vec<f64>,
    minor: u64,
    major: u64,
    /// Pages already resident when a timed pass began (the cache not dropped, for file-major).
    resident_before: u64,
    /// AnonHugePages growth over the timed passes, KiB (thp).
    huge_kib: u64,
    timed: u64,
}

impl Slot {
    fn new(kind: Kind, place: Place, ops: u64) -> Slot {
        Slot {
            kind,
            place,
            ops,
            fault_ticks: Vec::new(),
            loop_ticks: Vec::new(),
            minor: 0,
            major: 0,
            resident_before: 0,
            huge_kib: 0,
            timed: 0,
        }
    }
}

/// The region a sample of `kind` touches, ready for its timed pass, with the child that holds
/// it copy-on-write (`cow`).
fn prepare(
    kind: Kind,
    place: Place,
    p: &Plan,
    files: &Files,
) -> anyhow::Result<(Mapping, Option<CowChild>)> {
    let bytes = p.bytes(kind) as usize;
    let cached = match (place, &files.tmpfs) {
        (Place::Dir, _) => &files.cached,
        (Place::Tmpfs, Some(Ok((_, f)))) => f,
        (Place::Tmpfs, _) => anyhow::bail!("no file on /dev/shm for {}", case_id(kind, place)),
    };
    Ok(match kind {
        Kind::AnonWrite | Kind::AnonRead => (Mapping::anonymous(bytes)?, None),
        Kind::Thp => (Mapping::huge(bytes)?, None),
        Kind::FileRead => (Mapping::file(cached.as_fd(), bytes, false)?, None),
        Kind::FileWriteShared => (Mapping::file(cached.as_fd(), bytes, true)?, None),
        Kind::Cow => {
            let mut m = Mapping::anonymous(bytes)?;
            m.write_each(PAGE, 1);
            let child = CowChild::fork().context("forking the child that shares the pages")?;
            (m, Some(child))
        }
        Kind::FileMajor => {
            let (_, f, _) = match &files.major {
                Some(Ok(m)) => m,
                Some(Err(why)) => anyhow::bail!("{why}"),
                None => anyhow::bail!("no file for {}", case_id(kind, place)),
            };
            pages::drop_cached(f.as_fd()).context("dropping the file's cached pages")?;
            let m = Mapping::file(f.as_fd(), bytes, false)?;
            m.advise_random()?;
            (m, None)
        }
    })
}

/// One pass over the region: a write or a read of one byte per page (per 2 MiB for thp).
fn pass(kind: Kind, m: &mut Mapping, value: u8) -> u64 {
    let stride = if kind == Kind::Thp { HUGE_PAGE } else { PAGE };
    if kind.writes() {
        m.write_each(stride, value);
        0
    } else {
        m.read_each(stride)
    }
}

/// Takes one sample of `slot` (`record`: keep its figures; else a warm-up).
fn sample(
    ctx: &Context,
    slot: &mut Slot,
    p: &Plan,
    files: &Files,
    record: bool,
) -> anyhow::Result<()> {
    let (kind, place) = (slot.kind, slot.place);
    let (mut m, child) = prepare(kind, place, p, files).with_context(|| {
        format!(
            "mapping {} KiB for {}: use a smaller --pages if a limit (ulimit -v, \
             vm.overcommit_memory) refuses it",
            p.bytes(kind) / 1024,
            case_id(kind, place)
        )
    })?;
    let resident = if kind == Kind::FileMajor {
        m.resident_pages().context("mincore")? as u64
    } else {
        0
    };
    let huge0 = (kind == Kind::Thp).then(anon_huge_kib).flatten();
    let u0 = oscost_sys::spawn::thread_usage();
    let t0 = ctx.clock.now();
    let sum = pass(kind, &mut m, 2);
    let t1 = ctx.clock.now();
    let u1 = oscost_sys::spawn::thread_usage().since(u0);
    let huge1 = (kind == Kind::Thp).then(anon_huge_kib).flatten();
    let t2 = ctx.clock.now();
    let sum2 = pass(kind, &mut m, 3);
    let t3 = ctx.clock.now();
    std::hint::black_box((sum, sum2));
    drop(child);
    drop(m);
    if record {
        slot.fault_ticks.push(t1.wrapping_sub(t0) as f64);
        slot.loop_ticks.push(t3.wrapping_sub(t2) as f64);
        slot.minor += u1.minor_faults;
        slot.major += u1.major_faults;
        slot.resident_before += resident;
        if let (Some(a), Some(b)) = (huge0, huge1) {
            slot.huge_kib += b.saturating_sub(a);
        }
        slot.timed += 1;
    }
    Ok(())
}

fn case_id(kind: Kind, place: Place) -> String {
    match place {
        Place::Dir => ids::Id::Kind(&value_name(&kind)).to_string(),
        Place::Tmpfs => ids::Id::Tmpfs(&value_name(&kind)).to_string(),
    }
}

/// Turns a sampled slot into its case: per-operation times with the loop's own cost taken
/// out, the faults counted per operation and the check the kind must pass.
fn finish(ctx: &Context, s: Slot, files: &Files, threads: Option<u64>) -> Case {
    let ops = s.ops as f64;
    // The loop's own cost is the median of its passes, taken from every sample alike: a pass
    // the host interrupted (tens of ms on a virtual machine) would otherwise make its sample's
    // fault time negative, a figure no fault has and a document its own reader refuses.
    let loop_ticks = sampler::median_of(s.loop_ticks.iter().map(|l| l / ops));
    let per_op: Vec<f64> = s.fault_ticks.iter().map(|f| f / ops - loop_ticks).collect();
    let samples = Samples {
        per_op_ns: per_op.iter().map(|&t| ctx.clock.ticks_to_ns(t)).collect(),
        per_op_ticks: per_op,
        iterations_per_sample: s.ops,
        loop_overhead_ns: ctx.clock.ticks_to_ns(loop_ticks),
    };
    let (kind, place) = (s.kind, s.place);
    let description = match place {
        Place::Dir => kind.description().to_owned(),
        Place::Tmpfs => format!("{}, on a tmpfs (/dev/shm)", kind.description()),
    };
    let mut case = Case::new(case_id(kind, place), description, kind.unit(), samples)
        .param("kind", value_name(&kind))
        .param("pages_per_sample", s.ops)
        .param("cpu", ctx.first_cpu() as u64);
    let timed = (s.timed.max(1) as f64) * ops;
    let (minor, major) = (s.minor as f64 / timed, s.major as f64 / timed);
    let per = if kind == Kind::Thp {
        "2 MiB page"
    } else {
        "page"
    };
    case.counters.insert("minor_faults_per_op".into(), minor);
    case.counters.insert("major_faults_per_op".into(), major);
    let counted = format!(
        "getrusage(RUSAGE_THREAD) around the timed passes: {} minor and {} major faults over {} \
         {per}s",
        s.minor, s.major, timed as u64
    );
    match kind {
        Kind::FileRead | Kind::FileWriteShared => {
            case = case.param(
                "file_system",
                match place {
                    Place::Dir => files.cached_fs,
                    Place::Tmpfs => "tmpfs",
                },
            );
        }
        Kind::FileMajor => {
            if let Some(Ok((_, _, fs))) = &files.major {
                case = case.param("file_system", *fs);
            }
        }
        _ => {}
    }
    let check = match kind {
        Kind::FileRead => {
            let expected = PAGE as f64 / FAULT_AROUND_BYTES as f64;
            Check::near(
                "minor_faults_per_page",
                expected,
                minor,
                expected * 0.5,
                &format!(
                    "{counted}; a read fault on a cached file maps the pages around it that are \
                     in the cache too (fault-around, {} KiB by default), so about one fault per \
                     {} pages",
                    FAULT_AROUND_BYTES / 1024,
                    FAULT_AROUND_BYTES / PAGE as u64
                ),
            )
        }
        Kind::FileWriteShared => Check::at_least(
            "minor_faults_per_page",
            PAGE as f64 / HUGE_PAGE as f64,
            minor,
            0.0,
            &format!(
                "{counted}; a write fault through a shared mapping maps the page, or the whole \
                 cached folio holding it where the page cache keeps large folios, so between \
                 one fault per page and one per 512 pages (a 2 MiB folio)"
            ),
        ),
        Kind::FileMajor => Check::at_least(
            "major_faults_per_page",
            1.0,
            major,
            0.1,
            &format!(
                "{counted}; with the file's cache dropped and read-ahead off every page must be \
                 read from the device ({} pages were resident before the timed passes)",
                s.resident_before
            ),
        ),
        Kind::Thp => Check::near(
            "minor_faults_per_huge_page",
            1.0,
            minor,
            0.05,
            &format!("{counted}; one fault must map the whole 2 MiB"),
        ),
        _ => Check::near(
            "minor_faults_per_page",
            1.0,
            minor,
            0.05,
            &format!("{counted}; every first touch of a page is one fault"),
        ),
    };
    case.checks.push(check);
    if kind == Kind::Thp {
        let given = s.huge_kib as f64 / (HUGE_PAGE as f64 / 1024.0) / timed;
        case.counters
            .insert("huge_pages_given_per_op".into(), given);
        case.checks.push(Check::at_least(
            "huge_pages_given_per_op",
            1.0,
            given,
            0.05,
            &format!(
                "AnonHugePages of /proc/self/smaps_rollup grew by {} KiB over the timed passes: \
                 the kernel gave a huge page for each 2 MiB written (it may refuse one when no \
                 2 MiB of free memory is at hand; the figure is then a 4 KiB fault's)",
                s.huge_kib
            ),
        ));
    }
    if kind != Kind::Cow {
        if let Some(c) = single_task_check(threads) {
            case.checks.push(c);
        }
    }
    case
}

/// The per-fault figure of a kind whose faults map several pages (file-read), and the 4 KiB
/// share of a huge page.
fn derived(cases: &[Case]) -> Vec<DerivedSpec> {
    let mut out = Vec::new();
    for c in cases {
        let flagged = engine::failed_checks(c);
        let minor = c
            .counters
            .get("minor_faults_per_op")
            .copied()
            .unwrap_or(0.0);
        let kind = |k: Kind| c.params.get("kind").and_then(|v| v.as_str()) == Some(&value_name(&k));
        let file = kind(Kind::FileRead) || kind(Kind::FileWriteShared);
        if file && minor > 0.0 {
            out.push(DerivedSpec {
                id: ids::per_fault(&c.id),
                description: "one fault on a cached file, which maps several pages: the time \
                              per page over the faults counted per page"
                    .into(),
                terms: vec![(c.id.clone(), 1.0 / minor)],
                flagged,
            });
        } else if kind(Kind::Thp) {
            out.push(DerivedSpec {
                id: ids::per_4k(&c.id),
                description: "a huge-page fault's time per 4 KiB it maps (beside anon-write)"
                    .into(),
                terms: vec![(c.id.clone(), PAGE as f64 / HUGE_PAGE as f64)],
                flagged,
            });
        }
    }
    out
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Fault;
    const SUMMARY: &'static str =
        "What a page fault costs: anonymous, zero page, file, shared, copy-on-write, huge, major";
    const ABOUT: &'static str = "What a page fault costs, by kind: the first write to a fresh \
anonymous page, the first read (the zero page), the first read of a cached file's page through \
a private mapping (fault-around maps several pages a fault), the first write through a shared \
one, the first write to a page shared copy-on-write with a forked child, the first write to a \
2 MiB huge-page region, and a page read from the device after the file's cache was dropped.

Each sample maps a fresh region outside the timing, touches one byte of each page in a timed \
pass, and times the same pass again over the pages now present: the loop's own cost, \
subtracted. The minor and major faults of the timed passes are counted with \
getrusage(RUSAGE_THREAD) and checked against what the kind must give; the huge-page case also \
checks that the kernel really gave huge pages (AnonHugePages). The two cached-file kinds run on \
the file system of --dir (the temporary directory by default) and, where that is not a tmpfs, \
again on /dev/shm (fault.KIND.tmpfs): where the page cache keeps large folios one shared write \
fault maps many pages, on tmpfs one; each case records its file system and faults per page. Runs in one single-threaded \
process pinned to one CPU.\n\nTakes about 2 s; --quick about 0.3 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    const WARMS_UP_BY_COUNT: bool = true;
    const SUITE_ARGS: &'static [&'static str] =
        &["--kinds", "anon-write,file-read,cow,thp", "--pages", "512"];
    const QUICK_SUITE_ARGS: &'static [&'static str] = &["--kinds", "anon-write,file-read,cow"];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }

    fn processes(&self) -> usize {
        usize::from(self.processes)
    }

    fn preflight(&self, quick: bool, limits: &Limits) -> anyhow::Result<()> {
        limits.check(&needs(self, quick))
    }
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    let p = plan(opts, ctx.quick);
    ctx.pin_first_cpu()?;
    let files = Files::new(&p)?;
    let mut out = ExperimentOutput::default();
    let mut slots = Vec::new();
    for &k in &p.kinds {
        let refused = match k {
            Kind::Thp => thp_refused(),
            Kind::FileMajor => files.major.as_ref().and_then(|m| m.as_ref().err().cloned()),
            _ => None,
        };
        match refused {
            Some(reason) => out.unavailable.push(Unavailable {
                id: case_id(k, Place::Dir),
                description: k.description().into(),
                reason,
            }),
            None => slots.push(Slot::new(k, Place::Dir, p.ops(k))),
        }
        if on_a_file(k) {
            match &files.tmpfs {
                Some(Ok(_)) => slots.push(Slot::new(k, Place::Tmpfs, p.ops(k))),
                Some(Err(reason)) => out.unavailable.push(Unavailable {
                    id: case_id(k, Place::Tmpfs),
                    description: format!("{}, on a tmpfs", k.description()),
                    reason: reason.clone(),
                }),
                None => {}
            }
        }
    }
    ctx.progress
        .start((ctx.sampler.samples * slots.len()) as u64, NAME);
    let (cut, threads) = sampler::warm_then_rounds(ctx, slots.len(), |k, record| {
        if record {
            sample(ctx, &mut slots[k], &p, &files, false)?;
        }
        sample(ctx, &mut slots[k], &p, &files, record)
    })?;
    ctx.progress.finish();
    for s in slots {
        let mut c = finish(ctx, s, &files, threads);
        if let Some(w) = &cut {
            c.warnings.push(w.clone());
        }
        out.cases.push(c);
    }
    out.derived = derived(&out.cases);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::testing;

    fn opts(extra: &[&str]) -> Options {
        engine::defaults(extra)
    }

    #[test]
    fn the_huge_page_kind_is_the_one_report_scales() {
        assert_eq!(value_name(&Kind::Thp), ids::THP);
    }

    #[test]
    fn plans_follow_the_options() {
        let all = plan(&opts(&[]), false);
        assert_eq!(all.kinds, Kind::ALL);
        assert_eq!((all.pages, all.huge, all.major), (1024, 8, 64));
        let quick = plan(&opts(&[]), true);
        assert_eq!((quick.pages, quick.huge, quick.major), (256, 2, 16));
        let some = plan(
            &opts(&["--kinds", "cow,cow,anon-read", "--pages", "8"]),
            false,
        );
        assert_eq!(some.kinds, [Kind::Cow, Kind::AnonRead]);
        assert_eq!(some.bytes(Kind::Cow), 8 * 4096);
        assert_eq!(some.memory_kib(), (2 * 8 * 4096 + 8 * 4096) / 1024);
    }

    #[test]
    fn bad_page_counts_are_refused_by_name() {
        assert!(parse_pages("0").unwrap_err().contains("at least one page"));
        assert!(parse_pages("x").unwrap_err().contains("not a number"));
        assert!(parse_pages("99999999").unwrap_err().contains("at most"));
        let cmd =
            <Options as clap::Args>::augment_args(clap::Command::new("t").no_binary_name(true));
        assert!(cmd.try_get_matches_from(["--pages", "0"]).is_err());
    }

    #[test]
    fn a_size_beyond_memory_is_refused_before_anything_runs() {
        let limits = Limits {
            mem_available_kib: Some(64 * 1024),
            ..Limits::default()
        };
        let e = engine::Experiment::preflight(&opts(&["--pages", "1048576"]), false, &limits)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--pages 1048576"), "{e}");
    }

    #[test]
    fn a_tiny_run_counts_one_fault_a_page_where_it_must() {
        testing::with_tiny_ctx(|ctx| {
            let o = opts(&[
                "--kinds",
                "anon-write,anon-read,file-read,file-write-shared,cow,file-major",
                "--pages",
                "64",
            ]);
            let out = run(&o, ctx).unwrap();
            let measured = out.cases.len() + out.unavailable.len();
            // The two file kinds also on /dev/shm (or said why not).
            assert_eq!(measured, 8);
            for c in &out.cases {
                assert_eq!(
                    c.samples.iterations_per_sample,
                    if c.id == "fault.file-major" { 16 } else { 64 }
                );
                assert!(
                    c.samples.per_op_ns.len() >= sampler::MIN_SAMPLES,
                    "{}",
                    c.id
                );
                // Every pass touched pages not mapped yet: it faulted at least once.
                let faults = c.counters["minor_faults_per_op"] + c.counters["major_faults_per_op"];
                assert!(faults > 0.0, "{}: {faults} faults per page", c.id);
                let check = &c.checks[0];
                match c.id.as_str() {
                    "fault.anon-write"
                    | "fault.anon-read"
                    | "fault.cow"
                    | "fault.file-write-shared"
                    | "fault.file-write-shared.tmpfs" => {
                        assert!(check.passed, "{}: {check:?}", c.id);
                        assert!(c.samples.per_op_ns.iter().all(|&v| v > 0.0), "{}", c.id);
                    }
                    // Fault-around maps several pages a fault: fewer faults than pages.
                    "fault.file-read" | "fault.file-read.tmpfs" => {
                        assert!(check.counted < 0.5, "{check:?}")
                    }
                    "fault.file-major" => assert!(check.counted > 0.5, "{check:?}"),
                    other => panic!("{other}"),
                }
            }
            let tmpfs = |id: &str| out.cases.iter().find(|c| c.id == id);
            if let Some(c) = tmpfs("fault.file-read.tmpfs") {
                assert_eq!(c.params["file_system"], "tmpfs");
                assert!(tmpfs("fault.file-write-shared.tmpfs").is_some());
            }
            let derived: Vec<&str> = out.derived.iter().map(|d| d.id.as_str()).collect();
            let on_tmpfs = if tmpfs("fault.file-read.tmpfs").is_some() {
                vec![
                    "fault.file-read.per_fault",
                    "fault.file-read.tmpfs.per_fault",
                    "fault.file-write-shared.per_fault",
                    "fault.file-write-shared.tmpfs.per_fault",
                ]
            } else {
                vec![
                    "fault.file-read.per_fault",
                    "fault.file-write-shared.per_fault",
                ]
            };
            assert_eq!(derived, on_tmpfs);
        });
    }

    #[test]
    fn a_directory_on_a_tmpfs_has_no_second_tmpfs_case_and_says_why() {
        if pages::file_system(Path::new("/dev/shm")).ok() != Some("tmpfs") {
            return crate::skip::skip("needs /dev/shm on a tmpfs");
        }
        testing::with_tiny_ctx(|ctx| {
            let o = opts(&["--kinds", "file-read", "--pages", "32", "--dir", "/dev/shm"]);
            let out = run(&o, ctx).unwrap();
            assert_eq!(out.cases.len(), 1);
            assert_eq!(out.cases[0].params["file_system"], "tmpfs");
            assert_eq!(out.unavailable[0].id, "fault.file-read.tmpfs");
            assert!(out.unavailable[0].reason.contains("already a tmpfs"));
            let o = opts(&["--kinds", "file-read", "--dir", "/nonexistent/x"]);
            let e = format!("{:#}", run(&o, ctx).unwrap_err());
            assert!(e.contains("--dir /nonexistent/x"), "{e}");
        });
    }
}
