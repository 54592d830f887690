//! The kernel's tracepoints recorded by ftrace into an instance of oscost's own
//! (`instances/oscost-<pid>-<n>` under tracefs): its own buffers, clock (`mono_raw`), CPU mask and
//! events, so nobody else's tracing is touched. The buffers keep their first records when full
//! (`overwrite` off) and count the rest, which `per_cpu/cpuN/stats` reports; they are read
//! once recording stopped, page by page, from `per_cpu/cpuN/trace_pipe_raw`. Each event's
//! data is the record its `format` file describes, as perf's raw sample is. The instance is
//! removed on drop; a killed run's is removed by the next (the caller records it).

use crate::ktrace::{Format, Record, Tracefs, Unavailable};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The clock of the records' times (`trace_clock` `mono_raw`).
pub const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC_RAW;

/// KiB of buffer per CPU.
pub const BUFFER_KB: u32 = 4096;

/// The name of process `pid`'s instance number `n`: one process may trace from two threads at
/// once (a test binary runs its tests so), each in an instance of its own.
pub fn instance_name(pid: u32, n: u32) -> String {
    format!("oscost-{pid}-{n}")
}

/// The process that made the instance named `name` ([`instance_name`], or `oscost-<pid>` as
/// earlier versions named it).
fn instance_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("oscost-")?;
    rest.split('-').next()?.parse().ok()
}

/// The instances under `fs` named by [`instance_name`] whose process is gone, with its pid:
/// left by a run that ended without removing them and whose record is lost too (an instance
/// outlives the tracefs mount it was made under, unseen until tracefs is mounted again).
pub fn orphans(fs: &Tracefs) -> Vec<(PathBuf, u32)> {
    let Ok(dir) = std::fs::read_dir(fs.root().join("instances")) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, u32)> = dir
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let pid = instance_pid(name.to_str()?)?;
            let gone = !Path::new(&format!("/proc/{pid}")).exists();
            gone.then(|| (e.path(), pid))
        })
        .collect();
    out.sort();
    out
}

/// The records one CPU's buffer lost, by its `stats` once read: those it could not keep
/// (`overrun`, `dropped events`, `commit overrun`), those it still holds (`entries`: never
/// read), and those it handed over (`read events`) that were not read out of its pages
/// (`parsed`), so no record goes without a count.
fn lost_of(stats: &str, parsed: u64) -> u64 {
    stat(stats, "entries")
        + stat(stats, "overrun")
        + stat(stats, "dropped events")
        + stat(stats, "commit overrun")
        + stat(stats, "read events").saturating_sub(parsed)
}

/// An ftrace instance recording tracepoints; removed on drop.
pub struct Tracer {
    /// The instance, reached through `_root`.
    reach: PathBuf,
    /// The instance as it reads under the mount point, for messages and records.
    dir: PathBuf,
    /// A hold on tracefs of the tracer's own: its files stay reachable for as long as it
    /// lives, whoever unmounts tracefs or drops the value it was opened from.
    _root: Option<std::os::fd::OwnedFd>,
    formats: Vec<Format>,
    cpus: Vec<usize>,
    /// Where a page's data begins, and the size of its `commit` word.
    data_offset: usize,
    lost: u64,
    /// The instance is gone.
    removed: bool,
}

impl Tracer {
    /// Makes the instance under `fs` and sets it up for `events` on `cpus`, not recording.
    /// `made` is told the instance's directory as soon as it exists (to record it, so a
    /// killed run's is removed by the next).
    pub fn open(
        fs: &Tracefs,
        events: &[(&str, &str)],
        cpus: &[usize],
        made: &mut dyn FnMut(&Path),
    ) -> Result<Tracer, Unavailable> {
        let mut formats = Vec::new();
        for &(sys, ev) in events {
            formats.push(fs.format(sys, ev).ok_or_else(|| {
                Unavailable(format!(
                    "the tracepoint {sys}:{ev} is not under {}",
                    fs.mountpoint().display()
                ))
            })?);
        }
        let (root, held) = fs.pin();
        let header = Path::new("events/header_page");
        let text = read_whole(&root.join(header)).map_err(|e| {
            Unavailable(format!(
                "reading {}: {e}",
                fs.mountpoint().join(header).display()
            ))
        })?;
        let data_offset = page_data_offset(&text).ok_or_else(|| {
            Unavailable(format!(
                "{} has no `data` field",
                fs.mountpoint().join(header).display()
            ))
        })?;
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let instance = Path::new("instances").join(instance_name(std::process::id(), n));
        let (reach, dir) = (root.join(&instance), fs.mountpoint().join(&instance));
        std::fs::create_dir(&reach).map_err(|e| {
            Unavailable(format!(
                "ftrace refused an instance of oscost's own ({}: {e}): run as root",
                dir.display()
            ))
        })?;
        made(&dir);
        let t = Tracer {
            reach,
            dir,
            _root: held,
            formats,
            cpus: cpus.to_vec(),
            data_offset,
            lost: 0,
            removed: false,
        };
        t.set_up()
            .map_err(|e| Unavailable(format!("setting up oscost's ftrace instance: {e}")))?;
        Ok(t)
    }

    /// Writes `value` to the instance's file `rel`.
    fn write(&self, rel: impl AsRef<Path>, value: &str) -> io::Result<()> {
        let rel = rel.as_ref();
        std::fs::write(self.reach.join(rel), value).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("writing `{value}` to {}: {e}", self.dir.join(rel).display()),
            )
        })
    }

    fn set_up(&self) -> io::Result<()> {
        self.write("tracing_on", "0")?;
        self.write("buffer_size_kb", &BUFFER_KB.to_string())?;
        self.write("trace_clock", "mono_raw")?;
        self.write("options/overwrite", "0")?;
        let mut mask = vec![0u32; self.cpus.iter().max().map_or(1, |m| m / 32 + 1)];
        for &c in &self.cpus {
            mask[c / 32] |= 1 << (c % 32);
        }
        let hex = mask
            .iter()
            .rev()
            .map(|w| format!("{w:08x}"))
            .collect::<Vec<_>>()
            .join(",");
        self.write("tracing_cpumask", &hex)
    }

    /// The enable file of `f`'s event, relative to the instance.
    fn enable_file(f: &Format) -> PathBuf {
        let (sys, ev) = f.name.split_once(':').unwrap_or(("", &f.name));
        Path::new("events").join(sys).join(ev).join("enable")
    }

    /// The instance's directory, as it reads under tracefs's mount point.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The formats of the tracepoints recorded, in the order asked.
    pub fn formats(&self) -> &[Format] {
        &self.formats
    }

    /// Keeps only the records of threads `tids`: their system calls, and the scheduler's
    /// events that involve them (a switch from or to one, a wake-up of one). `set_event_pid`
    /// rejects the others before they take buffer space, where an event filter writes each
    /// record to a scratch buffer first to test it.
    pub fn keep_threads(&self, tids: &[u32]) -> io::Result<()> {
        let pids = tids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(" ");
        self.write("set_event_pid", &pids)
    }

    /// Enables the events and starts recording.
    pub fn enable(&mut self) -> io::Result<()> {
        for f in &self.formats {
            self.write(Self::enable_file(f), "1")?;
        }
        self.write("tracing_on", "1")
    }

    /// Stops recording and disables the events.
    pub fn disable(&mut self) -> io::Result<()> {
        self.write("tracing_on", "0")?;
        for f in &self.formats {
            self.write(Self::enable_file(f), "0")?;
        }
        Ok(())
    }

    /// Records the buffers could not keep (full, `overwrite` off: `dropped events` and
    /// `overrun` of each CPU's stats).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Every record in the buffers, in time order; the ones dropped are counted.
    pub fn drain(&mut self) -> Vec<Record> {
        let mut out = Vec::new();
        for &cpu in &self.cpus {
            let pcpu = self.reach.join(format!("per_cpu/cpu{cpu}"));
            let before = out.len();
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(pcpu.join("trace_pipe_raw"))
            {
                let mut page = vec![0u8; 4096];
                // A read gives one page, or what is left of the last one; nothing more when
                // the buffer is empty.
                while let Ok(n) = f.read(&mut page) {
                    if n == 0 {
                        break;
                    }
                    read_page(&page[..n], self.data_offset, cpu as u32, &mut out);
                }
            }
            if let Ok(stats) = std::fs::read_to_string(pcpu.join("stats")) {
                self.lost += lost_of(&stats, (out.len() - before) as u64);
            }
        }
        out.sort_by_key(|r| (r.time_ns, r.cpu));
        out
    }
}

impl Tracer {
    /// Stops recording and removes the instance; an error (tracefs unmounted under it by
    /// another process, the instance busy) leaves it for the caller's record to have the next
    /// run remove it.
    pub fn remove(&mut self) -> io::Result<()> {
        if self.removed {
            return Ok(());
        }
        let _ = self.write("tracing_on", "0");
        for f in &self.formats {
            let _ = self.write(Self::enable_file(f), "0");
        }
        // A child forked (by this process, any thread) while one of the instance's files was
        // open holds it until the child exits or execs: the instance is busy for that long.
        let mut tries = 0;
        loop {
            match std::fs::remove_dir(&self.reach) {
                Ok(()) => break,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < 100 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("removing {}: {e}", self.dir.display()),
                    ))
                }
            }
        }
        self.removed = true;
        Ok(())
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// Removes the instance at `dir` a killed run left (its tracefs may be mounted elsewhere
/// now: the instance is looked for by name under `fs`).
pub fn remove_instance(fs: &Tracefs, dir: &Path) -> io::Result<bool> {
    let Some(name) = dir.file_name() else {
        return Ok(false);
    };
    let here = fs.root().join("instances").join(name);
    if !here.exists() {
        return Ok(false);
    }
    let _ = std::fs::write(here.join("tracing_on"), "0");
    std::fs::remove_dir(&here)?;
    Ok(true)
}

/// A tracefs file's text, read with a large buffer: `events/header_page` gives only what
/// its first read asks for (`read_to_string` asks for 32 bytes first).
fn read_whole(path: &Path) -> io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut n = 0;
    loop {
        let got = f.read(&mut buf[n..])?;
        if got == 0 || n + got == buf.len() {
            n += got;
            break;
        }
        n += got;
    }
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// The value of `key: N` in a CPU's stats file (0 when absent).
fn stat(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// Where a page's data begins, from `events/header_page` (the `data` field's offset).
fn page_data_offset(text: &str) -> Option<usize> {
    text.lines().find_map(|l| {
        let l = l.trim();
        let rest = l.strip_prefix("field: char data;")?;
        rest.split(';')
            .find_map(|p| p.trim().strip_prefix("offset:"))?
            .parse()
            .ok()
    })
}

// Ring-buffer event types (`include/linux/ring_buffer.h`).
const PADDING: u32 = 29;
const TIME_EXTEND: u32 = 30;
const TIME_STAMP: u32 = 31;
const TS_SHIFT: u32 = 27;

/// The records of one ring-buffer page (`data_offset` past its timestamp and commit word)
/// into `out`.
fn read_page(page: &[u8], data_offset: usize, cpu: u32, out: &mut Vec<Record>) {
    let u32_at = |o: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(page.get(o..o + 4)?.try_into().ok()?))
    };
    let Some(mut ts) = page
        .get(0..8)
        .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
    else {
        return;
    };
    // The commit word holds the data's length; its top bits are flags (missed events).
    let Some(commit) = page
        .get(8..data_offset)
        .and_then(|b| b.get(0..4))
        .map(|b| u32::from_ne_bytes(b.try_into().expect("4 bytes")) & 0x0fff_ffff)
    else {
        return;
    };
    let end = (data_offset + commit as usize).min(page.len());
    let mut at = data_offset;
    while at + 4 <= end {
        let Some(h) = u32_at(at) else { return };
        let (kind, delta) = (h & 0x1f, h >> 5);
        match kind {
            PADDING => {
                // The rest of the page, or a discarded record (its length, the word holding
                // it included, after the header); its time does not count, as the kernel's
                // own reader has it.
                if delta == 0 {
                    return;
                }
                let Some(len) = u32_at(at + 4) else { return };
                at += 4 + len as usize;
            }
            TIME_EXTEND => {
                let Some(hi) = u32_at(at + 4) else { return };
                ts += (u64::from(hi) << TS_SHIFT) + u64::from(delta);
                at += 8;
            }
            TIME_STAMP => {
                let Some(hi) = u32_at(at + 4) else { return };
                let abs = (u64::from(hi) << TS_SHIFT) + u64::from(delta);
                // The absolute stamp holds the low 59 bits; the page's give the rest.
                ts = (ts & !((1 << 59) - 1)) | abs;
                at += 8;
            }
            _ => {
                ts += u64::from(delta);
                let (data, len) = if kind == 0 {
                    let Some(len) = u32_at(at + 4) else { return };
                    (at + 8, (len as usize).saturating_sub(4))
                } else {
                    (at + 4, kind as usize * 4)
                };
                let Some(raw) = page.get(data..data + len) else {
                    return;
                };
                let pid = raw
                    .get(4..8)
                    .map_or(0, |b| u32::from_ne_bytes(b.try_into().expect("4 bytes")));
                out.push(Record {
                    time_ns: ts,
                    cpu,
                    pid,
                    tid: pid,
                    raw: raw.to_vec(),
                });
                at = data + len.next_multiple_of(4);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skip::skip;

    #[test]
    fn the_page_header_gives_where_data_begins() {
        let t = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
                 \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
                 \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
                 \tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        assert_eq!(page_data_offset(t), Some(16));
        assert_eq!(page_data_offset("garbage"), None);
    }

    #[test]
    fn stats_are_read_by_key() {
        let s = "entries: 10\noverrun: 3\ncommit overrun: 0\ndropped events: 7\n";
        assert_eq!(stat(s, "overrun"), 3);
        assert_eq!(stat(s, "dropped events"), 7);
        let s = "entries: 0\noverrun: 1\ncommit overrun: 2\nread events: 100\ndropped events: 3\n";
        // 98 of the 100 handed over were read from the pages: 2 more lost.
        assert_eq!(lost_of(s, 98), 8);
        assert_eq!(lost_of(s, 100), 6);
        assert_eq!(lost_of(&s.replace("entries: 0", "entries: 4"), 100), 10);
        assert_eq!(stat(s, "nope"), 0);
    }

    fn event(out: &mut Vec<u8>, delta: u32, data: &[u8]) {
        let words = data.len().div_ceil(4) as u32;
        out.extend_from_slice(&((delta << 5) | words).to_ne_bytes());
        out.extend_from_slice(data);
        out.resize(out.len().next_multiple_of(4), 0);
    }

    #[test]
    fn a_page_gives_its_records_with_their_times() {
        let mut data = Vec::new();
        let mut rec = vec![0u8; 12];
        rec[0..2].copy_from_slice(&372u16.to_ne_bytes());
        rec[4..8].copy_from_slice(&41i32.to_ne_bytes());
        event(&mut data, 10, &rec);
        // A time extend of 2^27 + 5 ns.
        data.extend_from_slice(&((5u32 << 5) | TIME_EXTEND).to_ne_bytes());
        data.extend_from_slice(&1u32.to_ne_bytes());
        // A long record: length in the word after the header.
        let long = vec![7u8; 120];
        data.extend_from_slice(&(3u32 << 5).to_ne_bytes());
        data.extend_from_slice(&(long.len() as u32 + 4).to_ne_bytes());
        data.extend_from_slice(&long);
        // A discarded record (padding with a length), then a short one.
        data.extend_from_slice(&((2u32 << 5) | PADDING).to_ne_bytes());
        data.extend_from_slice(&12u32.to_ne_bytes());
        data.extend_from_slice(&[0u8; 8]);
        event(&mut data, 4, &rec);
        let mut page = Vec::new();
        page.extend_from_slice(&1_000u64.to_ne_bytes());
        page.extend_from_slice(&(data.len() as u64).to_ne_bytes());
        page.extend_from_slice(&data);
        page.resize(4096, 0);
        let mut out = Vec::new();
        read_page(&page, 16, 1, &mut out);
        let times: Vec<u64> = out.iter().map(|r| r.time_ns).collect();
        let ext = 1_000 + 10 + (1 << 27) + 5;
        assert_eq!(times, vec![1_010, ext + 3, ext + 3 + 4]);
        assert_eq!(
            (out[0].pid, out[0].event_id(), out[0].raw.len()),
            (41, 372, 12)
        );
        assert_eq!(out[1].raw, long);
        // A truncated page gives what it holds, without reading past its end.
        let mut cut = Vec::new();
        read_page(&page[..40], 16, 1, &mut cut);
        assert_eq!(cut.len(), 1);
    }

    /// Where an instance can be made here (root), one records this thread's system calls and
    /// is gone after; elsewhere the refusal is one line.
    /// Records this thread's system calls on `cpu` around three getppid calls: the three are
    /// recorded, and nothing of another thread.
    fn three_getppids_recorded(t: &mut Tracer, cpu: usize) {
        let me = crate::gettid() as u32;
        t.keep_threads(&[me]).unwrap();
        crate::set_affinity(&[cpu]).unwrap();
        t.enable().unwrap();
        for _ in 0..3 {
            crate::calls::raw_getppid();
        }
        t.disable().unwrap();
        let recs = t.drain();
        let f = &t.formats()[0];
        let n = recs
            .iter()
            .filter(|r| r.tid == me && f.int(&r.raw, "id") == Some(libc::SYS_getppid))
            .count();
        assert_eq!(n, 3, "{recs:?}");
        assert!(recs.iter().all(|r| r.tid == me));
    }

    #[test]
    fn an_instance_records_and_goes() {
        let _serial = crate::ktrace::tests::tracefs_serial();
        let fs = match Tracefs::open() {
            Ok(fs) => fs,
            Err(e) => return skip(&format!("needs tracefs: {e}")),
        };
        let cpu = crate::affinity().unwrap()[0];
        let mut seen = None;
        let mut t = match Tracer::open(
            &fs,
            &[("raw_syscalls", "sys_enter")],
            &[cpu],
            &mut |d: &Path| seen = Some(d.to_owned()),
        ) {
            Ok(t) => t,
            Err(u) => {
                assert!(!u.0.contains('\n'), "{u}");
                return skip(&format!("not traced here: {u}"));
            }
        };
        let dir = seen.expect("told of the instance");
        assert_eq!(dir, t.dir());
        three_getppids_recorded(&mut t, cpu);
        assert_eq!(t.lost(), 0);
        drop(t);
        assert!(!dir.exists());
        // A killed run's instance is removed by name. The kernel may still be tearing the
        // removed one down for a moment (EBUSY on the same name), as `remove` allows for.
        let made = (0..100).find_map(|_| match std::fs::create_dir(&dir) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                std::thread::sleep(std::time::Duration::from_millis(10));
                None
            }
            r => Some(r),
        });
        made.expect("the instance made again within 1 s").unwrap();
        assert!(remove_instance(&fs, &dir).unwrap());
        assert!(!dir.exists());
        assert!(!remove_instance(&fs, &dir).unwrap());
    }

    /// tracefs unmounted under a tracer by someone else (another oscost run that had mounted
    /// it ending, the sweep after a killed run): the tracer still records, reads and removes
    /// its instance, and messages name the mount point, not the descriptor.
    #[test]
    fn a_tracer_outlives_an_unmount_under_it() {
        let _serial = crate::ktrace::tests::tracefs_serial();
        if crate::mount::mounts().iter().any(|m| m.fstype == "tracefs") {
            return skip("needs tracefs mounted nowhere, ours to unmount");
        }
        let fs = match Tracefs::open() {
            Ok(fs) => fs,
            Err(e) => return skip(&format!("needs tracefs: {e}")),
        };
        let cpu = crate::affinity().unwrap()[0];
        let Ok(mut t) = Tracer::open(&fs, &[("raw_syscalls", "sys_enter")], &[cpu], &mut |_| ())
        else {
            return skip("needs an ftrace instance, which cannot be made here");
        };
        assert!(
            t.dir().starts_with(fs.mountpoint()),
            "{}",
            t.dir().display()
        );
        let name = t.dir().file_name().unwrap().to_owned();
        crate::ktrace::unmount_tracefs(fs.mountpoint()).unwrap();
        assert!(!crate::ktrace::tracefs_mounted_on(fs.mountpoint()));
        three_getppids_recorded(&mut t, cpu);
        t.remove().unwrap();
        assert!(!fs.root().join("instances").join(&name).exists());
    }

    /// Two tracers of one process at once (two tests of one binary) each get an instance of
    /// their own, and each goes with its tracer.
    #[test]
    fn two_tracers_of_one_process_have_an_instance_each() {
        let _serial = crate::ktrace::tests::tracefs_serial();
        let fs = match Tracefs::open() {
            Ok(fs) => fs,
            Err(e) => return skip(&format!("needs tracefs: {e}")),
        };
        let cpu = crate::affinity().unwrap()[0];
        let events = [("raw_syscalls", "sys_enter")];
        let Ok(a) = Tracer::open(&fs, &events, &[cpu], &mut |_: &Path| ()) else {
            return skip("needs an ftrace instance, which cannot be made here");
        };
        let b = Tracer::open(&fs, &events, &[cpu], &mut |_: &Path| ()).unwrap();
        let (da, db) = (a.dir().to_owned(), b.dir().to_owned());
        assert_ne!(da, db);
        for d in [&da, &db] {
            let name = d.file_name().unwrap().to_str().unwrap();
            assert_eq!(instance_pid(name), Some(std::process::id()), "{name}");
        }
        drop(a);
        assert!(!da.exists());
        assert!(
            db.join("tracing_on").exists(),
            "the other's instance went too"
        );
        drop(b);
        assert!(!db.exists());
    }

    /// An instance's name gives the process that made it, in this version's form and in the
    /// earlier `oscost-<pid>`; other names give none.
    #[test]
    fn an_instance_name_gives_its_process() {
        assert_eq!(instance_pid(&instance_name(41, 3)), Some(41));
        assert_eq!(instance_pid("oscost-41"), Some(41));
        assert_eq!(instance_pid("oscost-x-1"), None);
        assert_eq!(instance_pid("perf-41"), None);
    }

    /// An instance named for a process that is gone is an orphan; this process's is not.
    #[test]
    fn an_instance_of_a_process_gone_is_an_orphan() {
        let _serial = crate::ktrace::tests::tracefs_serial();
        let fs = match Tracefs::open() {
            Ok(fs) => fs,
            Err(e) => return skip(&format!("needs tracefs: {e}")),
        };
        let gone = std::process::Command::new("true").spawn().unwrap();
        let pid = gone.id();
        gone.wait_with_output().unwrap();
        let root = fs.root().join("instances");
        let (dead, mine) = (
            root.join(instance_name(pid, 0)),
            root.join(instance_name(std::process::id(), 0)),
        );
        if std::fs::create_dir(&dead).is_err() {
            return skip("needs an ftrace instance, which cannot be made here");
        }
        std::fs::create_dir(&mine).unwrap();
        let o = orphans(&fs);
        let _ = std::fs::remove_dir(&dead);
        let _ = std::fs::remove_dir(&mine);
        assert!(o.contains(&(dead, pid)), "{o:?}");
        assert!(!o.iter().any(|(d, _)| *d == mine), "{o:?}");
    }
}
