#!/usr/bin/env bash
# Holds `oscost net` against benches/net_ref.c, a C program of the same loops: 1-byte round
# trips between two threads over TCP (TCP_NODELAY), UDP, AF_UNIX stream and datagram sockets on
# 127.0.0.1 with ports from the kernel, one TCP connection made, accepted and closed with
# SO_LINGER 0 in one thread, and 64 KiB writes over TCP, an AF_UNIX stream and a pipe to a
# draining thread; and LEBench's send + recv of 1 and 96 000 bytes through an AF_UNIX stream
# socketpair in one thread.
#
# Both sides pin the measuring thread to CPU A and the partner to CPU A (same) or CPU B (cross).
# A round runs the C program (same, then cross) then oscost (`--cpus A,B --placement
# same,cross`); the median ratio oscost/C over the rounds is the figure. A measurement, not a
# test: exits 0 whatever the ratios are. Run it on an idle machine with at least two CPUs.
#
# Usage: [ROUNDS=N] [QUICK=1] scripts/net-vs-c.sh [CPU_A CPU_B]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
cpu_b="${2:-$(last_cpu)}"
side_by_side_setup "${1:-0}"
[[ "$cpu_b" =~ ^[0-9]+$ && "$cpu_b" != "$cpu" ]] || die "CPU_B must be a CPU number other than CPU_A ($cpu)"
taskset -c "$cpu_b" true 2>/dev/null || die "cannot pin to CPU $cpu_b"
c_samples=81
[[ "$quick" == 0 ]] || c_samples=10

echo "building benches/net_ref.c and oscost (release)..." >&2
cc -O2 -pthread -o "$tmp/net_ref" benches/net_ref.c || die "cc failed on benches/net_ref.c"
build_oscost

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost net vs C, median ns per operation, CPUs $cpu (measuring) and $cpu_b (partner when cross),"
echo "$rounds interleaved rounds ($mode); ratio = oscost / C"

declare -A c_ns o_ns ratios
ids=()
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    "$tmp/net_ref" -a "$cpu" -b "$cpu" -s "$c_samples" ${quick_c[@]+"${quick_c[@]}"} -c >"$tmp/c$i" || die "net_ref failed"
    "$tmp/net_ref" -a "$cpu" -b "$cpu_b" -s "$c_samples" ${quick_c[@]+"${quick_c[@]}"} >>"$tmp/c$i" || die "net_ref failed"
    "$bin" --cpus "$cpu,$cpu_b" --quiet --no-save ${quick_oscost[@]+"${quick_oscost[@]}"} \
        net --placement same,cross --json "$tmp/o$i.json" >/dev/null || die "oscost net failed"
    oscost_medians "$tmp/o$i.json" >"$tmp/o$i"
    pair_round "$i" "$tmp/c$i" "$tmp/o$i" 26 9
done

print_pairs 26 9
exit 0
