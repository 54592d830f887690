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

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
build_both
# Within this of 1 a median ratio counts as agreeing.
tolerance=0.10

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
