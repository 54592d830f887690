/*
 * Reference for oscost's seccomp cases: the same filter sets (none, allow-1, args-1, args-8,
 * profile; the same BPF instructions, the profile from the same list of names in the same order)
 * each installed with no_new_privs in a forked child of its own, pinned to one CPU with the
 * parent; the same loops of syscall(SYS_getpid) and syscall(SYS_fstat) of /dev/null, every
 * result counted, timed by the child itself; the empty loop of the same batch subtracted. The
 * parent asks each child for batches through a pipe: batch size doubled until one lasts
 * 4 ms, 40 ms of warm-up, then SAMPLES rounds over all cases in an order rotated each round.
 * The notify sets hand getpid to a supervisor process (SECCOMP_RET_USER_NOTIF) that the child
 * forks once its filter is in, pinned to the child's CPU (same) or to -C CPU2 (cross); it
 * answers each call with the caller's pid.
 * Prints "seccomp.<set>.<call> <median ns per call> <refused calls>" per case
 * ("seccomp.notify.same" and "seccomp.notify.cross" for the notify sets).
 *
 * Build: cc -O2 -o seccomp_ref benches/seccomp_ref.c
 * Usage: seccomp_ref [-c CPU] [-C CPU2] [-s SAMPLES] [-m MIN_SAMPLE_US]
 *        seccomp_ref -x SET PROGRAM [ARGS...]   (runs PROGRAM under SET's filters)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "the profile list is x86-64's"
#endif

#define REFUSED_ARGUMENT 0x5ec05ec0u
#define X32_BIT 0x40000000u
#define DENY (SECCOMP_RET_ERRNO | EPERM)
#define MAXI 1024
#define NSETS 7
#define NFILTERS 5
#define NCALLS 2
#define STACKED 8

/* Numbers newer than some distributions' headers (the kernel's x86-64 table). */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef __NR_map_shadow_stack
#define __NR_map_shadow_stack 453
#endif
#ifndef __NR_futex_wake
#define __NR_futex_wake 454
#endif
#ifndef __NR_futex_wait
#define __NR_futex_wait 455
#endif
#ifndef __NR_futex_requeue
#define __NR_futex_requeue 456
#endif
#ifndef __NR_statmount
#define __NR_statmount 457
#endif
#ifndef __NR_listmount
#define __NR_listmount 458
#endif
#ifndef __NR_mseal
#define __NR_mseal 462
#endif

/* The profile's calls, alphabetical: the list of crates/sys/src/seccomp/profile.rs. */
#define P(n) __NR_##n,
static const int profile_nrs[] = {
    P(accept) P(accept4) P(access) P(adjtimex) P(alarm) P(arch_prctl) P(bind) P(brk) P(capget)
    P(capset) P(chdir) P(chmod) P(chown) P(chroot) P(clock_getres) P(clock_gettime)
    P(clock_nanosleep) P(clone) P(close) P(close_range) P(connect) P(copy_file_range) P(creat)
    P(dup) P(dup2) P(dup3) P(epoll_create) P(epoll_create1) P(epoll_ctl) P(epoll_pwait)
    P(epoll_pwait2) P(epoll_wait) P(eventfd) P(eventfd2) P(execve) P(execveat) P(exit)
    P(exit_group) P(faccessat) P(faccessat2) P(fadvise64) P(fallocate) P(fanotify_mark)
    P(fchdir) P(fchmod) P(fchmodat) P(fchmodat2) P(fchown) P(fchownat) P(fcntl) P(fdatasync)
    P(fgetxattr) P(flistxattr) P(flock) P(fork) P(fremovexattr) P(fsetxattr) P(fstat) P(fstatfs)
    P(fsync) P(ftruncate) P(futex) P(futex_waitv) P(futimesat) P(get_robust_list)
    P(get_thread_area) P(getcpu) P(getcwd) P(getdents) P(getdents64) P(getegid) P(geteuid)
    P(getgid) P(getgroups) P(getitimer) P(getpeername) P(getpgid) P(getpgrp) P(getpid)
    P(getppid) P(getpriority) P(getrandom) P(getresgid) P(getresuid) P(getrlimit) P(getrusage)
    P(getsid) P(getsockname) P(getsockopt) P(gettid) P(gettimeofday) P(getuid) P(getxattr)
    P(inotify_add_watch) P(inotify_init) P(inotify_init1) P(inotify_rm_watch) P(io_cancel)
    P(io_destroy) P(io_getevents) P(io_setup) P(io_submit) P(io_uring_enter)
    P(io_uring_register) P(io_uring_setup) P(ioctl) P(ioprio_get) P(ioprio_set) P(kill)
    P(landlock_add_rule) P(landlock_create_ruleset) P(landlock_restrict_self) P(lchown)
    P(lgetxattr) P(link) P(linkat) P(listen) P(listxattr) P(llistxattr) P(lremovexattr) P(lseek)
    P(lsetxattr) P(lstat) P(madvise) P(membarrier) P(memfd_create) P(memfd_secret)
    P(migrate_pages) P(mincore) P(mkdir) P(mkdirat) P(mknod) P(mknodat) P(mlock) P(mlock2)
    P(mlockall) P(mmap) P(mprotect) P(mq_getsetattr) P(mq_notify) P(mq_open) P(mq_timedreceive)
    P(mq_timedsend) P(mq_unlink) P(mremap) P(mseal) P(msgctl) P(msgget) P(msgrcv) P(msgsnd)
    P(msync) P(munlock) P(munlockall) P(munmap) P(nanosleep) P(newfstatat) P(open) P(openat)
    P(openat2) P(pause) P(personality) P(pidfd_getfd) P(pidfd_open) P(pidfd_send_signal) P(pipe)
    P(pipe2) P(pkey_alloc) P(pkey_free) P(pkey_mprotect) P(poll) P(ppoll) P(prctl) P(pread64)
    P(preadv) P(preadv2) P(prlimit64) P(process_madvise) P(process_mrelease) P(pselect6)
    P(pwrite64) P(pwritev) P(pwritev2) P(read) P(readahead) P(readlink) P(readlinkat) P(readv)
    P(recvfrom) P(recvmmsg) P(recvmsg) P(remap_file_pages) P(removexattr) P(rename) P(renameat)
    P(renameat2) P(restart_syscall) P(rmdir) P(rseq) P(rt_sigaction) P(rt_sigpending)
    P(rt_sigprocmask) P(rt_sigqueueinfo) P(rt_sigreturn) P(rt_sigsuspend) P(rt_sigtimedwait)
    P(rt_tgsigqueueinfo) P(sched_get_priority_max) P(sched_get_priority_min)
    P(sched_getaffinity) P(sched_getattr) P(sched_getparam) P(sched_getscheduler)
    P(sched_rr_get_interval) P(sched_setaffinity) P(sched_setattr) P(sched_setparam)
    P(sched_setscheduler) P(sched_yield) P(seccomp) P(select) P(semctl) P(semget) P(semop)
    P(semtimedop) P(sendfile) P(sendmmsg) P(sendmsg) P(sendto) P(set_robust_list)
    P(set_thread_area) P(set_tid_address) P(setdomainname) P(setfsgid) P(setfsuid) P(setgid)
    P(setgroups) P(sethostname) P(setitimer) P(setpgid) P(setpriority) P(setregid) P(setresgid)
    P(setresuid) P(setreuid) P(setrlimit) P(setsid) P(setsockopt) P(setuid) P(setxattr) P(shmat)
    P(shmctl) P(shmdt) P(shmget) P(shutdown) P(sigaltstack) P(signalfd) P(signalfd4) P(socket)
    P(socketpair) P(splice) P(stat) P(statfs) P(statx) P(symlink) P(symlinkat) P(sync)
    P(sync_file_range) P(syncfs) P(sysinfo) P(tee) P(tgkill) P(time) P(timer_create)
    P(timer_delete) P(timer_getoverrun) P(timer_gettime) P(timer_settime) P(timerfd_create)
    P(timerfd_gettime) P(timerfd_settime) P(times) P(tkill) P(truncate) P(umask) P(uname)
    P(unlink) P(unlinkat) P(utime) P(utimensat) P(utimes) P(vfork) P(vmsplice) P(wait4)
    P(waitid) P(write) P(writev)
};
#undef P

static const char *set_names[NSETS] = {"none",    "allow-1",     "args-1",      "args-8",
                                       "profile", "notify.same", "notify.cross"};
static const char *call_names[NCALLS] = {"getpid", "fstat"};

struct prog {
    struct sock_filter f[MAXI];
    unsigned short n;
};

static void emit(struct prog *p, uint16_t code, uint8_t jt, uint8_t jf, uint32_t k) {
    if (p->n >= MAXI) {
        fprintf(stderr, "filter too long\n");
        exit(2);
    }
    p->f[p->n++] = (struct sock_filter){code, jt, jf, k};
}

#define LD (BPF_LD | BPF_W | BPF_ABS)
#define JEQ (BPF_JMP | BPF_JEQ | BPF_K)
#define JGE (BPF_JMP | BPF_JGE | BPF_K)
#define JSET (BPF_JMP | BPF_JSET | BPF_K)
#define RET (BPF_RET | BPF_K)
#define OFF_NR offsetof(struct seccomp_data, nr)
#define OFF_ARCH offsetof(struct seccomp_data, arch)
#define OFF_ARG0 offsetof(struct seccomp_data, args[0])

static void arch_check(struct prog *p) {
    emit(p, LD, 0, 0, OFF_ARCH);
    emit(p, JEQ, 1, 0, AUDIT_ARCH_X86_64);
    emit(p, RET, 0, 0, SECCOMP_RET_KILL_PROCESS);
}

static void allow_all(struct prog *p) {
    arch_check(p);
    emit(p, RET, 0, 0, SECCOMP_RET_ALLOW);
}

static void reads_argument(struct prog *p) {
    arch_check(p);
    emit(p, LD, 0, 0, OFF_ARG0);
    emit(p, JEQ, 0, 1, REFUSED_ARGUMENT);
    emit(p, RET, 0, 0, DENY);
    emit(p, RET, 0, 0, SECCOMP_RET_ALLOW);
}

static void profile(struct prog *p) {
    arch_check(p);
    emit(p, LD, 0, 0, OFF_NR);
    emit(p, JGE, 0, 1, X32_BIT);
    emit(p, RET, 0, 0, DENY);
    for (size_t i = 0; i < sizeof profile_nrs / sizeof profile_nrs[0]; i++) {
        int nr = profile_nrs[i];
        if (nr == __NR_personality) {
            static const uint32_t ok[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};
            emit(p, JEQ, 0, 8, nr);
            emit(p, LD, 0, 0, OFF_ARG0);
            for (int k = 0; k < 5; k++) emit(p, JEQ, 5 - k, 0, ok[k]);
            emit(p, RET, 0, 0, DENY);
        } else if (nr == __NR_clone) {
            emit(p, JEQ, 0, 4, nr);
            emit(p, LD, 0, 0, OFF_ARG0);
            emit(p, JSET, 0, 1,
                 CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                     CLONE_NEWNET | CLONE_NEWCGROUP);
            emit(p, RET, 0, 0, DENY);
        } else if (nr == __NR_socket) {
            emit(p, JEQ, 0, 4, nr);
            emit(p, LD, 0, 0, OFF_ARG0);
            emit(p, JEQ, 0, 1, 40 /* AF_VSOCK */);
            emit(p, RET, 0, 0, DENY);
        } else {
            emit(p, JEQ, 0, 1, nr);
        }
        emit(p, RET, 0, 0, SECCOMP_RET_ALLOW);
    }
    emit(p, RET, 0, 0, DENY);
}

static void notify_getpid(struct prog *p) {
    arch_check(p);
    emit(p, LD, 0, 0, OFF_NR);
    emit(p, JEQ, 0, 1, __NR_getpid);
    emit(p, RET, 0, 0, SECCOMP_RET_USER_NOTIF);
    emit(p, RET, 0, 0, SECCOMP_RET_ALLOW);
}

static int cpu_a = 0, cpu_b = 1;
static pid_t supervisor;

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
        _exit(2);
    }
}

/* Answers every getpid handed to `fd` with the caller's pid, until killed. */
static void supervise(int fd, int cpu) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    pin(cpu);
    for (;;) {
        struct seccomp_notif req;
        memset(&req, 0, sizeof req);
        if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
            if (errno == EINTR || errno == ENOENT) continue;
            _exit(0);
        }
        struct seccomp_notif_resp resp = {.id = req.id, .val = req.pid, .error = 0, .flags = 0};
        ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }
}

/* Installs set `s` in the calling process; 0 or -1 with errno. */
static int install(int s) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    static struct prog p;
    p.n = 0;
    int count = 1;
    switch (s) {
    case 0: return 0;
    case 1: allow_all(&p); break;
    case 2: reads_argument(&p); break;
    case 3: reads_argument(&p); count = STACKED; break;
    case 4: profile(&p); break;
    default: {
        notify_getpid(&p);
        struct sock_fprog fp = {.len = p.n, .filter = p.f};
        int fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fp);
        if (fd < 0) return -1;
        supervisor = fork();
        if (supervisor == 0) supervise(fd, s == 5 ? cpu_a : cpu_b);
        close(fd);
        return supervisor < 0 ? -1 : 0;
    }
    }
    struct sock_fprog fp = {.len = p.n, .filter = p.f};
    for (int i = 0; i < count; i++)
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) != 0) return -1;
    return 0;
}

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct req { int call; long n; };          /* call -1: the empty loop; -2: leave */
struct ans { uint64_t ns; uint64_t failed; };

__attribute__((noinline)) static struct ans batch(int call, long n, int fd) {
    struct stat st;
    uint64_t failed = 0;
    uint64_t t0 = now_ns();
    if (call == 0) {
        for (long i = 0; i < n; i++) failed += syscall(SYS_getpid) < 0;
    } else if (call == 1) {
        for (long i = 0; i < n; i++) failed += syscall(SYS_fstat, fd, &st) < 0;
    } else {
        for (long i = 0; i < n; i++) {
            long z = 0;
            __asm__ volatile("" : "+r"(z) : : "memory");
            failed += z < 0;
        }
    }
    uint64_t t1 = now_ns();
    return (struct ans){t1 - t0, failed};
}

static int to_child[NSETS][2], from_child[NSETS][2];

static void child(int s, int fd) {
    if (install(s) != 0) {
        perror(set_names[s]);
        _exit(3);
    }
    struct req r;
    while (read(to_child[s][0], &r, sizeof r) == sizeof r && r.call != -2) {
        struct ans a = batch(r.call, r.n, fd);
        if (write(from_child[s][1], &a, sizeof a) != sizeof a) _exit(4);
    }
    if (supervisor > 0) {
        kill(supervisor, SIGKILL);
        waitpid(supervisor, NULL, 0);
    }
    _exit(0);
}

static struct ans ask(int s, int call, long n) {
    struct req r = {call, n};
    struct ans a;
    if (write(to_child[s][1], &r, sizeof r) != sizeof r || read(from_child[s][0], &a, sizeof a) != sizeof a) {
        fprintf(stderr, "child %s died\n", set_names[s]);
        exit(2);
    }
    return a;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int samples = 81;
    long min_ns = 4000000;
    if (argc > 2 && strcmp(argv[1], "-x") == 0) {
        for (int s = 0; s < NSETS; s++)
            if (strcmp(argv[2], set_names[s]) == 0) {
                if (install(s) != 0) {
                    perror("installing the filters");
                    return 2;
                }
                execvp(argv[3], argv + 3);
                perror(argv[3]);
                return 2;
            }
        fprintf(stderr, "unknown set %s\n", argv[2]);
        return 2;
    }
    int o;
    while ((o = getopt(argc, argv, "c:C:s:m:")) != -1) {
        if (o == 'c') cpu_a = atoi(optarg);
        else if (o == 'C') cpu_b = atoi(optarg);
        else if (o == 's') samples = atoi(optarg);
        else if (o == 'm') min_ns = atol(optarg) * 1000;
        else return 2;
    }
    pin(cpu_a);
    int fd = open("/dev/null", O_RDONLY);
    for (int s = 0; s < NSETS; s++) {
        if (pipe(to_child[s]) || pipe(from_child[s])) return 2;
        pid_t pid = fork();
        if (pid == 0) child(s, fd);
    }
    /* Every filter set with both calls, then the notify sets with getpid only. */
    enum { NCASES = NFILTERS * NCALLS + (NSETS - NFILTERS) };
    int case_set[NCASES], case_call[NCASES];
    for (int k = 0; k < NCASES; k++) {
        case_set[k] = k < NFILTERS * NCALLS ? k / NCALLS : NFILTERS + (k - NFILTERS * NCALLS);
        case_call[k] = k < NFILTERS * NCALLS ? k % NCALLS : 0;
    }
    long n[NCASES];
    double empty[NCASES], *per[NCASES];
    uint64_t failed[NCASES] = {0};
    for (int k = 0; k < NCASES; k++) {
        int s = case_set[k], c = case_call[k];
        long m = 1;
        while (ask(s, c, m).ns < (uint64_t)min_ns) m *= 2;
        n[k] = m;
        uint64_t warm = now_ns();
        while (now_ns() - warm < 40000000u) failed[k] += ask(s, c, m).failed;
        double e[7];
        for (int i = 0; i < 7; i++) e[i] = (double)ask(s, -1, m).ns;
        qsort(e, 7, sizeof e[0], cmp);
        empty[k] = e[3] / m;
        per[k] = calloc(samples, sizeof(double));
    }
    for (int r = 0; r < samples; r++)
        for (int i = 0; i < NCASES; i++) {
            int k = (r + i) % NCASES, s = case_set[k], c = case_call[k];
            struct ans a = ask(s, c, n[k]);
            failed[k] += a.failed;
            per[k][r] = (double)a.ns / n[k] - empty[k];
        }
    for (int k = 0; k < NCASES; k++) {
        qsort(per[k], samples, sizeof(double), cmp);
        if (case_set[k] < NFILTERS)
            printf("seccomp.%s.%s", set_names[case_set[k]], call_names[case_call[k]]);
        else
            printf("seccomp.%s", set_names[case_set[k]]);
        printf(" %.2f %llu\n", per[k][samples / 2], (unsigned long long)failed[k]);
    }
    for (int s = 0; s < NSETS; s++) {
        struct req r = {-2, 0};
        if (write(to_child[s][1], &r, sizeof r) != sizeof r) return 2;
    }
    while (wait(NULL) > 0) {}
    return 0;
}
