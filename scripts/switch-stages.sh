#!/usr/bin/env bash
# Holds `oscost switch`'s traced stages against the one-way times they must add up to, and the
# pipe ping-pong against `perf bench sched pipe` as an independent reference:
#   - per case (pipe, futex, eventfd x threads, processes; same CPU): the stages' sum against
#     half the round trip oscost's loop timed while traced (the check oscost makes, within
#     ±5 %), and against half the timed (untraced) round trip; the cost of tracing;
#   - pipe: oscost's timed one-way time against half of `perf bench sched pipe`'s round trip
#     (-T for threads), pinned to the same CPU, and the stages' sum against it;
#   - the switches `perf stat -e sched:sched_switch` counts on the CPU per perf bench round
#     trip (2 expected), beside the switches per round trip oscost's own trace held.
# Rounds are interleaved (oscost, perf, oscost, perf, ...), so drift hits both alike; the
# medians of the per-round ratios are printed.
#
# This is a measurement, not a test: it exits 0 whatever the ratios are, and non-zero only
# when something it needs is missing or fails. Needs root (tracepoints) and perf. Run it on an
# otherwise idle machine, one benchmark at a time.
#
# Usage: [ROUNDS=N] [QUICK=1] scripts/switch-stages.sh [CPU]
#   CPU     the CPU both tasks are pinned to (default: the last CPU this shell may use)
#   ROUNDS  interleaved rounds (default 5)
#   QUICK   1: oscost --quick (400 traced round trips instead of 2000, fewer samples)
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
perf_setup
perf bench sched pipe -l 1 >/dev/null 2>&1 || die "perf cannot run 'perf bench sched pipe'"
command -v python3 >/dev/null || die "python3 not found"

build_oscost

loops=100000
for r in $(seq 1 "$rounds"); do
    "$bin" switch --via pipe,futex,eventfd --kind threads,processes --placement same \
        --cpus "$cpu" "${quick_oscost[@]}" --no-save --quiet --json "$tmp/oscost.$r.json" \
        >/dev/null 2>"$tmp/oscost.$r.err" ||
        die "oscost failed in round $r: $(tail -1 "$tmp/oscost.$r.err")"
    for kind in processes threads; do
        flag=()
        [[ "$kind" == threads ]] && flag=(-T)
        perf stat -x, -C "$cpu" -e sched:sched_switch -o "$tmp/stat.$kind.$r.csv" -- \
            taskset -c "$cpu" perf bench sched pipe -l "$loops" "${flag[@]}" \
            >"$tmp/perf.$kind.$r.txt" 2>/dev/null ||
            die "perf bench sched pipe ${flag[*]} failed in round $r"
    done
    echo "round $r done" >&2
done

python3 - "$tmp" "$rounds" "$loops" <<'PY'
import json, statistics, sys
tmp, rounds, loops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cases = [f"{v}.{k}" for v in ("pipe", "futex", "eventfd") for k in ("threads", "processes")]
per = {c: {} for c in cases}
def add(c, key, v):
    per[c].setdefault(key, []).append(v)
for r in range(1, rounds + 1):
    doc = json.load(open(f"{tmp}/oscost.{r}.json"))
    byid = {c["id"]: c for e in doc["experiments"] for c in e["cases"]}
    perf = {}
    for kind in ("threads", "processes"):
        us = next(float(l.split()[0]) for l in open(f"{tmp}/perf.{kind}.{r}.txt")
                  if "usecs/op" in l)
        sw = next(float(l.split(",")[0]) for l in open(f"{tmp}/stat.{kind}.{r}.csv")
                  if "sched:sched_switch" in l)
        perf[kind] = (us * 1000.0 / 2.0, sw / loops)
    for c in cases:
        via, kind = c.split(".")
        s = byid.get(f"switch.{via}.{kind}.same.stages")
        if s is None:
            sys.exit(f"round {r}: no traced case for {c} (was tracing available?)")
        k = s["counters"]
        add(c, "sum_ns", k["stages_sum_ns"])
        add(c, "vs_traced", k["stages_vs_traced_one_way"])
        add(c, "vs_timed", k["stages_vs_timed_one_way"])
        add(c, "timed_ns", k["timed_one_way_ns"])
        add(c, "cost_ns", k["trace_cost_ns"])
        add(c, "cost_pct", k["trace_cost_pct"])
        add(c, "sw_traced", k["switches_per_round_trip_traced"])
        add(c, "checked", 1.0 if s["checks_passed"] else 0.0)
        if via == "pipe":
            one_way, sw = perf[kind]
            add(c, "perf_ns", one_way)
            add(c, "perf_sw", sw)
            add(c, "timed_vs_perf", k["timed_one_way_ns"] / one_way)
            add(c, "sum_vs_perf", k["stages_sum_ns"] / one_way)
med = statistics.median
def rng(v):
    return f"{med(v):.3f} ({min(v):.3f}..{max(v):.3f})"
print(f"{rounds} interleaved rounds; medians, (lowest..highest) over rounds")
print(f"{'case':<18} {'sum':>9} {'sum/traced 1-way':>22} {'within 5 %':>10} "
      f"{'sum/timed 1-way':>22} {'tracing cost':>18} {'sw/RT traced':>12}")
for c in cases:
    p = per[c]
    print(f"{c:<18} {med(p['sum_ns']):>7.0f}ns {rng(p['vs_traced']):>22} "
          f"{sum(p['checked']):>6.0f}/{rounds:<3} {rng(p['vs_timed']):>22} "
          f"{'+%.0f ns, %+.0f %%' % (med(p['cost_ns']), med(p['cost_pct'])):>18} "
          f"{med(p['sw_traced']):>12.2f}")
print()
print("pipe against perf bench sched pipe (same CPU; -T for threads), one-way = RT/2:")
for c in ("pipe.threads", "pipe.processes"):
    p = per[c]
    print(f"{c:<18} oscost timed {med(p['timed_ns']):.0f} ns, perf {med(p['perf_ns']):.0f} ns: "
          f"timed/perf {rng(p['timed_vs_perf'])}; stages sum/perf {rng(p['sum_vs_perf'])}; "
          f"perf stat sched_switch per perf round trip {med(p['perf_sw']):.2f}")
PY
