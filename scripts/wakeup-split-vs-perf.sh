#!/usr/bin/env bash
# Holds `oscost wakeup`'s kernel split (its traced pass, case `<case>.kernel`) against an
# independent split: scripts/wakeup-split-perf.py, which records the same tracepoints with
# `perf record` and splits the wake-ups with its own parser. Per policy and round, interleaved:
#   1. oscost wakeup with its traced pass: the parts' medians of its .kernel case;
#   2. the same oscost wakeup (no traced pass) under wakeup-split-perf.py: the same program's
#      wake-ups split by the other tracer and parser;
#   3. cyclictest with the same period, policy, CPU and count under wakeup-split-perf.py.
# Printed: each part's median (slack, interrupt, to_switch, to_return, and the kernel's lateness,
# deadline to the return to user space) of the three, and the ratios 2/1 and 3/1 as medians over
# the rounds. Both hold /dev/cpu_dma_latency at 0 (oscost --idle-poll, cyclictest's default).
# Needs root (perf's tracepoints, SCHED_FIFO). A measurement, not a test: exits 0 whatever the
# figures are.
#
# TRACE_WITH=perf|ftrace|bpf is handed to oscost's --trace-with: with perf both splits read
# the same mechanism's records, so what differs is only the two parsers and splitters; with
# ftrace (oscost's default where allowed) the difference includes perf's heavier recording.
#
# Usage: [ROUNDS=N] [COUNT=N] [POLICIES="other fifo"] [TRACE_WITH=M] scripts/wakeup-split-vs-perf.sh [CPU]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
count="${COUNT:-2000}"
read -r -a policies <<<"${POLICIES:-other fifo}"
trace_with=()
[[ -z "${TRACE_WITH:-}" ]] || trace_with=(--trace-with "$TRACE_WITH")
[[ "$count" =~ ^[1-9][0-9]*$ && "$count" -le 2000 ]] ||
    die "COUNT must be from 1 to 2000 (oscost traces at most 2000 wake-ups a case), got '$count'"
[[ $(id -u) == 0 ]] || die "needs root: perf's tracepoints and SCHED_FIFO (run it with sudo)"
command -v cyclictest >/dev/null || die "cyclictest not found (Debian: apt-get install rt-tests)"
command -v perf >/dev/null || die "perf not found (Debian: apt-get install linux-perf)"
build_oscost
trap 'rm -rf "$tmp"' EXIT

echo "oscost wakeup's split vs wakeup-split-perf.py: CPU $cpu, every 1 ms, $count wake-ups," \
    "$rounds interleaved rounds, /dev/cpu_dma_latency held at 0, oscost's tracer: ${TRACE_WITH:-its default}"
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    for pol in "${policies[@]}"; do
        prio=(--policy=other)
        [[ "$pol" == other ]] || prio=(-p 90)
        "$bin" --cpus "$cpu" --quiet --no-save wakeup --wakeups "$count" --policies "$pol" \
            --idle-poll ${trace_with[@]+"${trace_with[@]}"} --json "$tmp/own.json" >/dev/null ||
            die "oscost wakeup failed"
        scripts/wakeup-split-perf.py --cpu "$cpu" --thread oscost-wakeup --json "$tmp/po.json" -- \
            "$bin" --cpus "$cpu" --quiet --no-save wakeup --wakeups "$count" --policies "$pol" \
            --idle-poll --no-kernel-view >/dev/null || die "oscost under perf failed"
        scripts/wakeup-split-perf.py --cpu "$cpu" --thread cyclictest --json "$tmp/pc.json" -- \
            cyclictest -q -m -a "$cpu" -i 1000 -l "$count" "${prio[@]}" >/dev/null ||
            die "cyclictest under perf failed"
        while read -r part own po pc; do
            echo "$pol $part $own $po $pc" >>"$tmp/all.tsv"
            printf '  round %d %-5s %-9s oscost split %7.2f µs  perf on oscost %7.2f  perf on cyclictest %7.2f\n' \
                "$i" "$pol" "$part" "$own" "$po" "$pc"
        done < <(python3 - "$tmp/own.json" "$tmp/po.json" "$tmp/pc.json" "$pol" <<'PY'
import json, sys
own_path, po_path, pc_path, pol = sys.argv[1:]
case = next(c for e in json.load(open(own_path))["experiments"] for c in e["cases"]
            if c["id"] == f"wakeup.{pol}.1ms.kernel")
k = case["counters"]
po, pc = json.load(open(po_path)), json.load(open(pc_path))
for part in ["slack", "interrupt", "to_switch", "to_return", "kernel"]:
    own = k["kernel_median_ns"] if part == "kernel" else k[f"part.{part}.median_ns"]
    print(part, own / 1e3, po[part]["median_ns"] / 1e3, pc[part]["median_ns"] / 1e3)
PY
)
    done
done

echo
python3 - "$tmp/all.tsv" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print(f"{'':<5} {'':<9} | median µs: oscost  perf-o  perf-c | perf-o/oscost perf-c/oscost (per-round ratios)")
seen = []
for pol, part, *_ in rows:
    if (pol, part) not in seen:
        seen.append((pol, part))
for pol, part in seen:
    v = [[float(x) for x in r[2:]] for r in rows if r[0] == pol and r[1] == part]
    own, po, pc = (statistics.median(c) for c in zip(*v))
    ro = [p / o for o, p, _ in v if o > 0]
    rc = [c / o for o, _, c in v if o > 0]
    med = lambda r: f"{statistics.median(r):6.3f}" if r else "     -"
    print(f"{pol:<5} {part:<9} | {own:8.2f} {po:7.2f} {pc:7.2f}       | {med(ro)} {med(rc)}   "
          f"({' '.join(f'{x:.3f}' for x in ro)} / {' '.join(f'{x:.3f}' for x in rc)})")
PY
exit 0
