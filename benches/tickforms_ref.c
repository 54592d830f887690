/*
 * Reference for `oscost tick-forms`: the same work W (the same assembly add loop as oscost's,
 * 64-byte aligned and never inlined, the units oscost calibrated) done by one flow, N threads
 * and N forked processes on one CPU (pin the program with taskset), undisturbed and under a
 * helper thread that blocks on a periodic timerfd at SCHED_FIFO priority 2 and counts its
 * wake-ups. The workers run under the given policy (SCHED_FIFO / SCHED_RR priority 1 set on
 * each task once it waits at the barrier, or on the main thread for the single flow). A run is
 * timed with rdtscp and CLOCK_MONOTONIC from the barrier's opening to the last task's finish;
 * the switches are each task's getrusage(RUSAGE_THREAD) over its share. Every point (form x
 * period) runs once per round in an order rotated each round, as oscost does.
 *
 * Build: cc -O2 -pthread -o tickforms_ref benches/tickforms_ref.c
 * Usage: tickforms_ref UNITS STEP TASKS POLICY ROUNDS PERIOD_NS...
 *   UNITS   total work units W (oscost's `work_units`), STEP units per step (`step_units`)
 *   TASKS   N; POLICY other | fifo | rr; ROUNDS runs of each point
 *   PERIOD_NS the periods besides the undisturbed work (always run, as period 0)
 * Prints per point, under oscost's id for it (tick-forms.FORM.POLICY.PERIOD, PERIOD in the
 * largest unit that divides it, `none` undisturbed): the median ns, then `ID.cycles` and,
 * under a period, `ID.events` (the medians of the counters oscost names so) and `# ID switches S`; exits 1
 * if any run did not do exactly W units.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define MAX_TASKS 256
#define MAX_PERIODS 16
#define MAX_ROUNDS 100

__attribute__((noinline, aligned(64))) static uint64_t work(uint64_t n) {
    uint64_t x = 0;
    if (n == 0)
        return 0;
#if defined(__x86_64__)
    __asm__ volatile(".p2align 4\n1:\n\tadd $1, %0\n\tsub $1, %1\n\tjne 1b" : "+r"(x), "+r"(n));
#else
    for (; n; n--)
        x = *(volatile uint64_t *)&x + 1;
#endif
    return x;
}

struct slot {
    uint64_t tid, units, finish_tsc, finish_ns, switches;
} __attribute__((aligned(64)));

struct shared {
    int ready __attribute__((aligned(64)));
    int go __attribute__((aligned(64)));
    int done __attribute__((aligned(64)));
    struct slot slot[MAX_TASKS];
};

static struct shared *sh;
static uint64_t units_total, step_units;
static long tasks;

static long futex(int *w, int op, int v) {
    return syscall(SYS_futex, w, op, v, NULL, NULL, 0);
}

static inline uint64_t tsc(void) {
    unsigned aux;
    return __rdtscp(&aux);
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

static uint64_t switches(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

static uint64_t share(long i) {
    return units_total / tasks + ((uint64_t)i < units_total % tasks);
}

static uint64_t do_share(uint64_t units) {
    uint64_t d = 0;
    while (units) {
        uint64_t s = units < step_units ? units : step_units;
        d += work(s);
        units -= s;
    }
    return d;
}

/* A task: ready, wait at the barrier, do its share, record, count itself done. */
static void task(long i) {
    struct slot *s = &sh->slot[i];
    s->tid = (uint64_t)syscall(SYS_gettid);
    __atomic_fetch_add(&sh->ready, 1, __ATOMIC_SEQ_CST);
    futex(&sh->ready, FUTEX_WAKE, 1);
    while (__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE) == 0)
        futex(&sh->go, FUTEX_WAIT, 0);
    uint64_t sw0 = switches();
    s->units = do_share(share(i));
    s->finish_tsc = tsc();
    s->finish_ns = now_ns();
    s->switches = switches() - sw0;
    __atomic_fetch_add(&sh->done, 1, __ATOMIC_SEQ_CST);
    futex(&sh->done, FUTEX_WAKE, 1);
}

static void *thread_main(void *arg) {
    task((long)arg);
    return NULL;
}

/* The helper: SCHED_FIFO 2 where permitted, a periodic timerfd, every wake-up counted. */
static int tfd = -1;
static volatile int helper_stop, helper_up;
static uint64_t helper_events;

static void *helper_main(void *arg) {
    long period = (long)arg;
    struct sched_param sp = {.sched_priority = 2};
    sched_setscheduler(0, SCHED_FIFO, &sp);
    struct itimerspec its = {{period / 1000000000L, period % 1000000000L},
                             {period / 1000000000L, period % 1000000000L}};
    timerfd_settime(tfd, 0, &its, NULL);
    __atomic_store_n(&helper_up, 1, __ATOMIC_RELEASE);
    for (;;) {
        uint64_t n;
        if (read(tfd, &n, sizeof n) < 0 && errno == EINTR)
            continue;
        if (helper_stop)
            break;
        __atomic_fetch_add(&helper_events, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static pthread_t helper;

static void helper_start(long period) {
    helper_stop = 0;
    helper_up = 0;
    helper_events = 0;
    tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    if (tfd < 0 || pthread_create(&helper, NULL, helper_main, (void *)period)) {
        perror("helper");
        exit(2);
    }
    while (!__atomic_load_n(&helper_up, __ATOMIC_ACQUIRE))
        sched_yield();
}

static void helper_stop_join(void) {
    helper_stop = 1;
    struct itimerspec its = {{0, 0}, {0, 1}};
    timerfd_settime(tfd, 0, &its, NULL);
    pthread_join(helper, NULL);
    close(tfd);
}

static int policy_number(const char *p) {
    if (!strcmp(p, "fifo"))
        return SCHED_FIFO;
    if (!strcmp(p, "rr"))
        return SCHED_RR;
    return SCHED_OTHER;
}

static void set_policy(pid_t tid, int pol) {
    struct sched_param sp = {.sched_priority = pol == SCHED_OTHER ? 0 : 1};
    if (sched_setscheduler(tid, pol, &sp) != 0) {
        perror("sched_setscheduler");
        exit(2);
    }
}

struct result {
    double ns, cycles, events, switches;
    int ok;
};

static struct result run(int form, long period, int pol) {
    struct result r = {0};
    memset(sh, 0, sizeof *sh);
    if (form == 0) { /* one flow */
        if (pol != SCHED_OTHER)
            set_policy(0, pol);
        if (period)
            helper_start(period);
        uint64_t e0 = __atomic_load_n(&helper_events, __ATOMIC_RELAXED);
        uint64_t sw0 = switches();
        uint64_t t0 = tsc(), n0 = now_ns(), units = 0;
        for (long i = 0; i < tasks; i++)
            units += do_share(share(i));
        uint64_t t1 = tsc(), n1 = now_ns();
        r.switches = (double)(switches() - sw0);
        r.events = (double)(__atomic_load_n(&helper_events, __ATOMIC_RELAXED) - e0);
        if (period)
            helper_stop_join();
        if (pol != SCHED_OTHER)
            set_policy(0, SCHED_OTHER);
        r.ns = (double)(n1 - n0);
        r.cycles = (double)(t1 - t0);
        r.ok = units == units_total;
        return r;
    }
    pthread_t th[MAX_TASKS];
    pid_t pid[MAX_TASKS];
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    for (long i = 0; i < tasks; i++) {
        if (form == 1) {
            if (pthread_create(&th[i], &a, thread_main, (void *)i)) {
                fprintf(stderr, "pthread_create failed\n");
                exit(2);
            }
        } else {
            pid[i] = fork();
            if (pid[i] < 0) {
                perror("fork");
                exit(2);
            }
            if (pid[i] == 0) {
                task(i);
                _exit(0);
            }
        }
    }
    int v;
    while ((v = __atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE)) < tasks)
        futex(&sh->ready, FUTEX_WAIT, v);
    if (pol != SCHED_OTHER)
        for (long i = 0; i < tasks; i++)
            set_policy((pid_t)sh->slot[i].tid, pol);
    if (period)
        helper_start(period);
    uint64_t e0 = __atomic_load_n(&helper_events, __ATOMIC_RELAXED);
    uint64_t t0 = tsc(), n0 = now_ns();
    __atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
    futex(&sh->go, FUTEX_WAKE, MAX_TASKS);
    while ((v = __atomic_load_n(&sh->done, __ATOMIC_ACQUIRE)) < tasks)
        futex(&sh->done, FUTEX_WAIT, v);
    r.events = (double)(__atomic_load_n(&helper_events, __ATOMIC_RELAXED) - e0);
    if (period)
        helper_stop_join();
    uint64_t last_tsc = t0, last_ns = n0, units = 0;
    for (long i = 0; i < tasks; i++) {
        struct slot *s = &sh->slot[i];
        if (s->finish_tsc > last_tsc)
            last_tsc = s->finish_tsc;
        if (s->finish_ns > last_ns)
            last_ns = s->finish_ns;
        units += s->units;
        r.switches += (double)s->switches;
    }
    for (long i = 0; i < tasks; i++) {
        if (form == 1)
            pthread_join(th[i], NULL);
        else
            waitpid(pid[i], NULL, 0);
    }
    r.ns = (double)(last_ns - n0);
    r.cycles = (double)(last_tsc - t0);
    r.ok = units == units_total;
    return r;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: tickforms_ref UNITS STEP TASKS POLICY ROUNDS PERIOD_NS...\n");
        return 2;
    }
    units_total = strtoull(argv[1], NULL, 10);
    step_units = strtoull(argv[2], NULL, 10);
    tasks = atol(argv[3]);
    int pol = policy_number(argv[4]);
    int rounds = atoi(argv[5]);
    long periods[MAX_PERIODS + 1] = {0};
    int np = 1;
    for (int i = 6; i < argc && np <= MAX_PERIODS; i++)
        periods[np++] = atol(argv[i]);
    if (units_total < 1 || step_units < 1 || tasks < 1 || tasks > MAX_TASKS || rounds < 1 ||
        rounds > MAX_ROUNDS) {
        fprintf(stderr, "tickforms_ref: bad arguments\n");
        return 2;
    }
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    work(units_total / 20); /* warm-up, as oscost's calibration warms the CPU */
    int points = 3 * np;
    static double ns[3 * (MAX_PERIODS + 1)][MAX_ROUNDS], cyc[3 * (MAX_PERIODS + 1)][MAX_ROUNDS],
        ev[3 * (MAX_PERIODS + 1)][MAX_ROUNDS], sw[3 * (MAX_PERIODS + 1)][MAX_ROUNDS];
    int bad = 0;
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < points; k++) {
            int i = (r + k) % points;
            struct result x = run(i / np, periods[i % np], pol);
            ns[i][r] = x.ns;
            cyc[i][r] = x.cycles;
            ev[i][r] = x.events;
            sw[i][r] = x.switches;
            bad |= !x.ok;
            usleep(10000); /* the pause oscost makes after every run */
        }
    }
    static const char *forms[] = {"single", "threads", "processes"};
    for (int i = 0; i < points; i++) {
        long p = periods[i % np];
        char id[96];
        int at = snprintf(id, sizeof id, "tick-forms.%s.%s.", forms[i / np], argv[4]);
        if (p == 0) snprintf(id + at, sizeof id - at, "none");
        else if (p % 1000000 == 0) snprintf(id + at, sizeof id - at, "%ldms", p / 1000000);
        else if (p % 1000 == 0) snprintf(id + at, sizeof id - at, "%ldus", p / 1000);
        else snprintf(id + at, sizeof id - at, "%ldns", p);
        printf("%s %.0f\n%s.cycles %.0f\n", id, median(ns[i], rounds), id, median(cyc[i], rounds));
        /* Undisturbed, no timer runs: no event to count, nothing to pair. */
        if (p != 0) printf("%s.events %.1f\n", id, median(ev[i], rounds));
        printf("# %s switches %.1f\n", id, median(sw[i], rounds));
    }
    return bad;
}
