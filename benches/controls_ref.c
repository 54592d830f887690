/*
 * Reference for the machine's controls oscost times around every experiment: the same two
 * loads written in C, pinned to one CPU and timed with CLOCK_MONOTONIC. 24 samples of each,
 * alternating as oscost takes them: 500 calls of syscall(-1) (ENOSYS), and one pass of 20 000
 * dependent xorshift64 steps. Prints the two medians under oscost's ids for them
 * (control.kernel_entry: ns per call, control.user_loop: ns per pass).
 *
 * Build: cc -O2 -o controls_ref benches/controls_ref.c
 * Usage: controls_ref [CPU]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SAMPLES 24
#define CALLS 500
#define STEPS 20000

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

__attribute__((noinline)) static uint64_t user_loop(uint64_t seed) {
    uint64_t x = seed | 1;
    for (int i = 0; i < STEPS; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

static void enosys_batch(void) {
    for (int i = 0; i < CALLS; i++) {
        long r = syscall(-1);
        __asm__ volatile("" : : "r"(r) : "memory");
    }
}

int main(int argc, char **argv) {
    if (argc > 1) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(atoi(argv[1]), &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            perror("sched_setaffinity");
            return 2;
        }
    }
    double k[SAMPLES], u[SAMPLES];
    volatile uint64_t sink = user_loop(7);
    enosys_batch();
    for (int i = 0; i < SAMPLES; i++) {
        double t0 = now_ns();
        enosys_batch();
        double t1 = now_ns();
        k[i] = (t1 - t0) / CALLS;
        t0 = now_ns();
        sink += user_loop((uint64_t)i);
        t1 = now_ns();
        u[i] = t1 - t0;
    }
    (void)sink;
    qsort(k, SAMPLES, sizeof k[0], cmp);
    qsort(u, SAMPLES, sizeof u[0], cmp);
    printf("control.kernel_entry %.2f\ncontrol.user_loop %.1f\n",
           (k[SAMPLES / 2 - 1] + k[SAMPLES / 2]) / 2, (u[SAMPLES / 2 - 1] + u[SAMPLES / 2]) / 2);
    return 0;
}
