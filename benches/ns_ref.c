/*
 * Reference for oscost's ns cases: the same children made the same way, a fork-like raw
 * clone(SIGCHLD) that calls unshare(kind) and _exits (ns.none: no unshare), the loopback of a
 * new network namespace brought up with SIOCGIFFLAGS/SIOCSIFFLAGS (ns.net.lo), and a child
 * cloned straight into CLONE_NEWNS|NEWUTS|NEWIPC|NEWPID|NEWNET|NEWCGROUP (ns.container); the
 * parent waits for each with waitpid. Pinned to one CPU. Batch size doubled until one batch
 * lasts MIN_SAMPLE (2 ms), 20 ms of warm-up per case, then SAMPLES rounds (81) over all cases
 * in an order rotated each round; the median ns per child of each case is printed, with the
 * children that failed: "ns.<case> <median ns> <failed>". With -u every case but ns.none and
 * ns.user adds CLONE_NEWUSER (the ".in-user" cases, a normal user's way).
 *
 * Build: cc -O2 -o ns_ref benches/ns_ref.c
 * Usage: ns_ref [-c CPU] [-s SAMPLES] [-m MIN_SAMPLE_US] [-u]
 */
#define _GNU_SOURCE
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

struct kase {
    const char *name;
    int flags;
    int cloned;
    int lo;
    long n;
    double *samples;
    long failed;
};

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int loopback_up(void) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) return 200;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    int code = 0;
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) code = 200;
    else {
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) code = 200;
    }
    close(s);
    return code;
}

/* One child's life; 0 when it made its namespaces and ended cleanly. */
static int one(const struct kase *k) {
    long flags = SIGCHLD | (k->cloned ? k->flags : 0);
    long pid = syscall(SYS_clone, flags, NULL, NULL, NULL, 0UL);
    if (pid < 0) return -1;
    if (pid == 0) {
        int code = 0;
        if (!k->cloned && k->flags && unshare(k->flags) != 0) code = 1;
        if (!code && k->lo) code = loopback_up();
        _exit(code);
    }
    int st;
    while (waitpid((pid_t)pid, &st, __WALL) != pid) {
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

static double batch(struct kase *k, long n) {
    double t0 = now_ns();
    for (long i = 0; i < n; i++) k->failed += one(k) != 0;
    return now_ns() - t0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int cpu = 0, samples = 81, user = 0;
    double min_ns = 2e6;
    int o;
    while ((o = getopt(argc, argv, "c:s:m:u")) != -1) {
        if (o == 'c') cpu = atoi(optarg);
        else if (o == 's') samples = atoi(optarg);
        else if (o == 'm') min_ns = atof(optarg) * 1e3;
        else if (o == 'u') user = 1;
        else {
            fprintf(stderr, "usage: ns_ref [-c CPU] [-s SAMPLES] [-m MIN_SAMPLE_US] [-u]\n");
            return 2;
        }
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
        return 2;
    }
    int container = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET |
                    CLONE_NEWCGROUP;
    struct kase ks[] = {
        {"none", 0, 0, 0},
        {"mount", CLONE_NEWNS, 0, 0},
        {"uts", CLONE_NEWUTS, 0, 0},
        {"ipc", CLONE_NEWIPC, 0, 0},
        {"pid", CLONE_NEWPID, 0, 0},
        {"net", CLONE_NEWNET, 0, 0},
        {"net.lo", CLONE_NEWNET, 0, 1},
        {"user", CLONE_NEWUSER, 0, 0},
        {"cgroup", CLONE_NEWCGROUP, 0, 0},
        {"time", CLONE_NEWTIME, 0, 0},
        {"container", container, 1, 0},
    };
    int nk = sizeof ks / sizeof ks[0];
    for (int i = 0; i < nk; i++) {
        struct kase *k = &ks[i];
        if (user && k->flags && k->flags != CLONE_NEWUSER) k->flags |= CLONE_NEWUSER;
        k->samples = calloc(samples, sizeof(double));
        if (one(k) != 0) {
            k->n = 0; /* refused here: not measured */
            continue;
        }
        long n = 1;
        for (;;) {
            double t = batch(k, n);
            if (t >= min_ns) break;
            n *= 2;
        }
        k->n = n;
        double start = now_ns();
        while (now_ns() - start < 20e6) batch(k, n);
        k->failed = 0;
    }
    for (int r = 0; r < samples; r++)
        for (int j = 0; j < nk; j++) {
            struct kase *k = &ks[(r + j) % nk];
            if (k->n) k->samples[r] = batch(k, k->n) / k->n;
        }
    for (int i = 0; i < nk; i++) {
        struct kase *k = &ks[i];
        if (!k->n) continue;
        qsort(k->samples, samples, sizeof(double), cmp);
        int in_user = user && k->flags && k->flags != CLONE_NEWUSER;
        printf("ns.%s%s %.1f %ld\n", k->name, in_user ? ".in-user" : "", k->samples[samples / 2],
               k->failed);
    }
    return 0;
}
