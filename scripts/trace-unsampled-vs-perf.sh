#!/usr/bin/env bash
# Holds what oscost's traced passes call "unsampled" (events a tracepoint's perf count takes in
# but no ring ever holds, none of them lost) against perf's own tools on the same kernel: in
# interleaved rounds,
#   A. perf stat and perf record, each of `sched:sched_waking` on CPU N around a program that
#      sleeps 1 ms 200 times pinned there (its wake-ups come from a timer interrupt taken while
#      the CPU idles): how many perf counted, how many records perf wrote;
#   B. the same with a niced spinning task keeping CPU N busy, so the interrupts find it busy;
#   C. `oscost timeline --quick`: the trace records it calls lost and the events it calls
#      unsampled over its traced rounds.
# Medians over the rounds are printed. On a kernel that does not sample tracepoints in an idle
# CPU's interrupts, A records far fewer than it counts, B nearly all, and C's lost stays 0
# while its unsampled is above 0.
#
# A measurement, not a test: it exits 0 whatever the figures are, non-zero only when something
# it needs is missing. Needs root and perf. Run it on an otherwise idle machine.
#
# Not an entry of `cargo xtask vs`: no figure of perf is held against the same figure of
# oscost. perf's counted is held against perf's recorded (idle, then busy), and oscost's lost
# against its own unsampled: a kernel behaviour shown by each tool alone, with no pair to take a
# ratio of.
#
# Usage: [ROUNDS=N] scripts/trace-unsampled-vs-perf.sh [CPU]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
perf_setup
build_oscost

cat >"$tmp/sleeper.c" <<'C'
#include <unistd.h>
int main(void) { for (int i = 0; i < 200; i++) usleep(1000); return 0; }
C
cc -O2 -o "$tmp/sleeper" "$tmp/sleeper.c" || die "cc failed on the sleeper"

# counted recorded: perf stat, then perf record, of the same command.
perf_pair() {
    local counted recorded
    counted=$(perf stat -x, -e sched:sched_waking -C "$cpu" -- taskset -c "$cpu" "$tmp/sleeper" \
        2>&1 >/dev/null | awk -F, '/sched_waking/ { print $1 }')
    perf record -q -o "$tmp/p.data" -e sched:sched_waking -C "$cpu" -- \
        taskset -c "$cpu" "$tmp/sleeper" >/dev/null 2>&1
    recorded=$(perf script -i "$tmp/p.data" 2>/dev/null | grep -c sched_waking || true)
    echo "$counted $recorded"
}

idle_c="" idle_r="" busy_c="" busy_r="" lost="" unsampled=""
for ((r = 1; r <= rounds; r++)); do
    read -r ic ir < <(perf_pair)
    idle_c+=" $ic" idle_r+=" $ir"
    taskset -c "$cpu" nice -n 19 sh -c 'while :; do :; done' &
    spinner=$!
    sleep 0.2
    read -r c rec < <(perf_pair)
    kill "$spinner"
    wait "$spinner" 2>/dev/null || true
    busy_c+=" $c" busy_r+=" $rec"
    "$bin" timeline --quick --no-save -q --json "$tmp/t.json" >/dev/null
    read -r l u < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
k = [c["counters"] for e in d["experiments"] for c in e["cases"] if c["id"].endswith(".kernel")]
print(int(sum(c.get("trace_records_lost", 0) for c in k)),
      int(sum(c.get("trace_events_unsampled", 0) for c in k)))' "$tmp/t.json")
    lost+=" $l" unsampled+=" $u"
    echo "round $r: perf counted/recorded idle $ic/$ir, busy $c/$rec; oscost lost $l, unsampled $u" >&2
done
echo "perf, CPU $cpu idle:  counted $(median_of "$idle_c"), recorded $(median_of "$idle_r") (medians of $rounds rounds)"
echo "perf, CPU $cpu busy:  counted $(median_of "$busy_c"), recorded $(median_of "$busy_r")"
echo "oscost timeline --quick: lost $(median_of "$lost"), unsampled $(median_of "$unsampled")"
