//! The bill's probe: BPF programs on raw tracepoints that add up, in the kernel, what one
//! program's tasks cost the OS — system calls by number (count, errors, time on the CPU in the
//! kernel and its distribution), page faults by kind, switches, time waiting for a CPU and
//! time blocked, interrupts and softirqs that ran while one of its tasks was current, signals,
//! tasks created, programs executed, TLB flushes. Nothing is recorded per event: counters and
//! sums sit in per-CPU arrays and a hash of the tasks, read once the program ended, so the
//! cost per event stays near a bare counter's.
//!
//! Which tasks are the program's: those of one cgroup v2 (`bpf_get_current_cgroup_id`, for a
//! command started in a cgroup of its own: every thread and descendant follows), or those of
//! one thread group (a process attached by its id). The programs read no kernel memory: a task
//! is named by its thread id where it is current, and by its `task_struct` pointer where the
//! scheduler hands one (the task switched in, the task woken), the pointer mapped to the
//! thread when the task last switched out.

use crate::bpf::{
    attach_error, attach_raw, bpf, load, owned, possible_cpus, prog_misses, program_name, put32,
    put64, refused, Insn, MAP_CREATE,
};
use crate::ktrace::Unavailable;
use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// Which tasks the probe counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every task of the cgroup v2 with this id (its directory's inode number).
    Cgroup(u64),
    /// Every thread of this process.
    Process(u32),
}

/// How much the probe does per system call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Counts at entry only: no time, no errors, no per-thread split of the calls.
    Count,
    /// Entry and exit: each call's time on the CPU in the kernel, its errors.
    Time,
}

/// The largest system-call number counted by name; higher (and negative) numbers share the
/// last slot.
pub const CALL_SLOTS: u32 = 512;
/// Buckets of a time distribution: four per power of two, from 0 ns to about 2 s.
pub const BUCKETS: usize = 128;
/// Tasks the probe can follow at once.
pub const MAX_TASKS: u32 = 16_384;

// The task's hash value, bytes.
const T_TID: i16 = 0;
const T_PART: i16 = 8;
const T_NR: i16 = 16;
const T_INCALL: i16 = 24;
const T_OUT: i16 = 32;
const T_OUT_KIND: i16 = 40;
const T_WOKEN: i16 = 48;
const T_OFF: i16 = 56;
const T_WAIT: i16 = 64;
const T_BLOCKED: i16 = 72;
const T_IRQ: i16 = 80;
const T_CALLS: i16 = 88;
const T_CALL_NS: i16 = 96;
const T_FAULTS: i16 = 104;
const T_VCSW: i16 = 112;
const T_IVCSW: i16 = 120;
const T_IN: i16 = 128;
const T_ONCPU: i16 = 136;
const T_WAKEUPS: i16 = 144;
const T_FIRST: i16 = 152;
const T_EXIT: i16 = 160;
const T_COMM: i16 = 168;
const TASK_BYTES: usize = 192;

// The per-CPU totals, bytes.
const G_FAULT: i16 = 0;
const G_IRQ_N: i16 = 64;
const G_IRQ_NS: i16 = 128;
const G_IRQ_TS: i16 = 192;
const G_SIGNALS: i16 = 256;
const G_THREADS: i16 = 264;
const G_PROCS: i16 = 272;
const G_EXECS: i16 = 280;
const G_WAKEUPS: i16 = 288;
const G_TLB: i16 = 296;
const G_MISSED: i16 = 360;
// Interrupt time charged to the program on this CPU, all kinds.
const G_IRQ_ALL: i16 = 368;
// The program's system call in progress on this CPU: whether there is one, its entry, slot,
// G_IRQ_ALL at entry, and its time on a CPU before it last came in.
const G_CUR_ON: i16 = 376;
const G_CUR_ENTER: i16 = 384;
const G_CUR_NR: i16 = 392;
const G_CUR_IRQ: i16 = 400;
const G_CUR_PART: i16 = 408;
// The running task's calls and their time since it came in on this CPU.
const G_ACC_TID: i16 = 416;
const G_ACC_CALLS: i16 = 424;
const G_ACC_NS: i16 = 432;
// A task never run before that just came in: when, when it was woken, its wait.
const G_PEND_IN: i16 = 440;
const G_PEND_WOKEN: i16 = 448;
const G_PEND_WAIT: i16 = 456;
const G_LAT: i16 = 512;
const GLOB_BYTES: usize = 512 + 8 * BUCKETS;

// A system call's slot, bytes.
const C_COUNT: i16 = 0;
const C_ERR: i16 = 8;
const C_NS: i16 = 16;
const C_HIST: i16 = 24;
const CALL_BYTES: usize = 24 + 8 * BUCKETS;

/// The interrupts told apart, in the order of [`Totals::irqs`].
pub const IRQ_KINDS: [&str; 6] = [
    "device interrupt",
    "softirq",
    "timer interrupt",
    "function-call IPI",
    "reschedule IPI",
    "irq work",
];

/// The TLB flushes of `tlb:tlb_flush`, by reason (`enum tlb_flush_reason`).
pub const TLB_REASONS: [&str; 5] = [
    "on task switch",
    "received (remote shootdown)",
    "local shootdown",
    "local mm shootdown",
    "sent (remote IPI)",
];

// Opcode parts (`include/uapi/linux/bpf.h`).
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const ALU64: u8 = 0x07;
const JMP: u8 = 0x05;
const W: u8 = 0x00;
const DW: u8 = 0x18;
const MEM: u8 = 0x60;
const ATOMIC: u8 = 0xc0;
const X: u8 = 0x08;
const ADD: u8 = 0x00;
const SUB: u8 = 0x10;
const MUL: u8 = 0x20;
const AND: u8 = 0x50;
const LSH: u8 = 0x60;
const RSH: u8 = 0x70;
const MOV: u8 = 0xb0;
const JA: u8 = 0x00;
const JEQ: u8 = 0x10;
const JGT: u8 = 0x20;
const JGE: u8 = 0x30;
const JSET: u8 = 0x40;
const JNE: u8 = 0x50;
const JSLT: u8 = 0xc0;
const CALL: u8 = 0x80;
const EXIT: u8 = 0x90;

// Helpers (`enum bpf_func_id`).
const LOOKUP: i32 = 1;
const UPDATE: i32 = 2;
const DELETE: i32 = 3;
const KTIME: i32 = 5;
const PID_TGID: i32 = 14;
const COMM: i32 = 16;
const CGROUP_ID: i32 = 80;

const CLONE_THREAD: i32 = 0x10000;
const NOEXIST: i32 = 1;
const ANY: i32 = 0;

/// A jump target.
#[derive(Clone, Copy)]
struct Label(usize);

/// A program under construction, its jumps patched when it is finished.
struct Prog {
    insns: Vec<Insn>,
    labels: Vec<Option<usize>>,
    jumps: Vec<(usize, Label)>,
    maps: Maps,
    scope: Scope,
    exit: Label,
}

/// The maps' descriptors, for the programs' loads.
#[derive(Clone, Copy)]
struct Maps {
    tasks: i32,
    ptrs: i32,
    newborn: i32,
    glob: i32,
    calls: i32,
}

impl Prog {
    fn new(maps: Maps, scope: Scope) -> Prog {
        let mut p = Prog {
            insns: Vec::new(),
            labels: Vec::new(),
            jumps: Vec::new(),
            maps,
            scope,
            exit: Label(0),
        };
        p.exit = p.label();
        // r6 keeps the tracepoint's arguments for the whole program.
        p.mov(6, 1);
        p
    }
    fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }
    fn bind(&mut self, l: Label) {
        self.labels[l.0] = Some(self.insns.len());
    }
    fn op(&mut self, code: u8, dst: u8, src: u8, off: i16, imm: i32) {
        self.insns.push(Insn::new(code, dst, src, off, imm));
    }
    fn mov(&mut self, dst: u8, src: u8) {
        self.op(ALU64 | MOV | X, dst, src, 0, 0);
    }
    fn movi(&mut self, dst: u8, imm: i32) {
        self.op(ALU64 | MOV, dst, 0, 0, imm);
    }
    fn alu(&mut self, op: u8, dst: u8, src: u8) {
        self.op(ALU64 | op | X, dst, src, 0, 0);
    }
    fn alui(&mut self, op: u8, dst: u8, imm: i32) {
        self.op(ALU64 | op, dst, 0, 0, imm);
    }
    fn ld(&mut self, dst: u8, base: u8, off: i16) {
        self.op(LDX | MEM | DW, dst, base, off, 0);
    }
    fn st(&mut self, base: u8, off: i16, src: u8) {
        self.op(STX | MEM | DW, base, src, off, 0);
    }
    fn sti(&mut self, base: u8, off: i16, imm: i32) {
        self.op(ST | MEM | DW, base, 0, off, imm);
    }
    /// `lock *(u64 *)(base + off) += src`: a program on this CPU may run inside another.
    fn add(&mut self, base: u8, off: i16, src: u8) {
        self.op(STX | ATOMIC | DW, base, src, off, ADD as i32);
    }
    fn inc(&mut self, base: u8, off: i16) {
        self.movi(1, 1);
        self.add(base, off, 1);
    }
    /// `*(u64 *)(base + off) += src` without a lock, for this CPU's own values (r1 clobbered;
    /// `src` is not r1).
    fn addp(&mut self, base: u8, off: i16, src: u8) {
        self.ld(1, base, off);
        self.alu(ADD, 1, src);
        self.st(base, off, 1);
    }
    fn incp(&mut self, base: u8, off: i16) {
        self.ld(1, base, off);
        self.alui(ADD, 1, 1);
        self.st(base, off, 1);
    }
    fn ld_imm64(&mut self, dst: u8, v: u64) {
        self.op(0x18, dst, 0, 0, v as u32 as i32);
        self.op(0, 0, 0, 0, (v >> 32) as u32 as i32);
    }
    fn ld_map(&mut self, dst: u8, fd: i32) {
        self.op(0x18, dst, 1, 0, fd);
        self.op(0, 0, 0, 0, 0);
    }
    fn call(&mut self, helper: i32) {
        self.op(JMP | CALL, 0, 0, 0, helper);
    }
    fn jmp(&mut self, op: u8, dst: u8, imm: i32, to: Label) {
        self.jumps.push((self.insns.len(), to));
        self.op(JMP | op, dst, 0, 0, imm);
    }
    fn jmpx(&mut self, op: u8, dst: u8, src: u8, to: Label) {
        self.jumps.push((self.insns.len(), to));
        self.op(JMP | op | X, dst, src, 0, 0);
    }
    fn goto(&mut self, to: Label) {
        self.jmp(JA, 0, 0, to);
    }

    /// Goes to `not` unless the current task is the program's (r1–r5, r0 clobbered).
    fn ours_or(&mut self, not: Label) {
        match self.scope {
            Scope::Cgroup(id) => {
                self.call(CGROUP_ID);
                self.ld_imm64(1, id);
                self.jmpx(JNE, 0, 1, not);
            }
            Scope::Process(pid) => {
                self.call(PID_TGID);
                self.alui(RSH, 0, 32);
                self.jmp(JNE, 0, pid as i32, not);
            }
        }
    }

    /// The time now into `dst`.
    fn now(&mut self, dst: u8) {
        self.call(KTIME);
        self.mov(dst, 0);
    }

    /// Looks up the u32 key in register `key` of map `fd`: r0 its value, or `none` taken.
    fn lookup_u32(&mut self, fd: i32, key: u8, none: Label) {
        self.op(STX | MEM | W, 10, key, -4, 0);
        self.ld_map(1, fd);
        self.mov(2, 10);
        self.alui(ADD, 2, -4);
        self.call(LOOKUP);
        self.jmp(JEQ, 0, 0, none);
    }

    /// r0 the per-CPU totals, or the program exits.
    fn glob(&mut self) {
        self.movi(1, 0);
        let exit = self.exit;
        let fd = self.maps.glob;
        self.lookup_u32(fd, 1, exit);
    }

    /// r7 the current task's state, made when it has none (its first event), r9 its thread;
    /// the program exits when the hash is full (counted).
    fn task(&mut self) {
        self.call(PID_TGID);
        self.mov(9, 0);
        self.alui(LSH, 9, 32);
        self.alui(RSH, 9, 32);
        let absent = self.label();
        let fd = self.maps.tasks;
        // The key stays at fp-4 for the insertion below.
        self.lookup_u32(fd, 9, absent);
        let found = self.label();
        self.goto(found);
        self.bind(absent);
        let base: i16 = -(TASK_BYTES as i16) - 8;
        for i in 0..(TASK_BYTES / 8) as i16 {
            self.sti(10, base + 8 * i, 0);
        }
        self.call(PID_TGID);
        self.st(10, base + T_TID, 0);
        // New since it last came in on this CPU: it began when it was woken new, and waited
        // until then; else its first event finds it on a CPU.
        self.glob();
        self.mov(7, 0);
        let no_pending = self.label();
        let began = self.label();
        self.ld(1, 7, G_PEND_IN);
        self.jmp(JEQ, 1, 0, no_pending);
        self.st(10, base + T_IN, 1);
        self.ld(1, 7, G_PEND_WOKEN);
        self.st(10, base + T_FIRST, 1);
        self.ld(1, 7, G_PEND_WAIT);
        self.st(10, base + T_WAIT, 1);
        self.sti(7, G_PEND_IN, 0);
        self.goto(began);
        self.bind(no_pending);
        self.call(KTIME);
        self.st(10, base + T_FIRST, 0);
        self.st(10, base + T_IN, 0);
        self.bind(began);
        // Whose running sums this CPU holds, if the task is left on it at the end.
        self.st(7, G_ACC_TID, 9);
        self.op(STX | MEM | W, 10, 9, -4, 0);
        self.mov(1, 10);
        self.alui(ADD, 1, i32::from(base + T_COMM));
        self.movi(2, 16);
        self.call(COMM);
        self.ld_map(1, fd);
        self.mov(2, 10);
        self.alui(ADD, 2, -4);
        self.mov(3, 10);
        self.alui(ADD, 3, i32::from(base));
        self.movi(4, NOEXIST);
        self.call(UPDATE);
        let looked = self.label();
        self.jmp(JEQ, 0, 0, looked);
        self.glob();
        self.inc(0, G_MISSED);
        let exit = self.exit;
        self.goto(exit);
        self.bind(looked);
        self.ld_map(1, fd);
        self.mov(2, 10);
        self.alui(ADD, 2, -4);
        self.call(LOOKUP);
        self.jmp(JEQ, 0, 0, exit);
        self.bind(found);
        self.mov(7, 0);
    }

    /// r7 the state of the task whose `task_struct` pointer is in `ptr`, or `none` taken when
    /// it is not the program's (or never switched out).
    fn task_of(&mut self, ptr: u8, none: Label) {
        self.op(STX | MEM | DW, 10, ptr, -16, 0);
        self.ld_map(1, self.maps.ptrs);
        self.mov(2, 10);
        self.alui(ADD, 2, -16);
        self.call(LOOKUP);
        self.jmp(JEQ, 0, 0, none);
        self.op(LDX | MEM | W, 1, 0, 0, 0);
        let fd = self.maps.tasks;
        self.lookup_u32(fd, 1, none);
        self.mov(7, 0);
    }

    /// `dst`, a time now, becomes the time on a CPU of the system call in progress on this CPU
    /// (`glob` its totals): since it came in, less the interrupts since, never below zero (an
    /// edge read between two programs' updates), plus its time before (r1 and r3 clobbered).
    fn call_time(&mut self, dst: u8, glob: u8) {
        self.ld(1, glob, G_CUR_ENTER);
        self.alu(SUB, dst, 1);
        self.ld(1, glob, G_IRQ_ALL);
        self.ld(3, glob, G_CUR_IRQ);
        self.alu(SUB, 1, 3);
        let floor = self.label();
        let part = self.label();
        self.jmpx(JGE, 1, dst, floor);
        self.alu(SUB, dst, 1);
        self.goto(part);
        self.bind(floor);
        self.movi(dst, 0);
        self.bind(part);
        self.ld(1, glob, G_CUR_PART);
        self.alu(ADD, dst, 1);
    }

    /// `dst` = the bucket of the time in `v` (four per power of two, at most BUCKETS − 1);
    /// r1–r3 clobbered, `v` kept.
    fn bucket(&mut self, dst: u8, v: u8) {
        // r1 = v, r2 = floor(log2 v) by halving.
        self.mov(1, v);
        self.movi(2, 0);
        for s in [32, 16, 8, 4, 2, 1] {
            let skip = self.label();
            self.mov(3, 1);
            self.alui(RSH, 3, s);
            self.jmp(JEQ, 3, 0, skip);
            self.mov(1, 3);
            self.alui(ADD, 2, s);
            self.bind(skip);
        }
        let small = self.label();
        let done = self.label();
        self.jmp(JGT, 2, 1, small);
        // Below 4: the value itself.
        self.mov(dst, v);
        self.goto(done);
        self.bind(small);
        self.mov(1, v);
        self.mov(3, 2);
        self.alui(SUB, 3, 2);
        self.alu(RSH, 1, 3);
        self.alui(AND, 1, 3);
        self.mov(dst, 2);
        self.alui(MUL, dst, 4);
        self.alu(ADD, dst, 1);
        self.bind(done);
        let ok = self.label();
        self.jmp(JGT, dst, BUCKETS as i32 - 1, ok);
        let end = self.label();
        self.goto(end);
        self.bind(ok);
        self.movi(dst, BUCKETS as i32 - 1);
        self.bind(end);
    }

    /// Ends the program: `return 0`, the jumps patched.
    fn finish(mut self) -> Vec<Insn> {
        let exit = self.exit;
        self.bind(exit);
        self.movi(0, 0);
        self.op(JMP | EXIT, 0, 0, 0, 0);
        let mut insns = self.insns;
        for (at, l) in self.jumps {
            let to = self.labels[l.0].expect("every label bound");
            let off = (to as i64 - at as i64 - 1) as i16;
            let i = insns[at].word();
            insns[at] = Insn::from_word((i & !0xffff_0000) | u64::from(off as u16) << 16);
        }
        insns
    }
}

/// One program: its raw tracepoint and its instructions.
struct Program {
    event: &'static str,
    insns: Vec<Insn>,
}

/// `raw_syscalls:sys_enter(regs, id)`: the call counted; timed, its entry kept in this CPU's
/// totals (no hash lookup on the way: a call that blocks is moved into its task's state when
/// the task switches out, and back when it comes in).
fn sys_enter(maps: Maps, scope: Scope, depth: Depth) -> Program {
    let mut p = Prog::new(maps, scope);
    let exit = p.exit;
    p.ours_or(exit);
    // r8 the call's slot number.
    p.ld(8, 6, 8);
    let in_range = p.label();
    p.jmp(JGT, 8, CALL_SLOTS as i32 - 1, in_range);
    let slot = p.label();
    p.goto(slot);
    p.bind(in_range);
    p.movi(8, CALL_SLOTS as i32 - 1);
    p.bind(slot);
    if depth == Depth::Time {
        p.glob();
        p.mov(7, 0);
        p.now(1);
        p.st(7, G_CUR_ENTER, 1);
        p.sti(7, G_CUR_ON, 1);
        p.st(7, G_CUR_NR, 8);
        p.ld(1, 7, G_IRQ_ALL);
        p.st(7, G_CUR_IRQ, 1);
        p.sti(7, G_CUR_PART, 0);
    }
    p.lookup_u32(maps.calls, 8, exit);
    p.incp(0, C_COUNT);
    Program {
        event: "sys_enter",
        insns: p.finish(),
    }
}

/// `raw_syscalls:sys_exit(regs, ret)`: the call's time on the CPU, less the interrupts since
/// its entry (and, for one that blocked, only its time on a CPU), into its number's totals and
/// the current task's running sums on this CPU.
fn sys_exit(maps: Maps, scope: Scope) -> Program {
    let mut p = Prog::new(maps, scope);
    let exit = p.exit;
    p.ours_or(exit);
    p.glob();
    p.mov(7, 0);
    // The call in progress on this CPU is the current task's: every switch away from one of
    // the program's tasks takes its call off the CPU. None: it was entered before the probe
    // was attached.
    p.ld(1, 7, G_CUR_ON);
    p.jmp(JEQ, 1, 0, exit);
    p.sti(7, G_CUR_ON, 0);
    p.now(8);
    p.call_time(8, 7);
    // The task's running sums on this CPU, flushed into its state when it switches out.
    p.incp(7, G_ACC_CALLS);
    p.addp(7, G_ACC_NS, 8);
    p.ld(9, 7, G_CUR_NR);
    p.alui(AND, 9, CALL_SLOTS as i32 - 1);
    p.lookup_u32(maps.calls, 9, exit);
    p.mov(7, 0);
    p.addp(7, C_NS, 8);
    let failed = p.label();
    p.ld(1, 6, 8);
    p.jmp(JSLT, 1, 0, failed);
    let counted = p.label();
    p.goto(counted);
    p.bind(failed);
    p.incp(7, C_ERR);
    p.bind(counted);
    p.bucket(9, 8);
    p.alui(LSH, 9, 3);
    p.alu(ADD, 7, 9);
    p.incp(7, C_HIST);
    Program {
        event: "sys_exit",
        insns: p.finish(),
    }
}

/// `exceptions:page_fault_user(address, regs, error_code)` and `page_fault_kernel` (a fault
/// the kernel took on a user address, copying to or from the program's memory).
fn fault(maps: Maps, scope: Scope, kernel: bool) -> Program {
    let mut p = Prog::new(maps, scope);
    let exit = p.exit;
    p.ours_or(exit);
    if kernel {
        p.ld(1, 6, 0);
        p.alui(RSH, 1, 47);
        p.jmp(JNE, 1, 0, exit);
    }
    p.task();
    p.inc(7, T_FAULTS);
    // Error code bit 0: the page was present (a protection fault: copy-on-write); bit 1: a
    // write.
    p.ld(8, 6, 16);
    p.alui(AND, 8, 3);
    p.alui(LSH, 8, 3);
    p.glob();
    p.alu(ADD, 0, 8);
    p.inc(0, G_FAULT + if kernel { 32 } else { 0 });
    Program {
        event: if kernel {
            "page_fault_kernel"
        } else {
            "page_fault_user"
        },
        insns: p.finish(),
    }
}

/// An interrupt's entry: its start kept in this CPU's totals when it interrupts the program.
fn irq_entry(maps: Maps, scope: Scope, event: &'static str, kind: usize) -> Program {
    let mut p = Prog::new(maps, scope);
    let not = p.label();
    p.ours_or(not);
    p.now(8);
    let put = p.label();
    p.goto(put);
    p.bind(not);
    p.movi(8, 0);
    p.bind(put);
    p.glob();
    p.st(0, G_IRQ_TS + 8 * kind as i16, 8);
    Program {
        event,
        insns: p.finish(),
    }
}

/// An interrupt's exit: its time charged to the program's totals and to the task.
fn irq_exit(maps: Maps, scope: Scope, event: &'static str, kind: usize) -> Program {
    let mut p = Prog::new(maps, scope);
    let exit = p.exit;
    let k = 8 * kind as i16;
    p.glob();
    p.mov(7, 0);
    p.ld(8, 7, G_IRQ_TS + k);
    p.jmp(JEQ, 8, 0, exit);
    p.sti(7, G_IRQ_TS + k, 0);
    p.now(9);
    p.alu(SUB, 9, 8);
    p.incp(7, G_IRQ_N + k);
    p.addp(7, G_IRQ_NS + k, 9);
    p.addp(7, G_IRQ_ALL, 9);
    p.call(PID_TGID);
    p.alui(LSH, 0, 32);
    p.alui(RSH, 0, 32);
    p.mov(1, 0);
    p.lookup_u32(maps.tasks, 1, exit);
    p.add(0, T_IRQ, 9);
    Program {
        event,
        insns: p.finish(),
    }
}

/// Where the switch program keeps its time: below the value [`Prog::task`] builds.
const SWITCH_AT: i16 = -(TASK_BYTES as i16) - 16;

/// `sched:sched_switch(preempt, prev, next, prev_state)`: the task leaving (if the
/// program's) counted and timed off, its running sums and any call in progress moved into
/// its state; the task coming in (if the program's) its wait closed and its call in progress
/// taken up on this CPU; a task never run before (woken new) its first wait kept for its first
/// event.
fn switch(maps: Maps, scope: Scope) -> Program {
    let mut p = Prog::new(maps, scope);
    let exit = p.exit;
    let next = p.label();
    // One time for both sides, taken first: the kernel charges a switch's own work (this
    // program's included) to the task coming in, and so does the bill.
    p.now(8);
    p.st(10, SWITCH_AT, 8);
    p.ours_or(next);
    p.task();
    p.ld(8, 10, SWITCH_AT);
    // On the CPU since it came in.
    p.ld(1, 7, T_IN);
    let was_in = p.label();
    p.jmp(JEQ, 1, 0, was_in);
    p.mov(2, 8);
    p.alu(SUB, 2, 1);
    p.add(7, T_ONCPU, 2);
    p.sti(7, T_IN, 0);
    p.bind(was_in);
    p.st(7, T_OUT, 8);
    // Involuntary: preempted, or still runnable (prev_state 0).
    let vol = p.label();
    let kind = p.label();
    p.ld(1, 6, 0);
    p.alui(AND, 1, 0xff);
    let invol = p.label();
    p.jmp(JNE, 1, 0, invol);
    p.ld(1, 6, 24);
    p.alui(LSH, 1, 32);
    p.alui(RSH, 1, 32);
    p.jmp(JNE, 1, 0, vol);
    p.bind(invol);
    p.sti(7, T_OUT_KIND, 0);
    p.inc(7, T_IVCSW);
    p.goto(kind);
    p.bind(vol);
    p.sti(7, T_OUT_KIND, 1);
    p.inc(7, T_VCSW);
    p.bind(kind);
    // This CPU's running sums of the task, and its call in progress, into its state.
    p.glob();
    p.mov(8, 0);
    // Nothing else of the program's ran here since the task came in: the sums are its own.
    p.ld(2, 8, G_ACC_CALLS);
    p.add(7, T_CALLS, 2);
    p.ld(2, 8, G_ACC_NS);
    p.add(7, T_CALL_NS, 2);
    p.sti(8, G_ACC_CALLS, 0);
    p.sti(8, G_ACC_NS, 0);
    p.sti(8, G_ACC_TID, 0);
    let idle = p.label();
    p.ld(1, 8, G_CUR_ON);
    p.jmp(JEQ, 1, 0, idle);
    p.sti(8, G_CUR_ON, 0);
    // The call's time on the CPU so far.
    p.ld(2, 10, SWITCH_AT);
    p.call_time(2, 8);
    p.st(7, T_PART, 2);
    p.ld(1, 8, G_CUR_NR);
    p.st(7, T_NR, 1);
    p.sti(7, T_INCALL, 1);
    p.bind(idle);
    // Named by its pointer from now on, unless it exited: then this switch ends its life.
    let alive = p.label();
    p.ld(1, 7, T_EXIT);
    p.jmp(JEQ, 1, 0, alive);
    p.ld(1, 10, SWITCH_AT);
    p.st(7, T_EXIT, 1);
    p.goto(next);
    p.bind(alive);
    p.ld(1, 6, 8);
    p.op(STX | MEM | DW, 10, 1, -16, 0);
    p.op(STX | MEM | DW, 10, 9, -24, 0);
    p.ld_map(1, maps.ptrs);
    p.mov(2, 10);
    p.alui(ADD, 2, -16);
    p.mov(3, 10);
    p.alui(ADD, 3, -24);
    p.movi(4, ANY);
    p.call(UPDATE);
    p.bind(next);
    // r8 this CPU's totals: no first wait pending unless the task coming in is new.
    p.glob();
    p.mov(8, 0);
    p.sti(8, G_PEND_IN, 0);
    p.ld(1, 6, 16);
    let known = p.label();
    p.op(STX | MEM | DW, 10, 1, -16, 0);
    p.ld_map(1, maps.ptrs);
    p.mov(2, 10);
    p.alui(ADD, 2, -16);
    p.call(LOOKUP);
    p.jmp(JNE, 0, 0, known);
    // Not the program's (yet): woken new? Its first wait waits for its first event.
    p.ld_map(1, maps.newborn);
    p.mov(2, 10);
    p.alui(ADD, 2, -16);
    p.call(LOOKUP);
    p.jmp(JEQ, 0, 0, exit);
    p.ld(9, 0, 0);
    p.ld(1, 10, SWITCH_AT);
    p.st(8, G_PEND_IN, 1);
    p.st(8, G_PEND_WOKEN, 9);
    p.alu(SUB, 1, 9);
    p.st(8, G_PEND_WAIT, 1);
    p.ld_map(1, maps.newborn);
    p.mov(2, 10);
    p.alui(ADD, 2, -16);
    p.call(DELETE);
    p.goto(exit);
    p.bind(known);
    p.op(LDX | MEM | W, 1, 0, 0, 0);
    let fd = p.maps.tasks;
    p.lookup_u32(fd, 1, exit);
    p.mov(7, 0);
    p.ld(9, 10, SWITCH_AT);
    p.st(7, T_IN, 9);
    p.ld(1, 7, T_TID);
    p.alui(LSH, 1, 32);
    p.alui(RSH, 1, 32);
    p.st(8, G_ACC_TID, 1);
    // A call in progress goes on on this CPU.
    let no_call = p.label();
    p.ld(1, 7, T_INCALL);
    p.jmp(JEQ, 1, 0, no_call);
    p.sti(7, T_INCALL, 0);
    p.sti(8, G_CUR_ON, 1);
    p.st(8, G_CUR_ENTER, 9);
    p.ld(1, 7, T_NR);
    p.st(8, G_CUR_NR, 1);
    p.ld(1, 7, T_PART);
    p.st(8, G_CUR_PART, 1);
    p.ld(1, 8, G_IRQ_ALL);
    p.st(8, G_CUR_IRQ, 1);
    p.bind(no_call);
    p.ld(1, 7, T_OUT);
    p.jmp(JEQ, 1, 0, exit);
    p.sti(7, T_OUT, 0);
    p.mov(2, 9);
    p.alu(SUB, 2, 1);
    p.add(7, T_OFF, 2);
    // Preempted: all of it was a wait for a CPU.
    p.ld(3, 7, T_OUT_KIND);
    let blocked = p.label();
    p.jmp(JNE, 3, 0, blocked);
    p.add(7, T_WAIT, 2);
    p.goto(exit);
    p.bind(blocked);
    // Blocked, then woken: blocked until the wake-up, waiting after it.
    p.ld(3, 7, T_WOKEN);
    p.sti(7, T_WOKEN, 0);
    let unwoken = p.label();
    p.jmpx(JGT, 1, 3, unwoken);
    p.mov(4, 3);
    p.alu(SUB, 4, 1);
    p.add(7, T_BLOCKED, 4);
    p.alu(SUB, 9, 3);
    p.add(7, T_WAIT, 9);
    p.bucket(6, 9);
    p.alui(LSH, 6, 3);
    p.alu(ADD, 8, 6);
    p.incp(8, G_LAT);
    p.goto(exit);
    p.bind(unwoken);
    p.add(7, T_BLOCKED, 2);
    Program {
        event: "sched_switch",
        insns: p.finish(),
    }
}

/// `sched:sched_wakeup_new(p)`: a task made, by anyone, about to wait for its first run; kept
/// by pointer until it comes in (then forgotten).
fn wakeup_new(maps: Maps, scope: Scope) -> Program {
    let mut p = Prog::new(maps, scope);
    p.ld(1, 6, 0);
    p.op(STX | MEM | DW, 10, 1, -16, 0);
    p.now(1);
    p.op(STX | MEM | DW, 10, 1, -24, 0);
    p.ld_map(1, maps.newborn);
    p.mov(2, 10);
    p.alui(ADD, 2, -16);
    p.mov(3, 10);
    p.alui(ADD, 3, -24);
    p.movi(4, ANY);
    p.call(UPDATE);
    Program {
        event: "sched_wakeup_new",
        insns: p.finish(),
    }
}

/// `sched:sched_wakeup(p)`: when a task of the program's became runnable again.
fn wakeup(maps: Maps, scope: Scope) -> Program {
    let mut p = Prog::new(maps, scope);
    let exit = p.exit;
    p.ld(1, 6, 0);
    p.task_of(1, exit);
    p.ld(1, 7, T_OUT);
    p.jmp(JEQ, 1, 0, exit);
    p.now(8);
    p.st(7, T_WOKEN, 8);
    p.inc(7, T_WAKEUPS);
    p.glob();
    p.inc(0, G_WAKEUPS);
    Program {
        event: "sched_wakeup",
        insns: p.finish(),
    }
}

/// A counter of the totals, bumped when the current task is the program's.
fn count(maps: Maps, scope: Scope, event: &'static str, at: i16) -> Program {
    let mut p = Prog::new(maps, scope);
    let exit = p.exit;
    p.ours_or(exit);
    p.glob();
    p.inc(0, at);
    Program {
        event,
        insns: p.finish(),
    }
}

/// `sched:sched_process_exec(p, old_pid, bprm)`: a program executed, and the task's name
/// taken again (it was its parent's).
fn exec(maps: Maps, scope: Scope) -> Program {
    let mut p = Prog::new(maps, scope);
    let exit = p.exit;
    p.ours_or(exit);
    p.task();
    p.mov(1, 7);
    p.alui(ADD, 1, i32::from(T_COMM));
    p.movi(2, 16);
    p.call(COMM);
    p.glob();
    p.inc(0, G_EXECS);
    Program {
        event: "sched_process_exec",
        insns: p.finish(),
    }
}

/// `task:task_newtask(task, clone_flags)`: a thread or a process made by the program.
fn newtask(maps: Maps, scope: Scope) -> Program {
    let mut p = Prog::new(maps, scope);
    let exit = p.exit;
    p.ours_or(exit);
    p.ld(8, 6, 8);
    p.glob();
    let thread = p.label();
    p.jmp(JSET, 8, CLONE_THREAD, thread);
    p.inc(0, G_PROCS);
    p.goto(exit);
    p.bind(thread);
    p.inc(0, G_THREADS);
    Program {
        event: "task_newtask",
        insns: p.finish(),
    }
}

/// `sched:sched_process_exit(p)`: the task's end, and its pointer forgotten (the kernel
/// reuses it).
fn task_exit(maps: Maps, scope: Scope) -> Program {
    let mut p = Prog::new(maps, scope);
    let exit = p.exit;
    p.ours_or(exit);
    p.task();
    p.now(1);
    p.st(7, T_EXIT, 1);
    // Its argument is the current task's pointer.
    p.ld(1, 6, 0);
    p.op(STX | MEM | DW, 10, 1, -16, 0);
    p.ld_map(1, maps.ptrs);
    p.mov(2, 10);
    p.alui(ADD, 2, -16);
    p.call(DELETE);
    Program {
        event: "sched_process_exit",
        insns: p.finish(),
    }
}

/// `tlb:tlb_flush(reason, pages)` in the program's context, by reason.
fn tlb(maps: Maps, scope: Scope) -> Program {
    let mut p = Prog::new(maps, scope);
    let exit = p.exit;
    p.ours_or(exit);
    p.ld(8, 6, 0);
    p.alui(AND, 8, 7);
    p.alui(LSH, 8, 3);
    p.glob();
    p.alu(ADD, 0, 8);
    p.inc(0, G_TLB);
    Program {
        event: "tlb_flush",
        insns: p.finish(),
    }
}

/// Every program of a probe.
fn programs(maps: Maps, scope: Scope, depth: Depth) -> Vec<Program> {
    let mut v = vec![sys_enter(maps, scope, depth)];
    if depth == Depth::Time {
        v.push(sys_exit(maps, scope));
    }
    v.push(switch(maps, scope));
    v.push(wakeup(maps, scope));
    v.push(wakeup_new(maps, scope));
    v.push(task_exit(maps, scope));
    v.push(newtask(maps, scope));
    v.push(exec(maps, scope));
    v.push(count(maps, scope, "signal_deliver", G_SIGNALS));
    v.push(fault(maps, scope, false));
    v.push(fault(maps, scope, true));
    v.push(tlb(maps, scope));
    let irqs: [(&'static str, &'static str, usize); 7] = [
        ("irq_handler_entry", "irq_handler_exit", 0),
        ("softirq_entry", "softirq_exit", 1),
        ("local_timer_entry", "local_timer_exit", 2),
        ("call_function_entry", "call_function_exit", 3),
        ("call_function_single_entry", "call_function_single_exit", 3),
        ("reschedule_entry", "reschedule_exit", 4),
        ("irq_work_entry", "irq_work_exit", 5),
    ];
    for (entry, exit, kind) in irqs {
        v.push(irq_entry(maps, scope, entry, kind));
        v.push(irq_exit(maps, scope, exit, kind));
    }
    v
}

const MAP_HASH: u32 = 1;
const MAP_PERCPU_ARRAY: u32 = 6;
const MAP_LOOKUP_ELEM: libc::c_long = 1;
const MAP_GET_NEXT_KEY: libc::c_long = 4;

fn map_create(kind: u32, key: u32, value: u32, entries: u32, name: &[u8]) -> io::Result<OwnedFd> {
    let mut attr = [0u8; 128];
    put32(&mut attr, 0, kind);
    put32(&mut attr, 4, key);
    put32(&mut attr, 8, value);
    put32(&mut attr, 12, entries);
    let n = name.len().min(15);
    attr[28..28 + n].copy_from_slice(&name[..n]);
    Ok(owned(bpf(MAP_CREATE, &mut attr)?))
}

/// Looks `key` up in map `fd` into `value` (a per-CPU map's value: every possible CPU's, each
/// rounded up to 8 bytes); false when it has none.
fn map_lookup(fd: &OwnedFd, key: &[u8], value: &mut [u8]) -> io::Result<bool> {
    let mut attr = [0u8; 128];
    put32(&mut attr, 0, fd.as_raw_fd() as u32);
    put64(&mut attr, 8, key.as_ptr() as u64);
    put64(&mut attr, 16, value.as_mut_ptr() as u64);
    match bpf(MAP_LOOKUP_ELEM, &mut attr) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The key after `key` (the first with None) in hash map `fd`, or None at the end.
fn next_key(fd: &OwnedFd, key: Option<u32>) -> io::Result<Option<u32>> {
    let k = key.unwrap_or(0).to_ne_bytes();
    let mut next = [0u8; 4];
    let mut attr = [0u8; 128];
    put32(&mut attr, 0, fd.as_raw_fd() as u32);
    if key.is_some() {
        put64(&mut attr, 8, k.as_ptr() as u64);
    }
    put64(&mut attr, 16, next.as_mut_ptr() as u64);
    match bpf(MAP_GET_NEXT_KEY, &mut attr) {
        Ok(_) => Ok(Some(u32::from_ne_bytes(next))),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// One system call's totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallTotals {
    /// The call's number (`CALL_SLOTS − 1`: any number at or above it).
    pub nr: u32,
    /// Calls entered.
    pub count: u64,
    /// Calls that returned an error (timed probes only).
    pub errors: u64,
    /// Time on the CPU in the kernel between entry and exit, ns (timed probes only).
    pub time_ns: u64,
    /// The calls by time, [`BUCKETS`] buckets (see [`bucket_bounds`]).
    pub hist: Vec<u64>,
}

/// One task's totals.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskTotals {
    /// Thread id.
    pub tid: u32,
    /// Process id (thread group).
    pub pid: u32,
    /// Its name (`comm`) when first seen.
    pub comm: String,
    /// System calls entered (timed probes only).
    pub calls: u64,
    /// Their time on the CPU in the kernel, ns.
    pub call_ns: u64,
    /// Page faults.
    pub faults: u64,
    /// Switches away while blocking (voluntary).
    pub voluntary: u64,
    /// Switches away while runnable (preempted).
    pub involuntary: u64,
    /// Time on a CPU, ns.
    pub oncpu_ns: u64,
    /// Time runnable, waiting for a CPU, ns.
    pub wait_ns: u64,
    /// Time blocked (asleep, in I/O, on a lock), ns.
    pub blocked_ns: u64,
    /// Time in interrupts while it was current, ns.
    pub irq_ns: u64,
    /// Wake-ups.
    pub wakeups: u64,
    /// When it was first seen and when it exited (0: had not), `CLOCK_MONOTONIC` ns.
    pub first_ns: u64,
    /// See `first_ns`.
    pub exit_ns: u64,
}

/// Everything the probe added up.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Totals {
    /// System calls by number, only those entered.
    pub calls: Vec<CallTotals>,
    /// Tasks, by thread id.
    pub tasks: Vec<TaskTotals>,
    /// Page faults, indexed by the error code's low bits (1: the page was present, 2: a
    /// write): four taken in user mode, then four the kernel took on user addresses.
    pub faults: [u64; 8],
    /// Interrupts while a task was current, by [`IRQ_KINDS`]: count and ns.
    pub irqs: [(u64, u64); 6],
    /// Signals delivered, threads made, processes made, programs executed, wake-ups.
    pub signals: u64,
    /// See `signals`.
    pub threads: u64,
    /// See `signals`.
    pub processes: u64,
    /// See `signals`.
    pub execs: u64,
    /// See `signals`.
    pub wakeups: u64,
    /// TLB flushes in the program's context by [`TLB_REASONS`].
    pub tlb: [u64; 5],
    /// Wake-up latencies (woken → on a CPU) by bucket.
    pub wake_latency: Vec<u64>,
    /// Tasks not followed because the task hash was full.
    pub missed_tasks: u64,
    /// Program runs the kernel skipped (another ran on that CPU), by tracepoint.
    pub skipped: BTreeMap<String, u64>,
}

/// The lower and upper bound of bucket `b`, ns.
pub fn bucket_bounds(b: usize) -> (f64, f64) {
    if b < 4 {
        return (b as f64, b as f64 + 1.0);
    }
    let l = (b / 4) as i32;
    let q = (b % 4) as f64;
    let width = 2f64.powi(l - 2);
    let lo = 2f64.powi(l) + q * width;
    (lo, lo + width)
}

/// The bucket of `ns`, as the programs compute it.
pub fn bucket_of(ns: u64) -> usize {
    if ns < 4 {
        return ns as usize;
    }
    let l = 63 - ns.leading_zeros() as usize;
    let q = ((ns >> (l - 2)) & 3) as usize;
    (4 * l + q).min(BUCKETS - 1)
}

/// The probe: its maps, programs and attachments; detached and closed on drop.
pub struct Probe {
    tasks: OwnedFd,
    glob: OwnedFd,
    calls: OwnedFd,
    _maps: [OwnedFd; 2],
    progs: Vec<(&'static str, OwnedFd)>,
    links: Vec<OwnedFd>,
    /// Tracepoints this kernel lacks (optional ones, skipped).
    missing: Vec<&'static str>,
    cpus: usize,
    misses_before: Vec<u64>,
    depth: Depth,
}

impl Probe {
    /// Loads the programs for `scope` at `depth`; attached by [`Probe::attach`].
    pub fn load(scope: Scope, depth: Depth) -> Result<Probe, Unavailable> {
        Probe::load_some(scope, depth, false)
    }

    /// Loads only the system calls' programs: what a call pays the probe, for its
    /// calibration, at a fraction of the whole probe's attaching time.
    pub fn load_calls_only(scope: Scope, depth: Depth) -> Result<Probe, Unavailable> {
        Probe::load_some(scope, depth, true)
    }

    fn load_some(scope: Scope, depth: Depth, calls_only: bool) -> Result<Probe, Unavailable> {
        if std::fs::read_to_string("/proc/sys/net/core/bpf_jit_enable")
            .is_ok_and(|s| s.trim() == "0")
        {
            return Err(Unavailable(
                "BPF's JIT is off (net.core.bpf_jit_enable is 0)".into(),
            ));
        }
        let cpus =
            possible_cpus().map_err(|e| Unavailable(format!("counting the possible CPUs: {e}")))?;
        let make = |kind, key, value: usize, entries, name: &[u8]| {
            map_create(kind, key, value as u32, entries, name)
                .map_err(|e| refused("creating its maps", &e))
        };
        let tasks = make(MAP_HASH, 4, TASK_BYTES, MAX_TASKS, b"oscost_tasks")?;
        let ptrs = make(MAP_HASH, 8, 8, MAX_TASKS, b"oscost_ptrs")?;
        let newborn = make(MAP_HASH, 8, 8, MAX_TASKS, b"oscost_newborn")?;
        let glob = make(MAP_PERCPU_ARRAY, 4, GLOB_BYTES, 1, b"oscost_glob")?;
        let calls = make(MAP_PERCPU_ARRAY, 4, CALL_BYTES, CALL_SLOTS, b"oscost_calls")?;
        let maps = Maps {
            tasks: tasks.as_raw_fd(),
            ptrs: ptrs.as_raw_fd(),
            newborn: newborn.as_raw_fd(),
            glob: glob.as_raw_fd(),
            calls: calls.as_raw_fd(),
        };
        let mut progs = Vec::new();
        let mut all = programs(maps, scope, depth);
        if calls_only {
            all.retain(|p| matches!(p.event, "sys_enter" | "sys_exit"));
        }
        for prog in all {
            let fd = load(&prog.insns, &program_name(prog.event))
                .map_err(|e| refused(&format!("loading the program of {}", prog.event), &e))?;
            progs.push((prog.event, fd));
        }
        Ok(Probe {
            tasks,
            glob,
            calls,
            _maps: [ptrs, newborn],
            progs,
            links: Vec::new(),
            missing: Vec::new(),
            cpus,
            misses_before: Vec::new(),
            depth,
        })
    }

    /// How much the probe does per system call.
    pub fn depth(&self) -> Depth {
        self.depth
    }

    /// Attaches every program whose tracepoint this kernel has: counting starts. A required
    /// tracepoint (system calls, the scheduler's) missing is an error.
    pub fn attach(&mut self) -> io::Result<()> {
        self.misses_before = self.misses();
        for (event, fd) in &self.progs {
            match attach_raw(event, fd) {
                Ok(l) => self.links.push(l),
                Err(e)
                    if e.raw_os_error() == Some(libc::ENOENT)
                        && !matches!(
                            *event,
                            "sys_enter" | "sys_exit" | "sched_switch" | "sched_wakeup"
                        ) =>
                {
                    self.missing.push(event);
                }
                Err(e) => {
                    self.links.clear();
                    return Err(attach_error(event, e));
                }
            }
        }
        Ok(())
    }

    /// Detaches every program: counting stops.
    pub fn detach(&mut self) {
        self.links.clear();
    }

    /// The optional tracepoints this kernel lacks, whose counts read as zero.
    pub fn missing(&self) -> &[&'static str] {
        &self.missing
    }

    fn misses(&self) -> Vec<u64> {
        self.progs
            .iter()
            .map(|(_, p)| prog_misses(p).unwrap_or(0))
            .collect()
    }

    /// A per-CPU value of `bytes` bytes, summed over the CPUs as u64 words.
    fn per_cpu(&self, fd: &OwnedFd, key: u32, bytes: usize) -> io::Result<Vec<u64>> {
        let stride = bytes.div_ceil(8) * 8;
        let mut v = vec![0u8; stride * self.cpus];
        map_lookup(fd, &key.to_ne_bytes(), &mut v)?;
        let mut sum = vec![0u64; bytes / 8];
        for cpu in 0..self.cpus {
            for (i, s) in sum.iter_mut().enumerate() {
                let at = cpu * stride + 8 * i;
                *s += u64::from_ne_bytes(v[at..at + 8].try_into().expect("8 bytes"));
            }
        }
        Ok(sum)
    }

    /// Everything counted so far (read after [`Probe::detach`] for a consistent view).
    pub fn read(&self) -> io::Result<Totals> {
        let w = |off: i16| off as usize / 8;
        let g = self.per_cpu(&self.glob, 0, GLOB_BYTES)?;
        let mut t = Totals::default();
        for (i, f) in t.faults.iter_mut().enumerate() {
            *f = g[w(G_FAULT) + i];
        }
        for (k, irq) in t.irqs.iter_mut().enumerate() {
            *irq = (g[w(G_IRQ_N) + k], g[w(G_IRQ_NS) + k]);
        }
        t.signals = g[w(G_SIGNALS)];
        t.threads = g[w(G_THREADS)];
        t.processes = g[w(G_PROCS)];
        t.execs = g[w(G_EXECS)];
        t.wakeups = g[w(G_WAKEUPS)];
        for (i, n) in t.tlb.iter_mut().enumerate() {
            *n = g[w(G_TLB) + i];
        }
        t.missed_tasks = g[w(G_MISSED)];
        t.wake_latency = g[w(G_LAT)..w(G_LAT) + BUCKETS].to_vec();
        for nr in 0..CALL_SLOTS {
            let c = self.per_cpu(&self.calls, nr, CALL_BYTES)?;
            if c[w(C_COUNT)] == 0 && c[w(C_NS)] == 0 {
                continue;
            }
            t.calls.push(CallTotals {
                nr,
                count: c[w(C_COUNT)],
                errors: c[w(C_ERR)],
                time_ns: c[w(C_NS)],
                hist: c[w(C_HIST)..w(C_HIST) + BUCKETS].to_vec(),
            });
        }
        let mut key = None;
        let mut value = vec![0u8; TASK_BYTES];
        while let Some(k) = next_key(&self.tasks, key)? {
            key = Some(k);
            if !map_lookup(&self.tasks, &k.to_ne_bytes(), &mut value)? {
                continue;
            }
            let at = |off: i16| {
                let o = off as usize;
                u64::from_ne_bytes(value[o..o + 8].try_into().expect("8 bytes"))
            };
            let comm = &value[T_COMM as usize..T_COMM as usize + 16];
            let end = comm.iter().position(|&b| b == 0).unwrap_or(16);
            let id = at(T_TID);
            t.tasks.push(TaskTotals {
                tid: id as u32,
                pid: (id >> 32) as u32,
                comm: String::from_utf8_lossy(&comm[..end]).into_owned(),
                calls: at(T_CALLS),
                call_ns: at(T_CALL_NS),
                faults: at(T_FAULTS),
                voluntary: at(T_VCSW),
                involuntary: at(T_IVCSW),
                oncpu_ns: at(T_ONCPU),
                wait_ns: at(T_WAIT),
                blocked_ns: at(T_BLOCKED),
                irq_ns: at(T_IRQ),
                wakeups: at(T_WAKEUPS),
                first_ns: at(T_FIRST),
                exit_ns: at(T_EXIT),
            });
        }
        // Sums still on a CPU (a task running when the probe was detached).
        let stride = GLOB_BYTES;
        let mut v = vec![0u8; stride * self.cpus];
        map_lookup(&self.glob, &0u32.to_ne_bytes(), &mut v)?;
        for cpu in 0..self.cpus {
            let at = |off: i16| {
                let o = cpu * stride + off as usize;
                u64::from_ne_bytes(v[o..o + 8].try_into().expect("8 bytes"))
            };
            let tid = at(G_ACC_TID) as u32;
            if let Some(k) = t.tasks.iter_mut().find(|k| k.tid == tid && tid != 0) {
                k.calls += at(G_ACC_CALLS);
                k.call_ns += at(G_ACC_NS);
            }
        }
        t.tasks.sort_by_key(|k| k.tid);
        for ((event, _), (now, before)) in self
            .progs
            .iter()
            .zip(self.misses().into_iter().zip(&self.misses_before))
        {
            if now > *before {
                *t.skipped.entry((*event).to_owned()).or_insert(0) += now - before;
            }
        }
        Ok(t)
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.links.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_bound_their_values() {
        for ns in [0u64, 1, 3, 4, 5, 7, 8, 100, 1000, 12_345, 1 << 20, 3 << 29] {
            let b = bucket_of(ns);
            let (lo, hi) = bucket_bounds(b);
            assert!(
                lo <= ns as f64 && (ns as f64) < hi,
                "{ns} in {b}: {lo}..{hi}"
            );
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn every_jump_lands_inside_its_program() {
        let maps = Maps {
            tasks: 3,
            ptrs: 4,
            newborn: 8,
            glob: 5,
            calls: 6,
        };
        for depth in [Depth::Count, Depth::Time] {
            for p in programs(maps, Scope::Cgroup(7), depth) {
                let n = p.insns.len() as i64;
                assert!(n < 4096, "{}: {n} instructions", p.event);
                for (at, i) in p.insns.iter().enumerate() {
                    let class = i.code() & 0x07;
                    let op = i.code() & 0xf0;
                    if class == JMP && op != CALL && op != EXIT {
                        let off = i64::from((i.word() >> 16) as u16 as i16);
                        let to = at as i64 + 1 + off;
                        assert!((0..n).contains(&to), "{}: jump at {at} to {to}", p.event);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod live {
    use super::*;

    fn getppid_n(n: u32) {
        for _ in 0..n {
            // SAFETY: getppid has no arguments and no memory effects.
            unsafe { libc::syscall(libc::SYS_getppid) };
        }
    }

    #[test]
    fn a_probe_counts_this_process_calls_faults_and_switches() {
        let pid = std::process::id();
        let mut p = match Probe::load(Scope::Process(pid), Depth::Time) {
            Ok(p) => p,
            // SAFETY: geteuid has no memory effects.
            Err(e) if unsafe { libc::geteuid() } != 0 => {
                eprintln!("skip: not root: {}", e.0);
                return;
            }
            Err(e) => panic!("as root, BPF must load: {}", e.0),
        };
        p.attach().expect("attach");
        getppid_n(1000);
        let v = vec![1u8; 64 * 4096];
        std::hint::black_box(&v);
        std::thread::sleep(std::time::Duration::from_millis(2));
        p.detach();
        let t = p.read().expect("read");
        let getppid = t
            .calls
            .iter()
            .find(|c| c.nr == libc::SYS_getppid as u32)
            .expect("getppid counted");
        assert_eq!(getppid.count, 1000, "{t:?}");
        assert_eq!(getppid.errors, 0);
        assert_eq!(getppid.hist.iter().sum::<u64>(), 1000);
        assert!(getppid.time_ns > 0);
        assert!(t.faults.iter().sum::<u64>() >= 60, "{:?}", t.faults);
        let me = t
            .tasks
            .iter()
            .find(|k| k.tid == gettid())
            .expect("this thread");
        assert!(me.voluntary >= 1, "{me:?}");
        assert!(me.blocked_ns >= 1_000_000, "{me:?}");
        assert!(me.calls >= 1000);
    }

    fn gettid() -> u32 {
        // SAFETY: gettid has no arguments and no memory effects.
        unsafe { libc::syscall(libc::SYS_gettid) as u32 }
    }
}

/// The name of system call `nr` on this machine's architecture (`syscall_<nr>` for one it does
/// not know; the last slot collects every number from [`CALL_SLOTS`] − 1 up, and invalid ones).
pub fn call_name(nr: u32) -> String {
    if nr == CALL_SLOTS - 1 {
        return format!("(numbers ≥ {nr} or invalid)");
    }
    syscalls::Sysno::new(nr as usize)
        .map(|s| s.name().to_owned())
        .unwrap_or_else(|| format!("syscall_{nr}"))
}
