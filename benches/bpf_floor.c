/* The floor of counting a program's system calls with BPF, for scripts/bill-overhead.sh: a
 * command run with one BPF program on the raw_syscalls:sys_enter raw tracepoint, written
 * apart from oscost's (no shared code), so a tracer's cost can be held against the least any
 * BPF counter pays on this kernel:
 *   empty      the program returns at once: the tracepoint's own cost (every task's system
 *              calls take the traced entry path while any program is attached)
 *   empty-exit the same program on raw_syscalls:sys_exit too: the least a tracer that times
 *              each call between its entry and its exit pays
 *   count      a per-CPU array counter per system-call number, every task's calls counted
 *              (syscount's design)
 *   count-pid  the same counter for the command's process only (its tgid compared first), as
 *              a per-program tracer must
 *   count-all  count-pid's counter on each event a bill counts often, for the command's
 *              process: system calls by number (sys_enter), page faults by kind (error code
 *              bits 0 and 1, page_fault_user and page_fault_kernel apart), TLB flushes by
 *              reason (tlb_flush), switches away (sched_switch): the least a per-program
 *              counter of those events pays
 *   time-pid   the command's process only, its calls timed: on sys_enter the clock read
 *              (bpf_ktime_get_ns) into this CPU's slot, on sys_exit read again and the
 *              difference added to this CPU's sum with a count; no call number, no
 *              histogram: the least a per-program tracer that times each call pays
 *
 * The command is forked first and waits on a pipe until the program is attached, then
 * executes; bpf_floor waits for it and exits with its status (128 + N for signal N). With -v
 * the calls counted (and timed) are printed on stderr after it ends. Needs root (or CAP_BPF and
 * CAP_PERFMON).
 *
 * Usage: bpf_floor [-v] empty|empty-exit|count|count-pid|count-all|time-pid -- CMD [ARGS...]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLOTS 512
/* count-all's slots after the system calls': faults (user 0-3, kernel 4-7), TLB flushes by
 * reason (8-15), switches (16). */
#define FAULT_SLOT SLOTS
#define TLB_SLOT (SLOTS + 8)
#define SWITCH_SLOT (SLOTS + 16)
#define ALL_SLOTS (SLOTS + 17)

static long bpf(int cmd, union bpf_attr *a) {
    return syscall(__NR_bpf, cmd, a, sizeof(*a));
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

/* Attaches `prog` to the raw tracepoint `name`; says why not on stderr. */
static int attach(int prog, const char *name) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.raw_tracepoint.name = (uint64_t)(uintptr_t)name;
    attr.raw_tracepoint.prog_fd = (uint32_t)prog;
    if (bpf(BPF_RAW_TRACEPOINT_OPEN, &attr) < 0) {
        fprintf(stderr, "bpf_floor: attaching to %s: %s\n", name, strerror(errno));
        return -1;
    }
    return 0;
}

#define INSN(c, d, s, o, i) ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})

/* Loads a raw-tracepoint program of n instructions; says why not on stderr. */
static int load(const struct bpf_insn *p, int n) {
    static char log[65536];
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
    attr.insns = (uint64_t)(uintptr_t)p;
    attr.insn_cnt = (uint32_t)n;
    attr.license = (uint64_t)(uintptr_t) "GPL";
    attr.log_buf = (uint64_t)(uintptr_t)log;
    attr.log_size = sizeof log;
    attr.log_level = 1;
    int fd = (int)bpf(BPF_PROG_LOAD, &attr);
    if (fd < 0) fprintf(stderr, "bpf_floor: loading the program: %s\n%s", strerror(errno), log);
    return fd;
}

/* Appends the lookup of the u32 key at fp-4 in `map` to p[n..]: r0 the value or NULL. Returns
 * the new length. */
static int lookup(struct bpf_insn *p, int n, int map) {
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);
    p[n++] = INSN(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -4);
    p[n++] = INSN(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0, map);
    p[n++] = INSN(0, 0, 0, 0, 0);
    p[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem);
    return n;
}

/* A counter for the process `pid` (every task when pid is 0) into p, ending where "return 0"
 * goes; returns its length. The key: the call's number (ctx->args[1], calls above SLOTS - 1
 * not counted) when `first` is negative, else first + (ctx->args[arg] & mask). */
static int counter_program(struct bpf_insn *p, pid_t pid, int map, int first, int arg, int mask) {
    int n = 0, jumps[3], nj = 0;
    if (pid) {
        p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0);
        p[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_current_pid_tgid);
        p[n++] = INSN(BPF_ALU64 | BPF_RSH | BPF_K, 0, 0, 0, 32);
        jumps[nj++] = n;
        p[n++] = INSN(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 0, pid);
        p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0);
    }
    if (first < 0) {
        /* r6 = ctx->args[1], the call's number. */
        p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_DW, 6, 1, 8, 0);
        jumps[nj++] = n;
        p[n++] = INSN(BPF_JMP | BPF_JGT | BPF_K, 6, 0, 0, SLOTS - 1);
    } else {
        p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_DW, 6, 1, (short)(8 * arg), 0);
        p[n++] = INSN(BPF_ALU64 | BPF_AND | BPF_K, 6, 0, 0, mask);
        p[n++] = INSN(BPF_ALU64 | BPF_ADD | BPF_K, 6, 0, 0, first);
    }
    /* The key at fp-4. */
    p[n++] = INSN(BPF_STX | BPF_MEM | BPF_W, 10, 6, -4, 0);
    n = lookup(p, n, map);
    jumps[nj++] = n;
    p[n++] = INSN(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0, 0);
    p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_DW, 1, 0, 0, 0);
    p[n++] = INSN(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, 1);
    p[n++] = INSN(BPF_STX | BPF_MEM | BPF_DW, 0, 1, 0, 0);
    for (int j = 0; j < nj; j++) p[jumps[j]].off = (short)(n - jumps[j] - 1);
    return n;
}

/* Loads a counter_program and attaches it to `event`; says why not on stderr. */
static int count_on(const char *event, pid_t pid, int map, int first, int arg, int mask) {
    struct bpf_insn p[32];
    int n = counter_program(p, pid, map, first, arg, mask);
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
    p[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    int prog = load(p, n);
    return prog < 0 ? -1 : attach(prog, event);
}

/* time-pid's program for sys_enter (exit_side 0) or sys_exit (1) into p, ending where "return
 * 0" goes; returns its length. Not the process's: out at once. Entry: the clock into this
 * CPU's slot. Exit: when an entry is there, the time since it added to the sum and the count
 * raised, the entry cleared (a call entered before attaching, or on another CPU, is not
 * timed). */
static int timing_program(struct bpf_insn *p, pid_t pid, int map, int exit_side) {
    int n = 0, jumps[3], nj = 0;
    p[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_current_pid_tgid);
    p[n++] = INSN(BPF_ALU64 | BPF_RSH | BPF_K, 0, 0, 0, 32);
    jumps[nj++] = n;
    p[n++] = INSN(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 0, pid);
    p[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ktime_get_ns);
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, 6, 0, 0, 0);
    p[n++] = INSN(BPF_ST | BPF_MEM | BPF_W, 10, 0, -4, 0);
    n = lookup(p, n, map);
    jumps[nj++] = n;
    p[n++] = INSN(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0, 0);
    if (!exit_side) {
        p[n++] = INSN(BPF_STX | BPF_MEM | BPF_DW, 0, 6, 0, 0);
    } else {
        p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_DW, 1, 0, 0, 0);
        jumps[nj++] = n;
        p[n++] = INSN(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 0, 0);
        p[n++] = INSN(BPF_ALU64 | BPF_SUB | BPF_X, 6, 1, 0, 0);
        p[n++] = INSN(BPF_ST | BPF_MEM | BPF_DW, 0, 0, 0, 0);
        p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_DW, 1, 0, 8, 0);
        p[n++] = INSN(BPF_ALU64 | BPF_ADD | BPF_X, 1, 6, 0, 0);
        p[n++] = INSN(BPF_STX | BPF_MEM | BPF_DW, 0, 1, 8, 0);
        p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_DW, 1, 0, 16, 0);
        p[n++] = INSN(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, 1);
        p[n++] = INSN(BPF_STX | BPF_MEM | BPF_DW, 0, 1, 16, 0);
    }
    for (int j = 0; j < nj; j++) p[jumps[j]].off = (short)(n - jumps[j] - 1);
    return n;
}

int main(int argc, char **argv) {
    int verbose = 0, a = 1;
    if (a < argc && strcmp(argv[a], "-v") == 0) verbose = 1, a++;
    if (a + 2 >= argc || strcmp(argv[a + 1], "--") != 0) {
        fprintf(stderr, "usage: bpf_floor [-v] empty|empty-exit|count|count-pid|count-all|time-pid -- CMD [ARGS...]\n");
        return 2;
    }
    const char *mode = argv[a];
    int count = strcmp(mode, "count") == 0, by_pid = strcmp(mode, "count-pid") == 0;
    int on_exit = strcmp(mode, "empty-exit") == 0, timed = strcmp(mode, "time-pid") == 0;
    int all = strcmp(mode, "count-all") == 0;
    if (!count && !by_pid && !all && !on_exit && !timed && strcmp(mode, "empty") != 0) {
        fprintf(stderr, "bpf_floor: unknown mode '%s' (empty, empty-exit, count, count-pid, count-all or time-pid)\n", mode);
        return 2;
    }
    char **cmd = argv + a + 2;

    int go[2];
    if (pipe(go) < 0) die("pipe");
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        char byte;
        close(go[1]);
        if (read(go[0], &byte, 1) != 1) _exit(2);
        close(go[0]);
        execvp(cmd[0], cmd);
        fprintf(stderr, "bpf_floor: %s: %s\n", cmd[0], strerror(errno));
        _exit(127);
    }
    close(go[0]);

    union bpf_attr attr;
    int map = -1;
    if (count || by_pid || all || timed) {
        memset(&attr, 0, sizeof attr);
        attr.map_type = BPF_MAP_TYPE_PERCPU_ARRAY;
        attr.key_size = 4;
        /* time-pid: one slot of {entry time, nanoseconds, calls} per CPU. */
        attr.value_size = timed ? 24 : 8;
        attr.max_entries = timed ? 1 : all ? ALL_SLOTS : SLOTS;
        map = (int)bpf(BPF_MAP_CREATE, &attr);
        if (map < 0) die("bpf(BPF_MAP_CREATE)");
    }
    struct bpf_insn p[32];
    int n = 0;
    if (count || by_pid) n = counter_program(p, by_pid ? child : 0, map, -1, 0, 0);
    if (all) {
        /* page_fault_user and page_fault_kernel (address, regs, error_code); tlb_flush (reason,
         * pages); sched_switch (preempt, prev, next, prev_state), counted in the task leaving. */
        if (count_on("page_fault_user", child, map, FAULT_SLOT, 2, 3) < 0 ||
            count_on("page_fault_kernel", child, map, FAULT_SLOT + 4, 2, 3) < 0 ||
            count_on("tlb_flush", child, map, TLB_SLOT, 0, 7) < 0 ||
            count_on("sched_switch", child, map, SWITCH_SLOT, 0, 0) < 0) {
            kill(child, SIGKILL);
            return 2;
        }
        n = counter_program(p, child, map, -1, 0, 0);
    }
    if (timed) n = timing_program(p, child, map, 0);
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
    p[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);

    int prog = load(p, n);
    int exit_prog = prog;
    if (prog >= 0 && timed) {
        n = timing_program(p, child, map, 1);
        p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
        p[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
        exit_prog = load(p, n);
    }
    if (prog < 0 || exit_prog < 0) {
        kill(child, SIGKILL);
        return 2;
    }
    if (attach(prog, "sys_enter") < 0 || ((on_exit || timed) && attach(exit_prog, "sys_exit") < 0)) {
        kill(child, SIGKILL);
        return 2;
    }
    if (write(go[1], "g", 1) != 1) die("write");
    close(go[1]);
    int status;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) die("waitpid");
    if (verbose && map >= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_CONF);
        uint64_t *v = calloc((size_t)cpus, 24), total = 0, ns = 0;
        if (!v) die("calloc");
        uint64_t events = 0;
        for (uint32_t k = 0; k < (timed ? 1 : all ? ALL_SLOTS : SLOTS); k++) {
            memset(&attr, 0, sizeof attr);
            attr.map_fd = (uint32_t)map;
            attr.key = (uint64_t)(uintptr_t)&k;
            attr.value = (uint64_t)(uintptr_t)v;
            if (bpf(BPF_MAP_LOOKUP_ELEM, &attr) < 0) continue;
            for (long c = 0; c < cpus; c++) {
                if (timed) {
                    ns += v[3 * c + 1];
                    total += v[3 * c + 2];
                } else if (k < SLOTS) {
                    total += v[c];
                } else {
                    events += v[c];
                }
            }
        }
        fprintf(stderr, "bpf_floor: %llu system calls counted", (unsigned long long)total);
        if (timed) fprintf(stderr, ", %llu ns between their entries and exits", (unsigned long long)ns);
        if (all) fprintf(stderr, ", %llu faults, flushes and switches", (unsigned long long)events);
        fputc('\n', stderr);
        free(v);
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}
