#!/usr/bin/env bash
# Holds `oscost timeline`'s kernel view against `perf sched timehist` of the same run: while
# oscost runs its timed rounds and then its traced round per worker count, `perf sched record`
# records the same CPU; afterwards each worker of the traced rounds (its tid, from oscost's
# JSON) gets its run time from perf's per-task summary, against oscost's own figure from its
# traced switches (`run_traced_worker<N>_ns`: every run in the trace, from the common start to
# the worker's exit). perf's figure covers the worker's whole life, so its few microseconds of
# setup before the common start are in perf's and not in oscost's.
#
# Each round is one oscost run (worker counts 2 and 4, interleaved inside it), pinned to one
# CPU; the median over every worker of every round of oscost / perf is printed, with the
# kernel's slices against the workers' own.
#
# This is a measurement, not a test: it exits 0 whatever the ratios are, and non-zero only
# when something it needs is missing or fails. Needs root (tracepoints) and perf. Run it on an
# otherwise idle machine, one benchmark at a time.
#
# Not an entry of `cargo xtask vs`: perf must record oscost's own run (perf sched record --
# oscost), so oscost's figures are that run's document, not a run of their own; and the two
# sides meet only by thread id, which oscost's document names per case and which changes every
# round, so there is no id stable over the rounds to pair, and the figure is a median over every
# worker of every round (per worker count) of the ratios, not a median of a case's rounds.
#
# Usage: [ROUNDS=N] [TRACE_WITH=M] scripts/timeline-vs-perf-sched.sh [CPU]
#   CPU         the CPU the workers share (default: the last CPU this shell may use)
#   ROUNDS      rounds (default 5)
#   TRACE_WITH  oscost's mechanism, bpf, ftrace or perf (default: oscost's choice); the one
#               used is printed with its records lost and the traced round's time over the
#               untraced one's
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
perf_setup
command -v python3 >/dev/null || die "python3 not found"

build_oscost

for r in $(seq 1 "$rounds"); do
    perf sched record -C "$cpu" -o "$tmp/perf.$r.data" -- \
        "$bin" timeline ${TRACE_WITH:+--trace-with "$TRACE_WITH"} --cpus "$cpu" --workers 2,4 --rounds 1 --no-save --quiet \
        --json "$tmp/timeline.$r.json" >/dev/null 2>"$tmp/oscost.$r.err" ||
        die "oscost or perf failed in round $r: $(tail -1 "$tmp/oscost.$r.err")"
    perf sched timehist -i "$tmp/perf.$r.data" --summary >"$tmp/timehist.$r.txt" 2>/dev/null ||
        die "perf sched timehist failed in round $r"
    echo "round $r done" >&2
done

python3 - "$tmp" "$rounds" <<'PY'
import json, re, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
task = re.compile(r"^\s*(.+)\[(\d+)\]\s+(\d+)\s+(\d+)\s+([\d.]+)\s")
ratios, slices, within, breaks = {}, {}, {}, 0
costs, mechs, lost = {}, set(), 0
for r in range(1, rounds + 1):
    doc = json.load(open(f"{tmp}/timeline.{r}.json"))
    perf = {}
    for line in open(f"{tmp}/timehist.{r}.txt"):
        m = task.match(line)
        if m:
            perf[int(m.group(2))] = perf.get(int(m.group(2)), 0.0) + float(m.group(5)) * 1e6
    cases = [c for e in doc["experiments"] for c in e["cases"] if c["id"].endswith(".kernel")]
    if not cases:
        sys.exit(f"round {r}: no traced case in oscost's output (not root?)")
    for c in cases:
        k, n = c["counters"], c["params"]["workers"]
        breaks += k.get("switch_chain_breaks", 0)
        trace = c.get("trace")
        if trace:
            mechs.add(trace["mechanism"])
            lost += trace["lost"]
            costs.setdefault(n, []).append(trace["traced_ns"] / trace["untraced_ns"])
        line = []
        for w, tid in enumerate(c["params"]["tids"], 1):
            ours, theirs = k[f"run_traced_worker{w}_ns"], perf.get(tid)
            if not theirs:
                line.append(f"w{w} tid {tid}: not in perf's summary")
                continue
            ratios.setdefault(n, []).append(ours / theirs)
            line.append(f"w{w} {ours / 1e6:.3f} vs {theirs / 1e6:.3f} ms")
        if "slice_ratio_median" in k:
            slices.setdefault(n, []).append(k["slice_ratio_median"])
            within.setdefault(n, []).append(k["slices_within_chunk_pct"])
        print(f"round {r}, {n} workers: run time oscost vs perf sched: " + "; ".join(line))
print()
for n, v in sorted(ratios.items()):
    print(f"{n} workers: run time oscost / perf sched timehist: median {statistics.median(v):.4f} "
          f"(min {min(v):.4f}, max {max(v):.4f}, {len(v)} workers over {rounds} rounds)")
for n, v in sorted(slices.items()):
    print(f"{n} workers: kernel turns / the workers' own, median of the rounds' medians "
          f"{statistics.median(v):.3f} (min {min(v):.3f}, max {max(v):.3f}); within a chunk: "
          f"median {statistics.median(within[n]):.0f} % of turns")
print(f"switches missing on the workers' CPU in oscost's traces: {breaks:.0f}")
print(f"recorded by {', '.join(sorted(mechs)) or '?'}, {lost} records lost")
for n, v in sorted(costs.items()):
    print(f"{n} workers: traced round / untraced round: median {statistics.median(v):.3f} "
          f"(min {min(v):.3f}, max {max(v):.3f})")
PY
