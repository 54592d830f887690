#!/usr/bin/env bash
# Holds `oscost signal` against benches/signal_ref.c, a C program of the same operations timed
# the same way: sigaction installing SIGUSR1's handler, tgkill of SIGUSR1 to the own thread and
# the handler's return, a SIGSEGV from a write to a read-only page stepped over by the handler
# (x86_64), and the round trip of two threads waking each other with SIGUSR1 in sigsuspend on
# one CPU (A) and on two (A, B), and the same with a forked child process in place of the second
# thread.
#
# A round runs the C program then oscost (`--cpus A,B`); the median ratio oscost/C over the
# rounds is the figure. A measurement, not a test: exits 0 whatever the ratios are.
#
# A waking case across CPUs mostly times how fast the partner's halted CPU wakes up (about two
# entries into a halting idle state per round trip, which `oscost signal` counts), and that
# time moves between runs. IDLE_POLL=1 holds /dev/cpu_dma_latency at 0 for the whole script
# (both sides; oscost is also given --idle-poll so its result records it), so the CPUs poll
# instead of halting and both sides time the signal.
#
# Usage: [ROUNDS=N] [QUICK=1] [IDLE_POLL=1] scripts/signal-vs-c.sh [CPU_A CPU_B]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup_two "${1:-}" "${2:-}"
c_samples=81
[[ "$quick" == 0 ]] || c_samples=10
hold_idle_poll

echo "building benches/signal_ref.c and oscost (release)..." >&2
cc -O2 -pthread -o "$tmp/signal_ref" benches/signal_ref.c || die "cc failed on benches/signal_ref.c"
build_oscost

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost signal vs C, median ns per operation (round trip for wake), CPUs $cpu and $cpu_b,"
echo "$rounds interleaved rounds ($mode); ratio = oscost / C"
say_idle

declare -A c_ns o_ns ratios
ids=()
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    "$tmp/signal_ref" -a "$cpu" -b "$cpu_b" -s "$c_samples" >"$tmp/c$i" || die "signal_ref failed"
    "$bin" --cpus "$cpu,$cpu_b" --quiet --no-save ${quick_oscost[@]+"${quick_oscost[@]}"} \
        signal ${idle_poll[@]+"${idle_poll[@]}"} --json "$tmp/o$i.json" >/dev/null ||
        die "oscost signal failed"
    oscost_medians "$tmp/o$i.json" >"$tmp/o$i"
    pair_round "$i" "$tmp/c$i" "$tmp/o$i" 20 9
done

print_pairs 20 9
exit 0
