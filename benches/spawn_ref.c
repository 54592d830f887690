/*
 * Reference for `oscost spawn`: the same creations timed the same way, in plain C.
 *
 * For each parent size (MiB of private memory mapped, advised MADV_NOHUGEPAGE and written
 * once per page) it times, one creation and its wait per sample:
 *
 *   fork                 fork; the child calls _exit(0); waitpid
 *   vfork                vfork; the child calls _exit(0); waitpid
 *   posix-spawn.static   posix_spawn of the static helper; waitpid
 *   posix-spawn.dynamic  posix_spawn of /bin/true; waitpid
 *   fork-exec.static     fork; the child calls execve of the static helper; waitpid
 *   fork-exec.dynamic    fork; the child calls execve of /bin/true; waitpid
 *
 * then, for each count of mappings (-M), fork alone with the parent holding that many one-page
 * shared anonymous mappings (each written once) beside the smallest parent size, and, after
 * everything, pthread_create (64 KiB stack) of a thread that returns at once and
 * pthread_join. Programs are started with argv = {path, NULL} and an empty environment. As in
 * oscost: a few untimed creations of each case first (5, or 2 with -q), then rounds of one
 * timed creation of each case of the size in an order rotated every round, 81 rounds (15 with
 * -q); the cost of two back-to-back clock reads is subtracted. The process does not pin
 * itself: run it under `taskset -c CPU`, which the children and the thread inherit.
 *
 * Prints one line per case: its oscost case id and the median in ns; and at each size the
 * parent's VmRSS and VmPTE while it forked, in KiB, as oscost names those counters of its
 * fork case (spawn.fork.pNmib.rss_kib, .vm_pte_kib).
 *
 * Build: cc -O2 -pthread -o spawn_ref benches/spawn_ref.c
 * Usage: spawn_ref -h HELPER [-m MIB,...] [-M N,...] [-q]
 *   HELPER  the static helper (crates/sys/helper/exit0.c built with cc -static -nostdlib)
 *   -m      parent sizes, MiB (default 1,64,1024)
 *   -M      numbers of one-page shared mappings fork runs against (default none)
 *   -q      15 samples instead of 81
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CASES 6
#define MAX_SAMPLES 81
#define DYNAMIC "/bin/true"

enum op { FORK, VFORK, POSIX_SPAWN, FORK_EXEC, THREAD };

struct kase {
    enum op op;
    const char *name;
    char *path;
    double ns[MAX_SAMPLES];
    int n;
};

static char *empty_env[] = {NULL};

static void die(const char *what) {
    perror(what);
    exit(2);
}

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void reap(pid_t pid) {
    int st;
    while (waitpid(pid, &st, 0) != pid)
        if (errno != EINTR) die("waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "child %d ended with status %#x\n", (int)pid, st);
        exit(2);
    }
}

static void *thread_body(void *arg) {
    return arg;
}

static pthread_attr_t attr;

static void once(struct kase *k) {
    pid_t pid;
    char *argv[] = {k->path, NULL};
    switch (k->op) {
    case FORK:
        pid = fork();
        if (pid == 0) _exit(0);
        if (pid < 0) die("fork");
        reap(pid);
        break;
    case VFORK:
        pid = vfork();
        if (pid == 0) _exit(0);
        if (pid < 0) die("vfork");
        reap(pid);
        break;
    case POSIX_SPAWN: {
        int r = posix_spawn(&pid, k->path, NULL, NULL, argv, empty_env);
        if (r != 0) {
            errno = r;
            die("posix_spawn");
        }
        reap(pid);
        break;
    }
    case FORK_EXEC:
        pid = fork();
        if (pid == 0) {
            execve(k->path, argv, empty_env);
            _exit(127);
        }
        if (pid < 0) die("fork");
        reap(pid);
        break;
    case THREAD: {
        pthread_t t;
        int r = pthread_create(&t, &attr, thread_body, NULL);
        if (r != 0) {
            errno = r;
            die("pthread_create");
        }
        if (pthread_join(t, NULL) != 0) die("pthread_join");
        break;
    }
    }
}

static double clock_overhead(void) {
    double v[31];
    for (int i = 0; i < 31; i++) {
        uint64_t t0 = now();
        v[i] = (double)(now() - t0);
    }
    qsort(v, 31, sizeof v[0], cmp);
    return v[15];
}

/* Samples the cases in rotated rounds and prints each median under its id + suffix. */
static void sample(struct kase *cases, int n, int samples, int warm, const char *suffix) {
    for (int i = 0; i < n; i++) {
        cases[i].n = 0;
        for (int w = 0; w < warm; w++) once(&cases[i]);
    }
    double over = clock_overhead();
    for (int round = 0; round < samples; round++) {
        for (int j = 0; j < n; j++) {
            struct kase *k = &cases[(round + j) % n];
            uint64_t t0 = now();
            once(k);
            uint64_t t1 = now();
            k->ns[k->n++] = (double)(t1 - t0) - over;
        }
    }
    for (int i = 0; i < n; i++) {
        qsort(cases[i].ns, cases[i].n, sizeof(double), cmp);
        printf("spawn.%s%s %.1f\n", cases[i].name, suffix, cases[i].ns[cases[i].n / 2]);
    }
    fflush(stdout);
}

static long status_kib(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t len = strlen(field);
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, len) == 0 && line[len] == ':') v = atol(line + len + 1);
    fclose(f);
    return v;
}

int main(int argc, char **argv) {
    char *helper = NULL, *sizes = "1,64,1024", *maps = NULL;
    int samples = MAX_SAMPLES, warm = 5, opt;
    while ((opt = getopt(argc, argv, "h:m:M:q")) != -1) {
        switch (opt) {
        case 'h': helper = optarg; break;
        case 'm': sizes = optarg; break;
        case 'M': maps = optarg; break;
        case 'q': samples = 15, warm = 2; break;
        default:
            fprintf(stderr, "usage: %s -h HELPER [-m MIB,...] [-M N,...] [-q]\n", argv[0]);
            return 2;
        }
    }
    if (!helper) {
        fprintf(stderr, "usage: %s -h HELPER [-m MIB,...] [-M N,...] [-q]\n", argv[0]);
        return 2;
    }
    if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, 64 * 1024) != 0)
        die("pthread_attr");
    struct kase procs[MAX_CASES] = {
        {FORK, "fork", NULL, {0}, 0},
        {VFORK, "vfork", NULL, {0}, 0},
        {POSIX_SPAWN, "posix-spawn.static", helper, {0}, 0},
        {POSIX_SPAWN, "posix-spawn.dynamic", DYNAMIC, {0}, 0},
        {FORK_EXEC, "fork-exec.static", helper, {0}, 0},
        {FORK_EXEC, "fork-exec.dynamic", DYNAMIC, {0}, 0},
    };
    long page = sysconf(_SC_PAGESIZE);
    char *list = strdup(sizes);
    long smallest = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        long mib = atol(tok);
        if (mib <= 0) {
            fprintf(stderr, "bad size '%s'\n", tok);
            return 2;
        }
        if (smallest == 0 || mib < smallest) smallest = mib;
        size_t len = (size_t)mib << 20;
        char *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) die("mmap");
        madvise(mem, len, MADV_NOHUGEPAGE);
        for (size_t off = 0; off < len; off += (size_t)page) ((volatile char *)mem)[off] = 1;
        long rss = status_kib("VmRSS"), pte = status_kib("VmPTE");
        char suffix[32];
        snprintf(suffix, sizeof suffix, ".p%ldmib", mib);
        sample(procs, MAX_CASES, samples, warm, suffix);
        /* Under the ids oscost gives these counters of its fork case at the size. */
        printf("spawn.fork%s.rss_kib %ld\nspawn.fork%s.vm_pte_kib %ld\n", suffix, rss, suffix, pte);
        munmap(mem, len);
    }
    for (char *tok = maps ? strtok(maps, ",") : NULL; tok; tok = strtok(NULL, ",")) {
        long n = atol(tok);
        if (n <= 0) {
            fprintf(stderr, "bad number of mappings '%s'\n", tok);
            return 2;
        }
        size_t len = (size_t)smallest << 20;
        char *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) die("mmap");
        madvise(mem, len, MADV_NOHUGEPAGE);
        for (size_t off = 0; off < len; off += (size_t)page) ((volatile char *)mem)[off] = 1;
        char **one = malloc((size_t)n * sizeof *one);
        if (!one) die("malloc");
        for (long i = 0; i < n; i++) {
            one[i] = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                          -1, 0);
            if (one[i] == MAP_FAILED) die("mmap of a one-page mapping");
            ((volatile char *)one[i])[0] = 1;
        }
        char suffix[32];
        snprintf(suffix, sizeof suffix, ".maps%ld", n);
        sample(procs, 1, samples, warm, suffix);
        for (long i = 0; i < n; i++) munmap(one[i], (size_t)page);
        free(one);
        munmap(mem, len);
    }
    /* Last, as in oscost: once a thread has existed, glibc's fork takes its locks. */
    struct kase thread = {THREAD, "thread", NULL, {0}, 0};
    sample(&thread, 1, samples, warm, "");
    return 0;
}
