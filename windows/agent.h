/* oscost's Windows agent: shared declarations. */
#ifndef OSCOST_AGENT_H
#define OSCOST_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define AGENT_VERSION "0.1.0"
/* The same constants as oscost's stats crate. */
#define RESAMPLES 2000
#define SEED 0x0005c057ULL
#define NOISY_REL_HALF_WIDTH 0.05

/* base.c */
void *xmalloc(size_t n);
void fail(const char *fmt, ...);

/* stats.c */
struct summary {
    size_t n;
    double median, mad, min, max, mean, stddev, p5, p95, ci[2];
    size_t outliers[4]; /* low severe, low mild, high mild, high severe */
    int noisy;
};
void sort_doubles(double *v, size_t n);
double percentile_sorted(const double *s, size_t n, double p);
double median_sorted(const double *s, size_t n);
double median_of(const double *v, size_t n);
uint64_t splitmix64(uint64_t *state);
void bootstrap_median_ci(const double *v, size_t n, double ci[2]);
void bootstrap_combination(const double *a, size_t na, double ca, const double *b, size_t nb,
                           double cb, double *estimate, double ci[2]);
int summarise(const double *v, size_t n, struct summary *s);
int stats_self_test(void);

/* A string builder for JSON fragments. */
struct buf {
    char *p;
    size_t len, cap;
};
void bprintf(struct buf *b, const char *fmt, ...);
void bjson_str(struct buf *b, const char *s);
void bjson_num(struct buf *b, double v);

/* One measured case, as the document's `cases[]` wants it. */
struct check {
    char name[64];
    double expected, counted;
    int passed;
    char detail[400];
};
struct counter {
    char name[64];
    double value;
};
struct case_result {
    char id[96];
    char description[400];
    char unit[24];
    struct buf params; /* `"key": value, ...` without braces */
    double *ns, *ticks;
    size_t n;
    uint64_t iterations;
    double loop_overhead_ns;
    struct check checks[4];
    int nchecks;
    struct counter counters[12];
    int ncounters;
    char warnings[4][400];
    int nwarnings;
};
struct unavailable {
    char id[96];
    char description[300];
    char reason[400];
};
struct derived {
    char id[128];
    char description[300];
    char a[96], b[96];
    double ca, cb;
    double estimate_ns, ci[2], ticks_per_ns;
    char flagged[300];
};
struct experiment {
    const char *name;
    struct buf params;
    struct case_result *cases;
    size_t ncases, capcases;
    struct unavailable unavail[8];
    int nunavail;
    struct derived *derived;
    size_t nderived, capderived;
    char warnings[4][400];
    int nwarnings;
};
struct case_result *add_case(struct experiment *e, const char *id, const char *unit);
void add_counter(struct case_result *c, const char *name, double v);
struct derived *add_derived(struct experiment *e);
int write_document(const char *path, struct experiment **exps, int nexp, const char *env_json,
                   const char *run_id, const char *started_at);

/* clock.c */
extern double tsc_hz;
uint64_t ticks(void);
double ticks_to_ns(double t);
void calibrate_clock(int quick, struct buf *clock_json, int *invariant);

/* env.c */
extern const char *wine_version; /* NULL on Windows itself */
extern char wine_host[128];
extern unsigned win_major, win_minor, win_build;
void detect_system(void);
void environment_json(struct buf *b, int argc, char **argv, const char *clock_json,
                      const int *cpus_used, int ncpus_used);
int online_cpus(int *out, int max);
void new_run_id(char out[37]);
void now_utc(char out[21]);

/* experiments.c */
struct settings {
    int quick;
    int samples;
    double target_sample_ms;
    int max_yield;
    int max_ring;
};
void run_primitives(struct experiment *e, const struct settings *s);
void run_lockring(struct experiment *e, const struct settings *s);
void run_split(struct experiment *e, const struct settings *s);
void say(const char *fmt, ...);
/* Per-thread context switch counts, summed over `tids`; -1 when the system does not say. */
long long switches_of(const unsigned long *tids, int n);

#endif
