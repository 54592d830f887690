/* The C reference for `oscost mmap`: the same calls at the same sizes, batched the same way.
 *
 * A sample is a batch of K calls at one size between two clock reads, K = 4096 / pages clamped
 * to 1..64: mmap of K untouched private anonymous regions, then munmap of the same K (the
 * untouched unmap); munmap of K regions written before the timing; K preads or pwrites of the
 * size at offset 0 of a file in the page cache, into and from a page-aligned buffer. The cases
 * are sampled in rounds, one sample of each per round in an order rotated every round, after one
 * untimed batch of each.
 *
 * Output, one line per case: "mmap.OP.pN MEDIAN_NS_PER_CALL".
 *
 * Usage: mmap_ref [-q] [-s SAMPLES] [-p N,N,...]   (files in $TMPDIR, default /tmp)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
enum { MMAP, MUNMAP, MUNMAP_TOUCHED, READ, WRITE, OPS };
static const char *names[OPS] = {"mmap", "munmap", "munmap-touched", "read", "write"};

static int fd = -1;
static unsigned char *buf;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static unsigned long batch(unsigned long pages) {
    unsigned long k = 4096 / pages;
    return k < 1 ? 1 : k > 64 ? 64 : k;
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

/* One batch: the per-call time, ns. */
static double one(int op, unsigned long pages) {
    size_t len = pages * PAGE;
    unsigned long k = batch(pages);
    void *maps[64];
    uint64_t t0, t1, t2, t3;
    switch (op) {
    case MMAP:
    case MUNMAP:
        t0 = now_ns();
        for (unsigned long i = 0; i < k; i++)
            if ((maps[i] = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
                die("mmap");
        t1 = now_ns();
        t2 = now_ns();
        for (unsigned long i = 0; i < k; i++) munmap(maps[i], len);
        t3 = now_ns();
        return (double)(op == MMAP ? t1 - t0 : t3 - t2) / (double)k;
    case MUNMAP_TOUCHED:
        for (unsigned long i = 0; i < k; i++) {
            if ((maps[i] = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
                die("mmap");
            for (size_t off = 0; off < len; off += PAGE) ((volatile unsigned char *)maps[i])[off] = 1;
        }
        t0 = now_ns();
        for (unsigned long i = 0; i < k; i++) munmap(maps[i], len);
        t1 = now_ns();
        return (double)(t1 - t0) / (double)k;
    default:
        t0 = now_ns();
        for (unsigned long i = 0; i < k; i++) {
            ssize_t n = op == READ ? pread(fd, buf, len, 0) : pwrite(fd, buf, len, 0);
            if (n != (ssize_t)len) die(op == READ ? "pread" : "pwrite");
        }
        t1 = now_ns();
        return (double)(t1 - t0) / (double)k;
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    unsigned long samples = 81, sizes[16] = {1, 10, 1000, 10000};
    int nsizes = 4, opt;
    while ((opt = getopt(argc, argv, "qs:p:")) != -1) {
        if (opt == 'q') {
            samples = 15, sizes[0] = 1, sizes[1] = 1000, nsizes = 2;
        } else if (opt == 's') {
            samples = strtoul(optarg, NULL, 10);
        } else if (opt == 'p') {
            nsizes = 0;
            for (char *t = strtok(optarg, ","); t && nsizes < 16; t = strtok(NULL, ","))
                sizes[nsizes++] = strtoul(t, NULL, 10);
        } else {
            fprintf(stderr, "usage: %s [-q] [-s SAMPLES] [-p N,...]\n", argv[0]);
            return 2;
        }
    }
    if (samples == 0 || samples > 4096) {
        fprintf(stderr, "samples: 1 to 4096\n");
        return 2;
    }
    unsigned long largest = 0;
    for (int i = 0; i < nsizes; i++) {
        if (sizes[i] == 0) { fprintf(stderr, "a size is at least 1 page\n"); return 2; }
        if (sizes[i] > largest) largest = sizes[i];
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/mmap_ref.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if ((fd = mkstemp(path)) < 0) die("mkstemp");
    unlink(path);
    if (posix_memalign((void **)&buf, PAGE, largest * PAGE)) die("posix_memalign");
    memset(buf, 0x5a, largest * PAGE);
    if (write(fd, buf, largest * PAGE) != (ssize_t)(largest * PAGE)) die("write");
    int n = nsizes * OPS;
    double *v = calloc((size_t)n * samples, sizeof(double));
    for (int c = 0; c < n; c++) one(c % OPS, sizes[c / OPS]);
    for (unsigned long r = 0; r < samples; r++)
        for (int i = 0; i < n; i++) {
            int c = (int)((r + (unsigned long)i) % (unsigned long)n);
            v[(size_t)c * samples + r] = one(c % OPS, sizes[c / OPS]);
        }
    for (int c = 0; c < n; c++) {
        double *s = v + (size_t)c * samples;
        qsort(s, samples, sizeof(double), cmp);
        double med = samples % 2 ? s[samples / 2] : (s[samples / 2 - 1] + s[samples / 2]) / 2;
        printf("mmap.%s.p%lu %.1f\n", names[c % OPS], sizes[c / OPS], med);
    }
    return 0;
}
