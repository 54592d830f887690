#!/usr/bin/env bash
# The machine's controls (syscall(-1) and the fixed user-space loop oscost times around every
# experiment) against the same two loads in C (benches/controls_ref.c), in interleaved rounds
# pinned to one CPU: C, then `oscost syscall --calls enosys --quick`, whose document keeps the
# controls of its one experiment. Prints each round and the median ratio oscost / C of each.
# Run it alone: flock /tmp/oscost-bench.lock scripts/controls-vs-c.sh [CPU]   (ROUNDS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
cpu=${1:-1}
rounds=${ROUNDS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v cc >/dev/null || { echo "controls-vs-c: needs a C compiler (apt-get install gcc)" >&2; exit 2; }
cc -O2 -o "$tmp/controls_ref" benches/controls_ref.c
cargo build --release -q
bin=target/release/oscost
k=() u=()
for i in $(seq "$rounds"); do
  read -r ck cu < <(taskset -c "$cpu" "$tmp/controls_ref" "$cpu")
  "$bin" syscall --calls enosys --quick --cpus "$cpu" --quiet --no-save --json "$tmp/o$i.json" >/dev/null
  read -r ok ou < <(python3 -c '
import json, statistics, sys
c = json.load(open(sys.argv[1]))["experiments"][0]["controls"]
print(statistics.median(c["kernel_entry_ns"]), statistics.median(c["user_loop_ns"]))' "$tmp/o$i.json")
  rk=$(python3 -c "print(f'{$ok/$ck:.3f}')")
  ru=$(python3 -c "print(f'{$ou/$cu:.3f}')")
  k+=("$rk") u+=("$ru")
  printf 'round %d: syscall(-1) C %.1f ns, oscost %.1f ns, ratio %s; loop C %.0f ns, oscost %.0f ns, ratio %s\n' \
    "$i" "$ck" "$ok" "$rk" "$cu" "$ou" "$ru"
done
python3 - "${k[*]}" "${u[*]}" <<'PY'
import statistics, sys
k = [float(x) for x in sys.argv[1].split()]
u = [float(x) for x in sys.argv[2].split()]
print(f"median ratio oscost / C: syscall(-1) {statistics.median(k):.3f} ({min(k):.3f}-{max(k):.3f}), "
      f"user loop {statistics.median(u):.3f} ({min(u):.3f}-{max(u):.3f})")
PY
