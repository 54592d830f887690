#!/usr/bin/env bash
# Holds `oscost noise` against benches/noise_ref.c: a C loop that reads the TSC with rdtscp as
# fast as it can and stores every gap between two readings above the same threshold, on the
# same CPU. Both report interruptions per second and their median length (a gap less one loop
# iteration). A round runs the C program, then oscost (`--cpus CPU`, so one spinning thread),
# both pinned with taskset; the medians of the per-round ratios oscost / C are the figures.
#
# This is a measurement, not a test: it exits 0 whatever the ratios are, and non-zero only
# when something it needs is missing or fails. Installs nothing. Run it on an otherwise idle
# machine, one benchmark at a time.
#
# Usage: [ROUNDS=N] [QUICK=1] [DURATION=2] [THRESHOLD_NS=1000] scripts/noise-vs-c.sh [CPU]
#   CPU           the CPU both sides spin on (default: the last CPU this shell may use)
#   ROUNDS        interleaved rounds (default 5)
#   DURATION      seconds each side spins per round (default 2)
#   THRESHOLD_NS  the gap threshold both use (default 1000)
#   QUICK=1       half a second a side: a check of the script itself, not a figure
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
duration="${DURATION:-2}"
threshold="${THRESHOLD_NS:-1000}"
[[ "$quick" == 1 ]] && duration=0.5
[[ "$duration" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "DURATION must be seconds, got '$duration'"
[[ "$threshold" =~ ^[1-9][0-9]*$ ]] || die "THRESHOLD_NS must be a positive integer"

echo "building benches/noise_ref.c and oscost (release)..." >&2
cc -O2 -o "$tmp/noise_ref" benches/noise_ref.c || die "cc failed on benches/noise_ref.c"
build_oscost

# Counter KEY of case ID in oscost's result FILE.
counter() { # FILE ID KEY
    local v
    if [[ "$json_reader" == jq ]]; then
        v=$(jq -r --arg id "$2" --arg k "$3" \
            '[.experiments[].cases[] | select(.id == $id) | .counters[$k]][0] // empty' "$1")
    else
        v=$(python3 - "$@" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for e in doc["experiments"]:
    for c in e["cases"]:
        if c["id"] == sys.argv[2] and sys.argv[3] in c["counters"]:
            print(c["counters"][sys.argv[3]])
PY
        )
    fi
    [[ -n "$v" ]] || die "no counter $3 of $2 in oscost's results ($1)"
    echo "$v"
}

echo "oscost noise vs C, CPU $cpu, ${duration} s a side, gaps above ${threshold} ns," \
    "$rounds interleaved rounds; ratio = oscost / C"
rate_r="" len_r=""
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    read -r _ c_rate _ c_len _ < <(taskset -c "$cpu" "$tmp/noise_ref" "$duration" "$threshold") ||
        die "noise_ref failed"
    json="$tmp/o$i.json"
    taskset -c "$cpu" "$bin" --quiet --cpus "$cpu" noise --duration "${duration}s" \
        --threshold-ns "$threshold" --json "$json" >/dev/null || die "oscost noise failed"
    o_rate=$(counter "$json" "noise.cpu$cpu" gaps_per_s)
    o_len=$(counter "$json" "noise.cpu$cpu" length_median_ns)
    rr=$(awk -v o="$o_rate" -v c="$c_rate" 'BEGIN { printf "%.3f", (c > 0 ? o / c : 0) }')
    lr=$(awk -v o="$o_len" -v c="$c_len" 'BEGIN { printf "%.3f", (c > 0 ? o / c : 0) }')
    rate_r+="$rr " len_r+="$lr "
    printf '  round %d  per s: C %8.1f oscost %8.1f (%s)   median: C %9.1f ns oscost %9.1f ns (%s)\n' \
        "$i" "$c_rate" "$o_rate" "$rr" "$c_len" "$o_len" "$lr"
done
echo
printf 'median ratio oscost / C: interruptions per second %.3f, median length %.3f\n' \
    "$(median_of "$rate_r")" "$(median_of "$len_r")"
exit 0
