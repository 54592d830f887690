/* The machine as Windows reports it, in oscost's environment layout: the Linux-only fields are
 * left null or empty (never guessed), and `os` says which system ran the agent, and whether it
 * was Wine, whose figures are those of Wine on its host system, not of Windows. */
#include "agent.h"

#include <windows.h>

#include <bcrypt.h>
#include <cpuid.h>
#include <string.h>

const char *wine_version;
char wine_host[128];
unsigned win_major, win_minor, win_build;
static LARGE_INTEGER qpf;

void detect_system(void)
{
    HMODULE nt = GetModuleHandleA("ntdll.dll");
    typedef LONG(WINAPI * rtl_get_version)(OSVERSIONINFOW *);
    typedef const char *(CDECL * wine_get_version_fn)(void);
    typedef void(CDECL * wine_get_host_version_fn)(const char **, const char **);
    rtl_get_version rgv = nt ? (rtl_get_version)(void *)GetProcAddress(nt, "RtlGetVersion") : NULL;
    OSVERSIONINFOW v = {.dwOSVersionInfoSize = sizeof v};
    if (rgv && rgv(&v) == 0) {
        win_major = v.dwMajorVersion;
        win_minor = v.dwMinorVersion;
        win_build = v.dwBuildNumber;
    }
    /* Wine exports these from its ntdll; Windows does not. */
    wine_get_version_fn wgv =
        nt ? (wine_get_version_fn)(void *)GetProcAddress(nt, "wine_get_version") : NULL;
    wine_get_host_version_fn wgh =
        nt ? (wine_get_host_version_fn)(void *)GetProcAddress(nt, "wine_get_host_version") : NULL;
    if (wgv)
        wine_version = wgv();
    if (wgh) {
        const char *sys = NULL, *rel = NULL;
        wgh(&sys, &rel);
        snprintf(wine_host, sizeof wine_host, "%s %s", sys ? sys : "?", rel ? rel : "?");
    }
    QueryPerformanceFrequency(&qpf);
}

int online_cpus(int *out, int max)
{
    DWORD_PTR proc, sys;
    int n = 0;
    if (!GetProcessAffinityMask(GetCurrentProcess(), &proc, &sys))
        return 0;
    for (int i = 0; i < 64 && n < max; i++)
        if (sys & ((DWORD_PTR)1 << i))
            out[n++] = i;
    return n;
}

static void cpu_brand(char out[49])
{
    unsigned r[12] = {0};
    out[0] = 0;
    for (unsigned i = 0; i < 3; i++)
        if (!__get_cpuid(0x80000002 + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]))
            return;
    memcpy(out, r, 48);
    out[48] = 0;
    char *s = out;
    while (*s == ' ')
        s++;
    memmove(out, s, strlen(s) + 1);
}

static void list_json(struct buf *b, const int *v, int n)
{
    bprintf(b, "[");
    for (int i = 0; i < n; i++)
        bprintf(b, "%s%d", i ? ", " : "", v[i]);
    bprintf(b, "]");
}

static void str_or_null(struct buf *b, const char *s)
{
    if (s && *s)
        bjson_str(b, s);
    else
        bprintf(b, "null");
}

void environment_json(struct buf *b, int argc, char **argv, const char *clock_json,
                      const int *cpus_used, int ncpus_used)
{
    char brand[49], vendor[13] = {0}, sig[64] = "", hv[13] = {0};
    unsigned a, bx, c, d;
    cpu_brand(brand);
    int hypervisor = -1;
    if (__get_cpuid(0, &a, &bx, &c, &d)) {
        memcpy(vendor, &bx, 4);
        memcpy(vendor + 4, &d, 4);
        memcpy(vendor + 8, &c, 4);
    }
    if (__get_cpuid(1, &a, &bx, &c, &d)) {
        unsigned fam = (a >> 8) & 0xf, model = (a >> 4) & 0xf, step = a & 0xf;
        if (fam == 0xf)
            fam += (a >> 20) & 0xff;
        if (fam == 6 || fam >= 0xf)
            model |= ((a >> 16) & 0xf) << 4;
        snprintf(sig, sizeof sig, "family %u model %u stepping %u", fam, model, step);
        hypervisor = (c >> 31) & 1;
    }
    if (hypervisor == 1) {
        __cpuid(0x40000000, a, bx, c, d);
        memcpy(hv, &bx, 4);
        memcpy(hv + 4, &c, 4);
        memcpy(hv + 8, &d, 4);
    }
    int online[64];
    int nonline = online_cpus(online, 64);
    int aff[64], naff = 0;
    DWORD_PTR proc, sys;
    if (GetProcessAffinityMask(GetCurrentProcess(), &proc, &sys))
        for (int i = 0; i < 64; i++)
            if (proc & ((DWORD_PTR)1 << i))
                aff[naff++] = i;
    char release[64];
    snprintf(release, sizeof release, "%u.%u.%u", win_major, win_minor, win_build);

    bprintf(b, "{\n    \"oscost_version\": \"windows-agent " AGENT_VERSION "\",\n");
    bprintf(b, "    \"git_commit\": null,\n    \"rustc_version\": null,\n    \"command_line\": [");
    for (int i = 0; i < argc; i++) {
        /* The program by its name: where it was unpacked says nothing of the run. */
        const char *a = argv[i];
        if (i == 0) {
            const char *slash = strrchr(a, '\\'), *fwd = strrchr(a, '/');
            if (fwd > slash)
                slash = fwd;
            if (slash)
                a = slash + 1;
        }
        bprintf(b, "%s", i ? ", " : "");
        bjson_str(b, a);
    }
    bprintf(b, "],\n    \"nice\": null,\n    \"kernel_release\": ");
    bjson_str(b, release);
    bprintf(b, ",\n    \"kernel_version\": null,\n    \"proc_version\": null,\n"
               "    \"kernel_cmdline\": null,\n    \"boot_params\": {},\n"
               "    \"arch\": \"x86_64\",\n    \"machine\": \"AMD64\",\n"
               "    \"glibc_version\": null,\n    \"kernel_config\": null,\n    \"cpu_model\": ");
    str_or_null(b, brand);
    bprintf(b, ",\n    \"cpu_vendor\": ");
    str_or_null(b, vendor);
    bprintf(b, ",\n    \"cpu_signature\": ");
    str_or_null(b, sig);
    bprintf(b, ",\n    \"microcode\": null,\n    \"cpus_online\": ");
    list_json(b, online, nonline);
    bprintf(b, ",\n    \"cpus_used\": ");
    list_json(b, cpus_used, ncpus_used);
    bprintf(b, ",\n    \"smt\": {\"active\": null, \"control\": null, \"cpu0_siblings\": null},\n"
               "    \"cpu_flags\": null,\n    \"clock\": %s,\n"
               "    \"clocksource_current\": null,\n    \"clocksource_available\": null,\n"
               "    \"virtualisation\": {\"hypervisor_flag\": ",
            clock_json);
    bprintf(b, "%s", hypervisor < 0 ? "null" : hypervisor ? "true" : "false");
    bprintf(b, ", \"cpuid_signature\": ");
    str_or_null(b, hv);
    bprintf(b, ", \"sys_hypervisor_type\": null, \"dmi_sys_vendor\": null, "
               "\"dmi_product_name\": null},\n");
    /* Windows has no numeric user ids: 4294967295 is the "no id" value, never root. */
    bprintf(b, "    \"security\": {\"vulnerabilities\": null, \"cmdline_mitigations\": null, "
               "\"cmdline_pti\": null, \"perf_event_paranoid\": null, \"uid\": 4294967295, "
               "\"euid\": 4294967295},\n");
    bprintf(b, "    \"power\": {\"cpufreq_driver\": null, \"cpufreq_governor\": null, "
               "\"cpufreq_cur_khz\": null, \"boost\": null, \"boost_source\": null, "
               "\"cpuidle_driver\": null, \"cpuidle_governor\": null, \"idle_states\": null, "
               "\"cpu_dma_latency_us\": null},\n");
    bprintf(b, "    \"scheduler\": {\"tick\": null, \"preempt_model\": null, "
               "\"preempt_boot_param\": null, \"sched_rr_timeslice_ms\": null, "
               "\"sched_rt_period_us\": null, \"sched_rt_runtime_us\": null, "
               "\"sched_autogroup_enabled\": null, \"autogroup\": null, \"isolated_cpus\": null, "
               "\"nohz_full_cpus\": null},\n");
    bprintf(b, "    \"thp_enabled\": null,\n    \"thp_defrag\": null,\n    \"affinity\": ");
    list_json(b, aff, naff);
    bprintf(b, ",\n    \"process_nice\": null,\n    \"load\": null,\n    \"os\": {\n"
               "      \"family\": \"windows\",\n      \"version\": ");
    char ver[32];
    snprintf(ver, sizeof ver, "%u.%u", win_major, win_minor);
    bjson_str(b, ver);
    bprintf(b, ",\n      \"build\": %u,\n      \"counter_hz\": ", win_build);
    bjson_num(b, (double)qpf.QuadPart);
    bprintf(b, ",\n      \"wine\": ");
    str_or_null(b, wine_version);
    bprintf(b, ",\n      \"wine_host\": ");
    str_or_null(b, wine_version ? wine_host : NULL);
    bprintf(b, "\n    }\n  }");
}

void new_run_id(char out[37])
{
    unsigned char r[16];
    if (BCryptGenRandom(NULL, r, sizeof r, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0)
        fail("the system's random generator failed, so the run has no id; nothing was written");
    r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
    r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
    snprintf(out, 37,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1],
             r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14],
             r[15]);
}

void now_utc(char out[21])
{
    SYSTEMTIME t;
    GetSystemTime(&t);
    snprintf(out, 21, "%04u-%02u-%02uT%02u:%02u:%02uZ", t.wYear, t.wMonth, t.wDay, t.wHour,
             t.wMinute, t.wSecond);
}
