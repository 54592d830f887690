/* The C reference for `oscost shootdown`: one touched page invalidated while other threads of
 * the process spin or sleep on other CPUs, timed the same way.
 *
 * The main thread is pinned to CPU A; with -o 1 a second thread is pinned to CPU B and spins
 * (-m spin) or blocks reading a pipe (-m sleep). An operation writes one byte of the page
 * outside the timing (a page between two guard pages, never merged with a neighbour), then
 * times madvise(MADV_DONTNEED), munmap (of a fresh one-page mapping)
 * or mprotect(PROT_READ) (made writable again outside the timing) alone between two clock
 * reads, less the clock's own cost. A sample is 256 operations; the three ops in rounds, one
 * sample of each per round in an order rotated every round, after one untimed sample each.
 *
 * Output, one line per op: "shootdown.OP.othersN[.MODE] MEDIAN_NS_PER_OP".
 *
 * Usage: shootdown_ref -a CPU -b CPU [-o 0|1] [-m spin|sleep] [-s SAMPLES]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define OPS_PER_SAMPLE 256
enum { MADVISE, MUNMAP, MPROTECT, OPS };
static const char *names[OPS] = {"madvise", "munmap", "mprotect"};

static atomic_int stop;
static atomic_ulong spins;
static int spin_mode = 1, cpu_b = 1, pipefd[2];

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

static void *other(void *arg) {
    (void)arg;
    pin(cpu_b);
    if (spin_mode) {
        while (!atomic_load_explicit(&stop, memory_order_relaxed))
            atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);
    } else {
        char b;
        while (read(pipefd[0], &b, 1) < 0) {}
    }
    return NULL;
}

static volatile unsigned char *page;

/* One page between two PROT_NONE guard pages: a mapping the kernel never merges with a
 * neighbour, as oscost's (Mapping::isolated). Returns the inner page. */
static unsigned char *isolated(void) {
    unsigned char *base = mmap(NULL, 3 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED || mprotect(base + PAGE, PAGE, PROT_READ | PROT_WRITE)) {
        perror("mmap");
        exit(2);
    }
    return base + PAGE;
}

static double one(int op, double overhead) {
    uint64_t total = 0;
    for (int i = 0; i < OPS_PER_SAMPLE; i++) {
        uint64_t t0, t1;
        if (op == MADVISE) {
            page[0] = 1;
            t0 = now_ns();
            madvise((void *)page, PAGE, MADV_DONTNEED);
            t1 = now_ns();
        } else if (op == MUNMAP) {
            volatile unsigned char *m = isolated();
            m[0] = 1;
            t0 = now_ns();
            munmap((void *)m, PAGE);
            t1 = now_ns();
            munmap((void *)(m - PAGE), 3 * PAGE);
        } else {
            page[0] = 1;
            t0 = now_ns();
            mprotect((void *)page, PAGE, PROT_READ);
            t1 = now_ns();
            mprotect((void *)page, PAGE, PROT_READ | PROT_WRITE);
        }
        total += t1 - t0;
    }
    return (double)total / OPS_PER_SAMPLE - overhead;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int cpu_a = 0, others = 0, opt;
    unsigned long samples = 81;
    while ((opt = getopt(argc, argv, "a:b:o:m:s:")) != -1) {
        switch (opt) {
        case 'a': cpu_a = atoi(optarg); break;
        case 'b': cpu_b = atoi(optarg); break;
        case 'o': others = atoi(optarg); break;
        case 'm': spin_mode = strcmp(optarg, "sleep") != 0; break;
        case 's': samples = strtoul(optarg, NULL, 10); break;
        default:
            fprintf(stderr, "usage: %s -a CPU -b CPU [-o 0|1] [-m spin|sleep] [-s SAMPLES]\n", argv[0]);
            return 2;
        }
    }
    if (samples == 0 || samples > 4096 || others < 0 || others > 1) {
        fprintf(stderr, "samples 1 to 4096, -o 0 or 1\n");
        return 2;
    }
    pin(cpu_a);
    page = isolated();
    uint64_t c[31];
    for (int i = 0; i < 31; i++) {
        uint64_t t0 = now_ns();
        c[i] = now_ns() - t0;
    }
    double cd[31];
    for (int i = 0; i < 31; i++) cd[i] = (double)c[i];
    qsort(cd, 31, sizeof(double), cmp);
    double overhead = cd[15];
    pthread_t t;
    if (others) {
        if (pipe(pipefd)) { perror("pipe"); return 2; }
        pthread_create(&t, NULL, other, NULL);
    }
    static double v[OPS][4096];
    for (int op = 0; op < OPS; op++) one(op, overhead);
    for (unsigned long r = 0; r < samples; r++)
        for (int i = 0; i < OPS; i++) {
            int op = (int)((r + (unsigned long)i) % OPS);
            v[op][r] = one(op, overhead);
        }
    if (others) {
        atomic_store(&stop, 1);
        close(pipefd[1]);
        pthread_join(t, NULL);
    }
    for (int op = 0; op < OPS; op++) {
        qsort(v[op], samples, sizeof(double), cmp);
        double med = samples % 2 ? v[op][samples / 2] : (v[op][samples / 2 - 1] + v[op][samples / 2]) / 2;
        if (others)
            printf("shootdown.%s.others1.%s %.1f\n", names[op], spin_mode ? "spin" : "sleep", med);
        else
            printf("shootdown.%s.others0 %.1f\n", names[op], med);
    }
    return 0;
}
