#!/usr/bin/env bash
# Holds `oscost cgroup` against benches/cgroup_ref.c, a C program that makes the same children
# (a plain fork-like child; the same child writing itself into a new cgroup's cgroup.procs;
# clone3(CLONE_INTO_CGROUP) into it) and the same 1-byte pipe round trips with a partner on the
# same CPU in the same cgroup or a sibling one, in the same hierarchies oscost picks (v2 for
# creating where mounted, the hierarchy with the cpu controller for the pipes), with oscost's
# sampling (81 samples of at least 4 ms after 40 ms of warm-up, rounds over the cases).
# Needs root (it makes cgroups).
#
# Both run pinned to one CPU. A round runs the C program, then oscost; the median ratio
# oscost/C over the rounds is the figure, per case and for the derived differences. A
# measurement, not a test: exits 0 whatever the ratios are. Run it on an idle machine.
#
# Usage: [ROUNDS=N] [QUICK=1] scripts/cgroup-vs-c.sh [CPU]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
c_args=(-s 81 -m 4000)
[[ "$quick" == 0 ]] || c_args=(-s 10 -m 1000)

# The hierarchies, as oscost picks them: this process's cgroup in each.
own() { awk -F: -v c="$1" '{ n = split($2, a, ","); for (k = 1; k <= n; k++) if (a[k] == c) print $3; if (c == "" && $2 == "") print $3 }' /proc/self/cgroup | head -1; }
v2_mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
cpu_mnt=$(awk '$3 == "cgroup" && ("," $4 ",") ~ /,cpu,/ { print $2; exit }' /proc/self/mounts)
new_parent="" cpu_parent="" v2_flag=()
if [[ -n "$v2_mnt" ]]; then
    new_parent="$v2_mnt$(own '')" v2_flag=(-2)
    grep -qw cpu "$new_parent/cgroup.subtree_control" 2>/dev/null && cpu_parent="$new_parent"
fi
[[ -n "$cpu_parent" || -z "$cpu_mnt" ]] || cpu_parent="$cpu_mnt$(own cpu)"
[[ -n "$new_parent" ]] || new_parent="$cpu_parent" v2_flag=()
[[ -n "$new_parent" && -n "$cpu_parent" ]] || die "no cgroup hierarchy with the cpu controller here"

echo "building benches/cgroup_ref.c and oscost (release)..." >&2
cc -O2 -o "$tmp/cgroup_ref" benches/cgroup_ref.c || die "cc failed on benches/cgroup_ref.c"
build_oscost

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost cgroup vs C, median ns per child or round trip, CPU $cpu, $rounds interleaved"
echo "rounds ($mode); new cgroups in $new_parent, the pipes' in $cpu_parent; ratio = oscost / C"

declare -A c_ns o_ns ratios
ids=()
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    "$tmp/cgroup_ref" -N "$new_parent" -P "$cpu_parent" ${v2_flag[@]+"${v2_flag[@]}"} \
        -c "$cpu" "${c_args[@]}" >"$tmp/c$i" || die "cgroup_ref failed"
    "$bin" --cpus "$cpu" --quiet --no-save ${quick_oscost[@]+"${quick_oscost[@]}"} \
        cgroup --json "$tmp/o$i.json" >/dev/null || die "oscost cgroup failed"
    oscost_medians "$tmp/o$i.json" >"$tmp/o$i"
    for f in "$tmp/c$i" "$tmp/o$i"; do
        awk '{ v[$1] = $2 } END {
            if ("cgroup.fork-procs" in v) print "cgroup.fork-procs.over_fork", v["cgroup.fork-procs"] - v["cgroup.fork"]
            if ("cgroup.clone3" in v) print "cgroup.clone3.over_fork", v["cgroup.clone3"] - v["cgroup.fork"]
            print "cgroup.pipe.cross.over_same", v["cgroup.pipe.cross"] - v["cgroup.pipe.same"] }' "$f" >"$f.over"
        cat "$f.over" >>"$f"
    done
    pair_round "$i" "$tmp/c$i" "$tmp/o$i" 30 11
done
print_pairs 30 11
exit 0
