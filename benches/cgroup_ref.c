/*
 * Reference for oscost's cgroup cases, the same children and round trips: a fork-like raw
 * clone(SIGCHLD) child that _exits (cgroup.fork), the same child writing "0" into a new
 * cgroup's cgroup.procs first (cgroup.fork-procs), clone3(CLONE_INTO_CGROUP) into it
 * (cgroup.clone3, a v2 cgroup only); a 1-byte pipe round trip between this process and a
 * partner on the same CPU, both in cgroup a (cgroup.pipe.same) or the partner in b
 * (cgroup.pipe.cross), this process moved into a for those and back after. Creation batches
 * are doubled until one lasts MIN_SAMPLE (4 ms), 40 ms of warm-up, SAMPLES rounds (81) over the
 * creation cases in a rotated order, then the same for the two pipe cases; the median ns per
 * child or round trip is printed: "cgroup.<case> <median ns>".
 * It makes NEW_PARENT/ref-<pid>-new, CPU_PARENT/ref-<pid>-a and -b, and removes them.
 * Without -N and -P it picks the hierarchies oscost picks: this process's cgroup in v2 for
 * creating where v2 is mounted, and for the pipes the v2 cgroup when its subtree has the cpu
 * controller, else this process's cgroup in the v1 hierarchy with cpu.
 *
 * Build: cc -O2 -o cgroup_ref benches/cgroup_ref.c
 * Usage: cgroup_ref [-N NEW_PARENT -P CPU_PARENT [-2]] [-c CPU] [-s SAMPLES] [-m MIN_SAMPLE_US]
 *        (-2: NEW_PARENT is cgroup v2, so clone3 is timed)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int procs_fd, dir_fd;

/* This process's cgroup in the hierarchy with controller CTRL ("" for v2) from
 * /proc/self/cgroup, appended to OUT; 0 when it is in none. */
static int own(const char *ctrl, char *out, size_t n) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[1024];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *list = strchr(line, ':'), *path;
        if (!list || !(path = strchr(++list, ':'))) continue;
        *path++ = 0;
        if (!*ctrl)
            found = !*list;
        else
            for (char *c = strtok(list, ","); c && !found; c = strtok(NULL, ","))
                found = !strcmp(c, ctrl);
        if (found) strncat(out, path, n - strlen(out) - 1);
    }
    if (f) fclose(f);
    return found;
}

/* The mount point of the first filesystem of TYPE (with option OPT when given) into OUT. */
static int mounted(const char *type, const char *opt, char *out, size_t n) {
    FILE *f = fopen("/proc/self/mounts", "r");
    char dev[256], dir[512], fs[64], opts[512];
    int found = 0;
    while (f && !found && fscanf(f, "%255s %511s %63s %511s %*[^\n]", dev, dir, fs, opts) == 4) {
        if (strcmp(fs, type)) continue;
        found = !opt;
        for (char *o = strtok(opts, ","); o && !found; o = strtok(NULL, ",")) found = !strcmp(o, opt);
        if (found) snprintf(out, n, "%s", dir);
    }
    if (f) fclose(f);
    return found;
}

static void waitfor(long pid) {
    int st;
    while (waitpid((pid_t)pid, &st, __WALL) != pid) {
    }
}

/* 0: fork, 1: fork + cgroup.procs, 2: clone3 into the cgroup */
static void one(int how) {
    long pid;
    if (how == 2) {
        struct clone_args a;
        memset(&a, 0, sizeof a);
        a.flags = CLONE_INTO_CGROUP;
        a.exit_signal = SIGCHLD;
        a.cgroup = (uint64_t)dir_fd;
        pid = syscall(SYS_clone3, &a, sizeof a);
    } else {
        pid = syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, 0UL);
    }
    if (pid < 0) {
        perror("clone");
        exit(1);
    }
    if (pid == 0) {
        if (how == 1 && write(procs_fd, "0", 1) != 1) _exit(1);
        _exit(0);
    }
    waitfor(pid);
}

struct partner {
    int to, from;
    long pid;
};

static struct partner start(int procs) {
    int req[2], ans[2];
    if (pipe(req) || pipe(ans)) exit(1);
    long pid = syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, 0UL);
    if (pid == 0) {
        close(req[1]);
        close(ans[0]);
        if (write(procs, "0", 1) != 1) _exit(1);
        char b;
        while (read(req[0], &b, 1) == 1 && write(ans[1], &b, 1) == 1) {
        }
        _exit(0);
    }
    close(req[0]);
    close(ans[1]);
    return (struct partner){req[1], ans[0], pid};
}

static void trip(struct partner *p) {
    char b = 1;
    if (write(p->to, &b, 1) != 1 || read(p->from, &b, 1) != 1) exit(1);
}

static int nk;
static long ns_[5];
static double *smp[5];
static struct partner *pp[2];

static double batch(int k, long n) {
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        if (k < 3) one(k);
        else trip(pp[k - 3]);
    }
    return now_ns() - t0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void measure(const int *ks, int count, int samples, double min_ns) {
    for (int i = 0; i < count; i++) {
        int k = ks[i];
        long n = 1;
        while (batch(k, n) < min_ns) n *= 2;
        ns_[k] = n;
        double s = now_ns();
        while (now_ns() - s < 40e6) batch(k, n);
    }
    for (int r = 0; r < samples; r++)
        for (int j = 0; j < count; j++) {
            int k = ks[(r + j) % count];
            smp[k][r] = batch(k, ns_[k]) / ns_[k];
        }
}

int main(int argc, char **argv) {
    const char *newp = NULL, *cpup = NULL;
    int v2 = 0, cpu = 0, samples = 81, o;
    double min_ns = 4e6;
    while ((o = getopt(argc, argv, "N:P:2c:s:m:")) != -1) {
        if (o == 'N') newp = optarg;
        else if (o == 'P') cpup = optarg;
        else if (o == '2') v2 = 1;
        else if (o == 'c') cpu = atoi(optarg);
        else if (o == 's') samples = atoi(optarg);
        else if (o == 'm') min_ns = atof(optarg) * 1e3;
    }
    char v2mnt[1024] = "", cpumnt[1024] = "", newbuf[1024] = "", cpubuf[1024] = "";
    if (!newp && !cpup) {
        if (mounted("cgroup2", NULL, v2mnt, sizeof v2mnt) &&
            own("", strcpy(newbuf, v2mnt), sizeof newbuf)) {
            char sub[1100], ctl[256] = "";
            snprintf(sub, sizeof sub, "%s/cgroup.subtree_control", newbuf);
            FILE *f = fopen(sub, "r");
            if (f && fgets(ctl, sizeof ctl, f))
                for (char *c = strtok(ctl, " \n"); c; c = strtok(NULL, " \n"))
                    if (!strcmp(c, "cpu")) cpup = newbuf;
            if (f) fclose(f);
            newp = newbuf, v2 = 1;
        }
        if (!cpup && mounted("cgroup", "cpu", cpumnt, sizeof cpumnt) &&
            own("cpu", strcpy(cpubuf, cpumnt), sizeof cpubuf))
            cpup = cpubuf;
        if (!newp) newp = cpup, v2 = 0;
    }
    if (!newp || !cpup) {
        fprintf(stderr, "cgroup_ref: no cgroup hierarchy with the cpu controller here (or give -N and -P)\n");
        return 2;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set)) return 2;
    char dn[512], da[512], db[512], f[600];
    snprintf(dn, sizeof dn, "%s/ref-%d-new", newp, getpid());
    snprintf(da, sizeof da, "%s/ref-%d-a", cpup, getpid());
    snprintf(db, sizeof db, "%s/ref-%d-b", cpup, getpid());
    if (mkdir(dn, 0755) || mkdir(da, 0755) || mkdir(db, 0755)) {
        perror("mkdir");
        rmdir(dn), rmdir(da), rmdir(db);
        return 1;
    }
    snprintf(f, sizeof f, "%s/cgroup.procs", dn);
    procs_fd = open(f, O_WRONLY | O_CLOEXEC);
    dir_fd = open(dn, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (int k = 0; k < 5; k++) smp[k] = calloc(samples, sizeof(double));
    int creation[3] = {0, 1, 2};
    nk = v2 ? 3 : 2;
    measure(creation, nk, samples, min_ns);

    snprintf(f, sizeof f, "%s/cgroup.procs", da);
    int pa = open(f, O_WRONLY | O_CLOEXEC);
    snprintf(f, sizeof f, "%s/cgroup.procs", db);
    int pb = open(f, O_WRONLY | O_CLOEXEC);
    snprintf(f, sizeof f, "%s/cgroup.procs", cpup);
    int back = open(f, O_WRONLY | O_CLOEXEC);
    struct partner a = start(pa), b = start(pb);
    pp[0] = &a, pp[1] = &b;
    if (write(pa, "0", 1) != 1) perror("joining a");
    int pipes[2] = {3, 4};
    measure(pipes, 2, samples, min_ns);
    if (write(back, "0", 1) != 1) perror("moving back");
    close(a.to), close(b.to);
    waitfor(a.pid), waitfor(b.pid);
    close(procs_fd), close(dir_fd);
    rmdir(dn), rmdir(da), rmdir(db);

    const char *names[5] = {"fork", "fork-procs", "clone3", "pipe.same", "pipe.cross"};
    for (int k = 0; k < 5; k++) {
        if (k == 2 && !v2) continue;
        qsort(smp[k], samples, sizeof(double), cmp);
        printf("cgroup.%s %.1f\n", names[k], smp[k][samples / 2]);
    }
    return 0;
}
