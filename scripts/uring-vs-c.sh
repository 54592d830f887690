#!/usr/bin/env bash
# Holds `oscost uring` against benches/uring_ref.c, a C program that drives io_uring by raw
# system calls (io_uring_setup, io_uring_enter; no liburing): B NOPs or reads queued on a
# 64-entry ring, one io_uring_enter submitting and waiting for them, their completions reaped,
# beside read(2) of 1 byte from /dev/zero and pread(2) of 64 KiB of a page-cached file, the same
# reads through a registered file (`.fixed.`; 64 KiB by IORING_OP_READ_FIXED into a registered
# buffer), and NOPs through an SQPOLL ring whose thread polls on CPU_B; the cases sampled in
# rotated rounds.
#
# Both sides run measuring on CPU A, the SQPOLL thread on CPU B (oscost with `--cpus A,B`). A
# round runs the C program then oscost (oscost first in even rounds, so neither side always
# meets the other's after-effects or a load's same phase); the median ratio oscost/C over the rounds is the
# figure, printed beside the io_uring_enter calls per operation that the kernel counted for
# oscost (the C program counts none). Then, for each side, what registering did: the median over
# the rounds of each registered case's figure over the unregistered one at the same batch, and the
# SQPOLL poller's CPU share as each side measured it: the SQPOLL figure is the time a NOP waits
# for the poller to run on CPU B, so it is comparable only where the shares are. A measurement, not a test: exits 0 whatever the ratios
# are. Run it on an idle machine with at least two CPUs.
#
# The SQPOLL case gets SQ_PAIRS more alternated pairs of it alone (default twice ROUNDS): its
# figure moves more between runs of one program than the others do.
#
# Usage: [ROUNDS=N] [SQ_PAIRS=N] [QUICK=1] scripts/uring-vs-c.sh [CPU_A CPU_B]
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup_two "${1:-}" "${2:-}"
c_samples=81
[[ "$quick" == 0 ]] || c_samples=10

echo "building benches/uring_ref.c and oscost (release)..." >&2
cc -O2 -o "$tmp/uring_ref" benches/uring_ref.c || die "cc failed on benches/uring_ref.c"
build_oscost

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
echo "oscost uring vs C, median ns per operation, CPU $cpu (measuring), CPU $cpu_b (SQPOLL thread),"
echo "$rounds interleaved rounds ($mode); ratio = oscost / C"

# The C program with ARGS, its output in OUT.   Usage: run_c OUT [ARGS...]
run_c() {
    local out="$1"
    shift
    "$tmp/uring_ref" -a "$cpu" -b "$cpu_b" -s "$c_samples" "$@" >"$out" || die "uring_ref $* failed"
}
# oscost uring with ARGS: its JSON in JSON, and "ID MEDIAN_NS ENTER_PER_OP POLLER_SHARE" a case
# in OUT.   Usage: run_o JSON OUT [ARGS...]
run_o() {
    local json="$1" out="$2"
    shift 2
    "$bin" --cpus "$cpu,$cpu_b" --quiet --no-save ${quick_oscost[@]+"${quick_oscost[@]}"} \
        uring "$@" --json "$json" >/dev/null || die "oscost uring failed"
    python3 - "$json" >"$out" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1]))["experiments"]:
    for c in e["cases"]:
        print(c["id"], c["median_ns"], c["counters"].get("io_uring_enter_per_op", "n/a"),
              c["counters"].get("poller_cpu_share", "n/a"))
PY
}

declare -A c_ns o_ns ratios enters cval oval c_share
ids=()
for ((i = 1; i <= rounds; i++)); do
    echo "round $i of $rounds..." >&2
    if ((i % 2)); then
        run_c "$tmp/c$i" && run_o "$tmp/o$i.json" "$tmp/o$i"
    else
        run_o "$tmp/o$i.json" "$tmp/o$i" && run_c "$tmp/c$i"
    fi
    c_share[$i]=$(awk '$2 == "poller_cpu_share" { print $3 }' "$tmp/c$i")
    while read -r id cv; do
        read -r ov oe <<<"$(awk -v id="$id" '$1 == id { print $2, $3 }' "$tmp/o$i")" || true
        cval[$i.$id]=$cv oval[$i.$id]=${ov:-}
        [[ -n "${ov:-}" ]] || { echo "  round $i  $id: not measured by oscost, skipped" >&2; continue; }
        [[ -n "${c_ns[$id]+x}" ]] || ids+=("$id")
        r=$(awk -v o="$ov" -v c="$cv" 'BEGIN { printf "%.3f", o / c }')
        c_ns[$id]+="$cv " o_ns[$id]+="$ov " ratios[$id]+="$r " enters[$id]+="$oe "
        printf '  round %d  %-24s C %9.1f  oscost %9.1f  ratio %s\n' "$i" "$id" "$cv" "$ov" "$r"
    done < <(grep -v '^#' "$tmp/c$i")
done

# The SQPOLL figure moves between runs of one program more than the others do (each new ring
# reads its own level, ~±6 % apart on a 2-vCPU guest, and now and then a whole run reads about
# three times the rest), so one pair a round holds it loosely: it gets SQ_PAIRS more pairs of
# that case alone, alternated the same way, and its line below is the median over all its pairs.
sq_pairs="${SQ_PAIRS:-$((quick ? 2 : 2 * rounds))}"
[[ "$sq_pairs" =~ ^[0-9]+$ ]] || die "SQ_PAIRS must be a whole number"
sq=uring.nop.sqpoll
if [[ -n "${c_ns[$sq]+x}" ]]; then
    for ((p = 1; p <= sq_pairs; p++)); do
        echo "SQPOLL pair $p of $sq_pairs..." >&2
        sq_args=(--ops nop --batches 1 --no-fixed)
        if ((p % 2)); then
            run_c "$tmp/cs" -S && run_o "$tmp/os.json" "$tmp/os" "${sq_args[@]}"
        else
            run_o "$tmp/os.json" "$tmp/os" "${sq_args[@]}" && run_c "$tmp/cs" -S
        fi
        cv=$(awk -v id="$sq" '$1 == id { print $2 }' "$tmp/cs")
        read -r ov os <<<"$(awk -v id="$sq" '$1 == id { print $2, $4 }' "$tmp/os")" || true
        [[ -n "$cv" && -n "${ov:-}" ]] || { echo "  SQPOLL pair $p: not measured on one side, skipped" >&2; continue; }
        r=$(awk -v o="$ov" -v c="$cv" 'BEGIN { printf "%.3f", o / c }')
        c_ns[$sq]+="$cv " o_ns[$sq]+="$ov " ratios[$sq]+="$r "
        cs=$(awk '$2 == "poller_cpu_share" { print $3 }' "$tmp/cs")
        os=$(awk -v v="${os:-n/a}" 'BEGIN { if (v == "n/a") print v; else printf "%.3f", v }')
        printf '  pair %d   %-24s C %9.1f  oscost %9.1f  ratio %s  poller share C|oscost %s|%s\n' \
            "$p" "$sq" "$cv" "$ov" "$r" "${cs:-n/a}" "$os"
    done
fi

echo
printf '%-24s %9s %9s %8s  %-18s %s\n' case "C ns" "oscost ns" ratio "enter/op (oscost)" "per-round ratios"
for id in "${ids[@]}"; do
    printf '%-24s %9.1f %9.1f %8.3f  %-18s %s\n' "$id" "$(median_of "${c_ns[$id]}")" \
        "$(median_of "${o_ns[$id]}")" "$(median_of "${ratios[$id]}")" "${enters[$id]%% *}" "${ratios[$id]% }"
done

echo
echo "registered / unregistered at the same batch, median over rounds of each side's own ratio"
printf '%-24s %9s %9s  %s\n' case C oscost "per-round C | oscost"
for id in "${ids[@]}"; do
    [[ "$id" == *.fixed.* ]] || continue
    base="${id/.fixed/}" cr="" or=""
    for ((i = 1; i <= rounds; i++)); do
        [[ -n "${cval[$i.$id]:-}" && -n "${cval[$i.$base]:-}" ]] &&
            cr+="$(awk -v a="${cval[$i.$id]}" -v b="${cval[$i.$base]}" 'BEGIN { printf "%.3f", a / b }') "
        [[ -n "${oval[$i.$id]:-}" && -n "${oval[$i.$base]:-}" ]] &&
            or+="$(awk -v a="${oval[$i.$id]}" -v b="${oval[$i.$base]}" 'BEGIN { printf "%.3f", a / b }') "
    done
    [[ -n "$cr" && -n "$or" ]] || continue
    printf '%-24s %9.3f %9.3f  %s| %s\n' "$id" "$(median_of "$cr")" "$(median_of "$or")" "$cr" "${or% }"
done
shares=""
for ((i = 1; i <= rounds; i++)); do
    s=$(awk '$1 == "uring.nop.sqpoll" && $4 != "n/a" { printf "%.3f", $4 }' "$tmp/o$i" 2>/dev/null)
    shares+="${c_share[$i]:-n/a}|${s:-n/a} "
done
printf 'SQPOLL poller CPU share per round, C|oscost: %s\n' "${shares% }"
((sq_pairs == 0)) || [[ -z "${c_ns[$sq]+x}" ]] || echo "$sq: its line is over the $rounds rounds and $sq_pairs pairs of that case alone (SQ_PAIRS)"
exit 0
