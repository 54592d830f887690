#!/usr/bin/env bash
# Holds `oscost net` against lmbench's own programs, a peer tool (Larry McVoy and Carl Staelin,
# "lmbench: Portable tools for performance analysis", 1996): lat_tcp, lat_udp, lat_unix,
# lat_connect, bw_tcp, bw_unix and bw_pipe, built from lmbench's public source for the
# comparison only (nothing of it is in this repository). Set LMBENCH to the directory that holds
# the seven programs; from an lmbench3 source tree, for each of them:
#   cc -O2 -D_GNU_SOURCE -DHAVE_uint -DHAVE_int64_t -DHAVE_socklen_t -DHAVE_SCHED_SETAFFINITY \
#      -I/usr/include/tirpc -o "$LMBENCH/lat_tcp" src/lat_tcp.c src/lib_{tcp,udp,unix,timing,stats,mem,sched,debug}.c src/getopt.c -lm -ltirpc
# (Debian: libtirpc-dev).
#
# Pairs, lmbench -> oscost, measuring side on CPU A, the other on CPU A (same) or CPU B (cross):
#   lat_tcp (server pinned by taskset)       -> net.tcp.rtt.same, .cross    (1-byte round trip)
#   lat_udp (server pinned by taskset)       -> net.udp.rtt.same, .cross    (lmbench sends 4 bytes: its sequence number)
#   lat_unix (whole program on CPU A)        -> net.unix.rtt.same           (it places its child itself: no cross)
#   bw_tcp -m 65536 (server pinned)          -> net.tcp.bw.same, .cross     (ns per 64 KiB = 65 536 000 / MB/s)
#   bw_unix, bw_pipe (LMBENCH_SCHED=CUSTOM_UNIQUE "A A" or "A B") -> net.unix.bw.*, net.pipe.bw.*
#   lat_connect (server on CPU B)            -> net.tcp.connect, not the same figure: see below
# What differs in meaning, and so what a ratio away from 1 may be:
# - lmbench's two sides are processes, oscost's two threads of one: on one CPU each of lmbench's
#   switches also changes the address space.
# - bw_tcp sets SO_SNDBUF and SO_RCVBUF (fixed buffers, capped by net.core.wmem_max/rmem_max);
#   oscost leaves TCP's buffers to the kernel's autotuning, as net_ref.c does.
# - lat_connect's connections are accepted and closed by a server process on CPU B, and its
#   client closes first (the client's side is left in TIME_WAIT); oscost's net.tcp.connect has
#   a thread on the measuring CPU accept and close first (a FIN each way too, the accepting side
#   in TIME_WAIT). Its line is printed apart, as related, not paired; `cargo xtask vs net` holds the
#   case against a C program of the same placement.
# - lmbench reports the median of 11 timings (ENOUGH=20000: each at least 20 ms), oscost the
#   median of its samples.
#
# A round runs lmbench's programs (same, then cross) and oscost (`net --placement same,cross`),
# lmbench first in odd rounds and oscost first in even ones; the median ratio oscost/lmbench over
# the rounds is the figure. IDLE_POLL=1 holds /dev/cpu_dma_latency at 0 for the whole script (the
# cross-CPU cases otherwise time how fast a halted vCPU wakes, which moves between runs of one
# program by more than any band: see `cargo xtask vs net --control`). lmbench's programs are slow to
# finish (about 25 s for lat_tcp): a round takes about three minutes. A measurement, not a test:
# exits 0 whatever the ratios are. Run it on an idle machine with at least two CPUs.
#
# Usage: LMBENCH=DIR [ROUNDS=N] [IDLE_POLL=1] scripts/net-vs-lmbench.sh [CPU_A CPU_B]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup_two "${1:-}" "${2:-}"
lm="${LMBENCH:-}"
[[ -n "$lm" ]] || die "set LMBENCH to the directory of lmbench's built programs (see this script's header)"
for p in lat_tcp lat_udp lat_unix lat_connect bw_tcp bw_unix bw_pipe; do
    [[ -x "$lm/$p" ]] || die "$lm/$p not found or not executable (see this script's header for the build)"
done
export ENOUGH=20000
hold_idle_poll

# lmbench's servers run in the background until told to stop: stopped on any exit (the trap
# below calls it).
# shellcheck disable=SC2317
stop_servers() {
    local p
    for p in lat_tcp lat_udp lat_connect bw_tcp; do
        "$lm/$p" -S 127.0.0.1 >/dev/null 2>&1 || true
    done
    pkill -f "^$lm/(lat_tcp|lat_udp|lat_connect|bw_tcp) -s" 2>/dev/null || true
}
trap 'stop_servers; rm -rf "$tmp"' EXIT

build_oscost

echo "oscost net vs lmbench, median ns per operation, CPUs $cpu (measuring) and $cpu_b (partner when cross),"
echo "$rounds interleaved rounds; ratio = oscost / lmbench"
say_idle

# The number before UNIT in lmbench's report on standard error.
lm_value() {
    awk -v u="$1" '{ for (i = 2; i <= NF; i++) if ($i == u) v = $(i - 1) } END { if (v == "") exit 1; print v }'
}

# One client run against a server pinned to SERVER_CPU: prints the figure before UNIT.
# Usage: lm_served PROGRAM SERVER_CPU UNIT [CLIENT_ARGS...]
lm_served() {
    local p="$1" scpu="$2" unit="$3" v
    shift 3
    taskset -c "$scpu" "$lm/$p" -s || die "$p -s failed (its port in use?)"
    sleep 0.2
    v=$(taskset -c "$cpu" "$lm/$p" "$@" 127.0.0.1 2>&1 | lm_value "$unit") || die "$p gave no figure"
    "$lm/$p" -S 127.0.0.1 >/dev/null 2>&1 || true
    sleep 0.2
    echo "$v"
}

# lmbench's figures of one round as "ID NS" lines, in FILE.
run_lmbench() {
    local f="$1" place b v
    : >"$f"
    for place in same cross; do
        b=$cpu
        [[ "$place" == same ]] || b=$cpu_b
        v=$(lm_served lat_tcp "$b" microseconds)
        echo "net.tcp.rtt.$place $(awk -v v="$v" 'BEGIN { print v * 1000 }')" >>"$f"
        v=$(lm_served lat_udp "$b" microseconds)
        echo "net.udp.rtt.$place $(awk -v v="$v" 'BEGIN { print v * 1000 }')" >>"$f"
        v=$(lm_served bw_tcp "$b" MB/sec -m 65536)
        echo "net.tcp.bw.$place $(awk -v v="$v" 'BEGIN { print 65536000 / v }')" >>"$f"
        v=$(LMBENCH_SCHED="CUSTOM_UNIQUE $cpu $b" "$lm/bw_unix" 2>&1 | lm_value MB/sec) || die "bw_unix gave no figure"
        echo "net.unix.bw.$place $(awk -v v="$v" 'BEGIN { print 65536000 / v }')" >>"$f"
        v=$(LMBENCH_SCHED="CUSTOM_UNIQUE $cpu $b" "$lm/bw_pipe" 2>&1 | lm_value MB/sec) || die "bw_pipe gave no figure"
        echo "net.pipe.bw.$place $(awk -v v="$v" 'BEGIN { print 65536000 / v }')" >>"$f"
    done
    v=$(taskset -c "$cpu" "$lm/lat_unix" 2>&1 | lm_value microseconds) || die "lat_unix gave no figure"
    echo "net.unix.rtt.same $(awk -v v="$v" 'BEGIN { print v * 1000 }')" >>"$f"
    v=$(lm_served lat_connect "$cpu_b" microseconds)
    echo "related.net.tcp.connect $(awk -v v="$v" 'BEGIN { print v * 1000 }')" >>"$f"
}

run_oscost() {
    "$bin" --cpus "$cpu,$cpu_b" --quiet --no-save net --placement same,cross \
        --cases tcp.rtt,udp.rtt,unix.rtt,tcp.connect,tcp.bw,unix.bw,pipe.bw \
        ${idle_poll[@]+"${idle_poll[@]}"} --json "$tmp/o$1.json" >/dev/null || die "oscost net failed"
    oscost_medians "$tmp/o$1.json" | awk '{ if ($1 == "net.tcp.connect") $1 = "related." $1; print }' >"$tmp/o$1"
}

declare -A c_ns o_ns ratios
ids=()
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    if ((i % 2)); then
        run_lmbench "$tmp/c$i"
        run_oscost "$i"
    else
        run_oscost "$i"
        run_lmbench "$tmp/c$i"
    fi
    pair_round "$i" "$tmp/c$i" "$tmp/o$i" 26 9 lmbench
done

# print_pairs heads its columns "C ns": here the reference is lmbench.
print_pairs 26 9 | sed '2s/   C ns/  lmb ns/'
echo "(related.*: a different figure, not held to any band: see this script's header)"
exit 0
