#!/usr/bin/env bash
# Holds seven one-task oscost figures against plain single-threaded C loops of the same
# operations, and gives a C reference for what one idle extra thread adds to lseek.
#
# Section 1, oscost vs C (ratio = oscost / C, one figure per case):
#
#   syscall.read1            read(fd, buf, 1) from /dev/zero, page-aligned buffer
#   syscall.write1           write(fd, buf, 1) to /dev/null
#   syscall.read64k          pread(fd, buf, 65536, 0) of a 64 KiB file under $TMPDIR into a
#                            page-aligned buffer
#   primitives.pthread-mutex pthread_mutex_lock + unlock of a PTHREAD_MUTEX_INITIALIZER mutex
#   primitives.posix-sem     sem_post + sem_wait, process-shared sem_t in MAP_SHARED memory
#   primitives.eventfd       8-byte write of 1 + 8-byte read on an EFD_SEMAPHORE eventfd
#   primitives.pipe          1-byte write + 1-byte read on a pipe
#
# The C side is benches/fdcalls_ref.c: the same calls on objects made the same way, sampled in
# the same shape as oscost (batches of >= 4 ms, warm-up, empty loop subtracted, 81 samples,
# median), in a process that creates no thread. oscost's figure should match it: whatever
# oscost adds around the operation (another thread in its process, its own wrappers, a
# different buffer) shows up as a ratio above 1; a ratio below 1 means oscost measures less
# than the operation costs.
#
# The runs are paired the way oscost groups its cases, so that both sides sample alike:
#  - `oscost syscall --calls read1,write1,read64k` samples its three cases interleaved (one
#    sample of each per round); the C program does the same with `read1 write1 read64k`;
#  - `oscost primitives --only ...` measures each primitive to the end before the next one;
#    the C program's -s does the same.
# (oscost may measure multi-threaded variants of some cases after all the single-threaded
# ones, in the same process; they come later, so they do not touch the figures compared here.)
#
# Section 2, C reference for a multi-threaded penalty: lseek(fd, 0, SEEK_SET) on that file, C
# in a single-threaded process against the same C with -t (one idle extra thread, blocked
# for good), per round: the penalty in ns and in % of the single-threaded figure, then their
# medians. A second thread changes what a file-descriptor call costs even when it never runs
# (the kernel stops taking the single-owner shortcut for the file table), so this is what
# oscost's `syscall.lseek.mt_penalty` should come out at. Each round also runs
# `oscost syscall --calls lseek`; when its JSON has a derived figure whose id ends in
# `lseek.mt_penalty`, it is printed beside the C penalty, otherwise the script says that
# oscost has no such figure yet.
#
# Everything runs pinned with `taskset -c CPU` to the same single CPU, oscost with
# `--cpus CPU` too. Every round runs each pair of programs back to back, the order of the two
# sides swapped every other round, so that drift of the machine during the session (a VM's
# host getting busier, a warming CPU) hits both sides alike; the median over the rounds is
# the figure. Both sides must see the same $TMPDIR: read64k and lseek cost what the file
# system's code costs.
#
# One benchmark at a time: before each timed run the script waits while another process
# named oscost, fdcalls_ref, perf or stress-ng is running (WAIT_MAX seconds at most, then it
# gives up), because two benchmarks on one CPU measure each other.
#
# This is a measurement, not a test: it exits 0 whatever the ratios are, and 2 when something
# it needs is missing or fails (build, pinning, a run, a figure absent from a result). Installs
# nothing. Run it on an otherwise idle machine.
#
# Usage: [ROUNDS=N] [QUICK=1] [DEV=1] [OSCOST_BIN=path] scripts/truth-acceptance.sh [CPU]
#   CPU        the CPU everything runs on (default: the last CPU this shell may use; also $CPU)
#   ROUNDS     interleaved rounds of each section (default 5)
#   QUICK=1    oscost --quick and the C program's -q (15 samples of >= 1 ms): a rough check of
#              the script itself, not a figure to quote
#   DEV=1      for an oscost that does not know every case yet: calls it rejects are left out
#              of its run (the C side still measures them) and reported as missing, instead of
#              stopping the script. Not for figures to quote: the interleaving then differs
#   OSCOST_BIN an oscost binary to use instead of building this tree's (e.g. one built from a
#              clean checkout while this tree is being edited)
#   WAIT_MAX   seconds to wait for other benchmarks to finish before each run (default 900;
#              0 = do not look for them)
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
side_by_side_setup "${1:-}"
dev="${DEV:-0}"
wait_max="${WAIT_MAX:-900}"
[[ "$wait_max" =~ ^[0-9]+$ ]] || die "WAIT_MAX must be a number of seconds, got '$wait_max'"
[[ "$dev" == 0 || -z "$dev" ]] && dev=0 || dev=1
command -v pgrep >/dev/null 2>&1 || die "'pgrep' is required but not found"
build_both
# Within this of 1 a median ratio counts as agreeing.
tolerance=0.10

# ---- reading results ----

# "MEDIAN_NS<TAB>FAILED_CHECKS" of case ID in oscost's JSON FILE (FAILED_CHECKS: the names
# of the case's failed mechanism checks, comma-separated, empty when all passed), or
# "unavailable<TAB>REASON" when oscost listed the case as not measurable here, or nothing
# when the case is not in the file at all.
oscost_case() {
    local file="$1" id="$2"
    if [[ "$json_reader" == jq ]]; then
        jq -r --arg id "$id" '
            [(.experiments[].cases[] | select(.id == $id)
                | "\(.median_ns)\t\([.checks[]? | select(.passed | not) | .name] | join(","))"),
             (.experiments[].unavailable[]? | select(.id == $id) | "unavailable\t\(.reason)")
            ][0] // empty' "$file"
    else
        python3 - "$file" "$id" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for e in doc["experiments"]:
    for c in e["cases"]:
        if c["id"] == sys.argv[2]:
            failed = [k["name"] for k in c.get("checks", []) if not k["passed"]]
            print(f'{c["median_ns"]}\t{",".join(failed)}')
            sys.exit(0)
for e in doc["experiments"]:
    for u in e.get("unavailable", []):
        if u["id"] == sys.argv[2]:
            print(f'unavailable\t{u["reason"]}')
            sys.exit(0)
EOF
    fi
}

# "ID<TAB>ESTIMATE_NS<TAB>CI_LOW<TAB>CI_HIGH<TAB>FLAGGED" of the first derived figure whose id
# ends in SUFFIX in oscost's JSON FILE, or nothing when there is none.
oscost_derived() {
    local file="$1" suffix="$2"
    if [[ "$json_reader" == jq ]]; then
        jq -r --arg s "$suffix" '
            [.experiments[].derived[]? | select(.id | endswith($s))][0]
            | if . == null then empty else
                "\(.id)\t\(.estimate_ns)\t\(.ci95_ns[0])\t\(.ci95_ns[1])\t\(.flagged // "")" end
            ' "$file"
    else
        python3 - "$file" "$suffix" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for e in doc["experiments"]:
    for d in e.get("derived", []):
        if d["id"].endswith(sys.argv[2]):
            lo, hi = d["ci95_ns"]
            print(f'{d["id"]}\t{d["estimate_ns"]}\t{lo}\t{hi}\t{d.get("flagged") or ""}')
            sys.exit(0)
EOF
    fi
}

# ---- running ----

# Pids of other benchmarks running now, by exact process name (a name, not the command line:
# a compiler building oscost is not a benchmark). One name per pgrep: pgrep refuses a pattern
# longer than the 15 characters of a process name.
other_benchmarks() {
    local name
    for name in oscost fdcalls_ref perf stress-ng; do
        pgrep -x "$name" || true
    done | tr '\n' ' '
}

# Waits while another benchmark runs (see the header). Our own runs are over whenever this is
# called, so any such process is someone else's.
wait_for_quiet() {
    ((wait_max > 0)) || return 0
    local waited=0 others
    while others=$(other_benchmarks) && [[ -n "$others" ]]; do
        ((waited < wait_max)) ||
            die "other benchmark processes still running after ${wait_max} s (pids $others)"
        ((waited % 60 == 0)) && echo "waiting for other benchmarks to finish (pids $others)..." >&2
        sleep 5
        waited=$((waited + 5))
    done
}

run_c() { # OUT FLAGS_AND_CASES...
    local out="$1"
    shift
    wait_for_quiet
    taskset -c "$cpu" "$tmp/fdcalls_ref" ${quick_c[@]+"${quick_c[@]}"} "$@" >"$out" ||
        die "fdcalls_ref $* failed"
}
run_oscost() { # JSON SUBCOMMAND ARGS...
    local json="$1"
    shift
    wait_for_quiet
    taskset -c "$cpu" "$bin" "$@" --cpus "$cpu" --quiet ${quick_oscost[@]+"${quick_oscost[@]}"} \
        --json "$json" >/dev/null || die "oscost $* failed"
}

# The cases of section 1, their oscost ids, and which pair of runs measures them.
syscall_cases=(read1 write1 read64k)
prim_cases=(pthread-mutex posix-sem eventfd pipe)
cases=("${syscall_cases[@]}" "${prim_cases[@]}")
declare -A id run
for c in "${syscall_cases[@]}"; do id[$c]=syscall.$c run[$c]=syscall; done
for c in "${prim_cases[@]}"; do id[$c]=primitives.$c run[$c]=prims; done

# What oscost is asked for. DEV=1 leaves out the calls this oscost rejects: clap lists the
# accepted values of --calls in `syscall --help`.
oscost_calls=("${syscall_cases[@]}")
declare -A missing=()
if ((dev)); then
    help=$("$bin" syscall --help 2>&1) || die "oscost syscall --help failed"
    oscost_calls=()
    for c in "${syscall_cases[@]}"; do
        if grep -qw -- "$c" <<<"$help"; then
            oscost_calls+=("$c")
        else
            missing[$c]=1
            echo "DEV: this oscost has no syscall call '$c'; measuring it in C only" >&2
        fi
    done
fi
join_comma() { local IFS=,; echo "$*"; }

mode="standard sampling"
[[ "$quick" == 0 ]] || mode="QUICK: rough, not a figure to quote"
((dev == 0)) || mode+="; DEV: incomplete oscost runs, not a figure to quote"
echo "oscost vs single-threaded C, median ns per op, CPU $cpu, $rounds interleaved rounds ($mode)"
echo "TMPDIR=${TMPDIR:-/tmp}; ratio = oscost / C"
echo
echo "== 1. oscost vs single-threaded C =="

# The four runs of a round of section 1 (round number in $i).
c_sys() { run_c "$tmp/c$i.syscall" "${syscall_cases[@]}"; }
o_sys() {
    if ((${#oscost_calls[@]})); then
        run_oscost "$tmp/o$i.syscall.json" syscall --calls "$(join_comma "${oscost_calls[@]}")"
    else
        echo '{"experiments":[]}' >"$tmp/o$i.syscall.json"
    fi
}
c_prims() { run_c "$tmp/c$i.prims" -s "${prim_cases[@]}"; }
o_prims() { run_oscost "$tmp/o$i.prims.json" primitives --only "$(join_comma "${prim_cases[@]}")"; }

declare -A c_ns o_ns ratios notes
for ((i = 1; i <= rounds; i++)); do
    echo "section 1, round $i of $rounds..." >&2
    # Odd rounds run C first, even rounds oscost first: neither side always gets the machine
    # in the state the other leaves it in.
    if ((i % 2)); then
        c_sys; o_sys; c_prims; o_prims
    else
        o_sys; c_sys; o_prims; c_prims
    fi
    for c in "${cases[@]}"; do
        cv=$(c_median "$tmp/c$i.${run[$c]}" "$c")
        if [[ -n "${missing[$c]:-}" ]]; then
            printf '  round %d  %-24s C %9.1f  oscost       n/a  (DEV: not in this oscost)\n' \
                "$i" "${id[$c]}" "$cv"
            continue
        fi
        got=$(oscost_case "$tmp/o$i.${run[$c]}.json" "${id[$c]}")
        [[ -n "$got" ]] || die "case ${id[$c]} not found in oscost's results"
        ov=${got%%$'\t'*} failed=${got#*$'\t'}
        [[ "$ov" != unavailable ]] || die "oscost could not measure ${id[$c]}: $failed"
        note=""
        if [[ -n "$failed" ]]; then
            # A failed check (e.g. threads_in_process) means the figure is not what it claims.
            note="  oscost check FAILED: $failed"
            notes[$c]+="round $i: $failed; "
        fi
        r=$(awk -v o="$ov" -v c="$cv" 'BEGIN { printf "%.3f", o / c }')
        c_ns[$c]+="$cv "
        o_ns[$c]+="$ov "
        ratios[$c]+="$r "
        printf '  round %d  %-24s C %9.1f  oscost %9.1f  ratio %s%s\n' "$i" "${id[$c]}" "$cv" "$ov" \
            "$r" "$note"
    done
done

echo
printf '%-24s %9s %10s %8s  %s\n' case "C ns" "oscost ns" ratio "per-round ratios"
for c in "${cases[@]}"; do
    if [[ -n "${missing[$c]:-}" ]]; then
        printf '%-24s %9s %10s %8s  %s\n' "${id[$c]}" "" n/a n/a "(DEV: not in this oscost)"
        continue
    fi
    printf '%-24s %9.1f %10.1f %8.3f  %s\n' "${id[$c]}" "$(median_of "${c_ns[$c]}")" \
        "$(median_of "${o_ns[$c]}")" "$(median_of "${ratios[$c]}")" "${ratios[$c]% }"
done
echo
pct=$(awk -v t="$tolerance" 'BEGIN { print t * 100 }')
for c in "${cases[@]}"; do
    if [[ -n "${missing[$c]:-}" ]]; then
        echo "${id[$c]}: no oscost figure (DEV: not in this oscost)"
        continue
    fi
    m=$(median_of "${ratios[$c]}")
    within=$(awk -v m="$m" -v t="$tolerance" 'BEGIN { d = m - 1; if (d < 0) d = -d; print (d <= t ? "yes" : "no") }')
    printf '%s: median ratio %.2f (within ±%g %%: %s)%s\n' "${id[$c]}" "$m" "$pct" "$within" \
        "${notes[$c]:+  [oscost checks failed: ${notes[$c]%; }]}"
done

# ---- section 2 ----

echo
echo "== 2. lseek in a process with one idle extra thread: C reference for the penalty =="
echo "penalty = C with -t (2 threads) - C single-threaded; % of the single-threaded figure"

# The three runs of a round of section 2 (round number in $i).
c_st() { run_c "$tmp/c$i.lseek.st" lseek; }
c_mt() { run_c "$tmp/c$i.lseek.mt" -t lseek; }
o_ls() { run_oscost "$tmp/o$i.lseek.json" syscall --calls lseek; }

st_all="" mt_all="" pen_all="" pct_all="" o_pen_all="" o_st_all=""
for ((i = 1; i <= rounds; i++)); do
    echo "section 2, round $i of $rounds..." >&2
    # The two C sides swap order every round, and oscost goes last, then first.
    if ((i % 2)); then
        c_st; c_mt; o_ls
    else
        o_ls; c_mt; c_st
    fi
    st=$(c_median "$tmp/c$i.lseek.st" lseek)
    mt=$(c_median "$tmp/c$i.lseek.mt" lseek)
    pen=$(awk -v a="$mt" -v b="$st" 'BEGIN { printf "%.3f", a - b }')
    pc=$(awk -v a="$mt" -v b="$st" 'BEGIN { printf "%.2f", (a - b) / b * 100 }')
    st_all+="$st " mt_all+="$mt " pen_all+="$pen " pct_all+="$pc "
    got=$(oscost_case "$tmp/o$i.lseek.json" syscall.lseek)
    ost=${got%%$'\t'*}
    [[ -n "$got" && "$ost" != unavailable ]] || die "syscall.lseek not measured by oscost"
    o_st_all+="$ost "
    d=$(oscost_derived "$tmp/o$i.lseek.json" lseek.mt_penalty)
    if [[ -n "$d" ]]; then
        IFS=$'\t' read -r did dest dlo dhi dflag <<<"$d"
        o_pen_all+="$dest "
        oscost_txt=$(printf 'oscost %s %.1f ns [%.1f, %.1f]%s' "$did" "$dest" "$dlo" "$dhi" \
            "${dflag:+ FLAGGED: $dflag}")
    else
        oscost_txt="oscost: no mt_penalty figure yet"
    fi
    printf '  round %d  C 1 thread %7.1f  C 2 threads %7.1f  penalty %7.1f ns (%6.2f %%)  | %s\n' \
        "$i" "$st" "$mt" "$pen" "$pc" "$oscost_txt"
    printf '           (oscost syscall.lseek, single-threaded: %.1f ns, ratio to C %.3f)\n' "$ost" \
        "$(awk -v o="$ost" -v c="$st" 'BEGIN { print o / c }')"
done

echo
printf 'lseek, C: 1 thread %.1f ns, 2 threads %.1f ns (medians over %d rounds)\n' \
    "$(median_of "$st_all")" "$(median_of "$mt_all")" "$rounds"
printf 'lseek.mt_penalty, C: median %.1f ns (%.2f %%); per round: %s ns\n' \
    "$(median_of "$pen_all")" "$(median_of "$pct_all")" "${pen_all% }"
if [[ -n "$o_pen_all" ]]; then
    printf 'lseek.mt_penalty, oscost: median %.1f ns; per round: %s ns\n' \
        "$(median_of "$o_pen_all")" "${o_pen_all% }"
else
    echo "oscost: no mt_penalty figure yet"
fi
exit 0
