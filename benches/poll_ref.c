/* The C reference for `oscost poll`: select, poll and epoll_wait with a zero timeout over N
 * connected UNIX stream socket pairs' first ends, exactly one holding a byte (the last), and
 * epoll_ctl ADD + DEL of one more socket on the instance watching the most.
 *
 * As oscost does: the smallest size's sockets are opened first, so its watched ends take the
 * lowest free descriptors (select's nfds is N + 3 in a plain process), each pair's peer moved
 * above all the watched ends (F_DUPFD_CLOEXEC); with -H also "poll.select.N.high", select over
 * copies of a size's ends on the highest free descriptors below FD_SETSIZE (the peers then
 * start at FD_SETSIZE, the smallest size's copies highest); select's read set
 * is copied before each call; epoll_wait takes up to 16 events; every call must report exactly
 * one descriptor ready. A sample is as many calls as last about 4 ms, timed by two clock reads;
 * the cases are sampled in rounds, one sample of each per round in an order rotated every
 * round, after an untimed warm-up of each.
 *
 * Output, one line per case: "ID MEDIAN_NS_PER_CALL", ids as oscost's.
 *
 * Usage: poll_ref [-q] [-H] [-s SAMPLES] [-a CPU] [-n N,N,...]   (default -n 10,1000)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "calibrate.h"

static void die(const char *what) {
    perror(what);
    exit(2);
}

enum { SELECT, POLL, EPOLL, CTL };
struct kase {
    char id[64];
    int kind, n, nfds, epfd, extra;
    fd_set set;
    struct pollfd *pfds;
    unsigned long k;
    double *ns;
};

static void check(int ready) {
    if (ready != 1) {
        fprintf(stderr, "%d descriptors ready, not 1\n", ready);
        exit(2);
    }
}

static void once(struct kase *c) {
    switch (c->kind) {
    case SELECT: {
        fd_set r = c->set;
        struct timeval tv = {0, 0};
        check(select(c->nfds, &r, NULL, NULL, &tv));
        break;
    }
    case POLL: check(poll(c->pfds, (nfds_t)c->n, 0)); break;
    case EPOLL: {
        struct epoll_event ev[16];
        check(epoll_wait(c->epfd, ev, 16, 0));
        break;
    }
    case CTL: {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)c->extra};
        if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->extra, &ev)) die("epoll_ctl add");
        if (epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->extra, &ev)) die("epoll_ctl del");
        break;
    }
    }
}

/* For calibrate_batches: one call of case c. */
static void run_once(void *c) { once(c); }

static double sample(struct kase *c) {
    uint64_t t0 = now_ns();
    for (unsigned long i = 0; i < c->k; i++) once(c);
    return (double)(now_ns() - t0) / (double)c->k;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int highest_fd(void) {
    int h = 2;
    for (int fd = 3; fd < 65536; fd++)
        if (fcntl(fd, F_GETFD) >= 0) h = fd;
    return h;
}

/* n pairs, their peers at base or above; returns the watched ends, the last made readable. */
static int *open_size(int n, int base) {
    int *w = malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv)) die("socketpair");
        int peer = fcntl(sv[1], F_DUPFD_CLOEXEC, base);
        if (peer < 0) die("F_DUPFD_CLOEXEC");
        close(sv[1]);
        w[i] = sv[0];
        if (i == n - 1 && write(peer, "x", 1) != 1) die("write");
    }
    return w;
}

/* Copies of w's n ends on the highest free descriptors below FD_SETSIZE, or NULL. */
static int *copies_high(const int *w, int n) {
    int *c = malloc((size_t)n * sizeof(int)), at = FD_SETSIZE;
    for (int i = n - 1; i >= 0; i--) {
        for (;;) {
            if (--at < 0) return NULL;
            int d = fcntl(w[i], F_DUPFD_CLOEXEC, at);
            if (d < 0) die("F_DUPFD_CLOEXEC");
            if (d == at) break;
            close(d);
        }
        c[i] = at;
    }
    return c;
}

static int epoll_of(const int *w, int n) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    for (int i = 0; i < n; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)w[i]};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, w[i], &ev)) die("epoll_ctl");
    }
    return ep;
}

int main(int argc, char **argv) {
    int samples = 81, quick = 0, high = 0, cpu = -1, opt, sizes[16], nsizes = 0;
    char *list = "10,1000";
    while ((opt = getopt(argc, argv, "qHs:a:n:")) != -1) {
        if (opt == 'q') quick = 1, samples = 10;
        else if (opt == 'H') high = 1;
        else if (opt == 's') samples = atoi(optarg);
        else if (opt == 'a') cpu = atoi(optarg);
        else if (opt == 'n') list = optarg;
        else {
            fprintf(stderr, "usage: poll_ref [-q] [-H] [-s SAMPLES] [-a CPU] [-n N,N,...]\n");
            return 2;
        }
    }
    for (char *t = strtok(strdup(list), ","); t && nsizes < 16; t = strtok(NULL, ","))
        sizes[nsizes++] = atoi(t);
    for (int i = 1; i < nsizes; i++) /* ascending */
        for (int j = i; j > 0 && sizes[j] < sizes[j - 1]; j--) {
            int t = sizes[j];
            sizes[j] = sizes[j - 1], sizes[j - 1] = t;
        }
    if (cpu >= 0) {
        cpu_set_t s;
        CPU_ZERO(&s);
        CPU_SET(cpu, &s);
        if (sched_setaffinity(0, sizeof s, &s)) die("sched_setaffinity");
    }
    int *watched[16], *high_fds[16] = {0}, total = 0;
    for (int i = 0; i < nsizes; i++) total += sizes[i];
    int base = highest_fd() + total + 1;
    if (high && base < FD_SETSIZE) base = FD_SETSIZE;
    for (int i = 0; i < nsizes; i++) watched[i] = open_size(sizes[i], base);
    for (int i = 0; high && i < nsizes; i++) high_fds[i] = copies_high(watched[i], sizes[i]);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) die("socketpair");

    struct kase cases[64];
    int n = 0;
    /* kind -1: select over the high copies. */
    for (int kind = high ? -1 : SELECT; kind <= EPOLL; kind++)
        for (int i = 0; i < nsizes; i++) {
            struct kase *c = &cases[n];
            memset(c, 0, sizeof *c);
            c->kind = kind < 0 ? SELECT : kind, c->n = sizes[i];
            static const char *names[] = {"select", "poll", "epoll"};
            if (kind < 0)
                snprintf(c->id, sizeof c->id, "poll.select.%d.high", sizes[i]);
            else
                snprintf(c->id, sizeof c->id, "poll.%s.%d", names[kind], sizes[i]);
            if (c->kind == SELECT) {
                const int *fds = kind < 0 ? high_fds[i] : watched[i];
                if (!fds) continue;
                FD_ZERO(&c->set);
                int skip = 0;
                for (int j = 0; j < c->n; j++) {
                    if (fds[j] >= FD_SETSIZE) skip = 1;
                    else FD_SET(fds[j], &c->set);
                    if (fds[j] + 1 > c->nfds) c->nfds = fds[j] + 1;
                }
                if (skip) continue;
            } else if (kind == POLL) {
                c->pfds = calloc((size_t)c->n, sizeof(struct pollfd));
                for (int j = 0; j < c->n; j++) c->pfds[j].fd = watched[i][j], c->pfds[j].events = POLLIN;
            } else {
                c->epfd = epoll_of(watched[i], c->n);
            }
            n++;
        }
    struct kase *ctl = &cases[n++];
    memset(ctl, 0, sizeof *ctl);
    snprintf(ctl->id, sizeof ctl->id, "poll.epoll-ctl");
    ctl->kind = CTL, ctl->n = sizes[nsizes - 1], ctl->extra = sv[0];
    ctl->epfd = epoll_of(watched[nsizes - 1], ctl->n);

    double target = quick ? 1e6 : 4e6;
    for (int i = 0; i < n; i++) {
        struct kase *c = &cases[i];
        c->ns = calloc((size_t)samples, sizeof(double));
        c->k = calibrate_batches(run_once, c, target);
        for (int w = 0; w < 10; w++) sample(c);
    }
    for (int s = 0; s < samples; s++)
        for (int j = 0; j < n; j++) {
            struct kase *c = &cases[(s + j) % n];
            c->ns[s] = sample(c);
        }
    for (int i = 0; i < n; i++) {
        qsort(cases[i].ns, (size_t)samples, sizeof(double), cmp);
        printf("%s %.2f\n", cases[i].id, cases[i].ns[samples / 2]);
    }
    return 0;
}
