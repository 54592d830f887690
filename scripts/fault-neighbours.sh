#!/usr/bin/env bash
# Whether a fault figure depends on the kinds measured beside it: `oscost fault --kinds
# file-read,file-write-shared` (two kinds) and `oscost fault` (all seven) in interleaved rounds
# (A B A B, A first in odd rounds), both pinned to one CPU, on the file system of DIR (default
# the temporary directory) and, as oscost does itself, on /dev/shm (the .tmpfs cases). Prints
# each round's file-read and file-write-shared medians and the median ratio all-kinds / two-kinds
# per case: 1 means the neighbours do not move the figure. A measurement, not a test: exits 0
# whatever the ratios are.
#
# Usage: [ROUNDS=N] [QUICK=1] [DIR=PATH] scripts/fault-neighbours.sh [CPU]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
dir=()
[[ -z "${DIR:-}" ]] || dir=(--dir "$DIR")
build_oscost

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost fault: two kinds (A) against all kinds (B), CPU $cpu, $rounds interleaved rounds ($mode)"

run() { # FILE KINDS...
    local out="$1"
    shift
    "$bin" --cpus "$cpu" --quiet --no-save ${quick_oscost[@]+"${quick_oscost[@]}"} \
        fault "$@" ${dir[@]+"${dir[@]}"} --json "$out.json" >/dev/null || die "oscost fault failed"
    oscost_medians "$out.json" | grep -E '^fault\.file-(read|write-shared)(\.tmpfs)? ' >"$out"
}

declare -A a_ns b_ns ratios
ids=()
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    if ((i % 2)); then
        run "$tmp/a$i" --kinds file-read,file-write-shared
        run "$tmp/b$i"
    else
        run "$tmp/b$i"
        run "$tmp/a$i" --kinds file-read,file-write-shared
    fi
    while read -r id av; do
        bv=$(awk -v id="$id" '$1 == id { print $2 }' "$tmp/b$i")
        [[ -n "$bv" ]] || continue
        [[ -n "${a_ns[$id]+x}" ]] || ids+=("$id")
        a_ns[$id]+="$av "
        b_ns[$id]+="$bv "
        ratios[$id]+="$(awk -v a="$av" -v b="$bv" 'BEGIN { printf "%.3f", b / a }') "
    done <"$tmp/a$i"
done

echo
printf "%-32s %12s %12s %8s  %s\n" case "two kinds ns" "all kinds ns" ratio "per-round ratios"
for id in "${ids[@]}"; do
    printf "%-32s %12.1f %12.1f %8.3f  %s\n" "$id" "$(median_of "${a_ns[$id]}")" \
        "$(median_of "${b_ns[$id]}")" "$(median_of "${ratios[$id]}")" "${ratios[$id]}"
done
exit 0
