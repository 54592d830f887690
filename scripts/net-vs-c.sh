#!/usr/bin/env bash
# Holds `oscost net` against benches/net_ref.c, a C program of the same loops: 1-byte round
# trips between two threads over TCP (TCP_NODELAY), UDP, AF_UNIX stream and datagram sockets on
# 127.0.0.1 with ports from the kernel, one TCP connection made, accepted and closed with
# SO_LINGER 0 in one thread (net.tcp.connect.rst) and one made, read to end of file and closed
# while a thread on CPU A accepts and closes it (net.tcp.connect), and 64 KiB writes over TCP, an AF_UNIX stream and a pipe to a
# draining thread; and LEBench's send + recv of 1 and 96 000 bytes through an AF_UNIX stream
# socketpair in one thread.
#
# Both sides pin the measuring thread to CPU A and the partner to CPU A (same) or CPU B (cross).
# A round runs the C program (same, then cross) and oscost (`--cpus A,B --placement
# same,cross`), C first in odd rounds and oscost first in even ones; the median ratio oscost/C
# over the rounds is the figure. A measurement, not a test: exits 0 whatever the ratios are.
# Run it on an idle machine with at least two CPUs.
#
# A cross-CPU case mostly times how fast the partner's idle CPU wakes up. Where idle CPUs halt
# (a virtual machine's haltpoll, whose polling window grows and shrinks with what ran before),
# that time changes between runs of the same program by more than the ±10 % the figures are
# held to. IDLE_POLL=1 holds /dev/cpu_dma_latency at 0 for the whole script (both sides; oscost
# is also given --idle-poll so its result records it), so the CPUs poll instead of halting and
# both sides time the same wake-up. CONTROL=1 runs the C program a second time in each round
# and prints its second run over its first: the band the reference moves by against itself.
#
# Usage: [ROUNDS=N] [QUICK=1] [IDLE_POLL=1] [CONTROL=1] scripts/net-vs-c.sh [CPU_A CPU_B]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup_two "${1:-}" "${2:-}"
c_samples=81
[[ "$quick" == 0 ]] || c_samples=10
control="${CONTROL:-0}"
hold_idle_poll

echo "building benches/net_ref.c and oscost (release)..." >&2
cc -O2 -pthread -o "$tmp/net_ref" benches/net_ref.c || die "cc failed on benches/net_ref.c"
build_oscost

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost net vs C, median ns per operation, CPUs $cpu (measuring) and $cpu_b (partner when cross),"
echo "$rounds interleaved rounds ($mode); ratio = oscost / C"
say_idle

run_c() {
    "$tmp/net_ref" -a "$cpu" -b "$cpu" -s "$c_samples" ${quick_c[@]+"${quick_c[@]}"} -c >"$1" || die "net_ref failed"
    "$tmp/net_ref" -a "$cpu" -b "$cpu_b" -s "$c_samples" ${quick_c[@]+"${quick_c[@]}"} >>"$1" || die "net_ref failed"
}
run_oscost() {
    "$bin" --cpus "$cpu,$cpu_b" --quiet --no-save ${quick_oscost[@]+"${quick_oscost[@]}"} \
        net --placement same,cross ${idle_poll[@]+"${idle_poll[@]}"} --json "$tmp/o$1.json" >/dev/null ||
        die "oscost net failed"
    oscost_medians "$tmp/o$1.json" >"$tmp/o$1"
}

declare -A c_ns o_ns ratios self
ids=()
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    if ((i % 2)); then
        run_c "$tmp/c$i"
        run_oscost "$i"
    else
        run_oscost "$i"
        run_c "$tmp/c$i"
    fi
    pair_round "$i" "$tmp/c$i" "$tmp/o$i" 26 9
    if [[ "$control" != 0 ]]; then
        run_c "$tmp/cc$i"
        while read -r id cv; do
            c2=$(awk -v id="$id" '$1 == id { print $2 }' "$tmp/cc$i")
            [[ -n "$c2" ]] && self[$id]+="$(awk -v a="$c2" -v b="$cv" 'BEGIN { printf "%.3f", a / b }') "
        done <"$tmp/c$i"
    fi
done

print_pairs 26 9
if [[ "$control" != 0 ]]; then
    echo
    echo "C's second run against its first (CONTROL=1): median ratio, per-round ratios"
    for id in "${ids[@]}"; do
        [[ -n "${self[$id]:-}" ]] || continue
        printf "%-26s %8.3f  %s\n" "$id" "$(median_of "${self[$id]}")" "${self[$id]% }"
    done
fi
exit 0
