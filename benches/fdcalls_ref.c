/*
 * Single-threaded C reference for four oscost cases: the same calls in plain C loops, sampled
 * the way oscost samples, so that oscost's medians can be held against a figure no Rust,
 * no library wrapper of oscost's and no extra thread stands behind.
 *
 *   getpid  syscall.getpid    syscall(SYS_getpid), raw, so no library cache can answer it
 *   lseek   syscall.lseek     lseek(fd, 0, SEEK_SET) on a 64 KiB regular file
 *   fstat   syscall.fstat     fstat(fd) of that file
 *   pipe    primitives.pipe   write 1 byte to a pipe, then read it back, in the one task
 *
 * The file is what oscost's syscall cases use: a private directory under $TMPDIR (default
 * /tmp) holding "data", created O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC and filled with 64 KiB
 * of 0x5a, kept open and linked for the whole run and removed at the end. $TMPDIR decides the
 * file system, and lseek and fstat cost what the file system's code costs, so run this and
 * oscost with the same $TMPDIR. The pipe is oscost's pipe link used by one task: pipe2 with
 * O_CLOEXEC, blocking ends, one op = write(wr, "\1", 1) + read(rd, &b, 1), each retried on
 * EINTR as oscost does.
 *
 * Sampling follows oscost's sampler step by step, per case:
 *  - the batch size starts at 1 and doubles until a batch lasts the minimum sample time
 *    (4 ms); once a batch lasts over 50 us, it jumps to the size that should just reach it;
 *  - warm-up: batches until the last three agree within 2 % and 40 ms have passed (given up,
 *    with a warning on stderr, after 160 ms);
 *  - an empty loop of the same shape is timed 7 times at the same batch size; its median cost
 *    per iteration is subtracted from every sample;
 *  - 81 samples of one batch each. Several cases named in one run are prepared one after the
 *    other and then sampled in rounds, one sample of each, the order rotated every round: what
 *    oscost does for the cases of one experiment (`syscall --calls getpid,lseek,fstat`).
 *    Sampling stops early (after at least 5 rounds) when 2 s per case have passed;
 *  - the figure is the median per-op time of the samples.
 * -q uses oscost's --quick shape instead: 15 samples of at least 1 ms, 8 ms warm-up, 300 ms
 * per case.
 *
 * Time is CLOCK_MONOTONIC_RAW in nanoseconds, read once at each end of a batch: oscost reads
 * the TSC and converts with a frequency calibrated against this same clock, so both figures
 * are nanoseconds of the same clock. A batch lasts milliseconds, so the clock's own cost and
 * resolution vanish in it, as they do in oscost's.
 *
 * The program creates no thread and pins nothing itself: run it under `taskset -c CPU`, on
 * the CPU given to oscost with --cpus (it warns on stderr when it may run on more than one).
 *
 * Build: cc -O2 -o fdcalls_ref benches/fdcalls_ref.c
 * Usage: fdcalls_ref [-q] CASE...     CASE: getpid, lseek, fstat, pipe
 * Output: one line per case, in the order given:
 *   CASE MEDIAN_NS iterations=N loop_ns=X samples=S
 * (MEDIAN_NS per op, empty loop subtracted; N ops per sample; X the subtracted per-op cost).
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* oscost's two sampler settings (standard and --quick). */
struct config {
    int samples;
    double warmup_ns;     /* minimum warm-up */
    double min_sample_ns; /* minimum duration of one sample */
    double budget_ns;     /* time per case after which sampling stops early */
};
static const struct config STANDARD = {81, 40e6, 4e6, 2e9};
static const struct config QUICK = {15, 8e6, 1e6, 300e6};
#define MIN_SAMPLES 5  /* fewest samples kept when the budget runs out */
#define EMPTY_RUNS 7   /* timings of the empty loop, median taken */
#define FILE_SIZE (64 * 1024)

/* ---- what the cases operate on ---- */

static char scratch_dir[4096];
static char data_path[4096 + 8];
static int data_fd = -1;
static int pipe_rd = -1, pipe_wr = -1;

static void cleanup(void) {
    /* Async-signal-safe calls only: also run from the signal handler. */
    if (data_path[0]) unlink(data_path);
    if (scratch_dir[0]) rmdir(scratch_dir);
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

static void make_file(void) {
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    if (snprintf(scratch_dir, sizeof scratch_dir, "%s/oscost-ref-XXXXXX", tmp) >=
        (int)sizeof scratch_dir) {
        scratch_dir[0] = 0;
        errno = ENAMETOOLONG;
        fail("TMPDIR");
    }
    if (!mkdtemp(scratch_dir)) {
        scratch_dir[0] = 0;
        fail("mkdtemp");
    }
    snprintf(data_path, sizeof data_path, "%s/data", scratch_dir);
    data_fd = open(data_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (data_fd < 0) fail("creating the data file");
    static char buf[FILE_SIZE];
    memset(buf, 0x5a, sizeof buf);
    for (size_t done = 0; done < sizeof buf;) {
        ssize_t r = write(data_fd, buf + done, sizeof buf - done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) fail("writing the data file");
        done += (size_t)r;
    }
}

static void make_pipe(void) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) fail("pipe2");
    pipe_rd = fds[0];
    pipe_wr = fds[1];
}

/* ---- the operations: one op each, failures end the run as oscost's do ---- */

/* Keeps a result alive, as Rust's black_box does in oscost's timed loop. */
#define KEEP(x) __asm__ volatile("" : : "r"(x) : "memory")

static inline __attribute__((always_inline)) long op_getpid(void) {
    return syscall(SYS_getpid);
}

static inline __attribute__((always_inline)) long op_lseek(void) {
    off_t r = lseek(data_fd, 0, SEEK_SET);
    if (r < 0) fail("lseek");
    return (long)r;
}

static inline __attribute__((always_inline)) long op_fstat(void) {
    struct stat st;
    if (fstat(data_fd, &st) != 0) fail("fstat");
    return (long)st.st_size;
}

static inline __attribute__((always_inline)) long op_pipe(void) {
    unsigned char b = 1;
    for (;;) {
        ssize_t r = write(pipe_wr, &b, 1);
        if (r == 1) break;
        if (r < 0 && errno == EINTR) continue;
        fail("write(pipe)");
    }
    for (;;) {
        ssize_t r = read(pipe_rd, &b, 1);
        if (r == 1) break;
        if (r < 0 && errno == EINTR) continue;
        fail("read(pipe)");
    }
    return b;
}

/* ---- timing ---- */

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One batch: n ops between two clock reads. Not inlined, one function per case, the op
 * inlined into its loop: the shape of oscost's timed batch. */
#define BATCH(name)                                                                  \
    __attribute__((noinline)) static uint64_t batch_##name(uint64_t n) {             \
        uint64_t t0 = now_ns();                                                      \
        for (uint64_t i = 0; i < n; i++) KEEP(op_##name());                          \
        return now_ns() - t0;                                                        \
    }
BATCH(getpid)
BATCH(lseek)
BATCH(fstat)
BATCH(pipe)

/* The same loop with nothing in it. */
__attribute__((noinline)) static uint64_t batch_empty(uint64_t n) {
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) __asm__ volatile("" : : : "memory");
    return now_ns() - t0;
}

struct job {
    const char *name;
    uint64_t (*run)(uint64_t);
    void (*setup)(void);
    uint64_t n;          /* ops per sample */
    double overhead_ns;  /* per-op cost of the empty loop */
    double *per_op_ns;   /* the samples */
    int count;
};

static const struct {
    const char *name;
    uint64_t (*run)(uint64_t);
    void (*setup)(void);
} CASES[] = {
    {"getpid", batch_getpid, NULL},
    {"lseek", batch_lseek, make_file},
    {"fstat", batch_fstat, make_file},
    {"pipe", batch_pipe, make_pipe},
};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * v[n / 2 - 1] + 0.5 * v[n / 2];
}

/* Calibrates the batch size, warms up and times the empty loop. */
static void prepare(struct job *j, const struct config *cfg) {
    uint64_t n = 1;
    for (;;) {
        double t = (double)j->run(n);
        if (t >= cfg->min_sample_ns || n >= (1ull << 40)) break;
        if (t > 50000.0) {
            double want = (double)n * cfg->min_sample_ns / t;
            uint64_t next = (uint64_t)want;
            if ((double)next < want) next++; /* ceil, without libm */
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
        double t = (double)j->run(n);
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
            fprintf(stderr, "fdcalls_ref: %s: warm-up did not settle within %.0f ms\n", j->name,
                    cfg->warmup_ns * 4 / 1e6);
            break;
        }
    }

    double empty[EMPTY_RUNS];
    for (int i = 0; i < EMPTY_RUNS; i++) empty[i] = (double)batch_empty(n);
    j->overhead_ns = median(empty, EMPTY_RUNS) / (double)n;
}

static void sample(struct job *j) {
    double t = (double)j->run(j->n);
    j->per_op_ns[j->count++] = t / (double)j->n - j->overhead_ns;
}

static void usage(void) {
    fprintf(stderr, "usage: fdcalls_ref [-q] CASE...   (CASE: getpid, lseek, fstat, pipe;\n"
                    "       -q: the --quick sample shape)\n");
    exit(2);
}

int main(int argc, char **argv) {
    const struct config *cfg = &STANDARD;
    int first = 1;
    if (first < argc && strcmp(argv[first], "-q") == 0) {
        cfg = &QUICK;
        first++;
    }
    int count = argc - first;
    if (count < 1) usage();

    struct job *jobs = calloc((size_t)count, sizeof *jobs);
    if (!jobs) fail("calloc");
    for (int k = 0; k < count; k++) {
        const char *name = argv[first + k];
        size_t c = 0;
        while (c < sizeof CASES / sizeof CASES[0] && strcmp(CASES[c].name, name) != 0) c++;
        if (c == sizeof CASES / sizeof CASES[0]) {
            fprintf(stderr, "fdcalls_ref: unknown case '%s'\n", name);
            usage();
        }
        for (int i = 0; i < k; i++)
            if (strcmp(jobs[i].name, name) == 0) {
                fprintf(stderr, "fdcalls_ref: case '%s' named twice\n", name);
                usage();
            }
        jobs[k].name = CASES[c].name;
        jobs[k].run = CASES[c].run;
        jobs[k].setup = CASES[c].setup;
        jobs[k].per_op_ns = calloc((size_t)cfg->samples, sizeof(double));
        if (!jobs[k].per_op_ns) fail("calloc");
    }

    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) != 1)
        fprintf(stderr, "fdcalls_ref: warning: may run on %d CPUs; pin it with taskset -c CPU\n",
                CPU_COUNT(&set));

    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    for (int k = 0; k < count; k++) {
        if (jobs[k].setup == make_file && data_fd >= 0) continue; /* lseek and fstat share it */
        if (jobs[k].setup == make_pipe && pipe_rd >= 0) continue;
        if (jobs[k].setup) jobs[k].setup();
    }

    for (int k = 0; k < count; k++) prepare(&jobs[k], cfg);
    uint64_t started = now_ns();
    double budget = cfg->budget_ns * count;
    for (int round = 0; round < cfg->samples; round++) {
        for (int k = 0; k < count; k++) sample(&jobs[(round + k) % count]);
        if (round + 1 >= MIN_SAMPLES && round + 1 < cfg->samples &&
            (double)(now_ns() - started) > budget) {
            fprintf(stderr, "fdcalls_ref: time budget of %.0f ms reached: %d of %d samples taken\n",
                    budget / 1e6, round + 1, cfg->samples);
            break;
        }
    }

    for (int k = 0; k < count; k++) {
        struct job *j = &jobs[k];
        int taken = j->count;
        printf("%s %.3f iterations=%llu loop_ns=%.3f samples=%d\n", j->name,
               median(j->per_op_ns, taken), (unsigned long long)j->n, j->overhead_ns, taken);
    }
    cleanup();
    return 0;
}
