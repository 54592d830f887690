#!/usr/bin/env bash
# Holds oscost's verdicts against what is known to be true on this machine, as a user meets
# them: every figure a comparison calls slower or faster between two runs of one build on an
# unchanged machine is a false verdict.
#   1. `oscost --quick` six times back to back into a fresh history; each run compared with the
#      one before as soon as it ends (as its own change line does): the first pairs without
#      earlier runs to take the spread between runs from, the later ones with it. Then a busy
#      loop on the last CPU (another program, not the OS) and a seventh run: the machine line
#      and the verdicts net of it.
#   2. A deliberate change: `oscost --quick switch --placement same,cross` and then with
#      `--idle-poll` (idle CPUs polling instead of halting): the cross-CPU figures should come
#      out faster, the same-CPU ones and the machine's controls unmoved.
#   3. The default suite, DEFAULT_RUNS times quiet and once beside the busy loop, each
#      replayed through a terminal emulator at 80 x 24 (scripts/screen-lines.py): its lines
#      and any figure marked ✗ (a failed check) or ? (failed while the host or other programs
#      held the CPUs), with the ? lines' own account of who held them.
# A measurement, not a test: it exits 0 whatever it finds, non-zero only when something it
# needs fails. Needs root for the whole suite (tracepoints, SCHED_FIFO) and pyte for the screen
# replay. Run it on an otherwise idle machine.
#
# Usage: [OSCOST_BIN=PATH] [DEFAULT_RUNS=N] [PARTS="1 2 3"] [KEEP=DIR] scripts/verdicts-acceptance.sh
#   KEEP  a directory to keep the runs' histories in (quick.sqlite3, idle.sqlite3,
#         default.sqlite3), to compare them again later; by default they are removed
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh

bin="${OSCOST_BIN:-target/release/oscost}"
[[ -x "$bin" ]] || die "no oscost binary at $bin (cargo build --release, or set OSCOST_BIN)"
runs="${DEFAULT_RUNS:-5}"
parts=" ${PARTS:-1 2 3} "
[[ "$runs" =~ ^[0-9]+$ ]] || die "DEFAULT_RUNS must be a number, got '$runs'"
command -v python3 >/dev/null || die "python3 not found"
last_cpu=$(($(nproc) - 1))
keep="${KEEP:-}"
[[ -z "$keep" || -d "$keep" ]] || die "KEEP must be an existing directory, got '$keep'"
tmp=$(mktemp -d)
cleanup() {
    busy_stop
    [[ -z "$keep" ]] || cp "$tmp"/*.sqlite3 "$keep"/ 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

# The verdicts of a comparison's JSON: raw and net of the machine's controls, the machine line.
verdicts() {
    python3 - "$1" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))["comparisons"][0]
rows = c["rows"]
changed = ("slower", "faster")
raw = sum(r["verdict"] in changed for r in rows)
net = sum((r.get("net") or {}).get("verdict", r["verdict"]) in changed for r in rows)
moved = [f'{m["control"]} x{m["ratio"]:.3f}' for m in c.get("machine", []) if m["moved"]]
spread = c.get("spread_runs")
print(f"{len(rows)} figures: net {net} ({100 * net / len(rows):.1f} %), raw {raw} "
      f"({100 * raw / len(rows):.1f} %); spread of earlier runs: "
      f"{spread if spread else 'none'}; machine moved: {', '.join(moved) or 'no'}")
EOF
}

# Each placement's cases in a comparison's JSON, by verdict net of the machine's controls.
placements() {
    python3 - "$1" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))["comparisons"][0]["rows"]
for place in ("cross", "same"):
    mine = [r for r in rows if f".{place}" in r["id"] and r["kind"] == "case"]
    v = {}
    for r in mine:
        k = (r.get("net") or {}).get("verdict", r["verdict"])
        v[k] = v.get(k, 0) + 1
    print(f"   {place}-CPU cases: {len(mine)}: " + ", ".join(f"{n} {k}" for k, n in sorted(v.items())))
EOF
}

# The id of the newest run in history $1.
newest() {
    "$bin" --history "$1" history list --json - 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["run_id"][:8])'
}

if [[ "$parts" == *" 1 "* ]]; then
    echo "== 1. --quick back to back, each compared with the one before"
    h="$tmp/quick.sqlite3"
    prev=
    for i in 1 2 3 4 5 6 7; do
        if ((i == 7)); then
            echo "   (a busy loop on CPU $last_cpu from here)"
            busy_start "$last_cpu"
        fi
        "$bin" --history "$h" --quiet --quick >/dev/null 2>&1 || die "quick run $i failed"
        id=$(newest "$h")
        if [[ -n "$prev" ]]; then
            "$bin" --history "$h" compare "$prev" "$id" --json "$tmp/c.json" >/dev/null 2>&1
            printf '   run %d against run %d: %s\n' "$i" "$((i - 1))" "$(verdicts "$tmp/c.json")"
        fi
        prev=$id
    done
    busy_stop
fi
if [[ "$parts" == *" 2 "* ]]; then
    echo
    echo "== 2. a deliberate change: switch on one CPU and across two, then with --idle-poll"
    h2="$tmp/idle.sqlite3"
    switch=(switch --placement "same,cross")
    "$bin" --history "$h2" --quiet --quick "${switch[@]}" >/dev/null 2>&1 || die "switch failed"
    a=$(newest "$h2")
    "$bin" --history "$h2" --quiet --quick "${switch[@]}" --idle-poll >/dev/null 2>&1 ||
        die "switch --idle-poll failed"
    b=$(newest "$h2")
    "$bin" --history "$h2" compare "$a" "$b" --json "$tmp/c.json" >/dev/null 2>&1
    echo "   $(verdicts "$tmp/c.json")"
    placements "$tmp/c.json"
fi
if [[ "$parts" == *" 3 "* ]]; then
    echo
    echo "== 3. the default suite at 80 x 24: lines and figures marked ✗"
    # Said before the runs: screen-lines.py's own message would go into the screen file, which
    # is removed on exit.
    python3 -c 'import pyte' 2>/dev/null || die "pyte not found (pip install pyte): part 3 replays the screen through it"
    h3="$tmp/default.sqlite3"
    suite() {
        python3 scripts/screen-lines.py --show -- "$bin" --history "$h3" >"$tmp/screen.txt" 2>&1 ||
            die "the default suite failed (see $tmp/screen.txt)"
        local lines failed held
        lines=$(grep -Eo '^[0-9]+ lines' "$tmp/screen.txt" | tail -1 || true)
        failed=$(grep -c '✗' "$tmp/screen.txt" || true)
        held=$(grep -Ec '(^| )\?( |$)' "$tmp/screen.txt" || true)
        printf '   %s: %s, %s line(s) with ✗, %s with ? (others held the CPUs)\n' "$1" \
            "${lines:-? lines}" "$failed" "$held"
        grep -E '✗|(^| )\?( |$)' "$tmp/screen.txt" | sed 's/^/      /' || true
    }
    for i in $(seq 1 "$runs"); do
        suite "quiet run $i"
    done
    busy_start "$last_cpu"
    suite "beside a busy loop on CPU $last_cpu"
    busy_stop
fi
