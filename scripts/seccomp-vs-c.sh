#!/usr/bin/env bash
# Holds `oscost seccomp` against benches/seccomp_ref.c, a C program that installs the same
# filter sets (none, allow-1, args-1, args-8, profile: the same BPF instructions, the profile
# from the same list of calls) with no_new_privs in a forked child per set, and times the same
# loops of syscall(SYS_getpid) and syscall(SYS_fstat) of /dev/null in each child, the empty
# loop subtracted, in rounds over all cases; and getpid handed to a supervisor process
# (SECCOMP_RET_USER_NOTIF) on the same CPU and on a second one.
#
# Both run pinned to the lower of the two CPUs, the cross-CPU supervisor on the higher (oscost
# with `--cpus A,B`). A round runs the C program, then oscost; the median ratio
# oscost/C over the rounds is the figure, per case and for each set's cost over no filter. A
# measurement, not a test: exits 0 whatever the ratios are. Run it on an idle machine.
#
# Usage: [ROUNDS=N] [QUICK=1] scripts/seccomp-vs-c.sh [CPU_A CPU_B]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup_two "${1:-}" "${2:-}"
# oscost measures on the first CPU of its set, which it sorts.
if ((cpu_b < cpu)); then
    read -r cpu cpu_b <<<"$cpu_b $cpu"
fi
c_args=(-s 81 -m 4000)
[[ "$quick" == 0 ]] || c_args=(-s 10 -m 1000)

echo "building benches/seccomp_ref.c and oscost (release)..." >&2
cc -O2 -o "$tmp/seccomp_ref" benches/seccomp_ref.c || die "cc failed on benches/seccomp_ref.c"
build_oscost

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost seccomp vs C, median ns per call, CPU $cpu (cross-CPU supervisor on $cpu_b),"
echo "$rounds interleaved rounds ($mode);"
echo "ratio = oscost / C; 'over none' rows: each side's set less its own bare call"

declare -A c_ns o_ns ratios
ids=()
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    "$tmp/seccomp_ref" -c "$cpu" -C "$cpu_b" "${c_args[@]}" >"$tmp/c$i" || die "seccomp_ref failed"
    "$bin" --cpus "$cpu,$cpu_b" --quiet --no-save ${quick_oscost[@]+"${quick_oscost[@]}"} \
        seccomp --json "$tmp/o$i.json" >/dev/null || die "oscost seccomp failed"
    python3 - "$tmp/o$i.json" >"$tmp/o$i" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))["experiments"][0]
for c in e["cases"]:
    print(c["id"], c["median_ns"])
PY
    # Each side's cost over its own bare call, as extra rows.
    for f in "$tmp/c$i" "$tmp/o$i"; do
        awk '{ v[$1] = $2; order[NR] = $1 } END {
            for (k = 1; k <= NR; k++) {
                id = order[k]; split(id, p, ".")
                if (p[2] == "notify") print id ".over_none", v[id] - v["seccomp.none.getpid"]
                else if (p[2] != "none") print id ".over_none", v[id] - v["seccomp.none." p[3]]
            } }' "$f" >>"$f.over"
        cat "$f.over" >>"$f"
    done
    while read -r id cv _; do
        ov=$(awk -v id="$id" '$1 == id { print $2 }' "$tmp/o$i")
        [[ -n "$ov" ]] || { echo "  round $i  $id: not measured by oscost, skipped" >&2; continue; }
        [[ -n "${c_ns[$id]+x}" ]] || ids+=("$id")
        r=$(awk -v o="$ov" -v c="$cv" 'BEGIN { printf "%.3f", o / c }')
        c_ns[$id]+="$cv " o_ns[$id]+="$ov " ratios[$id]+="$r "
        printf '  round %d  %-36s C %8.1f  oscost %8.1f  ratio %s\n' "$i" "$id" "$cv" "$ov" "$r"
    done <"$tmp/c$i"
done

echo
printf '%-36s %8s %9s %8s  %s\n' case "C ns" "oscost ns" ratio "per-round ratios"
for id in "${ids[@]}"; do
    printf '%-36s %8.1f %9.1f %8.3f  %s\n' "$id" "$(median_of "${c_ns[$id]}")" \
        "$(median_of "${o_ns[$id]}")" "$(median_of "${ratios[$id]}")" "${ratios[$id]% }"
done
exit 0
