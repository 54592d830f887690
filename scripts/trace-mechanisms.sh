#!/usr/bin/env bash
# What each way of recording the kernel's tracepoints costs the ping-pong it takes apart, and
# how much of each stage was the tracing itself:
#   - `perf bench sched pipe` (processes, and -T threads), pinned to one CPU, untraced: the
#     independent reference of the system as it runs (its one-way time = RT/2);
#   - `oscost switch --trace-with M` for M = bpf, ftrace, perf (pipe, futex, eventfd x threads,
#     processes; same CPU): each case's traced round trip over its untraced one from the same
#     pass (targets: <= 1.35 bpf, <= 1.65 ftrace), the stages' sum against the traced one-way
#     time (within ±5 %), and oscost's untraced pipe one-way time against perf bench's;
#   - each stage's median with bpf against with perf: what perf's tracing added to it.
# Rounds are interleaved (perf bench, bpf, ftrace, perf, perf bench, ...), so drift hits all
# alike; medians over rounds are printed with their lowest..highest.
#
# This is a measurement, not a test: it exits 0 whatever the ratios are, and non-zero only
# when something it needs is missing or fails. Needs root (BPF, an ftrace instance,
# tracepoints) and perf. Run it on an otherwise idle machine, one benchmark at a time.
#
# Usage: [ROUNDS=N] [QUICK=1] scripts/trace-mechanisms.sh [CPU]
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

mechanisms=(bpf ftrace perf)
loops=100000
for r in $(seq 1 "$rounds"); do
    for kind in processes threads; do
        flag=()
        [[ "$kind" == threads ]] && flag=(-T)
        taskset -c "$cpu" perf bench sched pipe -l "$loops" "${flag[@]}" \
            >"$tmp/perf.$kind.$r.txt" 2>/dev/null ||
            die "perf bench sched pipe ${flag[*]} failed in round $r"
    done
    for m in "${mechanisms[@]}"; do
        "$bin" switch --via pipe,futex,eventfd --kind threads,processes --placement same \
            --trace-with "$m" --cpus "$cpu" "${quick_oscost[@]}" --no-save --quiet \
            --json "$tmp/oscost.$m.$r.json" >/dev/null 2>"$tmp/oscost.$m.$r.err" ||
            die "oscost --trace-with $m failed in round $r: $(tail -1 "$tmp/oscost.$m.$r.err")"
    done
    echo "round $r done" >&2
done

python3 - "$tmp" "$rounds" "${mechanisms[@]}" <<'PY'
import json, statistics, sys
tmp, rounds, mechs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
cases = [f"{v}.{k}" for v in ("pipe", "futex", "eventfd") for k in ("threads", "processes")]
stages = ["switch_to_return", "user", "post_to_wake", "wake_to_switch"]
per = {}
def add(key, v):
    per.setdefault(key, []).append(v)
for r in range(1, rounds + 1):
    bench = {}
    for kind in ("threads", "processes"):
        us = next(float(l.split()[0]) for l in open(f"{tmp}/perf.{kind}.{r}.txt")
                  if "usecs/op" in l)
        bench[kind] = us * 1000.0 / 2.0
        add(("bench", kind), bench[kind])
    for m in mechs:
        doc = json.load(open(f"{tmp}/oscost.{m}.{r}.json"))
        e = doc["experiments"][0]
        used = e["params"].get("kernel_view_mechanism")
        if used != m:
            sys.exit(f"round {r}: --trace-with {m} traced with {used}: {e.get('notes')}")
        byid = {c["id"]: c for c in e["cases"]}
        for c in cases:
            via, kind = c.split(".")
            s = byid.get(f"switch.{via}.{kind}.same.stages")
            if s is None:
                sys.exit(f"round {r}: no traced case for {c} with {m}")
            t, k = s["trace"], s["counters"]
            add((m, c, "ratio"), t["traced_ns"] / t["untraced_ns"])
            add((m, c, "cover"), k["stages_vs_traced_one_way"])
            add((m, c, "checked"), 1.0 if s["checks_passed"] else 0.0)
            add((m, c, "lost"), t["lost"])
            for st in stages:
                v = k.get(f"stage.{st}.median_ns")
                if v is not None:
                    add((m, c, st), v)
            if via == "pipe":
                add((m, c, "untraced_vs_bench"), t["untraced_ns"] / 2.0 / bench[kind])
med = statistics.median
def rng(v):
    return f"{med(v):.3f} ({min(v):.3f}..{max(v):.3f})" if v else "-"
print(f"{rounds} interleaved rounds; medians, (lowest..highest) over rounds")
print("perf bench sched pipe, untraced, one-way (RT/2): " + ", ".join(
    f"{k} {med(per[('bench', k)]):.0f} ns" for k in ("threads", "processes")))
print()
print(f"{'case':<18} {'mechanism':<7} {'traced/untraced':>22} {'sum/traced 1-way':>22} "
      f"{'within 5 %':>10} {'lost':>5}")
for c in cases:
    for m in mechs:
        print(f"{c:<18} {m:<7} {rng(per[(m, c, 'ratio')]):>22} {rng(per[(m, c, 'cover')]):>22} "
              f"{sum(per[(m, c, 'checked')]):>6.0f}/{rounds:<3} {max(per[(m, c, 'lost')]):>5.0f}")
print()
print("oscost's untraced pipe one-way time over perf bench's (same CPU; -T for threads):")
for c in ("pipe.threads", "pipe.processes"):
    print(f"{c:<18} " + ", ".join(f"{m} pass {rng(per[(m, c, 'untraced_vs_bench')])}"
                                   for m in mechs))
print()
if "bpf" in mechs and "perf" in mechs:
    print("stage medians, ns: bpf, perf, perf/bpf (what perf's tracing added to each stage)")
    print(f"{'case':<18} " + " ".join(f"{s:>26}" for s in stages))
    for c in cases:
        cells = []
        for st in stages:
            b, p = per.get(("bpf", c, st)), per.get(("perf", c, st))
            if b and p:
                cells.append(f"{med(b):>6.0f} {med(p):>6.0f} x{med(p) / med(b):<5.2f}")
            else:
                cells.append("-")
        print(f"{c:<18} " + " ".join(f"{x:>26}" for x in cells))
PY
