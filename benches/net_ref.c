/* The C reference for `oscost net`: loopback sockets between two threads, timed the same way.
 *
 * The main thread is pinned to CPU A, the partner thread to CPU B (A = B for the same-CPU
 * cases). A round trip is write(1 byte) + read(1 byte) on the main thread's end while the
 * partner reads and writes it back: TCP on 127.0.0.1 (TCP_NODELAY, port from the kernel), UDP
 * on 127.0.0.1 (two connected sockets), AF_UNIX stream and datagram socketpairs. Bandwidth is a
 * 64 KiB write (completed) to a partner reading up to 128 KiB at a time: TCP, AF_UNIX stream,
 * pipe (default pipe size); both buffers page-aligned, and the partner created pinned. A reset
 * connection (net.tcp.connect.rst, before any thread exists, on CPU A) is socket + connect +
 * accept4 + close with SO_LINGER 0 + close; a connection as programs make one (net.tcp.connect,
 * after the one-thread cases) is socket + connect + read to end of file + close while a thread
 * on CPU A accepts each connection and closes it at once (a FIN each way). Each sample is a batch of about 4 ms (1 ms with -q; calibrated as
 * oscost calibrates, a single slow batch not taken for the operation's time), after 40 ms of
 * warm-up (4 ms with -q), as oscost's standard (quick) sampling; the figure is the median of
 * the samples' time per operation.
 *
 * Output, one line per case: "net.CASE.PLACEMENT MEDIAN_NS" (the connections without a
 * placement, printed only with -c or when named as CASEs). With -c also LEBench's send and
 * recv, one thread on CPU A before any thread exists: 1 and 96 000 bytes sent into an AF_UNIX
 * stream socketpair and received from its other end (net.unix.sendrecv.b1,
 * net.unix.sendrecv.b96000). A connection named as a CASE runs as under -c, before the other
 * CASEs (the reset first), without the send and recv: what `--alternate` runs alone.
 *
 * Usage: net_ref -a CPU -b CPU [-s SAMPLES] [-c] [-q] [CASE...]  (CASE: tcp.rtt udp.rtt unix.rtt
 *        unix-dgram.rtt tcp.bw unix.bw pipe.bw tcp.connect tcp.connect.rst; default: the
 *        seven before tcp.connect, and none of them when only connections are named)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pace.h"

#define CHUNK (64 * 1024)
#define SINK (128 * 1024)

static int cpu_a, cpu_b = -1, samples = 81;
static uint64_t min_sample_ns = 4000000, warmup_ns = 40000000;
static atomic_int stop;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s)) die("sched_setaffinity");
}

static struct sockaddr_in loopback(void) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int bound(int type, struct sockaddr_in *a) {
    int s = socket(AF_INET, type | SOCK_CLOEXEC, 0);
    socklen_t l = sizeof *a;
    *a = loopback();
    if (s < 0 || bind(s, (void *)a, sizeof *a) || getsockname(s, (void *)a, &l)) die("bind");
    return s;
}

static void pair(const char *kind, int fd[2]) {
    struct sockaddr_in a, b;
    int one = 1;
    if (!strcmp(kind, "tcp")) {
        int l = bound(SOCK_STREAM, &a);
        if (listen(l, 1)) die("listen");
        fd[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (connect(fd[0], (void *)&a, sizeof a)) die("connect");
        if ((fd[1] = accept4(l, 0, 0, SOCK_CLOEXEC)) < 0) die("accept");
        close(l);
        setsockopt(fd[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        /* As oscost: the client end closes first with a reset, leaving no TIME_WAIT. */
        struct linger lg = {1, 0};
        setsockopt(fd[0], SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    } else if (!strcmp(kind, "udp")) {
        fd[0] = bound(SOCK_DGRAM, &a);
        fd[1] = bound(SOCK_DGRAM, &b);
        if (connect(fd[0], (void *)&b, sizeof b) || connect(fd[1], (void *)&a, sizeof a)) die("connect");
    } else if (!strcmp(kind, "unix") || !strcmp(kind, "unix-dgram")) {
        int t = strcmp(kind, "unix") ? SOCK_DGRAM : SOCK_STREAM;
        if (socketpair(AF_UNIX, t | SOCK_CLOEXEC, 0, fd)) die("socketpair");
    } else {
        int p[2];
        if (pipe2(p, O_CLOEXEC)) die("pipe2");
        fd[0] = p[1], fd[1] = p[0];
    }
    if (!strcmp(kind, "udp") || !strcmp(kind, "unix-dgram")) {
        /* As oscost: a lost datagram is an error after 2 s, not a hang. */
        struct timeval tv = {2, 0};
        setsockopt(fd[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
}

struct partner {
    int fd, echo;
};

/* Page-aligned buffers, as oscost's: a copy's speed depends on its alignment. */
static char *data, *sink_buf;

static char *page_aligned(size_t n) {
    char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) die("mmap");
    return p;
}

static void *partner(void *arg) {
    struct partner *p = arg;
    char *buf = sink_buf;
    for (;;) {
        ssize_t r = read(p->fd, buf, p->echo ? 1 : SINK);
        if (r <= 0 || atomic_load(&stop)) break;
        if (p->echo && write(p->fd, buf, 1) != 1) break;
    }
    return 0;
}


static void op(int fd, int echo) {
    char b = 1;
    if (echo) {
        if (write(fd, &b, 1) != 1 || read(fd, &b, 1) != 1) die("round trip");
        return;
    }
    for (size_t off = 0; off < CHUNK;) {
        ssize_t r = write(fd, data + off, CHUNK - off);
        if (r < 0) die("write");
        off += (size_t)r;
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median ns per operation over `samples` batches of at least min_sample_ns, after warmup_ns. */
static double sample(void (*f)(void *), void *arg) {
    double *v = calloc((size_t)samples, sizeof *v);
    pace_turn();
    uint64_t batch = 1, t0 = now_ns();
    while (now_ns() - t0 < warmup_ns) f(arg);
    /* As oscost's sampler calibrates: settle only when a second batch of the size lasts at
     * least half the target too (one slow batch may be a preemption), and jump close to the
     * target once a batch lasts over 50 us. */
    for (;;) {
        uint64_t s = now_ns();
        for (uint64_t i = 0; i < batch; i++) f(arg);
        double t = (double)(now_ns() - s);
        if (t >= (double)min_sample_ns) {
            s = now_ns();
            for (uint64_t i = 0; i < batch; i++) f(arg);
            double again = (double)(now_ns() - s);
            if (again >= (double)min_sample_ns / 2) break;
            t = again;
        }
        uint64_t next = t > 50000 ? (uint64_t)(batch * (double)min_sample_ns / t + 0.999) : batch * 2;
        batch = next > batch ? next : batch + 1;
    }
    for (int k = 0; k < samples; k++) {
        pace_turn();
        uint64_t s = now_ns();
        for (uint64_t i = 0; i < batch; i++) f(arg);
        v[k] = (double)(now_ns() - s) / (double)batch;
    }
    qsort(v, (size_t)samples, sizeof *v, cmp);
    double m = v[samples / 2];
    free(v);
    return m;
}

struct opargs {
    int fd, echo;
};

static void do_op(void *a) {
    struct opargs *o = a;
    op(o->fd, o->echo);
}

static void run_case(const char *c) {
    char kind[32];
    const char *dot = strchr(c, '.');
    if (!dot || (size_t)(dot - c) >= sizeof kind) return;
    memcpy(kind, c, (size_t)(dot - c));
    kind[dot - c] = 0;
    int echo = !strcmp(dot, ".rtt"), fd[2];
    pair(kind, fd);
    atomic_store(&stop, 0);
    struct partner p = {fd[1], echo};
    pthread_t t;
    pthread_attr_t at;
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu_b, &s);
    /* Created pinned to CPU B, as oscost's partner is. */
    if (pthread_attr_init(&at) || pthread_attr_setaffinity_np(&at, sizeof s, &s) ||
        pthread_create(&t, &at, partner, &p))
        die("pthread_create");
    pthread_attr_destroy(&at);
    struct opargs o = {fd[0], echo};
    double m = sample(do_op, &o);
    atomic_store(&stop, 1);
    char b = 1;
    send(fd[0], &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (!strcmp(kind, "pipe")) {
        close(fd[0]); /* the reader then sees EOF */
        fd[0] = -1;
    } else {
        shutdown(fd[0], SHUT_WR);
    }
    pthread_join(t, 0);
    if (fd[0] >= 0) close(fd[0]);
    close(fd[1]);
    printf("net.%s.%s %.1f\n", c, cpu_a == cpu_b ? "same" : "cross", m);
}

static int listener;
static struct sockaddr_in laddr;

static void *accept_and_close(void *unused) {
    (void)unused;
    pin(cpu_a);
    for (;;) {
        int s = accept4(listener, 0, 0, SOCK_CLOEXEC);
        if (s < 0) {
            if (atomic_load(&stop)) return 0;
            die("accept4");
        }
        close(s);
    }
}

static void connect_fin_once(void *unused) {
    (void)unused;
    char b;
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0 || connect(c, (void *)&laddr, sizeof laddr)) die("connect");
    if (read(c, &b, 1) != 0) die("read to end of file");
    close(c);
}

static void connect_once(void *unused) {
    (void)unused;
    struct linger lg = {1, 0};
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0 || setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg) ||
        connect(c, (void *)&laddr, sizeof laddr))
        die("connect");
    int s = accept4(listener, 0, 0, SOCK_CLOEXEC);
    if (s < 0) die("accept4");
    close(c);
    close(s);
}

struct sendrecv {
    int fd[2];
    size_t n;
    char *buf;
};

static void sendrecv_once(void *arg) {
    struct sendrecv *s = arg;
    for (size_t off = 0; off < s->n;) {
        ssize_t r = write(s->fd[0], s->buf + off, s->n - off);
        if (r < 0) die("send");
        off += (size_t)r;
    }
    for (size_t off = 0; off < s->n;) {
        ssize_t r = read(s->fd[1], s->buf + off, s->n - off);
        if (r <= 0) die("recv");
        off += (size_t)r;
    }
}

static void sendrecv_case(size_t n) {
    struct sendrecv s = {.n = n, .buf = malloc(n)};
    if (!s.buf || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s.fd)) die("socketpair");
    memset(s.buf, 0x5a, n);
    printf("net.unix.sendrecv.b%zu %.1f\n", n, sample(sendrecv_once, &s));
    close(s.fd[0]);
    close(s.fd[1]);
    free(s.buf);
}

int main(int argc, char **argv) {
    int opt, conn = 0;
    while ((opt = getopt(argc, argv, "a:b:s:cq")) != -1) {
        if (opt == 'a') cpu_a = atoi(optarg);
        else if (opt == 'b') cpu_b = atoi(optarg);
        else if (opt == 's') samples = atoi(optarg);
        else if (opt == 'c') conn = 1;
        else if (opt == 'q') min_sample_ns = 1000000, warmup_ns = 4000000;
        else return 2;
    }
    if (cpu_b < 0) cpu_b = cpu_a;
    if (samples < 1) samples = 1;
    data = page_aligned(CHUNK);
    sink_buf = page_aligned(SINK);
    memset(data, 0x5a, CHUNK);
    pin(cpu_a);
    /* The connections named as CASEs run as under -c (without the send and recv), before the
     * other CASEs: the reset before any thread exists, the accepting thread's case after. */
    int rst = conn, fin = conn, others = 0;
    for (int i = optind; i < argc; i++) {
        if (!strcmp(argv[i], "tcp.connect.rst")) rst = 1;
        else if (!strcmp(argv[i], "tcp.connect")) fin = 1;
        else others = 1;
    }
    if (rst) {
        /* Before any thread exists, as oscost measures it. */
        listener = bound(SOCK_STREAM, &laddr);
        if (listen(listener, 128)) die("listen");
        printf("net.tcp.connect.rst %.1f\n", sample(connect_once, 0));
        close(listener);
    }
    if (conn) {
        sendrecv_case(1);
        sendrecv_case(96000);
    }
    if (fin) {
        /* The accepting thread's case after the one-thread ones, as oscost orders them. */
        listener = bound(SOCK_STREAM, &laddr);
        if (listen(listener, 128)) die("listen");
        pthread_t t;
        atomic_store(&stop, 0);
        if (pthread_create(&t, 0, accept_and_close, 0)) die("pthread_create");
        printf("net.tcp.connect %.1f\n", sample(connect_fin_once, 0));
        atomic_store(&stop, 1);
        shutdown(listener, SHUT_RDWR);
        pthread_join(t, 0);
        close(listener);
        atomic_store(&stop, 0);
    }
    static const char *all[] = {"tcp.rtt", "udp.rtt", "unix.rtt", "unix-dgram.rtt",
                                "tcp.bw", "unix.bw", "pipe.bw"};
    if (others) {
        for (int i = optind; i < argc; i++)
            if (strcmp(argv[i], "tcp.connect") && strcmp(argv[i], "tcp.connect.rst"))
                run_case(argv[i]);
    } else if (optind == argc) {
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) run_case(all[i]);
    }
    return 0;
}
