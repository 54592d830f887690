#!/usr/bin/env bash
# Holds `oscost fault` against benches/fault_ref.c, a C program that takes the same page faults
# the same way: a fresh region mapped outside the timing, one byte of each page touched in a
# timed pass, the same pass over the present pages timed and subtracted, the region unmapped
# after; the kinds in rotated rounds after one untimed sample each; faults counted with
# getrusage(RUSAGE_THREAD) around the timed passes.
#
# Both run pinned with `taskset -c CPU` to the same single CPU, oscost with `--cpus CPU` too,
# with the same pages per sample. A round runs the C program, then oscost; the rounds are
# repeated so that drift of the machine hits both sides alike, and the median ratio oscost/C
# over the rounds is the figure for each kind. The faults each side counted per operation are
# printed beside it: a ratio means something only when both took the same faults.
#
# A peer tool gives a second reference for the anonymous write fault where it is installed:
# `stress-ng --fault` (its "nanosecs per page fault" metric), run once per round on the same CPU.
#
# This is a measurement, not a test: it exits 0 whatever the ratios are, and non-zero only when
# something it needs is missing or fails. Installs nothing. Run it on an otherwise idle machine,
# one benchmark at a time.
#
# Usage: [ROUNDS=N] [QUICK=1] [PAGES=N] [KINDS=k,k] scripts/fault-vs-c.sh [CPU]
#   CPU     the CPU both sides run on (default: the last CPU this shell may use; also $CPU)
#   ROUNDS  interleaved rounds (default 5)
#   QUICK=1 oscost --quick and the C program's -q (15 samples): a check of the script itself
#   PAGES   pages per sample (default 1024, or 256 with QUICK=1)
#   KINDS   kinds (default all seven)
# Both sides put their cached file in $TMPDIR (default /tmp): TMPDIR=/dev/shm holds oscost's
# tmpfs figures of file-read and file-write-shared (its .tmpfs cases) against C's.
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
kinds="${KINDS:-anon-write,anon-read,file-read,file-write-shared,cow,thp,file-major}"
[[ "$kinds" =~ ^[a-z-]+(,[a-z-]+)*$ ]] || die "KINDS must be a list like anon-write,cow, got '$kinds'"
if [[ "$quick" == 1 ]]; then pages="${PAGES:-256}" c_samples=15; else pages="${PAGES:-1024}" c_samples=81; fi
[[ "$pages" =~ ^[1-9][0-9]*$ ]] || die "PAGES must be a positive integer, got '$pages'"

echo "building benches/fault_ref.c and oscost (release)..." >&2
cc -O2 -o "$tmp/fault_ref" benches/fault_ref.c || die "cc failed on benches/fault_ref.c"
build_oscost

# "median_ns minor_per_op major_per_op" of case ID in oscost's JSON FILE, or nothing when it
# was not measured (none is invented).
oscost_case() {
    python3 - "$1" "$2" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for e in doc["experiments"]:
    for c in e["cases"]:
        if c["id"] == sys.argv[2]:
            k = c["counters"]
            print(c["median_ns"], k["minor_faults_per_op"], k["major_faults_per_op"], c["p5_ns"])
PY
}

stress=0
command -v stress-ng >/dev/null 2>&1 && stress=1

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost fault vs C, median ns per operation (a 4 KiB page; thp: a 2 MiB page), CPU $cpu,"
echo "$pages pages per sample, $rounds interleaved rounds ($mode); ratio = oscost / C"
echo "TMPDIR=${TMPDIR:-/tmp} ($(findmnt -no FSTYPE -T "${TMPDIR:-/tmp}" 2>/dev/null || echo '?'))"

declare -A c_ns o_ns ratios counts p5_ratios
ids=()
stress_ns=""
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    taskset -c "$cpu" "$tmp/fault_ref" -p "$pages" -s "$c_samples" -k "$kinds" >"$tmp/c$i" ||
        die "fault_ref failed"
    taskset -c "$cpu" "$bin" --cpus "$cpu" --quiet --no-save ${quick_oscost[@]+"${quick_oscost[@]}"} \
        fault --kinds "$kinds" --pages "$pages" --json "$tmp/o$i.json" >/dev/null ||
        die "oscost fault failed"
    while read -r id cv cmin cmaj cp5; do
        read -r ov omin omaj op5 <<<"$(oscost_case "$tmp/o$i.json" "$id")" || true
        if [[ -z "${ov:-}" ]]; then
            echo "  round $i  $id: not measured by oscost (see its result), skipped" >&2
            continue
        fi
        [[ -n "${c_ns[$id]+x}" ]] || ids+=("$id")
        r=$(awk -v o="$ov" -v c="$cv" 'BEGIN { printf "%.3f", o / c }')
        c_ns[$id]+="$cv " o_ns[$id]+="$ov " ratios[$id]+="$r "
        p5_ratios[$id]+="$(awk -v o="$op5" -v c="$cp5" 'BEGIN { printf "%.3f", o / c }') "
        counts[$id]=$(printf 'faults/op C %.3f+%.3f oscost %.3f+%.3f' "$cmin" "$cmaj" "$omin" "$omaj")
        printf '  round %d  %-26s C %10.1f  oscost %10.1f  ratio %s\n' "$i" "$id" "$cv" "$ov" "$r"
    done <"$tmp/c$i"
    if [[ "$stress" == 1 && ",$kinds," == *,anon-write,* ]]; then
        s=$(taskset -c "$cpu" stress-ng --fault 1 --taskset "$cpu" -t 3 --metrics 2>&1 |
            awk '/nanosecs per page fault/ { print $(NF-4) }' | head -1 || true)
        [[ -n "$s" ]] && stress_ns+="$s "
    fi
done

echo
printf '%-26s %10s %10s %8s %8s  %-44s %s\n' case "C ns" "oscost ns" ratio "p5 ratio" \
    "faults per op (minor+major)" "per-round ratios"
for id in "${ids[@]}"; do
    printf '%-26s %10.1f %10.1f %8.3f %8.3f  %-44s %s\n' "$id" "$(median_of "${c_ns[$id]}")" \
        "$(median_of "${o_ns[$id]}")" "$(median_of "${ratios[$id]}")" \
        "$(median_of "${p5_ratios[$id]}")" "${counts[$id]}" "${ratios[$id]% }"
done
echo
echo "p5 ratio: the median over the rounds of oscost's 5th percentile over C's. On a virtual machine"
echo "a process's anonymous faults can run in a slow mode for its whole life (seen in the C program"
echo "alone: about 620 or about 790 ns per anon-read fault, by process, same code); where the"
echo "medians' ratio and the p5 ratio part, the two sides landed in different modes."
if [[ -n "$stress_ns" ]]; then
    echo
    echo "stress-ng --fault (a peer: mmap, write, munmap of one page at a time, its own loop), median"
    echo "of its 'nanosecs per page fault' over the rounds: $(median_of "$stress_ns") ns ($stress_ns)"
fi
exit 0
