/* The C reference for `oscost wakeup`'s idle cases: a thread pinned to one CPU sleeping to an
 * absolute time every period, each wake-up's lateness read the way oscost and cyclictest read
 * it, written apart from oscost so the two can be held against each other wake-up for
 * wake-up.
 *
 * The thread writes its buffer first (storing a lateness never faults), takes SCHED_FIFO at
 * the priority asked for (or stays SCHED_OTHER), reads CLOCK_MONOTONIC, then sleeps with
 * clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) to each deadline one period apart and reads
 * the clock on waking: the lateness is the difference. A deadline already passed at a wake-up
 * is skipped (and counted), as oscost and cyclictest skip it. Under the side-by-side harness's
 * alternation (pace.h) it sleeps in turns of 25 wake-ups, each turn's deadlines starting
 * afresh, as oscost's do.
 *
 * Output: the p50 and p99 of the lateness in whole µs, each wake-up's lateness cut down to
 * whole µs and the percentile the first µs whose running count reaches its share (as
 * cyclictest's histogram is read), one line each:
 *   wakeup.POLICY.PERIOD.p50_us N
 *   wakeup.POLICY.PERIOD.p99_us N
 * and a comment line with the wake-ups, the skipped deadlines and the voluntary switches.
 *
 * Usage: wakeup_ref -c CPU [-n WAKEUPS] [-i PERIOD_US] [-p other|fifo] [-P PRIORITY]
 *   defaults: 5000 wake-ups, 1000 µs, other, priority 90. PERIOD names the case as oscost does
 *   (1ms, 200us).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "pace.h"

#define A_TURN 25

static int cpu = -1, fifo = 0, priority = 90;
static unsigned long wakeups = 5000, period_us = 1000;
static uint64_t *lateness;
static unsigned long done, skipped;
static long voluntary;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void sleep_until(uint64_t ns) {
    struct timespec t = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
    int e;
    while ((e = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL)) == EINTR)
        ;
    if (e) {
        fprintf(stderr, "clock_nanosleep: %s\n", strerror(e));
        exit(2);
    }
}

/* Sleeps `n` periods from now, storing each lateness from `lateness[done]` on. */
static void sleep_periods(unsigned long n) {
    uint64_t period = (uint64_t)period_us * 1000u, next = now_ns() + period;
    for (unsigned long i = 0; i < n && done < wakeups; i++) {
        sleep_until(next);
        uint64_t now = now_ns();
        lateness[done++] = now - next;
        next += period;
        if (now >= next) {
            uint64_t behind = (now - next) / period + 1;
            skipped += behind;
            next += behind * period;
        }
    }
}

static void *sleeper(void *arg) {
    (void)arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (e) {
        fprintf(stderr, "pinning to CPU %d: %s\n", cpu, strerror(e));
        exit(2);
    }
    lateness = malloc(wakeups * sizeof *lateness);
    if (!lateness) {
        perror("malloc");
        exit(2);
    }
    for (unsigned long i = 0; i < wakeups; i++) lateness[i] = 1;
    if (fifo) {
        struct sched_param sp = {.sched_priority = priority};
        e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
        if (e) {
            fprintf(stderr, "SCHED_FIFO at %d: %s (run as root)\n", priority, strerror(e));
            exit(2);
        }
    }
    struct rusage r0, r1;
    getrusage(RUSAGE_THREAD, &r0);
    while (done < wakeups) {
        pace_turn();
        sleep_periods(pace_go >= 0 ? A_TURN : wakeups);
    }
    getrusage(RUSAGE_THREAD, &r1);
    voluntary = r1.ru_nvcsw - r0.ru_nvcsw;
    return NULL;
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The first whole µs whose running count reaches the share p of all the wake-ups. */
static uint64_t percentile_us(const uint64_t *sorted_us, unsigned long n, double p) {
    for (unsigned long i = 0; i < n; i++)
        if ((double)(i + 1) >= p * (double)n) return sorted_us[i];
    return sorted_us[n - 1];
}

int main(int argc, char **argv) {
    int opt;
    const char *policy = "other";
    while ((opt = getopt(argc, argv, "c:n:i:p:P:")) != -1) {
        switch (opt) {
        case 'c': cpu = atoi(optarg); break;
        case 'n': wakeups = strtoul(optarg, NULL, 10); break;
        case 'i': period_us = strtoul(optarg, NULL, 10); break;
        case 'p': policy = optarg; break;
        case 'P': priority = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: wakeup_ref -c CPU [-n WAKEUPS] [-i PERIOD_US] [-p other|fifo] [-P PRIORITY]\n");
            return 2;
        }
    }
    if (strcmp(policy, "fifo") == 0) fifo = 1;
    else if (strcmp(policy, "other") != 0) {
        fprintf(stderr, "wakeup_ref: unknown policy '%s' (other or fifo)\n", policy);
        return 2;
    }
    if (cpu < 0 || wakeups == 0 || period_us == 0) {
        fprintf(stderr, "wakeup_ref: needs -c CPU, and a positive -n and -i\n");
        return 2;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, sleeper, NULL) || pthread_join(t, NULL)) {
        perror("pthread");
        return 2;
    }
    for (unsigned long i = 0; i < done; i++) lateness[i] /= 1000u;
    qsort(lateness, done, sizeof *lateness, by_value);
    char period[32];
    if (period_us % 1000 == 0) snprintf(period, sizeof period, "%lums", period_us / 1000);
    else snprintf(period, sizeof period, "%luus", period_us);
    printf("# %lu wake-ups, %lu deadlines skipped, %ld voluntary switches\n", done, skipped, voluntary);
    printf("wakeup.%s.%s.p50_us %llu\n", policy, period, (unsigned long long)percentile_us(lateness, done, 0.50));
    printf("wakeup.%s.%s.p99_us %llu\n", policy, period, (unsigned long long)percentile_us(lateness, done, 0.99));
    free(lateness);
    return 0;
}
