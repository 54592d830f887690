//! `mmap`: what mapping and unmapping memory, and reading and writing a cached file, cost by
//! size, at LEBench's sizes (Xiang (Jenny) Ren et al., "An Analysis of Performance Evolution
//! of Linux's Core Operations", SOSP 2019: 1, 10, 1 000 and 10 000 pages).
//!
//! A sample is a batch of the same operation at one size between two counter reads: `mmap` of
//! K untouched private anonymous regions, then `munmap` of the same K (the untouched unmap),
//! or `munmap` of K regions whose every page was written outside the timing, or K `pread`s or
//! `pwrite`s of the whole size at offset 0 of a file kept in the page cache. The kernel's view
//! is read around each batch: the address space grew and shrank by what was mapped (`VmSize`),
//! the touched regions' pages were freed (`VmRSS`), the file stayed cached (`mincore`).

use crate::context::Context;
use crate::engine::{self, first_occurrences};
use crate::limits::{Limits, Needs};
use crate::sampler::{self, single_task_check};
use crate::scratch::ScratchDir;
use anyhow::Context as _;
use oscost_model::case::{Case, Check, ExperimentOutput, Samples};
use oscost_model::ids::mmap as ids;
use oscost_sys::buf::PageBuffer;
use oscost_sys::calls;
use oscost_sys::pages::{Mapping, PAGE};
use std::io::Write;
use std::os::fd::AsFd;

/// Subcommand name and id prefix.
pub const NAME: &str = ids::NAME;

/// LEBench's sizes, pages.
const DEFAULT_PAGES: &[u64] = &[1, 10, 1000, 10000];

/// The operations.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Op {
    /// mmap of an untouched private anonymous region
    Mmap,
    /// munmap of an untouched region
    Munmap,
    /// munmap of a region whose every page was written
    MunmapTouched,
    /// pread of the whole size from a file in the page cache
    Read,
    /// pwrite of the whole size to a file in the page cache
    Write,
}

impl Op {
    const ALL: [Op; 5] = [Op::Mmap, Op::Munmap, Op::MunmapTouched, Op::Read, Op::Write];

    fn description(self, pages: u64) -> String {
        let kib = pages * PAGE as u64 / 1024;
        match self {
            Op::Mmap => format!("mmap of {kib} KiB of private anonymous memory, untouched"),
            Op::Munmap => format!("munmap of {kib} KiB of private anonymous memory, untouched"),
            Op::MunmapTouched => format!(
                "munmap of {kib} KiB of private anonymous memory, every page written before"
            ),
            Op::Read => format!(
                "pread of {kib} KiB at offset 0 of a file in the page cache into a \
                 page-aligned buffer"
            ),
            Op::Write => format!(
                "pwrite of {kib} KiB from a page-aligned buffer at offset 0 of a file in the \
                 page cache (never synced)"
            ),
        }
    }
}

/// Options of `oscost mmap`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Operations, comma-separated (default: all)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "OP,...")]
    pub ops: Vec<Op>,

    /// Sizes in 4 KiB pages, comma-separated [default: 1,10,1000,10000 (LEBench's small, mid,
    /// big and huge), with --quick 1,1000]
    #[arg(long, value_delimiter = ',', value_name = "N,...", value_parser = parse_pages)]
    pub pages: Vec<u64>,
}

/// At most 1 GiB a region: the sizes LEBench reads stop at 40 MiB.
const MAX_PAGES: u64 = 1 << 18;

fn parse_pages(s: &str) -> Result<u64, String> {
    engine::parse_pages(s, MAX_PAGES, "a region")
}

/// What a run measures, resolved once for the pre-flight check and the run.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    ops: Vec<Op>,
    sizes: Vec<u64>,
}

fn plan(opts: &Options, quick: bool) -> Plan {
    let ops = if opts.ops.is_empty() {
        Op::ALL.to_vec()
    } else {
        first_occurrences(&opts.ops)
    };
    let sizes = if !opts.pages.is_empty() {
        first_occurrences(&opts.pages)
    } else if quick {
        vec![1, 1000]
    } else {
        DEFAULT_PAGES.to_vec()
    };
    Plan { ops, sizes }
}

/// Operations a sample times at `pages`: enough that the two counter reads are noise beside
/// them, few enough that a touched batch stays small (16 MiB at most, one region for larger).
fn batch(pages: u64) -> u64 {
    (4096 / pages).clamp(1, 64)
}

impl Plan {
    /// The most memory held at once, KiB: the largest touched batch, the file and a buffer.
    fn memory_kib(&self) -> u64 {
        let largest = self.sizes.iter().copied().max().unwrap_or(0);
        let touched = if self.ops.contains(&Op::MunmapTouched) {
            largest * batch(largest)
        } else {
            0
        };
        let file = if self.ops.iter().any(|o| matches!(o, Op::Read | Op::Write)) {
            2 * largest
        } else {
            0
        };
        (touched + file) * PAGE as u64 / 1024
    }
}

/// Memory left free beyond what the run holds.
const MEMORY_MARGIN_KIB: u64 = 256 * 1024;

fn needs(opts: &Options, quick: bool) -> Needs {
    let p = plan(opts, quick);
    let kib = p.memory_kib();
    let largest = p.sizes.iter().copied().max().unwrap_or(0);
    Needs {
        what: format!("{NAME} --pages {largest}"),
        instead: Some("use smaller --pages".into()),
        memory_kib: Some((
            kib + MEMORY_MARGIN_KIB,
            format!(
                "{} MiB of touched pages and cached file at once and {} MiB left free",
                kib.div_ceil(1024),
                MEMORY_MARGIN_KIB / 1024
            ),
        )),
        maps: Some((64, "64 regions mapped at once at the smallest sizes".into())),
        ..Needs::default()
    }
}

/// `VmSize` and `VmRSS` of `/proc/self/status`, KiB.
fn vm_kib() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmSize:"), field("VmRSS:"))
}

/// One case's samples and what the kernel showed around them.
struct Slot {
    op: Op,
    pages: u64,
    ticks: Vec<f64>,
    /// KiB the address space grew (mmap) or shrank (munmap), or RSS shrank (touched), summed.
    kib_moved: u64,
    /// File pages not cached before a read or write batch, summed.
    uncached: u64,
    timed_ops: u64,
}

/// The file the read and write cases use, in the page cache, and their buffer.
struct FileSide {
    _dir: ScratchDir,
    file: std::fs::File,
    /// The file's file system: a cached read or write costs what its paths cost.
    file_system: &'static str,
    buf: PageBuffer,
}

impl FileSide {
    fn new(pages: u64) -> anyhow::Result<FileSide> {
        let dir =
            ScratchDir::new("oscost-mmap-").context("creating a private temporary directory")?;
        let path = dir.path().join("data");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        let bytes = (pages * PAGE as u64) as usize;
        let mut buf = PageBuffer::new(bytes).context("mapping a buffer")?;
        buf.as_mut_slice().fill(0x5a);
        file.write_all(buf.as_slice())
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(FileSide {
            file_system: oscost_sys::pages::file_system(dir.path()).unwrap_or("other"),
            _dir: dir,
            file,
            buf,
        })
    }

    /// File pages of the first `pages` not in the page cache.
    fn uncached(&self, pages: u64) -> anyhow::Result<u64> {
        let m = Mapping::file(self.file.as_fd(), (pages * PAGE as u64) as usize, false)?;
        Ok(pages - m.resident_pages()? as u64)
    }
}

/// Times one batch of `s`; `record`: keep its figures, else it is a warm-up.
fn sample(
    ctx: &Context,
    s: &mut Slot,
    file: Option<&mut FileSide>,
    record: bool,
) -> anyhow::Result<()> {
    let bytes = (s.pages * PAGE as u64) as usize;
    let k = batch(s.pages);
    let (ticks, moved, uncached) = match s.op {
        Op::Mmap | Op::Munmap => {
            let mut maps = Vec::with_capacity(k as usize);
            let (size0, _) = vm_kib();
            let t0 = ctx.clock.now();
            for _ in 0..k {
                maps.push(Mapping::anonymous(bytes).context("mmap")?);
            }
            let t1 = ctx.clock.now();
            let (size1, _) = vm_kib();
            let t2 = ctx.clock.now();
            drop(maps);
            let t3 = ctx.clock.now();
            let (size2, _) = vm_kib();
            if s.op == Op::Mmap {
                (t1.wrapping_sub(t0), size1.saturating_sub(size0), 0)
            } else {
                (t3.wrapping_sub(t2), size1.saturating_sub(size2), 0)
            }
        }
        Op::MunmapTouched => {
            let mut maps = Vec::with_capacity(k as usize);
            for _ in 0..k {
                let mut m = Mapping::anonymous(bytes).context("mmap")?;
                m.write_each(PAGE, 1);
                maps.push(m);
            }
            let (_, rss0) = vm_kib();
            let t0 = ctx.clock.now();
            drop(maps);
            let t1 = ctx.clock.now();
            let (_, rss1) = vm_kib();
            (t1.wrapping_sub(t0), rss0.saturating_sub(rss1), 0)
        }
        Op::Read | Op::Write => {
            let f = file.ok_or_else(|| anyhow::anyhow!("no file for {NAME} read/write"))?;
            let uncached = f.uncached(s.pages)?;
            let fd = f.file.as_fd();
            let t0;
            let t1;
            if s.op == Op::Read {
                let buf = &mut f.buf.as_mut_slice()[..bytes];
                t0 = ctx.clock.now();
                for _ in 0..k {
                    let n = calls::pread_at(fd, buf, 0)?;
                    anyhow::ensure!(n == bytes, "short read of the cached file: {n} of {bytes}");
                }
                t1 = ctx.clock.now();
            } else {
                let buf = &f.buf.as_slice()[..bytes];
                t0 = ctx.clock.now();
                for _ in 0..k {
                    let n = calls::pwrite_at(fd, buf, 0)?;
                    anyhow::ensure!(n == bytes, "short write of the cached file: {n} of {bytes}");
                }
                t1 = ctx.clock.now();
            }
            (t1.wrapping_sub(t0), 0, uncached)
        }
    };
    if !record {
        return Ok(());
    }
    s.ticks.push(ticks as f64 / k as f64);
    s.kib_moved += moved;
    s.uncached += uncached;
    s.timed_ops += k;
    Ok(())
}

fn case_id(op: Op, pages: u64) -> String {
    ids::Case {
        op: &engine::value_name(&op),
        pages,
    }
    .to_string()
}

fn finish(ctx: &Context, s: Slot, file_system: Option<&str>, threads: Option<u64>) -> Case {
    let samples = Samples {
        per_op_ns: s.ticks.iter().map(|&t| ctx.clock.ticks_to_ns(t)).collect(),
        per_op_ticks: s.ticks.clone(),
        iterations_per_sample: batch(s.pages),
        loop_overhead_ns: 0.0,
    };
    let mut case = Case::new(
        case_id(s.op, s.pages),
        s.op.description(s.pages),
        "call",
        samples,
    )
    .param("op", engine::value_name(&s.op))
    .param("pages", s.pages)
    .param("cpu", ctx.first_cpu() as u64);
    if let (Op::Read | Op::Write, Some(fs)) = (s.op, file_system) {
        case = case.param("file_system", fs);
    }
    let ops = s.timed_ops.max(1) as f64;
    let region_kib = (s.pages * PAGE as u64 / 1024) as f64;
    let moved = s.kib_moved as f64 / ops;
    match s.op {
        Op::Mmap | Op::Munmap => {
            let (name, verb) = if s.op == Op::Mmap {
                ("address_space_kib_mapped_per_call", "grew")
            } else {
                ("address_space_kib_unmapped_per_call", "shrank")
            };
            case.counters.insert(name.into(), moved);
            case.checks.push(Check::near(
                name,
                region_kib,
                moved,
                region_kib * 0.01,
                &format!(
                    "VmSize of /proc/self/status {verb} by {} KiB over {} calls",
                    s.kib_moved, s.timed_ops
                ),
            ));
        }
        Op::MunmapTouched => {
            case.counters
                .insert("resident_kib_freed_per_call".into(), moved);
            case.checks.push(Check::at_least(
                "resident_kib_freed_per_call",
                region_kib,
                moved,
                0.1,
                &format!(
                    "VmRSS of /proc/self/status shrank by {} KiB over {} calls: every written \
                     page was resident and is freed by the unmap",
                    s.kib_moved, s.timed_ops
                ),
            ));
        }
        Op::Read | Op::Write => {
            let per = s.uncached as f64 / s.ticks.len().max(1) as f64;
            case.counters.insert("pages_not_cached_before".into(), per);
            case.checks.push(Check::near(
                "pages_not_cached_before",
                0.0,
                per,
                0.0,
                &format!(
                    "mincore of a mapping of the file before each batch: {} of its pages were \
                     not in the page cache over {} batches (a read from the device would be \
                     timed)",
                    s.uncached,
                    s.ticks.len()
                ),
            ));
        }
    }
    if let Some(c) = single_task_check(threads) {
        case.checks.push(c);
    }
    case
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Mmap;
    const SUMMARY: &'static str =
        "mmap, munmap (untouched and touched), and cached read and write, by size in pages";
    const ABOUT: &'static str = "What mapping and unmapping memory cost by size: mmap of an \
untouched private anonymous region, munmap of an untouched one and of one whose every page was \
written, and pread and pwrite of the same size from and to a file in the page cache, at \
LEBench's sizes of 1, 10, 1 000 and 10 000 pages (Ren et al., SOSP 2019).

A sample is a batch of the same call at one size between two counter reads, the regions of a \
touched unmap written before the timing. The address space is checked to grow and shrink by \
what was mapped (VmSize), a touched unmap to free its pages (VmRSS), and the file to stay in \
the page cache (mincore). Runs in one single-threaded process pinned to one CPU.\n\nTakes about 4.3 s; --quick about 0.4 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    const WARMS_UP_BY_COUNT: bool = true;
    const SUITE_ARGS: &'static [&'static str] = &["--pages", "1,1000"];
    const QUICK_SUITE_ARGS: &'static [&'static str] =
        &["--ops", "mmap,munmap-touched,read", "--pages", "1,1000"];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }

    fn preflight(&self, quick: bool, limits: &Limits) -> anyhow::Result<()> {
        limits.check(&needs(self, quick))
    }
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    let p = plan(opts, ctx.quick);
    ctx.pin_first_cpu()?;
    let largest = p.sizes.iter().copied().max().unwrap_or(1);
    let mut file = if p.ops.iter().any(|o| matches!(o, Op::Read | Op::Write)) {
        Some(FileSide::new(largest)?)
    } else {
        None
    };
    let mut slots: Vec<Slot> = Vec::new();
    for &pages in &p.sizes {
        for &op in &p.ops {
            slots.push(Slot {
                op,
                pages,
                ticks: Vec::new(),
                kib_moved: 0,
                uncached: 0,
                timed_ops: 0,
            });
        }
    }
    let n = slots.len();
    ctx.progress.start((ctx.sampler.samples * n) as u64, NAME);
    let (cut, threads) = sampler::warm_then_rounds(ctx, n, |k, record| {
        sample(ctx, &mut slots[k], file.as_mut(), record)
    })?;
    ctx.progress.finish();
    let mut out = ExperimentOutput::default();
    for s in slots {
        let mut c = finish(ctx, s, file.as_ref().map(|f| f.file_system), threads);
        if let Some(w) = &cut {
            c.warnings.push(w.clone());
        }
        out.cases.push(c);
    }
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
    fn plans_follow_the_options() {
        let all = plan(&opts(&[]), false);
        assert_eq!(all.ops, Op::ALL);
        assert_eq!(all.sizes, [1, 10, 1000, 10000]);
        assert_eq!(plan(&opts(&[]), true).sizes, [1, 1000]);
        let some = plan(&opts(&["--ops", "read,read", "--pages", "8,8,2"]), false);
        assert_eq!((some.ops, some.sizes), (vec![Op::Read], vec![8, 2]));
        assert_eq!((batch(1), batch(1000), batch(10000)), (64, 4, 1));
    }

    #[test]
    fn bad_sizes_are_refused_by_name() {
        assert!(parse_pages("0").unwrap_err().contains("at least one page"));
        assert!(parse_pages("1e3").unwrap_err().contains("not a number"));
        assert!(parse_pages("999999999").unwrap_err().contains("at most"));
    }

    #[test]
    fn a_tiny_run_maps_unmaps_and_reads_what_it_says() {
        testing::with_tiny_ctx(|ctx| {
            let out = run(&opts(&["--pages", "1,100"]), ctx).unwrap();
            let ids: Vec<&str> = out.cases.iter().map(|c| c.id.as_str()).collect();
            assert_eq!(
                ids,
                [
                    "mmap.mmap.p1",
                    "mmap.munmap.p1",
                    "mmap.munmap-touched.p1",
                    "mmap.read.p1",
                    "mmap.write.p1",
                    "mmap.mmap.p100",
                    "mmap.munmap.p100",
                    "mmap.munmap-touched.p100",
                    "mmap.read.p100",
                    "mmap.write.p100"
                ]
            );
            for c in &out.cases {
                assert!(
                    c.samples.per_op_ns.len() >= sampler::MIN_SAMPLES,
                    "{}",
                    c.id
                );
                assert!(c.samples.per_op_ns.iter().all(|&v| v > 0.0), "{}", c.id);
                // VmSize and VmRSS count every thread's memory, and the test harness runs
                // other tests' threads beside this one: those checks hold only in a
                // single-threaded process, as oscost's measuring process is (the command-line
                // test holds them there).
                if c.checks[0].name == "pages_not_cached_before" {
                    assert!(c.checks[0].passed, "{}: {:?}", c.id, c.checks[0]);
                }
            }
        });
    }
}
