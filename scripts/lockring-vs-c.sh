#!/usr/bin/env bash
# Holds `oscost lockring` against benches/csfast5_ref.c, the csfast5 lock ring and cspipe2a
# pipe token of Edward G. Bradford, "Runtime: Context switching", IBM developerWorks, 2002,
# written the way the study wrote them (pthreads, default pthread mutexes, one timing of the
# whole run divided by the passes).
#
# For N = 2, 4, 8, 16, 32, 64 and 128 threads with one free mutex, and for the pipe token,
# each round runs oscost (`lockring --tasks N`, its median time per hand-over) and then the C
# program (elapsed / passes), one point after the other, both pinned with `taskset -c CPU` to
# the same CPU (oscost with `--cpus CPU` too, so every thread of its ring is on that CPU). The
# median over the rounds of each round's ratio oscost / C is the figure: a ratio near 1 says
# oscost's time per switch is the switch, not oscost's own machinery (its sampler, its stop
# word, its counters). Both sides also print the context switches the kernel counted per pass.
#
# This is a measurement, not a test: it exits 0 whatever the ratios are, and non-zero only
# when something it needs is missing or fails. Installs nothing. Run it on an otherwise idle
# machine, one benchmark at a time.
#
# Usage: [ROUNDS=N] [QUICK=1] [PASSES=N] scripts/lockring-vs-c.sh [CPU]
#   CPU     the CPU both sides run on (default: the last CPU this shell may use; also $CPU)
#   ROUNDS  interleaved rounds (default 5)
#   PASSES  hand-overs the C program times per point (default 400000)
#   QUICK=1 N = 2 and 8, 15 samples and 20000 passes: a check of the script itself, not a
#           figure to quote
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"

passes="${PASSES:-400000}"
if [[ "$quick" == 0 ]]; then
    sizes=(2 4 8 16 32 64 128)
else
    sizes=(2 8)
    passes=20000
fi
[[ "$passes" =~ ^[1-9][0-9]*$ ]] || die "PASSES must be a positive integer, got '$passes'"

echo "building benches/csfast5_ref.c and oscost (release)..." >&2
# -fno-plt: call libc through the GOT as the Rust binary does (see side-by-side.sh).
cc -O2 -fno-plt -pthread -o "$tmp/csfast5_ref" benches/csfast5_ref.c ||
    die "cc failed on benches/csfast5_ref.c"
build_oscost

# "MEDIAN_NS SWITCHES_PER_PASS" of case ID in oscost's result FILE.
oscost_figure() { # FILE ID
    local v
    if [[ "$json_reader" == jq ]]; then
        v=$(jq -r --arg id "$2" '[.experiments[].cases[] | select(.id == $id)][0]
            | "\(.median_ns) \(.counters.switches_per_hand_over // .counters.switches_per_pass)"' \
            "$1")
    else
        v=$(python3 - "$@" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for e in doc["experiments"]:
    for c in e["cases"]:
        if c["id"] == sys.argv[2]:
            k = c["counters"]
            print(c["median_ns"], k.get("switches_per_hand_over", k.get("switches_per_pass")))
PY
        )
    fi
    [[ -n "$v" && "$v" != null* ]] || die "no figure for $2 in oscost's results ($1)"
    echo "$v"
}

# Points: "mutex N" or "pipe".
points=()
for n in "${sizes[@]}"; do
    points+=("mutex $n")
done
points+=("pipe")

declare -A o_ns c_ns ratio o_sw c_sw
mode="${passes} passes per C run"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost lockring vs C (csfast5, cspipe2a), CPU $cpu, 1 free mutex, $rounds interleaved" \
    "rounds ($mode); ratio = oscost / C, time per switch"

for ((r = 1; r <= rounds; r++)); do
    echo "round $r of $rounds..." >&2
    for p in "${points[@]}"; do
        read -r form n <<<"$p"
        json="$tmp/o.json"
        if [[ "$form" == mutex ]]; then
            id="lockring.mutex.n$n.k1"
            args=(lockring --forms mutex --tasks "$n" --tokens 1)
            cargs=(mutex "$n" 1 $((passes / n)))
        else
            id="lockring.pipe.n2"
            args=(lockring --forms pipe)
            cargs=(pipe $((passes / 2)))
        fi
        taskset -c "$cpu" "$bin" --quiet "${quick_oscost[@]}" --cpus "$cpu" "${args[@]}" \
            --json "$json" >/dev/null || die "oscost failed: ${args[*]}"
        read -r o s_o <<<"$(oscost_figure "$json" "$id")"
        read -r cid c s_c < <(taskset -c "$cpu" "$tmp/csfast5_ref" "${cargs[@]}" "$cpu") ||
            die "csfast5_ref failed: ${cargs[*]}"
        [[ "$cid" == "$id" ]] || die "csfast5_ref printed $cid, expected $id"
        q=$(awk -v o="$o" -v c="$c" 'BEGIN { printf "%.3f", o / c }')
        o_ns[$p]+="$o " c_ns[$p]+="$c " ratio[$p]+="$q " o_sw[$p]+="$s_o " c_sw[$p]+="$s_c "
        printf '  round %d  %-10s oscost %9.1f ns  C %9.1f ns  (%s)\n' "$r" "$p" "$o" "$c" "$q"
    done
done

echo
printf '%-10s %12s %12s %10s %12s %12s\n' point "oscost ns" "C ns" "oscost/C" "oscost sw/p" "C sw/p"
for p in "${points[@]}"; do
    printf '%-10s %12.1f %12.1f %10.3f %12.3f %12.3f\n' "$p" \
        "$(median_of "${o_ns[$p]}")" "$(median_of "${c_ns[$p]}")" "$(median_of "${ratio[$p]}")" \
        "$(median_of "${o_sw[$p]}")" "$(median_of "${c_sw[$p]}")"
done
echo "(medians of $rounds interleaved rounds; oscost/C is the median of the per-round ratios;"
echo " sw/p: context switches the kernel counted per hand-over or pass, every thread summed)"
exit 0
