#!/usr/bin/env bash
# Holds oscost's timeline figures against a plain C program of the same experiment:
#
#   throughput   workers finished per second, N / (the last finish - the common start)
#   latency      the workers' mean finish time from the common start
#
# for N = 1, 2 and 4 forked processes pinned to one CPU, each doing CHUNKS equal chunks of
# busy work. The C side is benches/timeline_ref.c (Satoru Takeuchi's process-scheduler
# experiment, "[試して理解] Linuxのしくみ", 2018, with the time after each chunk kept in
# shared memory and every child reaped). Both run the same xorshift chunk: the C program is
# given the iteration count oscost calibrated in the same round (`chunk_iterations`), so
# whatever oscost adds around the work (its barrier, its counter reads, its bookkeeping) shows
# up as a ratio oscost/C away from 1.
#
# Both run pinned with `taskset -c CPU` to the same CPU, oscost with `--cpus CPU` too. A round
# runs oscost (every N, one round each) and then the C program for every N, so that drift of
# the machine hits both alike; the median ratio over the rounds is the figure.
#
# This is a measurement, not a test: it exits 0 whatever the ratios are, and non-zero only
# when something it needs is missing or fails. Installs nothing. Run it on an otherwise idle
# machine, one benchmark at a time.
#
# Usage: [ROUNDS=N] [QUICK=1] scripts/timeline-vs-c.sh [CPU]
#   CPU     the CPU both sides run on (default: the last CPU this shell may use; also $CPU)
#   ROUNDS  interleaved rounds (default 5)
#   QUICK=1 20 chunks and N = 1, 2 only: a check of the script itself, not a figure to quote
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"

if [[ "$quick" == 0 ]]; then
    chunks=100 sizes=(1 2 4)
else
    chunks=20 sizes=(1 2)
fi
workers=$(
    IFS=,
    echo "${sizes[*]}"
)

echo "building benches/timeline_ref.c and oscost (release)..." >&2
cc -O2 -o "$tmp/timeline_ref" benches/timeline_ref.c || die "cc failed on benches/timeline_ref.c"
build_oscost

# "ITERATIONS" then "N THROUGHPUT LATENCY_NS" per case, from oscost's JSON FILE.
oscost_figures() {
    local file="$1"
    if [[ "$json_reader" == jq ]]; then
        jq -r '.experiments[] | select(.name == "timeline")
            | (.params.chunk_iterations | tostring),
              (.cases[] | select(.counters.throughput_workers_per_s != null)
                | "\(.params.workers) \(.counters.throughput_workers_per_s) \(.counters.latency_avg_ns)")' \
            "$file"
    else
        python3 - "$file" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for e in doc["experiments"]:
    if e["name"] != "timeline":
        continue
    print(e["params"]["chunk_iterations"])
    for c in e["cases"]:
        k = c["counters"]
        if "throughput_workers_per_s" in k:
            print(c["params"]["workers"], k["throughput_workers_per_s"], k["latency_avg_ns"])
EOF
    fi
}

# A figure NAME from the C program's output FILE.
c_figure() {
    local v
    v=$(awk -v k="$2" '$1 == k { print $2 }' "$1")
    [[ -n "$v" ]] || die "no $2 from timeline_ref ($1)"
    echo "$v"
}

declare -A tp_ratio lat_ratio tp_c tp_o lat_c lat_o
mode="$chunks chunks"
[[ "$quick" == 0 ]] || mode="QUICK, $chunks chunks: rough, not a figure to quote"
echo "oscost timeline vs C, $workers processes on CPU $cpu, $rounds interleaved rounds ($mode)"
echo "ratio = oscost / C (throughput: higher is faster; latency: lower is faster)"

for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    json="$tmp/o$i.json"
    taskset -c "$cpu" "$bin" --quiet --cpus "$cpu" timeline --workers "$workers" \
        --chunks "$chunks" --rounds 1 --json "$json" >/dev/null || die "oscost timeline failed"
    mapfile -t lines < <(oscost_figures "$json")
    iterations="${lines[0]}"
    [[ "$iterations" =~ ^[0-9]+$ ]] || die "no chunk_iterations in $json"
    for line in "${lines[@]:1}"; do
        read -r n otp olat <<<"$line"
        out="$tmp/c$i.$n"
        taskset -c "$cpu" "$tmp/timeline_ref" "$n" "$chunks" "$iterations" "$cpu" >"$out" ||
            die "timeline_ref $n failed"
        ctp=$(c_figure "$out" throughput_workers_per_s)
        clat=$(c_figure "$out" latency_avg_ns)
        tp_o[$n]+="$otp " tp_c[$n]+="$ctp " lat_o[$n]+="$olat " lat_c[$n]+="$clat "
        tp_ratio[$n]+="$(awk -v o="$otp" -v c="$ctp" 'BEGIN { printf "%.3f", o / c }') "
        lat_ratio[$n]+="$(awk -v o="$olat" -v c="$clat" 'BEGIN { printf "%.3f", o / c }') "
        printf '  round %d  N=%d  throughput C %7.2f oscost %7.2f /s   latency C %9.2f oscost %9.2f ms\n' \
            "$i" "$n" "$ctp" "$otp" "$(awk -v v="$clat" 'BEGIN { print v / 1e6 }')" \
            "$(awk -v v="$olat" 'BEGIN { print v / 1e6 }')"
    done
done

echo
printf '%-3s %10s %10s %8s   %12s %12s %8s\n' N "C /s" "oscost /s" ratio "C lat ms" "oscost ms" ratio
for n in "${sizes[@]}"; do
    [[ -n "${tp_ratio[$n]:-}" ]] || die "no figures for N=$n"
    printf '%-3s %10.2f %10.2f %8.3f   %12.2f %12.2f %8.3f\n' "$n" \
        "$(median_of "${tp_c[$n]}")" "$(median_of "${tp_o[$n]}")" "$(median_of "${tp_ratio[$n]}")" \
        "$(awk -v v="$(median_of "${lat_c[$n]}")" 'BEGIN { print v / 1e6 }')" \
        "$(awk -v v="$(median_of "${lat_o[$n]}")" 'BEGIN { print v / 1e6 }')" \
        "$(median_of "${lat_ratio[$n]}")"
done
exit 0
