//! The bill's BPF assembler: the instruction parts, the kernel's helpers, and a program
//! builder with labels and the few idioms the probe's programs share (is the current task the
//! program's, its state, this CPU's totals, a time's bucket).

use super::*;
use crate::bpf::Insn;

// Opcode parts (`include/uapi/linux/bpf.h`).
pub(super) const LDX: u8 = 0x01;
pub(super) const ST: u8 = 0x02;
pub(super) const STX: u8 = 0x03;
pub(super) const ALU64: u8 = 0x07;
pub(super) const JMP: u8 = 0x05;
pub(super) const W: u8 = 0x00;
pub(super) const DW: u8 = 0x18;
pub(super) const MEM: u8 = 0x60;
pub(super) const ATOMIC: u8 = 0xc0;
pub(super) const X: u8 = 0x08;
pub(super) const ADD: u8 = 0x00;
pub(super) const SUB: u8 = 0x10;
pub(super) const MUL: u8 = 0x20;
pub(super) const AND: u8 = 0x50;
pub(super) const LSH: u8 = 0x60;
pub(super) const RSH: u8 = 0x70;
pub(super) const MOV: u8 = 0xb0;
pub(super) const JA: u8 = 0x00;
pub(super) const JEQ: u8 = 0x10;
pub(super) const JGT: u8 = 0x20;
pub(super) const JGE: u8 = 0x30;
pub(super) const JSET: u8 = 0x40;
pub(super) const JNE: u8 = 0x50;
pub(super) const JSLT: u8 = 0xc0;
pub(super) const CALL: u8 = 0x80;
pub(super) const EXIT: u8 = 0x90;

// Helpers (`enum bpf_func_id`).
pub(super) const LOOKUP: i32 = 1;
pub(super) const UPDATE: i32 = 2;
pub(super) const DELETE: i32 = 3;
pub(super) const KTIME: i32 = 5;
pub(super) const SMP_ID: i32 = 8;
pub(super) const PID_TGID: i32 = 14;
pub(super) const COMM: i32 = 16;
pub(super) const CGROUP_ID: i32 = 80;

pub(super) const CLONE_THREAD: i32 = 0x10000;
pub(super) const NOEXIST: i32 = 1;
pub(super) const ANY: i32 = 0;
// `BPF_XCHG`: the atomic operation that swaps and returns the old value.
pub(super) const XCHG: i32 = 0xe1;
// The argument's stack slots of the scope's test: a tgid (4 bytes) and a thread count.
const OURS_KEY: i16 = -(TASK_BYTES as i16) - 24;
const OURS_VAL: i16 = -(TASK_BYTES as i16) - 32;

/// A jump target.
#[derive(Clone, Copy)]
pub(super) struct Label(usize);

/// A program under construction, its jumps patched when it is finished.
pub(super) struct Prog {
    pub(super) insns: Vec<Insn>,
    pub(super) labels: Vec<Option<usize>>,
    pub(super) jumps: Vec<(usize, Label)>,
    pub(super) maps: Maps,
    pub(super) scope: Scope,
    pub(super) exit: Label,
}

/// The maps' descriptors, for the programs' loads.
#[derive(Clone, Copy)]
pub(super) struct Maps {
    pub(super) tasks: i32,
    pub(super) ptrs: i32,
    pub(super) newborn: i32,
    pub(super) glob: i32,
    pub(super) calls: i32,
    /// The processes followed besides the attached one (tgid → its threads alive).
    pub(super) followed: i32,
    /// Two words every CPU reads, at [`C_ANY`] and [`C_PENDING`].
    pub(super) ctl: i32,
}

impl Prog {
    pub(super) fn new(maps: Maps, scope: Scope) -> Prog {
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
    pub(super) fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }
    pub(super) fn bind(&mut self, l: Label) {
        self.labels[l.0] = Some(self.insns.len());
    }
    pub(super) fn op(&mut self, code: u8, dst: u8, src: u8, off: i16, imm: i32) {
        self.insns.push(Insn::new(code, dst, src, off, imm));
    }
    pub(super) fn mov(&mut self, dst: u8, src: u8) {
        self.op(ALU64 | MOV | X, dst, src, 0, 0);
    }
    pub(super) fn movi(&mut self, dst: u8, imm: i32) {
        self.op(ALU64 | MOV, dst, 0, 0, imm);
    }
    pub(super) fn alu(&mut self, op: u8, dst: u8, src: u8) {
        self.op(ALU64 | op | X, dst, src, 0, 0);
    }
    pub(super) fn alui(&mut self, op: u8, dst: u8, imm: i32) {
        self.op(ALU64 | op, dst, 0, 0, imm);
    }
    pub(super) fn ld(&mut self, dst: u8, base: u8, off: i16) {
        self.op(LDX | MEM | DW, dst, base, off, 0);
    }
    pub(super) fn st(&mut self, base: u8, off: i16, src: u8) {
        self.op(STX | MEM | DW, base, src, off, 0);
    }
    pub(super) fn sti(&mut self, base: u8, off: i16, imm: i32) {
        self.op(ST | MEM | DW, base, 0, off, imm);
    }
    /// `lock *(u64 *)(base + off) += src`: a program on this CPU may run inside another.
    pub(super) fn add(&mut self, base: u8, off: i16, src: u8) {
        self.op(STX | ATOMIC | DW, base, src, off, ADD as i32);
    }
    pub(super) fn inc(&mut self, base: u8, off: i16) {
        self.movi(1, 1);
        self.add(base, off, 1);
    }
    /// `*(u64 *)(base + off) += src` without a lock, for this CPU's own values (r1 clobbered;
    /// `src` is not r1).
    pub(super) fn addp(&mut self, base: u8, off: i16, src: u8) {
        self.ld(1, base, off);
        self.alu(ADD, 1, src);
        self.st(base, off, 1);
    }
    pub(super) fn incp(&mut self, base: u8, off: i16) {
        self.ld(1, base, off);
        self.alui(ADD, 1, 1);
        self.st(base, off, 1);
    }
    pub(super) fn ld_imm64(&mut self, dst: u8, v: u64) {
        self.op(0x18, dst, 0, 0, v as u32 as i32);
        self.op(0, 0, 0, 0, (v >> 32) as u32 as i32);
    }
    pub(super) fn ld_map(&mut self, dst: u8, fd: i32) {
        self.op(0x18, dst, 1, 0, fd);
        self.op(0, 0, 0, 0, 0);
    }
    /// `dst` = the address of byte `off` of the one value of array map `fd`: a load with no
    /// helper call.
    pub(super) fn ld_map_value(&mut self, dst: u8, fd: i32, off: i32) {
        self.op(0x18, dst, 2, 0, fd);
        self.op(0, 0, 0, 0, off);
    }
    /// `src = xchg(*(u64 *)(base + off), src)`: a mark taken exactly once even when another
    /// program on this CPU runs inside this one.
    pub(super) fn xchg(&mut self, base: u8, off: i16, src: u8) {
        self.op(STX | ATOMIC | DW, base, src, off, XCHG);
    }
    pub(super) fn call(&mut self, helper: i32) {
        self.op(JMP | CALL, 0, 0, 0, helper);
    }
    pub(super) fn jmp(&mut self, op: u8, dst: u8, imm: i32, to: Label) {
        self.jumps.push((self.insns.len(), to));
        self.op(JMP | op, dst, 0, 0, imm);
    }
    pub(super) fn jmpx(&mut self, op: u8, dst: u8, src: u8, to: Label) {
        self.jumps.push((self.insns.len(), to));
        self.op(JMP | op | X, dst, src, 0, 0);
    }
    pub(super) fn goto(&mut self, to: Label) {
        self.jmp(JA, 0, 0, to);
    }

    /// Goes to `not` unless the current task is the program's (r1–r5, r0 clobbered).
    pub(super) fn ours_or(&mut self, not: Label) {
        let ours = self.label();
        // A task known by pointer came in on this CPU: the switch program said so, and the hot
        // programs (a call's entry, a fault) need not ask the kernel whose it is.
        self.movi(1, 0);
        let test = self.label();
        let fd = self.maps.glob;
        self.lookup_u32(fd, 1, test);
        self.ld(1, 0, G_OURS);
        self.jmp(JNE, 1, 0, ours);
        self.bind(test);
        match self.scope {
            Scope::Cgroup(id) => {
                self.call(CGROUP_ID);
                self.ld_imm64(1, id);
                self.jmpx(JNE, 0, 1, not);
            }
            Scope::Process(pid) => {
                self.call(PID_TGID);
                self.alui(RSH, 0, 32);
                // The attached process's own events pay what they paid before children were
                // followed: one comparison.
                self.jmp(JEQ, 0, pid as i32, ours);
                self.descendant_or(ours, not);
            }
        }
        self.bind(ours);
    }

    /// For a task outside the attached process, its tgid in r0: goes to `ours` when it is a
    /// process the program made (followed already, or adopted now: a child of the program's
    /// just come in on this CPU), else to `not`. A foreign task pays a load while the
    /// program has made no process, one hash lookup after.
    fn descendant_or(&mut self, ours: Label, not: Label) {
        let (ctl, followed) = (self.maps.ctl, self.maps.followed);
        self.ld_map_value(1, ctl, i32::from(C_ANY));
        self.ld(2, 1, 0);
        self.jmp(JEQ, 2, 0, not);
        self.op(STX | MEM | W, 10, 0, OURS_KEY, 0);
        self.ld_map(1, followed);
        self.mov(2, 10);
        self.alui(ADD, 2, i32::from(OURS_KEY));
        self.call(LOOKUP);
        self.jmp(JNE, 0, 0, ours);
        // The mark is set only while a newborn child of the program's is current on its CPU,
        // so the task that takes it is that child: every program runs in the context of the
        // task current on its CPU, and the mark is cleared at the next switch.
        self.ld_map_value(1, ctl, i32::from(C_PENDING));
        self.ld(2, 1, 0);
        self.jmp(JEQ, 2, 0, not);
        self.movi(1, 0);
        self.lookup_u32(self.maps.glob, 1, not);
        self.movi(1, 0);
        self.xchg(0, G_ADOPT, 1);
        self.jmp(JEQ, 1, 0, not);
        self.ld_map_value(1, ctl, i32::from(C_PENDING));
        self.movi(2, -1);
        self.add(1, 0, 2);
        // Born single-threaded: its threads are counted as it makes them.
        self.sti(10, OURS_VAL, 1);
        self.ld_map(1, followed);
        self.mov(2, 10);
        self.alui(ADD, 2, i32::from(OURS_KEY));
        self.mov(3, 10);
        self.alui(ADD, 3, i32::from(OURS_VAL));
        self.movi(4, ANY);
        self.call(UPDATE);
        self.jmp(JEQ, 0, 0, ours);
        self.movi(1, 0);
        self.lookup_u32(self.maps.glob, 1, not);
        self.inc(0, G_MISSED);
        self.goto(not);
    }

    /// Adds `by` to the live threads of the current task's process when it is a followed one
    /// (not the attached process `pid`): r0 the count's address after, or `none` taken. The
    /// tgid stays at fp-4.
    pub(super) fn followed_count(&mut self, pid: u32, by: i32, none: Label) {
        self.call(PID_TGID);
        self.alui(RSH, 0, 32);
        self.jmp(JEQ, 0, pid as i32, none);
        self.mov(1, 0);
        let fd = self.maps.followed;
        self.lookup_u32(fd, 1, none);
        self.movi(1, by);
        self.add(0, 0, 1);
    }

    /// The time now into `dst`.
    pub(super) fn now(&mut self, dst: u8) {
        self.call(KTIME);
        self.mov(dst, 0);
    }

    /// Looks up the u32 key in register `key` of map `fd`: r0 its value, or `none` taken.
    pub(super) fn lookup_u32(&mut self, fd: i32, key: u8, none: Label) {
        self.op(STX | MEM | W, 10, key, -4, 0);
        self.ld_map(1, fd);
        self.mov(2, 10);
        self.alui(ADD, 2, -4);
        self.call(LOOKUP);
        self.jmp(JEQ, 0, 0, none);
    }

    /// r0 the per-CPU totals, or the program exits.
    pub(super) fn glob(&mut self) {
        self.movi(1, 0);
        let exit = self.exit;
        let fd = self.maps.glob;
        self.lookup_u32(fd, 1, exit);
    }

    /// r7 the current task's state, made when it has none (its first event), r9 its thread;
    /// the program exits when the hash is full (counted).
    pub(super) fn task(&mut self) {
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
    pub(super) fn task_of(&mut self, ptr: u8, none: Label) {
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
    pub(super) fn call_time(&mut self, dst: u8, glob: u8) {
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
    pub(super) fn bucket(&mut self, dst: u8, v: u8) {
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
    pub(super) fn finish(mut self) -> Vec<Insn> {
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
