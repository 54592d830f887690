#!/usr/bin/env bash
# Holds `oscost ns` against benches/ns_ref.c, a C program that makes the same children the same
# way (a fork-like raw clone that calls unshare with one namespace kind and _exits, the
# loopback brought up for net.lo, a child cloned into a runtime's set for container; the parent
# waits for each) and times batches of them in rounds over all cases, with oscost's sampling
# (81 samples of at least 2 ms after 20 ms of warm-up). Without CAP_SYS_ADMIN both make each
# kind together with a user namespace (the .in-user cases).
#
# Both run pinned to one CPU. A round runs the C program, then oscost; the median ratio
# oscost/C over the rounds is the figure, per case and for each case over the bare child. A
# measurement, not a test: exits 0 whatever the ratios are. Run it on an idle machine.
#
# Usage: [ROUNDS=N] [QUICK=1] scripts/ns-vs-c.sh [CPU]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
c_args=(-s 81 -m 2000)
[[ "$quick" == 0 ]] || c_args=(-s 10 -m 1000)
grep -q '^CapEff:.*' /proc/self/status
caps=$(awk '/^CapEff:/ { print $2 }' /proc/self/status)
(( (16#$caps >> 21) & 1 )) || c_args+=(-u)

echo "building benches/ns_ref.c and oscost (release)..." >&2
cc -O2 -o "$tmp/ns_ref" benches/ns_ref.c || die "cc failed on benches/ns_ref.c"
build_oscost

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost ns vs C, median ns per child, CPU $cpu, $rounds interleaved rounds ($mode);"
echo "ratio = oscost / C; 'over_none' rows: each side's case less its own bare child"

declare -A c_ns o_ns ratios
ids=()
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    "$tmp/ns_ref" -c "$cpu" "${c_args[@]}" | awk '{ print $1, $2 }' >"$tmp/c$i" || die "ns_ref failed"
    "$bin" --cpus "$cpu" --quiet --no-save ${quick_oscost[@]+"${quick_oscost[@]}"} \
        ns --json "$tmp/o$i.json" >/dev/null || die "oscost ns failed"
    oscost_medians "$tmp/o$i.json" >"$tmp/o$i"
    for f in "$tmp/c$i" "$tmp/o$i"; do
        awk '{ v[$1] = $2; order[NR] = $1 } END {
            for (k = 1; k <= NR; k++) if (order[k] != "ns.none")
                print order[k] ".over_none", v[order[k]] - v["ns.none"] }' "$f" >"$f.over"
        cat "$f.over" >>"$f"
    done
    pair_round "$i" "$tmp/c$i" "$tmp/o$i" 28 11
done
print_pairs 28 11
exit 0
