#!/usr/bin/env bash
# Holds `oscost compare` against what is known to be true on this machine:
#   1. two runs of the same build, one after the other: nothing changed, so at least 90 % of the
#      figures should come out "no difference";
#   2. the same experiments on one CPU, once as usual and once at nice 19 while a busy loop of
#      nice 0 runs on that CPU: the measured tasks get a sliver of the CPU, so the figures that
#      a preemption lands in should come out "slower".
# Prints both tables and the share of each verdict. Usage, from the repository root:
#   scripts/compare-acceptance.sh [CPU]      (EXPERIMENTS="syscall primitives" to choose; the
#                                             default suite for part 1 when SUITE=1)
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh

cpu="${1:-1}"
[[ "$cpu" =~ ^[0-9]+$ ]] || die "CPU must be a CPU number, got '$cpu'"
read -r -a experiments <<<"${EXPERIMENTS:-syscall primitives switch}"
bin="${OSCOST_BIN:-}"
if [[ -z "$bin" ]]; then
    cargo build --release --locked -q
    bin=target/release/oscost
fi
tmp=$(mktemp -d)
cleanup() {
    busy_stop
    rm -rf "$tmp"
}
trap cleanup EXIT

tally() {
    # The verdict column of a CSV comparison, counted.
    python3 - "$1" <<'EOF'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
c = collections.Counter(r["verdict"] for r in rows)
n = len(rows)
for k, v in sorted(c.items(), key=lambda kv: -kv[1]):
    print(f"  {k:18} {v:4}  {100.0 * v / n:5.1f} %")
print(f"  {'all':18} {n:4}")
EOF
}

echo "== 1. two runs of the same build"
if [[ "${SUITE:-0}" == 1 ]]; then
    part1=()
else
    part1=(run "${experiments[@]}")
fi
"$bin" --quiet --no-save "${part1[@]}" --json "$tmp/a.json" >/dev/null
"$bin" --quiet --no-save "${part1[@]}" --json "$tmp/b.json" >/dev/null
"$bin" compare "$tmp/a.json" "$tmp/b.json" --csv "$tmp/ab.csv"
echo "verdicts:"
tally "$tmp/ab.csv"

echo
echo "== 2. CPU $cpu as usual, then at nice 19 beside a busy loop of nice 0 on CPU $cpu"
"$bin" --quiet --no-save --cpus "$cpu" run "${experiments[@]}" --json "$tmp/quiet.json" >/dev/null
busy_start "$cpu"
"$bin" --quiet --no-save --cpus "$cpu" --nice 19 run "${experiments[@]}" \
    --json "$tmp/contended.json" >/dev/null
busy_stop
"$bin" compare "$tmp/quiet.json" "$tmp/contended.json" --csv "$tmp/qc.csv"
echo "verdicts:"
tally "$tmp/qc.csv"
