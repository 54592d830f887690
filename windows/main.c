/* oscost-agent.exe: measures on Windows what two published studies measured there, and writes
 * the result as an oscost/2 document that oscost reads like one of its own runs. */
#include "agent.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

static const char *usage =
    "Usage: oscost-agent [--quick] [--out FILE] [--max-yield N] [--max-ring N] [--self-test]\n"
    "\n"
    "Measures on Windows, as oscost measures on Linux:\n"
    "  primitives  a Win32 Mutex, Semaphore, Critical Section and SRWLock, uncontended\n"
    "              (Bradford, \"Runtime: Context switching\", 2002, Table 1)\n"
    "  lockring    two threads passing a token through two pipes (cspipe2a), and N threads\n"
    "              in a ring of Critical Sections with one free (csfast5), N = 2 ... 128\n"
    "  split       the same work shared by N threads that Sleep(0) after each step,\n"
    "              N = 1 ... 8192, on one CPU and on two (the Windows yield study)\n"
    "and writes an oscost/2 result document; bring it back to oscost with\n"
    "`oscost history import FILE`, `oscost compare published:windows-xp-2002 FILE`,\n"
    "`oscost report FILE`.\n"
    "\n"
    "Options:\n"
    "  --quick         smaller sizes: 9 samples (3 whole runs per yield point), 1 ms windows,\n                  the yield sweep to N = 1024 with 8192 work units\n"
    "  --out FILE      where to write the document (default oscost-windows.json)\n"
    "  --max-yield N   largest N of the yield sweep, a power of two (default 8192; quick 1024)\n"
    "  --max-ring N    largest ring, a power of two from 2 (default 128)\n"
    "  --self-test     check the statistics on known data and exit\n";

static int power_of_two_arg(const char *opt, const char *v, int lo, int hi)
{
    char *end;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || n < lo || n > hi || (n & (n - 1)))
        fail("%s needs a power of two from %d to %d, got `%s`: e.g. %s %d", opt, lo, hi,
             v ? v : "nothing", opt, lo * 4 <= hi ? lo * 4 : lo);
    return (int)n;
}

int main(int argc, char **argv)
{
    struct settings s = {.quick = 0, .samples = 31, .target_sample_ms = 5, .max_yield = 0,
                         .max_ring = 128};
    const char *out = "oscost-windows.json";
    int self_test = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--quick"))
            s.quick = 1;
        else if (!strcmp(a, "--self-test"))
            self_test = 1;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--out")) {
            if (i + 1 >= argc || !argv[i + 1][0])
                fail("--out needs a file name: e.g. --out windows.json");
            out = argv[++i];
        } else if (!strcmp(a, "--max-yield"))
            s.max_yield = power_of_two_arg(a, i + 1 < argc ? argv[++i] : NULL, 2, 8192);
        else if (!strcmp(a, "--max-ring"))
            s.max_ring = power_of_two_arg(a, i + 1 < argc ? argv[++i] : NULL, 2, 4096);
        else
            fail("unknown argument `%s`: see oscost-agent --help", a);
    }
    if (self_test) {
        int bad = stats_self_test();
        printf("self-test: %s\n", bad ? "FAILED" : "statistics agree with known answers");
        return bad ? 1 : 0;
    }
    if (s.quick) {
        s.samples = 9;
        s.target_sample_ms = 1;
    }
    if (!s.max_yield)
        s.max_yield = s.quick ? 1024 : 8192;
    /* Refuse an unwritable target before minutes of measuring, and leave nothing behind. */
    char probe[MAX_PATH + 32];
    snprintf(probe, sizeof probe, "%s.tmp-%lu", out, (unsigned long)GetCurrentProcessId());
    FILE *f = fopen(probe, "wb");
    if (!f)
        fail("cannot write next to `%s`: choose a writable place with --out", out);
    fclose(f);
    DeleteFileA(probe);

    detect_system();
    char run_id[37], started[21];
    new_run_id(run_id);
    now_utc(started);
    if (wine_version)
        say("oscost Windows agent " AGENT_VERSION " running under Wine %s on %s: the figures "
            "are Wine's on its host system, not Windows'",
            wine_version, wine_host);
    else
        say("oscost Windows agent " AGENT_VERSION " on Windows %u.%u build %u", win_major,
            win_minor, win_build);
    struct buf clock = {0};
    int invariant;
    calibrate_clock(s.quick, &clock, &invariant);
    say("clock: TSC at %.3f MHz%s", tsc_hz / 1e6, invariant ? " (invariant)" : " (not invariant)");

    struct experiment prim = {0}, ring = {0}, split = {0};
    struct experiment *exps[] = {&prim, &ring, &split};
    run_primitives(&prim, &s);
    run_lockring(&ring, &s);
    run_split(&split, &s);

    int cpus[64], n = online_cpus(cpus, 64);
    int used = n >= 2 ? 2 : 1;
    struct buf env = {0};
    environment_json(&env, argc, argv, clock.p, cpus, used);
    if (write_document(out, exps, 3, env.p, run_id, started))
        fail("could not write `%s` (error %lu): nothing was written; check the place and the "
             "free space",
             out, GetLastError());
    size_t cases = prim.ncases + ring.ncases + split.ncases;
    int unavailable = prim.nunavail + ring.nunavail + split.nunavail;
    printf("oscost-agent: %zu cases, %d unavailable, written to %s%s\n", cases, unavailable, out,
           wine_version ? " (run under Wine: Wine's figures, not Windows')" : "");
    return 0;
}
