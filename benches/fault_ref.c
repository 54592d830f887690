/* The C reference for `oscost fault`: the same page faults taken the same way, to hold
 * oscost's figures against.
 *
 * Each sample maps a fresh region (untimed), touches one byte of each page in a timed pass,
 * then times the same pass again over the pages now present and subtracts it; the region is
 * unmapped after. The kinds are sampled in rounds, one sample of each per round in an order
 * rotated every round, after one untimed sample of each; each timed sample follows an untimed
 * one of its own kind. Faults are counted with
 * getrusage(RUSAGE_THREAD) around the timed passes. Under the side-by-side harness's
 * alternation (pace.h) each untimed-and-timed pair waits its turn, as oscost's samples do.
 *
 * Kinds: anon-write, anon-read, file-read (private mapping of a cached file), file-write-shared
 * (shared mapping of it), cow (after fork, the parent writes), thp (2 MiB-aligned MADV_HUGEPAGE,
 * one write per 2 MiB), file-major (cache dropped with POSIX_FADV_DONTNEED, MADV_RANDOM).
 *
 * Output, one line per kind: "fault.KIND MEDIAN_NS_PER_OP MINOR_PER_OP MAJOR_PER_OP P5_NS_PER_OP"
 * (the 5th percentile, interpolated between ranks as oscost does).
 *
 * Usage: fault_ref [-q] [-p PAGES] [-s SAMPLES] [-k kind,kind,...]
 *   files are made in $TMPDIR (default /tmp) and removed before exit.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pace.h"

#define PAGE 4096UL
#define HUGE (2UL * 1024 * 1024)

enum { ANON_WRITE, ANON_READ, FILE_READ, FILE_WRITE_SHARED, COW, THP, FILE_MAJOR, KINDS };
static const char *names[KINDS] = {"anon-write", "anon-read", "file-read", "file-write-shared",
                                   "cow", "thp", "file-major"};

static unsigned long pages = 1024, samples = 81;
static int cached_fd = -1, major_fd = -1;

static void die(const char *what) {
    perror(what);
    exit(2);
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void faults(long *minor, long *major) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    *minor = ru.ru_minflt;
    *major = ru.ru_majflt;
}

static unsigned long ops_of(int k) {
    if (k == THP) return pages / 128 > 2 ? pages / 128 : 2;
    if (k == FILE_MAJOR) return pages / 16 > 16 ? pages / 16 : 16;
    return pages;
}

static size_t bytes_of(int k) { return k == THP ? ops_of(k) * HUGE : ops_of(k) * PAGE; }

static int writes(int k) { return k == ANON_WRITE || k == FILE_WRITE_SHARED || k == COW || k == THP; }

static __attribute__((noinline)) uint64_t pass(int k, volatile unsigned char *p, size_t len,
                                               unsigned char v) {
    size_t stride = k == THP ? HUGE : PAGE;
    uint64_t sum = 0;
    for (size_t off = 0; off < len; off += stride) {
        if (writes(k))
            p[off] = v;
        else
            sum += p[off];
    }
    return sum;
}

static int make_file(const char *dir, size_t len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/fault_ref.XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) die("mkstemp");
    unlink(path);
    static unsigned char chunk[65536];
    memset(chunk, 0x5a, sizeof chunk);
    for (size_t left = len; left > 0;) {
        size_t n = left < sizeof chunk ? left : sizeof chunk;
        if (write(fd, chunk, n) != (ssize_t)n) die("write");
        left -= n;
    }
    fdatasync(fd);
    return fd;
}

struct slot {
    double per_op[4096];
    unsigned long n;
    long minor, major;
};

static void sample(int k, struct slot *s, int record) {
    size_t len = bytes_of(k);
    unsigned char *base = NULL, *p;
    size_t map_len = len;
    pid_t child = -1;
    int release[2] = {-1, -1};
    switch (k) {
    case ANON_WRITE:
    case ANON_READ:
    case COW:
        p = base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) die("mmap");
        if (k == COW) {
            pass(ANON_WRITE, p, len, 1);
            if (pipe(release)) die("pipe");
            child = fork();
            if (child < 0) die("fork");
            if (child == 0) {
                char b;
                close(release[1]);
                while (read(release[0], &b, 1) < 0) {}
                _exit(0);
            }
            close(release[0]);
        }
        break;
    case THP:
        map_len = len + HUGE;
        base = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED) die("mmap");
        p = base + (HUGE - (uintptr_t)base % HUGE) % HUGE;
        if (madvise(p, len, MADV_HUGEPAGE)) die("madvise(MADV_HUGEPAGE)");
        break;
    case FILE_READ:
    case FILE_WRITE_SHARED:
        p = base = mmap(NULL, len, PROT_READ | PROT_WRITE,
                        k == FILE_READ ? MAP_PRIVATE : MAP_SHARED, cached_fd, 0);
        if (p == MAP_FAILED) die("mmap");
        break;
    default: /* FILE_MAJOR */
        fdatasync(major_fd);
        posix_fadvise(major_fd, 0, 0, POSIX_FADV_DONTNEED);
        p = base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, major_fd, 0);
        if (p == MAP_FAILED) die("mmap");
        if (madvise(p, len, MADV_RANDOM)) die("madvise(MADV_RANDOM)");
    }
    long min0, maj0, min1, maj1;
    faults(&min0, &maj0);
    uint64_t t0 = now_ns();
    uint64_t a = pass(k, p, len, 2);
    uint64_t t1 = now_ns();
    faults(&min1, &maj1);
    uint64_t t2 = now_ns();
    uint64_t b = pass(k, p, len, 3);
    uint64_t t3 = now_ns();
    __asm__ volatile("" ::"r"(a), "r"(b));
    if (child > 0) {
        int st;
        close(release[1]);
        waitpid(child, &st, 0);
    }
    munmap(base, map_len);
    if (record && s->n < 4096) {
        s->per_op[s->n++] = ((double)(t1 - t0) - (double)(t3 - t2)) / (double)ops_of(k);
        s->minor += min1 - min0;
        s->major += maj1 - maj0;
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int want[KINDS] = {1, 1, 1, 1, 1, 1, 1};
    int opt;
    while ((opt = getopt(argc, argv, "qp:s:k:")) != -1) {
        switch (opt) {
        case 'q': samples = 15; pages = 256; break;
        case 'p': pages = strtoul(optarg, NULL, 10); break;
        case 's': samples = strtoul(optarg, NULL, 10); break;
        case 'k':
            memset(want, 0, sizeof want);
            for (char *t = strtok(optarg, ","); t; t = strtok(NULL, ","))
                for (int k = 0; k < KINDS; k++)
                    if (!strcmp(t, names[k])) want[k] = 1;
            break;
        default:
            fprintf(stderr, "usage: %s [-q] [-p PAGES] [-s SAMPLES] [-k kind,...]\n", argv[0]);
            return 2;
        }
    }
    if (pages == 0 || samples == 0 || samples > 4096) {
        fprintf(stderr, "pages must be above 0 and samples 1 to 4096\n");
        return 2;
    }
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    cached_fd = make_file(dir, pages * PAGE);
    if (want[FILE_MAJOR]) major_fd = make_file(dir, ops_of(FILE_MAJOR) * PAGE);
    int kinds[KINDS], n = 0;
    for (int k = 0; k < KINDS; k++)
        if (want[k]) kinds[n++] = k;
    static struct slot slots[KINDS];
    for (int i = 0; i < n; i++) sample(kinds[i], &slots[i], 0);
    for (unsigned long r = 0; r < samples; r++)
        for (int i = 0; i < n; i++) {
            int j = (int)((r + (unsigned long)i) % (unsigned long)n);
            /* An untimed sample of the same kind first, as oscost takes one: a timed sample
             * would otherwise inherit what the kind before it left (freed pages, filled
             * caches), and a kind's figure would change with its neighbours. */
            pace_turn();
            sample(kinds[j], &slots[j], 0);
            sample(kinds[j], &slots[j], 1);
        }
    for (int i = 0; i < n; i++) {
        struct slot *s = &slots[i];
        qsort(s->per_op, s->n, sizeof(double), cmp);
        double med = s->n % 2 ? s->per_op[s->n / 2] : (s->per_op[s->n / 2 - 1] + s->per_op[s->n / 2]) / 2;
        double ops = (double)s->n * (double)ops_of(kinds[i]);
        double rank = (double)(s->n - 1) * 0.05, lo = (double)(size_t)rank;
        double p5 = s->per_op[(size_t)lo];
        if ((size_t)lo + 1 < s->n) p5 += (rank - lo) * (s->per_op[(size_t)lo + 1] - s->per_op[(size_t)lo]);
        printf("fault.%s %.1f %.4f %.4f %.1f\n", names[kinds[i]], med, s->minor / ops, s->major / ops,
               p5);
    }
    return 0;
}
