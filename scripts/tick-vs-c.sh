#!/usr/bin/env bash
# Holds `oscost tick --source signal` against benches/tick_ref.c: the same fixed work (the
# iteration count oscost calibrated, read from its result) under the same POSIX timer
# (CLOCK_MONOTONIC, SIGEV_THREAD_ID, the first real-time signal, a handler that counts), timed
# with rdtscp, undisturbed and disturbed in interleaved runs. Both report the cycles each event
# added: (median disturbed - median undisturbed) / median events counted. A round runs oscost,
# then the C program with oscost's iteration count, both pinned with taskset to one CPU; the
# median of the per-round ratios oscost / C is the figure.
#
# This is a measurement, not a test: it exits 0 whatever the ratio is, and non-zero only when
# something it needs is missing or fails. Installs nothing. Run it on an otherwise idle
# machine, one benchmark at a time.
#
# Usage: [ROUNDS=N] [QUICK=1] [PERIOD=200us] [WORK=100ms] scripts/tick-vs-c.sh [CPU]
#   CPU     the CPU both sides run on (default: the last CPU this shell may use; also $CPU)
#   ROUNDS  interleaved rounds (default 5)
#   PERIOD  the timer period, as oscost spells it (default 200us: on virtual machines a timer event can cost 20-30 µs, too much for 50 µs)
#   WORK    how long the work runs undisturbed (default 100ms)
#   QUICK=1 20 ms of work and 3 runs a side: a check of the script itself, not a figure
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
period="${PERIOD:-200us}"
work="${WORK:-100ms}"
runs=5
if [[ "$quick" == 1 ]]; then
    work=20ms runs=3
fi
period_ns=$(awk -v p="$period" 'BEGIN {
    n = p + 0; u = p; sub(/^[0-9.]+/, "", u)
    s = (u == "ns") ? 1 : (u == "us" || u == "µs") ? 1e3 : (u == "ms") ? 1e6 : (u == "s") ? 1e9 : 0
    if (s == 0 || n <= 0) exit 1
    printf "%.0f", n * s
}') || die "PERIOD must be a time such as 50us, got '$period'"
# oscost names the case after the period: 1ms, 49us, 9200ns.
case_name=$(awk -v n="$period_ns" 'BEGIN {
    if (n % 1000000 == 0) printf "%dms", n / 1000000
    else if (n % 1000 == 0) printf "%dus", n / 1000
    else printf "%dns", n
}')

echo "building benches/tick_ref.c and oscost (release)..." >&2
cc -O2 -o "$tmp/tick_ref" benches/tick_ref.c || die "cc failed on benches/tick_ref.c"
build_oscost

# FIELD of oscost's result FILE: `counter ID KEY` (a case's counter) or `param KEY` (the
# experiment's parameter).
field() { # FILE counter ID KEY | FILE param KEY
    local file="$1" kind="$2" v
    shift 2
    if [[ "$json_reader" == jq ]]; then
        if [[ "$kind" == counter ]]; then
            v=$(jq -r --arg id "$1" --arg k "$2" \
                '[.experiments[].cases[] | select(.id == $id) | .counters[$k]][0] // empty' "$file")
        else
            v=$(jq -r --arg k "$1" '.experiments[0].params[$k] // empty' "$file")
        fi
    else
        v=$(python3 - "$file" "$kind" "$@" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
e = doc["experiments"][0]
if sys.argv[2] == "counter":
    for c in e["cases"]:
        if c["id"] == sys.argv[3] and sys.argv[4] in c["counters"]:
            print(c["counters"][sys.argv[4]])
elif sys.argv[3] in e["params"]:
    print(e["params"][sys.argv[3]])
PY
        )
    fi
    [[ -n "$v" ]] || die "no $kind $* in oscost's results ($file)"
    echo "$v"
}

id="tick.signal.$case_name"
echo "oscost tick vs C, cycles per signal event at $period, CPU $cpu, work $work, $runs runs a" \
    "side, $rounds interleaved rounds; ratio = oscost / C"
ratios="" o_all="" c_all=""
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    json="$tmp/o$i.json"
    taskset -c "$cpu" "$bin" --quiet --cpus "$cpu" tick --source signal --periods "$period" \
        --work "$work" --runs "$runs" --json "$json" >/dev/null || die "oscost tick failed"
    o=$(field "$json" counter "$id" cycles_per_event)
    iterations=$(field "$json" param work_iterations)
    c=$(taskset -c "$cpu" "$tmp/tick_ref" "$iterations" "$period_ns" "$runs" |
        awk '{ print $2 }') || die "tick_ref failed"
    [[ -n "$c" ]] || die "no figure from tick_ref"
    r=$(awk -v o="$o" -v c="$c" 'BEGIN { printf "%.3f", o / c }')
    ratios+="$r " o_all+="$o " c_all+="$c "
    printf '  round %d  C %10.0f  oscost %10.0f  cycles per event  ratio %s\n' "$i" "$c" "$o" "$r"
done
echo
printf 'median: C %.0f, oscost %.0f cycles per event; median ratio %.3f (rounds: %s)\n' \
    "$(median_of "$c_all")" "$(median_of "$o_all")" "$(median_of "$ratios")" "${ratios% }"
exit 0
