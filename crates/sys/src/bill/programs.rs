//! The bill's BPF programs, one per raw tracepoint, and the list of them a probe loads.

use super::asm::*;
use super::*;
use crate::bpf::Insn;

/// One program: its raw tracepoint and its instructions.
pub(super) struct Program {
    pub(super) event: &'static str,
    pub(super) insns: Vec<Insn>,
}

impl Prog {
    /// The finished program of tracepoint `event`.
    fn done(self, event: &'static str) -> Program {
        Program {
            event,
            insns: self.finish(),
        }
    }
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
    p.done("sys_enter")
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
    p.done("sys_exit")
}

/// `exceptions:page_fault_user(address, regs, error_code)` and `page_fault_kernel` (a fault
/// the kernel took on a user address, copying to or from the program's memory). The task's
/// count goes into this CPU's running sums, as a call's does: no hash lookup on a fault, the
/// commonest event of many programs, unless the task has no state yet (its first event).
fn fault(maps: Maps, scope: Scope, kernel: bool) -> Program {
    let mut p = Prog::new(maps, scope);
    let exit = p.exit;
    p.ours_or(exit);
    if kernel {
        p.ld(1, 6, 0);
        p.alui(RSH, 1, 47);
        p.jmp(JNE, 1, 0, exit);
    }
    p.glob();
    p.mov(7, 0);
    // The sums' owner is named when a known task comes in, or when its state is made.
    let known = p.label();
    p.ld(1, 7, G_ACC_TID);
    p.jmp(JNE, 1, 0, known);
    p.task();
    p.glob();
    p.mov(7, 0);
    p.st(7, G_ACC_TID, 9);
    p.bind(known);
    p.incp(7, G_ACC_FAULTS);
    // Error code bit 0: the page was present (a protection fault: copy-on-write); bit 1: a
    // write.
    p.ld(8, 6, 16);
    p.alui(AND, 8, 3);
    p.alui(LSH, 8, 3);
    p.alu(ADD, 7, 8);
    p.incp(7, G_FAULT + if kernel { 32 } else { 0 });
    p.done(if kernel {
        "page_fault_kernel"
    } else {
        "page_fault_user"
    })
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
    p.done(event)
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
    p.done(event)
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
    p.ld(2, 8, G_ACC_FAULTS);
    p.add(7, T_FAULTS, 2);
    p.sti(8, G_ACC_CALLS, 0);
    p.sti(8, G_ACC_NS, 0);
    p.sti(8, G_ACC_FAULTS, 0);
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
    if let Scope::Process(pid) = scope {
        // A followed process's last thread gone: its id is forgotten, for the kernel may give
        // it to another process. Here, not at its exit's tracepoint: the switch into death
        // still bills the task's last run. (Two threads ending at once may both see 0: both
        // delete.)
        p.followed_count(pid, -1, next);
        p.ld(1, 0, 0);
        p.jmp(JNE, 1, 0, next);
        p.ld_map(1, maps.followed);
        p.mov(2, 10);
        p.alui(ADD, 2, -4);
        p.call(DELETE);
    }
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
    p.sti(8, G_OURS, 0);
    if let Scope::Process(_) = scope {
        // A mark not taken (a newborn thread of a process already followed: no program needed
        // to adopt it) ends with the task it was set for.
        let unmarked = p.label();
        p.ld(1, 8, G_ADOPT);
        p.jmp(JEQ, 1, 0, unmarked);
        p.movi(1, 0);
        p.xchg(8, G_ADOPT, 1);
        p.jmp(JEQ, 1, 0, unmarked);
        p.ld_map_value(1, maps.ctl, i32::from(C_PENDING));
        p.movi(2, -1);
        p.add(1, 0, 2);
        p.bind(unmarked);
    }
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
    if let Scope::Process(_) = scope {
        // Made by one of the program's processes (the only newborns kept under this scope):
        // the first program in its context here adopts it, should it be a process of its own.
        p.movi(1, 1);
        p.xchg(8, G_ADOPT, 1);
        p.ld_map_value(2, maps.ctl, 0);
        p.jmp(JNE, 1, 0, exit);
        p.movi(1, 1);
        p.st(2, C_ANY, 1);
        p.add(2, C_PENDING, 1);
    }
    p.goto(exit);
    p.bind(known);
    p.op(LDX | MEM | W, 1, 0, 0, 0);
    let fd = p.maps.tasks;
    p.lookup_u32(fd, 1, exit);
    p.mov(7, 0);
    p.sti(8, G_OURS, 1);
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
    // Woken by the program (its waker's CPU recorded): in on another CPU than the waker's?
    let local = p.label();
    p.ld(1, 7, T_WAKER);
    p.jmp(JEQ, 1, 0, local);
    p.call(SMP_ID);
    p.alui(ADD, 0, 1);
    p.ld(1, 7, T_WAKER);
    p.sti(7, T_WAKER, 0);
    p.jmpx(JEQ, 1, 0, local);
    p.incp(8, G_CROSS);
    p.bind(local);
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
    p.done("sched_switch")
}

/// `sched:sched_wakeup_new(p)`, in its maker's context: a task made, about to wait for its
/// first run; kept by pointer until it comes in (then forgotten). A cgroup's keeps every task
/// made (the command's first is made by oscost, outside it); a process's, only those its own
/// tasks make, each one a task to adopt.
fn wakeup_new(maps: Maps, scope: Scope) -> Program {
    let mut p = Prog::new(maps, scope);
    if let Scope::Process(_) = scope {
        let exit = p.exit;
        p.ours_or(exit);
    }
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
    p.done("sched_wakeup_new")
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
    p.done("sched_wakeup")
}

/// `sched:sched_waking(p)`, in the waker's context: when the waker is the program's (one of its
/// tasks, or an interrupt while one was current) and the task woken is one of its tasks that
/// switched out, the waker's CPU is kept in the woken task's state, for the switch that brings
/// it in to hold against its own CPU.
fn waking(maps: Maps, scope: Scope) -> Program {
    let mut p = Prog::new(maps, scope);
    let exit = p.exit;
    p.ours_or(exit);
    p.ld(1, 6, 0);
    p.task_of(1, exit);
    p.ld(1, 7, T_OUT);
    p.jmp(JEQ, 1, 0, exit);
    p.call(SMP_ID);
    p.alui(ADD, 0, 1);
    p.st(7, T_WAKER, 0);
    p.done("sched_waking")
}

/// A counter of the totals, bumped when the current task is the program's.
fn count(maps: Maps, scope: Scope, event: &'static str, at: i16) -> Program {
    let mut p = Prog::new(maps, scope);
    let exit = p.exit;
    p.ours_or(exit);
    p.glob();
    p.inc(0, at);
    p.done(event)
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
    p.done("sched_process_exec")
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
    if let Scope::Process(pid) = scope {
        // One more thread alive in a followed process, for its end to be known.
        p.followed_count(pid, 1, exit);
    }
    p.done("task_newtask")
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
    p.done("sched_process_exit")
}

/// `tlb:tlb_flush(reason, pages)` in the program's context, by reason. A flush on task switch
/// is not counted: it is part of the switch (which the kernel runs in the task leaving, after
/// the switch program marked the CPU for the task coming in), and the bill has no line for it.
fn tlb(maps: Maps, scope: Scope) -> Program {
    let mut p = Prog::new(maps, scope);
    let exit = p.exit;
    p.ld(8, 6, 0);
    p.alui(AND, 8, 7);
    p.jmp(JEQ, 8, 0, exit);
    // Any other flush runs in the context of the task its CPU's mark was set for.
    p.ours_or(exit);
    p.alui(LSH, 8, 3);
    p.glob();
    p.alu(ADD, 0, 8);
    p.incp(0, G_TLB);
    p.done("tlb_flush")
}

/// Every program of a probe.
pub(super) fn programs(maps: Maps, scope: Scope, depth: Depth) -> Vec<Program> {
    let mut v = vec![sys_enter(maps, scope, depth)];
    if depth == Depth::Time {
        v.push(sys_exit(maps, scope));
    }
    v.push(switch(maps, scope));
    v.push(wakeup(maps, scope));
    v.push(waking(maps, scope));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_jump_lands_inside_its_program() {
        let maps = Maps {
            tasks: 3,
            ptrs: 4,
            newborn: 8,
            glob: 5,
            calls: 6,
            followed: 9,
            ctl: 10,
        };
        for (depth, scope) in [
            (Depth::Count, Scope::Cgroup(7)),
            (Depth::Time, Scope::Cgroup(7)),
            (Depth::Count, Scope::Process(7)),
            (Depth::Time, Scope::Process(7)),
        ] {
            for p in programs(maps, scope, depth) {
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
