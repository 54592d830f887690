#!/usr/bin/env bash
# What tracing a whole program costs it: the wall time of a command run under each tracer over
# the same command run untraced, for `oscost bill` (timed, its default, --count-only, and
# --trace-with perf, the counter it falls back on where BPF is refused) and
# for the tools one would otherwise reach for (`strace -c -f`, `perf trace -s`, `perf stat` of
# raw_syscalls:sys_enter), and for the floor any BPF counter pays (benches/bpf_floor.c: an
# empty program on sys_enter, and on sys_exit too, a counter per call number for every task,
# one for the command's process only, the same counter on its faults, TLB flushes and switches
# too, and that process's calls timed between entry and exit). The workloads:
# benches/bill_work.c's getppid loop (a syscall-bound worst case) and its mixed mode (reads,
# mmaps and faults), and programs nobody here wrote: gzip -9 of 100 MB of random base64 text
# (CPU-bound, it compresses to about 76 %), find /usr -name '*.h', python3 -c pass (start-up:
# loader, imports), and git status on a large work tree when there is one.
#
# Every run is pinned to one CPU with taskset, tracer and traced alike (a tracer then competes
# with its program for that CPU, as it would on a busy machine). Each workload gets one untimed
# untraced warm-up run (page cache, dentries), then ROUNDS rounds; a round runs every variant
# once, its start rotated each round, and each traced run is divided by the same round's
# untraced run. Per workload the table gives each variant's median wall time, the median of its
# per-round ratios with their lowest and highest, and for oscost the program's own wall time and
# the share of it the bill explains, as oscost reports them, and the median of the program's own
# time over the same round's untraced run ("program ratio": the probe's cost without oscost's
# start-up and teardown).
#
# The wall time is the whole command's, tracer start-up and teardown included, read from bash's
# EPOCHREALTIME around it: a builtin read, no process in the interval. `date +%s%N` would put its
# own fork and exec (about a millisecond here) inside every interval, a tenth of python3's
# start-up; /usr/bin/time's %e has only 10 ms steps.
#
# This is a measurement, not a test: it exits 0 whatever the ratios are, and non-zero only when
# something it needs is missing or a workload fails untraced. A tool that is missing is skipped
# with a line, and so is oscost when the binary is missing or has no `bill`; a tracer that fails
# a run is dropped from that workload with a line. Needs root for oscost's BPF and for perf's
# tracepoints. Run it on an otherwise idle machine, one benchmark at a time.
#
# Usage: [ROUNDS=N] [WORKLOADS="getppid mixed gzip find python git"] [OSCOST_BIN=PATH]
#        [GIT_TREE=DIR] [GZIP_MB=100] [GETPPID_N=2000000] [FIND_DIR=/usr] [TRACERS="..."]
#        scripts/bill-overhead.sh [CPU]
#   CPU        the CPU every run is pinned to (default: the last CPU this shell may use)
#   ROUNDS     rounds per workload (default 5)
#   WORKLOADS  the workloads to run, of those above (default all)
#   OSCOST_BIN the oscost binary (default target/release/oscost; never built here)
#   OSCOST_BASE another oscost binary (an earlier build) run beside it in the same rounds, as
#              oscost-base and oscost-count-base: a change to the probe timed A/B on one machine
#   GIT_TREE   the work tree for git status (default: this repository, when it tracks at least
#              20 000 files; otherwise git is skipped)
#   GZIP_MB, GETPPID_N, FIND_DIR: the sizes of those workloads (smaller ones for a quick check)
#   TRACERS    the traced variants to run, of oscost oscost-count oscost-perf oscost-base
#              oscost-count-base strace perf-trace perf-stat bpf-empty bpf-empty-exit bpf-count
#              bpf-count-pid bpf-count-all bpf-time-pid (default all this machine runs; strace
#              and perf trace take minutes a round on a syscall-bound workload)
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/side-by-side.sh
source scripts/side-by-side.sh
oscost_bin="${OSCOST_BIN:-target/release/oscost}"
base_bin="${OSCOST_BASE:-}"
# The setup's check for cargo is for the scripts that build oscost; this one never does.
OSCOST_BIN="$oscost_bin" side_by_side_setup "${1:-}"
((BASH_VERSINFO[0] >= 5)) || die "needs bash 5 or later (EPOCHREALTIME)"

all_workloads=(getppid mixed gzip find python git)
read -r -a workloads <<<"${WORKLOADS-${all_workloads[*]}}"
((${#workloads[@]} > 0)) || die "WORKLOADS is empty"
for w in "${workloads[@]}"; do
    [[ " ${all_workloads[*]} " == *" $w "* ]] || die "unknown workload '$w' (known: ${all_workloads[*]})"
done
gzip_mb="${GZIP_MB:-100}"
getppid_n="${GETPPID_N:-2000000}"
find_dir="${FIND_DIR:-/usr}"
[[ "$gzip_mb" =~ ^[1-9][0-9]*$ ]] || die "GZIP_MB must be a positive integer, got '$gzip_mb'"
[[ "$getppid_n" =~ ^[1-9][0-9]*$ ]] || die "GETPPID_N must be a positive integer, got '$getppid_n'"
[[ -d "$find_dir" ]] || die "FIND_DIR '$find_dir' is not a directory"

# The bill sits in an oscost/2 document under `bill`: its fields are named here and read only
# through bill_field.
bill_wall_field=bill.wall_ns                # the program's own wall time, as oscost measured it
bill_explained_field=bill.explained_pct     # the share of that wall time the bill explains

# The value at PATH (dot-separated: "a.b") in the JSON FILE, or nothing when it is absent.
# Usage: bill_field FILE PATH
bill_field() {
    if [[ "$json_reader" == jq ]]; then
        jq -r --arg p "$2" 'getpath($p | split(".")) // empty' "$1" 2>/dev/null || true
    else
        python3 - "$1" "$2" <<'PY' 2>/dev/null || true
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
if v is not None:
    print(v)
PY
    fi
}

echo "tracers' cost to a whole program: wall time traced / untraced, CPU $cpu, $rounds rounds"

# The variants this machine can run, untraced first; a missing one is said once.
variants=(untraced)
declare -A label=([untraced]="untraced" [oscost]="oscost bill" [oscost-count]="oscost bill --count-only"
    [oscost-perf]="oscost bill --trace-with perf" [strace]="strace -c -f" [perf-trace]="perf trace -s" [perf-stat]="perf stat raw_syscalls"
    [bpf-empty]="BPF floor: empty program" [bpf-empty-exit]="BPF floor: empty, entry and exit" [bpf-count]="BPF floor: count every task" [bpf-count-pid]="BPF floor: count one process" [bpf-count-all]="BPF floor: count its events"
    [bpf-time-pid]="BPF floor: time one process" [oscost-base]="base: oscost bill"
    [oscost-count-base]="base: bill --count-only")
if [[ ! -x "$oscost_bin" ]]; then
    echo "oscost: $oscost_bin not found or not executable, its variants skipped"
elif ! bill_help=$("$oscost_bin" bill --help 2>&1); then
    echo "oscost: $oscost_bin has no 'bill' subcommand, its variants skipped"
else
    variants+=(oscost)
    if [[ "$bill_help" == *--count-only* ]]; then
        variants+=(oscost-count)
    else
        echo "oscost: 'bill' has no --count-only, that variant skipped"
    fi
    if "$oscost_bin" bill --trace-with perf --quiet --no-save -- true >/dev/null 2>&1; then
        variants+=(oscost-perf)
    else
        echo "oscost: 'bill --trace-with perf' does not run here (needs root), that variant skipped"
    fi
fi
if [[ -n "$base_bin" ]]; then
    [[ -x "$base_bin" ]] && "$base_bin" bill --help 2>&1 | grep -q -- --count-only ||
        die "OSCOST_BASE '$base_bin' is not an oscost binary with 'bill --count-only'"
    variants+=(oscost-base oscost-count-base)
fi
if command -v strace >/dev/null 2>&1; then
    variants+=(strace)
else
    echo "strace: not found (Debian: apt-get install strace), skipped"
fi
if command -v perf >/dev/null 2>&1; then
    perf_setup # only to leave tracefs as it was found: perf mounts one to resolve tracepoints
    if perf trace -s -o /dev/null true >/dev/null 2>&1; then
        variants+=(perf-trace)
    else
        echo "perf trace: does not run here (needs root and tracepoints), skipped"
    fi
    if perf stat -e raw_syscalls:sys_enter -x, -o /dev/null true >/dev/null 2>&1; then
        variants+=(perf-stat)
    else
        echo "perf stat -e raw_syscalls:sys_enter: does not run here, skipped"
    fi
else
    echo "perf: not found (Debian: apt-get install linux-perf), perf trace and perf stat skipped"
fi
# The floors: one BPF program on sys_enter, written apart from oscost (benches/bpf_floor.c).
if cc -O2 -o "$tmp/bpf_floor" benches/bpf_floor.c 2>"$tmp/err" && "$tmp/bpf_floor" empty -- true 2>"$tmp/err"; then
    variants+=(bpf-empty bpf-empty-exit bpf-count bpf-count-pid bpf-count-all bpf-time-pid)
else
    echo "BPF floor: does not run here ($(tail -1 "$tmp/err")), skipped"
fi
if [[ -n "${TRACERS-}" ]]; then
    kept=(untraced)
    for v in $TRACERS; do
        [[ -n "${label[$v]-}" && "$v" != untraced ]] || die "unknown tracer '$v' in TRACERS"
        [[ " ${variants[*]} " == *" $v "* ]] && kept+=("$v")
    done
    variants=("${kept[@]}")
fi

# Sets argv to what goes between taskset and the command for VARIANT, JSON the bill's file.
# Usage: variant_argv VARIANT JSON
variant_argv() {
    case "$1" in
    untraced) argv=() ;;
    oscost) argv=("$oscost_bin" bill --quiet --json "$2" --) ;;
    oscost-count) argv=("$oscost_bin" bill --count-only --quiet --json "$2" --) ;;
    oscost-perf) argv=("$oscost_bin" bill --trace-with perf --quiet --json "$2" --) ;;
    oscost-base) argv=("$base_bin" bill --quiet --json "$2" --) ;;
    oscost-count-base) argv=("$base_bin" bill --count-only --quiet --json "$2" --) ;;
    strace) argv=(strace -c -f -o /dev/null) ;;
    perf-trace) argv=(perf trace -s -o /dev/null) ;;
    perf-stat) argv=(perf stat -e raw_syscalls:sys_enter "-x," -o /dev/null) ;;
    bpf-empty | bpf-empty-exit | bpf-count | bpf-count-pid | bpf-count-all | bpf-time-pid) argv=("$tmp/bpf_floor" "${1#bpf-}" --) ;;
    *) die "unknown variant $1" ;;
    esac
}

# Runs the workload's command (the array cmd) under VARIANT, pinned, its output to /dev/null
# and its errors to $tmp/err; sets us to its wall time in microseconds. Returns its status.
# EPOCHREALTIME is read in place ("s.µs" less its point): through $(...) the subshell's fork
# and exit would fall inside the interval.
# Usage: timed VARIANT JSON
timed() {
    local t0 t1 status=0
    variant_argv "$1" "$2"
    rm -f "$2"
    t0=${EPOCHREALTIME//[!0-9]/}
    taskset -c "$cpu" ${argv[@]+"${argv[@]}"} "${cmd[@]}" >/dev/null 2>"$tmp/err" || status=$?
    t1=${EPOCHREALTIME//[!0-9]/}
    us=$((t1 - t0))
    return "$status"
}

# Sets cmd (and what) for WORKLOAD, making what it needs; returns 1 (after a line) to skip it.
# Usage: workload_cmd WORKLOAD
workload_cmd() {
    case "$1" in
    getppid)
        cmd=("$tmp/bill_work" getppid "$getppid_n") what="bill_work getppid $getppid_n" ;;
    mixed)
        cmd=("$tmp/bill_work" mixed) what="bill_work mixed" ;;
    gzip)
        command -v gzip >/dev/null 2>&1 || { echo "gzip: not found, skipped"; return 1; }
        if [[ ! -f "$tmp/gzip.in" ]]; then
            echo "making $gzip_mb MB of random base64 text for gzip..." >&2
            # 57 random bytes make each 76-character line (77 bytes with its newline).
            head -c $((gzip_mb * 1000000 * 57 / 77)) /dev/urandom | base64 -w 76 >"$tmp/gzip.in"
        fi
        cmd=(gzip -9 -c "$tmp/gzip.in") what="gzip -9 -c ($gzip_mb MB of base64 text) >/dev/null" ;;
    find)
        cmd=(find "$find_dir" -name '*.h') what="find $find_dir -name '*.h' >/dev/null" ;;
    python)
        command -v python3 >/dev/null 2>&1 || { echo "python: python3 not found, skipped"; return 1; }
        # The interpreter itself: python3 on PATH may be a shim (pyenv's is a shell script
        # that runs several processes before Python starts).
        local py
        py=$(python3 -c 'import sys; print(sys.executable)') || die "python3 cannot say where it is"
        cmd=("$py" -c pass) what="$py -c pass" ;;
    git)
        command -v git >/dev/null 2>&1 || { echo "git: not found, skipped"; return 1; }
        local tree="${GIT_TREE:-$PWD}" files
        git -C "$tree" rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
            die "GIT_TREE '$tree' is not a git work tree"
        files=$(git -C "$tree" ls-files | wc -l)
        if [[ -z "${GIT_TREE:-}" ]] && ((files < 20000)); then
            echo "git: no large work tree (this repository tracks $files files; set GIT_TREE=DIR), skipped"
            return 1
        fi
        # --no-optional-locks: status would otherwise refresh and rewrite the tree's index.
        cmd=(git -C "$tree" --no-optional-locks status) what="git status in $tree ($files files)" ;;
    esac
}

if [[ " ${workloads[*]} " == *" getppid "* || " ${workloads[*]} " == *" mixed "* ]]; then
    cc -O2 -pthread -o "$tmp/bill_work" benches/bill_work.c || die "cc failed on benches/bill_work.c"
fi

echo "variants: ${variants[*]}"

# Median and lowest-highest of the numbers in $1, formatted with FORMAT ($2).
# Usage: spread NUMBERS FORMAT
spread() {
    local lo hi
    lo=$(tr ' ' '\n' <<<"$1" | awk 'NF' | sort -g | head -1)
    hi=$(tr ' ' '\n' <<<"$1" | awk 'NF' | sort -g | tail -1)
    # shellcheck disable=SC2059  # the format is the caller's
    printf "$2 $2-$2" "$(median_of "$1")" "$lo" "$hi"
}

for w in "${workloads[@]}"; do
    echo
    workload_cmd "$w" || continue
    echo "== $w: $what"
    timed untraced "$tmp/warm.json" || die "$w failed untraced (exit $?): $(tail -1 "$tmp/err")"
    active=("${variants[@]}")
    declare -A ms=() ratios=() own_ms=() explained=() own_ratios=()
    for ((r = 1; r <= rounds; r++)); do
        echo "$w: round $r of $rounds..." >&2
        declare -A round_us=() round_own=()
        n=${#active[@]}
        for ((k = 0; k < n; k++)); do
            v=${active[$(((k + r - 1) % n))]}
            json="$tmp/bill.$w.$v.$r.json"
            status=0
            timed "$v" "$json" || status=$?
            if ((status != 0)); then
                [[ "$v" != untraced ]] || die "$w failed untraced in round $r (exit $status): $(tail -1 "$tmp/err")"
                echo "  round $r: ${label[$v]} failed (exit $status: $(tail -1 "$tmp/err")), dropped for $w"
                continue
            fi
            round_us[$v]=$us
            if [[ "$v" == oscost* && -f "$json" ]]; then
                wall_ns=$(bill_field "$json" "$bill_wall_field")
                pct=$(bill_field "$json" "$bill_explained_field")
                [[ -z "$wall_ns" ]] || own_ms[$v]+="$(awk -v n="$wall_ns" 'BEGIN { printf "%.3f", n / 1e6 }') "
                [[ -z "$wall_ns" ]] || round_own[$v]=$wall_ns
                [[ -z "$pct" ]] || explained[$v]+="$pct "
            fi
        done
        line="  round $r:"
        for v in "${active[@]}"; do
            [[ -n "${round_us[$v]+x}" ]] || continue
            ms[$v]+="$(awk -v u="${round_us[$v]}" 'BEGIN { printf "%.3f", u / 1e3 }') "
            ratio=$(awk -v t="${round_us[$v]}" -v u="${round_us[untraced]}" 'BEGIN { printf "%.3f", t / (u > 0 ? u : 1) }')
            ratios[$v]+="$ratio "
            [[ -z "${round_own[$v]+x}" ]] ||
                own_ratios[$v]+="$(awk -v n="${round_own[$v]}" -v u="${round_us[untraced]}" 'BEGIN { printf "%.3f", n / 1e3 / (u > 0 ? u : 1) }') "
            line+=" ${label[$v]} $(awk -v u="${round_us[$v]}" 'BEGIN { printf "%.1f", u / 1e3 }') ms ($ratio),"
        done
        echo "${line%,}"
        # Drop the variants that failed this round from the rest of the workload.
        kept=()
        for v in "${active[@]}"; do [[ -z "${round_us[$v]+x}" ]] || kept+=("$v"); done
        active=("${kept[@]}")
        unset round_us round_own
    done
    printf "%-26s %10s %8s %17s %11s %11s %14s\n" variant "wall ms" ratio "ratio min-max" "program ms" \
        "explained %" "program ratio"
    missing=""
    for v in "${variants[@]}"; do
        if [[ -z "${ms[$v]:-}" ]]; then
            printf "%-26s %s\n" "${label[$v]}" "(no successful run)"
            continue
        fi
        read -r r_med r_range <<<"$(spread "${ratios[$v]}" "%.3f")"
        prog="-" expl="-" pratio="-"
        if [[ "$v" == oscost* ]]; then
            [[ -z "${own_ms[$v]:-}" ]] || prog=$(printf "%.1f" "$(median_of "${own_ms[$v]}")")
            [[ -z "${explained[$v]:-}" ]] || expl=$(printf "%.1f" "$(median_of "${explained[$v]}")")
            [[ -z "${own_ratios[$v]:-}" ]] || pratio=$(printf "%.3f" "$(median_of "${own_ratios[$v]}")")
            [[ -n "${own_ms[$v]:-}" ]] || missing+=" $v:$bill_wall_field"
            [[ -n "${explained[$v]:-}" ]] || missing+=" $v:$bill_explained_field"
        fi
        printf "%-26s %10.1f %8s %17s %11s %11s %14s\n" "${label[$v]}" "$(median_of "${ms[$v]}")" \
            "$r_med" "$r_range" "$prog" "$expl" "$pratio"
    done
    [[ -z "$missing" ]] || echo "(not in the bill's JSON, or no JSON written:$missing)"
    unset ms ratios own_ms explained own_ratios
done
exit 0
