# shellcheck shell=bash disable=SC2034  # the variables it sets are read by the scripts that source it
# Shared by the scripts that hold oscost's figures against the C reference in benches/ or perf's
# tracing (the acceptance scripts, *-vs-*.sh): sourced, not run. Provides die, last_cpu,
# busy_start and busy_stop, the checks of CPU/ROUNDS/QUICK, the JSON reader, the two builds (build_both, build_oscost),
# perf_setup, c_median, median_of and oscost_medians. Expects to be sourced from the repository
# root.

die() {
    echo "error: $*" >&2
    exit 2
}

# The last CPU of this process's affinity list ("0-3,8-11" -> 11): on a small machine CPU 0
# takes most interrupts and housekeeping, so the last one is usually the quieter.
last_cpu() {
    local list
    list=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status)
    [[ -n "$list" ]] || die "cannot read Cpus_allowed_list from /proc/self/status"
    echo "${list##*[,-]}"
}

# A busy loop pinned to CPU $1 (another program holding that CPU, not the OS), its pid in
# $busy; busy_stop ends it and is safe to call twice (from a cleanup trap as well).
busy=
busy_start() {
    taskset -c "$1" sh -c 'while :; do :; done' &
    busy=$!
}
busy_stop() {
    [[ -n "$busy" ]] || return 0
    kill "$busy" 2>/dev/null || true
    wait "$busy" 2>/dev/null || true
    busy=
}

# Sets cpu, rounds, quick, quick_oscost and quick_c from the first argument and the CPU,
# ROUNDS and QUICK variables; checks them and the tools, picks json_reader (jq, else
# python3), and makes $tmp, removed on exit.
side_by_side_setup() {
    cpu="${1:-${CPU:-$(last_cpu)}}"
    rounds="${ROUNDS:-5}"
    quick="${QUICK:-0}"
    [[ "$cpu" =~ ^[0-9]+$ ]] || die "CPU must be a CPU number, got '$cpu'"
    [[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, got '$rounds'"
    if [[ "$quick" == 0 || -z "$quick" ]]; then
        quick=0 quick_oscost=() quick_c=()
    else
        quick=1 quick_oscost=(--quick) quick_c=(-q)
    fi
    local tool
    for tool in cc taskset awk sort; do
        command -v "$tool" >/dev/null 2>&1 || die "'$tool' is required but not found"
    done
    [[ -n "${OSCOST_BIN:-}" ]] || command -v cargo >/dev/null 2>&1 ||
        die "'cargo' is required but not found (or set OSCOST_BIN)"
    if command -v jq >/dev/null 2>&1; then
        json_reader=jq
    elif command -v python3 >/dev/null 2>&1; then
        json_reader=python3
    else
        die "needs jq or python3 to read oscost's JSON"
    fi
    taskset -c "$cpu" true 2>/dev/null || die "cannot pin to CPU $cpu (not online or not allowed)"
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
}

# Builds the C reference into $tmp/fdcalls_ref and oscost (or takes $OSCOST_BIN); sets bin.
# -fno-plt: call libc through the GOT as the Rust binary does. A default build jumps through a
# PLT stub on every library call, about 0.4 ns each: a quarter of a pthread mutex's cost.
# -pthread: the C program starts its idle thread (-t) with pthread_create.
build_both() {
    echo "building benches/fdcalls_ref.c and oscost (release)..." >&2
    cc -O2 -fno-plt -pthread -o "$tmp/fdcalls_ref" benches/fdcalls_ref.c ||
        die "cc failed on benches/fdcalls_ref.c"
    build_oscost
}

# Builds oscost (release), or takes $OSCOST_BIN; sets bin.
build_oscost() {
    if [[ -n "${OSCOST_BIN:-}" ]]; then
        bin="$OSCOST_BIN"
    else
        cargo build --release -q || die "cargo build --release failed"
        bin="${CARGO_TARGET_DIR:-target}/release/oscost"
    fi
    [[ -x "$bin" ]] || die "$bin not found or not executable"
}

# For the scripts that run perf: dies without it, and on exit unmounts the tracefs perf leaves
# behind (perf mounts one to resolve a tracepoint's name when it finds none) and removes $tmp,
# so the machine is left as it was. Call after side_by_side_setup, whose trap this replaces.
perf_setup() {
    command -v perf >/dev/null || die "perf not found (Debian: apt-get install linux-perf)"
    tracefs_before=$(awk '$3 == "tracefs"' /proc/self/mounts)
    trap 'restore_tracefs; rm -rf "$tmp"' EXIT
}

# Unmounts every tracefs when none was mounted at perf_setup. A perf that just exited can
# keep it busy for a moment: a few tries, then a lazy unmount (gone once the last user is).
restore_tracefs() {
    [[ -z "$tracefs_before" ]] || return 0
    awk '$3 == "tracefs" { print $2 }' /proc/self/mounts | while read -r dir; do
        local try
        for try in 1 2 3 4 5; do
            umount "$dir" 2>/dev/null && continue 2
            sleep 0.2
        done
        umount -l "$dir" 2>/dev/null || echo "warning: could not unmount tracefs at $dir" >&2
    done
}

# The C program's figure for CASE from its output FILE ("CASE MEDIAN_NS ...").
c_median() {
    local v
    v=$(awk -v c="$2" '$1 == c { print $2 }' "$1")
    [[ -n "$v" ]] || die "no figure for $2 from fdcalls_ref ($1)"
    echo "$v"
}

# Median of whitespace-separated numbers (mean of the two middle ones for an even count).
median_of() {
    tr ' ' '\n' <<<"$1" | awk 'NF' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# "ID MEDIAN_NS" of every case of oscost's result FILE, one a line.
oscost_medians() {
    python3 - "$1" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1]))["experiments"]:
    for c in e["cases"]:
        print(c["id"], c["median_ns"])
PY
}
