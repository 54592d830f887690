/*
 * C reference for `oscost fs`: the MINIX 3 study's file calls (Herder, Bos, Gras, Homburg,
 * Tanenbaum, "MINIX 3: A Highly Reliable, Self-Repairing Operating System", 2006) in plain C
 * loops on one or more given directories, sampled the way oscost samples, so that oscost's
 * medians on tmpfs and on its FUSE file system can be held against a figure no Rust stands
 * behind.
 *
 *   getpid                fs.*.getpid                syscall(SYS_getpid), raw
 *   lseek                 fs.*.lseek                 lseek(fd, 0, SEEK_SET) on the 4 MiB file
 *   open-close            fs.*.open-close            open(path, O_RDONLY | O_CLOEXEC) + close
 *   read64k               fs.*.read64k               pread of the next 64 KiB of the 4 MiB file
 *                                                    into a page-aligned buffer, wrapping at its
 *                                                    end
 *   write64k              fs.*.write64k              pwrite of the next 64 KiB of the file from
 *                                                    a page-aligned buffer, wrapping at its end
 *   creat-write1k-unlink  fs.*.creat-write1k-unlink  open(O_CREAT | O_WRONLY | O_TRUNC |
 *                                                    O_CLOEXEC, 0600) + write 1 KiB + close +
 *                                                    unlink
 *
 * What the calls operate on is made the way oscost makes it, in each directory given: a file
 * of 4 MiB of 0x5a, created O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC and kept open, and the path
 * of a second file the life-cycle case creates and removes. The names carry this process's pid
 * (fscalls-ref-PID-data, fscalls-ref-PID-churn), so runs never collide; both are removed at the
 * end and on SIGINT, SIGTERM and SIGHUP. Buffers come from posix_memalign(4096). Any failure or
 * short transfer ends the run.
 *
 * Sampling follows oscost's sampler step by step:
 *  - the batch size starts at 1 and doubles until a batch lasts the minimum sample time
 *    (4 ms); once a batch lasts over 50 us, it jumps to the size that should just reach it;
 *  - warm-up: batches until the last three agree within 2 % and 40 ms have passed (given up,
 *    with a warning on stderr, after 160 ms);
 *  - an empty loop of the same shape is timed 7 times at the same batch size; its median cost
 *    per iteration is subtracted from every sample;
 *  - 81 samples of one batch each. For each call, one job per directory is prepared, one after
 *    the other in the order the directories were given, and then the jobs are sampled in
 *    rounds, one sample of each, the order rotated every round: what `oscost fs` does with its
 *    tmpfs and FUSE cases of one call. The calls follow one another in the order given.
 *    Sampling stops early (after at least 5 rounds) when 2 s per job have passed;
 *  - the figure is the median per-op time of the samples.
 * -q uses oscost's --quick shape instead: 15 samples of at least 1 ms, 8 ms warm-up, 300 ms
 * per job.
 *
 * Time is CLOCK_MONOTONIC_RAW in nanoseconds, read once at each end of a batch. The program
 * creates no thread. It pins nothing itself: run it under `taskset -c CPU`, on the CPU given to
 * oscost with --cpus, and run the FUSE server on that CPU too.
 *
 * Build: cc -O2 -fno-plt -o fscalls_ref benches/fscalls_ref.c
 * Usage: fscalls_ref [-q] -d LABEL=DIR [-d LABEL=DIR ...] CALL... [-q]
 * Output: one line per call and directory, calls in the order given, under oscost's id (the
 * label its mount's: tmpfs, fuse):
 *   fs.LABEL.CALL MEDIAN_NS iterations=N loop_ns=X samples=S
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct config {
    int samples;
    double warmup_ns;
    double min_sample_ns;
    double budget_ns;
};
static const struct config STANDARD = {81, 40e6, 4e6, 2e9};
static const struct config QUICK = {15, 8e6, 1e6, 300e6};
#define MIN_SAMPLES 5
#define EMPTY_RUNS 7
#define BIG (64 * 1024)
#define SMALL 1024
#define FILE_BYTES (4 * 1024 * 1024)
#define PAGE 4096
#define MAX_DIRS 4

/* ---- what the calls operate on, one set per directory ---- */

struct files {
    const char *label;
    char data_path[4096];
    char churn_path[4096];
    int fd;
    uint64_t at; /* the next 64 KiB block of read64k / write64k */
    unsigned char *read_buf, *write_buf, *small;
};

static struct files dirs[MAX_DIRS];
static int ndirs;

static void cleanup(void) {
    /* Async-signal-safe calls only: also run from the signal handler. */
    for (int i = 0; i < ndirs; i++) {
        if (dirs[i].data_path[0]) unlink(dirs[i].data_path);
        if (dirs[i].churn_path[0]) unlink(dirs[i].churn_path);
    }
}

static void on_signal(int sig) {
    cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((noreturn, cold, noinline)) static void fail(const char *what) {
    perror(what);
    cleanup();
    exit(2);
}

static unsigned char *page_aligned(size_t len, int fill) {
    void *p = NULL;
    int r = posix_memalign(&p, PAGE, len);
    if (r != 0) {
        errno = r;
        fail("posix_memalign");
    }
    memset(p, fill, len);
    return p;
}

static void make_files(struct files *f, const char *dir) {
    if (snprintf(f->data_path, sizeof f->data_path, "%s/fscalls-ref-%d-data", dir,
                 (int)getpid()) >= (int)sizeof f->data_path ||
        snprintf(f->churn_path, sizeof f->churn_path, "%s/fscalls-ref-%d-churn", dir,
                 (int)getpid()) >= (int)sizeof f->churn_path) {
        f->data_path[0] = f->churn_path[0] = 0;
        errno = ENAMETOOLONG;
        fail(dir);
    }
    f->fd = open(f->data_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (f->fd < 0) {
        f->data_path[0] = 0;
        fail("creating the data file");
    }
    unsigned char *fill = page_aligned(FILE_BYTES, 0x5a);
    for (size_t done = 0; done < FILE_BYTES;) {
        ssize_t r = write(f->fd, fill + done, FILE_BYTES - done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) fail("writing the data file");
        done += (size_t)r;
    }
    free(fill);
    f->read_buf = page_aligned(BIG, 0);
    f->write_buf = page_aligned(BIG, 0x5a);
    f->small = page_aligned(SMALL, 0xa5);
}

/* ---- the operations ---- */

#define KEEP(x) __asm__ volatile("" : : "r"(x) : "memory")

static inline __attribute__((always_inline)) long op_getpid(struct files *f) {
    (void)f;
    return syscall(SYS_getpid);
}

static inline __attribute__((always_inline)) long op_lseek(struct files *f) {
    off_t r = lseek(f->fd, 0, SEEK_SET);
    if (r < 0) fail("lseek");
    return (long)r;
}

static inline __attribute__((always_inline)) long op_open_close(struct files *f) {
    int fd = open(f->data_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("open");
    if (close(fd) != 0) fail("close");
    return 0;
}

static inline __attribute__((always_inline)) long op_read64k(struct files *f) {
    ssize_t r = pread(f->fd, f->read_buf, BIG, (off_t)f->at);
    if (r != BIG) fail("pread of 64 KiB (short or failed)");
    f->at = (f->at + BIG) % FILE_BYTES;
    return (long)r;
}

static inline __attribute__((always_inline)) long op_write64k(struct files *f) {
    ssize_t r = pwrite(f->fd, f->write_buf, BIG, (off_t)f->at);
    if (r != BIG) fail("pwrite of 64 KiB (short or failed)");
    f->at = (f->at + BIG) % FILE_BYTES;
    return (long)r;
}

static inline __attribute__((always_inline)) long op_creat_write1k_unlink(struct files *f) {
    int fd = open(f->churn_path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) fail("creat");
    ssize_t w = write(fd, f->small, SMALL);
    close(fd);
    if (w < 0) fail("write");
    if (unlink(f->churn_path) != 0) fail("unlink");
    return 0;
}

/* ---- timing ---- */

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define BATCH(name)                                                                  \
    __attribute__((noinline)) static uint64_t batch_##name(struct files *f, uint64_t n) { \
        uint64_t t0 = now_ns();                                                      \
        for (uint64_t i = 0; i < n; i++) KEEP(op_##name(f));                         \
        return now_ns() - t0;                                                        \
    }
BATCH(getpid)
BATCH(lseek)
BATCH(open_close)
BATCH(read64k)
BATCH(write64k)
BATCH(creat_write1k_unlink)

__attribute__((noinline)) static uint64_t batch_empty(uint64_t n) {
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) __asm__ volatile("" : : : "memory");
    return now_ns() - t0;
}

typedef uint64_t (*batch_fn)(struct files *, uint64_t);

static const struct {
    const char *name;
    batch_fn run;
} CALLS[] = {
    {"getpid", batch_getpid},
    {"lseek", batch_lseek},
    {"open-close", batch_open_close},
    {"read64k", batch_read64k},
    {"write64k", batch_write64k},
    {"creat-write1k-unlink", batch_creat_write1k_unlink},
};
#define NCALLS (int)(sizeof CALLS / sizeof CALLS[0])

struct job {
    struct files *f;
    batch_fn run;
    uint64_t n;
    double overhead_ns;
    double *per_op_ns;
    int count;
};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * v[n / 2 - 1] + 0.5 * v[n / 2];
}

static void prepare(struct job *j, const struct config *cfg, const char *name) {
    uint64_t n = 1;
    for (;;) {
        double t = (double)j->run(j->f, n);
        if (n >= (1ull << 40)) break;
        if (t >= cfg->min_sample_ns) {
            /* One slow batch may be a preemption: settle only when a second one is long too. */
            double again = (double)j->run(j->f, n);
            if (again >= cfg->min_sample_ns / 2) break;
            t = again;
        }
        if (t > 50000.0) {
            double want = (double)n * cfg->min_sample_ns / t;
            uint64_t next = (uint64_t)want;
            if ((double)next < want) next++;
            n = next > n + 1 ? next : n + 1;
        } else {
            n *= 2;
        }
    }
    j->n = n;

    uint64_t start = now_ns();
    double recent[3];
    int have = 0;
    for (;;) {
        double t = (double)j->run(j->f, n);
        if (have == 3) {
            recent[0] = recent[1];
            recent[1] = recent[2];
            have = 2;
        }
        recent[have++] = t;
        double elapsed = (double)(now_ns() - start);
        int agree = 0;
        if (have == 3) {
            double lo = recent[0], hi = recent[0];
            for (int i = 1; i < 3; i++) {
                if (recent[i] < lo) lo = recent[i];
                if (recent[i] > hi) hi = recent[i];
            }
            agree = hi <= lo * 1.02;
        }
        if (elapsed >= cfg->warmup_ns && agree) break;
        if (elapsed >= cfg->warmup_ns * 4) {
            fprintf(stderr, "fscalls_ref: %s.%s: warm-up did not settle within %.0f ms\n",
                    j->f->label, name, cfg->warmup_ns * 4 / 1e6);
            break;
        }
    }

    double empty[EMPTY_RUNS];
    for (int i = 0; i < EMPTY_RUNS; i++) empty[i] = (double)batch_empty(n);
    j->overhead_ns = median(empty, EMPTY_RUNS) / (double)n;
}

static void sample(struct job *j) {
    double t = (double)j->run(j->f, j->n);
    j->per_op_ns[j->count++] = t / (double)j->n - j->overhead_ns;
}

static void sample_rounds(struct job *jobs, int count, const struct config *cfg) {
    uint64_t started = now_ns();
    double budget = cfg->budget_ns * count;
    for (int round = 0; round < cfg->samples; round++) {
        for (int k = 0; k < count; k++) sample(&jobs[(round + k) % count]);
        if (round + 1 >= MIN_SAMPLES && round + 1 < cfg->samples &&
            (double)(now_ns() - started) > budget) {
            fprintf(stderr, "fscalls_ref: time budget of %.0f ms reached: %d of %d samples taken\n",
                    budget / 1e6, round + 1, cfg->samples);
            break;
        }
    }
}

static void usage(void) {
    fprintf(stderr,
            "usage: fscalls_ref [-q] -d LABEL=DIR [-d LABEL=DIR ...] CALL...\n"
            "  CALL: getpid, lseek, open-close, read64k, write64k, creat-write1k-unlink\n"
            "  -q: the --quick sample shape; up to %d directories, sampled interleaved\n",
            MAX_DIRS);
    exit(2);
}

int main(int argc, char **argv) {
    const struct config *cfg = &STANDARD;
    const char *paths[MAX_DIRS];
    int first = 1;
    while (first < argc && argv[first][0] == '-') {
        if (strcmp(argv[first], "-q") == 0) {
            cfg = &QUICK;
            first++;
        } else if (strcmp(argv[first], "-d") == 0 && first + 1 < argc) {
            char *spec = argv[first + 1];
            char *eq = strchr(spec, '=');
            if (!eq || eq == spec || !eq[1] || ndirs == MAX_DIRS) usage();
            *eq = 0;
            dirs[ndirs].label = spec;
            paths[ndirs++] = eq + 1;
            first += 2;
        } else {
            usage();
        }
    }
    /* -q may also close the list, where a harness appends it. */
    if (argc - first > 1 && strcmp(argv[argc - 1], "-q") == 0) {
        cfg = &QUICK;
        argc--;
    }
    int ncalls = argc - first;
    if (ncalls < 1 || ndirs < 1) usage();
    int call_index[NCALLS];
    if (ncalls > NCALLS) usage();
    for (int k = 0; k < ncalls; k++) {
        int c = 0;
        while (c < NCALLS && strcmp(CALLS[c].name, argv[first + k]) != 0) c++;
        if (c == NCALLS) {
            fprintf(stderr, "fscalls_ref: unknown call '%s'\n", argv[first + k]);
            usage();
        }
        call_index[k] = c;
    }

    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) != 1)
        fprintf(stderr, "fscalls_ref: warning: may run on %d CPUs; pin it with taskset -c CPU\n",
                CPU_COUNT(&set));

    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    for (int d = 0; d < ndirs; d++) make_files(&dirs[d], paths[d]);

    struct job jobs[MAX_DIRS];
    for (int k = 0; k < ncalls; k++) {
        int c = call_index[k];
        for (int d = 0; d < ndirs; d++) {
            jobs[d] = (struct job){&dirs[d], CALLS[c].run, 0, 0, NULL, 0};
            jobs[d].per_op_ns = calloc((size_t)cfg->samples, sizeof(double));
            if (!jobs[d].per_op_ns) fail("calloc");
            dirs[d].at = 0;
        }
        for (int d = 0; d < ndirs; d++) prepare(&jobs[d], cfg, CALLS[c].name);
        sample_rounds(jobs, ndirs, cfg);
        for (int d = 0; d < ndirs; d++) {
            struct job *j = &jobs[d];
            printf("fs.%s.%s %.3f iterations=%llu loop_ns=%.3f samples=%d\n", j->f->label,
                   CALLS[c].name, median(j->per_op_ns, j->count), (unsigned long long)j->n,
                   j->overhead_ns, j->count);
            fflush(stdout);
            free(j->per_op_ns);
        }
    }
    cleanup();
    return 0;
}
