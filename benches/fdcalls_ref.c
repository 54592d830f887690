/*
 * Single-threaded C reference for one-task oscost cases: the same calls in plain C loops,
 * sampled the way oscost samples, so that oscost's medians can be held against a figure no
 * Rust, no library wrapper of oscost's and no extra thread stands behind.
 *
 *   getpid         syscall.getpid           syscall(SYS_getpid), raw, so no library cache answers
 *   lseek          syscall.lseek            lseek(fd, 0, SEEK_SET) on a 64 KiB regular file
 *   fstat          syscall.fstat            fstat(fd) of that file
 *   read64k        syscall.read64k          pread(fd, buf, 65536, 0) of that file into a
 *                                           page-aligned 64 KiB buffer
 *   read1          syscall.read1            read(fd, buf, 1) from /dev/zero into a page-aligned
 *                                           buffer
 *   write1         syscall.write1           write(fd, buf, 1) to /dev/null
 *   pipe           primitives.pipe          write 1 byte to a pipe, then read it back
 *   pthread-mutex  primitives.pthread-mutex pthread_mutex_lock + pthread_mutex_unlock of a
 *                                           PTHREAD_MUTEX_INITIALIZER mutex
 *   posix-sem      primitives.posix-sem     sem_post + sem_wait on a process-shared semaphore
 *   eventfd        primitives.eventfd       8-byte write of 1, then an 8-byte read, on an
 *                                           EFD_SEMAPHORE eventfd
 *
 * What each case operates on is made the way oscost makes it:
 *  - the file: a private directory under $TMPDIR (default /tmp) holding "data", created
 *    O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC and filled with 64 KiB of 0x5a, kept open and
 *    linked for the whole run and removed at the end. lseek, fstat and read64k share it.
 *    $TMPDIR decides the file system, and these calls cost what its code costs, so run this
 *    and oscost with the same $TMPDIR;
 *  - /dev/zero opened O_RDONLY | O_CLOEXEC, /dev/null opened O_WRONLY | O_CLOEXEC; the 1-byte
 *    buffers and the 64 KiB one come from posix_memalign(4096), so no call straddles a page
 *    boundary or starts at an offset a heap allocation happened to give. The three system
 *    calls above are not retried on EINTR (oscost's syscall cases are not either): any
 *    failure or short transfer ends the run;
 *  - the pipe: pipe2(O_CLOEXEC), blocking ends; the eventfd: eventfd(0, EFD_SEMAPHORE |
 *    EFD_CLOEXEC). Both as oscost's links: one op = a write, retried on EINTR, that must move
 *    every byte (1 for the pipe, the 8-byte value 1 for the eventfd), then a read retried on
 *    EINTR that must get every byte back;
 *  - the semaphore: a sem_t at the start of its own mmap(MAP_SHARED | MAP_ANONYMOUS) mapping,
 *    sem_init(s, 1, 0) (process-shared, as oscost's link, which forked children also use);
 *    one op = sem_post, then sem_wait retried on EINTR;
 *  - the mutex: a heap-allocated pthread_mutex_t on a 64-byte cache line of its own, set to
 *    PTHREAD_MUTEX_INITIALIZER (normal,
 *    process-private; no attribute object); one op = pthread_mutex_lock + pthread_mutex_unlock.
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
 * -s measures the cases one after the other instead of interleaved: each is set up, prepared
 * and sampled to the end before the next starts, what oscost's `primitives` experiment does
 * (`primitives --only pthread-mutex,posix-sem,eventfd,pipe`).
 *
 * Time is CLOCK_MONOTONIC_RAW in nanoseconds, read once at each end of a batch: oscost reads
 * the TSC and converts with a frequency calibrated against this same clock, so both figures
 * are nanoseconds of the same clock. A batch lasts milliseconds, so the clock's own cost and
 * resolution vanish in it, as they do in oscost's.
 *
 * Without -t the program creates no thread: the figures are those of a single-threaded
 * process. -t starts ONE extra thread before anything is set up and measured, and leaves it
 * blocked for good (all signals blocked, in pause()): it never runs again, but its mere
 * existence changes what some calls cost (the kernel no longer takes the single-owner fast
 * path for the file table, glibc leaves its single-thread paths). The same program then gives
 * "the same call in a process with one idle extra thread", and the difference is the price of
 * a second thread. The thread count is read back from /proc/self/status after sampling and a
 * mismatch (not 1 without -t, not 2 with it) is reported on stderr.
 *
 * It pins nothing itself: run it under `taskset -c CPU`, on the CPU given to oscost with
 * --cpus (it warns on stderr when it may run on more than one).
 *
 * Build: cc -O2 -pthread -o fdcalls_ref benches/fdcalls_ref.c
 * Usage: fdcalls_ref [-q] [-s] [-t] CASE...
 *   CASE: getpid, lseek, fstat, read64k, read1, write1, pipe, pthread-mutex, posix-sem, eventfd
 * Output: one line per case, in the order given:
 *   CASE MEDIAN_NS iterations=N loop_ns=X samples=S
 * (MEDIAN_NS per op, empty loop subtracted; N ops per sample; X the subtracted per-op cost).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
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
#define PAGE 4096

/* ---- what the cases operate on ---- */

static char scratch_dir[4096];
static char data_path[4096 + 8];
static int data_fd = -1;
static int pipe_rd = -1, pipe_wr = -1;
static int zero_fd = -1, null_fd = -1, event_fd = -1;
static unsigned char *buf64k, *read1_buf, *write1_buf;
static pthread_mutex_t *mutex;
static sem_t *sem;

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

/* A page-aligned, zeroed buffer (its pages touched now, not in the first timed batch). */
static unsigned char *page_aligned(size_t len) {
    void *p = NULL;
    int r = posix_memalign(&p, PAGE, len);
    if (r != 0) {
        errno = r;
        fail("posix_memalign");
    }
    memset(p, 0, len);
    return p;
}

/* Each setup is idempotent: cases that share what it makes (lseek, fstat and read64k share
 * the file) get the same object. */
static void make_file(void) {
    if (data_fd >= 0) return;
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

static void make_read64k(void) {
    make_file();
    if (!buf64k) buf64k = page_aligned(FILE_SIZE);
}

static void make_read1(void) {
    if (zero_fd >= 0) return;
    zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    if (zero_fd < 0) fail("opening /dev/zero");
    read1_buf = page_aligned(PAGE);
}

static void make_write1(void) {
    if (null_fd >= 0) return;
    null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null_fd < 0) fail("opening /dev/null");
    write1_buf = page_aligned(PAGE);
    write1_buf[0] = 1;
}

static void make_pipe(void) {
    if (pipe_rd >= 0) return;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) fail("pipe2");
    pipe_rd = fds[0];
    pipe_wr = fds[1];
}

static void make_mutex(void) {
    static const pthread_mutex_t init = PTHREAD_MUTEX_INITIALIZER;
    if (mutex) return;
    /* On a cache line of its own, as oscost places it. */
    mutex = aligned_alloc(64, 64);
    if (!mutex) fail("malloc");
    memcpy(mutex, &init, sizeof init);
}

static void make_sem(void) {
    if (sem) return;
    void *p = mmap(NULL, sizeof(sem_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail("mmap(MAP_SHARED|MAP_ANONYMOUS)");
    if (sem_init(p, 1, 0) != 0) fail("sem_init(pshared=1)");
    sem = p;
}

static void make_eventfd(void) {
    if (event_fd >= 0) return;
    event_fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
    if (event_fd < 0) fail("eventfd(EFD_SEMAPHORE)");
}

/* ---- the operations: one op each, failures end the run as oscost's do ---- */

/* Keeps a result alive, as Rust's black_box does in oscost's timed loop. */
#define KEEP(x) __asm__ volatile("" : : "r"(x) : "memory")

/* A write that must move all LEN bytes, retried on EINTR: oscost's link post. */
static inline __attribute__((always_inline)) void put(int fd, const void *b, size_t len,
                                                      const char *what) {
    for (;;) {
        ssize_t r = write(fd, b, len);
        if (r == (ssize_t)len) return;
        if (r < 0 && errno == EINTR) continue;
        fail(what);
    }
}

/* A read that must get all LEN bytes, retried on EINTR: oscost's link wait. */
static inline __attribute__((always_inline)) void take(int fd, void *b, size_t len,
                                                       const char *what) {
    for (;;) {
        ssize_t r = read(fd, b, len);
        if (r == (ssize_t)len) return;
        if (r < 0 && errno == EINTR) continue;
        fail(what);
    }
}

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

static inline __attribute__((always_inline)) long op_read64k(void) {
    ssize_t r = pread(data_fd, buf64k, FILE_SIZE, 0);
    if (r != FILE_SIZE) fail("pread of the 64 KiB file (short or failed)");
    return (long)r;
}

static inline __attribute__((always_inline)) long op_read1(void) {
    ssize_t r = read(zero_fd, read1_buf, 1);
    if (r != 1) fail("read(/dev/zero, 1)");
    return (long)r;
}

static inline __attribute__((always_inline)) long op_write1(void) {
    ssize_t r = write(null_fd, write1_buf, 1);
    if (r != 1) fail("write(/dev/null, 1)");
    return (long)r;
}

static inline __attribute__((always_inline)) long op_pipe(void) {
    unsigned char b = 1;
    put(pipe_wr, &b, 1, "write(pipe)");
    take(pipe_rd, &b, 1, "read(pipe)");
    return b;
}

static inline __attribute__((always_inline)) long op_pthread_mutex(void) {
    int r = pthread_mutex_lock(mutex);
    if (r != 0) {
        errno = r; /* pthread calls return the error instead of setting errno */
        fail("pthread_mutex_lock");
    }
    r = pthread_mutex_unlock(mutex);
    if (r != 0) {
        errno = r;
        fail("pthread_mutex_unlock");
    }
    return 0;
}

static inline __attribute__((always_inline)) long op_posix_sem(void) {
    if (sem_post(sem) != 0) fail("sem_post");
    while (sem_wait(sem) != 0)
        if (errno != EINTR) fail("sem_wait");
    return 0;
}

static inline __attribute__((always_inline)) long op_eventfd(void) {
    uint64_t v = 1;
    put(event_fd, &v, sizeof v, "write(eventfd)");
    take(event_fd, &v, sizeof v, "read(eventfd)");
    return (long)v;
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
BATCH(read64k)
BATCH(read1)
BATCH(write1)
BATCH(pipe)
BATCH(pthread_mutex)
BATCH(posix_sem)
BATCH(eventfd)

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
    {"read64k", batch_read64k, make_read64k},
    {"read1", batch_read1, make_read1},
    {"write1", batch_write1, make_write1},
    {"pipe", batch_pipe, make_pipe},
    {"pthread-mutex", batch_pthread_mutex, make_mutex},
    {"posix-sem", batch_posix_sem, make_sem},
    {"eventfd", batch_eventfd, make_eventfd},
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

/* Samples JOBS[0..count) in rounds, one sample of each, the order rotated every round, until
 * each has its samples or the budget (per case) is spent: oscost's measure_interleaved. With
 * one job this is oscost's measurement of a single case. */
static void sample_rounds(struct job *jobs, int count, const struct config *cfg) {
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
}

/* ---- the idle extra thread of -t ---- */

static int handshake[2] = {-1, -1};

static void *idle_thread(void *arg) {
    (void)arg;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    if (write(handshake[1], &tid, sizeof tid) != (ssize_t)sizeof tid) abort();
    /* Every signal is blocked here (the mask was set before the thread was created), so no
     * handler ever runs on this thread and pause() never returns: blocked for good. */
    for (;;) pause();
    return NULL;
}

/* The state letter of task TID of this process (R, S, D, ...), or 0 when unreadable. */
static char task_state(pid_t tid) {
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t len = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[len] = 0;
    char *close = strrchr(line, ')'); /* the name may hold spaces and parentheses */
    return close && close[1] == ' ' ? close[2] : 0;
}

/* Starts the idle thread and returns once it sleeps in the kernel, so that every timed batch
 * runs in a two-thread process whose second thread takes no CPU time. */
static void start_idle_thread(void) {
    if (pipe2(handshake, O_CLOEXEC) != 0) fail("pipe2 (handshake)");
    sigset_t all, old;
    sigfillset(&all);
    int r = pthread_sigmask(SIG_SETMASK, &all, &old);
    if (r == 0) {
        pthread_t t;
        r = pthread_create(&t, NULL, idle_thread, NULL);
        int r2 = pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r == 0) r = r2;
    }
    if (r != 0) {
        errno = r;
        fail("starting the idle thread");
    }
    pid_t tid;
    for (;;) {
        ssize_t n = read(handshake[0], &tid, sizeof tid);
        if (n == (ssize_t)sizeof tid) break;
        if (n < 0 && errno == EINTR) continue;
        fail("read (handshake)");
    }
    close(handshake[0]);
    close(handshake[1]);
    for (int i = 0;; i++) {
        char s = task_state(tid);
        if (s == 'S') break;
        if (i >= 1000) {
            fprintf(stderr, "fdcalls_ref: warning: the idle thread is in state '%c' after 1 s\n",
                    s ? s : '?');
            break;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

/* Threads of this process now (Threads: in /proc/self/status), or -1 when unreadable. */
static int threads_in_process(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    int n = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1) break;
    fclose(f);
    return n;
}

static void usage(void) {
    fprintf(stderr,
            "usage: fdcalls_ref [-q] [-s] [-t] CASE...\n"
            "  CASE: getpid, lseek, fstat, read64k, read1, write1, pipe, pthread-mutex,\n"
            "        posix-sem, eventfd\n"
            "  -q: the --quick sample shape; -s: cases one after the other, not interleaved;\n"
            "  -t: measure with one idle extra thread in the process\n");
    exit(2);
}

int main(int argc, char **argv) {
    const struct config *cfg = &STANDARD;
    int sequential = 0, extra_thread = 0;
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "-q") == 0)
            cfg = &QUICK;
        else if (strcmp(argv[first], "-s") == 0)
            sequential = 1;
        else if (strcmp(argv[first], "-t") == 0)
            extra_thread = 1;
        else
            usage();
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
    if (extra_thread) start_idle_thread();

    if (sequential) {
        /* As oscost's primitives: each case made, prepared and sampled before the next. */
        for (int k = 0; k < count; k++) {
            if (jobs[k].setup) jobs[k].setup();
            prepare(&jobs[k], cfg);
            sample_rounds(&jobs[k], 1, cfg);
        }
    } else {
        /* As oscost's syscall: everything made, every case prepared, then sampled in rounds. */
        for (int k = 0; k < count; k++)
            if (jobs[k].setup) jobs[k].setup();
        for (int k = 0; k < count; k++) prepare(&jobs[k], cfg);
        sample_rounds(jobs, count, cfg);
    }

    int want = extra_thread ? 2 : 1, threads = threads_in_process();
    if (threads != want)
        fprintf(stderr, "fdcalls_ref: warning: %d threads in the process while measuring, "
                        "expected %d\n", threads, want);

    for (int k = 0; k < count; k++) {
        struct job *j = &jobs[k];
        int taken = j->count;
        printf("%s %.3f iterations=%llu loop_ns=%.3f samples=%d\n", j->name,
               median(j->per_op_ns, taken), (unsigned long long)j->n, j->overhead_ns, taken);
    }
    cleanup();
    return 0;
}
