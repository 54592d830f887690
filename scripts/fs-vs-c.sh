#!/usr/bin/env bash
# Holds `oscost fs` against benches/fscalls_ref.c, a C program that makes the same calls in
# the same loops (same sizes, same sampler shape, empty loop subtracted, the two mounts
# sampled in interleaved rounds for each call) on two directories this script mounts: a tmpfs
# and the FUSE file system oscost serves (`oscost __fuse-serve DIR`, the very server the
# experiment starts for itself).
#
# Everything runs pinned with `taskset -c CPU` to one CPU: the C program, the FUSE server it
# talks to, and oscost (with `--cpus CPU`, whose own server inherits the pinning). A round
# runs the C program, then oscost; the rounds are repeated so that drift of the machine hits
# both sides alike, and the median over the rounds of the per-round ratio oscost/C is the
# figure for each call on each mount.
#
# As root the tmpfs is mounted for the run (16 MiB) and the FUSE file system mounted directly;
# another user gets a directory in /dev/shm and needs fusermount3 (Debian: fuse3). Both mounts
# are taken down on every way out. This is a measurement, not a test: it exits 0 whatever the
# ratios are, non-zero only when something it needs is missing or fails. Installs nothing.
#
# Usage: [ROUNDS=N] [QUICK=1] [CALLS=a,b] scripts/fs-vs-c.sh [CPU]
#   CPU     the CPU everything runs on (default: the last CPU this shell may use; also $CPU)
#   ROUNDS  interleaved rounds (default 5)
#   QUICK=1 oscost --quick and the C program's -q: a rough check of the script, not a figure
#   CALLS   the calls (default all: getpid,lseek,open-close,read64k,write64k,creat-write1k-unlink)
#   NICE    a nice value for all three (the C program, its server and oscost, with --nice), e.g.
#           -19 as root on a machine other work keeps busy: every FUSE request waits for the
#           server to be scheduled, so other runnable tasks on the CPU enter every figure
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
calls="${CALLS:-getpid,lseek,open-close,read64k,write64k,creat-write1k-unlink}"
[[ "$calls" =~ ^[a-z0-9-]+(,[a-z0-9-]+)*$ ]] || die "CALLS must be a list like lseek,read64k, got '$calls'"
nice_value="${NICE:-}"
if [[ -n "$nice_value" ]]; then
    [[ "$nice_value" =~ ^-?[0-9]+$ ]] || die "NICE must be an integer, got '$nice_value'"
    run=(nice -n "$nice_value" taskset -c "$cpu") nice_oscost=(--nice "$nice_value")
else
    run=(taskset -c "$cpu") nice_oscost=()
fi

echo "building benches/fscalls_ref.c and oscost (release)..." >&2
cc -O2 -fno-plt -o "$tmp/fscalls_ref" benches/fscalls_ref.c || die "cc failed on benches/fscalls_ref.c"
build_oscost

# The two mounts, and their removal on every way out.
kdir="$tmp/tmpfs" fdir="$tmp/fuse" kmounted=0 server=""
mkdir -p "$kdir" "$fdir"
cleanup() {
    exec 9>&- 2>/dev/null || true # the server's input ends: it unmounts and exits
    if [[ -n "$server" ]]; then
        wait "$server" 2>/dev/null || true
    fi
    if [[ "$kmounted" == 1 ]]; then umount "$kdir" 2>/dev/null || umount -l "$kdir" || true; fi
    if [[ "$kdir" == /dev/shm/* ]]; then rm -rf "$kdir"; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
if [[ "$(id -u)" == 0 ]] && mount -t tmpfs -o size=16m,mode=0700 oscost-tmpfs "$kdir"; then
    kmounted=1 kside="a tmpfs mounted for the run"
else
    kdir=$(mktemp -d /dev/shm/fscalls-ref-XXXXXX) || die "cannot make a directory in /dev/shm"
    kside="a directory in /dev/shm"
fi
mkfifo "$tmp/serve.in"
"${run[@]}" "$bin" __fuse-serve "$fdir" <"$tmp/serve.in" >"$tmp/serve.out" 2>"$tmp/serve.err" &
server=$!
exec 9>"$tmp/serve.in"
for _ in $(seq 500); do
    [[ -s "$tmp/serve.out" ]] && break
    sleep 0.01
done
[[ "$(head -n1 "$tmp/serve.out")" == ready ]] ||
    die "the FUSE server did not mount: $(cat "$tmp/serve.out" "$tmp/serve.err")"

# median_ns of case ID in oscost's JSON FILE, or nothing when it is not there.
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

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost fs vs C, median ns per call, CPU $cpu, $rounds interleaved rounds ($mode)"
echo "kernel side: $kside; user side: oscost's FUSE server, pinned to CPU $cpu${nice_value:+, nice $nice_value}"
echo "ratio = oscost / C"

declare -A c_ns o_ns ratios
ids=()
IFS=, read -ra call_list <<<"$calls"
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    "${run[@]}" "$tmp/fscalls_ref" ${quick_c[@]+"${quick_c[@]}"} -d "tmpfs=$kdir" \
        -d "fuse=$fdir" "${call_list[@]}" >"$tmp/c$i" 2>"$tmp/c$i.err" ||
        die "fscalls_ref failed: $(cat "$tmp/c$i.err")"
    "${run[@]}" "$bin" --cpus "$cpu" ${nice_oscost[@]+"${nice_oscost[@]}"} --quiet --no-save \
        ${quick_oscost[@]+"${quick_oscost[@]}"} \
        fs --calls "$calls" --json "$tmp/o$i.json" >/dev/null || die "oscost fs failed"
    while read -r label cv _; do
        id="fs.$label"
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
        printf '  round %d  %-30s C %10.1f  oscost %10.1f  ratio %s\n' "$i" "$id" "$cv" "$ov" "$r"
    done <"$tmp/c$i"
done

echo
printf '%-30s %12s %12s %8s  %s\n' case "C ns" "oscost ns" ratio "per-round ratios"
for id in "${ids[@]}"; do
    printf '%-30s %12.1f %12.1f %8.3f  %s\n' "$id" "$(median_of "${c_ns[$id]}")" \
        "$(median_of "${o_ns[$id]}")" "$(median_of "${ratios[$id]}")" "${ratios[$id]% }"
done
exit 0
