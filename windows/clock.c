/* The clock: the TSC, read with lfence so earlier work has finished, its rate calibrated
 * against QueryPerformanceCounter over two windows whose disagreement is recorded, as oscost
 * calibrates against the kernel's clock on Linux. */
#include "agent.h"

#include <cpuid.h>
#include <math.h>
#include <windows.h>
#include <x86intrin.h>

double tsc_hz;

uint64_t ticks(void)
{
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

double ticks_to_ns(double t) { return t * 1e9 / tsc_hz; }

/* TSC ticks per second over one window of `ms` milliseconds of the performance counter. */
static double window(double ms, LARGE_INTEGER qpf)
{
    LARGE_INTEGER a, b;
    QueryPerformanceCounter(&a);
    uint64_t t0 = ticks();
    LONGLONG want = (LONGLONG)(ms / 1000.0 * (double)qpf.QuadPart);
    do
        QueryPerformanceCounter(&b);
    while (b.QuadPart - a.QuadPart < want);
    uint64_t t1 = ticks();
    return (double)(t1 - t0) / ((double)(b.QuadPart - a.QuadPart) / (double)qpf.QuadPart);
}

void calibrate_clock(int quick, struct buf *clock_json, int *invariant)
{
    LARGE_INTEGER qpf;
    QueryPerformanceFrequency(&qpf);
    double ms = quick ? 50 : 200;
    double f1 = window(ms, qpf), f2 = window(ms, qpf);
    tsc_hz = (f1 + f2) / 2;
    double spread_ppm = fabs(f1 - f2) / tsc_hz * 1e6;
    unsigned a, b, c, d;
    *invariant = __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
    bprintf(clock_json,
            "{\n      \"counter\": \"tsc\",\n      \"tick_unit\": \"ref-cycles\",\n"
            "      \"frequency_hz\": ");
    bjson_num(clock_json, tsc_hz);
    bprintf(clock_json, ",\n      \"frequency_source\": ");
    char src[200];
    snprintf(src, sizeof src,
             "calibrated against QueryPerformanceCounter (%lld Hz) over two %.0f ms windows",
             (long long)qpf.QuadPart, ms);
    bjson_str(clock_json, src);
    bprintf(clock_json, ",\n      \"calibration_spread_ppm\": ");
    bjson_num(clock_json, spread_ppm);
    bprintf(clock_json,
            ",\n      \"kernel_stated_hz\": null,\n      \"invariant\": %s,\n"
            "      \"fallback_reason\": null\n    }",
            *invariant ? "true" : "false");
}
