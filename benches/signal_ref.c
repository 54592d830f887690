/* The C reference for `oscost signal`: the same operations, timed the same way.
 *
 * install: sigaction(SIGUSR1, &act, NULL). catch: tgkill of SIGUSR1 to the own thread, whose
 * handler counts and returns. segv: `mov byte ptr [rdi], 1` to a read-only page; the SIGSEGV
 * handler steps over the 3-byte write (x86_64 only). wake.same / wake.cross: a second thread
 * pinned to CPU A or B waits in sigsuspend (SIGUSR1 blocked outside it) and signals back each
 * time it is woken; the main thread sends tgkill and waits in sigsuspend: one round trip.
 * wake.process.same / wake.process.cross: the same with a forked child process pinned to CPU A
 * or B in place of the thread (tgkill to its only thread; it answers with tgkill to the main
 * thread).
 *
 * The main thread is pinned to CPU A. Per case, the batch is doubled until one lasts 4 ms,
 * warmed up for 40 ms, then SAMPLES batches are timed with CLOCK_MONOTONIC; the figure is the
 * median per operation. Handler runs are counted and must equal the operations.
 *
 * Output, one line per case: "signal.CASE MEDIAN_NS_PER_OP".
 *
 * Usage: signal_ref -a CPU -b CPU [-s SAMPLES] [-k CASE]
 *   -k CASE  only signal.CASE (e.g. wake.cross), as the side-by-side harness's alternation runs
 *            one case at a time
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "pace.h"

static atomic_ulong caught, segv_caught;
static atomic_int stop;
static char *page;
static pid_t pid, main_tid, peer_pid, peer_tid;
static struct sigaction act;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s)) {
        perror("sched_setaffinity");
        exit(2);
    }
}

static void on_signal(int s) {
    (void)s;
    atomic_fetch_add_explicit(&caught, 1, memory_order_relaxed);
}

static void on_segv(int s, siginfo_t *info, void *ctx) {
    (void)s;
    ucontext_t *uc = ctx;
    if ((char *)info->si_addr != page) {
        signal(SIGSEGV, SIG_DFL);
        return;
    }
    uc->uc_mcontext.gregs[REG_RIP] += 3;
    atomic_fetch_add_explicit(&segv_caught, 1, memory_order_relaxed);
}

static void block_usr1(void) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
}

static void wait_usr1(void) {
    sigset_t m;
    pthread_sigmask(SIG_BLOCK, NULL, &m);
    sigdelset(&m, SIGUSR1);
    sigsuspend(&m);
}

enum { INSTALL, CATCH, SEGV, WAKE };

static void op(int kind) {
    switch (kind) {
    case INSTALL:
        sigaction(SIGUSR1, &act, NULL);
        break;
    case CATCH:
        syscall(SYS_tgkill, pid, main_tid, SIGUSR1);
        break;
    case SEGV:
        __asm__ volatile("movb $1, (%%rdi)" ::"D"(page) : "memory");
        break;
    default:
        syscall(SYS_tgkill, peer_pid, peer_tid, SIGUSR1);
        wait_usr1();
    }
}

static double batch(int kind, uint64_t n) {
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++)
        op(kind);
    return (double)(now_ns() - t0);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double measure(int kind, int samples) {
    uint64_t n = 1;
    pace_turn();
    while (batch(kind, n) < 4e6)
        n *= 2;
    for (uint64_t t0 = now_ns(); now_ns() - t0 < 40000000;)
        batch(kind, n);
    double *v = malloc(sizeof(double) * samples);
    for (int i = 0; i < samples; i++) {
        pace_turn();
        v[i] = batch(kind, n) / (double)n;
    }
    qsort(v, samples, sizeof(double), cmp);
    double m = samples % 2 ? v[samples / 2] : (v[samples / 2 - 1] + v[samples / 2]) / 2;
    free(v);
    return m;
}

static int peer_cpu;

static void *peer(void *arg) {
    (void)arg;
    pin(peer_cpu);
    peer_tid = (pid_t)syscall(SYS_gettid);
    atomic_thread_fence(memory_order_seq_cst);
    for (;;) {
        wait_usr1();
        if (atomic_load(&stop))
            break;
        syscall(SYS_tgkill, pid, main_tid, SIGUSR1);
    }
    return NULL;
}

/* The case -k named, or NULL for every case. */
static const char *only;

static int want(const char *id) { return !only || !strcmp(only, id); }

int main(int argc, char **argv) {
    int a = 0, b = 1, samples = 81, c;
    while ((c = getopt(argc, argv, "a:b:s:k:")) != -1) {
        if (c == 'a')
            a = atoi(optarg);
        else if (c == 'b')
            b = atoi(optarg);
        else if (c == 's')
            samples = atoi(optarg);
        else if (c == 'k')
            only = optarg;
        else {
            fprintf(stderr, "usage: signal_ref -a CPU -b CPU [-s SAMPLES] [-k CASE]\n");
            return 2;
        }
    }
    if (samples < 1) {
        fprintf(stderr, "-s: at least 1 sample\n");
        return 2;
    }
    pin(a);
    pid = getpid();
    main_tid = (pid_t)syscall(SYS_gettid);
    peer_pid = pid;
    act.sa_handler = on_signal;
    sigemptyset(&act.sa_mask);
    sigaction(SIGUSR1, &act, NULL);
    struct sigaction segv = {0};
    segv.sa_sigaction = on_segv;
    segv.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&segv.sa_mask);
    sigaction(SIGSEGV, &segv, NULL);
    page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    page[0] = 1;
    mprotect(page, 4096, PROT_READ);

    if (want("install")) printf("signal.install %.1f\n", measure(INSTALL, samples));
    if (want("catch")) printf("signal.catch %.1f\n", measure(CATCH, samples));
    if (want("segv")) printf("signal.segv %.1f\n", measure(SEGV, samples));
    if ((want("segv") && atomic_load(&segv_caught) == 0) ||
        (want("catch") && atomic_load(&caught) == 0)) {
        fprintf(stderr, "no signal was caught\n");
        return 1;
    }
    block_usr1();
    const char *names[2] = {"same", "cross"};
    for (int k = 0; k < 2; k++) {
        char id[32];
        snprintf(id, sizeof id, "wake.%s", names[k]);
        if (!want(id)) continue;
        pthread_t t;
        peer_cpu = k ? b : a;
        peer_tid = 0;
        atomic_store(&stop, 0);
        pthread_create(&t, NULL, peer, NULL);
        while (!__atomic_load_n(&peer_tid, __ATOMIC_SEQ_CST))
            sched_yield();
        double m = measure(WAKE, samples);
        printf("signal.wake.%s %.1f\n", names[k], m);
        atomic_store(&stop, 1);
        syscall(SYS_tgkill, pid, peer_tid, SIGUSR1);
        pthread_join(t, NULL);
    }
    for (int k = 0; k < 2; k++) {
        char id[32];
        snprintf(id, sizeof id, "wake.process.%s", names[k]);
        if (!want(id)) continue;
        /* The child's state: 0 starting, 1 waiting. */
        atomic_int *ready = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                                 -1, 0);
        pid_t child = fork();
        if (child == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            pin(k ? b : a);
            atomic_store(ready, 1);
            for (;;) {
                wait_usr1();
                syscall(SYS_tgkill, pid, main_tid, SIGUSR1);
            }
        }
        while (!atomic_load(ready))
            sched_yield();
        peer_pid = peer_tid = child;
        double m = measure(WAKE, samples);
        printf("signal.wake.process.%s %.1f\n", names[k], m);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        munmap(ready, 4096);
    }
    return 0;
}
