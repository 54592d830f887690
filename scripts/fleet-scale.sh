#!/usr/bin/env bash
# The fleet's scale goals, measured (run it alone: flock /tmp/oscost-bench.lock scripts/fleet-scale.sh):
#
# 1. `compare --group-by host` over 100 hosts × the default suite's figures. The 100 result
#    documents are synthesized: one real run of the default suite on this machine, copied 100
#    times, each copy with its own run_id and fleet host name (host001..host100). Their
#    samples are identical, so no verdict is slower or faster (a case whose own interval is
#    wide reads "too few samples"); what is timed is the real work of the command: reading 100
#    documents, grouping, each run's median laws, 99 pairwise comparisons with their ratio
#    CIs and Mann-Whitney tests, and the table. Median of 5 runs.
# 2. The playbook against 20 loopback hosts running `syscall --quick` (not taking turns, so
#    the play's own cost shows against the slowest host's run): the controller's CPU time per
#    host, and the play's wall time against the slowest host's run, through
#    scripts/fleet-loopback.sh --timing (root; see that script).
#
# Options: --hosts N (compare, default 100), --play-hosts N (default 20), --skip-play.
set -euo pipefail
cd "$(dirname "$0")/.."
oscost=${OSCOST:-target/release/oscost}
hosts=100
play_hosts=20
skip_play=0
while (($#)); do
  case "$1" in
    --hosts) hosts=$2; shift 2 ;;
    --play-hosts) play_hosts=$2; shift 2 ;;
    --skip-play) skip_play=1; shift ;;
    *) echo "fleet-scale: unknown option $1 (see the top of $0)" >&2; exit 2 ;;
  esac
done
[[ -x $oscost ]] || { echo "fleet-scale: $oscost missing (cargo build --release)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/oscost-fleet-scale.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo "== one run of the default suite (the figures every synthesized host carries)"
"$oscost" --quiet --no-save --json "$tmp/suite.json" >/dev/null
mkdir "$tmp/hosts"
python3 - "$tmp/suite.json" "$tmp/hosts" "$hosts" <<'EOF'
import json, sys, uuid
src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
doc = json.load(open(src))
figures = sum(len(e["cases"]) + len(e["derived"]) for e in doc["experiments"])
for i in range(1, n + 1):
    doc["run_id"] = str(uuid.uuid4())
    doc["environment"]["fleet"] = {"host_name": f"host{i:03}", "runner": "synthesized copy"}
    json.dump(doc, open(f"{out}/host{i:03}.json", "w"))
print(f"   {n} documents of {figures} figures each ({len(doc['experiments'])} experiments)")
EOF

echo "== compare --group-by host over $hosts hosts (5 runs)"
walls=()
for _ in 1 2 3 4 5; do
  /usr/bin/time -f '%e %M' -o "$tmp/t" "$oscost" compare --group-by host "$tmp"/hosts/*.json \
    --quiet >"$tmp/table.txt"
  read -r wall rss <"$tmp/t"
  walls+=("$wall")
done
cols=$(grep -m1 '│ figure' "$tmp/table.txt" | grep -o 'host[0-9]*' | wc -l)
median=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n 3p)
echo "compare: $hosts hosts ($cols columns), wall s: ${walls[*]}; median $median s (last run's peak RSS ${rss} KiB)"

if ((!skip_play)); then
  echo "== the playbook against $play_hosts loopback hosts running syscall --quick"
  scripts/fleet-loopback.sh --store sqlite --hosts "$play_hosts" --no-kill --no-build \
    --parallel --timing --args "syscall --quick" | grep -E '^(timing|fleet):'
fi
