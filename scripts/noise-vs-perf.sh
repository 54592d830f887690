#!/usr/bin/env bash
# Holds `oscost noise`'s kernel view against two independent counts of the same events:
#   - the local timer entries it traced, against /proc/interrupts' LOC over the same window
#     (oscost reads LOC itself around its traced spin; this prints the two and their ratio);
#   - the rate of each tracepoint it recorded on the CPU, against `perf stat -e` of the same
#     tracepoints on the same CPU, counting through a window inside oscost's traced spin
#     (perf starts a second after the traced spin is due to start and stops a second before
#     it is due to end), so both see the same busy loop on the same CPU.
# Each round is one oscost run with perf counting inside it; the medians of the per-round
# ratios are printed, with the attributed share of the lost time and what is left outside the
# kernel's view.
#
# This is a measurement, not a test: it exits 0 whatever the ratios are, and non-zero only
# when something it needs is missing or fails. Needs root (tracepoints) and perf. Run it on an
# otherwise idle machine, one benchmark at a time.
#
# Usage: [ROUNDS=N] [DURATION=5] [TRACE_WITH=M] scripts/noise-vs-perf.sh [CPU]
#   CPU         the CPU oscost spins on (default: the last CPU this shell may use)
#   ROUNDS      rounds (default 5)
#   DURATION    seconds of each of oscost's two spins (default 5; at least 4)
#   TRACE_WITH  oscost's mechanism, bpf, ftrace or perf (default: oscost's choice); each
#               round prints the one used, its records lost, and the CPU's time lost traced
#               over untraced
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
duration="${DURATION:-5}"
[[ "$duration" =~ ^[0-9]+$ && "$duration" -ge 4 ]] || die "DURATION must be whole seconds, at least 4"
perf_setup
command -v python3 >/dev/null || die "python3 not found"

build_oscost

events=irq_vectors:local_timer_entry,irq:irq_handler_entry,irq:softirq_entry,sched:sched_switch,irq_vectors:reschedule_entry,irq_vectors:call_function_single_entry
window=$((duration - 2))

for r in $(seq 1 "$rounds"); do
    json="$tmp/noise.$r.json"
    start=$(date +%s.%N)
    "$bin" noise ${TRACE_WITH:+--trace-with "$TRACE_WITH"} --cpus "$cpu" --duration "${duration}s" --no-save --quiet --json "$json" \
        >/dev/null 2>"$tmp/oscost.$r.err" &
    pid=$!
    # oscost starts, times its loop (under a second), spins untraced, then traced.
    python3 -c "import time,sys; t=float(sys.argv[1])+1.0+$duration+1.0; time.sleep(max(0,t-time.time()))" "$start"
    perf stat -x, -C "$cpu" -e "$events" -o "$tmp/perf.$r.csv" -- sleep "$window" 2>/dev/null
    wait "$pid" || die "oscost failed in round $r: $(tail -1 "$tmp/oscost.$r.err")"
    echo "round $r done" >&2
done

python3 - "$tmp" "$rounds" "$cpu" "$window" <<'PY'
import json, statistics, sys
tmp, rounds, cpu, window = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
ratios, loc, attributed, outside, outside_period = {}, [], [], [], []
costs, mechs, lost = [], set(), 0
for r in range(1, rounds + 1):
    doc = json.load(open(f"{tmp}/noise.{r}.json"))
    case = next(c for e in doc["experiments"] for c in e["cases"]
                if c["id"] == f"noise.cpu{cpu}.kernel")
    k = case["counters"]
    trace = case.get("trace")
    if trace:
        mechs.add(trace["mechanism"])
        lost += trace["lost"]
        costs.append(trace["traced_ns"] / trace["untraced_ns"])
    loc.append((k["timer_events_in_window"], k["local_timer_interrupts"]))
    attributed.append(k["attributed_pct"])
    outside.append(k.get("outside_pct", 0.0))
    outside_period.append(k.get("outside_period_ns"))
    perf = {}
    for line in open(f"{tmp}/perf.{r}.csv"):
        f = line.strip().split(",")
        if len(f) > 2 and f[0].replace(".", "").isdigit():
            perf[f[2]] = float(f[0])
    line = [f"round {r}: timer traced {loc[-1][0]:.0f} vs LOC {loc[-1][1]:.0f}"]
    for ev, n in perf.items():
        ours = k.get(f"events.{ev.replace(':', '.')}.per_s")
        if ours is None or n == 0:
            continue
        ratio = ours / (n / window)
        ratios.setdefault(ev, []).append(ratio)
        line.append(f"{ev} {ours:.1f}/s vs perf {n / window:.1f}/s")
    print("; ".join(line))
    print(f"  attributed {attributed[-1]:.1f} % of the lost time; outside the kernel's view "
          f"{outside[-1]:.1f} %" + (f" (every {outside_period[-1] / 1e6:.2f} ms)"
                                     if outside_period[-1] else ""))
print()
t = [a / b for a, b in loc if b > 0]
within = sum(1 for x in t if abs(x - 1) <= 0.02)
print(f"timer entries traced / LOC: median {statistics.median(t):.4f}, "
      f"min {min(t):.4f}, max {max(t):.4f}; within ±2 % in {within} of {len(t)} rounds")
for ev, v in ratios.items():
    print(f"{ev} rate oscost / perf stat: median {statistics.median(v):.3f} "
          f"(min {min(v):.3f}, max {max(v):.3f}, {len(v)} rounds)")
if costs:
    print(f"recorded by {', '.join(sorted(mechs))}, {lost} records lost; the CPU's time lost "
          f"traced / untraced: median {statistics.median(costs):.3f} "
          f"(min {min(costs):.3f}, max {max(costs):.3f})")
print(f"attributed share of the lost time: median {statistics.median(attributed):.1f} % "
      f"(min {min(attributed):.1f} %); outside the kernel's view: median "
      f"{statistics.median(outside):.1f} %")
PY
