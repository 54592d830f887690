/* The result document: oscost/2, summarised here as oscost summarises, written atomically (a
 * temporary file moved over the target) so a stopped run leaves no half-written file. */
#include "agent.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

void bprintf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->len + (size_t)need + 1 > b->cap) {
        size_t cap = (b->cap + (size_t)need + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p)
            fail("out of memory building the document");
        b->p = p;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)need + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)need;
}

void bjson_str(struct buf *b, const char *s)
{
    bprintf(b, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            bprintf(b, "\\%c", *c);
        else if (*c < 0x20)
            bprintf(b, "\\u%04x", *c);
        else
            bprintf(b, "%c", *c);
    }
    bprintf(b, "\"");
}

void bjson_num(struct buf *b, double v)
{
    if (!isfinite(v))
        fail("internal error: a non-finite figure would be written; nothing was written");
    if (v == floor(v) && fabs(v) < 1e15)
        bprintf(b, "%.1f", v);
    else
        bprintf(b, "%.17g", v);
}

struct case_result *add_case(struct experiment *e, const char *id, const char *unit)
{
    if (e->ncases == e->capcases) {
        e->capcases = e->capcases ? e->capcases * 2 : 16;
        e->cases = realloc(e->cases, e->capcases * sizeof *e->cases);
        if (!e->cases)
            fail("out of memory");
    }
    struct case_result *c = &e->cases[e->ncases++];
    memset(c, 0, sizeof *c);
    snprintf(c->id, sizeof c->id, "%s", id);
    snprintf(c->unit, sizeof c->unit, "%s", unit);
    return c;
}

void add_counter(struct case_result *c, const char *name, double v)
{
    if (c->ncounters < (int)(sizeof c->counters / sizeof c->counters[0]) && isfinite(v)) {
        snprintf(c->counters[c->ncounters].name, 64, "%s", name);
        c->counters[c->ncounters++].value = v;
    }
}

struct derived *add_derived(struct experiment *e)
{
    if (e->nderived == e->capderived) {
        e->capderived = e->capderived ? e->capderived * 2 : 16;
        e->derived = realloc(e->derived, e->capderived * sizeof *e->derived);
        if (!e->derived)
            fail("out of memory");
    }
    struct derived *d = &e->derived[e->nderived++];
    memset(d, 0, sizeof *d);
    return d;
}

static void num_pair(struct buf *b, const double v[2])
{
    bprintf(b, "[");
    bjson_num(b, v[0]);
    bprintf(b, ", ");
    bjson_num(b, v[1]);
    bprintf(b, "]");
}

static void case_json(struct buf *b, const struct case_result *c)
{
    struct summary s, t;
    if (summarise(c->ns, c->n, &s) || summarise(c->ticks, c->n, &t))
        fail("internal error: case %s has no finite samples; nothing was written", c->id);
    bprintf(b, "        {\n          \"id\": ");
    bjson_str(b, c->id);
    bprintf(b, ",\n          \"description\": ");
    bjson_str(b, c->description);
    bprintf(b, ",\n          \"unit\": ");
    bjson_str(b, c->unit);
    bprintf(b, ",\n          \"params\": {%s},\n", c->params.p ? c->params.p : "");
    bprintf(b, "          \"samples\": %zu,\n          \"iterations_per_sample\": %llu,\n", c->n,
            (unsigned long long)c->iterations);
    const struct {
        const char *k;
        double v;
    } f[] = {{"loop_overhead_ns", c->loop_overhead_ns},
             {"median_ns", s.median},
             {"mad_ns", s.mad},
             {"min_ns", s.min},
             {"max_ns", s.max},
             {"mean_ns", s.mean},
             {"stddev_ns", s.stddev},
             {"p5_ns", s.p5},
             {"p95_ns", s.p95}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        bprintf(b, "          \"%s\": ", f[i].k);
        bjson_num(b, f[i].v);
        bprintf(b, ",\n");
    }
    bprintf(b, "          \"ci95_ns\": ");
    num_pair(b, s.ci);
    bprintf(b, ",\n          \"median_cycles\": ");
    bjson_num(b, t.median);
    bprintf(b, ",\n          \"ci95_cycles\": ");
    num_pair(b, t.ci);
    bprintf(b,
            ",\n          \"outliers\": {\"low_severe\": %zu, \"low_mild\": %zu, \"high_mild\": %zu, "
            "\"high_severe\": %zu},\n",
            s.outliers[0], s.outliers[1], s.outliers[2], s.outliers[3]);
    bprintf(b, "          \"noisy\": %s,\n          \"checks\": [", s.noisy ? "true" : "false");
    int all = 1;
    for (int i = 0; i < c->nchecks; i++) {
        const struct check *k = &c->checks[i];
        all &= k->passed;
        bprintf(b, "%s\n            {\"name\": ", i ? "," : "");
        bjson_str(b, k->name);
        bprintf(b, ", \"expected\": ");
        bjson_num(b, k->expected);
        bprintf(b, ", \"counted\": ");
        bjson_num(b, k->counted);
        bprintf(b, ", \"passed\": %s, \"detail\": ", k->passed ? "true" : "false");
        bjson_str(b, k->detail);
        bprintf(b, "}");
    }
    bprintf(b, "],\n          \"checks_passed\": %s,\n          \"counters\": {", all ? "true" : "false");
    for (int i = 0; i < c->ncounters; i++) {
        bprintf(b, "%s", i ? ", " : "");
        bjson_str(b, c->counters[i].name);
        bprintf(b, ": ");
        bjson_num(b, c->counters[i].value);
    }
    bprintf(b, "},\n          \"at_rate\": null,\n          \"warnings\": [");
    for (int i = 0; i < c->nwarnings; i++) {
        bprintf(b, "%s", i ? ", " : "");
        bjson_str(b, c->warnings[i]);
    }
    bprintf(b, "],\n          \"series\": [],\n          \"raw_ns\": [");
    for (size_t i = 0; i < c->n; i++) {
        bprintf(b, "%s", i ? ", " : "");
        bjson_num(b, c->ns[i]);
    }
    bprintf(b, "]\n        }");
}

static const struct case_result *find_case(const struct experiment *e, const char *id)
{
    for (size_t i = 0; i < e->ncases; i++)
        if (!strcmp(e->cases[i].id, id))
            return &e->cases[i];
    return NULL;
}

static void experiment_json(struct buf *b, const struct experiment *e)
{
    bprintf(b, "    {\n      \"name\": ");
    bjson_str(b, e->name);
    bprintf(b, ",\n      \"params\": {%s},\n      \"cases\": [\n", e->params.p ? e->params.p : "");
    for (size_t i = 0; i < e->ncases; i++) {
        case_json(b, &e->cases[i]);
        bprintf(b, "%s\n", i + 1 < e->ncases ? "," : "");
    }
    bprintf(b, "      ],\n      \"unavailable\": [");
    for (int i = 0; i < e->nunavail; i++) {
        bprintf(b, "%s\n        {\"id\": ", i ? "," : "");
        bjson_str(b, e->unavail[i].id);
        bprintf(b, ", \"description\": ");
        bjson_str(b, e->unavail[i].description);
        bprintf(b, ", \"reason\": ");
        bjson_str(b, e->unavail[i].reason);
        bprintf(b, "}");
    }
    bprintf(b, "],\n      \"derived\": [");
    for (size_t i = 0; i < e->nderived; i++) {
        const struct derived *d = &e->derived[i];
        const struct case_result *a = find_case(e, d->a), *c = find_case(e, d->b);
        if (!a || !c)
            fail("internal error: derived %s names a case not measured", d->id);
        double est, ci[2];
        bootstrap_combination(a->ns, a->n, d->ca, c->ns, c->n, d->cb, &est, ci);
        double tpn = tsc_hz / 1e9;
        bprintf(b, "%s\n        {\"id\": ", i ? "," : "");
        bjson_str(b, d->id);
        bprintf(b, ", \"description\": ");
        bjson_str(b, d->description);
        bprintf(b, ", \"terms\": [[");
        bjson_str(b, d->a);
        bprintf(b, ", ");
        bjson_num(b, d->ca);
        bprintf(b, "], [");
        bjson_str(b, d->b);
        bprintf(b, ", ");
        bjson_num(b, d->cb);
        bprintf(b, "]], \"estimate_ns\": ");
        bjson_num(b, est);
        bprintf(b, ", \"ci95_ns\": ");
        num_pair(b, ci);
        bprintf(b, ", \"estimate_cycles\": ");
        bjson_num(b, est * tpn);
        bprintf(b, ", \"flagged\": ");
        if (d->flagged[0])
            bjson_str(b, d->flagged);
        else
            bprintf(b, "null");
        bprintf(b, "}");
    }
    bprintf(b, "],\n      \"warnings\": [");
    for (int i = 0; i < e->nwarnings; i++) {
        bprintf(b, "%s", i ? ", " : "");
        bjson_str(b, e->warnings[i]);
    }
    bprintf(b, "],\n      \"load\": null\n    }");
}

int write_document(const char *path, struct experiment **exps, int nexp, const char *env_json,
                   const char *run_id, const char *started_at)
{
    struct buf b = {0};
    bprintf(&b, "{\n  \"schema\": \"oscost/2\",\n  \"run_id\": \"%s\",\n  \"started_at\": \"%s\",\n",
            run_id, started_at);
    bprintf(&b, "  \"environment\": %s,\n  \"experiments\": [\n", env_json);
    for (int i = 0; i < nexp; i++) {
        experiment_json(&b, exps[i]);
        bprintf(&b, "%s\n", i + 1 < nexp ? "," : "");
    }
    bprintf(&b, "  ]\n}\n");
    char tmp[MAX_PATH + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp-%lu", path, (unsigned long)GetCurrentProcessId());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(b.p, 1, b.len, f);
    int closed = fclose(f);
    if (w != b.len || closed != 0 || !MoveFileExA(tmp, path, MOVEFILE_REPLACE_EXISTING)) {
        DeleteFileA(tmp);
        return -1;
    }
    free(b.p);
    return 0;
}
