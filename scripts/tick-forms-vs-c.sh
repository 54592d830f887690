#!/usr/bin/env bash
# Holds `oscost tick-forms` against benches/tickforms_ref.c: the same work loop (the same
# instructions, 64-byte aligned) and the same units (read from oscost's result), the same three
# forms (one flow, N threads, N forked processes) on one CPU, the same event source (a helper
# thread on that CPU at SCHED_FIFO 2 blocked on a periodic timerfd, counting its wake-ups), the
# same workers' policy, timed the same way (barrier opening to last finish). A round runs
# oscost's grid, then the C program's, both pinned with taskset to one CPU and each
# interleaving its points internally; after the rounds the script prints, per form and period,
# the median over rounds of the run-time ratio oscost / C and of the ratio of cycles per event,
# (cycles(P) - cycles(none)) / (events(P) - events(none)), each side from its own medians.
#
# This is a measurement, not a test: it exits 0 whatever the ratios are, and non-zero only when
# something it needs is missing or fails. Installs nothing. Run it on an otherwise idle
# machine, one benchmark at a time.
#
# Usage: [ROUNDS=5] [QUICK=1] [PERIODS=1ms,200us,50us] [POLICY=fifo|other|rr] [TASKS=4]
#        [WORK=100ms] [RUNS=3] scripts/tick-forms-vs-c.sh [CPU]
#   CPU     the CPU both sides run on (default: the last CPU this shell may use; also $CPU)
#   ROUNDS  interleaved rounds (default 5)
#   PERIODS timer periods as oscost spells them (default 1ms,200us,50us)
#   POLICY  the workers' policy (default fifo as root, else other: under other the work shares
#           the CPU with every fair task of the machine, which both sides see differently)
#   RUNS    runs of each point per side in a round (default 3)
#   QUICK=1 20 ms of work, 1 run a point: a check of the script itself, not a figure
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
periods="${PERIODS:-1ms,200us,50us}"
tasks="${TASKS:-4}"
work="${WORK:-100ms}"
runs="${RUNS:-3}"
if [[ -z "${POLICY:-}" ]]; then
    if [[ "$(id -u)" == 0 ]]; then POLICY=fifo; else POLICY=other; fi
fi
policy="$POLICY"
[[ "$policy" =~ ^(other|fifo|rr)$ ]] || die "POLICY must be other, fifo or rr, got '$policy'"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer, got '$runs'"
if [[ "$quick" == 1 ]]; then
    work=20ms runs=1
fi

# Each period in ns, and as oscost names it in case ids (1ms, 49us, 9200ns).
period_ns=() period_names=()
IFS=, read -r -a plist <<<"$periods"
for p in "${plist[@]}"; do
    ns=$(awk -v p="$p" 'BEGIN {
        n = p + 0; u = p; sub(/^[0-9.]+/, "", u)
        s = (u == "ns") ? 1 : (u == "us" || u == "µs") ? 1e3 : (u == "ms") ? 1e6 : (u == "s") ? 1e9 : 0
        if (s == 0 || n <= 0) exit 1
        printf "%.0f", n * s
    }') || die "PERIODS must be times such as 1ms,50us, got '$p'"
    period_ns+=("$ns")
    period_names+=("$(awk -v n="$ns" 'BEGIN {
        if (n % 1000000 == 0) printf "%dms", n / 1000000
        else if (n % 1000 == 0) printf "%dus", n / 1000
        else printf "%dns", n
    }')")
done

echo "building benches/tickforms_ref.c and oscost (release)..." >&2
cc -O2 -pthread -o "$tmp/tickforms_ref" benches/tickforms_ref.c ||
    die "cc failed on benches/tickforms_ref.c"
build_oscost
command -v python3 >/dev/null 2>&1 || die "'python3' is required to read oscost's JSON"

# oscost's grid as lines "FORM PERIOD_NS median_ns cycles events", and its units and step.
oscost_grid() { # JSON
    python3 - "$1" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))["experiments"][0]
print("units", e["params"]["work_units"], e["params"]["step_units"])
for c in e["cases"]:
    if c["unit"] != "run":
        continue
    p = c["params"]
    print(p["form"], int(p.get("period_ns", 0)), c["median_ns"], c["counters"]["cycles"],
          c["counters"]["events"])
PY
}

declare -A o_ns o_cyc o_ev c_ns c_cyc c_ev t_ratios e_ratios o_cpe c_cpe o_times c_times
forms=(single threads processes)
echo "oscost tick-forms vs C: $tasks tasks, policy $policy, CPU $cpu, work $work, periods" \
    "$periods, $runs runs a point a side, $rounds interleaved rounds; ratio = oscost / C"
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    json="$tmp/o$i.json"
    taskset -c "$cpu" "$bin" --quiet --cpus "$cpu" tick-forms --tasks "$tasks" \
        --periods "$periods" --policies "$policy" --work "$work" --rounds "$runs" \
        --json "$json" >/dev/null || die "oscost tick-forms failed"
    read -r _ units step < <(oscost_grid "$json" | head -1)
    while read -r form p ns cyc ev; do
        o_ns[$form.$p]=$ns o_cyc[$form.$p]=$cyc o_ev[$form.$p]=$ev
    done < <(oscost_grid "$json" | tail -n +2)
    taskset -c "$cpu" "$tmp/tickforms_ref" "$units" "$step" "$tasks" "$policy" "$runs" \
        "${period_ns[@]}" >"$tmp/c$i.txt" || die "tickforms_ref failed (or did not do W units)"
    while read -r form p ns cyc ev _; do
        c_ns[$form.$p]=$ns c_cyc[$form.$p]=$cyc c_ev[$form.$p]=$ev
    done <"$tmp/c$i.txt"
    for form in "${forms[@]}"; do
        for p in 0 "${period_ns[@]}"; do
            k="$form.$p"
            [[ -n "${o_ns[$k]:-}" && -n "${c_ns[$k]:-}" ]] || die "no figure for $k"
            o_times[$k]+="${o_ns[$k]} " c_times[$k]+="${c_ns[$k]} "
            t_ratios[$k]+="$(awk -v o="${o_ns[$k]}" -v c="${c_ns[$k]}" 'BEGIN { printf "%.4f", o / c }') "
            [[ "$p" == 0 ]] && continue
            b="$form.0"
            e_ratios[$k]+="$(awk -v oc="${o_cyc[$k]}" -v ob="${o_cyc[$b]}" -v oe="${o_ev[$k]}" \
                -v cc="${c_cyc[$k]}" -v cb="${c_cyc[$b]}" -v ce="${c_ev[$k]}" 'BEGIN {
                o = (oe > 0) ? (oc - ob) / oe : 0; c = (ce > 0) ? (cc - cb) / ce : 0
                if (c == 0) print "nan"; else printf "%.4f", o / c }') "
            o_cpe[$k]+="$(awk -v a="${o_cyc[$k]}" -v b="${o_cyc[$b]}" -v e="${o_ev[$k]}" 'BEGIN { printf "%.0f", (e > 0) ? (a - b) / e : 0 }') "
            c_cpe[$k]+="$(awk -v a="${c_cyc[$k]}" -v b="${c_cyc[$b]}" -v e="${c_ev[$k]}" 'BEGIN { printf "%.0f", (e > 0) ? (a - b) / e : 0 }') "
        done
    done
    # Run times of this round, to see each side's spread.
    for form in "${forms[@]}"; do
        printf '  round %d %-9s' "$i" "$form"
        for p in 0 "${period_ns[@]}"; do
            printf '  %s %.2f/%.2f ms' "$([[ $p == 0 ]] && echo none || echo "$p"ns)" \
                "$(awk -v v="${o_ns[$form.$p]}" 'BEGIN { print v / 1e6 }')" \
                "$(awk -v v="${c_ns[$form.$p]}" 'BEGIN { print v / 1e6 }')"
        done
        echo
    done
done
echo
printf '%-10s %-7s %10s %10s %11s %14s %14s %10s\n' form period "oscost ms" "C ms" "time o/C" \
    "oscost cyc/ev" "C cyc/ev" "cyc/ev o/C"
for form in "${forms[@]}"; do
    for j in -1 "${!period_ns[@]}"; do
        if [[ "$j" == -1 ]]; then p=0 name=none; else p="${period_ns[$j]}" name="${period_names[$j]}"; fi
        k="$form.$p"
        tr=$(median_of "${t_ratios[$k]}")
        om=$(awk -v v="$(median_of "${o_times[$k]}")" 'BEGIN { printf "%.2f", v / 1e6 }')
        cm=$(awk -v v="$(median_of "${c_times[$k]}")" 'BEGIN { printf "%.2f", v / 1e6 }')
        if [[ "$p" == 0 ]]; then
            printf '%-10s %-7s %10s %10s %11.3f %14s %14s %10s\n' "$form" "$name" "$om" "$cm" "$tr" - - -
        else
            printf '%-10s %-7s %10s %10s %11.3f %14.0f %14.0f %10.3f\n' "$form" "$name" "$om" "$cm" "$tr" \
                "$(median_of "${o_cpe[$k]}")" "$(median_of "${c_cpe[$k]}")" \
                "$(median_of "$(tr ' ' '\n' <<<"${e_ratios[$k]}" | grep -v nan | tr '\n' ' ')")"
        fi
    done
done
echo "(medians over $rounds rounds of per-round ratios; cycles per event from each side's medians" \
    "of the round: (cycles(P) - cycles(none)) / events(P); reference cycles)"
exit 0
