#!/usr/bin/env bash
# Checks the acceptance figures for `oscost syscall` on this machine:
#  1. syscall.getpid's median against a minimal C loop of the raw getpid call timed with the
#     same counter (benches/getpid_ref.c), interleaved in one session: ratio within 0.90-1.10;
#  2. five back-to-back runs: max/min of the getpid median <= 1.05;
#  3. wall time of `oscost syscall` (<= 10 s) and `--quick` (<= 2 s).
# Usage: scripts/syscall-acceptance.sh [CPU]   (default CPU 0)
set -euo pipefail
cd "$(dirname "$0")/.."
cpu=${1:-0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v cc >/dev/null || { echo "needs a C compiler (apt-get install gcc)" >&2; exit 2; }
cc -O2 -o "$tmp/getpid_ref" benches/getpid_ref.c
cargo build --release -q
bin=target/release/oscost

field() { # field FILE KEY -> the getpid case's KEY
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));
c=[c for e in d["experiments"] for c in e["cases"] if c["id"]=="syscall.getpid"][0]; print(c[sys.argv[2]])' "$1" "$2"
}

echo "1. oscost vs C reference (ref-cycles per raw getpid, CPU $cpu, interleaved)"
ratios=()
for i in 1 2 3 4 5; do
  c=$("$tmp/getpid_ref" "$cpu")
  "$bin" syscall --calls getpid --cpus "$cpu" --quiet --json "$tmp/g$i.json" >/dev/null
  o=$(field "$tmp/g$i.json" median_cycles)
  r=$(python3 -c "print(f'{$o/$c:.3f}')")
  ratios+=("$r")
  printf '   run %d: C %8.1f  oscost %8.1f  ratio %s\n' "$i" "$c" "$o" "$r"
done
python3 - "${ratios[@]}" <<'PY'
import sys, statistics
r = sorted(float(x) for x in sys.argv[1:])
m = statistics.median(r)
print(f"   median ratio {m:.3f} -> {'PASS' if 0.9 <= m <= 1.1 else 'FAIL'} (target 0.90-1.10)")
PY

echo "2. five back-to-back full runs of oscost syscall (the C reference beside each, for the machine's own drift)"
meds=()
refs=()
for i in 1 2 3 4 5; do
  refs+=("$("$tmp/getpid_ref" "$cpu")")
  start=$(date +%s.%N)
  "$bin" syscall --cpus "$cpu" --quiet --json "$tmp/f$i.json" >/dev/null
  end=$(date +%s.%N)
  m=$(field "$tmp/f$i.json" median_ns)
  meds+=("$m")
  printf '   run %d: getpid median %.1f ns, wall %.2f s\n' "$i" "$m" "$(python3 -c "print($end-$start)")"
done
python3 - "${meds[@]}" -- "${refs[@]}" <<'PY'
import sys
args = sys.argv[1:]
cut = args.index("--")
m = [float(x) for x in args[:cut]]
c = [float(x) for x in args[cut + 1:]]
r = max(m) / min(m)
print(f"   oscost max/min {r:.3f} -> {'PASS' if r <= 1.05 else 'FAIL'} (target <= 1.05)")
print(f"   C reference over the same five slots: {', '.join(f'{x:.0f}' for x in c)} ref-cycles, "
      f"max/min {max(c) / min(c):.3f} (the machine's own drift)")
PY

echo "3. wall time of --quick (target <= 2 s)"
start=$(date +%s.%N)
"$bin" syscall --quick --quiet >/dev/null
end=$(date +%s.%N)
python3 -c "t=$end-$start; print(f'   {t:.2f} s ->', 'PASS' if t <= 2 else 'FAIL')"
