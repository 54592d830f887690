/* The clock and the calibration of batches per sample that the C references share with
 * oscost's sampler, included by each reference (compiled alone, no library). */
#ifndef OSCOST_BENCH_CALIBRATE_H
#define OSCOST_BENCH_CALIBRATE_H

#include <stdint.h>
#include <time.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* How many calls of run(arg) a sample takes, as oscost's sampler calibrates: double until a
 * batch lasts target ns, settling only when a second batch of that size lasts at least half
 * of it too (one slow batch may be a preemption, or an SQPOLL thread not yet running, rather
 * than the operation: settling on it would leave samples of a single operation), and jump close
 * to the target once a batch lasts over 50 us. */
static unsigned long calibrate_batches(void (*run)(void *), void *arg, double target) {
    for (unsigned long k = 1;;) {
        uint64_t t0 = now_ns();
        for (unsigned long j = 0; j < k; j++) run(arg);
        double t = (double)(now_ns() - t0);
        if (t >= target) {
            t0 = now_ns();
            for (unsigned long j = 0; j < k; j++) run(arg);
            double again = (double)(now_ns() - t0);
            if (again >= target / 2) return k;
            t = again;
        }
        unsigned long next = t > 50000 ? (unsigned long)(k * target / t + 0.999) : k * 2;
        k = next > k ? next : k + 1;
    }
}

#endif
