/*
 * Reference for oscost's `timeline`: the process-scheduler experiment of Satoru Takeuchi,
 * "[試して理解] Linuxのしくみ" (Gijutsu-Hyoron, 2018), as a plain C program: N processes
 * forked and pinned to one CPU, each doing CHUNKS equal chunks of busy work and noting the
 * time after each chunk in memory shared with the parent (no output while they run), all
 * released at once by one write to a pipe after every one was forked. The parent reaps every
 * child (the original's wait loop, `for (j = 0; i < nproc; j++)`, tested the wrong variable)
 * and prints throughput and latency from the trace, under oscost's ids for those counters of
 * its case (timeline.processes.nN.COUNTER), the total as a remark:
 *
 *   throughput_workers_per_s  N / (the last finish - the common start)
 *   latency_avg_ns            mean over the workers of (finish - the common start)
 *   # total_ns                the last finish - the common start
 *
 * The chunk is ITERATIONS rounds of the same xorshift loop oscost's workers run, so both do
 * the same work; pass oscost's `chunk_iterations` (a parameter of its timeline result).
 *
 * Build: cc -O2 -o timeline_ref benches/timeline_ref.c
 * Usage: timeline_ref N CHUNKS ITERATIONS [CPU]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The same dependent xorshift chain as oscost's `busy`. */
__attribute__((noinline)) static uint64_t busy(uint64_t iterations) {
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (uint64_t i = 0; i < iterations; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    __asm__ volatile("" : : "r"(x) : "memory");
    return x;
}

static long parse(const char *s, const char *what, long min, long max) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max) {
        fprintf(stderr, "timeline_ref: %s must be %ld..%ld, got '%s'\n", what, min, max, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv) {
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: timeline_ref N CHUNKS ITERATIONS [CPU]\n");
        return 2;
    }
    long n = parse(argv[1], "N", 1, 256);
    long chunks = parse(argv[2], "CHUNKS", 1, 100000);
    long iterations = parse(argv[3], "ITERATIONS", 1, 1L << 40);
    int cpu = argc > 4 ? (int)parse(argv[4], "CPU", 0, CPU_SETSIZE - 1) : 0;

    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
        return 2;
    }
    size_t bytes = (size_t)n * (size_t)chunks * sizeof(uint64_t);
    uint64_t *trace = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (trace == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    int gate[2];
    if (pipe(gate) != 0) {
        perror("pipe");
        return 2;
    }
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    if (!pids) {
        perror("calloc");
        return 2;
    }
    pid_t parent = getpid();
    for (long w = 0; w < n; w++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            for (long k = 0; k < w; k++) kill(pids[k], SIGKILL);
            for (long k = 0; k < w; k++) waitpid(pids[k], NULL, 0);
            return 2;
        }
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(3);
            char b;
            if (read(gate[0], &b, 1) != 1) _exit(4);
            uint64_t *row = trace + w * chunks;
            for (long c = 0; c < chunks; c++) {
                busy((uint64_t)iterations);
                row[c] = now_ns();
            }
            _exit(0);
        }
        pids[w] = pid;
    }
    /* Every child is forked and waiting: release them all with one write. */
    char *go = calloc((size_t)n, 1);
    if (!go) {
        perror("calloc");
        return 2;
    }
    uint64_t start = now_ns();
    if (write(gate[1], go, (size_t)n) != n) {
        perror("write");
        return 2;
    }
    int failed = 0;
    for (long w = 0; w < n; w++) {
        int st;
        if (waitpid(pids[w], &st, 0) != pids[w] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed = 1;
    }
    if (failed) {
        fprintf(stderr, "timeline_ref: a worker failed\n");
        return 2;
    }
    uint64_t last = 0;
    double sum = 0;
    for (long w = 0; w < n; w++) {
        uint64_t finish = trace[w * chunks + chunks - 1] - start;
        sum += (double)finish;
        if (finish > last) last = finish;
    }
    printf("timeline.processes.n%ld.throughput_workers_per_s %.6f\n", n,
           (double)n / ((double)last / 1e9));
    printf("timeline.processes.n%ld.latency_avg_ns %.0f\n", n, sum / (double)n);
    printf("# total_ns %llu\n", (unsigned long long)last);
    return 0;
}
