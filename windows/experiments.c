/* The experiments: Bradford's Table 1 (primitives), his lock ring and pipe token (lockring),
 * and the yield study's shared work (split), timed as oscost times them on Linux. */
#include "agent.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <winternl.h>

void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    /* Under Wine every line says so: its figures are Wine's on a Linux host, not Windows'. */
    if (wine_version)
        fprintf(stderr, "[under Wine] ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void warn(char (*w)[400], int *n, int max, const char *fmt, ...)
{
    if (*n >= max)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w[*n], 400, fmt, ap);
    va_end(ap);
    (*n)++;
}

/* ---- per-thread context switches ------------------------------------------------------ */

/* On x86-64 Windows (and Wine) the thread entries follow each process entry at 0x100 bytes, and
 * a thread's context-switch count sits where the SDK's header calls it Reserved3. */
_Static_assert(sizeof(SYSTEM_THREAD_INFORMATION) == 80, "x86-64 thread entry layout");
#define PROCESS_ENTRY_BYTES 0x100

long long switches_of(const unsigned long *tids, int n)
{
    ULONG len = 1 << 20, got = 0;
    char *buf = NULL;
    NTSTATUS st;
    for (;;) {
        free(buf);
        buf = xmalloc(len);
        st = NtQuerySystemInformation(SystemProcessInformation, buf, len, &got);
        if (st != (NTSTATUS)0xC0000004L) /* STATUS_INFO_LENGTH_MISMATCH */
            break;
        len *= 2;
    }
    long long total = -1;
    if (st == 0) {
        DWORD me = GetCurrentProcessId();
        for (char *p = buf;;) {
            SYSTEM_PROCESS_INFORMATION *pi = (SYSTEM_PROCESS_INFORMATION *)p;
            if ((DWORD)(uintptr_t)pi->UniqueProcessId == me) {
                SYSTEM_THREAD_INFORMATION *t =
                    (SYSTEM_THREAD_INFORMATION *)(p + PROCESS_ENTRY_BYTES);
                total = 0;
                int seen = 0;
                for (ULONG i = 0; i < pi->NumberOfThreads; i++)
                    for (int k = 0; k < n; k++)
                        if ((DWORD)(uintptr_t)t[i].ClientId.UniqueThread == tids[k]) {
                            total += t[i].Reserved3;
                            seen++;
                        }
                if (seen != n)
                    total = -1;
                break;
            }
            if (!pi->NextEntryOffset)
                break;
            p += pi->NextEntryOffset;
        }
    }
    free(buf);
    return total;
}

/* ---- one-thread loops: Table 1 ---------------------------------------------------------- */

struct prim {
    HANDLE mutex, sem;
    CRITICAL_SECTION cs;
    SRWLOCK srw;
};
typedef void (*loop_fn)(struct prim *, uint64_t);

static void __attribute__((noinline)) empty_loop(struct prim *p, uint64_t n)
{
    (void)p;
    for (uint64_t i = 0; i < n; i++)
        __asm__ volatile("" ::: "memory");
}
static void __attribute__((noinline)) mutex_loop(struct prim *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        WaitForSingleObject(p->mutex, INFINITE);
        ReleaseMutex(p->mutex);
        __asm__ volatile("" ::: "memory");
    }
}
static void __attribute__((noinline)) sem_loop(struct prim *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        WaitForSingleObject(p->sem, INFINITE);
        ReleaseSemaphore(p->sem, 1, NULL);
        __asm__ volatile("" ::: "memory");
    }
}
static void __attribute__((noinline)) cs_loop(struct prim *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        EnterCriticalSection(&p->cs);
        LeaveCriticalSection(&p->cs);
        __asm__ volatile("" ::: "memory");
    }
}
static void __attribute__((noinline)) srw_loop(struct prim *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        AcquireSRWLockExclusive(&p->srw);
        ReleaseSRWLockExclusive(&p->srw);
        __asm__ volatile("" ::: "memory");
    }
}

struct loop_case {
    const char *id, *description, *primitive, *op;
    loop_fn fn;
    uint64_t iters;
    double *ticks_per_op;
};

/* Iterations that make one sample last about `target_ticks`. */
static uint64_t calibrate_iters(loop_fn fn, struct prim *p, double target_ticks)
{
    uint64_t n = 16;
    for (;;) {
        uint64_t t0 = ticks();
        fn(p, n);
        uint64_t t = ticks() - t0;
        if ((double)t >= target_ticks || n > (1ULL << 40))
            return n;
        n *= (double)t * 4 < target_ticks ? 4 : 2;
    }
}

/* Interleaved rounds: each round times every case once (and the empty loop), so a slow
 * moment of the machine falls on all of them alike; the first rounds warm up and are dropped.
 * Each case's figure is its time per iteration less the empty loop's median. */
static void time_loops(struct experiment *e, struct loop_case *cases, int ncases,
                       const struct settings *s, int cpu, const char *extra_param)
{
    struct prim p;
    p.mutex = CreateMutexA(NULL, FALSE, NULL);
    p.sem = CreateSemaphoreA(NULL, 1, 1, NULL);
    InitializeCriticalSection(&p.cs);
    InitializeSRWLock(&p.srw);
    if (!p.mutex || !p.sem)
        fail("could not create a Win32 mutex or semaphore (error %lu)", GetLastError());
    double target = s->target_sample_ms * 1e-3 * tsc_hz;
    int warm = s->quick ? 2 : 5, rounds = warm + s->samples;
    uint64_t empty_iters = calibrate_iters(empty_loop, &p, target);
    double *empty = xmalloc((size_t)rounds * sizeof *empty);
    for (int k = 0; k < ncases; k++) {
        cases[k].iters = calibrate_iters(cases[k].fn, &p, target);
        cases[k].ticks_per_op = xmalloc((size_t)rounds * sizeof(double));
    }
    for (int r = 0; r < rounds; r++) {
        uint64_t t0 = ticks();
        empty_loop(&p, empty_iters);
        empty[r] = (double)(ticks() - t0) / (double)empty_iters;
        for (int k = 0; k < ncases; k++) {
            t0 = ticks();
            cases[k].fn(&p, cases[k].iters);
            cases[k].ticks_per_op[r] = (double)(ticks() - t0) / (double)cases[k].iters;
        }
    }
    double overhead = median_of(empty + warm, (size_t)s->samples);
    for (int k = 0; k < ncases; k++) {
        struct case_result *c = add_case(e, cases[k].id, "call");
        snprintf(c->description, sizeof c->description, "%s", cases[k].description);
        c->n = (size_t)s->samples;
        c->ns = xmalloc(c->n * sizeof *c->ns);
        c->ticks = xmalloc(c->n * sizeof *c->ticks);
        for (size_t i = 0; i < c->n; i++) {
            c->ticks[i] = cases[k].ticks_per_op[warm + i] - overhead;
            c->ns[i] = ticks_to_ns(c->ticks[i]);
        }
        c->iterations = cases[k].iters;
        c->loop_overhead_ns = ticks_to_ns(overhead);
        bprintf(&c->params, "\"primitive\": \"%s\", \"op\": \"%s\", \"tasks\": 1, \"cpu\": %d%s",
                cases[k].primitive, cases[k].op, cpu, extra_param);
        free(cases[k].ticks_per_op);
    }
    free(empty);
    CloseHandle(p.mutex);
    CloseHandle(p.sem);
    DeleteCriticalSection(&p.cs);
}

static int pin_self(void)
{
    int cpus[64];
    int n = online_cpus(cpus, 64);
    int cpu = n ? cpus[0] : 0;
    SetThreadAffinityMask(GetCurrentThread(), (DWORD_PTR)1 << cpu);
    return cpu;
}

static void unpin_self(void)
{
    DWORD_PTR proc, sys;
    if (GetProcessAffinityMask(GetCurrentProcess(), &proc, &sys))
        SetThreadAffinityMask(GetCurrentThread(), proc);
}

void run_primitives(struct experiment *e, const struct settings *s)
{
    e->name = "primitives";
    int cpu = pin_self();
    say("primitives: Win32 Mutex, Semaphore, Critical Section and SRWLock, uncontended, on CPU %d",
        cpu);
    struct loop_case cases[] = {
        {"primitives.win32-mutex",
         "a Win32 Mutex, uncontended: WaitForSingleObject then ReleaseMutex, time per pair",
         "win32-mutex", "wait+release", mutex_loop, 0, NULL},
        {"primitives.win32-semaphore",
         "a Win32 Semaphore of count 1, uncontended: WaitForSingleObject then ReleaseSemaphore, "
         "time per pair",
         "win32-semaphore", "wait+release", sem_loop, 0, NULL},
        {"primitives.critical-section",
         "a Win32 Critical Section, uncontended: EnterCriticalSection then "
         "LeaveCriticalSection, time per pair",
         "critical-section", "enter+leave", cs_loop, 0, NULL},
        {"primitives.srwlock",
         "a slim reader/writer lock, uncontended, exclusive: AcquireSRWLockExclusive then "
         "ReleaseSRWLockExclusive, time per pair",
         "srwlock", "acquire+release", srw_loop, 0, NULL},
    };
    time_loops(e, cases, 4, s, cpu, "");
    unpin_self();
}

/* ---- the ring of critical sections (csfast5) ------------------------------------------- */

struct ring;
struct ring_thread {
    struct ring *ring;
    int index;
    HANDLE handle;
    DWORD tid;
    volatile LONG64 hand_overs;
    char pad[64];
};
struct ring {
    int n, k;
    CRITICAL_SECTION *locks;
    struct ring_thread *t;
    volatile LONG ready, stop;
    volatile LONG last; /* the thread that moved last (checked with one free lock only) */
    volatile LONG order_violations;
    HANDLE go;
};

/* Each thread holds its own lock, takes the next one in the ring, then lets its own go: with one
 * free lock, exactly one thread can move at a time, so the moves go round in a fixed order. */
static DWORD WINAPI ring_main(void *arg)
{
    struct ring_thread *me = arg;
    struct ring *r = me->ring;
    int total = r->n + r->k, own = me->index;
    EnterCriticalSection(&r->locks[own]);
    InterlockedIncrement(&r->ready);
    WaitForSingleObject(r->go, INFINITE);
    for (;;) {
        int next = (own + 1) % total;
        EnterCriticalSection(&r->locks[next]);
        if (r->k == 1) {
            if (r->last != (me->index + 1) % r->n)
                r->order_violations++;
            r->last = me->index;
        }
        LeaveCriticalSection(&r->locks[own]);
        own = next;
        me->hand_overs++;
        if (r->stop)
            break;
    }
    LeaveCriticalSection(&r->locks[own]);
    return 0;
}

static LONG64 ring_count(struct ring *r)
{
    LONG64 sum = 0;
    for (int i = 0; i < r->n; i++)
        sum += r->t[i].hand_overs;
    return sum;
}

/* Samples of a running ring: the hand-overs counted in each window of the main thread's sleep,
 * and the TSC over the window; time per hand-over = ticks / hand-overs, as Bradford divided
 * elapsed time by the switches made. A window lasts until it holds at least WINDOW_OPS
 * hand-overs, so a slow primitive is not a count of a handful; a window that sees none in five
 * seconds ends the sampling as a failure. */
#define WINDOW_OPS 32
static int sample_windows(LONG64 (*count)(void *), void *ctx, const struct settings *s,
                          double *tick_per_op, LONG64 *total)
{
    int warm = s->quick ? 2 : 5;
    DWORD ms = (DWORD)(s->target_sample_ms < 1 ? 1 : s->target_sample_ms);
    *total = 0;
    for (int i = 0; i < warm + s->samples; i++) {
        LONG64 h0 = count(ctx), h1;
        uint64_t t0 = ticks(), t1;
        DWORD waited = 0;
        do {
            Sleep(ms);
            waited += ms;
            h1 = count(ctx);
            t1 = ticks();
        } while (h1 - h0 < WINDOW_OPS && waited < 5000);
        if (h1 <= h0)
            return -1;
        if (i >= warm) {
            tick_per_op[i - warm] = (double)(t1 - t0) / (double)(h1 - h0);
            *total += h1 - h0;
        }
    }
    return 0;
}

static LONG64 ring_count_cb(void *r) { return ring_count(r); }

static int other_cpu(int cpu)
{
    int cpus[64], n = online_cpus(cpus, 64);
    for (int i = 0; i < n; i++)
        if (cpus[i] != cpu)
            return cpus[i];
    return cpu;
}

static void switch_check(struct case_result *c, long long sw0, long long sw1, LONG64 ops,
                         const char *per, char (*warnings)[400], int *nwarn)
{
    char name[64];
    snprintf(name, sizeof name, "switches_per_%s", per);
    if (sw0 < 0 || sw1 < 0 || sw1 - sw0 <= 0) {
        warn(warnings, nwarn, 4,
             "context switches not available: the system reported %s for the ring's threads "
             "(per-thread counts from NtQuerySystemInformation)%s",
             sw0 < 0 || sw1 < 0 ? "no entry" : "no switch",
             wine_version ? "; under Wine, which reports none" : "");
        return;
    }
    double v = (double)(sw1 - sw0) / (double)ops;
    add_counter(c, name, v);
    struct check *k = &c->checks[c->nchecks++];
    snprintf(k->name, sizeof k->name, "%s", name);
    k->expected = 1;
    k->counted = v;
    k->passed = v >= 0.9;
    snprintf(k->detail, sizeof k->detail,
             "each thread's context switches (NtQuerySystemInformation) summed over the sampled "
             "windows, per %s; with every thread on one CPU each %s must switch (at least 0.9)",
             per, per);
}

static void run_ring(struct experiment *e, const struct settings *s, int n, int k, int cpu,
                     int main_cpu)
{
    struct ring r = {.n = n, .k = k, .last = 0};
    r.locks = xmalloc((size_t)(n + k) * sizeof *r.locks);
    r.t = xmalloc((size_t)n * sizeof *r.t);
    memset(r.t, 0, (size_t)n * sizeof *r.t);
    for (int i = 0; i < n + k; i++)
        InitializeCriticalSection(&r.locks[i]);
    r.go = CreateEventA(NULL, TRUE, FALSE, NULL);
    if (!r.go)
        fail("could not create the ring's start event (error %lu)", GetLastError());
    int started = 0;
    DWORD create_error = 0;
    for (int i = 0; i < n; i++) {
        r.t[i].ring = &r;
        r.t[i].index = i;
        r.t[i].handle = CreateThread(NULL, 64 * 1024, ring_main, &r.t[i],
                                     CREATE_SUSPENDED | STACK_SIZE_PARAM_IS_A_RESERVATION,
                                     &r.t[i].tid);
        if (!r.t[i].handle) {
            /* Read now: the formatting below may change the thread's last error. */
            create_error = GetLastError();
            break;
        }
        SetThreadAffinityMask(r.t[i].handle, (DWORD_PTR)1 << cpu);
        ResumeThread(r.t[i].handle);
        started++;
    }
    char id[96];
    snprintf(id, sizeof id, "lockring.cs.n%d.k%d", n, k);
    if (started < n) {
        struct unavailable *u = &e->unavail[e->nunavail < 8 ? e->nunavail++ : 7];
        snprintf(u->id, sizeof u->id, "%s", id);
        snprintf(u->description, sizeof u->description,
                 "%d threads in a ring of Critical Sections", n);
        snprintf(u->reason, sizeof u->reason,
                 "only %d of %d threads could be created (error %lu)", started, n,
                 create_error);
    }
    while (r.ready < started)
        Sleep(1);
    size_t ns = (size_t)s->samples;
    double *tpo = xmalloc(ns * sizeof *tpo);
    LONG64 total = 0;
    int ok = -1;
    unsigned long *tids = xmalloc((size_t)n * sizeof *tids);
    for (int i = 0; i < started; i++)
        tids[i] = r.t[i].tid;
    long long sw0 = -1, sw1 = -1;
    LONG violations = 0;
    if (started == n) {
        SetEvent(r.go);
        sw0 = switches_of(tids, n);
        ok = sample_windows(ring_count_cb, &r, s, tpo, &total);
        sw1 = switches_of(tids, n);
        /* Read before stopping: threads that leave the ring free their locks, and the moves that
         * follow may overlap without anything being wrong. */
        violations = r.order_violations;
    }
    r.stop = 1;
    SetEvent(r.go);
    for (int i = 0; i < started; i++) {
        WaitForSingleObject(r.t[i].handle, INFINITE);
        CloseHandle(r.t[i].handle);
    }
    if (started == n && ok == 0) {
        struct case_result *c = add_case(e, id, "switch");
        snprintf(c->description, sizeof c->description,
                 "%d threads hand %d Critical Sections around a ring (%d free), each entering "
                 "the next and leaving its own: time per hand-over",
                 n, n + k, k);
        c->n = ns;
        c->ns = xmalloc(ns * sizeof *c->ns);
        c->ticks = tpo;
        for (size_t i = 0; i < ns; i++)
            c->ns[i] = ticks_to_ns(tpo[i]);
        c->iterations = (uint64_t)(total / (LONG64)ns);
        bprintf(&c->params,
                "\"primitive\": \"critical-section\", \"tasks\": %d, \"tokens\": %d, "
                "\"locks\": %d, \"placement\": \"same\", \"cpus\": [%d], \"sampler_cpu\": %d",
                n, k, n + k, cpu, main_cpu);
        add_counter(c, "hand_overs_counted", (double)total);
        switch_check(c, sw0, sw1, total, "hand_over", c->warnings, &c->nwarnings);
        if (k == 1) {
            add_counter(c, "order_violations", violations);
            struct check *q = &c->checks[c->nchecks++];
            snprintf(q->name, sizeof q->name, "ring_order");
            q->expected = 0;
            q->counted = violations;
            q->passed = violations == 0;
            snprintf(q->detail, sizeof q->detail,
                     "with one free lock each move must follow the move of the thread ahead in "
                     "the ring: moves out of that order, counted by every thread under its lock");
        }
        struct derived *d = add_derived(e);
        snprintf(d->id, sizeof d->id, "%s.switch_cost", id);
        snprintf(d->description, sizeof d->description,
                 "switch cost: time per hand-over in the ring of %d less a Critical Section's "
                 "own enter + leave",
                 n);
        snprintf(d->a, sizeof d->a, "%s", id);
        snprintf(d->b, sizeof d->b, "lockring.cs.own");
        d->ca = 1;
        d->cb = -1;
        for (int i = 0; i < c->nchecks; i++)
            if (!c->checks[i].passed)
                snprintf(d->flagged, sizeof d->flagged, "%s failed its %s check", id,
                         c->checks[i].name);
        say("lockring: %d threads, %d free: %.0f ns per hand-over (median of %zu)", n, k,
            median_of(c->ns, ns), ns);
    } else {
        free(tpo);
        if (started == n) {
            struct unavailable *u = &e->unavail[e->nunavail < 8 ? e->nunavail++ : 7];
            snprintf(u->id, sizeof u->id, "%s", id);
            snprintf(u->description, sizeof u->description,
                     "%d threads in a ring of Critical Sections", n);
            snprintf(u->reason, sizeof u->reason, "the ring made no hand-over in a sample window");
        }
    }
    for (int i = 0; i < n + k; i++)
        DeleteCriticalSection(&r.locks[i]);
    free(r.locks);
    free(r.t);
    free(tids);
    CloseHandle(r.go);
}

/* ---- the pipe token (cspipe2a) --------------------------------------------------------- */

struct pipes {
    HANDLE a_read, a_write, b_read, b_write, go;
    volatile LONG stop;
    volatile LONG64 passes[2];
    char pad[64];
};

static DWORD WINAPI pipe_first(void *arg)
{
    struct pipes *p = arg;
    DWORD token = 0, n;
    WaitForSingleObject(p->go, INFINITE);
    while (!p->stop) {
        if (!WriteFile(p->a_write, &token, 4, &n, NULL) || !ReadFile(p->b_read, &token, 4, &n, NULL))
            break;
        p->passes[0]++;
    }
    CloseHandle(p->a_write); /* the second thread's read fails and it ends */
    p->a_write = NULL;
    return 0;
}

static DWORD WINAPI pipe_second(void *arg)
{
    struct pipes *p = arg;
    DWORD token, n;
    for (;;) {
        if (!ReadFile(p->a_read, &token, 4, &n, NULL))
            break;
        p->passes[1]++;
        if (!WriteFile(p->b_write, &token, 4, &n, NULL))
            break;
    }
    return 0;
}

static LONG64 pipe_count(void *arg)
{
    struct pipes *p = arg;
    return p->passes[0] + p->passes[1];
}

static void run_pipe(struct experiment *e, const struct settings *s, int cpu, int main_cpu)
{
    struct pipes p = {0};
    if (!CreatePipe(&p.a_read, &p.a_write, NULL, 0) || !CreatePipe(&p.b_read, &p.b_write, NULL, 0))
        fail("could not create two anonymous pipes (error %lu)", GetLastError());
    p.go = CreateEventA(NULL, TRUE, FALSE, NULL);
    if (!p.go)
        fail("could not create the pipe token's start event (error %lu)", GetLastError());
    HANDLE t[2];
    DWORD tids[2];
    t[0] = CreateThread(NULL, 0, pipe_first, &p, CREATE_SUSPENDED, &tids[0]);
    t[1] = CreateThread(NULL, 0, pipe_second, &p, CREATE_SUSPENDED, &tids[1]);
    if (!t[0] || !t[1])
        fail("could not create the pipe token's two threads (error %lu)", GetLastError());
    for (int i = 0; i < 2; i++) {
        SetThreadAffinityMask(t[i], (DWORD_PTR)1 << cpu);
        ResumeThread(t[i]);
    }
    size_t ns = (size_t)s->samples;
    double *tpo = xmalloc(ns * sizeof *tpo);
    LONG64 total = 0;
    unsigned long utids[2] = {tids[0], tids[1]};
    SetEvent(p.go);
    long long sw0 = switches_of(utids, 2);
    int ok = sample_windows(pipe_count, &p, s, tpo, &total);
    long long sw1 = switches_of(utids, 2);
    p.stop = 1;
    WaitForMultipleObjects(2, t, TRUE, INFINITE);
    CloseHandle(t[0]);
    CloseHandle(t[1]);
    CloseHandle(p.a_read);
    CloseHandle(p.b_read);
    CloseHandle(p.b_write);
    CloseHandle(p.go);
    if (ok) {
        free(tpo);
        struct unavailable *u = &e->unavail[e->nunavail < 8 ? e->nunavail++ : 7];
        snprintf(u->id, sizeof u->id, "lockring.pipe.n2");
        snprintf(u->description, sizeof u->description, "two threads passing a token through two pipes");
        snprintf(u->reason, sizeof u->reason, "the token made no pass in a sample window");
        return;
    }
    struct case_result *c = add_case(e, "lockring.pipe.n2", "switch");
    snprintf(c->description, sizeof c->description,
             "two threads pass a 4-byte token through two anonymous pipes (write A, read B / "
             "read A, write B): time per one-way pass, half a round trip");
    c->n = ns;
    c->ns = xmalloc(ns * sizeof *c->ns);
    c->ticks = tpo;
    for (size_t i = 0; i < ns; i++)
        c->ns[i] = ticks_to_ns(tpo[i]);
    c->iterations = (uint64_t)(total / (LONG64)ns);
    bprintf(&c->params,
            "\"tasks\": 2, \"token_bytes\": 4, \"placement\": \"same\", \"cpus\": [%d], "
            "\"sampler_cpu\": %d",
            cpu, main_cpu);
    add_counter(c, "passes_counted", (double)total);
    switch_check(c, sw0, sw1, total, "pass", c->warnings, &c->nwarnings);
    say("lockring: pipe token, 2 threads: %.0f ns per pass (median of %zu)", median_of(c->ns, ns),
        ns);
}

void run_lockring(struct experiment *e, const struct settings *s)
{
    e->name = "lockring";
    int cpu = pin_self(), main_cpu = other_cpu(cpu);
    say("lockring: a Critical Section's own cost, the pipe token and rings of N = 2 ... %d "
        "threads on CPU %d",
        s->max_ring, cpu);
    struct loop_case own[] = {
        {"lockring.cs.own",
         "a Critical Section's own cost in the ring's terms: EnterCriticalSection then "
         "LeaveCriticalSection, uncontended, on the ring's CPU",
         "critical-section", "enter+leave", cs_loop, 0, NULL},
    };
    time_loops(e, own, 1, s, cpu, "");
    /* The sampler sleeps on another CPU when there is one, so its wake-ups do not fall in the
     * ring's switches. */
    SetThreadAffinityMask(GetCurrentThread(), (DWORD_PTR)1 << main_cpu);
    run_pipe(e, s, cpu, main_cpu);
    for (int n = 2; n <= s->max_ring; n *= 2)
        run_ring(e, s, n, 1, cpu, main_cpu);
    bprintf(&e->params, "\"tokens\": 1, \"placement\": \"same\", \"max_threads\": %d", s->max_ring);
    unpin_self();
}

/* ---- the yield study's shared work ----------------------------------------------------- */

struct share {
    uint64_t units, step;
};
static volatile uint64_t sink;

/* One unit of work: a chain of dependent multiply-adds the compiler cannot shorten. */
static inline uint64_t work_unit(uint64_t x)
{
    for (int i = 0; i < 256; i++)
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

static DWORD WINAPI yield_main(void *arg)
{
    const struct share *sh = arg;
    uint64_t x = (uint64_t)(uintptr_t)arg;
    for (uint64_t done = 0; done < sh->units;) {
        for (uint64_t k = 0; k < sh->step && done < sh->units; k++, done++)
            x = work_unit(x);
        Sleep(0);
    }
    sink = x;
    return 0;
}

/* Creates `n` threads sharing `units` of work, waits for them all: the ticks it took, or 0 when
 * not every thread could be created (then none is left running). */
static uint64_t yield_run(int n, uint64_t units, uint64_t step, HANDLE *h)
{
    struct share sh = {units / (uint64_t)n, step};
    uint64_t t0 = ticks();
    int made = 0;
    for (; made < n; made++) {
        h[made] = CreateThread(NULL, 64 * 1024, yield_main, &sh, STACK_SIZE_PARAM_IS_A_RESERVATION,
                               NULL);
        if (!h[made])
            break;
    }
    for (int i = 0; i < made; i++) {
        WaitForSingleObject(h[i], INFINITE);
        CloseHandle(h[i]);
    }
    uint64_t t = ticks() - t0;
    return made == n ? t : 0;
}

void run_split(struct experiment *e, const struct settings *s)
{
    e->name = "split";
    int cpus[64], ncpus = online_cpus(cpus, 64);
    DWORD_PTR proc, sys;
    GetProcessAffinityMask(GetCurrentProcess(), &proc, &sys);
    int nsets = ncpus >= 2 ? 2 : 1;
    if (nsets < 2) {
        struct unavailable *u = &e->unavail[e->nunavail++];
        snprintf(u->id, sizeof u->id, "split.threads.two.yield");
        snprintf(u->description, sizeof u->description,
                 "the yield sweep on two CPUs");
        snprintf(u->reason, sizeof u->reason, "this machine has one CPU");
    }
    int npoints = 0, points[16];
    for (int n = 1; n <= s->max_yield; n *= 2)
        points[npoints++] = n;
    uint64_t step = 1, units = s->quick ? 8192 : 262144;
    while (units % (uint64_t)s->max_yield)
        units *= 2;
    say("split: the same %llu work units shared by N = 1 ... %d threads that Sleep(0) after "
        "each step, on one CPU%s",
        (unsigned long long)units, s->max_yield, nsets == 2 ? " and on two" : "");
    /* Whole runs of up to thousands of threads: fewer of them than of the short samples. */
    int samples = s->quick ? 3 : s->samples < 11 ? s->samples : 11;
    int warm = 1, rounds = warm + samples;
    double *t = xmalloc((size_t)(2 * npoints * rounds) * sizeof *t);
    HANDLE *h = xmalloc((size_t)s->max_yield * sizeof *h);
    int failed_n = 0;
    for (int r = 0; r < rounds; r++) {
        for (int set = 0; set < nsets; set++) {
            DWORD_PTR mask = ((DWORD_PTR)1 << cpus[0]) | (set ? (DWORD_PTR)1 << cpus[1] : 0);
            SetProcessAffinityMask(GetCurrentProcess(), mask);
            for (int i = 0; i < npoints; i++) {
                uint64_t x = yield_run(points[i], units, step, h);
                if (!x && !failed_n)
                    failed_n = points[i];
                t[(set * npoints + i) * rounds + r] = (double)x;
            }
        }
        say("split: round %d of %d done", r + 1, rounds);
    }
    SetProcessAffinityMask(GetCurrentProcess(), proc);
    for (int set = 0; set < nsets; set++)
        for (int i = 0; i < npoints; i++) {
            double *v = &t[(set * npoints + i) * rounds + warm];
            int complete = 1;
            for (int k = 0; k < samples; k++)
                complete &= v[k] > 0;
            char id[96];
            snprintf(id, sizeof id, "split.threads.%s.%d.yield", set ? "two" : "one", points[i]);
            if (!complete) {
                if (e->nunavail < 8) {
                    struct unavailable *u = &e->unavail[e->nunavail++];
                    snprintf(u->id, sizeof u->id, "%s", id);
                    snprintf(u->description, sizeof u->description, "%d yielding threads",
                             points[i]);
                    snprintf(u->reason, sizeof u->reason,
                             "not every thread could be created (error %lu)", GetLastError());
                }
                continue;
            }
            struct case_result *c = add_case(e, id, "run");
            snprintf(c->description, sizeof c->description,
                     "%d threads share %llu work units %s, calling Sleep(0) after each step: "
                     "create, work, join",
                     points[i], (unsigned long long)units,
                     set ? "on two CPUs" : "on one CPU");
            c->n = (size_t)samples;
            c->ns = xmalloc(c->n * sizeof *c->ns);
            c->ticks = xmalloc(c->n * sizeof *c->ticks);
            for (size_t k = 0; k < c->n; k++) {
                c->ticks[k] = v[k];
                c->ns[k] = ticks_to_ns(v[k]);
            }
            c->iterations = 1;
            bprintf(&c->params,
                    "\"form\": \"threads\", \"set\": \"%s\", \"cpus\": \"%d%s%d\", "
                    "\"cpu_count\": %d, \"tasks\": %d, \"yield\": true, \"yield_call\": "
                    "\"Sleep(0)\", \"work_units\": %llu, \"step_units\": %llu",
                    set ? "two" : "one", cpus[0], set ? "," : "", set ? cpus[1] : cpus[0],
                    set + 1, points[i], (unsigned long long)units, (unsigned long long)step);
            if (!set) {
                /* "0" not "0,0" */
                c->params.len = 0;
                bprintf(&c->params,
                        "\"form\": \"threads\", \"set\": \"one\", \"cpus\": \"%d\", "
                        "\"cpu_count\": 1, \"tasks\": %d, \"yield\": true, \"yield_call\": "
                        "\"Sleep(0)\", \"work_units\": %llu, \"step_units\": %llu",
                        cpus[0], points[i], (unsigned long long)units, (unsigned long long)step);
            }
        }
    warn(e->warnings, &e->nwarnings, 4,
         "context switches are not counted for the yield runs: a thread's count can only be read "
         "while it exists, and these threads end inside the timed run");
    if (failed_n)
        warn(e->warnings, &e->nwarnings, 4,
             "from N = %d not every thread could be created: those points are unavailable",
             failed_n);
    bprintf(&e->params,
            "\"form\": \"threads\", \"yield\": true, \"yield_call\": \"Sleep(0)\", "
            "\"work_units\": %llu, \"step_units\": %llu, \"max_tasks\": %d",
            (unsigned long long)units, (unsigned long long)step, s->max_yield);
    free(t);
    free(h);
}
