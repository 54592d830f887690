//! The kernel's tracepoints read by BPF programs oscost assembles itself: one small program per
//! raw tracepoint (`BPF_PROG_TYPE_RAW_TRACEPOINT`, attached with `BPF_RAW_TRACEPOINT_OPEN`)
//! writes a fixed-size record with its time into its CPU's part of one array map that this
//! process maps into its memory (`BPF_F_MMAPABLE`). Nothing wakes the reader; the records are
//! read once recording stopped, and a CPU whose part filled up keeps its first records and
//! counts the rest as lost.
//!
//! A raw tracepoint hands its program the tracepoint's arguments, not the formatted record
//! tracefs describes: `sched_switch` gets `task_struct` pointers, whose `pid` field sits at an
//! offset only the kernel's BTF knows. The programs read no kernel memory: each record carries
//! the thread current when it fired (`bpf_get_current_pid_tgid`) and up to three arguments as
//! they are; a `sched_switch` record carries the pointer of the task leaving with its thread
//! id, so the pointers the other records hold (the task coming in, the task woken) are named
//! from those pairs when the trace is read. The records are then laid out as the events'
//! `format` files describe, so the same decoders read them as a perf or ftrace record; the
//! fields a record cannot carry (names, priorities, a `sys_exit`'s call number) read as zero.
//!
//! Times are `CLOCK_MONOTONIC` (`bpf_ktime_get_ns`). Every program, map and attachment is a
//! file descriptor of this process: they go with it, however it ends.

mod names;

use crate::ktrace::{Format, Record, Tracefs, Unavailable};
use names::Names;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The clock of the records' times.
pub const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;

/// Bytes of one record: time (u64), thread (u32), event (u16), a 16-bit argument, two 64-bit
/// arguments.
pub const RECORD_BYTES: usize = 32;

/// Records per traced CPU by default (4 MiB each, as perf's ring).
pub const DEFAULT_SLOTS: u32 = 1 << 17;

/// The largest number of threads a filter keeps.
pub const FILTER_TIDS: usize = 4;

/// Where a record's field comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Src {
    /// The first 64-bit argument.
    A,
    /// The 16-bit argument.
    Aux,
    /// The thread of the task whose pointer is the first 64-bit argument.
    TidOfA,
    /// The thread current when it fired.
    Current,
    /// The name of the thread current when it fired (read from `/proc` when the trace is read).
    CommOfCurrent,
    /// The name of the thread [`Src::TidOfA`] names (the same way).
    CommOfA,
    /// The name of the interrupt numbered by the 16-bit argument (`/proc/interrupts`).
    IrqOfAux,
}

/// What the program of one tracepoint keeps, and how its record maps onto the format.
#[derive(Debug, Clone, Copy)]
struct Spec {
    /// Whether a thread filter applies (the events every task fires, such as system calls).
    filterable: bool,
    /// Argument indices kept: the 16-bit one, the first and the second 64-bit ones.
    aux: Option<u8>,
    a: Option<u8>,
    b: Option<u8>,
    /// The second 64-bit argument is the current task's pointer (`sched_switch`'s `prev`).
    b_is_current: bool,
    /// The format's fields a record fills; the others read as zero.
    fields: &'static [(&'static str, Src)],
}

const NONE: Spec = Spec {
    filterable: false,
    aux: None,
    a: None,
    b: None,
    b_is_current: false,
    fields: &[],
};

/// The tracepoints a program can record. A raw tracepoint hands its program the arguments of
/// the tracepoint's `TP_PROTO` (`include/trace/events/`), not the fields its `format` file
/// lists, and only the kernel's BTF says which is which; so each family of tracepoints
/// says here which of its arguments fill which fields, once for every event of the family:
///
/// - `raw_syscalls:sys_enter(regs, id)`, `sys_exit(regs, ret)`;
/// - `sched:sched_waking(p)`, `sched_wakeup(p)`, `sched_switch(preempt, prev, next,
///   prev_state)`;
/// - `irq_vectors:*_entry(vector)`, `*_exit(vector)` (every x86 vector);
/// - `irq:irq_handler_entry(irq, action)`, `irq_handler_exit(irq, action, ret)`,
///   `softirq_entry(vec)`, `softirq_exit(vec)`, `softirq_raise(vec)`;
/// - `timer:hrtimer_expire_entry(hrtimer, now)`, `hrtimer_expire_exit(hrtimer)`;
/// - `signal:signal_deliver(sig, info, ka)`.
fn spec(sys: &str, event: &str) -> Option<Spec> {
    let s = match (sys, event) {
        ("raw_syscalls", "sys_enter") => Spec {
            filterable: true,
            a: Some(1),
            fields: &[("id", Src::A)],
            ..NONE
        },
        ("raw_syscalls", "sys_exit") => Spec {
            filterable: true,
            a: Some(1),
            fields: &[("ret", Src::A)],
            ..NONE
        },
        ("sched", "sched_waking" | "sched_wakeup") => Spec {
            a: Some(0),
            fields: &[("pid", Src::TidOfA), ("comm", Src::CommOfA)],
            ..NONE
        },
        ("sched", "sched_switch") => Spec {
            aux: Some(3),
            a: Some(2),
            b: Some(1),
            b_is_current: true,
            fields: &[
                ("prev_pid", Src::Current),
                ("prev_comm", Src::CommOfCurrent),
                ("prev_state", Src::Aux),
                ("next_pid", Src::TidOfA),
                ("next_comm", Src::CommOfA),
            ],
            ..NONE
        },
        ("irq_vectors", e) if e.ends_with("_entry") || e.ends_with("_exit") => Spec {
            aux: Some(0),
            fields: &[("vector", Src::Aux)],
            ..NONE
        },
        ("irq", "irq_handler_entry") => Spec {
            aux: Some(0),
            fields: &[("irq", Src::Aux), ("name", Src::IrqOfAux)],
            ..NONE
        },
        ("irq", "irq_handler_exit") => Spec {
            aux: Some(0),
            a: Some(2),
            fields: &[("irq", Src::Aux), ("ret", Src::A)],
            ..NONE
        },
        ("irq", "softirq_entry" | "softirq_exit" | "softirq_raise") => Spec {
            aux: Some(0),
            fields: &[("vec", Src::Aux)],
            ..NONE
        },
        ("timer", "hrtimer_expire_entry") => Spec {
            a: Some(0),
            fields: &[("hrtimer", Src::A)],
            ..NONE
        },
        ("timer", "hrtimer_expire_exit") => Spec {
            a: Some(0),
            fields: &[("hrtimer", Src::A)],
            ..NONE
        },
        ("signal", "signal_deliver") => Spec {
            aux: Some(0),
            fields: &[("sig", Src::Aux)],
            ..NONE
        },
        _ => return None,
    };
    Some(s)
}

/// Whether a program can record the tracepoint `sys:event`.
pub fn can_record(sys: &str, event: &str) -> bool {
    spec(sys, event).is_some()
}

/// The fields of tracepoint `format` a program's record leaves at zero (what a raw
/// tracepoint's arguments do not give without reading kernel memory); empty for one it
/// cannot record.
pub fn unrecorded_fields(format: &Format) -> Vec<String> {
    let Some((sys, ev)) = format.name.split_once(':') else {
        return Vec::new();
    };
    let Some(s) = spec(sys, ev) else {
        return Vec::new();
    };
    format
        .fields
        .iter()
        .filter(|f| !f.name.starts_with("common_"))
        .filter(|f| !s.fields.iter().any(|(n, _)| *n == f.name))
        .map(|f| f.name.clone())
        .collect()
}

/// The fields of `wanted` a program's record of tracepoint `format` would leave at zero (all
/// of them for a tracepoint no program records): a reader that needs any of them must not be
/// handed BPF's records. Of the common fields, a record fills `common_type` and `common_pid`.
pub fn lacking_fields(format: &Format, wanted: &[&str]) -> Vec<String> {
    let filled = format
        .name
        .split_once(':')
        .and_then(|(sys, ev)| spec(sys, ev))
        .map(|s| s.fields);
    wanted
        .iter()
        .filter(|w| match filled {
            None => true,
            Some(f) => {
                !matches!(**w, "common_type" | "common_pid") && !f.iter().any(|(n, _)| n == *w)
            }
        })
        .map(|w| (*w).to_owned())
        .collect()
}

/// One BPF instruction (`struct bpf_insn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn(u64);

impl Insn {
    pub(crate) fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
        Insn(
            u64::from(code)
                | u64::from((dst & 0xf) | (src << 4)) << 8
                | u64::from(off as u16) << 16
                | u64::from(imm as u32) << 32,
        )
    }

    /// The instruction's code byte.
    pub fn code(self) -> u8 {
        self.0 as u8
    }

    /// The instruction as the kernel reads it.
    pub(crate) fn word(self) -> u64 {
        self.0
    }

    /// An instruction from its 64 bits.
    pub(crate) fn from_word(w: u64) -> Insn {
        Insn(w)
    }
}

// Opcode parts (`include/uapi/linux/bpf.h`, `bpf_common.h`).
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const ALU: u8 = 0x04;
const JMP: u8 = 0x05;
const ALU64: u8 = 0x07;
const W: u8 = 0x00;
const H: u8 = 0x08;
const DW: u8 = 0x18;
const MEM: u8 = 0x60;
const ATOMIC: u8 = 0xc0;
const X: u8 = 0x08;
const ADD: u8 = 0x00;
const MOV: u8 = 0xb0;
const JA: u8 = 0x00;
const JEQ: u8 = 0x10;
const JGE: u8 = 0x30;
const CALL: u8 = 0x80;
const EXIT: u8 = 0x90;
const FETCH: i32 = 0x01;
const PSEUDO_MAP_FD: u8 = 1;

// Helpers (`enum bpf_func_id`).
const MAP_LOOKUP_ELEM: i32 = 1;
const KTIME_GET_NS: i32 = 5;
const GET_SMP_PROCESSOR_ID: i32 = 8;
const GET_CURRENT_PID_TGID: i32 = 14;

/// A program under construction, its jumps to the common exit patched at the end.
struct Asm {
    insns: Vec<Insn>,
    to_exit: Vec<usize>,
    to_keep: Vec<usize>,
}

impl Asm {
    fn op(&mut self, code: u8, dst: u8, src: u8, off: i16, imm: i32) {
        self.insns.push(Insn::new(code, dst, src, off, imm));
    }
    fn mov(&mut self, dst: u8, src: u8) {
        self.op(ALU64 | MOV | X, dst, src, 0, 0);
    }
    fn call(&mut self, helper: i32) {
        self.op(JMP | CALL, 0, 0, 0, helper);
    }
    fn ld_map(&mut self, dst: u8, fd: i32) {
        self.op(0x18, dst, PSEUDO_MAP_FD, 0, fd);
        self.op(0, 0, 0, 0, 0);
    }
    /// `if dst == imm goto exit` (`src` None) or `if dst <op> src goto exit`.
    fn exit_if(&mut self, op: u8, dst: u8, src: Option<u8>, imm: i32) {
        self.to_exit.push(self.insns.len());
        match src {
            Some(s) => self.op(JMP | op | X, dst, s, 0, 0),
            None => self.op(JMP | op, dst, 0, 0, imm),
        }
    }
    /// Looks up the element whose u32 key is in `key_reg` (r1–r5 are clobbered): r0 is its
    /// address, or the program exits when there is none.
    fn lookup(&mut self, map: i32, key_reg: u8) {
        self.op(STX | MEM | W, 10, key_reg, -4, 0);
        self.ld_map(1, map);
        self.mov(2, 10);
        self.op(ALU64 | ADD, 2, 0, 0, -4);
        self.call(MAP_LOOKUP_ELEM);
        self.exit_if(JEQ, 0, None, 0);
    }
}

// Layout of a CPU's header element: records written or tried (u64), the key of its first
// record slot (u32, 0: not traced), its slots (u32), the threads kept (u32 each, 0: none).
const H_HEAD: i16 = 0;
const H_BASE: i16 = 8;
const H_SLOTS: i16 = 12;
const H_FILTER: i16 = 16;

/// Assembles the program of tracepoint `s`, recording as event `kind` into map `map`.
///
/// r6 holds the arguments, r7 the CPU's header and then the record, r8 the record's key, r9
/// the current thread.
fn assemble(s: &Spec, kind: u16, map: i32) -> Vec<Insn> {
    let mut a = Asm {
        insns: Vec::new(),
        to_exit: Vec::new(),
        to_keep: Vec::new(),
    };
    a.mov(6, 1);
    a.call(GET_SMP_PROCESSOR_ID);
    a.lookup(map, 0);
    a.mov(7, 0);
    a.op(LDX | MEM | W, 8, 7, H_BASE, 0);
    a.exit_if(JEQ, 8, None, 0);
    a.call(GET_CURRENT_PID_TGID);
    a.op(ALU | MOV | X, 9, 0, 0, 0);
    if s.filterable {
        for i in 0..FILTER_TIDS as i16 {
            a.op(LDX | MEM | W, 1, 7, H_FILTER + 4 * i, 0);
            if i == 0 {
                // No thread named: every one is kept.
                a.to_keep.push(a.insns.len());
                a.op(JMP | JEQ, 1, 0, 0, 0);
            } else {
                a.exit_if(JEQ, 1, None, 0);
            }
            a.to_keep.push(a.insns.len());
            a.op(JMP | JEQ | X, 1, 9, 0, 0);
        }
        a.to_exit.push(a.insns.len());
        a.op(JMP | JA, 0, 0, 0, 0);
    }
    let keep = a.insns.len();
    // Take a slot: an atomic add, as a program on this CPU may run inside another (an
    // interrupt's wake-up inside a system call's entry).
    a.op(ALU64 | MOV, 1, 0, 0, 1);
    a.op(STX | ATOMIC | DW, 7, 1, H_HEAD, FETCH);
    a.op(LDX | MEM | W, 2, 7, H_SLOTS, 0);
    a.exit_if(JGE, 1, Some(2), 0);
    a.op(ALU64 | ADD | X, 8, 1, 0, 0);
    a.lookup(map, 8);
    a.mov(7, 0);
    a.call(KTIME_GET_NS);
    a.op(STX | MEM | DW, 7, 0, 0, 0);
    a.op(STX | MEM | W, 7, 9, 8, 0);
    a.op(ST | MEM | H, 7, 0, 12, i32::from(kind));
    for (arg, size, off) in [(s.aux, H, 14), (s.a, DW, 16), (s.b, DW, 24)] {
        if let Some(i) = arg {
            a.op(LDX | MEM | DW, 1, 6, 8 * i16::from(i), 0);
            a.op(STX | MEM | size, 7, 1, off, 0);
        }
    }
    let exit = a.insns.len();
    a.op(ALU64 | MOV, 0, 0, 0, 0);
    a.op(JMP | EXIT, 0, 0, 0, 0);
    let mut insns = a.insns;
    for (targets, to) in [(&a.to_exit, exit), (&a.to_keep, keep)] {
        for &at in targets {
            let off = (to as i64 - at as i64 - 1) as i16;
            let i = insns[at].0;
            insns[at] = Insn((i & !0xffff_0000) | u64::from(off as u16) << 16);
        }
    }
    insns
}

/// `bpf(cmd, attr)` with `attr` a zeroed `union bpf_attr` of 128 bytes.
pub(crate) fn bpf(cmd: libc::c_long, attr: &mut [u8; 128]) -> io::Result<i32> {
    // SAFETY: attr is 128 writable bytes, the size passed; every pointer written into it
    // points to memory that outlives the call.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as i32)
}

pub(crate) fn put32(attr: &mut [u8; 128], off: usize, v: u32) {
    attr[off..off + 4].copy_from_slice(&v.to_ne_bytes());
}

pub(crate) fn put64(attr: &mut [u8; 128], off: usize, v: u64) {
    attr[off..off + 8].copy_from_slice(&v.to_ne_bytes());
}

pub(crate) fn owned(fd: i32) -> OwnedFd {
    // SAFETY: fd was just returned by the kernel and is owned by no one else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

pub(crate) const MAP_CREATE: libc::c_long = 0;
const PROG_LOAD: libc::c_long = 5;
const OBJ_GET_INFO_BY_FD: libc::c_long = 15;
const RAW_TRACEPOINT_OPEN: libc::c_long = 17;
const MAP_TYPE_ARRAY: u32 = 2;
const PROG_TYPE_RAW_TRACEPOINT: u32 = 17;
pub(crate) const F_MMAPABLE: u32 = 1 << 10;

/// Why BPF was refused, in one line saying what would allow it.
pub(crate) fn refused(what: &str, e: &io::Error) -> Unavailable {
    let hint = match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            let unpriv = std::fs::read_to_string("/proc/sys/kernel/unprivileged_bpf_disabled")
                .map(|s| s.trim().to_owned())
                .unwrap_or_else(|_| "?".into());
            format!(
                ": tracing programs need root (or CAP_BPF with CAP_PERFMON); \
                 unprivileged_bpf_disabled is {unpriv}, and a kernel in lockdown refuses them"
            )
        }
        Some(libc::ENOSYS) => ": this kernel has no bpf() (CONFIG_BPF_SYSCALL)".into(),
        Some(libc::EMFILE) | Some(libc::ENFILE) => {
            ": it failed for want of file descriptors (each program and map takes one); raise \
             the open-file limit (`ulimit -n`)"
                .into()
        }
        _ => String::new(),
    };
    Unavailable(format!("the kernel refused BPF ({what}: {e}){hint}"))
}

/// The number of possible CPUs (`/sys/devices/system/cpu/possible`, `0-N`).
pub(crate) fn possible_cpus() -> io::Result<usize> {
    let t = std::fs::read_to_string("/sys/devices/system/cpu/possible")?;
    let last = t
        .trim()
        .rsplit([',', '-'])
        .next()
        .and_then(|n| n.parse::<usize>().ok())
        .ok_or_else(|| io::Error::other(format!("cannot read the possible CPUs from `{t}`")))?;
    Ok(last + 1)
}

/// Every program's name starts so (then its tracepoint's, cut to the kernel's 15 bytes): what
/// a listing of the loaded programs (`bpftool prog`) shows of oscost's.
pub const PROGRAM_PREFIX: &str = "osc_";

pub(crate) fn program_name(event: &str) -> String {
    let mut n = format!("{PROGRAM_PREFIX}{event}");
    n.truncate(15);
    n
}

/// The event part of a format's `sys:event` name: the raw tracepoint's name.
fn event_of(f: &Format) -> &str {
    f.name.split_once(':').map_or(f.name.as_str(), |(_, e)| e)
}

/// Programs on raw tracepoints writing into one mapped array; detached and closed on drop.
pub struct Tracer {
    map: OwnedFd,
    mem: *mut u8,
    len: usize,
    progs: Vec<OwnedFd>,
    links: Vec<OwnedFd>,
    /// One descriptor held for each program's attachment while it is detached, so that an
    /// open-file limit too low to attach them is met when the tracer is opened (and another
    /// mechanism chosen), not when recording starts, after the run had begun.
    reserved: Vec<OwnedFd>,
    formats: Vec<Format>,
    specs: Vec<Spec>,
    /// Header key and first record key of each traced CPU.
    cpus: Vec<(usize, u32)>,
    slots: u32,
    lost: u64,
    /// Each program's `recursion_misses` when recording started.
    misses_before: Vec<u64>,
    /// Records lost to programs not run, by tracepoint.
    lost_by_event: BTreeMap<String, u64>,
    /// Threads' names when the tracer was opened, for those gone before the trace is read.
    early_names: HashMap<u32, String>,
}

impl Tracer {
    /// Loads a program for each of `events` (`sys`, `event`; every one must be one a
    /// program can record and this kernel has) with `slots` records for each CPU of `cpus`;
    /// attached by [`Tracer::enable`].
    pub fn open(
        fs: &Tracefs,
        events: &[(&str, &str)],
        cpus: &[usize],
        slots: u32,
    ) -> Result<Tracer, Unavailable> {
        if std::fs::read_to_string("/proc/sys/net/core/bpf_jit_enable")
            .is_ok_and(|s| s.trim() == "0")
        {
            return Err(Unavailable(
                "BPF's JIT is off (net.core.bpf_jit_enable is 0): interpreted programs would \
                 cost more than they save"
                    .into(),
            ));
        }
        let mut formats = Vec::new();
        let mut specs = Vec::new();
        for &(sys, ev) in events {
            let s = spec(sys, ev).ok_or_else(|| {
                Unavailable(format!(
                    "oscost's BPF programs do not record {sys}:{ev} (they record the \
                     system calls', the scheduler's, the interrupts', the softirqs', the \
                     hrtimers' and signal delivery's tracepoints)"
                ))
            })?;
            let f = fs.format(sys, ev).ok_or_else(|| {
                Unavailable(format!(
                    "the tracepoint {sys}:{ev} is not under {}",
                    fs.mountpoint().display()
                ))
            })?;
            formats.push(f);
            specs.push(s);
        }
        let possible =
            possible_cpus().map_err(|e| Unavailable(format!("counting the possible CPUs: {e}")))?;
        if cpus.is_empty() || cpus.iter().any(|&c| c >= possible) {
            return Err(Unavailable(format!(
                "CPUs {cpus:?} are not all possible CPUs"
            )));
        }
        let slots = slots.max(1);
        let entries = possible as u64 + cpus.len() as u64 * u64::from(slots);
        let entries = u32::try_from(entries)
            .map_err(|_| Unavailable(format!("{entries} trace slots are too many")))?;
        let mut attr = [0u8; 128];
        put32(&mut attr, 0, MAP_TYPE_ARRAY);
        put32(&mut attr, 4, 4);
        put32(&mut attr, 8, RECORD_BYTES as u32);
        put32(&mut attr, 12, entries);
        put32(&mut attr, 16, F_MMAPABLE);
        attr[28..28 + 12].copy_from_slice(b"oscost_trace");
        let map = owned(bpf(MAP_CREATE, &mut attr).map_err(|e| refused("creating its map", &e))?);
        // An mmap-able array map, whole pages of it (what the kernel allows).
        let (p, len) = crate::map_shared(
            std::os::fd::AsFd::as_fd(&map),
            entries as usize * RECORD_BYTES,
        )
        .map_err(|e| Unavailable(format!("mapping the BPF trace array: {e}")))?;
        let mut t = Tracer {
            map,
            mem: p.cast(),
            len,
            progs: Vec::new(),
            links: Vec::new(),
            reserved: Vec::new(),
            formats,
            specs,
            cpus: Vec::new(),
            slots,
            lost: 0,
            misses_before: Vec::new(),
            lost_by_event: BTreeMap::new(),
            early_names: HashMap::new(),
        };
        for (i, &cpu) in cpus.iter().enumerate() {
            let base = possible as u32 + i as u32 * slots;
            t.cpus.push((cpu, base));
            t.put_header(cpu, H_SLOTS, slots);
            t.put_header(cpu, H_BASE, base);
        }
        // Taken here, not when recording starts: the snapshot's work (thousands of reads),
        // done by a thread that is about to be measured, moved the scheduler's view of it
        // (4 of 6 ping-pong passes then had every other turn preempted, against none).
        let named = |(n, _): &(&str, Src)| n.ends_with("comm");
        if t.specs.iter().any(|s| s.fields.iter().any(named)) {
            t.early_names = Names::snapshot();
        }
        for (kind, s) in t.specs.iter().enumerate() {
            let insns = assemble(s, kind as u16, t.map.as_raw_fd());
            let fd = load(&insns, &program_name(event_of(&t.formats[kind])))
                .map_err(|e| refused("loading a program", &e))?;
            t.progs.push(fd);
        }
        t.reserve()
            .map_err(|e| refused("keeping a descriptor for each attachment", &e))?;
        Ok(t)
    }

    /// Holds a descriptor (a duplicate of the map's) for each program not attached.
    fn reserve(&mut self) -> io::Result<()> {
        while self.reserved.len() + self.links.len() < self.progs.len() {
            self.reserved.push(self.map.try_clone()?);
        }
        Ok(())
    }

    fn header(&self, cpu: usize) -> *mut u8 {
        // SAFETY: cpu is a possible CPU, and the first `possible` elements are headers inside
        // the mapping.
        unsafe { self.mem.add(cpu * RECORD_BYTES) }
    }

    fn put_header(&self, cpu: usize, off: i16, v: u32) {
        // SAFETY: a 4-byte aligned u32 inside cpu's header element; the programs only read it.
        unsafe {
            self.header(cpu)
                .add(off as usize)
                .cast::<u32>()
                .write_volatile(v)
        };
    }

    /// The formats of the tracepoints recorded, in the order asked.
    pub fn formats(&self) -> &[Format] {
        &self.formats
    }

    /// Keeps only the records of threads `tids` (at most [`FILTER_TIDS`]) for the
    /// tracepoints every task fires (system calls); the others keep every record.
    pub fn keep_threads(&self, tids: &[u32]) -> io::Result<()> {
        if tids.len() > FILTER_TIDS || tids.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a BPF thread filter keeps 1 to {FILTER_TIDS} threads, not 0"),
            ));
        }
        for &(cpu, _) in &self.cpus {
            for i in 0..FILTER_TIDS {
                let v = tids.get(i).copied().unwrap_or(0);
                self.put_header(cpu, H_FILTER + 4 * i as i16, v);
            }
        }
        Ok(())
    }

    /// Attaches every program: recording starts.
    pub fn enable(&mut self) -> io::Result<()> {
        if !self.links.is_empty() {
            return Ok(());
        }
        self.misses_before = self.misses();
        // The descriptors held for the attachments are given back just before them.
        self.reserved.clear();
        let mut failed = None;
        for (f, p) in self.formats.iter().zip(&self.progs) {
            match attach_raw(event_of(f), p) {
                Ok(fd) => self.links.push(fd),
                Err(e) => {
                    failed = Some(attach_error(event_of(f), e));
                    break;
                }
            }
        }
        match failed {
            None => Ok(()),
            Some(e) => {
                self.links.clear();
                let _ = self.reserve();
                Err(e)
            }
        }
    }

    /// Detaches every program: recording stops.
    pub fn disable(&mut self) -> io::Result<()> {
        self.links.clear();
        self.reserve()
    }

    /// Records the kernel could not keep: a CPU's slots were full, a program found another
    /// of oscost's running on its CPU, or a slot was taken and never written.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Each program's `recursion_misses` now, in the order of [`Tracer::formats`].
    fn misses(&self) -> Vec<u64> {
        self.progs
            .iter()
            .map(|p| prog_misses(p).unwrap_or(0))
            .collect()
    }

    /// Records lost because the kernel did not run a program (its `recursion_misses`: the
    /// program was already running on that CPU), by tracepoint (`sys:event`); only those
    /// that lost any. They are part of [`Tracer::lost`].
    pub fn lost_by_event(&self) -> &BTreeMap<String, u64> {
        &self.lost_by_event
    }

    /// Every record written, laid out as its tracepoint's format says, in time order.
    pub fn drain(&mut self) -> Vec<Record> {
        let now = self.misses();
        let mut lost = 0;
        for (i, n) in now.iter().enumerate() {
            let missed = n.saturating_sub(self.misses_before.get(i).copied().unwrap_or(0));
            if missed > 0 {
                *self
                    .lost_by_event
                    .entry(self.formats[i].name.clone())
                    .or_insert(0) += missed;
                lost += missed;
            }
        }
        self.misses_before = now;
        let mut raw: Vec<(usize, [u8; RECORD_BYTES])> = Vec::new();
        for &(cpu, base) in &self.cpus {
            // SAFETY: the head is an 8-byte aligned u64 at the start of cpu's header.
            let head = unsafe { self.header(cpu).cast::<u64>().read_volatile() };
            let n = head.min(u64::from(self.slots)) as u32;
            lost += head - u64::from(n);
            for k in 0..n {
                let mut r = [0u8; RECORD_BYTES];
                let at = (base + k) as usize * RECORD_BYTES;
                // SAFETY: slot base + k < base + slots lies inside the mapping; the programs
                // are detached, so nothing writes it while it is copied.
                unsafe {
                    std::ptr::copy_nonoverlapping(self.mem.add(at), r.as_mut_ptr(), RECORD_BYTES)
                };
                raw.push((cpu, r));
            }
            // The next pass starts from an empty part.
            // SAFETY: as above, the head of cpu's header.
            unsafe { self.header(cpu).cast::<u64>().write_volatile(0) };
        }
        let mut names = Names {
            early: std::mem::take(&mut self.early_names),
            ..Names::default()
        };
        let (out, unwritten) = lay_out(&raw, &self.formats, &self.specs, &mut names);
        self.lost += lost + unwritten;
        out
    }
}

/// The records `raw` (CPU, bytes) laid out by `formats` (the event numbers' formats), in time
/// order, and how many slots were taken but never written (time 0).
fn lay_out(
    raw: &[(usize, [u8; RECORD_BYTES])],
    formats: &[Format],
    specs: &[Spec],
    names: &mut Names,
) -> (Vec<Record>, u64) {
    let u64_at = |r: &[u8; RECORD_BYTES], o: usize| {
        u64::from_ne_bytes(r[o..o + 8].try_into().expect("8 bytes"))
    };
    let tid_of = |r: &[u8; RECORD_BYTES]| u32::from_ne_bytes(r[8..12].try_into().expect("4"));
    let kind_of = |r: &[u8; RECORD_BYTES]| u16::from_ne_bytes([r[12], r[13]]) as usize;
    // The tasks' pointers, named by the switches that took them off a CPU: a pointer is
    // named by its first switch out at or after the record (a task's memory is reused once
    // it exited, and an exiting task switches out a last time); a task woken and never
    // switched out after is named by its last one.
    let mut tasks: HashMap<u64, Vec<(u64, u32)>> = HashMap::new();
    for (_, r) in raw {
        if let Some(s) = specs.get(kind_of(r)) {
            if s.b_is_current && u64_at(r, 0) != 0 {
                tasks
                    .entry(u64_at(r, 24))
                    .or_default()
                    .push((u64_at(r, 0), tid_of(r)));
            }
        }
    }
    for v in tasks.values_mut() {
        v.sort_unstable();
    }
    let named = |p: u64, at: u64, or_last: bool| -> Option<u32> {
        let v = tasks.get(&p)?;
        let i = v.partition_point(|&(t, _)| t < at);
        v.get(i)
            .or_else(|| v.last().filter(|_| or_last))
            .map(|&(_, tid)| tid)
    };
    let mut unwritten = 0;
    let mut out = Vec::with_capacity(raw.len());
    for (i, (cpu, r)) in raw.iter().enumerate() {
        let ns = u64_at(r, 0);
        let (Some(f), Some(s)) = (formats.get(kind_of(r)), specs.get(kind_of(r))) else {
            unwritten += 1;
            continue;
        };
        if ns == 0 {
            unwritten += 1;
            continue;
        }
        let tid = tid_of(r);
        let aux = i64::from(u16::from_ne_bytes([r[14], r[15]]));
        let tid_of_a = || {
            let p = u64_at(r, 16);
            match named(p, ns, !s.b_is_current) {
                Some(t) => i64::from(t),
                // Never switched out after: the task this CPU ran next says who came in
                // (else the last one that had this pointer).
                None if s.b_is_current => raw[i + 1..]
                    .iter()
                    .find(|(c, _)| c == cpu)
                    .map(|(_, n)| tid_of(n))
                    .or_else(|| named(p, ns, true))
                    .map_or(-1, i64::from),
                None => -1,
            }
        };
        let len = f
            .fields
            .iter()
            .map(|f| f.offset + f.size)
            .max()
            .unwrap_or(8);
        let mut bytes = vec![0u8; len];
        f.put_int(&mut bytes, "common_type", f.id as i64);
        f.put_int(&mut bytes, "common_pid", i64::from(tid));
        for &(name, src) in s.fields {
            let v = match src {
                Src::A => u64_at(r, 16) as i64,
                Src::Aux => aux,
                Src::Current => i64::from(tid),
                Src::TidOfA => tid_of_a(),
                Src::CommOfCurrent => {
                    f.put_string(&mut bytes, name, &names.thread(i64::from(tid), *cpu));
                    continue;
                }
                Src::CommOfA => {
                    let t = tid_of_a();
                    if t >= 0 {
                        f.put_string(&mut bytes, name, &names.thread(t, *cpu));
                    }
                    continue;
                }
                Src::IrqOfAux => {
                    f.put_string(&mut bytes, name, &names.irq(aux));
                    continue;
                }
            };
            f.put_int(&mut bytes, name, v);
        }
        out.push(Record {
            time_ns: ns,
            cpu: *cpu as u32,
            pid: tid,
            tid,
            raw: bytes,
        });
    }
    out.sort_by_key(|r| (r.time_ns, r.cpu));
    (out, unwritten)
}

/// Attaches program `prog` to the raw tracepoint `event`: the returned descriptor holds the
/// attachment (dropped, the program is detached). The error is the kernel's, as it is.
pub(crate) fn attach_raw(event: &str, prog: &OwnedFd) -> io::Result<OwnedFd> {
    let name = std::ffi::CString::new(event)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in an event's name"))?;
    let mut attr = [0u8; 128];
    put64(&mut attr, 0, name.as_ptr() as u64);
    put32(&mut attr, 8, prog.as_raw_fd() as u32);
    bpf(RAW_TRACEPOINT_OPEN, &mut attr).map(owned)
}

/// `e`, an error of [`attach_raw`], naming the call and the event.
pub(crate) fn attach_error(event: &str, e: io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        format!("bpf(BPF_RAW_TRACEPOINT_OPEN, {event}): {e}"),
    )
}

/// Loads `insns` as a raw-tracepoint program named `name`; the verifier's log is in the error.
pub(crate) fn load(insns: &[Insn], name: &str) -> io::Result<OwnedFd> {
    let license = env!("CARGO_PKG_LICENSE");
    let license = std::ffi::CString::new(license).unwrap_or_else(|_| c"Proprietary".into());
    let mut log = vec![0u8; 64 * 1024];
    let words: Vec<u64> = insns.iter().map(|i| i.0).collect();
    let try_load = |log: &mut Vec<u8>, level: u32| {
        let mut attr = [0u8; 128];
        put32(&mut attr, 0, PROG_TYPE_RAW_TRACEPOINT);
        put32(&mut attr, 4, words.len() as u32);
        put64(&mut attr, 8, words.as_ptr() as u64);
        put64(&mut attr, 16, license.as_ptr() as u64);
        if level > 0 {
            put32(&mut attr, 24, level);
            put32(&mut attr, 28, log.len() as u32);
            put64(&mut attr, 32, log.as_mut_ptr() as u64);
        }
        let n = name.len().min(15);
        attr[48..48 + n].copy_from_slice(&name.as_bytes()[..n]);
        bpf(PROG_LOAD, &mut attr)
    };
    match try_load(&mut log, 0) {
        Ok(fd) => Ok(owned(fd)),
        Err(e)
            if e.raw_os_error() == Some(libc::EINVAL) || e.raw_os_error() == Some(libc::EACCES) =>
        {
            // Load again with the verifier's log, to say why.
            let _ = try_load(&mut log, 1);
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            // The verifier's statistics come last; the reason is the line before them.
            let last = text
                .lines()
                .rev()
                .find(|l| {
                    let l = l.trim();
                    !l.is_empty()
                        && !l.starts_with("processed ")
                        && !l.starts_with("verification time")
                })
                .unwrap_or("");
            Err(io::Error::new(e.kind(), format!("{e}; verifier: {last}")))
        }
        Err(e) => Err(e),
    }
}

/// The times program `fd` was skipped because another ran on its CPU (`recursion_misses` of
/// `struct bpf_prog_info`, at byte 208 since Linux 5.12).
pub(crate) fn prog_misses(fd: &OwnedFd) -> Option<u64> {
    let mut info = [0u8; 232];
    let mut attr = [0u8; 128];
    put32(&mut attr, 0, fd.as_raw_fd() as u32);
    put32(&mut attr, 4, info.len() as u32);
    put64(&mut attr, 8, info.as_mut_ptr() as u64);
    bpf(OBJ_GET_INFO_BY_FD, &mut attr).ok()?;
    let len = u32::from_ne_bytes(attr[4..8].try_into().ok()?) as usize;
    (len >= 216).then(|| u64::from_ne_bytes(info[208..216].try_into().expect("8 bytes")))
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.links.clear();
        // SAFETY: mem/len are the mapping made in `open`, unmapped once.
        unsafe { libc::munmap(self.mem.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests;
