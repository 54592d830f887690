#!/usr/bin/env bash
# Holds `oscost wakeup` against cyclictest (rt-tests): the same period, policy, CPU and number
# of wake-ups, the thread sleeping with clock_nanosleep(TIMER_ABSTIME) on CLOCK_MONOTONIC,
# idle and beside a spinning process pinned to the same CPU. cyclictest holds
# /dev/cpu_dma_latency at 0 unless told --laptop; by default both run without it (cyclictest
# --laptop, oscost as it is); IDLE_POLL=1 runs both with it (cyclictest's default, oscost
# --idle-poll).
#
# A round runs, per policy, oscost (idle and loaded cases) then cyclictest idle and loaded.
# Both sides' percentiles are read the same way: cyclictest counts each wake-up's lateness in
# whole µs, cut down (its histogram of 1 µs bins, -h), so oscost's wake-ups (raw_ns of its
# result) are cut down to whole µs too and put in the same bins; p50 and p99 are the first bin
# whose running count reaches half and 99 % of the wake-ups. Printed per round, as medians
# over the rounds (ratio oscost/cyclictest and difference in µs), and pooled: each tool's
# wake-ups of every round in one histogram, whose p99 rests on ROUNDS x COUNT wake-ups instead
# of COUNT. "ok" when within ±10 % or 2 µs. A measurement, not a test: exits 0 whatever the
# figures are. SCHED_FIFO needs root; as a normal user only SCHED_OTHER is compared.
#
# CONTROL=1 runs cyclictest a second time right after its first run of each case and prints
# that second run against the first the same way: how far one tool's own percentiles move
# between two back-to-back runs, the band any difference from oscost is to be read against.
#
# Usage: [ROUNDS=N] [COUNT=N] [PERIOD_US=N] [IDLE_POLL=1] [CONTROL=1] scripts/wakeup-vs-cyclictest.sh [CPU]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
count="${COUNT:-5000}"
period_us="${PERIOD_US:-1000}"
want_idle_poll="${IDLE_POLL:-0}"
control="${CONTROL:-0}"
[[ "$count" =~ ^[1-9][0-9]*$ ]] || die "COUNT must be a positive integer, got '$count'"
[[ "$period_us" =~ ^[1-9][0-9]*$ ]] || die "PERIOD_US must be a positive integer, got '$period_us'"
command -v cyclictest >/dev/null || die "cyclictest not found (Debian: apt-get install rt-tests)"
build_oscost

policies=(other)
if [[ $(id -u) == 0 ]]; then policies+=(fifo); else echo "not root: SCHED_FIFO left out" >&2; fi
laptop=(--laptop) poll=()
[[ "$want_idle_poll" == 0 ]] || laptop=() poll=(--idle-poll)

spinner=""
stop_spinner() {
    if [[ -n "$spinner" ]]; then
        kill "$spinner" 2>/dev/null || true
        wait "$spinner" 2>/dev/null || true
        spinner=""
    fi
}
trap 'stop_spinner; rm -rf "$tmp"' EXIT

# The histogram lines ("BIN COUNT", 1 µs bins, lateness cut down to whole µs) of oscost's
# case for POLICY and SUFFIX ("" idle, ".load") in result FILE, as cyclictest writes them.
# Usage: oscost_histogram FILE POLICY SUFFIX
oscost_histogram() {
    python3 - "$@" <<'PY'
import json, sys
from collections import Counter
_, path, pol, suffix = sys.argv
for e in json.load(open(path))["experiments"]:
    for c in e["cases"]:
        if c["params"]["policy"] == pol and c["id"].endswith(suffix) and (suffix or not c["id"].endswith(".load")):
            for b, n in sorted(Counter(int(v) // 1000 for v in c["raw_ns"]).items()):
                print(f"{b:06d} {n:06d}")
PY
}

# p50 and p99 in µs of a cyclictest histogram output (lines "BIN COUNT", then "# Total:"); bins
# repeated (several runs' histograms in one file) are added together.
cyclic_percentiles() {
    awk '/^[0-9]+ +[0-9]+/ { n[$1 + 0] += $2; total += $2; if ($1 + 0 > top) top = $1 + 0 }
         /^# Histogram Overflows:/ { over += $4 + 0 }
         END {
             all = total + over; c = 0; p50 = ""; p99 = ""
             for (b = 0; b <= top; b++) {
                 c += n[b]
                 if (p50 == "" && c >= 0.50 * all) p50 = b
                 if (p99 == "" && c >= 0.99 * all) p99 = b
             }
             if (p99 == "") p99 = "overflow"
             print p50, p99
         }' "$1"
}

# cyclictest POLICY LOAD(0|1) OUT
run_cyclictest() {
    local prio=(-p 90)
    # -p would make cyclictest's thread SCHED_FIFO whatever --policy says.
    [[ "$1" == fifo ]] || prio=(--policy=other)
    [[ "$2" == 0 ]] || { taskset -c "$cpu" sh -c 'while :; do :; done' & spinner=$!; }
    cyclictest -q -m -a "$cpu" -i "$period_us" -l "$count" -h 100000 "${prio[@]}" \
        ${laptop[@]+"${laptop[@]}"} >"$3" 2>&1 || die "cyclictest failed: $(tail -1 "$3")"
    stop_spinner
}

echo "oscost wakeup vs cyclictest: CPU $cpu, every ${period_us} µs, $count wake-ups a case,"
echo "$rounds interleaved rounds, /dev/cpu_dma_latency $([[ $want_idle_poll == 0 ]] && echo "not held" || echo "held at 0")"
declare -A r50 r99 d50 d99 o50s o99s c50s c99s k50 k99
keys=()
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    for pol in "${policies[@]}"; do
        "$bin" --cpus "$cpu" --quiet --no-save wakeup --period "${period_us}us" \
            --wakeups "$count" --policies "$pol" --load --no-kernel-view ${poll[@]+"${poll[@]}"} \
            --json "$tmp/o.json" >/dev/null || die "oscost wakeup failed"
        for load in 0 1; do
            run_cyclictest "$pol" "$load" "$tmp/c.txt"
            read -r c50 c99 <<<"$(cyclic_percentiles "$tmp/c.txt")"
            suffix=""
            [[ "$load" == 0 ]] || suffix=".load"
            oscost_histogram "$tmp/o.json" "$pol" "$suffix" >"$tmp/oh.txt"
            o50="" o99=""
            [[ ! -s "$tmp/oh.txt" ]] || read -r o50 o99 <<<"$(cyclic_percentiles "$tmp/oh.txt")"
            [[ -n "${o50:-}" && "$c99" != overflow ]] || { echo "  round $i $pol load=$load: no figure, skipped" >&2; continue; }
            key="$pol$suffix"
            [[ -n "${r50[$key]+x}" ]] || keys+=("$key")
            cat "$tmp/oh.txt" >>"$tmp/pool-o-$key"
            grep -E '^[0-9]+ +[0-9]+|^# Histogram Overflows:' "$tmp/c.txt" >>"$tmp/pool-c-$key" || true
            read -r q50 q99 e50 e99 <<<"$(awk -v a="$o50" -v b="$c50" -v x="$o99" -v y="$c99" \
                'BEGIN { printf "%.3f %.3f %.1f %.1f", a / b, x / y, a - b, x - y }')"
            r50[$key]+="$q50 " r99[$key]+="$q99 " d50[$key]+="$e50 " d99[$key]+="$e99 "
            o50s[$key]+="$o50 " o99s[$key]+="$o99 " c50s[$key]+="$c50 " c99s[$key]+="$c99 "
            printf '  round %d  %-11s p50 oscost %5d cyclictest %5d µs (x%s, %+.1f)   p99 oscost %5d cyclictest %5d µs (x%s, %+.1f)\n' \
                "$i" "$key" "$o50" "$c50" "$q50" "$e50" "$o99" "$c99" "$q99" "$e99"
            if [[ "$control" != 0 ]]; then
                run_cyclictest "$pol" "$load" "$tmp/c2.txt"
                grep -E '^[0-9]+ +[0-9]+|^# Histogram Overflows:' "$tmp/c2.txt" >>"$tmp/pool-k-$key" || true
                read -r k50s k99s <<<"$(cyclic_percentiles "$tmp/c2.txt")"
                [[ "$k99s" != overflow ]] || continue
                read -r g50 g99 <<<"$(awk -v a="$k50s" -v b="$c50" -v x="$k99s" -v y="$c99" \
                    'BEGIN { printf "%.3f %.3f", a / b, x / y }')"
                k50[$key]+="$g50 " k99[$key]+="$g99 "
                printf '  round %d  %-11s cyclictest again: p50 %5d µs (x%s)   p99 %5d µs (x%s)\n' \
                    "$i" "$key" "$k50s" "$g50" "$k99s" "$g99"
            fi
        done
    done
done

verdict() {
    awk -v r="$1" -v d="$2" 'BEGIN { print ((r >= 0.9 && r <= 1.1) || (d >= -2 && d <= 2)) ? "ok" : "OUTSIDE" }'
}
echo
printf '%-11s | %-40s | %-40s\n' "" "p50 µs: oscost cyclictest ratio diff" "p99 µs: oscost cyclictest ratio diff"
for k in "${keys[@]}"; do
    m50=$(median_of "${r50[$k]}") m99=$(median_of "${r99[$k]}")
    e50=$(median_of "${d50[$k]}") e99=$(median_of "${d99[$k]}")
    printf '%-11s | %7.1f %7.1f %6.3f %+6.1f %-7s | %7.1f %7.1f %6.3f %+6.1f %-7s  per-round p50 ratios: %s\n' "$k" \
        "$(median_of "${o50s[$k]}")" "$(median_of "${c50s[$k]}")" "$m50" "$e50" "$(verdict "$m50" "$e50")" \
        "$(median_of "${o99s[$k]}")" "$(median_of "${c99s[$k]}")" "$m99" "$e99" "$(verdict "$m99" "$e99")" "${r50[$k]% }"
done
echo
echo "pooled: each tool's wake-ups of all $rounds rounds in one histogram"
printf '%-11s | %-34s | %-34s\n' "" "p50 µs: oscost cyclictest ratio diff" "p99 µs: oscost cyclictest ratio diff"
for k in "${keys[@]}"; do
    read -r a50 a99 <<<"$(cyclic_percentiles "$tmp/pool-o-$k")"
    read -r b50 b99 <<<"$(cyclic_percentiles "$tmp/pool-c-$k")"
    [[ "$b99" != overflow ]] || { echo "$k: cyclictest's pooled p99 overflowed its histogram"; continue; }
    read -r q50 q99 e50 e99 <<<"$(awk -v a="$a50" -v b="$b50" -v x="$a99" -v y="$b99" \
        'BEGIN { printf "%.3f %.3f %.1f %.1f", a / b, x / y, a - b, x - y }')"
    line=$(printf '%-11s | %6d %6d %6.3f %+5.1f %-7s | %6d %6d %6.3f %+5.1f %-7s' "$k" "$a50" "$b50" "$q50" "$e50" \
        "$(verdict "$q50" "$e50")" "$a99" "$b99" "$q99" "$e99" "$(verdict "$q99" "$e99")")
    if [[ -s "$tmp/pool-k-$k" ]]; then
        read -r g50 g99 <<<"$(cyclic_percentiles "$tmp/pool-k-$k")"
        line+=$(printf '   cyclictest again: p50 %d, p99 %d µs' "$g50" "$g99")
    fi
    echo "$line"
done
if [[ "$control" != 0 ]]; then
    echo
    echo "cyclictest's second run against its first (CONTROL=1): median ratio, per-round ratios"
    for k in "${keys[@]}"; do
        [[ -n "${k50[$k]+x}" ]] || continue
        printf '%-11s | p50 %6.3f (%s) | p99 %6.3f (%s)\n' "$k" "$(median_of "${k50[$k]}")" \
            "${k50[$k]% }" "$(median_of "${k99[$k]}")" "${k99[$k]% }"
    done
fi
exit 0
