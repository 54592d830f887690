#!/usr/bin/env bash
# Acceptance check: oscost's same-CPU pipe ping-pong against `perf bench sched pipe`.
#
# Both time one round trip (perf's usecs/op is one round trip, 2 switches) of two tasks
# pinned to one CPU, for processes and for threads (-T). The runs are interleaved and repeated
# so that drift of the machine during the session hits both tools alike; the median of the
# repeats is compared. Target: oscost/perf within +-10 %. Exits 1 outside the target, 2 if a
# tool is missing or fails. Installs nothing.
#
# Usage: scripts/perf-vs-oscost-switch.sh [CPU] [REPEATS]   (defaults: 0, 5)
set -euo pipefail

cpu="${1:-0}"
repeats="${2:-5}"
loops=200000
tolerance=0.10

cd "$(dirname "$0")/.."

if ! command -v perf >/dev/null 2>&1 || ! perf bench sched pipe -l 1 >/dev/null 2>&1; then
    echo "error: 'perf' is missing or cannot run 'perf bench' (Debian/Ubuntu: apt install linux-perf," >&2
    echo "       or linux-tools-\$(uname -r)); this script installs nothing" >&2
    exit 2
fi
for tool in taskset python3 cargo; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "error: '$tool' is required but not found" >&2
        exit 2
    fi
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "building oscost (release)..." >&2
cargo build --release -q

# perf's usecs/op line: "       5.582000 usecs/op"
perf_rt_us() {
    taskset -c "$cpu" perf bench sched pipe -l "$loops" "$@" |
        awk '/usecs\/op/ { print $1 }'
}

# oscost's round-trip median of switch.pipe.<kind>.same, in microseconds.
oscost_rt_us() {
    local kind="$1" json="$tmp/oscost-$1.json"
    cargo run --release -q -- --quiet --cpus "$cpu" switch --via pipe --kind "$kind" \
        --placement same --json "$json" >/dev/null
    python3 - "$json" "switch.pipe.$kind.same" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for e in doc["experiments"]:
    for c in e["cases"]:
        if c["id"] == sys.argv[2]:
            print(c["median_ns"] / 1000.0)
            sys.exit(0)
sys.exit("case %s not found in %s" % (sys.argv[2], sys.argv[1]))
EOF
}

declare -A perf_runs oscost_runs
for ((i = 1; i <= repeats; i++)); do
    echo "round $i of $repeats..." >&2
    perf_runs[processes]+="$(perf_rt_us) "
    oscost_runs[processes]+="$(oscost_rt_us processes) "
    perf_runs[threads]+="$(perf_rt_us -T) "
    oscost_runs[threads]+="$(oscost_rt_us threads) "
done

python3 - "$cpu" "$tolerance" \
    "${perf_runs[processes]}" "${oscost_runs[processes]}" \
    "${perf_runs[threads]}" "${oscost_runs[threads]}" <<'EOF'
import statistics, sys
cpu, tol = sys.argv[1], float(sys.argv[2])
rows = [("processes", sys.argv[3], sys.argv[4]), ("threads", sys.argv[5], sys.argv[6])]
print(f"same-CPU pipe round trip on CPU {cpu} (median of runs; perf usecs/op = 1 round trip)")
print(f"{'kind':<10} {'perf µs':>9} {'oscost µs':>10} {'oscost/perf':>12}  runs perf | oscost")
ok = True
for kind, p, o in rows:
    p = [float(x) for x in p.split()]
    o = [float(x) for x in o.split()]
    mp, mo = statistics.median(p), statistics.median(o)
    ratio = mo / mp
    within = abs(ratio - 1) <= tol
    ok &= within
    runs = " ".join(f"{x:.2f}" for x in p) + " | " + " ".join(f"{x:.2f}" for x in o)
    print(f"{kind:<10} {mp:>9.3f} {mo:>10.3f} {ratio:>12.3f}  {runs}{'' if within else '  OUTSIDE'}")
print(f"target: oscost/perf within ±{tol:.0%}: {'PASS' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
EOF
