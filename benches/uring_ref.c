/* The C reference for `oscost uring`: the same operations through io_uring, by raw system calls
 * (io_uring_setup, io_uring_enter; no liburing), beside the system calls they replace.
 *
 * A batch is B NOPs or reads queued on a 64-entry ring, submitted and waited for with one
 * io_uring_enter(fd, B, B, IORING_ENTER_GETEVENTS), and their B completions reaped (each read's
 * result checked). Reads are 1 byte of /dev/zero, or 64 KiB at offset 0 of a page-cached file,
 * all into one page-aligned buffer; beside them read(2) of 1 byte and pread(2) of 64 KiB. The
 * registered cases (ids .fixed.) read through fixed file 0 (IORING_REGISTER_FILES,
 * IOSQE_FIXED_FILE): 1 byte of /dev/zero into the shared buffer, or 64 KiB by
 * IORING_OP_READ_FIXED into the ring's own page-aligned buffer registered as buffer 0
 * (IORING_REGISTER_BUFFERS). With
 * -b CPU, NOPs one at a time through an SQPOLL ring whose thread polls on CPU (no call made
 * while it is awake; completions spun for with the CPU's spin-wait hint, as oscost does; the
 * kernel's SQ head read before each batch is queued, as liburing and the io-uring crate do). A
 * sample is as many batches as last about 4 ms (calibrated as oscost calibrates: a single slow
 * batch is not taken for the operation's time), timed by two clock reads; the cases are sampled in rounds, one sample of each per round in an
 * order rotated every round, after an untimed warm-up of each. The figure is per operation.
 *
 * Output, one line per case: "ID MEDIAN_NS_PER_OP", ids as oscost's; with -b also
 * "# poller_cpu_share SHARE", the SQPOLL thread's CPU time over the wall time of its case.
 *
 * With -S (and -b) only uring.nop.b1 and then the SQPOLL case run.
 *
 * Usage: uring_ref [-q] [-S] [-s SAMPLES] [-a CPU] [-b SQPOLL_CPU]   (files in $TMPDIR, default /tmp)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "calibrate.h"
#include "pace.h"

#define ENTRIES 64

/* The spin-wait hint Rust's std::hint::spin_loop gives. */
#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("isb" ::: "memory")
#else
#define cpu_relax() ((void)0)
#endif
#define BIG (64 * 1024)

static void die(const char *what) {
    perror(what);
    exit(2);
}

struct ring {
    int fd, sqpoll;
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array, *sq_flags;
    unsigned *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
};

static void ring_init(struct ring *r, int sqpoll_cpu) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    if (sqpoll_cpu >= 0) {
        p.flags = IORING_SETUP_SQPOLL | IORING_SETUP_SQ_AFF;
        p.sq_thread_cpu = (unsigned)sqpoll_cpu;
        p.sq_thread_idle = 100;
    }
    r->sqpoll = sqpoll_cpu >= 0;
    r->fd = (int)syscall(__NR_io_uring_setup, ENTRIES, &p);
    if (r->fd < 0) die("io_uring_setup");
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if (cq_len > sq_len) sq_len = cq_len;
    /* IORING_FEAT_SINGLE_MMAP (5.4 and later): one mapping holds both rings. */
    char *sq = mmap(0, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
                    IORING_OFF_SQ_RING);
    if (sq == MAP_FAILED) die("mmap sq");
    char *cq = sq;
    r->sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
    if (r->sqes == MAP_FAILED) die("mmap sqes");
    r->sq_head = (unsigned *)(sq + p.sq_off.head);
    r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
    r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    r->sq_array = (unsigned *)(sq + p.sq_off.array);
    r->sq_flags = (unsigned *)(sq + p.sq_off.flags);
    r->cq_head = (unsigned *)(cq + p.cq_off.head);
    r->cq_tail = (unsigned *)(cq + p.cq_off.tail);
    r->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    /* The SQ array maps slot i to entry i once, as liburing and the io-uring crate set it up:
     * written per entry, its cache line would move to the SQPOLL thread's CPU every batch. */
    for (unsigned i = 0; i < p.sq_entries; i++) r->sq_array[i] = i;
}

/* Registers fd as fixed file 0 and, when buf is set, buf as buffer 0. */
static void ring_register(struct ring *r, int fd, void *buf, unsigned len) {
    if (syscall(__NR_io_uring_register, r->fd, IORING_REGISTER_FILES, &fd, 1) < 0)
        die("IORING_REGISTER_FILES");
    if (buf) {
        struct iovec v = {buf, len};
        if (syscall(__NR_io_uring_register, r->fd, IORING_REGISTER_BUFFERS, &v, 1) < 0)
            die("IORING_REGISTER_BUFFERS");
    }
}

/* Queues n entries (NOPs when fd < 0 and not fixed, else reads of len bytes into buf), submits them, waits
 * for and reaps their n completions; every read must return len. fixed: 0 plain, 1 fixed file
 * 0 (fd ignored), 2 fixed file 0 and READ_FIXED into registered buffer 0. */
static void ring_batch_x(struct ring *r, unsigned n, int fd, void *buf, unsigned len, int fixed) {
    unsigned tail = *r->sq_tail;
    /* Room for n entries, from the kernel's head (as liburing and the io-uring crate read it
     * before queueing: with SQPOLL the poller writes it from its own CPU). */
    unsigned khead = atomic_load_explicit((_Atomic unsigned *)r->sq_head, memory_order_acquire);
    if (tail + n - khead > ENTRIES) {
        fprintf(stderr, "io_uring submission queue full\n");
        exit(2);
    }
    for (unsigned i = 0; i < n; i++) {
        unsigned idx = (tail + i) & *r->sq_mask;
        struct io_uring_sqe *e = &r->sqes[idx];
        memset(e, 0, sizeof *e);
        if (fd < 0 && !fixed) {
            e->opcode = IORING_OP_NOP;
        } else {
            e->opcode = fixed == 2 ? IORING_OP_READ_FIXED : IORING_OP_READ;
            e->fd = fixed ? 0 : fd;
            e->flags = fixed ? IOSQE_FIXED_FILE : 0;
            e->buf_index = 0;
            e->addr = (uint64_t)(uintptr_t)buf;
            e->len = len;
            e->off = 0;
        }
    }
    atomic_store_explicit((_Atomic unsigned *)r->sq_tail, tail + n, memory_order_release);
    if (r->sqpoll) {
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_load_explicit((_Atomic unsigned *)r->sq_flags, memory_order_relaxed) &
            IORING_SQ_NEED_WAKEUP)
            syscall(__NR_io_uring_enter, r->fd, 0, 0, IORING_ENTER_SQ_WAKEUP, NULL, 0);
    } else if (syscall(__NR_io_uring_enter, r->fd, n, n, IORING_ENTER_GETEVENTS, NULL, 0) < 0) {
        die("io_uring_enter");
    }
    unsigned head = *r->cq_head, got = 0;
    while (got < n) {
        unsigned t = atomic_load_explicit((_Atomic unsigned *)r->cq_tail, memory_order_acquire);
        for (; head != t; head++, got++) {
            int res = r->cqes[head & *r->cq_mask].res;
            if (res < 0 || ((fd >= 0 || fixed) && (unsigned)res != len)) {
                fprintf(stderr, "io_uring completion %d\n", res);
                exit(2);
            }
        }
        atomic_store_explicit((_Atomic unsigned *)r->cq_head, head, memory_order_release);
        /* A spin-wait hint while completions are awaited (SQPOLL only), as oscost spins. */
        if (got < n) cpu_relax();
    }
}

static void ring_batch(struct ring *r, unsigned n, int fd, void *buf, unsigned len) {
    ring_batch_x(r, n, fd, buf, len, 0);
}

enum { NOP, READ1, READ64K, READ1_FIXED, READ64K_FIXED, SYS_READ1, SYS_PREAD64K, SQPOLL };
struct kase {
    const char *id;
    int kind;
    unsigned batch;
    struct ring ring;
    unsigned char *fixed_buf; /* the registered buffer of READ64K_FIXED */
    unsigned long k; /* batches per sample */
    double *ns;
};

static int zero_fd, file_fd;
static unsigned char *buf;

static void one_batch(struct kase *c) {
    switch (c->kind) {
    case NOP:
    case SQPOLL: ring_batch(&c->ring, c->batch, -1, 0, 0); break;
    case READ1: ring_batch(&c->ring, c->batch, zero_fd, buf, 1); break;
    case READ64K: ring_batch(&c->ring, c->batch, file_fd, buf, BIG); break;
    case READ1_FIXED: ring_batch_x(&c->ring, c->batch, -2, buf, 1, 1); break;
    case READ64K_FIXED: ring_batch_x(&c->ring, c->batch, -2, c->fixed_buf, BIG, 2); break;
    case SYS_READ1:
        if (read(zero_fd, buf, 1) != 1) die("read");
        break;
    case SYS_PREAD64K:
        if (pread(file_fd, buf, BIG, 0) != BIG) die("pread");
        break;
    }
}

static double sample(struct kase *c) {
    uint64_t t0 = now_ns();
    for (unsigned long i = 0; i < c->k; i++) one_batch(c);
    return (double)(now_ns() - t0) / (double)(c->k * c->batch);
}

/* For calibrate_batches: one batch of case c. */
static void run_batch(void *c) { one_batch(c); }

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The CPU time (ns, schedstat) of this process's SQPOLL thread (iou-sqp-*), or -1. */
static double poller_cpu_ns(void) {
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    double ns = -1;
    if (!d) return -1;
    while (ns < 0 && (e = readdir(d))) {
        char path[300], comm[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (!fgets(comm, sizeof comm, f)) comm[0] = 0;
        fclose(f);
        if (strncmp(comm, "iou-sqp", 7)) continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%lf", &ns) != 1) ns = -1;
            fclose(f);
        }
    }
    closedir(d);
    return ns;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s)) die("sched_setaffinity");
}

int main(int argc, char **argv) {
    int samples = 81, quick = 0, cpu = -1, sq_cpu = -1, sq_only = 0, opt;
    while ((opt = getopt(argc, argv, "qSs:a:b:")) != -1) {
        if (opt == 'q') quick = 1, samples = 10;
        else if (opt == 's') samples = atoi(optarg);
        else if (opt == 'a') cpu = atoi(optarg);
        else if (opt == 'b') sq_cpu = atoi(optarg);
        else if (opt == 'S') sq_only = 1;
        else {
            fprintf(stderr, "usage: uring_ref [-q] [-S] [-s SAMPLES] [-a CPU] [-b SQPOLL_CPU]\n");
            return 2;
        }
    }
    if (cpu >= 0) pin(cpu);
    zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    if (zero_fd < 0) die("/dev/zero");
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/uring_ref.XXXXXX", dir);
    file_fd = mkstemp(path);
    if (file_fd < 0) die("mkstemp");
    unlink(path);
    buf = mmap(0, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) die("mmap");
    memset(buf, 0x5a, BIG);
    if (pwrite(file_fd, buf, BIG, 0) != BIG) die("pwrite");

    struct kase cases[] = {
        {"uring.nop.b1", NOP, 1},          {"uring.nop.b8", NOP, 8},
        {"uring.nop.b32", NOP, 32},        {"uring.read1.b1", READ1, 1},
        {"uring.read1.b32", READ1, 32},
        {"uring.read1.fixed.b1", READ1_FIXED, 1},
        {"uring.read1.fixed.b32", READ1_FIXED, 32},
        {"uring.syscall-read1", SYS_READ1, 1},
        {"uring.read64k.b1", READ64K, 1},  {"uring.read64k.b32", READ64K, 32},
        {"uring.read64k.fixed.b1", READ64K_FIXED, 1},
        {"uring.read64k.fixed.b32", READ64K_FIXED, 32},
        {"uring.syscall-pread64k", SYS_PREAD64K, 1},
    };
    /* -S: uring.nop.b1 and then SQPOLL's nop, in the order `oscost uring --ops nop --batches 1
     * --no-fixed` samples them, so that alternated turn by turn the two SQPOLL cases meet. */
    int n = sq_only ? 1 : (int)(sizeof cases / sizeof cases[0]);
    double target = quick ? 1e6 : 4e6;
    for (int i = 0; i < n; i++) {
        struct kase *c = &cases[i];
        if (c->kind <= READ64K_FIXED) ring_init(&c->ring, -1);
        if (c->kind == READ1_FIXED) ring_register(&c->ring, zero_fd, 0, 0);
        if (c->kind == READ64K_FIXED) {
            c->fixed_buf = mmap(0, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (c->fixed_buf == MAP_FAILED) die("mmap");
            ring_register(&c->ring, file_fd, c->fixed_buf, BIG);
        }
        c->ns = calloc((size_t)samples, sizeof(double));
        pace_turn();
        c->k = calibrate_batches(run_batch, c, target);
        for (int w = 0; w < 10; w++) sample(c);
    }
    for (int s = 0; s < samples; s++)
        for (int j = 0; j < n; j++) {
            struct kase *c = &cases[(s + j) % n];
            pace_turn();
            c->ns[s] = sample(c);
        }
    for (int i = 0; i < n; i++) {
        qsort(cases[i].ns, (size_t)samples, sizeof(double), cmp);
        printf("%s %.2f\n", cases[i].id, cases[i].ns[samples / 2]);
    }
    if (sq_cpu >= 0) {
        struct kase c = {"uring.nop.sqpoll", SQPOLL, 1};
        ring_init(&c.ring, sq_cpu);
        c.ns = calloc((size_t)samples, sizeof(double));
        /* The poller's CPU share over calibration, warm-up and samples, as oscost reports. */
        one_batch(&c);
        double cpu0 = poller_cpu_ns();
        uint64_t t0 = now_ns();
        pace_turn();
        c.k = calibrate_batches(run_batch, &c, target);
        for (int w = 0; w < 10; w++) sample(&c);
        for (int s = 0; s < samples; s++) {
            pace_turn();
            c.ns[s] = sample(&c);
        }
        double cpu1 = poller_cpu_ns();
        uint64_t t1 = now_ns();
        qsort(c.ns, (size_t)samples, sizeof(double), cmp);
        printf("%s %.2f\n", c.id, c.ns[samples / 2]);
        if (cpu0 >= 0 && cpu1 >= 0)
            printf("# poller_cpu_share %.3f batches_per_sample %lu\n",
                   (cpu1 - cpu0) / (double)(t1 - t0), c.k);
    }
    return 0;
}
