#!/usr/bin/env bash
# Holds four single-task oscost figures against single-threaded C loops of the same calls:
#
#   syscall.getpid     syscall(SYS_getpid)
#   syscall.lseek      lseek(fd, 0, SEEK_SET) on a 64 KiB file under $TMPDIR
#   syscall.fstat      fstat(fd) of that file
#   primitives.pipe    1-byte write + 1-byte read on a pipe, in one task
#
# The C side is benches/fdcalls_ref.c: the same calls on the same kind of file and pipe,
# sampled in the same shape as oscost (batches of >= 4 ms, warm-up, empty loop subtracted,
# 81 samples, median), in a process that creates no thread. oscost's figure should match it:
# whatever oscost adds around the call (other threads in its process, its own wrappers)
# shows up as a ratio oscost/C above 1.
#
# Both run pinned with `taskset -c CPU` to the same single CPU, oscost with `--cpus CPU` too.
# A round runs the C program, then oscost, for the three system calls (interleaved among
# themselves inside each program, as oscost does), then the same for the pipe, so that drift
# of the machine during the session hits both sides alike; the median ratio over the rounds
# is the figure. Both sides must see the same $TMPDIR: lseek and fstat cost what the file
# system's code costs.
#
# This is a measurement, not a test: it exits 0 whatever the ratios are, and non-zero only
# when something it needs is missing or fails. Installs nothing. Run it on an otherwise idle
# machine, one benchmark at a time.
#
# Usage: [ROUNDS=N] [QUICK=1] scripts/single-thread-acceptance.sh [CPU]
#   CPU     the CPU both sides run on (default: the last CPU this shell may use; also $CPU)
#   ROUNDS  interleaved rounds (default 5)
#   QUICK=1 oscost --quick and the C program's -q (15 samples of >= 1 ms): a rough check of
#           the script itself, not a figure to quote
set -euo pipefail

cd "$(dirname "$0")/.."

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

cpu="${1:-${CPU:-$(last_cpu)}}"
rounds="${ROUNDS:-5}"
quick="${QUICK:-0}"
tolerance=0.10

[[ "$cpu" =~ ^[0-9]+$ ]] || die "CPU must be a CPU number, got '$cpu'"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, got '$rounds'"
if [[ "$quick" == 0 || -z "$quick" ]]; then
    quick=0 quick_oscost=() quick_c=()
else
    quick=1 quick_oscost=(--quick) quick_c=(-q)
fi

for tool in cc cargo taskset awk sort; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is required but not found"
done
# The JSON is read with jq if present, else python3.
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

echo "building benches/fdcalls_ref.c and oscost (release)..." >&2
# -fno-plt: call libc through the GOT as the Rust binary does (a PLT stub adds ~0.4 ns a call).
cc -O2 -fno-plt -o "$tmp/fdcalls_ref" benches/fdcalls_ref.c || die "cc failed on benches/fdcalls_ref.c"
cargo build --release -q || die "cargo build --release failed"
bin="${CARGO_TARGET_DIR:-target}/release/oscost"
[[ -x "$bin" ]] || die "$bin not found after the build"

# median_ns of case ID in oscost's JSON FILE; fails when the case is missing (an
# unavailable case has no figure, and none is invented).
oscost_median() {
    local file="$1" id="$2" v
    if [[ "$json_reader" == jq ]]; then
        v=$(jq -r --arg id "$id" \
            '[.experiments[].cases[] | select(.id == $id) | .median_ns][0] // empty' "$file")
    else
        v=$(python3 - "$file" "$id" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for e in doc["experiments"]:
    for c in e["cases"]:
        if c["id"] == sys.argv[2]:
            print(c["median_ns"])
            sys.exit(0)
EOF
        )
    fi
    [[ -n "$v" ]] || die "case $id not found in oscost's results ($file)"
    echo "$v"
}

# The C program's figure for CASE from its output FILE ("CASE MEDIAN_NS ...").
c_median() {
    local v
    v=$(awk -v c="$2" '$1 == c { print $2 }' "$1")
    [[ -n "$v" ]] || die "no figure for $2 from fdcalls_ref"
    echo "$v"
}

# One side of one round: the C program on CASES..., oscost on the matching subcommand.
run_c() { # OUT CASE...
    local out="$1"
    shift
    taskset -c "$cpu" "$tmp/fdcalls_ref" ${quick_c[@]+"${quick_c[@]}"} "$@" >"$out" ||
        die "fdcalls_ref $* failed"
}
run_oscost() { # JSON SUBCOMMAND ARGS...
    local json="$1"
    shift
    taskset -c "$cpu" "$bin" "$@" --cpus "$cpu" --quiet ${quick_oscost[@]+"${quick_oscost[@]}"} \
        --json "$json" >/dev/null || die "oscost $* failed"
}

# The cases, their oscost ids, and which pair of runs of a round measures them: the three
# system calls share one run of each side (`syscall` samples its cases interleaved, and the C
# program does the same with several cases), the pipe has its own (`primitives` measures each
# primitive on its own).
cases=(getpid lseek fstat pipe)
declare -A id=([getpid]=syscall.getpid [lseek]=syscall.lseek [fstat]=syscall.fstat
    [pipe]=primitives.pipe)
declare -A run=([getpid]=syscall [lseek]=syscall [fstat]=syscall [pipe]=pipe)
declare -A c_ns o_ns ratios

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost vs single-threaded C, median ns per op, CPU $cpu, $rounds interleaved rounds ($mode)"
echo "TMPDIR=${TMPDIR:-/tmp}; ratio = oscost / C"

for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    run_c "$tmp/c$i.syscall" getpid lseek fstat
    run_oscost "$tmp/o$i.syscall.json" syscall --calls getpid,lseek,fstat
    run_c "$tmp/c$i.pipe" pipe
    run_oscost "$tmp/o$i.pipe.json" primitives --only pipe
    for c in "${cases[@]}"; do
        cv=$(c_median "$tmp/c$i.${run[$c]}" "$c")
        ov=$(oscost_median "$tmp/o$i.${run[$c]}.json" "${id[$c]}")
        r=$(awk -v o="$ov" -v c="$cv" 'BEGIN { printf "%.3f", o / c }')
        c_ns[$c]+="$cv "
        o_ns[$c]+="$ov "
        ratios[$c]+="$r "
        printf '  round %d  %-17s C %9.1f  oscost %9.1f  ratio %s\n' "$i" "${id[$c]}" "$cv" "$ov" "$r"
    done
done

# Median of whitespace-separated numbers (mean of the two middle ones for an even count).
median_of() {
    tr ' ' '\n' <<<"$1" | awk 'NF' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo
printf '%-17s %9s %10s %8s  %s\n' case "C ns" "oscost ns" ratio "per-round ratios"
for c in "${cases[@]}"; do
    printf '%-17s %9.1f %10.1f %8.3f  %s\n' "${id[$c]}" "$(median_of "${c_ns[$c]}")" \
        "$(median_of "${o_ns[$c]}")" "$(median_of "${ratios[$c]}")" "${ratios[$c]% }"
done
echo
for c in "${cases[@]}"; do
    m=$(median_of "${ratios[$c]}")
    within=$(awk -v m="$m" -v t="$tolerance" 'BEGIN { d = m - 1; if (d < 0) d = -d; print (d <= t ? "yes" : "no") }')
    printf '%s: median ratio %.2f (within ±%g %%: %s)\n' "${id[$c]}" "$m" \
        "$(awk -v t="$tolerance" 'BEGIN { print t * 100 }')" "$within"
done
exit 0
