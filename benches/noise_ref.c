/*
 * Reference for oscost's `noise`: a C loop on one CPU (pin it with taskset -c CPU) that reads
 * the TSC with rdtscp as fast as it can and stores every gap between two readings above a
 * threshold into memory written beforehand, as oscost's loop does. The TSC's rate is measured
 * against CLOCK_MONOTONIC_RAW over 100 ms and the loop's own iteration over 20 ms first.
 * Prints gaps per second and the median interruption (a gap less one loop iteration), in ns,
 * under oscost's ids (its case on the CPU it ran on, and the counter); the 99th percentile
 * and the loop's iteration as remarks.
 *
 * Build: cc -O2 -o noise_ref benches/noise_ref.c
 * Usage: taskset -c CPU noise_ref SECONDS THRESHOLD_NS
 * Output: noise.cpuN.gaps_per_s X / noise.cpuN.length_median_ns Y / # p99_ns Z iteration_ns W
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#define CAPACITY 1000000

static inline uint64_t now(void) {
    unsigned aux;
    return __rdtscp(&aux);
}

static double raw_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Spins until the TSC reaches `until`; stores gaps above `threshold` ticks into `lens` (at
 * most `cap`), returns how many were seen and sets the iteration count. */
__attribute__((noinline)) static uint64_t spin(uint64_t until, uint64_t threshold, uint64_t *lens,
                                               uint64_t cap, uint64_t *iterations) {
    uint64_t prev = now(), seen = 0, n = 0;
    for (;;) {
        uint64_t before = prev;
        uint64_t t = now();
        n++;
        uint64_t len = t - before;
        if (len > threshold) {
            if (seen < cap) lens[seen] = len;
            seen++;
        }
        prev = t;
        if (t >= until) break;
    }
    *iterations = n;
    return seen;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: noise_ref SECONDS THRESHOLD_NS\n");
        return 2;
    }
    double seconds = atof(argv[1]), threshold_ns = atof(argv[2]);
    if (seconds <= 0 || threshold_ns <= 0) {
        fprintf(stderr, "noise_ref: bad arguments\n");
        return 2;
    }
    double a = raw_ns();
    uint64_t c0 = now();
    struct timespec pause = {0, 100000000};
    nanosleep(&pause, NULL);
    double b = raw_ns();
    uint64_t c1 = now();
    double ticks_per_ns = (double)(c1 - c0) / (b - a);

    uint64_t *lens = malloc(CAPACITY * sizeof *lens);
    if (!lens) return 2;
    memset(lens, 0xff, CAPACITY * sizeof *lens);
    uint64_t iterations, dummy;
    uint64_t start = now();
    spin(start + (uint64_t)(20e6 * ticks_per_ns), UINT64_MAX, lens, 0, &iterations);
    double iteration = (double)(now() - start) / iterations;

    start = now();
    uint64_t seen = spin(start + (uint64_t)(seconds * 1e9 * ticks_per_ns),
                         (uint64_t)(threshold_ns * ticks_per_ns), lens, CAPACITY, &dummy);
    double span_ns = (now() - start) / ticks_per_ns;
    uint64_t stored = seen < CAPACITY ? seen : CAPACITY;
    double *ns = malloc((stored ? stored : 1) * sizeof *ns);
    for (uint64_t i = 0; i < stored; i++) ns[i] = (lens[i] - iteration) / ticks_per_ns;
    qsort(ns, stored, sizeof *ns, cmp);
    double med = stored ? ns[stored / 2] : 0, p99 = stored ? ns[(uint64_t)(0.99 * (stored - 1))] : 0;
    int cpu = sched_getcpu();
    printf("noise.cpu%d.gaps_per_s %.1f\nnoise.cpu%d.length_median_ns %.1f\n", cpu,
           seen / (span_ns / 1e9), cpu, med);
    printf("# p99_ns %.1f iteration_ns %.2f\n", p99, iteration / ticks_per_ns);
    return 0;
}
