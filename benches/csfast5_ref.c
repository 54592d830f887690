/*
 * Reference for `oscost lockring`: the csfast5 lock ring and the cspipe2a pipe token of
 * Edward G. Bradford, "Runtime: Context switching", IBM developerWorks, 2002, written the way
 * the study wrote them: pthreads, default pthread mutexes, one timing of the whole run.
 *
 * mutex N K MAXCOUNT: N threads and ncrits = N + K mutexes in one array; the K extra mutexes
 *   start free. Thread t locks mutex t, all threads start together (a barrier), and each then
 *   runs the study's loop
 *
 *       for (i = 0; i < maxcount; i++) {
 *           k1 = k + 1; if (k1 >= ncrits) k1 = 0;
 *           Lock(k1); Unlock(k); counterA += nthreads; k = k1; t->tcounter++;
 *       }
 *       Unlock(k);
 *
 *   The main thread times from the start to the last join; time per switch = elapsed /
 *   passes, passes = N * MAXCOUNT (every thread's counter is checked to sum to it).
 *
 * pipe ROUNDTRIPS: cspipe2a. Two threads pass a 4-byte token (an int counter) through two
 *   pipes: thread A writes pipe A and reads pipe B, thread B reads A, adds one and writes B.
 *   Time per pass = elapsed / (2 * ROUNDTRIPS).
 *
 * Every thread is pinned to CPU (sched_setaffinity on the main thread before any thread is
 * created, which they inherit), so every hand-over is a context switch.
 *
 * Prints two lines: the oscost case id and the time per switch in ns; then the context
 * switches the kernel counted per pass (getrusage(RUSAGE_SELF) nvcsw + nivcsw over the run,
 * every thread of the process) under the id oscost gives that counter of the case
 * (ID.switches_per_hand_over for the ring, ID.switches_per_pass for the pipe).
 *
 * Build: cc -O2 -fno-plt -pthread -o csfast5_ref benches/csfast5_ref.c
 * Usage: csfast5_ref mutex N K MAXCOUNT CPU
 *        csfast5_ref pipe ROUNDTRIPS CPU
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAXTHREADS 4096

struct thread {
    pthread_t tid;
    int k;
    long tcounter;
};

static pthread_mutex_t crits[2 * MAXTHREADS];
static int ncrits, nthreads;
static long maxcount;
static long counterA;
static struct thread threads[MAXTHREADS];
static pthread_barrier_t start;

static void die(const char *what) {
    perror(what);
    exit(1);
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static long switches(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_nvcsw + ru.ru_nivcsw;
}

static void *csfast5(void *arg) {
    struct thread *t = arg;
    int k = t->k, k1;
    long i;
    pthread_mutex_lock(&crits[k]);
    pthread_barrier_wait(&start);
    for (i = 0; i < maxcount; i++) {
        k1 = k + 1;
        if (k1 >= ncrits)
            k1 = 0;
        pthread_mutex_lock(&crits[k1]);
        pthread_mutex_unlock(&crits[k]);
        counterA += nthreads;
        k = k1;
        t->tcounter++;
    }
    pthread_mutex_unlock(&crits[k]);
    return NULL;
}

static int pipe_a[2], pipe_b[2];
static long roundtrips;

static void *put_get(void *arg) {
    int token = 0;
    long i;
    (void)arg;
    pthread_barrier_wait(&start);
    for (i = 0; i < roundtrips; i++) {
        if (write(pipe_a[1], &token, sizeof token) != sizeof token)
            die("write(pipe A)");
        if (read(pipe_b[0], &token, sizeof token) != sizeof token)
            die("read(pipe B)");
    }
    if (token != (int)roundtrips) {
        fprintf(stderr, "token %d after %ld round trips\n", token, roundtrips);
        exit(1);
    }
    return NULL;
}

static void *get_put(void *arg) {
    int token;
    long i;
    (void)arg;
    pthread_barrier_wait(&start);
    for (i = 0; i < roundtrips; i++) {
        if (read(pipe_a[0], &token, sizeof token) != sizeof token)
            die("read(pipe A)");
        token++;
        if (write(pipe_b[1], &token, sizeof token) != sizeof token)
            die("write(pipe B)");
    }
    return NULL;
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        die("sched_setaffinity");
}

static void usage(void) {
    fprintf(stderr, "usage: csfast5_ref mutex N K MAXCOUNT CPU | pipe ROUNDTRIPS CPU\n");
    exit(2);
}

int main(int argc, char **argv) {
    double t0, t1;
    long s0, s1, passes, sum = 0;
    int i;
    if (argc == 6 && strcmp(argv[1], "mutex") == 0) {
        int k = atoi(argv[3]);
        nthreads = atoi(argv[2]);
        maxcount = atol(argv[4]);
        if (nthreads < 2 || nthreads > MAXTHREADS || k < 1 || k >= nthreads || maxcount < 1)
            usage();
        ncrits = nthreads + k;
        pin(atoi(argv[5]));
        for (i = 0; i < ncrits; i++)
            pthread_mutex_init(&crits[i], NULL);
        if (pthread_barrier_init(&start, NULL, nthreads + 1) != 0)
            die("pthread_barrier_init");
        for (i = 0; i < nthreads; i++) {
            threads[i].k = i;
            if (pthread_create(&threads[i].tid, NULL, csfast5, &threads[i]) != 0)
                die("pthread_create");
        }
        s0 = switches();
        pthread_barrier_wait(&start);
        t0 = now_ns();
        for (i = 0; i < nthreads; i++)
            pthread_join(threads[i].tid, NULL);
        t1 = now_ns();
        s1 = switches();
        passes = (long)nthreads * maxcount;
        for (i = 0; i < nthreads; i++)
            sum += threads[i].tcounter;
        if (sum != passes) {
            fprintf(stderr, "counted %ld passes, expected %ld\n", sum, passes);
            return 1;
        }
        printf("lockring.mutex.n%d.k%d %.1f\n", nthreads, k, (t1 - t0) / passes);
        printf("lockring.mutex.n%d.k%d.switches_per_hand_over %.3f\n", nthreads, k,
               (double)(s1 - s0) / passes);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "pipe") == 0) {
        pthread_t a, b;
        roundtrips = atol(argv[2]);
        if (roundtrips < 1)
            usage();
        pin(atoi(argv[3]));
        if (pipe(pipe_a) != 0 || pipe(pipe_b) != 0)
            die("pipe");
        if (pthread_barrier_init(&start, NULL, 3) != 0)
            die("pthread_barrier_init");
        if (pthread_create(&a, NULL, put_get, NULL) != 0 ||
            pthread_create(&b, NULL, get_put, NULL) != 0)
            die("pthread_create");
        s0 = switches();
        pthread_barrier_wait(&start);
        t0 = now_ns();
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        t1 = now_ns();
        s1 = switches();
        passes = 2 * roundtrips;
        printf("lockring.pipe.n2 %.1f\n", (t1 - t0) / passes);
        printf("lockring.pipe.n2.switches_per_pass %.3f\n", (double)(s1 - s0) / passes);
        return 0;
    }
    usage();
    return 2;
}
