#!/usr/bin/env bash
# Holds `oscost poll` against benches/poll_ref.c, a C program that times the same calls over the
# same sockets: select (read set copied before each call), poll and epoll_wait (16 events) with a
# zero timeout over N connected UNIX stream sockets, the last holding one byte, and epoll_ctl
# ADD + DEL of one more socket on an instance watching the most; the cases sampled in rotated
# rounds. Each round then holds select over copies of the smallest size's sockets on the
# highest descriptors below 1024 (`poll.select.N.high`) against C's, in a run of that size
# alone (the copies need room below 1024 that the largest size takes). Also prints the per-descriptor slope (1000 less 10, over
# 990) of each side.
#
# `perf bench epoll wait` is no peer here: it times epoll_wait blocking on eventfds written by
# other threads (wake-ups and switches, not a zero-timeout scan of one ready socket). Nor is
# `perf bench epoll ctl`: it adds, modifies and deletes eventfds in turn on an instance that
# watches only the one being changed, counted over seconds with a nanosleep every pass, where
# poll.epoll-ctl adds and deletes one socket on an instance watching the case's N.
#
# Both sides run on CPU A. A round runs the C program then oscost; the median ratio oscost/C
# over the rounds is the figure. A measurement, not a test: exits 0 whatever the ratios are.
#
# Usage: [ROUNDS=N] [QUICK=1] [FDS=10,1000] scripts/poll-vs-c.sh [CPU_A]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
fds="${FDS:-10,1000}"
[[ "$fds" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "FDS must be sizes separated by commas, got '$fds'"
c_samples=81
[[ "$quick" == 0 ]] || c_samples=10

echo "building benches/poll_ref.c and oscost (release)..." >&2
cc -O2 -o "$tmp/poll_ref" benches/poll_ref.c || die "cc failed on benches/poll_ref.c"
build_oscost

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost poll vs C, median ns per call, CPU $cpu, sizes $fds,"
echo "$rounds interleaved rounds ($mode); ratio = oscost / C"

lo="${fds%%,*}" hi="${fds##*,}"
declare -A c_ns o_ns ratios
ids=()
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    "$tmp/poll_ref" -a "$cpu" -n "$fds" -s "$c_samples" >"$tmp/c$i" || die "poll_ref failed"
    "$bin" --cpus "$cpu" --quiet --no-save ${quick_oscost[@]+"${quick_oscost[@]}"} \
        poll --fds "$fds" --json "$tmp/o$i.json" >/dev/null || die "oscost poll failed"
    oscost_medians "$tmp/o$i.json" >"$tmp/o$i"
    pair_round "$i" "$tmp/c$i" "$tmp/o$i" 21 9
    # The copies just below 1024 need room there: the smallest size alone, beside its plain case.
    "$tmp/poll_ref" -H -a "$cpu" -n "$lo" -s "$c_samples" | grep '\.high ' >"$tmp/ch$i" ||
        die "poll_ref -H failed"
    "$bin" --cpus "$cpu" --quiet --no-save ${quick_oscost[@]+"${quick_oscost[@]}"} \
        poll --fds "$lo" --calls select,select-high --json "$tmp/oh$i.json" >/dev/null ||
        die "oscost poll --calls select-high failed"
    oscost_medians "$tmp/oh$i.json" | grep '\.high ' >"$tmp/oh$i" || true
    pair_round "$i" "$tmp/ch$i" "$tmp/oh$i" 21 9
done

print_pairs 21 9
if [[ "$lo" != "$hi" ]]; then
    echo
    echo "slope ns per descriptor ($hi less $lo, over $((hi - lo))), medians of the rounds:"
    for k in select poll epoll; do
        a="poll.$k.$lo" b="poll.$k.$hi"
        [[ -n "${c_ns[$a]+x}" && -n "${c_ns[$b]+x}" ]] || continue
        awk -v k="$k" -v ca="$(median_of "${c_ns[$a]}")" -v cb="$(median_of "${c_ns[$b]}")" \
            -v oa="$(median_of "${o_ns[$a]}")" -v ob="$(median_of "${o_ns[$b]}")" -v d=$((hi - lo)) \
            'BEGIN { printf "  %-7s C %8.3f  oscost %8.3f\n", k, (cb - ca) / d, (ob - oa) / d }'
    done
fi
exit 0
