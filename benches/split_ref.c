/* Reference for `oscost split`: the same fixed work done by one flow, N threads or N forked
 * processes, written the way the studies wrote it: each task starts on its share as soon as it
 * exists (no barrier), the main flow waits for all, and the whole is timed with
 * CLOCK_MONOTONIC. The work loop is the same dependent add loop as oscost's, in inline
 * assembly inside a 64-byte-aligned, never-inlined function, so both programs run the same
 * instructions.
 *
 * Usage: split_ref FORM N UNITS STEP YIELD
 *   FORM  single | threads | processes
 *   N     tasks (single: pieces)
 *   UNITS total work units W (the `work_units` oscost reports)
 *   STEP  units per step (`step_units`)
 *   YIELD 1 to call sched_yield() after every step, else 0
 * Prints oscost's id for the point and the total ns (split.FORM.SET.N[.yield] NS, SET `one`
 * when pinned to one CPU, else `all`), then `# done_units U`; exits 1 unless U is UNITS.
 * Build: cc -O2 -pthread -o split_ref split_ref.c
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t units_total, step_units;
static int yield_each;
static long tasks;
static uint64_t *done; /* per task, shared with children */

__attribute__((noinline, aligned(64))) static uint64_t work(uint64_t n) {
    uint64_t x = 0;
    if (n == 0)
        return 0;
#if defined(__x86_64__)
    __asm__ volatile(".p2align 4\n1:\n\tadd $1, %0\n\tsub $1, %1\n\tjne 1b"
                     : "+r"(x), "+r"(n));
#elif defined(__aarch64__)
    __asm__ volatile(".p2align 4\n1:\n\tadd %0, %0, #1\n\tsubs %1, %1, #1\n\tb.ne 1b"
                     : "+r"(x), "+r"(n));
#else
    for (; n; n--)
        x = *(volatile uint64_t *)&x + 1;
#endif
    return x;
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
        if (yield_each)
            sched_yield();
    }
    return d;
}

static void *thread_main(void *arg) {
    long i = (long)arg;
    done[i] = do_share(share(i));
    return NULL;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: split_ref single|threads|processes N UNITS STEP YIELD\n");
        return 2;
    }
    const char *form = argv[1];
    tasks = atol(argv[2]);
    units_total = strtoull(argv[3], NULL, 10);
    step_units = strtoull(argv[4], NULL, 10);
    yield_each = atoi(argv[5]);
    if (tasks < 1 || units_total < 1 || step_units < 1) {
        fprintf(stderr, "split_ref: N, UNITS and STEP must be positive\n");
        return 2;
    }
    done = mmap(NULL, tasks * sizeof *done, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                -1, 0);
    if (done == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(done, 0, tasks * sizeof *done);
    work(units_total / 20); /* warm-up, as oscost's calibration warms the CPU */
    uint64_t t0 = now_ns();
    if (!strcmp(form, "single")) {
        for (long i = 0; i < tasks; i++)
            done[i] = do_share(share(i));
    } else if (!strcmp(form, "threads")) {
        pthread_t *t = calloc(tasks, sizeof *t);
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 64 * 1024);
        for (long i = 0; i < tasks; i++)
            if (pthread_create(&t[i], &a, thread_main, (void *)i)) {
                fprintf(stderr, "split_ref: pthread_create failed at %ld\n", i);
                return 1;
            }
        for (long i = 0; i < tasks; i++)
            pthread_join(t[i], NULL);
    } else if (!strcmp(form, "processes")) {
        for (long i = 0; i < tasks; i++) {
            pid_t p = fork();
            if (p < 0) {
                perror("fork");
                return 1;
            }
            if (p == 0) {
                done[i] = do_share(share(i));
                _exit(0);
            }
        }
        while (wait(NULL) > 0)
            ;
    } else {
        fprintf(stderr, "split_ref: unknown form %s\n", form);
        return 2;
    }
    uint64_t t1 = now_ns();
    uint64_t sum = 0;
    for (long i = 0; i < tasks; i++)
        sum += done[i];
    cpu_set_t set;
    int one = sched_getaffinity(0, sizeof set, &set) || CPU_COUNT(&set) == 1;
    printf("split.%s.%s.%ld%s %llu\n", form, one ? "one" : "all", tasks, yield_each ? ".yield" : "",
           (unsigned long long)(t1 - t0));
    printf("# done_units %llu\n", (unsigned long long)sum);
    return sum == units_total ? 0 : 1;
}
