#!/usr/bin/env bash
# Holds `oscost signal` against benches/signal_ref.c, a C program of the same operations timed
# the same way: sigaction installing SIGUSR1's handler, tgkill of SIGUSR1 to the own thread and
# the handler's return, a SIGSEGV from a write to a read-only page stepped over by the handler
# (x86_64), and the round trip of two threads waking each other with SIGUSR1 in sigsuspend on
# one CPU (A) and on two (A, B).
#
# A round runs the C program then oscost (`--cpus A,B`); the median ratio oscost/C over the
# rounds is the figure. A measurement, not a test: exits 0 whatever the ratios are.
#
# Usage: [ROUNDS=N] [QUICK=1] scripts/signal-vs-c.sh [CPU_A CPU_B]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
cpu_b="${2:-$(last_cpu)}"
side_by_side_setup "${1:-0}"
[[ "$cpu_b" =~ ^[0-9]+$ && "$cpu_b" != "$cpu" ]] || die "CPU_B must be a CPU number other than CPU_A ($cpu)"
taskset -c "$cpu_b" true 2>/dev/null || die "cannot pin to CPU $cpu_b"
c_samples=81
[[ "$quick" == 0 ]] || c_samples=10

echo "building benches/signal_ref.c and oscost (release)..." >&2
cc -O2 -pthread -o "$tmp/signal_ref" benches/signal_ref.c || die "cc failed on benches/signal_ref.c"
build_oscost

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost signal vs C, median ns per operation (round trip for wake), CPUs $cpu and $cpu_b,"
echo "$rounds interleaved rounds ($mode); ratio = oscost / C"

declare -A c_ns o_ns ratios
ids=()
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    "$tmp/signal_ref" -a "$cpu" -b "$cpu_b" -s "$c_samples" >"$tmp/c$i" || die "signal_ref failed"
    "$bin" --cpus "$cpu,$cpu_b" --quiet --no-save ${quick_oscost[@]+"${quick_oscost[@]}"} \
        signal --json "$tmp/o$i.json" >/dev/null || die "oscost signal failed"
    python3 - "$tmp/o$i.json" >"$tmp/o$i" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1]))["experiments"]:
    for c in e["cases"]:
        print(c["id"], c["median_ns"])
PY
    while read -r id cv; do
        ov=$(awk -v id="$id" '$1 == id { print $2 }' "$tmp/o$i")
        [[ -n "$ov" ]] || { echo "  round $i  $id: not measured by oscost, skipped" >&2; continue; }
        [[ -n "${c_ns[$id]+x}" ]] || ids+=("$id")
        r=$(awk -v o="$ov" -v c="$cv" 'BEGIN { printf "%.3f", o / c }')
        c_ns[$id]+="$cv " o_ns[$id]+="$ov " ratios[$id]+="$r "
        printf '  round %d  %-20s C %9.1f  oscost %9.1f  ratio %s\n' "$i" "$id" "$cv" "$ov" "$r"
    done <"$tmp/c$i"
done

echo
printf '%-20s %9s %9s %8s  %s\n' case "C ns" "oscost ns" ratio "per-round ratios"
for id in "${ids[@]}"; do
    printf '%-20s %9.1f %9.1f %8.3f  %s\n' "$id" "$(median_of "${c_ns[$id]}")" \
        "$(median_of "${o_ns[$id]}")" "$(median_of "${ratios[$id]}")" "${ratios[$id]% }"
done
exit 0
