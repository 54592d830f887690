#!/usr/bin/env bash
# Holds `oscost shootdown` against benches/shootdown_ref.c, a C program that invalidates one
# touched page the same way (a page between two guard pages, written outside the timing, then
# madvise(MADV_DONTNEED), munmap or mprotect(PROT_READ) timed alone, 256 a sample, the ops in
# rotated rounds) with no other thread, or one other thread spinning or asleep on a second CPU.
#
# Both sides run with the measuring thread on CPU A and the other thread on CPU B (oscost with
# `--cpus A,B`). A round runs the C program then oscost for each group; the median ratio
# oscost/C over the rounds is the figure. oscost's counted shootdown interrupts per operation on
# the other CPU are printed beside it (the C program counts none). A measurement, not a test:
# exits 0 whatever the ratios are. Run it on an idle machine with at least two CPUs.
#
# Usage: [ROUNDS=N] [QUICK=1] scripts/shootdown-vs-c.sh [CPU_A CPU_B]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup_two "${1:-}" "${2:-}"
c_samples=81
[[ "$quick" == 0 ]] || c_samples=15

echo "building benches/shootdown_ref.c and oscost (release)..." >&2
cc -O2 -pthread -o "$tmp/shootdown_ref" benches/shootdown_ref.c || die "cc failed on benches/shootdown_ref.c"
build_oscost

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost shootdown vs C, median ns per operation, CPUs $cpu (measuring) and $cpu_b (other thread),"
echo "$rounds interleaved rounds ($mode); ratio = oscost / C"

declare -A c_ns o_ns ratios irqs
ids=()
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    : >"$tmp/c$i"
    for g in "-o 0" "-o 1 -m spin" "-o 1 -m sleep"; do
        # shellcheck disable=SC2086  # the group's flags are words
        "$tmp/shootdown_ref" -a "$cpu" -b "$cpu_b" $g -s "$c_samples" >>"$tmp/c$i" || die "shootdown_ref failed"
    done
    "$bin" --cpus "$cpu,$cpu_b" --quiet --no-save ${quick_oscost[@]+"${quick_oscost[@]}"} \
        shootdown --json "$tmp/o$i.json" >/dev/null || die "oscost shootdown failed"
    python3 - "$tmp/o$i.json" >"$tmp/o$i" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1]))["experiments"]:
    for c in e["cases"]:
        print(c["id"], c["median_ns"], c["counters"].get("tlb_interrupts_other_cpus_per_op", "n/a"))
PY
    while read -r id cv; do
        read -r ov oi <<<"$(awk -v id="$id" '$1 == id { print $2, $3 }' "$tmp/o$i")" || true
        [[ -n "${ov:-}" ]] || { echo "  round $i  $id: not measured by oscost, skipped" >&2; continue; }
        [[ -n "${c_ns[$id]+x}" ]] || ids+=("$id")
        r=$(awk -v o="$ov" -v c="$cv" 'BEGIN { printf "%.3f", o / c }')
        c_ns[$id]+="$cv " o_ns[$id]+="$ov " ratios[$id]+="$r " irqs[$id]+="$oi "
        printf '  round %d  %-34s C %9.1f  oscost %9.1f  ratio %s\n' "$i" "$id" "$cv" "$ov" "$r"
    done <"$tmp/c$i"
done

echo
printf '%-34s %9s %9s %8s  %-22s %s\n' case "C ns" "oscost ns" ratio "TLB irqs/op (oscost)" "per-round ratios"
for id in "${ids[@]}"; do
    printf '%-34s %9.1f %9.1f %8.3f  %-22s %s\n' "$id" "$(median_of "${c_ns[$id]}")" \
        "$(median_of "${o_ns[$id]}")" "$(median_of "${ratios[$id]}")" "$(median_of "${irqs[$id]}")" "${ratios[$id]% }"
done
exit 0
