/*
 * Reference for oscost's `tick --source signal`: the same fixed work (a chain of dependent
 * 64-bit multiply-adds, the value kept in memory between steps as Rust's black_box keeps it)
 * timed with rdtscp, undisturbed and under a POSIX timer (timer_create(CLOCK_MONOTONIC),
 * SIGEV_THREAD_ID to this thread, the first real-time signal, it_interval the period, an
 * SA_SIGINFO handler that counts each delivery), in interleaved runs. Prints the median cycles
 * each event added: (median disturbed ticks - median undisturbed ticks) / median events
 * counted per run.
 *
 * Build: cc -O2 -o tick_ref benches/tick_ref.c
 * Usage: tick_ref ITERATIONS PERIOD_NS [RUNS]   (pin it with taskset -c CPU)
 * Output, under oscost's id for its case at the period (tick.signal.200us for 200000 ns):
 *   tick.signal.PERIOD.cycles_per_event X
 *   # events Y undisturbed_cycles Z disturbed_cycles W
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define MAX_RUNS 1000

/* Older glibc headers name the thread id only through the union member. */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

static uint64_t events;
static timer_t timer;

static void on_signal(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    (void)si;
    (void)ctx;
    __atomic_fetch_add(&events, 1, __ATOMIC_RELAXED);
}

static void arm(long long ns) {
    struct itimerspec s;
    memset(&s, 0, sizeof s);
    s.it_interval.tv_sec = s.it_value.tv_sec = ns / 1000000000LL;
    s.it_interval.tv_nsec = s.it_value.tv_nsec = ns % 1000000000LL;
    if (timer_settime(timer, 0, &s, NULL) != 0) {
        perror("timer_settime");
        exit(2);
    }
}

static inline uint64_t now(void) {
    unsigned aux;
    return __rdtscp(&aux);
}

__attribute__((noinline)) static uint64_t work(uint64_t n) {
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (uint64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        __asm__ volatile("" : : "r"(&x) : "memory");
    }
    return x;
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
    if (argc < 3) {
        fprintf(stderr, "usage: tick_ref ITERATIONS PERIOD_NS [RUNS]\n");
        return 2;
    }
    uint64_t iterations = strtoull(argv[1], NULL, 10);
    long long period = atoll(argv[2]);
    int runs = argc > 3 ? atoi(argv[3]) : 5;
    if (iterations == 0 || period <= 0 || runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "tick_ref: bad arguments\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGRTMIN, &sa, NULL) != 0) {
        perror("sigaction");
        return 2;
    }
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGRTMIN;
    sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
    if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) {
        perror("timer_create");
        return 2;
    }
    static double base[MAX_RUNS], loaded[MAX_RUNS], counted[MAX_RUNS];
    uint64_t sink = 0;
    for (int r = 0; r < runs; r++) {
        uint64_t t0 = now();
        sink += work(iterations);
        base[r] = (double)(now() - t0);
        arm(period);
        uint64_t e0 = __atomic_load_n(&events, __ATOMIC_RELAXED);
        t0 = now();
        sink += work(iterations);
        uint64_t t1 = now();
        uint64_t e1 = __atomic_load_n(&events, __ATOMIC_RELAXED);
        arm(0);
        loaded[r] = (double)(t1 - t0);
        counted[r] = (double)(e1 - e0);
    }
    timer_delete(timer);
    double b = median(base, runs), l = median(loaded, runs), e = median(counted, runs);
    /* The period as oscost names its case: in the largest unit that divides it. */
    char name[32];
    if (period % 1000000 == 0) snprintf(name, sizeof name, "%lldms", period / 1000000);
    else if (period % 1000 == 0) snprintf(name, sizeof name, "%lldus", period / 1000);
    else snprintf(name, sizeof name, "%lldns", period);
    printf("tick.signal.%s.cycles_per_event %.1f\n", name, e > 0 ? (l - b) / e : 0.0);
    printf("# events %.0f undisturbed_cycles %.0f disturbed_cycles %.0f\n", e, b, l);
    return sink == 42 ? 1 : 0;
}
