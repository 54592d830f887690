#!/usr/bin/env bash
# Holds `oscost spawn` against benches/spawn_ref.c, a C program that creates and waits for
# the same tasks the same way: fork, vfork, posix_spawn and fork + execve of the static helper
# (crates/sys/helper/exit0.c, built here with the same flags as oscost's build) and of
# /bin/true, at each parent size, and pthread_create + pthread_join. One creation and its wait
# per sample, a few untimed first, cases of one parent size in rotated rounds, median.
#
# Both run pinned with `taskset -c CPU` to the same single CPU, oscost with `--cpus CPU` too.
# A round runs the C program, then oscost; the rounds are repeated so that drift of the
# machine during the session hits both sides alike, and the median ratio oscost/C over the
# rounds is the figure for each case. Both sides make their files under the same $TMPDIR.
#
# This is a measurement, not a test: it exits 0 whatever the ratios are, and non-zero only
# when something it needs is missing or fails. Installs nothing. Run it on an otherwise idle
# machine, one benchmark at a time.
#
# Fork is also timed with the parent holding thousands of one-page shared mappings beside the
# smallest parent size (MAPS), the "big fork" and "huge fork" of Ren et al. (SOSP 2019).
#
# Usage: [ROUNDS=N] [QUICK=1] [SIZES=MIB,...] [MAPS=N,...] scripts/spawn-vs-c.sh [CPU]
#   CPU     the CPU both sides run on (default: the last CPU this shell may use; also $CPU)
#   ROUNDS  interleaved rounds (default 5)
#   QUICK=1 oscost --quick and the C program's -q (15 samples): a rough check of the script
#           itself, not a figure to quote
#   SIZES   parent sizes, MiB (default 1,64,1024; the smallest run: QUICK=1 ROUNDS=1 SIZES=1)
#   MAPS    numbers of one-page mappings fork runs against (default 6000,12000)
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
sizes="${SIZES:-1,64,1024}"
[[ "$sizes" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "SIZES must be a list like 1,64,1024, got '$sizes'"
maps="${MAPS:-6000,12000}"
[[ "$maps" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "MAPS must be a list like 6000,12000, got '$maps'"

echo "building benches/spawn_ref.c, the static helper and oscost (release)..." >&2
cc -O2 -pthread -o "$tmp/spawn_ref" benches/spawn_ref.c || die "cc failed on benches/spawn_ref.c"
# The flags of crates/sys/build.rs, the plain static build if the small one is refused.
cc -static -nostdlib -O2 -s -fno-asynchronous-unwind-tables -Wl,--build-id=none -Wl,-n \
    -o "$tmp/exit0" crates/sys/helper/exit0.c 2>/dev/null ||
    cc -static -nostdlib -O2 -s -o "$tmp/exit0" crates/sys/helper/exit0.c ||
    die "cc cannot build the static helper (crates/sys/helper/exit0.c)"
build_oscost

# median_ns of case ID in oscost's JSON FILE, or nothing when it is not there (a case that
# could not be measured has no figure, and none is invented).
oscost_median() {
    local file="$1" id="$2"
    if [[ "$json_reader" == jq ]]; then
        jq -r --arg id "$id" \
            '[.experiments[].cases[] | select(.id == $id) | .median_ns][0] // empty' "$file"
    else
        python3 - "$file" "$id" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for e in doc["experiments"]:
    for c in e["cases"]:
        if c["id"] == sys.argv[2]:
            print(c["median_ns"])
            sys.exit(0)
EOF
    fi
}

# oscost's VmRSS and VmPTE at each parent size, from the counters of its fork cases.
oscost_memory() {
    local file="$1"
    if [[ "$json_reader" == jq ]]; then
        jq -r '.experiments[].cases[] | select(.params.op == "fork" and .params.parent_mib != null)
            | "  parent \(.params.parent_mib) MiB: VmRSS \(.counters.rss_kib) KiB, VmPTE \(.counters.vm_pte_kib) KiB"' \
            "$file"
    else
        python3 - "$file" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for e in doc["experiments"]:
    for c in e["cases"]:
        if c["params"].get("op") == "fork" and "parent_mib" in c["params"]:
            print("  parent %d MiB: VmRSS %d KiB, VmPTE %d KiB" % (c["params"]["parent_mib"],
                  c["counters"]["rss_kib"], c["counters"]["vm_pte_kib"]))
EOF
    fi
}

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost spawn vs C, median ns per creation + wait, CPU $cpu, parent MiB $sizes, mappings $maps, $rounds interleaved rounds ($mode)"
echo "TMPDIR=${TMPDIR:-/tmp}; ratio = oscost / C"

declare -A c_ns o_ns ratios
ids=()
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    taskset -c "$cpu" "$tmp/spawn_ref" -h "$tmp/exit0" -m "$sizes" -M "$maps" ${quick_c[@]+"${quick_c[@]}"} \
        >"$tmp/c$i" 2>"$tmp/c$i.memory" || die "spawn_ref failed: $(cat "$tmp/c$i.memory")"
    taskset -c "$cpu" "$bin" --cpus "$cpu" --quiet ${quick_oscost[@]+"${quick_oscost[@]}"} \
        spawn --parent-mib "$sizes" --mappings "$maps" --json "$tmp/o$i.json" >/dev/null || die "oscost spawn failed"
    while read -r id cv; do
        ov=$(oscost_median "$tmp/o$i.json" "$id")
        if [[ -z "$ov" ]]; then
            echo "  round $i  $id: not measured by oscost (see its result), skipped" >&2
            continue
        fi
        [[ -n "${c_ns[$id]+x}" ]] || ids+=("$id")
        r=$(awk -v o="$ov" -v c="$cv" 'BEGIN { printf "%.3f", o / c }')
        c_ns[$id]+="$cv "
        o_ns[$id]+="$ov "
        ratios[$id]+="$r "
        printf '  round %d  %-34s C %12.0f  oscost %12.0f  ratio %s\n' "$i" "$id" "$cv" "$ov" "$r"
    done <"$tmp/c$i"
done

echo
echo "the parent's memory while it forked (last round; a fork copies the page tables of the"
echo "whole process, so a larger program forks slower with the same extra memory):"
echo " C:"
sed 's/^# /  /' "$tmp/c$rounds.memory"
echo " oscost:"
oscost_memory "$tmp/o$rounds.json"
echo
printf '%-34s %12s %12s %8s  %s\n' case "C ns" "oscost ns" ratio "per-round ratios"
for id in "${ids[@]}"; do
    printf '%-34s %12.0f %12.0f %8.3f  %s\n' "$id" "$(median_of "${c_ns[$id]}")" \
        "$(median_of "${o_ns[$id]}")" "$(median_of "${ratios[$id]}")" "${ratios[$id]% }"
done
exit 0
