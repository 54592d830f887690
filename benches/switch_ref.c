/* The C reference for `oscost switch --via pipe`: the same ping-pong, timed the same way.
 *
 * Two tasks pass one byte back and forth through two pipes: the measuring task writes pipe A
 * and reads pipe B, the partner reads A and writes B. One operation is one round trip (two
 * hand-overs). threads: the partner is a thread of this process; processes: a forked child.
 * same: both pinned to CPU A; cross: the partner pinned to CPU B.
 *
 * Per case, the batch of round trips is calibrated as oscost's sampler does (calibrate.h,
 * 4 ms, 1 ms with -q), ten batches warm up, then SAMPLES batches are timed with
 * CLOCK_MONOTONIC; the figure is the median per round trip. Each calibration and each sample
 * takes its turn first (pace.h), so the side-by-side harness can alternate them with oscost's.
 *
 * First, as oscost does, the no-switch control: the same write and read through one pipe in
 * one task (switch.pipe.control).
 *
 * Output, one line per case: "switch.pipe.control MEDIAN_NS", then
 * "switch.pipe.KIND.PLACEMENT MEDIAN_NS".
 *
 * Usage: switch_ref -a CPU -b CPU [-s SAMPLES] [-q] [-k threads|processes] [-p same|cross]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "calibrate.h"
#include "pace.h"

static int ab[2], ba[2], partner_cpu;

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

/* The partner: echoes every byte until its pipe closes. */
static void *echo(void *arg) {
    (void)arg;
    pin(partner_cpu);
    char c;
    while (read(ab[0], &c, 1) == 1)
        if (write(ba[1], &c, 1) != 1) break;
    return NULL;
}

/* The control: post and wait in one task, no switch. */
static void one_task(void *arg) {
    (void)arg;
    char c = 1;
    if (write(ab[1], &c, 1) != 1 || read(ab[0], &c, 1) != 1) die("control");
}

static void round_trip(void *arg) {
    (void)arg;
    char c = 1;
    if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) die("ping-pong");
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double measure(void (*op)(void *), int samples, double target) {
    pace_turn();
    unsigned long k = calibrate_batches(op, NULL, target);
    for (int w = 0; w < 10; w++)
        for (unsigned long j = 0; j < k; j++) op(NULL);
    double *v = calloc((size_t)samples, sizeof *v);
    for (int s = 0; s < samples; s++) {
        pace_turn();
        uint64_t t0 = now_ns();
        for (unsigned long j = 0; j < k; j++) op(NULL);
        v[s] = (double)(now_ns() - t0) / (double)k;
    }
    qsort(v, (size_t)samples, sizeof *v, cmp);
    double m = v[samples / 2];
    free(v);
    return m;
}

int main(int argc, char **argv) {
    int a = 0, b = 1, samples = 81, opt;
    double target = 4e6;
    const char *kind = NULL, *placement = NULL;
    while ((opt = getopt(argc, argv, "a:b:s:qk:p:")) != -1) {
        if (opt == 'a') a = atoi(optarg);
        else if (opt == 'b') b = atoi(optarg);
        else if (opt == 's') samples = atoi(optarg);
        else if (opt == 'q') target = 1e6;
        else if (opt == 'k') kind = optarg;
        else if (opt == 'p') placement = optarg;
        else {
            fprintf(stderr, "usage: switch_ref -a CPU -b CPU [-s SAMPLES] [-q] [-k threads|processes] [-p same|cross]\n");
            return 2;
        }
    }
    if (samples < 1) samples = 1;
    pin(a);
    if (pipe(ab)) die("pipe");
    printf("switch.pipe.control %.1f\n", measure(one_task, samples, target));
    fflush(stdout);
    close(ab[0]);
    close(ab[1]);
    static const char *kinds[] = {"threads", "processes"}, *places[] = {"same", "cross"};
    for (int ki = 0; ki < 2; ki++) {
        if (kind && strcmp(kind, kinds[ki])) continue;
        for (int pi = 0; pi < 2; pi++) {
            if (placement && strcmp(placement, places[pi])) continue;
            if (pipe(ab) || pipe(ba)) die("pipe");
            partner_cpu = pi ? b : a;
            pthread_t t;
            pid_t child = -1;
            if (ki == 0) {
                if (pthread_create(&t, NULL, echo, NULL)) die("pthread_create");
            } else if ((child = fork()) == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                close(ab[1]);
                close(ba[0]);
                echo(NULL);
                _exit(0);
            } else if (child < 0) {
                die("fork");
            }
            double m = measure(round_trip, samples, target);
            printf("switch.pipe.%s.%s %.1f\n", kinds[ki], places[pi], m);
            fflush(stdout);
            close(ab[1]);
            if (ki == 0) pthread_join(t, NULL);
            else waitpid(child, NULL, 0);
            close(ab[0]);
            close(ba[0]);
            close(ba[1]);
        }
    }
    return 0;
}
