/*
 * Reference for oscost's syscall.getpid: the smallest C loop of the raw getpid system call,
 * timed with the same counter (rdtscp) on the same CPU, empty-loop cost subtracted the same
 * way. Prints the median per-call cost in TSC ticks (reference cycles) of 81 batches of 35 000
 * calls (about 4 ms each): the shape of `oscost syscall --calls getpid` (81 samples of >= 4 ms).
 *
 * Build: cc -O2 -o getpid_ref benches/getpid_ref.c
 * Usage: getpid_ref [CPU]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#define BATCHES 81
#define CALLS 35000

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline uint64_t now(void) {
    unsigned aux;
    return __rdtscp(&aux);
}

__attribute__((noinline)) static uint64_t batch_getpid(long n) {
    uint64_t t0 = now();
    for (long i = 0; i < n; i++) {
        long r = syscall(SYS_getpid);
        __asm__ volatile("" : : "r"(r) : "memory");
    }
    return now() - t0;
}

__attribute__((noinline)) static uint64_t batch_empty(long n) {
    uint64_t t0 = now();
    for (long i = 0; i < n; i++) {
        __asm__ volatile("" : : : "memory");
    }
    return now() - t0;
}

int main(int argc, char **argv) {
    int cpu = argc > 1 ? atoi(argv[1]) : 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
        return 2;
    }
    for (int i = 0; i < 20; i++) batch_getpid(CALLS); /* warm-up */
    double empty[7];
    for (int i = 0; i < 7; i++) empty[i] = (double)batch_empty(CALLS) / CALLS;
    qsort(empty, 7, sizeof empty[0], cmp);
    double s[BATCHES];
    for (int i = 0; i < BATCHES; i++) s[i] = (double)batch_getpid(CALLS) / CALLS - empty[3];
    qsort(s, BATCHES, sizeof s[0], cmp);
    printf("%.2f\n", s[BATCHES / 2]);
    return 0;
}
