#!/usr/bin/env bash
# A bill predicted under a setting, and checked: for each workload, what the setting is
# predicted to add to the program beside what it measurably adds (the program billed plainly
# and under the setting in turn, ROUNDS rounds each: the change of its time on a CPU for a
# seccomp profile, of its wall time for a container, median of the rounds' ratios with its
# 95 % interval). SETTING=seccomp=default (the default): every system call × what a container
# runtime's default profile adds to a call, from an `oscost seccomp` run made first;
# SETTING=container: the container's namespaces made and taken down once, from an `oscost ns
# --cases container` run made first. oscost does the rounds and the statistics (`oscost bill
# --under SETTING --rounds N`); this script only chooses the workloads, pins them, and gathers
# the verdict lines.
#
# Workloads: benches/bill_work.c's getppid loop (a million calls: the largest share a filter
# can take), its mixed mode, its threads and forkexec modes, and programs nobody here wrote:
# gzip -9 of GZIP_MB MB of random base64 text, find /usr -name '*.h', python3 -c pass.
#
# A measurement, not a test: it exits 0 whatever the verdicts, non-zero only when something it
# needs is missing. Needs root (BPF, cgroup v2). Run it on an idle machine, one benchmark at a
# time.
#
# Usage: [SETTING=seccomp=default|container] [ROUNDS=N]
#        [WORKLOADS="getppid mixed threads forkexec gzip find python"]
#        [OSCOST_BIN=PATH] [GZIP_MB=20] scripts/bill-under.sh [CPU]
#   CPU        the CPU every run is pinned to (default: the last CPU this shell may use)
#   ROUNDS     rounds of each (default 9, at least 3)

#   OSCOST_BIN the oscost binary (default target/release/oscost; never built here)
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
oscost_bin="${OSCOST_BIN:-target/release/oscost}"
ROUNDS="${ROUNDS:-9}"
OSCOST_BIN="$oscost_bin" side_by_side_setup "${1:-}"
[[ -x "$oscost_bin" ]] || die "$oscost_bin not found (build it: cargo build --release)"
((rounds >= 3)) || die "ROUNDS must be at least 3"

all_workloads=(getppid mixed threads forkexec gzip find python)
read -r -a workloads <<<"${WORKLOADS-${all_workloads[*]}}"
for w in "${workloads[@]}"; do
    [[ " ${all_workloads[*]} " == *" $w "* ]] || die "unknown workload '$w' (known: ${all_workloads[*]})"
done
gzip_mb="${GZIP_MB:-20}"
[[ "$gzip_mb" =~ ^[1-9][0-9]*$ ]] || die "GZIP_MB must be a positive integer, got '$gzip_mb'"

cc -O2 -pthread -o "$tmp/bill_work" benches/bill_work.c
if [[ " ${workloads[*]} " == *" gzip "* ]]; then
    head -c $((gzip_mb * 1024 * 768)) /dev/urandom | base64 >"$tmp/input.txt"
fi

setting="${SETTING:-seccomp=default}"
case "$setting" in
seccomp=default)
    echo "the profile's price per call: oscost seccomp, pinned to CPU $cpu"
    price_run=(seccomp)
    ;;
container)
    echo "the container's price: oscost ns --cases container, pinned to CPU $cpu"
    price_run=(ns --cases container)
    ;;
*) die "SETTING must be seccomp=default or container, got '$setting'" ;;
esac
taskset -c "$cpu" "$oscost_bin" "${price_run[@]}" --no-save --quiet --json "$tmp/prices.json" >/dev/null

command_of() {
    case "$1" in
    getppid) cmd=("$tmp/bill_work" getppid 1000000) ;;
    mixed) cmd=("$tmp/bill_work" mixed) ;;
    threads) cmd=("$tmp/bill_work" threads 64) ;;
    forkexec) cmd=("$tmp/bill_work" forkexec 50) ;;
    gzip) cmd=(sh -c "gzip -9 -c '$tmp/input.txt' >/dev/null") ;;
    find) cmd=(find /usr -name '*.h' -fprint /dev/null) ;;
    python) cmd=(python3 -c pass) ;;
    esac
}

for w in "${workloads[@]}"; do
    command_of "$w"
    echo
    echo "== $w: ${cmd[*]}"
    if ! taskset -c "$cpu" "$oscost_bin" bill --prices "$tmp/prices.json" \
        --under "$setting" --rounds "$rounds" -- "${cmd[@]}" \
        >/dev/null 2>"$tmp/err"; then
        echo "failed: $(tail -n 1 "$tmp/err")"
        continue
    fi
    # The check only: from its first line to the verdict.
    sed -n '/^predicted under/,$p' "$tmp/err"
done
