#!/usr/bin/env bash
# The fleet's scale goals, measured (run it alone: flock /tmp/oscost-bench.lock scripts/fleet-scale.sh):
#
# 1. `compare --group-by host` over 100 hosts × the default suite's figures. The 100 result
#    documents are synthesized: one real run of the default suite on this machine, copied 100
#    times, each copy with its own run_id and fleet host name (host001..host100). Their
#    samples are identical, so no verdict is slower or faster (a case whose own interval is
#    wide reads "too few samples"); what is timed is the real work of the command: reading 100
#    documents, grouping, each run's median laws, 99 pairwise comparisons with their ratio
#    CIs and Mann-Whitney tests, and the table. Median of 5 runs. Beside it, interleaved run for
#    run on the same files, the exact-law program (`cargo xtask law-ref`, no oscost code): each
#    host's laws of its cases' bootstrap medians and their ratio intervals against the first
#    host's, what a cell needs of the samples; its CPU is the yardstick (goal: group-by ≤ 1.2×
#    it), and group-by's intervals are checked equal to its, cell by cell.
# 2. The playbook against 20 loopback hosts running `syscall --quick` (not taking turns, so
#    the play's own cost shows against the slowest host's run): the controller's CPU time per
#    host, and the play's wall time against the slowest host's run, through
#    scripts/fleet-loopback.sh --timing (root; see that script).
#
# 3. The same over --big-hosts N (default 1 000) copies, 3 runs: CPU-seconds beside the
#    exact-law program's and peak resident memory beside the 300 MB limit (`--big-hosts 0`
#    skips it).
#
# Options: --hosts N (compare, default 100), --big-hosts N (default 1000), --play-hosts N
# (default 20), --skip-play.
set -euo pipefail
cd "$(dirname "$0")/.."
oscost=${OSCOST:-target/release/oscost}
lawref=${LAWREF:-target/release/xtask}
hosts=100
big_hosts=1000
play_hosts=20
skip_play=0
while (($#)); do
  case "$1" in
    --hosts) hosts=$2; shift 2 ;;
    --big-hosts) big_hosts=$2; shift 2 ;;
    --play-hosts) play_hosts=$2; shift 2 ;;
    --skip-play) skip_play=1; shift ;;
    *) echo "fleet-scale: unknown option $1 (see the top of $0)" >&2; exit 2 ;;
  esac
done
[[ -x $oscost ]] || { echo "fleet-scale: $oscost missing (cargo build --release)" >&2; exit 2; }
[[ -x $lawref ]] || { echo "fleet-scale: $lawref missing (cargo build --release -p xtask)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/oscost-fleet-scale.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo "== one run of the default suite (the figures every synthesized host carries)"
"$oscost" --quiet --no-save --json "$tmp/suite.json" >/dev/null
mkdir "$tmp/hosts"
most=$((big_hosts > hosts ? big_hosts : hosts))
python3 - "$tmp/suite.json" "$tmp/hosts" "$most" <<'EOF'
import json, sys, uuid
src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
doc = json.load(open(src))
figures = sum(len(e["cases"]) + len(e["derived"]) for e in doc["experiments"])
for i in range(1, n + 1):
    doc["run_id"] = str(uuid.uuid4())
    doc["environment"]["fleet"] = {"host_name": f"host{i:04}", "runner": "synthesized copy"}
    json.dump(doc, open(f"{out}/host{i:04}.json", "w"))
print(f"   {n} documents of {figures} figures each ({len(doc['experiments'])} experiments)")
EOF

# cpu_of FILE: the user + system CPU seconds /usr/bin/time wrote to FILE ('%e %U %S %M').
cpu_of() {
  local wall user sys rss
  read -r wall user sys rss <"$1"
  python3 -c "print(f'{$user + $sys:.2f}')"
}

# median VALUES…: the middle one (the upper of the two middle ones for an even count).
median() {
  printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"
}

# group_by N RUNS: `compare --group-by host` over the first N documents, RUNS times, each run
# followed by the exact-law program over the same files; prints the wall and CPU seconds of
# each, their medians, the ratio of the CPU medians beside the 1.2× goal, and the last run's
# peak RSS.
group_by() {
  local n=$1 runs=$2 walls=() cpus=() refs=() wall user sys rss
  mapfile -t files < <(find "$tmp/hosts" -name 'host*.json' | sort | head -n "$n")
  for _ in $(seq "$runs"); do
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/t" "$oscost" compare --group-by host "${files[@]}" \
      --quiet >"$tmp/table.txt"
    read -r wall user sys rss <"$tmp/t"
    walls+=("$wall")
    cpus+=("$(cpu_of "$tmp/t")")
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/r" "$lawref" law-ref "${files[@]}" >"$tmp/law.tsv"
    refs+=("$(cpu_of "$tmp/r")")
  done
  local cpu ref
  cpu=$(median "${cpus[@]}")
  ref=$(median "${refs[@]}")
  echo "compare: $n hosts, wall s: ${walls[*]} (median $(median "${walls[@]}")); CPU s: ${cpus[*]} (median $cpu); last run's peak RSS $((rss / 1024)) MiB"
  echo "exact law (xtask law-ref): $n hosts, CPU s: ${refs[*]} (median $ref); group-by ÷ exact law $(python3 -c "print(f'{$cpu / $ref:.2f}')")× (goal ≤ 1.2×)"
  last_rss_mib=$((rss / 1024))
}

# same_cells N: group-by's CSV over the first N documents against the exact-law program's TSV:
# every interval within 1e-9 of its, and none missing on either side.
same_cells() {
  local n=$1
  mapfile -t files < <(find "$tmp/hosts" -name 'host*.json' | sort | head -n "$n")
  "$oscost" compare --group-by host "${files[@]}" --quiet --csv "$tmp/cells.csv" >/dev/null
  "$lawref" law-ref "${files[@]}" >"$tmp/law.tsv"
  python3 - "$tmp/cells.csv" "$tmp/law.tsv" <<'EOF'
import csv, sys
ref = {}
with open(sys.argv[2]) as f:
    for row in csv.DictReader(f, delimiter="\t"):
        ref[(row["figure"], row["host"])] = [float(row[k]) for k in ("ratio", "lo", "hi")]
seen = same = 0
with open(sys.argv[1]) as f:
    for row in csv.DictReader(f):
        key = (row["figure"], row["group"])
        if row["ratio_ci95_lo"] == "" or key not in ref:
            continue
        seen += 1
        cell = [float(row[k]) for k in ("ratio", "ratio_ci95_lo", "ratio_ci95_hi")]
        same += all(abs(x - y) <= 1e-9 * abs(y) for x, y in zip(cell, ref[key]))
print(f"cells: {same} of {seen} group-by intervals equal the exact-law program's "
      f"({len(ref)} it computed)")
sys.exit(0 if same == seen == len(ref) else 1)
EOF
}

echo "== compare --group-by host over $hosts hosts against the exact-law program (5 runs each)"
same_cells "$hosts"
group_by "$hosts" 5
if ((big_hosts > 0)); then
  echo "== compare --group-by host over $big_hosts hosts against the exact-law program (3 runs each)"
  group_by "$big_hosts" 3
  echo "limit: 300 MiB at 1 000 hosts; peak RSS here $last_rss_mib MiB"
fi

if ((!skip_play)); then
  echo "== the playbook against $play_hosts loopback hosts running syscall --quick"
  scripts/fleet-loopback.sh --store sqlite --hosts "$play_hosts" --no-kill --no-build \
    --parallel --timing --args "syscall --quick" | grep -E '^(timing|fleet):'
fi
