#!/usr/bin/env bash
# Holds `oscost split` against benches/split_ref.c, a C program written the way the studies
# wrote theirs: the same work loop (the same instructions, 64-byte aligned), the same shares,
# each task starting on its share as soon as it exists, the main flow waiting for all, the
# whole timed. For each point, oscost runs first and reports the work units it calibrated;
# the C program then does exactly that many units. Rounds are interleaved (oscost, C, oscost,
# C, ...) and pinned; the script prints each point's median total time for both and the ratio
# oscost/C (a ratio near 1 says oscost's figure is the cost of the work and the tasks, not of
# oscost's own machinery: its barrier, its per-task counters, its /proc reading).
#
# Usage: scripts/split-vs-c.sh [CPU]   (environment: ROUNDS=5, WORK=500ms, QUICK=1 for a
# tiny run that only proves the script works; CPUS2="0,1" adds an all-CPUs point)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
work="${WORK:-500ms}"
if [[ "$quick" == 1 ]]; then
    work=20ms
fi
build_both
cc -O2 -pthread -o "$tmp/split_ref" benches/split_ref.c || die "cc failed on benches/split_ref.c"

# Points: form tasks yield cpus
points=(
    "single 1 0 $cpu"
    "threads 64 0 $cpu"
    "processes 64 0 $cpu"
    "threads 256 1 $cpu"
    "processes 256 1 $cpu"
)
if [[ -n "${CPUS2:-}" ]]; then
    points+=("threads 64 1 $CPUS2" "processes 64 1 $CPUS2")
fi

# Runs oscost for one point; prints "median_ns work_units step_units".
oscost_point() {
    local form="$1" n="$2" y="$3" cpus="$4" json="$tmp/o.json" set=one id
    local args=(--quiet --cpus "$cpus" split --form "$form" --tasks "$n" --repeats 1
        --work "$work")
    [[ "$cpus" == *,* ]] && set=all
    args+=(--sets "$set")
    id="split.$form.$set.$n"
    if [[ "$y" == 1 ]]; then
        args+=(--yield)
        id="$id.yield"
    fi
    "$bin" "${args[@]}" --json "$json" >/dev/null || die "oscost failed: ${args[*]}"
    python3 - "$json" "$id" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
e = d["experiments"][0]
c = next(c for c in e["cases"] if c["id"] == sys.argv[2])
print(c["median_ns"], e["params"]["work_units"], e["params"]["step_units"])
PY
}

declare -A o_runs c_runs
for ((r = 1; r <= rounds; r++)); do
    echo "round $r of $rounds..." >&2
    for p in "${points[@]}"; do
        read -r form n y cpus <<<"$p"
        read -r o_ns units step <<<"$(oscost_point "$form" "$n" "$y" "$cpus")"
        read -r c_ns c_units <<<"$(taskset -c "$cpus" "$tmp/split_ref" "$form" "$n" "$units" "$step" "$y")" ||
            die "split_ref failed on $p"
        [[ "$c_units" == "$units" ]] || die "split_ref did $c_units units, not $units"
        o_runs[$p]+="$o_ns "
        c_runs[$p]+="$c_ns "
    done
done

printf '%-30s %12s %12s %10s\n' "point (form N yield cpus)" "oscost ms" "C ms" "oscost/C"
for p in "${points[@]}"; do
    o=$(median_of "${o_runs[$p]}")
    c=$(median_of "${c_runs[$p]}")
    awk -v p="$p" -v o="$o" -v c="$c" 'BEGIN { printf "%-30s %12.2f %12.2f %10.3f\n", p, o / 1e6, c / 1e6, o / c }'
done
echo "(median of $rounds interleaved rounds; work ${work} per point; total times, creation and joining included)"
