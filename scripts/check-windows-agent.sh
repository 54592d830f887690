#!/usr/bin/env bash
# The Windows agent end to end, without Windows: cross-build it with MinGW-w64, check its
# statistics (--self-test) and its refusals, run it under Wine with its quick setting (the
# yield sweep to N = 1024, the ring of Critical Sections to N = 128), then have oscost import
# the document into a throw-away history and set it beside the published Windows XP figures.
# Under Wine the figures are Wine's on this Linux host: only behaviour is checked, never a time.
#
#   OSCOST=target/release/oscost bash scripts/check-windows-agent.sh
# Prints one closing line.
set -euo pipefail
cd "$(dirname "$0")/.."
oscost=${OSCOST:-target/release/oscost}
[[ -x $oscost ]] || { echo "no oscost binary at $oscost: build it (cargo build --release) or set OSCOST" >&2; exit 2; }

need=()
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || need+=(gcc-mingw-w64-x86-64)
command -v wine >/dev/null 2>&1 || need+=(wine wine64)
command -v make >/dev/null 2>&1 || need+=(make)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if ((${#need[@]})); then
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi

make -s -C windows

work=$(mktemp -d)
prefix=$(mktemp -d)
cleanup() {
  # Wine's server for this prefix outlives the agent by a few seconds: end it, then remove.
  WINEPREFIX=$prefix wineserver -k 2>/dev/null || true
  rm -rf "$work" "$prefix"
}
trap cleanup EXIT
export WINEPREFIX=$prefix WINEDEBUG=-all
# No display: Wine runs console programs without one.
unset DISPLAY WAYLAND_DISPLAY
agent() { wine windows/oscost-agent.exe "$@"; }
# A new prefix is set up on first use; its messages (a 64-bit Wine has no 32-bit rundll32)
# say nothing about the agent.
wineboot --init >/dev/null 2>&1 || true

agent --self-test | grep -q "statistics agree" || { echo "the agent's statistics self-test failed" >&2; exit 1; }

# Bad input: one line naming the problem, exit 2, nothing written.
for bad in "--max-ring 3" "--max-yield 0" "--bogus" "--out"; do
  set +e
  # shellcheck disable=SC2086 # the words are the arguments
  err=$(cd "$work" && wine "$OLDPWD/windows/oscost-agent.exe" $bad 2>&1 >/dev/null)
  rc=$?
  set -e
  if [[ $rc != 2 || $(printf '%s\n' "$err" | grep -c .) != 1 ]]; then
    echo "the agent answered \`$bad\` with exit $rc and: $err" >&2
    exit 1
  fi
done
if [[ -n $(ls -A "$work") ]]; then
  echo "a refused run left files behind: $(ls -A "$work")" >&2
  exit 1
fi

out=$work/agent.json
# Only one thing times anything at a time on a shared machine.
flock /tmp/oscost-bench.lock wine windows/oscost-agent.exe --quick --out "$out" >"$work/stdout" 2>"$work/stderr"
grep -q "under Wine" "$work/stdout" || { echo "the agent's closing line does not say it ran under Wine" >&2; exit 1; }
if grep -v '^\[under Wine\] ' "$work/stderr" | grep -q .; then
  echo "an output line of the agent does not say it ran under Wine:" >&2
  grep -v '^\[under Wine\] ' "$work/stderr" >&2
  exit 1
fi

python3 - "$out" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
os_ = d["environment"].get("os") or {}
assert os_.get("family") == "windows" and os_.get("wine"), "the document does not say it ran under Wine"
cases = {c["id"]: c for e in d["experiments"] for c in e["cases"]}
need = ["split.threads.one.1024.yield", "split.threads.one.1.yield", "lockring.cs.n128.k1",
        "lockring.cs.own", "lockring.pipe.n2", "primitives.win32-mutex",
        "primitives.win32-semaphore", "primitives.critical-section", "primitives.srwlock"]
missing = [i for i in need if i not in cases]
assert not missing, f"cases missing: {missing}"
for i, c in cases.items():
    assert c["median_ns"] > 0, f"{i}: median {c['median_ns']}"
    assert c["ci95_ns"][0] <= c["median_ns"] <= c["ci95_ns"][1], f"{i}: CI"
ring = cases["lockring.cs.n128.k1"]
assert any(k["name"] == "ring_order" for k in ring["checks"]), "the ring has no order check"
EOF

export XDG_DATA_HOME=$work/data
"$oscost" history import "$out" >/dev/null
"$oscost" compare published:windows-xp-2002 "$out" >"$work/compare.txt"
for want in primitives.win32-mutex primitives.win32-semaphore primitives.critical-section \
  ring.time_per_switch ring.switch_cost "under Wine"; do
  grep -q -- "$want" "$work/compare.txt" || { echo "compare published:windows-xp-2002 lacks $want" >&2; exit 1; }
done
"$oscost" report "$out" -o "$work/report.html"
grep -q "under Wine" "$work/report.html" || { echo "the HTML report does not say the run was under Wine" >&2; exit 1; }

n=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(len(e['cases']) for e in d['experiments']))" "$out")
echo "windows agent: built, self-test passed, $n cases under Wine $(wine --version | sed 's/^wine-//'); imported and compared with published:windows-xp-2002"
