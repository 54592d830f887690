/* Statistics of the agent: the same definitions as oscost's `stats` crate (linear-interpolation
 * percentiles, unscaled MAD, Tukey fences on the same quartiles, a percentile bootstrap of the
 * median with 2000 resamples that always contains the median), so a Windows figure means what a
 * Linux one does. The resampling stream differs (splitmix64 here), so intervals agree in
 * meaning, not to the last digit. */
#include "agent.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void sort_doubles(double *v, size_t n) { qsort(v, n, sizeof *v, cmp_double); }

double percentile_sorted(const double *s, size_t n, double p)
{
    if (n == 0)
        return NAN;
    if (p < 0)
        p = 0;
    if (p > 100)
        p = 100;
    double rank = (double)(n - 1) * (p / 100.0);
    size_t lo = (size_t)floor(rank);
    double frac = rank - (double)lo;
    if (frac == 0.0 || lo + 1 >= n)
        return s[lo < n ? lo : n - 1];
    return s[lo] + frac * (s[lo + 1] - s[lo]);
}

double median_sorted(const double *s, size_t n)
{
    if (n == 0)
        return NAN;
    return n % 2 ? s[n / 2] : 0.5 * s[n / 2 - 1] + 0.5 * s[n / 2];
}

double median_of(const double *v, size_t n)
{
    if (n == 0)
        return NAN;
    double *c = xmalloc(n * sizeof *c);
    memcpy(c, v, n * sizeof *c);
    sort_doubles(c, n);
    double m = median_sorted(c, n);
    free(c);
    return m;
}

uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A percentile interval of replicates, widened to contain the point estimate. */
static void interval(double *reps, size_t r, double point, double ci[2])
{
    sort_doubles(reps, r);
    ci[0] = percentile_sorted(reps, r, 2.5);
    ci[1] = percentile_sorted(reps, r, 97.5);
    if (ci[0] > point)
        ci[0] = point;
    if (ci[1] < point)
        ci[1] = point;
}

/* One resample of `v` with replacement into `buf`; its median. */
static double resampled_median(const double *v, size_t n, double *buf, uint64_t *rng)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = v[splitmix64(rng) % n];
    sort_doubles(buf, n);
    return median_sorted(buf, n);
}

void bootstrap_median_ci(const double *v, size_t n, double ci[2])
{
    double point = median_of(v, n);
    ci[0] = ci[1] = point;
    if (n < 2)
        return;
    uint64_t rng = SEED;
    double *buf = xmalloc(n * sizeof *buf), *reps = xmalloc(RESAMPLES * sizeof *reps);
    for (size_t k = 0; k < RESAMPLES; k++)
        reps[k] = resampled_median(v, n, buf, &rng);
    interval(reps, RESAMPLES, point, ci);
    free(buf);
    free(reps);
}

void bootstrap_combination(const double *a, size_t na, double ca, const double *b, size_t nb,
                           double cb, double *estimate, double ci[2])
{
    *estimate = ca * median_of(a, na) + cb * median_of(b, nb);
    uint64_t rng = SEED;
    size_t nmax = na > nb ? na : nb;
    double *buf = xmalloc((nmax ? nmax : 1) * sizeof *buf), *reps = xmalloc(RESAMPLES * sizeof *reps);
    for (size_t k = 0; k < RESAMPLES; k++)
        reps[k] = ca * resampled_median(a, na, buf, &rng) + cb * resampled_median(b, nb, buf, &rng);
    interval(reps, RESAMPLES, *estimate, ci);
    free(buf);
    free(reps);
}

int summarise(const double *v, size_t n, struct summary *s)
{
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return -1;
    double *c = xmalloc(n * sizeof *c);
    memcpy(c, v, n * sizeof *c);
    sort_doubles(c, n);
    s->n = n;
    s->median = median_sorted(c, n);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += c[i];
    s->mean = sum / (double)n;
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (c[i] - s->mean) * (c[i] - s->mean);
    s->stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    double *dev = xmalloc(n * sizeof *dev);
    for (size_t i = 0; i < n; i++)
        dev[i] = fabs(c[i] - s->median);
    s->mad = median_of(dev, n);
    free(dev);
    s->min = c[0];
    s->max = c[n - 1];
    s->p5 = percentile_sorted(c, n, 5);
    s->p95 = percentile_sorted(c, n, 95);
    double q1 = percentile_sorted(c, n, 25), q3 = percentile_sorted(c, n, 75), iqr = q3 - q1;
    memset(s->outliers, 0, sizeof s->outliers);
    for (size_t i = 0; i < n; i++) {
        if (c[i] < q1 - 3 * iqr)
            s->outliers[0]++;
        else if (c[i] < q1 - 1.5 * iqr)
            s->outliers[1]++;
        else if (c[i] > q3 + 3 * iqr)
            s->outliers[3]++;
        else if (c[i] > q3 + 1.5 * iqr)
            s->outliers[2]++;
    }
    bootstrap_median_ci(v, n, s->ci);
    s->noisy = (s->ci[1] - s->ci[0]) / 2 > NOISY_REL_HALF_WIDTH * fabs(s->median);
    free(c);
    return 0;
}

/* Known data with known answers; run by `--self-test` and by CI. */
int stats_self_test(void)
{
    int bad = 0;
#define EXPECT(cond)                                                                              \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "self-test failed: %s (line %d)\n", #cond, __LINE__);                 \
            bad++;                                                                                \
        }                                                                                         \
    } while (0)
    double odd[] = {5, 1, 3, 2, 4};
    double even[] = {4, 1, 3, 2};
    EXPECT(median_of(odd, 5) == 3);
    EXPECT(median_of(even, 4) == 2.5);
    double s10[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    EXPECT(fabs(percentile_sorted(s10, 10, 5) - 1.45) < 1e-12);
    EXPECT(fabs(percentile_sorted(s10, 10, 95) - 9.55) < 1e-12);
    struct summary s;
    double withfar[] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 1000};
    EXPECT(summarise(withfar, 10, &s) == 0);
    EXPECT(s.median == 14.5);
    EXPECT(s.mad == 2.5);
    EXPECT(s.outliers[3] == 1 && s.outliers[0] + s.outliers[1] + s.outliers[2] == 0);
    EXPECT(s.ci[0] <= s.median && s.median <= s.ci[1]);
    EXPECT(s.ci[1] < 1000 && s.ci[0] >= 10);
    EXPECT(s.min == 10 && s.max == 1000);
    double same[] = {7, 7, 7, 7, 7, 7, 7};
    EXPECT(summarise(same, 7, &s) == 0);
    EXPECT(s.ci[0] == 7 && s.ci[1] == 7 && !s.noisy && s.stddev == 0);
    double one[] = {3};
    EXPECT(summarise(one, 1, &s) == 0 && s.ci[0] == 3 && s.ci[1] == 3);
    double bad_v[] = {1, NAN};
    EXPECT(summarise(bad_v, 2, &s) == -1);
    double est, ci[2];
    double a[] = {10, 10, 10, 10}, b[] = {3, 3, 3, 3};
    bootstrap_combination(a, 4, 1.0, b, 4, -1.0, &est, ci);
    EXPECT(est == 7 && ci[0] == 7 && ci[1] == 7);
    /* A wide spread is noisy, a narrow one is not. */
    double wide[] = {1, 50, 100, 150, 200}, narrow[] = {100, 100.1, 100.2, 99.9, 99.8};
    summarise(wide, 5, &s);
    EXPECT(s.noisy);
    summarise(narrow, 5, &s);
    EXPECT(!s.noisy);
#undef EXPECT
    return bad;
}
