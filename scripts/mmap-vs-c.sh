#!/usr/bin/env bash
# Holds `oscost mmap` against benches/mmap_ref.c, a C program that makes the same calls at the
# same sizes the same way: batches of 4096/N calls (1 to 64) between two clock reads, mmap of
# untouched regions then munmap of the same, munmap of regions written before the timing, pread
# and pwrite of a cached file at offset 0; the cases in rotated rounds after one untimed batch.
#
# Both run pinned with `taskset -c CPU` to the same CPU, oscost with `--cpus CPU` too. A round
# runs the C program, then oscost; the median ratio oscost/C over the rounds is the figure.
# A measurement, not a test: exits 0 whatever the ratios are. Run it on an idle machine.
#
# Usage: [ROUNDS=N] [QUICK=1] [PAGES=1,10,1000,10000] scripts/mmap-vs-c.sh [CPU]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
pages="${PAGES:-1,10,1000,10000}"
[[ "$pages" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "PAGES must be a list like 1,1000, got '$pages'"
c_samples=81
[[ "$quick" == 0 ]] || c_samples=15

echo "building benches/mmap_ref.c and oscost (release)..." >&2
cc -O2 -o "$tmp/mmap_ref" benches/mmap_ref.c || die "cc failed on benches/mmap_ref.c"
build_oscost

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost mmap vs C, median ns per call, CPU $cpu, pages $pages, $rounds interleaved rounds ($mode)"
echo "TMPDIR=${TMPDIR:-/tmp}; ratio = oscost / C"

declare -A c_ns o_ns ratios
ids=()
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    taskset -c "$cpu" "$tmp/mmap_ref" -s "$c_samples" -p "$pages" >"$tmp/c$i" || die "mmap_ref failed"
    taskset -c "$cpu" "$bin" --cpus "$cpu" --quiet --no-save ${quick_oscost[@]+"${quick_oscost[@]}"} \
        mmap --pages "$pages" --json "$tmp/o$i.json" >/dev/null || die "oscost mmap failed"
    oscost_medians "$tmp/o$i.json" >"$tmp/o$i"
    pair_round "$i" "$tmp/c$i" "$tmp/o$i" 28 12
done

print_pairs 28 12
exit 0
