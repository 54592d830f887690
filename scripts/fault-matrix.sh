#!/usr/bin/env bash
# The messages the cases expect quote names in backticks, literally: single quotes are meant.
# shellcheck disable=SC2016
# Fault matrix: runs oscost the way a careless or hostile user would, one case at a time, and
# checks what each case must do.
#
# Every case gets a private TMPDIR and a private working directory (both removed afterwards),
# and every oscost invocation is bounded by `timeout`. Besides its own expectation, each case
# must show:
#   - no panic: no exit 101, no "panicked" or "RUST_BACKTRACE" on stderr;
#   - no hang: no invocation reaches the time limit;
#   - no leftover process: no oscost process of the case (found by a marker in
#     /proc/PID/environ, and oscost zombies that appeared during the case) once it has ended;
#   - no leftover SysV semaphore set (the ids in /proc/sysvipc/sem before and after), no
#     oscost-* directory in the case's TMPDIR, no stray temporary file in its working directory.
# Bad input must exit 2 with exactly one line on stderr starting `oscost: `, print nothing on
# stdout (nothing was measured), and leave the working directory exactly as it was (names,
# types, modes, owners, contents).
#
# Output: one row per case (PASS or FAIL, the case, what was observed), then
# `fault matrix: N cases, P passed, F failed`. Exit status: 0 all passed, 1 a case failed,
# 2 the matrix could not be set up. Run it alone on the machine: another oscost run or a SysV
# semaphore set created meanwhile by someone else can show up as a leftover. Started as root,
# a few cases run as nobody (uid 65534) through setpriv. Installs nothing; takes about 4
# minutes on two CPUs (its FUSE, kill and setting cases wait for what they provoke, and a
# silent history server for oscost's 30 s timeout).
#
# Usage: scripts/fault-matrix.sh [PATTERN]
#   PATTERN   run only the cases whose name matches this glob (default: all)
#   OSCOST=F  test the binary F instead of building target/release/oscost
#   LIMIT=S   seconds allowed for one oscost invocation before it counts as a hang (default 60)
set -uo pipefail
shopt -s nullglob

cd "$(dirname "$0")/.." || exit 2
repo=$PWD

die() {
    echo "fault-matrix: $*" >&2
    exit 2
}

pattern="${1:-*}"
limit="${LIMIT:-60}"
[[ "$limit" =~ ^[1-9][0-9]*$ ]] || die "LIMIT must be a whole number of seconds, got '$limit'"
((BASH_VERSINFO[0] >= 5)) || die "needs bash 5 or later (EPOCHREALTIME)"
for tool in timeout mktemp pgrep python3 sha256sum mkfifo find stat cmp comm realpath; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is required but not found"
done
[[ -r /proc/sysvipc/sem ]] || die "cannot read /proc/sysvipc/sem"
online=$(cat /sys/devices/system/cpu/online 2>/dev/null) || die "cannot read the online CPUs"

if [[ -n "${OSCOST:-}" ]]; then
    bin="$OSCOST"
else
    echo "building oscost (release)..." >&2
    cargo build --release -q || die "cargo build --release failed"
    bin=target/release/oscost
fi
[[ -x "$bin" ]] || die "$bin is not an executable"
bin=$(realpath "$bin") || die "cannot resolve $bin"
comm_name=$(basename "$bin" | cut -c1-15) # the kernel's comm: the first 15 bytes of the name

# A CPU that is not online: 99, unless this machine has it.
cpu_online() {
    local part lo hi
    local -a parts
    IFS=, read -ra parts <<<"$online"
    for part in "${parts[@]}"; do
        lo=${part%-*} hi=${part#*-}
        (($1 >= lo && $1 <= hi)) && return 0
    done
    return 1
}
offline_cpu=99
cpu_online 99 && offline_cpu=$((${online##*[,-]} + 1))

# Who runs the "unprivileged user" cases: nobody when we are root, else ourselves.
nobody=()
nobody_na=""
if ((EUID == 0)); then
    if ! command -v setpriv >/dev/null 2>&1; then
        nobody_na="setpriv (util-linux) is missing, so root cannot run a case as nobody"
    else
        nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
        "${nobody[@]}" test -x "$bin" ||
            nobody_na="nobody (uid 65534) cannot execute $bin"
    fi
fi
# Whether this (non-root) user may lower its nice value anyway (CAP_SYS_NICE, bit 23).
sys_nice=0
if ((EUID != 0)); then
    capeff=$(awk '/^CapEff:/ { print $2 }' /proc/self/status)
    (((16#${capeff:-0} >> 23) & 1)) && sys_nice=1
fi

root=$(mktemp -d "${TMPDIR:-/tmp}/fault-matrix.XXXXXX") || die "mktemp failed"
chmod 0711 "$root" # nobody may reach the case directories it is given, nothing else
# Its runs are saved in a history of its own, gone with it, never the user's.
export XDG_DATA_HOME="$root/data"
# The round-robin slice, which some cases change through oscost: put back whatever happens.
rr=/proc/sys/kernel/sched_rr_timeslice_ms
rr_before=$(cat "$rr" 2>/dev/null)
cleanup() {
    if [[ -n "$rr_before" && "$(cat "$rr" 2>/dev/null)" != "$rr_before" ]]; then
        echo "fault-matrix: $rr was left at $(cat "$rr"); putting back $rr_before" >&2
        echo "$rr_before" >"$rr"
    fi
    chmod -R u+rwX "$root" 2>/dev/null
    rm -rf "$root"
}
trap cleanup EXIT
trap 'exit 2' INT TERM HUP

# ---------------------------------------------------------------------------------------------
# Helpers. A case runs in a subshell in its working directory, with TMPDIR and the marker
# exported; it reports through files in $io: `problem` (the case fails), `note` (observed).

now_us() { echo "${EPOCHREALTIME//[!0-9]/}"; }

problem() { printf '%s\n' "$*" >>"$io/problems"; }
note() { printf '%s\n' "$*" >>"$io/notes"; }

# Printable text: control characters become `?`; bytes that are not UTF-8 are dropped.
printable() {
    if command -v iconv >/dev/null 2>&1; then
        LC_ALL=C tr '\000-\010\013-\037\177' '?' | iconv -f UTF-8 -t UTF-8 -c 2>/dev/null
    else
        LC_ALL=C tr '\000-\010\013-\037\177-\377' '?'
    fi
}

# The first line of a file, printable and at most 150 characters.
first_line() { head -n 1 "$1" 2>/dev/null | cut -c 1-150 | tr -d '\n' | printable; }
# The lines of a file joined with "; ", printable.
joined() { awk 'NR > 1 { printf "; " } { printf "%s", $0 }' "$1" | printable; }
lines_of() { grep -c '' "$1" 2>/dev/null; }

sem_ids() { awk 'NR > 1 { print $2 }' /proc/sysvipc/sem | LC_ALL=C sort; }
# SysV sets that did not exist when the case began.
new_sems() { LC_ALL=C comm -13 <(printf '%s\n' "$sems_before") <(sem_ids); }

# oscost processes carrying this case's marker.
case_pids() {
    local p
    for p in $(pgrep -x "$comm_name"); do
        grep -qzxF "FAULT_MATRIX_CASE=$mark" "/proc/$p/environ" 2>/dev/null && echo "$p"
    done
}
# oscost zombies that appeared during the case (a zombie's environment cannot be read).
new_zombies() {
    local p
    for p in $(pgrep -x "$comm_name"); do
        [[ " $procs_before " == *" $p "* ]] && continue
        [[ "$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)" == Z ]] && echo "$p"
    done
}
no_case_pids() { [[ -z "$(case_pids)" ]]; }
gone() { ! kill -0 "$1" 2>/dev/null; }
has_new_sem() { [[ -n "$(new_sems)" ]]; }

# wait_for SECONDS CMD...: polls CMD every 50 ms; fails if it never succeeds in time.
wait_for() {
    local end=$(($(now_us) + $1 * 1000000))
    shift
    until "$@"; do
        (($(now_us) >= end)) && return 1
        sleep 0.05
    done
}

# vet RC STDERR-FILE START-US [LABEL]: the checks every invocation gets.
vet() {
    local label="${4:+$4: }"
    (($(now_us) - $3 >= (limit - 1) * 1000000)) && problem "${label}hang: still running after ${limit} s"
    [[ "$1" == 101 ]] && problem "${label}panic: exit 101"
    if grep -qE 'panicked|RUST_BACKTRACE' "$2" 2>/dev/null; then
        problem "${label}panic: $(grep -m 1 -E 'panicked|RUST_BACKTRACE' "$2" | cut -c 1-150 | printable)"
    fi
}

# run_bounded OUT ERR CMD...: runs CMD under timeout, stdin from /dev/null; sets rc.
run_bounded() {
    local out="$1" err="$2" t0
    shift 2
    t0=$(now_us)
    timeout -k 5 "$limit" "$@" </dev/null >"$out" 2>"$err"
    rc=$?
    vet "$rc" "$err" "$t0"
}

# osc ARGS...: oscost (through ${runner[@]}, if set) with stdout and stderr in $io/out, $io/err.
runner=()
osc() { run_bounded "$io/out" "$io/err" "${runner[@]}" "$bin" "$@"; }

# spawn TAG CMD...: starts CMD in the background under timeout; sets opid to CMD's pid (oscost's
# own pid when CMD is oscost), output in $io/TAG.out and $io/TAG.err. collect TAG waits for it.
declare -A bg_pid bg_t0
spawn() {
    local tag="$1"
    shift
    rm -f "$io/$tag.pid"
    bg_t0[$tag]=$(now_us)
    # shellcheck disable=SC2016 # $$ and $0 belong to the inner shell
    timeout -k 5 "$limit" bash -c 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' \
        "$io/$tag.pid" "$@" </dev/null >"$io/$tag.out" 2>"$io/$tag.err" &
    bg_pid[$tag]=$!
    opid=""
    wait_for 5 test -s "$io/$tag.pid" && opid=$(<"$io/$tag.pid")
    [[ -n "$opid" ]] || problem "$tag: no pid within 5 s"
}
collect() {
    wait "${bg_pid[$1]}"
    rc=$?
    vet "$rc" "$io/$1.err" "${bg_t0[$1]}" "$1"
}

# The measuring process (`oscost __measure`) of the oscost process $1, and its workers.
measuring_of() {
    local p
    for p in $(pgrep -x "$comm_name" -P "$1"); do
        grep -qa '__measure' "/proc/$p/cmdline" 2>/dev/null && echo "$p" && return 0
    done
    return 1
}
workers_of() { pgrep -x "$comm_name" -P "$1"; }
# At least $2 workers under oscost process $1 (a ring of 2N tasks has 2N-1 forked workers).
has_workers() {
    local m
    m=$(measuring_of "$1") || return 1
    (($(workers_of "$m" | wc -l) >= $2))
}

expect_rc() { [[ "$rc" == "$1" ]] || problem "exit $rc, expected $1"; }

# One line on stderr, starting `oscost: `.
expect_one_line() {
    local err="$io/err" n
    n=$(lines_of "$err")
    [[ "$n" == 1 ]] || problem "stderr has $n lines, expected 1: $(printable <"$err" | head -c 200)"
    head -n 1 "$err" | grep -q '^oscost: ' || problem "stderr does not start with 'oscost: '"
}

expect_err() { grep -qE "$1" "$io/err" || problem "stderr does not match /$1/"; }

# Names, types, modes, owners, link targets and contents of everything in the working dir.
snapshot() {
    find . -printf '%p|%y|%m|%U|%s|%l\n' | LC_ALL=C sort
    find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum
}

# Bad input: exit 2, one line, nothing on stdout, the working directory untouched.
expect_refused() { # [ERE the message must match]
    expect_rc 2
    expect_one_line
    [[ -s "$io/out" ]] && problem "printed on stdout before refusing: $(first_line "$io/out")"
    if [[ "$(snapshot)" != "$snap_before" ]]; then
        problem "working directory changed: $(diff <(echo "$snap_before") <(snapshot) |
            sed -n 's/^[<>] \(\.[^|]*\)|.*/\1/p; s/^[<>] [0-9a-f]\{64\}  //p' |
            LC_ALL=C sort -u | head -n 5 | printable | tr '\n' ' ')"
    fi
    [[ -n "${1:-}" ]] && expect_err "$1"
    note "exit $rc: $(first_line "$io/err")"
}

# json FILE ACTION: `names` prints the experiments' names (comma-separated), `case-warnings`
# every case's warnings, `case-messages` its warnings and notes, `valid` nothing; fails if FILE is not a JSON document.
json() {
    python3 - "$@" 2>/dev/null <<'EOF'
import json, sys
path, action = sys.argv[1], sys.argv[2]
with open(path, "rb") as f:
    doc = json.load(f)
if action == "names":
    print(",".join(e["name"] for e in doc["experiments"]))
elif action in ("case-warnings", "case-messages"):
    kinds = ["warnings"] + (["notes"] if action == "case-messages" else [])
    for e in doc["experiments"]:
        for c in e["cases"]:
            for k in kinds:
                for w in c.get(k) or []:
                    print(c["id"] + ": " + w)
EOF
}
expect_json() { # FILE NAMES
    local got
    if ! got=$(json "$1" names); then
        problem "$(printf '%q' "$1") is not a result document"
    elif [[ "$got" != "$2" ]]; then
        problem "$(printf '%q' "$1") holds [$got], expected [$2]"
    fi
}

# Files in the working directory other than those given, as a printable list.
extra_files() {
    local f keep
    for f in * .[!.]*; do
        for keep in "$@"; do [[ "$f" == "$keep" ]] && continue 2; done
        printf '%q ' "$f"
    done
}

# ---------------------------------------------------------------------------------------------
# The runner.

n_cases=0
n_passed=0
n_failed=0

# run_case NAME FUNCTION [ARGS...]
run_case() {
    local name="$1" fn="$2" cdir left_p left_s left_d end p row
    shift 2
    # shellcheck disable=SC2053 # a glob on purpose
    [[ "$name" == $pattern ]] || return 0
    cdir=$(mktemp -d "$root/case.XXXXXX") || die "mktemp failed"
    chmod 0711 "$cdir"
    ctmp="$cdir/tmp" work="$cdir/work" io="$cdir/io" mark="$cdir"
    mkdir "$ctmp" "$work" "$io" || die "cannot create the case directories in $cdir"
    chmod 0711 "$io"
    : >"$io/problems"
    : >"$io/notes"
    sems_before=$(sem_ids)
    procs_before=$(pgrep -x "$comm_name" | tr '\n' ' ')

    (
        cd "$work" || exit
        export TMPDIR="$ctmp" FAULT_MATRIX_CASE="$mark"
        umask 022
        "$fn" "$@"
    ) >"$io/case.log" 2>&1

    # What the case left behind, once helpers that exit on their own have had 3 s to do so.
    end=$(($(now_us) + 3000000))
    while :; do
        left_p=$(
            case_pids
            new_zombies
        )
        left_s=$(new_sems)
        [[ -z "$left_p$left_s" ]] && break
        (($(now_us) >= end)) && break
        sleep 0.1
    done
    if [[ -n "$left_p" ]]; then
        row=""
        for p in $left_p; do
            row+="$p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c 1-60); "
        done
        problem "left processes running: ${row%; }"
        for p in $(case_pids); do kill -KILL "$p" 2>/dev/null; done
    fi
    [[ -n "$left_s" ]] && problem "left SysV semaphore sets: $(echo "$left_s" | tr '\n' ' ')(ipcrm -s ID)"
    left_d=("$ctmp"/oscost-*)
    ((${#left_d[@]})) && problem "left in TMPDIR: ${left_d[*]##*/}"
    left_d=()
    while IFS= read -r -d '' p; do left_d+=("${p##*/}"); done < <(find "$work" -name '.tmp*' -print0)
    ((${#left_d[@]})) && problem "left temporary files in the working directory: ${left_d[*]}"

    n_cases=$((n_cases + 1))
    if [[ -s "$io/problems" ]]; then
        n_failed=$((n_failed + 1))
        row="FAIL"
        p="$(joined "$io/problems") | observed: $(joined "$io/notes")"
    else
        n_passed=$((n_passed + 1))
        row="PASS"
        p=$(joined "$io/notes")
    fi
    printf '%-4s  %-30s  %s\n' "$row" "$name" "$p"
    chmod -R u+rwX "$cdir" 2>/dev/null
    rm -rf "$cdir"
}

# ---------------------------------------------------------------------------------------------
# Cases.

quick_sys=(syscall --quick --samples 5 --calls getpid)

# Bad input in a working directory holding keep.csv (which most cases also name as an output).
refused() { # ERE ARGS...
    local re="$1"
    shift
    printf 'precious\n' >keep.csv
    snap_before=$(snapshot)
    osc "$@"
    expect_refused "$re"
}

# The same, run as an unprivileged user (nobody when we are root).
refused_unprivileged() { # ERE ARGS...
    if [[ -n "$nobody_na" ]]; then
        note "not applicable: $nobody_na"
        return
    fi
    runner=("${nobody[@]}")
    ((EUID == 0)) && chown 65534:65534 "$work" "$ctmp"
    refused "$@"
    if ((EUID == 0)); then note "as nobody"; else note "as $(id -un)"; fi
}

c_nice_unprivileged() {
    if ((sys_nice)); then
        note "not applicable: this user has CAP_SYS_NICE, so a negative nice is allowed"
        return
    fi
    refused_unprivileged 'root|CAP_SYS_NICE' --nice -5 "${quick_sys[@]}" --json r.json
}

c_list_with_file() { # the file named x exists and must stay as it is
    printf 'mine\n' >x
    refused "$@"
}

c_same_via_symlink() {
    printf 'old\n' >a.json
    ln -s a.json b.csv
    refused 'both write' "${quick_sys[@]}" --json a.json --csv b.csv
}

c_output_under_file() {
    printf 'a file\n' >file
    refused 'Not a directory' --scripted example --json file/r.json
}

c_read_only() {
    printf 'precious result\n' >r.json
    chmod 0444 r.json
    refused 'read-only' "${quick_sys[@]}" --json r.json
}

c_output_in_0555_dir() {
    mkdir ro
    chmod 0555 ro
    refused_unprivileged 'not writable' "${quick_sys[@]}" --json ro/r.json
}

c_nofile_limit() {
    if command -v prlimit >/dev/null 2>&1; then
        runner=(prlimit --nofile=60:60)
    else
        runner=(bash -c 'ulimit -n 60 && exec "$@"' limit)
    fi
    refused 'RLIMIT_NOFILE' run syscall ring --json r.json
}

c_tmpdir() { # TMPDIR-VALUE
    local value="$1"
    [[ "$value" == FILE ]] && printf 'not a directory\n' >"$ctmp/file" && value="$ctmp/file"
    runner=(env "TMPDIR=$value")
    refused 'TMPDIR' --scripted example --json r.json
}

c_tmpdir_0555() {
    chmod 0555 "$ctmp"
    if [[ -n "$nobody_na" && "$EUID" == 0 ]]; then
        note "not applicable: $nobody_na"
        return
    fi
    if ((EUID == 0)); then
        runner=("${nobody[@]}")
        chown 65534:65534 "$work"
    fi
    printf 'precious\n' >keep.csv
    snap_before=$(snapshot)
    osc "${quick_sys[@]}" --json r.json
    expect_refused 'TMPDIR'
}

# A non-UTF-8 output name: written under exactly that name, or refused cleanly.
c_non_utf8() { # NAME EXPECTED-NAMES ARGS...
    local file="$1" want="$2"
    shift 2
    snap_before=$(snapshot)
    osc "$@" --json "$file"
    if [[ "$rc" == 0 ]]; then
        if [[ "$want" == env ]]; then
            json "$file" valid || problem "$(printf '%q' "$file") is not a JSON document"
        else
            expect_json "$file" "$want"
        fi
        [[ -z "$(extra_files "$file")" ]] || problem "other files written: $(extra_files "$file")"
        note "exit 0, wrote $(printf '%q' "$file")"
    elif [[ "$rc" == 2 ]]; then
        expect_one_line
        [[ "$(snapshot)" == "$snap_before" ]] || problem "refused but wrote: $(extra_files)"
        note "refused: $(first_line "$io/err")"
    else
        problem "exit $rc: $(first_line "$io/err")"
    fi
}

c_non_utf8_csv_markdown() {
    osc --scripted -q example --csv $'\xfe.csv' --markdown $'m\xe9.md'
    expect_rc 0
    [[ -s $'\xfe.csv' && -s $'m\xe9.md' ]] || problem "files missing: have $(extra_files)"
    [[ -z "$(extra_files $'\xfe.csv' $'m\xe9.md')" ]] || problem "other files: $(extra_files $'\xfe.csv' $'m\xe9.md')"
    note "exit $rc, wrote $(extra_files)"
}

c_symlink() {
    printf '{}\n' >target.json
    ln -s target.json link.json
    osc --scripted -q example --json link.json
    expect_rc 0
    [[ -L link.json && "$(readlink link.json)" == target.json ]] || problem "link.json is no longer a link to target.json"
    expect_json target.json example
    note "exit $rc, link.json -> $(readlink link.json), target.json holds [$(json target.json names)]"
}

c_dangling_symlink() {
    ln -s made.json link.json
    osc --scripted -q example --json link.json
    expect_rc 0
    [[ -L link.json ]] || problem "link.json is no longer a link"
    expect_json made.json example
    note "exit $rc, link.json -> $(readlink link.json), made.json holds [$(json made.json names 2>/dev/null)]"
}

c_dev_stdout() {
    local before after
    before=$(readlink /dev/stdout)
    run_bounded out.txt "$io/err" "$bin" --scripted example --json /dev/stdout
    after=$(readlink /dev/stdout)
    expect_rc 0
    expect_json out.txt example
    grep -q 'example.cost100' "$io/err" || problem "the tables did not go to stderr"
    [[ -L /dev/stdout && "$after" == "$before" ]] || problem "/dev/stdout changed: now $(ls -ld /dev/stdout)"
    [[ -z "$(find /dev -maxdepth 1 -name '.tmp*' -newer "$io/problems")" ]] || problem "temporary file left in /dev"
    note "exit $rc, out.txt holds [$(json out.txt names)], /dev/stdout -> $after"
}

c_json_dash() {
    osc --scripted example --json -
    expect_rc 0
    expect_json "$io/out" example
    grep -q 'example.cost100' "$io/err" || problem "the tables did not go to stderr"
    note "exit $rc, stdout is a document with [$(json "$io/out" names)], tables on stderr"
}

c_mode_kept() { # MODE
    printf 'old\n' >r.json
    chmod "$1" r.json
    osc --scripted -q example --json r.json
    expect_rc 0
    expect_json r.json example
    [[ "$(stat -c %a r.json)" == "${1#0}" ]] || problem "mode now $(stat -c %a r.json), was $1"
    note "exit $rc, r.json mode $(stat -c %a r.json)"
}

c_owner_kept() {
    if ((EUID != 0)); then
        note "not applicable: only root can replace another user's file and keep its owner"
        return
    fi
    printf 'old\n' >r.json
    chown 65534:65534 r.json
    osc --scripted -q example --json r.json
    expect_rc 0
    expect_json r.json example
    [[ "$(stat -c %u:%g r.json)" == 65534:65534 ]] || problem "owner now $(stat -c %u:%g r.json), was 65534:65534"
    note "exit $rc, r.json owner $(stat -c %u:%g r.json)"
}

c_umask() { # UMASK EXPECTED-MODE
    umask "$1"
    osc --scripted -q example --json new.json
    expect_rc 0
    expect_json new.json example
    [[ "$(stat -c %a new.json)" == "$2" ]] || problem "mode $(stat -c %a new.json), expected $2"
    note "exit $rc, umask $1: new.json mode $(stat -c %a new.json)"
}

c_fifo() {
    local reader rrc
    osc --scripted -q run example example-more --markdown "$io/ref.md"
    [[ "$rc" == 0 ]] || problem "reference run failed: exit $rc"
    mkfifo pipe.md
    timeout "$limit" cat pipe.md >"$io/got.md" &
    reader=$!
    osc --scripted -q run example example-more --markdown pipe.md
    expect_rc 0
    if wait_for 3 gone "$reader"; then
        wait "$reader"
        rrc=$?
        [[ "$rrc" == 0 ]] || problem "reader ended with $rrc"
    else
        problem "the reader never saw the end of the document"
        kill "$reader" 2>/dev/null
        wait "$reader"
    fi
    cmp -s "$io/got.md" "$io/ref.md" || problem "reader got $(wc -c <"$io/got.md") bytes, not the $(wc -c <"$io/ref.md")-byte document"
    [[ -p pipe.md ]] || problem "pipe.md is no longer a FIFO"
    note "exit $rc, reader got $(wc -c <"$io/got.md") bytes, the same as a file gets"
}

c_dev_null() {
    local before
    before=$(stat -c '%F %t:%T' /dev/null)
    osc --scripted -q example --json /dev/null
    expect_rc 0
    [[ "$(stat -c '%F %t:%T' /dev/null)" == "$before" ]] || problem "/dev/null is now $(stat -c '%F %t:%T' /dev/null)"
    note "exit $rc, /dev/null still $(stat -c '%F' /dev/null)"
}

c_dev_full() {
    osc --scripted -q example --json /dev/full
    expect_rc 2
    expect_one_line
    expect_err '/dev/full'
    note "exit $rc: $(first_line "$io/err")"
}

c_stdout_full() {
    run_bounded /dev/full "$io/err" "$bin" --scripted -q example --json r.json
    expect_rc 2
    expect_one_line
    note "exit $rc: $(first_line "$io/err")"
}

c_stdout_closed() {
    local t0
    t0=$(now_us)
    timeout -k 5 "$limit" "$bin" --scripted -q example --json r.json </dev/null >&- 2>"$io/err"
    rc=$?
    vet "$rc" "$io/err" "$t0"
    case "$rc" in
        0) ;;
        2) expect_one_line ;;
        *) problem "exit $rc" ;;
    esac
    expect_json r.json example
    note "exit $rc, r.json holds [$(json r.json names)]$([[ -s "$io/err" ]] && echo ": $(first_line "$io/err")")"
}

c_rate_1e9() {
    osc "${quick_sys[@]}" --rate 1e9 -q --json r.json
    expect_rc 0
    expect_json r.json syscall
    json r.json case-messages | grep -q 'cannot run 1000000000 times a second' ||
        problem "no case says that it cannot run 1e9 times a second"
    note "exit $rc; $(json r.json case-messages | grep -m 1 'cannot run' | cut -c 1-110)"
}

c_failed_after_good() {
    osc --scripted -q run example example-fails --json r.json
    expect_rc 2
    expect_one_line
    expect_json r.json example
    expect_err 'r\.json'
    note "exit $rc, r.json holds [$(json r.json names)]: $(first_line "$io/err" | cut -c 1-90)"
}

c_reader_gone() {
    local t0
    t0=$(now_us)
    timeout -k 5 "$limit" "$bin" --quick 2>"$io/err" </dev/null | head -n 1 >"$io/out"
    rc=${PIPESTATUS[0]}
    vet "$rc" "$io/err" "$t0"
    [[ "$rc" == 0 || "$rc" == 2 || "$rc" == 141 ]] || problem "exit $rc"
    [[ "$rc" == 2 ]] && expect_one_line
    note "exit $rc after $((($(now_us) - t0) / 1000)) ms, head got '$(first_line "$io/out")'"
}

c_json_reader_gone() {
    local t0
    t0=$(now_us)
    timeout -k 5 "$limit" "$bin" "${quick_sys[@]}" -q --json - 2>"$io/err" </dev/null | true
    rc=${PIPESTATUS[0]}
    vet "$rc" "$io/err" "$t0"
    [[ "$rc" == 0 || "$rc" == 2 || "$rc" == 141 ]] || problem "exit $rc"
    [[ "$rc" == 2 ]] && expect_one_line
    note "exit $rc$([[ -s "$io/err" ]] && echo ": $(first_line "$io/err")")"
}

c_two_at_once() {
    local a b
    spawn a "$bin" ring --quick -q --json a.json
    a=$opid
    spawn b "$bin" ring --quick -q --json b.json
    b=$opid
    collect a
    [[ "$rc" == 0 ]] || problem "first run: exit $rc: $(first_line "$io/a.err")"
    collect b
    [[ "$rc" == 0 ]] || problem "second run: exit $rc: $(first_line "$io/b.err")"
    expect_json a.json ring
    expect_json b.json ring
    grep -qF "another oscost (pid $b)" a.json || problem "a.json does not warn about the other run (pid $b)"
    grep -qF "another oscost (pid $a)" b.json || problem "b.json does not warn about the other run (pid $a)"
    note "both exit 0; a.json names pid $b, b.json names pid $a"
}

# Interrupting a sweep of ring sizes once a ring of 32 processes or more is running.
ring_sweep=(ring --kind processes --tasks 2..1024 --samples 5 --json r.json)
c_signal() { # SIGNAL [twice|measuring]
    local sig="$1" target
    spawn main "$bin" "${ring_sweep[@]}"
    wait_for 20 has_workers "$opid" 31 || note "no ring of 32 seen in 20 s"
    target=$opid
    if [[ "${2:-}" == measuring ]]; then
        target=$(measuring_of "$opid") || problem "no measuring process found"
    fi
    kill -s "$sig" "$target"
    [[ "${2:-}" == twice ]] && kill -s "$sig" "$target"
    collect main
    expect_rc 130
    grep -q 'interrupted' "$io/main.err" || problem "stderr does not say interrupted"
    [[ -e r.json ]] && problem "r.json written, although no experiment finished"
    note "exit $rc: $(paste -sd ' ' "$io/main.err" | cut -c 1-100 | printable)"
}

c_sigint_early() {
    spawn main "$bin" "${quick_sys[@]}" --json r.json
    sleep 0.02
    kill -s INT "$opid"
    collect main
    expect_rc 130
    note "exit $rc$([[ -s "$io/main.err" ]] && echo ": $(first_line "$io/main.err")")"
}

c_gnu_timeout() {
    local seen=""
    spawn main timeout -s TERM 3 "$bin" switch --via sysv-sem --kind processes --samples 3000 -q
    wait_for 10 has_new_sem && seen=$(new_sems | tr '\n' ' ')
    [[ -n "$seen" ]] || problem "no SysV set appeared within 10 s"
    collect main
    [[ "$rc" == 124 ]] || problem "exit $rc: the run was not cut short by timeout (expected 124)"
    note "exit $rc, set ${seen}existed during the run; $(paste -sd ' ' "$io/main.err" | cut -c 1-90 | printable)"
}

c_kill9_measuring() {
    local m=""
    spawn main "$bin" switch --via sysv-sem --kind processes --samples 3000 -q
    wait_for 10 has_new_sem || problem "no SysV set appeared within 10 s"
    m=$(measuring_of "$opid") || problem "no measuring process found"
    [[ -n "$m" ]] && kill -s KILL "$m"
    collect main
    expect_rc 2
    grep -qE 'removed 1 SysV semaphore set' "$io/main.err" || problem "does not say it removed the set"
    note "exit $rc: $(paste -sd ' ' "$io/main.err" | cut -c 1-120 | printable)"
}

c_kill9_oscost() {
    local sets dirs
    spawn main "$bin" switch --via sysv-sem --kind processes --samples 3000 -q
    wait_for 10 has_new_sem || problem "no SysV set appeared within 10 s"
    kill -s KILL "$opid"
    collect main
    [[ "$rc" == 137 ]] || problem "exit $rc, expected 137 (killed)"
    wait_for 5 no_case_pids || problem "processes of the killed run still running 5 s later"
    sets=$(new_sems | wc -l)
    dirs=("$ctmp"/oscost-*)
    note "the kill left $sets SysV set(s) and ${#dirs[@]} directory(ies)"
    osc --scripted --quiet example
    expect_rc 0
    if ((sets + ${#dirs[@]})); then
        grep -q 'removed what an earlier oscost run' "$io/err" || problem "the next run did not say it removed the leftovers"
    fi
    note "next run: exit $rc: $(grep -m 1 removed "$io/err" | cut -c 1-110 | printable)"
}

c_signal_worker() { # SIGNAL
    local w="" m tries
    spawn main "$bin" "${ring_sweep[@]}"
    for tries in 1 2 3 4 5; do
        wait_for 20 has_workers "$opid" 1 || break
        m=$(measuring_of "$opid") || continue
        w=$(workers_of "$m" | head -n 1)
        [[ -n "$w" ]] && kill -s "$1" "$w" 2>/dev/null && break
        w=""
    done
    [[ -n "$w" ]] || problem "found no worker to signal ($tries tries)"
    collect main
    expect_rc 2
    grep -q "worker process $w" "$io/main.err" || problem "stderr does not name worker $w"
    note "exit $rc: $(first_line "$io/main.err" | cut -c 1-120)"
}

c_stop_cont() {
    spawn main "$bin" ring --kind processes --tasks 2..256 --samples 5 -q --json r.json
    wait_for 20 has_workers "$opid" 1 || problem "no worker appeared in 20 s"
    kill -s STOP "$opid"
    sleep 0.5
    kill -s CONT "$opid"
    collect main
    expect_rc 0
    expect_json r.json ring
    note "exit $rc, r.json holds [$(json r.json names)]"
}

# A history of the case's own (outside the working directory) holding one scripted run.
with_history() {
    hist="$io/h.sqlite"
    "$bin" --history "$hist" --scripted -q example >/dev/null 2>&1 || problem "could not fill a history"
}

# A history command writing over a read-only (0444) file: refused, the file as it was.
c_history_read_only() { # FILE ARGS...
    local f="$1"
    shift
    with_history
    printf 'precious\n' >"$f"
    chmod 0444 "$f"
    snap_before=$(snapshot)
    osc --history "$hist" history "$@"
    expect_refused 'read-only'
}

# `history trend --svg nodir/`: a missing directory is not a file name.
c_history_svg_missing_dir() {
    with_history
    snap_before=$(snapshot)
    osc --history "$hist" history trend example.cost100 --svg nodir/
    expect_refused 'nodir/: no such directory'
    [[ -e nodir ]] && problem "wrote a file named nodir"
}

# Output to a FIFO nobody opens: SIGINT or SIGTERM ends the wait (exit 130), or it times out
# (exit 2) with one line naming it.
c_fifo_no_reader() { # INT|TERM|timeout
    mkfifo pipe.md
    if [[ "$1" == timeout ]]; then
        OSCOST_OUTPUT_TIMEOUT=2 osc --scripted -q --no-save example --markdown pipe.md
        expect_rc 2
        expect_one_line
        expect_err 'pipe\.md: nobody read it for 2 s'
        note "exit $rc: $(first_line "$io/err")"
        return
    fi
    spawn main "$bin" --scripted -q --no-save example --markdown pipe.md
    sleep 1
    kill -s "$1" "$opid"
    collect main
    expect_rc 130
    grep -q 'interrupted' "$io/main.err" || problem "stderr does not say interrupted"
    [[ -p pipe.md ]] || problem "pipe.md is no longer a FIFO"
    note "exit $rc: $(first_line "$io/main.err")"
}

# `--json -` into a pipe whose reader takes nothing (its buffer already full): SIGTERM ends
# the wait with exit 130.
c_stdout_stalled() {
    local p t0
    mkfifo "$io/q"
    exec 3<>"$io/q"
    head -c 65536 /dev/zero >&3 # fills the pipe: every later write would block
    t0=$(now_us)
    # shellcheck disable=SC2016 # $$ and $0 belong to the inner shell
    timeout -k 5 "$limit" bash -c 'echo $$ >"$0" && exec "$@"' "$io/pid" \
        "$bin" --scripted -q --no-save example --json - </dev/null >"$io/q" 2>"$io/err" &
    p=$!
    sleep 1
    kill -s TERM "$(<"$io/pid")"
    wait "$p"
    rc=$?
    vet "$rc" "$io/err" "$t0"
    exec 3>&-
    expect_rc 130
    expect_err 'interrupted'
    note "exit $rc: $(tail -n 1 "$io/err" | cut -c 1-150 | printable)"
}

c_stdout_closed_json() {
    local t0
    t0=$(now_us)
    timeout -k 5 "$limit" "$bin" --scripted -q --no-save example --json - </dev/null >&- 2>"$io/err"
    rc=$?
    vet "$rc" "$io/err" "$t0"
    expect_rc 2
    expect_one_line
    expect_err 'standard output is closed'
    note "exit $rc: $(first_line "$io/err")"
}

# A history that is not oscost's: a device, another program's database, oscost's tables
# without schema_migrations, a newer oscost's database in rollback mode. Refused in one line; nothing in or beside it changes.
c_history_not_ours() { # dev-null|foreign|no-migrations|newer ARGS...
    local kind="$1"
    shift
    case "$kind" in
        dev-null) hist=/dev/null ;;
        foreign)
            hist=other.sqlite
            python3 -c 'import sqlite3; c = sqlite3.connect("other.sqlite"); c.execute("create table t (x)"); c.commit()'
            ;;
        no-migrations)
            hist=damaged.sqlite
            "$bin" --history "$hist" --scripted -q example >/dev/null 2>&1 || problem "could not fill a history"
            python3 -c 'import sqlite3; c = sqlite3.connect("damaged.sqlite"); c.execute("pragma journal_mode = delete"); c.execute("drop table schema_migrations"); c.commit()'
            ;;
        newer)
            hist=newer.sqlite
            "$bin" --history "$hist" --scripted -q example >/dev/null 2>&1 || problem "could not fill a history"
            python3 -c 'import sqlite3; c = sqlite3.connect("newer.sqlite"); c.execute("pragma journal_mode = delete"); c.execute("insert into schema_migrations values (99, \"x\")"); c.commit()'
            ;;
    esac
    snap_before=$(snapshot)
    osc --history "$hist" "$@"
    expect_refused
    [[ -e /dev/null-journal ]] && problem "/dev/null-journal exists"
    if [[ "$kind" == newer ]]; then
        [[ "$(python3 -c 'import sqlite3; print(sqlite3.connect("newer.sqlite").execute("pragma journal_mode").fetchone()[0])')" == delete ]] ||
            problem "the journal mode changed"
    fi
}

# SIGINT while a run waits for another writer's lock on the history: exit 130, not 0.
c_history_lock_sigint() {
    local holder
    with_history
    python3 -c 'import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("begin immediate")
open(sys.argv[2], "w").close()
time.sleep(30)' "$hist" "$io/locked" &
    holder=$!
    wait_for 10 test -e "$io/locked" || problem "the lock was never taken"
    spawn main "$bin" --history "$hist" --scripted -q example --json r.json
    sleep 1.5
    kill -s INT "$opid"
    collect main
    kill "$holder" 2>/dev/null
    wait "$holder" 2>/dev/null
    expect_rc 130
    grep -q 'interrupted while waiting for the history' "$io/main.err" || problem "stderr does not say it was interrupted waiting for the lock"
    expect_json r.json example
    note "exit $rc: $(tail -n 1 "$io/main.err" | cut -c 1-120 | printable)"
}

# A result file edited by hand: FIELD set by a Python expression on the document `d`.
edited_doc() { # OUT PYTHON-STATEMENT
    "$bin" --scripted -q --no-save example --json "$io/r.json" >/dev/null 2>&1 || problem "no document to edit"
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))' "$io/r.json" "$1" "$2"
}

# Silently wrong input refused at import: one line naming the file, nothing saved.
c_import_refused() { # ERE PYTHON-STATEMENT
    local re="$1"
    edited_doc bad.json "$2"
    hist="$io/h.sqlite"
    snap_before=$(snapshot)
    osc --history "$hist" history import bad.json
    expect_refused "bad\.json: .*$re"
}

# The same run with its id in capitals is the same run, not a second one.
c_import_uppercase_id() {
    hist="$io/h.sqlite"
    edited_doc upper.json 'd["run_id"] = d["run_id"].upper()'
    cp "$io/r.json" lower.json
    osc --history "$hist" history import lower.json upper.json
    expect_rc 0
    grep -q '^already in the history' "$io/out" || problem "the upper-case copy was imported as a new run"
    osc --history "$hist" history list
    grep -q '^1 run in' "$io/out" || problem "the history holds $(tail -n 1 "$io/out")"
    note "exit $rc: $(tail -n 1 "$io/out")"
}

# A document whose run id is stored with other content: refused by name (import and push),
# never dropped as "already there"; a push goes on past it and names it in its summary.
c_conflicting_content() { # import|push
    hist="$io/h.sqlite"
    edited_doc other.json 'c = d["experiments"][0]["cases"][0]; c["raw_ns"][0] = c["raw_ns"][0] + 1'
    cp "$io/r.json" same.json
    osc --history "$hist" history import same.json
    expect_rc 0
    if [[ "$1" == import ]]; then
        osc --history "$hist" history import other.json
    else
        osc --history "$hist" history push other.json same.json --to "$hist"
        grep -q '^already there: ' "$io/out" || problem "the identical copy was not pushed past the refused one"
        grep -q '1 refused (another run.s content under a stored id: other.json)' "$io/out" ||
            problem "the summary does not name the refused file"
    fi
    expect_rc 2
    expect_one_line
    expect_err 'other\.json: not stored: run .* is already in the history with other content'
    note "exit $rc: $(first_line "$io/err" | cut -c 1-110)"
}

# The history on a full file system (a 256 KiB tmpfs): a run at the default place goes on,
# writes its result file and says the run was not saved; a history command fails in one line
# that names the database.
c_history_full_disk() {
    local full="$io/full"
    if ((EUID != 0)); then
        note "not applicable: mounting a small tmpfs needs root"
        return
    fi
    if ! { mkdir "$full" && mount -t tmpfs -o size=256k tmpfs "$full"; }; then
        problem "cannot mount a tmpfs"
        return
    fi
    XDG_DATA_HOME="$full/data" "$bin" --scripted -q --no-save example >/dev/null 2>&1
    { mkdir -p "$full/data/oscost" && "$bin" --history "$full/data/oscost/history.sqlite3" \
        --scripted -q example >/dev/null 2>&1; } || problem "could not fill a history"
    dd if=/dev/zero of="$full/fill" bs=4k >/dev/null 2>&1
    XDG_DATA_HOME="$full/data" osc --scripted -q example --json r.json
    expect_rc 0
    expect_json r.json example
    grep -q 'history not saved: .*history.sqlite3' "$io/err" || problem "the run does not say it was not saved, naming the database"
    note "run: exit $rc: $(first_line "$io/err" | cut -c 1-90)"
    osc --history "$full/data/oscost/history.sqlite3" history import r.json
    expect_rc 2
    expect_one_line
    expect_err 'history\.sqlite3'
    note "import: exit $rc"
    umount "$full" || problem "cannot unmount $full"
}

# The default suite with the history's directory on a full file system: every experiment still
# runs, the result file and report it keeps itself are given up each with one line, the results
# go to the temporary directory instead, and the run succeeds (a real `--quick` suite).
c_suite_full_disk() {
    local full="$io/fullsuite"
    if ((EUID != 0)); then
        note "not applicable: mounting a small tmpfs needs root"
        return
    fi
    if ! { mkdir "$full" && mount -t tmpfs -o size=256k tmpfs "$full"; }; then
        problem "cannot mount a tmpfs"
        return
    fi
    mkdir -p "$full/data/oscost"
    dd if=/dev/zero of="$full/fill" bs=4k >/dev/null 2>&1
    XDG_DATA_HOME="$full/data" TMPDIR="$io" osc --quick
    expect_rc 0
    grep -q 'not kept: .*runs/.*\.json' "$io/err" || problem "the lost result file is not named"
    local other
    other=$(sed -n 's/^oscost: the run.s results are in \(.*\) instead$/\1/p' "$io/err")
    [[ -n "$other" && -s "$other" ]] || problem "the results were not written elsewhere"
    { [[ -n "$other" ]] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["experiments"]) >= 9' "$other"; } \
        || problem "the results elsewhere do not hold the whole suite"
    note "exit $rc: $(grep -c 'not kept' "$io/err") files not kept, results in ${other:-nowhere}"
    umount "$full" || problem "cannot unmount $full"
}

# A history another user keeps in a directory this user cannot write: listed, read only, with
# nothing made beside it (the WAL database cannot make its shared-memory file there).
c_history_readonly_dir() {
    if [[ -n "$nobody_na" && "$EUID" == 0 ]]; then
        note "not applicable: $nobody_na"
        return
    fi
    local dir="$work/ro"
    mkdir "$dir"
    "$bin" --scripted -q example --history "$dir/h.sqlite" >/dev/null 2>&1 || problem "could not make a history"
    chmod 0555 "$dir"
    chmod 0644 "$dir/h.sqlite"
    ((EUID == 0)) && runner=("${nobody[@]}")
    local before
    before=$(ls -A "$dir")
    osc --history "$dir/h.sqlite" history list
    expect_rc 0
    grep -q '^1 run in' "$io/out" || problem "the history was not listed: $(first_line "$io/err")"
    [[ "$(ls -A "$dir")" == "$before" ]] || problem "files appeared beside the database: $(ls -A "$dir")"
    note "exit $rc: $(tail -n 1 "$io/out")"
}

# Under umask 0277 a run's own result file is made 0400; rewriting it after the next
# experiment is the run's own business, not overwriting a protected file.
c_umask_0277() {
    runner=(bash -c 'umask 0277; exec "$@"' umask)
    osc --scripted -q run example example-more --json r.json
    expect_rc 0
    expect_json r.json example,example-more
    note "exit $rc: r.json $(stat -c %a r.json 2>/dev/null)"
}

# A report too large for the memory it may use (prlimit --as): one line saying the allocation
# was refused, exit 2, not an abort (134).
c_report_out_of_memory() {
    command -v prlimit >/dev/null 2>&1 || {
        note "not applicable: prlimit (util-linux) is missing"
        return
    }
    edited_doc big.json 'c = d["experiments"][0]["cases"][0]
d["experiments"][0]["cases"] = [dict(c, id=c["id"] + ".x%d" % i, raw_ns=c["raw_ns"] * 20, samples=len(c["raw_ns"]) * 20) for i in range(2000)]'
    runner=(prlimit --as=40000000)
    osc report big.json -o big.html
    expect_rc 2
    expect_one_line
    expect_err 'out of memory'
    [[ -e big.html ]] && problem "a page was written"
    note "exit $rc: $(first_line "$io/err" | cut -c 1-80)"
}

# Escape sequences and a right-to-left override in a result file: shown as escapes by
# history list/show and compare, never sent to the terminal raw.
c_hostile_text() {
    local cmd raw
    hist="$io/h.sqlite"
    edited_doc bad.json 'd["environment"]["cpu_model"] = "CPU\x1b]0;owned\x07\u202eevil"; d["experiments"][0]["cases"][0]["description"] = "op\x1b[2J"'
    "$bin" --history "$hist" history import bad.json >/dev/null 2>&1 || problem "import failed"
    for cmd in "history list" "history show latest" "compare bad.json bad.json"; do
        # shellcheck disable=SC2086 # the words of the command
        osc --history "$hist" $cmd
        expect_rc 0
        raw=$(LC_ALL=C grep -c $'\x1b\|\xe2\x80\xae' "$io/out")
        ((raw == 0)) || problem "$cmd: $raw line(s) carry raw escapes"
        if [[ "$cmd" == "history list" ]]; then
            grep -qF 'CPU\x1b]0;owned\x07\u{202e}evil' "$io/out" || problem "history list does not show the escapes"
        fi
    done
    note "list, show, compare: escapes shown as \\x1b, \\u{202e}"
}

# A result file whose median_ns disagrees with its raw samples: compare takes the row's
# percentage from the same samples as its verdict, and says why, never -104 % beside
# "no difference".
c_compare_inconsistent_summary() {
    # A median about 9 times its samples' (a negative one is refused when the file is read).
    edited_doc bad.json 'd["experiments"][0]["cases"][0]["median_ns"] = 1000.0'
    cp "$io/r.json" good.json
    osc compare good.json bad.json
    expect_rc 0
    grep -q "B's median_ns .* is not the median of its raw_ns" "$io/out" || problem "compare does not name the inconsistent file's figure"
    grep -qE '\+?8[0-9]{2}\.[0-9] %' "$io/out" && problem "a percentage from the summary is shown"
    note "exit $rc: $(grep -m1 "median_ns" "$io/out" | cut -c 1-100)"
}

rr_is() { [[ "$(cat "$rr" 2>/dev/null)" == "$1" ]]; }
# shellcheck disable=SC2054 # the commas are oscost's list syntax, inside one argument
rr_tick=(--cpus "${online%%[-,]*}" tick --rr-slices 1,10 --source signal --periods 20ms --runs 3)
rr_long=(--workers 2 --chunks 20000 --chunk-us 100 --rounds 1)
rr_timeline=(timeline --policy rr --rr-slice-ms 5 "${rr_long[@]}")

# A run killed with SIGKILL while the round-robin slice is changed (to VALUE): the next run
# puts it back, and says so.
c_rr_kill9() { # VALUE ARGS...
    local want="$1" before
    shift
    if ((EUID != 0)); then
        note "not applicable: changing $rr needs root"
        return
    fi
    before=$(<"$rr")
    spawn main "$bin" -q "$@"
    wait_for 30 rr_is "$want" || problem "the slice never read $want in 30 s"
    kill -s KILL "$opid"
    collect main
    [[ "$rc" == 137 ]] || problem "exit $rc, expected 137 (killed): $(first_line "$io/main.err")"
    wait_for 5 no_case_pids || problem "processes of the killed run still running 5 s later"
    note "the kill left the slice at $(<"$rr")"
    osc --scripted --quiet --no-save example
    expect_rc 0
    rr_is "$before" || problem "after the next run the slice is $(<"$rr"), was $before"
    grep -qF "put $rr back to $before" "$io/err" || problem "the next run did not say it put the slice back"
    note "next run: exit $rc, slice $(<"$rr"): $(grep -m 1 'put ' "$io/err" | cut -c 1-70 | printable)"
}

# Two overlapping runs changing the slice: it ends at its value before the first.
c_rr_overlap() {
    local before
    if ((EUID != 0)); then
        note "not applicable: changing $rr needs root"
        return
    fi
    before=$(<"$rr")
    spawn a "$bin" -q "${rr_timeline[@]}" --json a.json
    wait_for 30 rr_is 5 || problem "the first run never set the slice to 5"
    spawn b "$bin" -q timeline --policy rr --rr-slice-ms 7 "${rr_long[@]}" --json b.json
    wait_for 30 rr_is 7 || problem "the second run never set the slice to 7"
    collect a
    [[ "$rc" == 0 ]] || problem "first run: exit $rc: $(first_line "$io/a.err")"
    collect b
    [[ "$rc" == 0 ]] || problem "second run: exit $rc: $(first_line "$io/b.err")"
    rr_is "$before" || problem "the slice ended at $(<"$rr"), was $before"
    grep -qE "another oscost process \(pid [0-9]+\) has $rr changed too" b.json ||
        problem "b.json does not warn that the first run had the slice changed"
    note "both exit 0, slice back at $(<"$rr"); b.json warns of the other run"
}

# Bad input.
run_case cpus-offline refused 'not online' --cpus "$offline_cpu" "${quick_sys[@]}" --json r.json --csv keep.csv
run_case cpus-negative refused 'not a CPU list' --cpus -1 "${quick_sys[@]}" --json r.json --csv keep.csv
run_case cpus-0-99999 refused 'not online' --cpus 0-99999 "${quick_sys[@]}" --json r.json --csv keep.csv
run_case cpus-x-y refused 'not a CPU list' --cpus x-y "${quick_sys[@]}" --json r.json --csv keep.csv
run_case cpus-backwards refused 'backwards' --cpus 1-0 "${quick_sys[@]}" --json r.json
run_case cpus-empty-item refused 'not a CPU list' --cpus 0,,1 "${quick_sys[@]}" --json r.json
run_case samples-0 refused 'samples from 3' syscall --quick --samples 0 --json r.json --csv keep.csv
run_case samples-negative refused 'samples from 3' syscall --quick --samples -1 --json r.json
run_case samples-2 refused 'samples from 3' syscall --quick --samples 2 --json r.json
run_case samples-overflow refused 'samples from 3' syscall --quick --samples 99999999999999999999 --json r.json
run_case nice-40 refused 'nice' --nice 40 "${quick_sys[@]}" --json r.json --csv keep.csv
run_case nice-not-a-number refused 'nice' --nice abc "${quick_sys[@]}" --json r.json
run_case rate-negative refused 'rate' "${quick_sys[@]}" --rate -5 --json r.json --csv keep.csv
run_case rate-1e999 refused 'rate' "${quick_sys[@]}" --rate 1e999 --json r.json
run_case calls-nope refused 'choose from.*getpid' syscall --calls nope --json r.json --csv keep.csv
run_case calls-non-utf8 refused 'choose from' syscall --calls $'\xff' --json r.json
run_case run-nosuch refused 'choose from.*syscall' run nosuch --json r.json --csv keep.csv
run_case frobnicate refused 'frobnicate' frobnicate --json r.json
run_case missing-argument-named refused 'not provided: <RUN>' history show
run_case missing-files-named refused 'not provided: <FILE>' history import
run_case command-non-utf8 refused 'subcommand' $'\xfe\xff' --json r.json
run_case list-json c_list_with_file 'list does not use --json' list --json x
run_case env-csv c_list_with_file 'csv' env --csv x
run_case ring-tasks-1 refused 'at least 2 tasks' ring --tasks 1 --json r.json --csv keep.csv
run_case ring-tokens-0 refused 'token' ring --tokens 0 --json r.json --csv keep.csv
run_case ring-tasks-negative refused 'tasks' ring --tasks -4 --json r.json
run_case ring-tokens-as-tasks refused 'tokens 4' ring --tasks 4 --tokens 4 --json r.json
run_case switch-carrier-pigeon refused 'choose from.*pipe' switch --via carrier-pigeon --json r.json --csv keep.csv
run_case same-file-json-csv refused 'both write same.out' "${quick_sys[@]}" --json same.out --csv same.out
run_case same-file-via-symlink c_same_via_symlink
run_case same-file-via-dot-slash refused 'both write' "${quick_sys[@]}" --json keep.csv --markdown ./keep.csv
run_case two-formats-to-stdout refused 'stdout' --scripted example --json - --csv /dev/stdout
run_case output-is-directory refused 'directory' "${quick_sys[@]}" --json . --csv keep.csv
run_case output-missing-directory refused 'does not exist' "${quick_sys[@]}" --json nodir/r.json --csv keep.csv
run_case output-non-utf8-missing-dir refused 'does not exist' --scripted example --json $'\xff/r.json'
run_case output-under-a-file c_output_under_file
run_case output-name-too-long refused 'too long' --scripted example --json "$(printf 'n%.0s' {1..300}).json"
run_case output-trailing-slash refused 'r\.json' --scripted example --json r.json/
run_case output-read-only-0444 c_read_only
run_case output-dir-0555-unprivileged c_output_in_0555_dir
run_case nofile-limit-60 c_nofile_limit
run_case tmpdir-proc c_tmpdir /proc
run_case tmpdir-missing c_tmpdir /nonexistent/fault-matrix
run_case tmpdir-is-a-file c_tmpdir FILE
run_case tmpdir-0555-unprivileged c_tmpdir_0555
run_case nice-negative-unprivileged c_nice_unprivileged

# Output files.
run_case non-utf8-syscall-xff c_non_utf8 $'\xff.json' syscall "${quick_sys[@]}" -q
run_case non-utf8-syscall-oxe9 c_non_utf8 $'o\xe9.json' syscall "${quick_sys[@]}" -q
run_case non-utf8-env-xff c_non_utf8 $'\xff.json' env env
run_case non-utf8-env-oxe9 c_non_utf8 $'o\xe9.json' env env
run_case non-utf8-csv-markdown c_non_utf8_csv_markdown
run_case symlink-written-through c_symlink
run_case dangling-symlink c_dangling_symlink
run_case json-dev-stdout-to-file c_dev_stdout
run_case json-dash c_json_dash
run_case existing-0644-kept c_mode_kept 0644
run_case existing-0600-kept c_mode_kept 0600
run_case existing-owner-kept c_owner_kept
run_case new-file-umask-022 c_umask 022 644
run_case new-file-umask-077 c_umask 077 600
run_case markdown-fifo-with-reader c_fifo
run_case markdown-fifo-no-reader-sigint c_fifo_no_reader INT
run_case markdown-fifo-no-reader-sigterm c_fifo_no_reader TERM
run_case markdown-fifo-no-reader-timeout c_fifo_no_reader timeout
run_case json-dash-stalled-pipe-sigterm c_stdout_stalled
run_case json-dash-stdout-closed c_stdout_closed_json
run_case json-dev-null c_dev_null
run_case json-dev-full c_dev_full
run_case stdout-dev-full c_stdout_full
run_case stdout-closed c_stdout_closed
run_case rate-1e9-warns c_rate_1e9
run_case failed-after-good c_failed_after_good
run_case stdout-reader-gone c_reader_gone
run_case json-dash-reader-gone c_json_reader_gone
run_case two-runs-at-once c_two_at_once
run_case history-export-read-only c_history_read_only ro.json export latest --json ro.json
run_case history-trend-svg-read-only c_history_read_only ro.svg trend example.cost100 --svg ro.svg
run_case history-trend-svg-missing-dir c_history_svg_missing_dir
run_case history-dev-null c_history_not_ours dev-null --scripted example
run_case history-foreign-db-list c_history_not_ours foreign history list
run_case history-foreign-db-run c_history_not_ours foreign --scripted example
run_case history-no-migrations-list c_history_not_ours no-migrations history list
run_case history-no-migrations-run c_history_not_ours no-migrations --scripted example
run_case history-newer-schema-rollback c_history_not_ours newer history list
run_case history-newer-schema-run c_history_not_ours newer --scripted example
run_case history-lock-wait-sigint c_history_lock_sigint
run_case history-full-disk c_history_full_disk
run_case suite-full-disk c_suite_full_disk
run_case history-readonly-dir c_history_readonly_dir
run_case report-out-of-memory c_report_out_of_memory
run_case umask-0277-own-file c_umask_0277
run_case import-impossible-date c_import_refused 'started_at' 'd["started_at"] = "9999-99-99T99:99:99Z"'
run_case import-raw-ns-too-long c_import_refused 'raw_ns' 'c = d["experiments"][0]["cases"][0]; c["raw_ns"] = c["raw_ns"] * 3'
run_case import-newline-in-case-id c_import_refused 'case `evil\\x0aid\\x1b\[2J` has' 'c = d["experiments"][0]["cases"][0]; c["id"] = "evil\nid\x1b[2J"; c["raw_ns"] = c["raw_ns"] * 3'
run_case import-uppercase-id-same-run c_import_uppercase_id
run_case hostile-text-not-sent-raw c_hostile_text
run_case compare-inconsistent-summary c_compare_inconsistent_summary

# Signals and kills.
run_case sigint-ring-processes c_signal INT
run_case sigint-twice c_signal INT twice
run_case sigterm c_signal TERM
run_case sighup c_signal HUP
run_case sigint-measuring-process c_signal INT measuring
run_case sigint-at-start c_sigint_early
run_case gnu-timeout-sysv-sem c_gnu_timeout
run_case kill9-measuring-sysv-sem c_kill9_measuring
run_case kill9-oscost-then-next-run c_kill9_oscost
run_case sigterm-one-worker c_signal_worker TERM
run_case sigkill-one-worker c_signal_worker KILL
run_case sigstop-sigcont c_stop_cont

# System settings.
run_case rr-slice-tick-kill9-next-run c_rr_kill9 1 "${rr_tick[@]}"
run_case rr-slice-timeline-kill9-next-run c_rr_kill9 5 "${rr_timeline[@]}"
run_case rr-slice-two-runs-overlapping c_rr_overlap


# ---------------------------------------------------------------------------------------------
# The FUSE server of `fs` (a helper the measuring process starts) and what a killed run leaves.

# The FUSE server among this case's processes.
fuse_server_of() {
    local p
    for p in $(case_pids); do
        grep -qa '__fuse-serve' "/proc/$p/cmdline" 2>/dev/null && echo "$p" && return 0
    done
    return 1
}
fuse_up() { fuse_server_of >/dev/null; }
# FUSE mounts of this case visible here (a user's; root's live in a namespace of their own).
case_fuse_mounts() { findmnt -rn -t fuse.oscost -o TARGET 2>/dev/null | grep -F "$ctmp"; }
# /dev/shm directories of the runs of this case (named after their coordinator's pid).
case_shm_dirs() {
    local p d
    for p in "$@"; do
        for d in /dev/shm/oscost-run-"$p"-*; do echo "$d"; done
    done
}
expect_no_fuse_leftovers() { # [COORDINATOR-PID]
    local m s
    m=$(case_fuse_mounts)
    [[ -n "$m" ]] && problem "left mounted: $(echo "$m" | tr '\n' ' ')" && for s in $m; do fusermount3 -u -z "$s" 2>/dev/null || umount -l "$s"; done
    if [[ -n "${1:-}" ]]; then
        s=$(case_shm_dirs "$1")
        # Word splitting wanted: one directory a word (case_shm_dirs prints names without spaces).
        # shellcheck disable=SC2086
        [[ -n "$s" ]] && problem "left in /dev/shm: $s" && rm -rf $s
    fi
    return 0
}
# shellcheck disable=SC2054 # the commas are oscost's list syntax, inside one argument
fs_long=(fs --calls getpid,open-close,read64k --no-save -q)

# A stopped FUSE server (what a deadlocked one looks like) and a signal to oscost: the run
# ends (130) within 10 s of the first signal, naming the server, leaving nothing.
c_fs_stopped_server() { # once|twice
    local srv t0 t1
    spawn main "$bin" "${fs_long[@]}"
    wait_for 20 fuse_up || problem "the FUSE server never started"
    srv=$(fuse_server_of)
    sleep 0.5
    kill -s STOP "$srv"
    sleep 0.3
    t0=$(now_us)
    kill -s INT "$opid"
    [[ "$1" == twice ]] && sleep 0.3 && kill -s INT "$opid"
    collect main
    t1=$(now_us)
    expect_rc 130
    (((t1 - t0) < 10000000)) || problem "ended $(((t1 - t0) / 1000)) ms after the first signal, not within 10 s"
    [[ "$1" == once ]] && ! grep -q "__fuse-serve (pid $srv" "$io/main.err" &&
        ! grep -q "oscost __fuse-serve, pid $srv" "$io/main.err" && problem "stderr does not name the stopped server"
    expect_no_fuse_leftovers "$opid"
    note "exit $rc after $(((t1 - t0) / 1000)) ms: $(grep -m 1 -E 'fuse|interrupted' "$io/main.err" | cut -c 1-110 | printable)"
}

# A stopped server and no signal: the exchange with it times out with one line naming it.
c_fs_stopped_server_exchange() {
    local srv
    # getpid never reaches the server: only the count exchange after its rounds (4 s) does.
    spawn main "$bin" fs --calls getpid --samples 400 --no-save -q
    wait_for 20 fuse_up || problem "the FUSE server never started"
    srv=$(fuse_server_of)
    sleep 1
    kill -s STOP "$srv"
    collect main
    expect_rc 2
    grep -q "FUSE server (oscost __fuse-serve, pid $srv) did not answer" "$io/main.err" ||
        problem "stderr does not say the server did not answer"
    expect_no_fuse_leftovers "$opid"
    note "exit $rc: $(first_line "$io/main.err" | cut -c 1-120)"
}

# A signal to the server alone, or its kill: the run ends with an error, nothing left.
c_fs_server_signal() { # SIGNAL
    local srv
    spawn main "$bin" "${fs_long[@]}"
    wait_for 20 fuse_up || problem "the FUSE server never started"
    srv=$(fuse_server_of)
    sleep 0.5
    kill -s "$1" "$srv"
    collect main
    [[ "$rc" == 2 || "$rc" == 0 ]] || problem "exit $rc, expected 2 (failed) or 0 (it had finished)"
    [[ "$rc" == 2 ]] && ! grep -q "FUSE server (oscost __fuse-serve, pid $srv) ended mid-run" "$io/main.err" &&
        problem "stderr does not say the server ended mid-run"
    expect_no_fuse_leftovers "$opid"
    note "exit $rc: $(first_line "$io/main.err" | cut -c 1-110)"
}

# kill -9 of the measuring process: the server dies with it, the run says so, nothing left.
c_fs_kill9_measuring() {
    local m
    spawn main "$bin" "${fs_long[@]}"
    wait_for 20 fuse_up || problem "the FUSE server never started"
    m=$(measuring_of "$opid")
    sleep 0.3
    kill -s KILL "$m"
    collect main
    expect_rc 2
    grep -q 'killed by signal 9' "$io/main.err" || problem "stderr does not say the measuring process was killed"
    expect_no_fuse_leftovers "$opid"
    note "exit $rc: $(first_line "$io/main.err" | cut -c 1-110)"
}

# Every process of the run killed at once (its process group): the next run removes what
# is left (a user's FUSE mount, the /dev/shm and run directories) and says so.
c_fs_kill9_all() { # [nobody]
    local p pids left
    if [[ "${1:-}" == nobody ]]; then
        if [[ -n "$nobody_na" ]]; then
            note "not applicable: $nobody_na"
            return
        fi
        runner=("${nobody[@]}")
        ((EUID == 0)) && chown 65534:65534 "$work" "$ctmp"
    fi
    spawn main "${runner[@]}" "$bin" "${fs_long[@]}"
    wait_for 20 fuse_up || problem "the FUSE server never started"
    sleep 0.5
    pids=$(case_pids)
    # setpriv execs: the pid spawn saw is oscost's.
    for p in $pids; do kill -s KILL "$p" 2>/dev/null; done
    collect main
    wait_for 5 no_case_pids || problem "processes of the killed run still running 5 s later"
    left="$(case_fuse_mounts | wc -l) mount(s), $(case_shm_dirs "$opid" | wc -l) /dev/shm dir(s)"
    note "the kill left $left"
    osc --scripted --quiet --no-save example
    expect_rc 0
    [[ -n "$(case_fuse_mounts)$(case_shm_dirs "$opid")" ]] && ! grep -q 'removed what an earlier oscost run' "$io/err" &&
        problem "the next run did not say what it removed"
    expect_no_fuse_leftovers "$opid"
    note "next run: $(grep -m 1 removed "$io/err" | cut -c 1-100 | printable)"
}

# As a user who is not root (fusermount3): Ctrl-C mid-run, and the server killed alone.
c_fs_unprivileged() { # INT|KILL-SERVER
    local srv
    if [[ -n "$nobody_na" ]]; then
        note "not applicable: $nobody_na"
        return
    fi
    runner=("${nobody[@]}")
    ((EUID == 0)) && chown 65534:65534 "$work" "$ctmp"
    spawn main "${runner[@]}" "$bin" "${fs_long[@]}"
    wait_for 20 fuse_up || problem "the FUSE server never started"
    srv=$(fuse_server_of)
    sleep 0.5
    if [[ "$1" == INT ]]; then
        kill -s INT "$opid"
        collect main
        expect_rc 130
    else
        kill -s KILL "$srv"
        collect main
        [[ "$rc" == 2 || "$rc" == 0 ]] || problem "exit $rc, expected 2 (failed) or 0"
    fi
    expect_no_fuse_leftovers "$opid"
    note "as nobody, exit $rc: $(first_line "$io/main.err" | cut -c 1-100)"
}

# The serving role on its own, its file system busy (a file open on it): the end of its input
# or a SIGTERM still ends it, and its mount goes.
c_fuse_serve_busy() { # stdin|TERM
    local d="$ctmp/mnt" srv starter
    mkdir "$d"
    mkfifo "$io/in"
    # The starter: holds the server's input open until it is killed.
    (exec 7>"$io/in" sleep 30) &
    starter=$!
    "$bin" __fuse-serve "$d" <"$io/in" >"$io/srv.out" 2>"$io/srv.err" &
    srv=$!
    wait_for 10 test -s "$io/srv.out" || problem "the server never said ready"
    [[ "$(head -n 1 "$io/srv.out")" == ready ]] || problem "the server said: $(first_line "$io/srv.out")"
    echo data >"$d/f" || problem "cannot write a file on the mount"
    exec 9<"$d/f" || problem "cannot open a file on the mount"
    if [[ "$1" == stdin ]]; then kill "$starter"; else kill -s TERM "$srv"; fi
    wait_for 10 gone "$srv" || problem "the server still runs 10 s after its $1, its file system busy"
    exec 9<&-
    kill "$starter" 2>/dev/null
    wait "$starter" 2>/dev/null
    kill -s KILL "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null
    if findmnt -rn "$d" >/dev/null; then
        problem "still mounted on $d"
        umount -l "$d"
    fi
    note "the busy server ended after its $1"
}

run_case fs-stopped-server-sigint c_fs_stopped_server once
run_case fs-stopped-server-sigint-twice c_fs_stopped_server twice
run_case fs-stopped-server-exchange-times-out c_fs_stopped_server_exchange
run_case fs-sigterm-server c_fs_server_signal TERM
run_case fs-sigint-server c_fs_server_signal INT
run_case fs-sigkill-server c_fs_server_signal KILL
run_case fs-kill9-measuring c_fs_kill9_measuring
run_case fs-kill9-all-next-run c_fs_kill9_all
run_case fs-kill9-all-next-run-unprivileged c_fs_kill9_all nobody
run_case fs-sigint-unprivileged c_fs_unprivileged INT
run_case fs-kill-server-unprivileged c_fs_unprivileged KILL-SERVER
run_case fuse-serve-busy-stdin-closed c_fuse_serve_busy stdin
run_case fuse-serve-busy-sigterm c_fuse_serve_busy TERM

# A setting a killed run left changed: put back by the next oscost command of any kind.
c_rr_kill9_then() { # COMMAND...
    if ((EUID != 0)); then
        note "not applicable: changing $rr needs root"
        return
    fi
    local before
    before=$(<"$rr")
    spawn main "$bin" -q "${rr_tick[@]}"
    wait_for 30 rr_is 1 || problem "the slice never read 1 in 30 s"
    kill -s KILL "$opid"
    collect main
    wait_for 5 no_case_pids || problem "processes of the killed run still running 5 s later"
    note "the kill left the slice at $(<"$rr")"
    osc "$@"
    expect_rc 0
    rr_is "$before" || problem "after \`oscost $*\` the slice is $(<"$rr"), was $before"
    grep -qF "put $rr back to $before" "$io/err" || problem "\`oscost $*\` did not say it put the slice back"
    note "then \`oscost $*\`: slice $(<"$rr")"
}

# The serving role's own bad input: exit 2, one line.
c_fuse_serve_bad() { # ARGS...
    osc __fuse-serve "$@"
    expect_rc 2
    [[ "$(lines_of "$io/err")$(lines_of "$io/out")" =~ ^(10|01)$ ]] || problem "expected one line: $(joined "$io/err") $(joined "$io/out")"
    note "exit $rc: $(first_line "$io/err")$(first_line "$io/out")"
}

# Tracepoints refused for want of descriptors: named as such with the fix, never taken for
# tracepoints the kernel lacks (a table without sched_switch would be wrong, not shorter).
c_trace_out_of_fds() {
    if ((EUID != 0)); then
        note "not applicable: the kernel's view needs root"
        return
    fi
    command -v prlimit >/dev/null 2>&1 || { note "not applicable: no prlimit"; return; }
    runner=(prlimit --nofile=24)
    osc --no-save noise --quick --cpus "${online%%[-,]*}"
    expect_rc 0
    grep -q 'for want of file descriptors.*raise the open-file limit' "$io/out" "$io/err" ||
        problem "the refusal does not name the open-file limit"
    grep -q 'lacks.*refused' "$io/out" "$io/err" && problem "a tracepoint refused for want of descriptors is listed as lacking"
    note "$(grep -h -o 'opening tracepoint [^ ]* failed for want of file descriptors' "$io/out" "$io/err" | head -n 1)"
}

# The BPF programs loaded now whose name says they are oscost's (`osc_`), one name a line.
oscost_bpf_progs() {
    python3 - <<'PY'
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(321, cmd, buf, 128)  # __NR_bpf on x86-64
    return r, buf.raw
next_id = 0
while True:
    r, out = bpf(11, struct.pack("I", next_id))  # BPF_PROG_GET_NEXT_ID
    if r < 0:
        break
    next_id = struct.unpack_from("I", out, 4)[0]
    fd, _ = bpf(13, struct.pack("I", next_id))  # BPF_PROG_GET_FD_BY_ID
    if fd < 0:
        continue
    info = ctypes.create_string_buffer(232)
    attr = struct.pack("IIQ", fd, 232, ctypes.addressof(info))
    if bpf(15, attr)[0] == 0:  # BPF_OBJ_GET_INFO_BY_FD
        name = info.raw[64:80].split(b"\0")[0].decode()
        if name.startswith("osc_"):
            print(name)
    os.close(fd)
PY
}
has_oscost_bpf() { [[ -n "$(oscost_bpf_progs)" ]]; }
tracefs_mounts() { awk '$3 == "tracefs" { print $2 }' /proc/mounts; }
ftrace_instances() {
    local m
    for m in $(tracefs_mounts); do
        for d in "$m"/instances/oscost-*; do echo "$d"; done
    done
}
has_ftrace_instance() { [[ -n "$(ftrace_instances)" ]]; }
# Every instance of oscost's the kernel holds, mounted or not (an instance outlives the
# tracefs mount it was made under): looked at through a mount of a namespace of its own.
all_ftrace_instances() {
    unshare -m sh -c 'mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null &&
        ls /sys/kernel/tracing/instances' | grep '^oscost-'
}

# SIGKILL mid traced pass (MECHANISM bpf or ftrace): the run's programs go with it; the next
# oscost command of any kind removes its ftrace instance and unmounts the tracefs it mounted,
# and says so; nothing is left after it.
c_trace_kill9() { # MECHANISM
    local mech="$1" m mounted_before
    if ((EUID != 0)); then
        note "not applicable: the kernel's view needs root"
        return
    fi
    mounted_before=$(tracefs_mounts)
    [[ -z "$(oscost_bpf_progs)" ]] || problem "oscost's BPF programs were loaded before the case"
    spawn main "$bin" -q --no-save --cpus "${online%%[-,]*}" noise --duration 3s --trace-with "$mech"
    if [[ "$mech" == bpf ]]; then
        wait_for 30 has_oscost_bpf || problem "no BPF program of oscost's was ever loaded"
    else
        wait_for 30 has_ftrace_instance || problem "no ftrace instance of oscost's was ever made"
    fi
    m=$(measuring_of "$opid")
    kill -s KILL ${m:+"$m"} "$opid"
    collect main
    wait_for 5 no_case_pids || problem "processes of the killed run still running 5 s later"
    # shellcheck disable=SC2016 # expanded by eval, each time wait_for tries
    wait_for 5 eval '[[ -z "$(oscost_bpf_progs)" ]]' ||
        problem "BPF programs left after the kill: $(oscost_bpf_progs | tr '\n' ' ')"
    note "the kill left: instances [$(ftrace_instances | tr '\n' ' ')], tracefs on [$(tracefs_mounts | tr '\n' ' ')]"
    osc list
    expect_rc 0
    all_ftrace_instances | grep -qxE "oscost-(${m:-none}|$opid)" &&
        problem "the killed run's ftrace instance is left after the next run"
    [[ "$(tracefs_mounts)" == "$mounted_before" ]] ||
        problem "tracefs mounted on [$(tracefs_mounts)] after the next run, was [$mounted_before]"
    if [[ "$mech" == ftrace ]]; then
        grep -q 'removed the ftrace instance' "$io/err" || problem "the next run did not say it removed the instance"
    fi
    if [[ -z "$mounted_before" ]]; then
        grep -q 'unmounted the tracefs' "$io/err" || problem "the next run did not say it unmounted tracefs"
    fi
    note "next run: $(grep -h -E 'removed the ftrace|unmounted the' "$io/err" | cut -c 1-80 | tr '\n' ' ' | printable)"
}

run_case trace-kill9-bpf c_trace_kill9 bpf
run_case trace-kill9-ftrace c_trace_kill9 ftrace
run_case trace-out-of-fds-noise c_trace_out_of_fds
run_case import-same-id-other-content c_conflicting_content import
run_case push-same-id-other-content c_conflicting_content push
run_case rr-slice-tick-kill9-then-syscall c_rr_kill9_then --no-save syscall --quick --samples 5 --calls getpid -q
run_case rr-slice-tick-kill9-then-list c_rr_kill9_then list
run_case rr-slice-tick-kill9-then-history-list c_rr_kill9_then history list
run_case rr-slice-tick-kill9-then-baselines c_rr_kill9_then baselines
run_case fuse-serve-no-directory c_fuse_serve_bad
run_case fuse-serve-missing-directory c_fuse_serve_bad /nonexistent/fault-matrix
run_case fuse-serve-two-directories c_fuse_serve_bad a b

# Bad options of the newer experiments and commands: one line, exit 2, nothing touched.
run_case lockring-verify-order-pipe refused 'add mutex to --forms' lockring --verify-order --forms pipe --json r.json --csv keep.csv
run_case fs-calls-nope refused 'choose from.*getpid' fs --calls nope --json r.json --csv keep.csv
run_case fs-rate-0 refused 'calls per sec' fs --rate 0 --json r.json
run_case fs-rate-negative refused 'calls per sec' fs --rate -5 --json r.json
run_case fs-rate-nan refused 'calls per sec' fs --rate nan --json r.json
run_case fs-calls-empty refused 'value is required' fs --calls , --json r.json
run_case tick-rr-slice-0 refused 'slice in ms' tick --rr-slices 0 --json r.json --csv keep.csv
run_case tick-rr-slice-negative refused 'slice in ms' tick --rr-slices -1 --json r.json
run_case tick-period-0 refused 'below 1us' tick --periods 0ms --json r.json
run_case tick-runs-0 refused 'number of runs' tick --runs 0 --json r.json
run_case timeline-rr-slice-0 refused 'round-robin slice' timeline --rr-slice-ms 0 --json r.json
run_case timeline-workers-0 refused 'number of workers' timeline --workers 0 --json r.json
run_case signal-cases-nope refused 'choose from' signal --cases nope --json r.json
run_case wakeup-period-no-unit refused 'no unit' wakeup --period 0 --json r.json
run_case wakeup-period-negative refused 'not a time' wakeup --period -1ms --json r.json
run_case lockring-forms-nope refused 'choose from: mutex, pipe' lockring --forms nope --json r.json
run_case seccomp-sets-nope refused 'choose from' seccomp --sets nope --json r.json
run_case uring-ops-nope refused 'choose from' uring --ops nope --json r.json

# EXPR of the result document d read from FILE, printed (python3).
jexpr() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null; }

# Issue 32's limits. `--fds` beyond the open-file limit: refused before anything is opened,
# naming RLIMIT_NOFILE and the fix.
c_poll_fds_nofile() {
    command -v prlimit >/dev/null 2>&1 || { note "not applicable: no prlimit"; return; }
    runner=(prlimit --nofile=64:64)
    refused 'RLIMIT_NOFILE is 64.*ulimit -n' poll --fds 1000 --json r.json
}

# io_uring disabled (io_uring_disabled = 2, put back as it was however the case ends): every
# uring case not measured, one line naming the setting and the fix, exit 0, and the other
# experiment of the run still measured.
c_uring_disabled() {
    local f=/proc/sys/kernel/io_uring_disabled old
    [[ -w "$f" ]] || { note "not applicable: cannot write $f (root, Linux 6.6 or later)"; return; }
    old=$(<"$f")
    # shellcheck disable=SC2064 # $old and $f now, on purpose
    trap "echo '$old' >'$f'" EXIT
    echo 2 >"$f" || { note "not applicable: cannot set $f to 2"; return; }
    osc --no-save run uring syscall --quick --json r.json
    echo "$old" >"$f"
    [[ "$(<"$f")" == "$old" ]] || problem "$f not put back to $old"
    expect_rc 0
    grep -q 'uring\.\*: io_uring is disabled here (/proc/sys/kernel/io_uring_disabled is 2): set it to 0' "$io/out" "$io/err" ||
        problem "the uring cases do not say io_uring is disabled and how to enable it"
    [[ "$(jexpr r.json 'sum(len(e["cases"]) for e in d["experiments"] if e["name"] == "uring")')" == 0 ]] ||
        problem "a uring case was measured with io_uring disabled"
    [[ "$(jexpr r.json 'sum(len(e["cases"]) for e in d["experiments"] if e["name"] == "syscall")')" -gt 0 ]] ||
        problem "syscall was not measured beside the disabled io_uring"
    note "$(grep -h -o 'uring\.\*: io_uring is disabled here[^:]*' "$io/out" "$io/err" | head -n 1)"
}

# No loopback interface (a network namespace of its own, `lo` left down): the TCP and UDP cases
# not measured, each saying so and how to bring `lo` up; AF_UNIX and the pipe still measured;
# exit 0. (oscost binds 127.0.0.1 port 0 only, the kernel's pick: there is no port to find in
# use.)
c_net_no_loopback() {
    command -v unshare >/dev/null 2>&1 || { note "not applicable: no unshare"; return; }
    unshare -n true 2>/dev/null || { note "not applicable: cannot make a network namespace"; return; }
    runner=(unshare -n)
    osc --no-save net --quick --cases tcp.rtt,udp.rtt,unix.rtt,pipe.bw --json r.json
    expect_rc 0
    grep -q 'no loopback interface.*ip link set lo up' "$io/out" "$io/err" ||
        problem "the TCP and UDP cases do not say there is no loopback interface and how to bring it up"
    local ids
    ids=$(jexpr r.json '" ".join(c["id"] for e in d["experiments"] for c in e["cases"])')
    [[ "$ids" == *net.unix.rtt.same* && "$ids" == *net.pipe.bw.same* ]] ||
        problem "AF_UNIX and pipe cases not measured without loopback: $ids"
    [[ "$ids" != *net.tcp.* && "$ids" != *net.udp.* ]] || problem "a TCP or UDP case was measured: $ids"
    note "measured: $ids; $(grep -h -o 'net\.tcp\.rtt[^:]*: no loopback interface' "$io/out" "$io/err" | head -n 1)"
}
run_case poll-fds-beyond-nofile-64 c_poll_fds_nofile
run_case uring-io-uring-disabled c_uring_disabled
run_case net-no-loopback c_net_no_loopback
run_case history-show-nosuch refused 'no run `nosuch`' history show nosuch
run_case history-rm-nosuch refused 'no run `nosuch`' history rm nosuch
run_case history-trend-nosuch refused 'has a case `nosuch.case`' history trend nosuch.case
run_case report-without-output refused 'report needs -o FILE' report r.json
run_case compare-one-file refused 'two results or more' compare r.json
run_case datasheet-missing-file refused 'no such file' datasheet /nonexistent/r.json
run_case baselines-nosuch refused 'no published baseline' baselines nosuch
run_case study-nosuch refused 'no study named' study nosuch
run_case man-nosuch refused 'no such subcommand' man nosuch
run_case history-import-missing-file refused 'no such file' history import /nonexistent/r.json

# ---------------------------------------------------------------------------------------------
# Round 3: the remaining unclear errors and silently wrong input.

# A device at /dev/fuse that is not FUSE's (/dev/null bound over it in a mount namespace of
# the case's own): the FUSE cases are not measured, each naming the device and the fix, never a
# bare EINVAL from mount(2).
c_fs_dev_fuse_not_fuse() {
    if ((EUID != 0)); then
        note "not applicable: binding over /dev/fuse needs root"
        return
    fi
    [[ -e /dev/fuse ]] || { note "not applicable: no /dev/fuse"; return; }
    command -v unshare >/dev/null 2>&1 || { note "not applicable: no unshare"; return; }
    # shellcheck disable=SC2016 # $@ belongs to the inner shell
    runner=(unshare -m --propagation private sh -c 'mount --bind /dev/null /dev/fuse && exec "$@"' sh)
    osc --no-save fs --quick --samples 3 --calls getpid
    expect_rc 0
    grep -q 'not measured: fs\.fuse\.getpid: /dev/fuse is not the FUSE device (character device 10:229): recreate it' "$io/out" "$io/err" ||
        problem "the FUSE case does not name the device and the fix"
    grep -q 'EINVAL' "$io/out" "$io/err" && problem "mount(2)'s bare EINVAL is shown"
    findmnt -n /dev/fuse >/dev/null 2>&1 && problem "the bind mount over /dev/fuse leaked out of the case's namespace"
    note "$(grep -h -o 'fs\.fuse\.getpid: /dev/fuse is not the FUSE device' "$io/out" "$io/err" | head -n 1)"
}

# A limit that stops the coordinator's own signal thread: RLIMIT_NPROC (nobody, --nproc=1) or
# RLIMIT_AS (--as of 20 MB), each named with the way to raise it, exit 2.
c_helper_thread_limit() { # nproc|as
    command -v prlimit >/dev/null 2>&1 || { note "not applicable: no prlimit"; return; }
    if [[ "$1" == nproc ]]; then
        if [[ -n "$nobody_na" ]]; then
            note "not applicable: $nobody_na"
            return
        fi
        ((EUID == 0)) && chown 65534:65534 "$work" "$ctmp"
        runner=("${nobody[@]}" prlimit --nproc=1)
        refused 'cannot start the signal thread: the process limit was reached \(RLIMIT_NPROC soft=1, hard=1.*ulimit -u' "${quick_sys[@]}" --json r.json
    else
        runner=(prlimit --as=20000000)
        refused 'cannot start the signal thread: the address-space limit was reached \(RLIMIT_AS soft=20000000.*ulimit -v' "${quick_sys[@]}" --json r.json
    fi
}

# Threads that run out of address space (prlimit --as) mid-run are never blamed on the process
# limit: the one line of the run's failure names RLIMIT_AS or prlimit --as.
c_threads_address_space() {
    command -v prlimit >/dev/null 2>&1 || { note "not applicable: no prlimit"; return; }
    runner=(prlimit --as=300000000)
    osc --no-save split --quick --form threads --tasks 4096
    expect_rc 2
    grep -q 'RLIMIT_NPROC' "$io/err" && problem "the address-space limit is blamed on RLIMIT_NPROC"
    grep -qE 'RLIMIT_AS|prlimit --as' "$io/err" || problem "stderr does not name the address-space limit: $(joined "$io/err" | cut -c 1-150)"
    note "exit $rc: $(grep -h -m 1 -E 'RLIMIT_AS|prlimit --as' "$io/err" | cut -c 1-120 | printable)"
}

# `report published:NAME` beside a run that holds none of the study's figures: one line naming
# the study's experiments and the run to give, exit 2, no page.
c_report_published_without_figures() {
    "$bin" --scripted -q --no-save example --json r.json >/dev/null 2>&1 || problem "no result file"
    refused 'published:qnx-tick: r\.json holds no figure of the study `qnx-tick` \(it reads tick-forms: give a run of `oscost study qnx-tick' report published:qnx-tick r.json -o page.html
}

# A push past a file holding a NUL character (which a PostgreSQL store cannot keep): named with
# the file before anything is stored, the others pushed, the summary naming what was not.
c_push_nul() {
    hist="$io/h.sqlite"
    edited_doc nul.json 'd["run_id"] = "00000000-0000-4000-8000-000000000001"; d["experiments"][0]["cases"][0]["description"] = "a\x00b"'
    cp "$io/r.json" good.json
    osc --history "$hist" history push nul.json good.json --to "$hist"
    expect_rc 2
    expect_one_line
    expect_err 'nul\.json: not a valid oscost/2 document: a NUL character \(\\u0000\) at line 1 column'
    grep -q '^pushed .* (good\.json)' "$io/out" || problem "the good file after it was not pushed"
    tail -n 1 "$io/out" | grep -q 'pushed 1, already there 0, 1 not read (not pushed: nul\.json)' ||
        problem "the summary does not name the file not pushed: $(tail -n 1 "$io/out" | printable)"
    note "exit $rc: $(tail -n 1 "$io/out" | cut -c 1-90 | printable)"
}

# A history server that accepts the connection and never answers: one line naming the wait
# and what to check, exit 2 (after its 30 s timeout), not "Resource temporarily unavailable".
c_history_server_silent() {
    local srv port
    python3 -c 'import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
__import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
while True:
    held.append(s.accept()[0])' "$io/port" &
    srv=$!
    wait_for 5 test -s "$io/port" || problem "the silent server never listened"
    port=$(<"$io/port")
    edited_doc r.json 'pass'
    snap_before=$(snapshot)
    osc history push r.json --to "postgres://oscost@127.0.0.1:$port/oscost"
    kill "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null
    expect_refused "postgres://oscost@127\.0\.0\.1:$port/oscost: no answer within 30 s \(is a PostgreSQL server listening there"
    grep -q 'temporarily unavailable' "$io/err" && problem "EAGAIN's words are shown"
}

# Runs of a fleet as files: NAME.json for host HOST, each a run of its own (its own id), with
# an optional Python edit of the document `d`.
host_doc() { # NAME HOST [PYTHON-STATEMENT]
    edited_doc "$1.json" "import uuid; d[\"run_id\"] = str(uuid.uuid4()); d[\"environment\"][\"fleet\"] = {\"host_name\": $(printf '%s' "$2" | python3 -c 'import json, sys; print(json.dumps(sys.stdin.read()))'), \"runner\": None}; ${3:-pass}"
}

# compare --group-by with a group name no column can carry, or groups sharing no figure.
c_group_by_refused() { # empty|newline|nothing-shared|same-id-differs
    host_doc b h002
    case "$1" in
        empty)
            host_doc a ''
            refused 'a\.json: its host \(environment\.fleet\.host_name\) is empty.*correct environment\.fleet\.host_name' compare --group-by host a.json b.json
            ;;
        newline)
            host_doc a $'h0\nevil'
            refused 'a\.json: its host `h0\\nevil` \(environment\.fleet\.host_name\) holds a control character' compare --group-by host a.json b.json
            ;;
        nothing-shared)
            host_doc a h001 '[c.__setitem__("id", "elsewhere." + c["id"]) for e in d["experiments"] for k in ("cases", "derived") for c in e[k]]'
            refused 'group-by host: h001 shares no figure with h002, so there is nothing to compare' compare --group-by host a.json b.json
            ;;
        same-id-differs)
            host_doc a h001
            python3 -c 'import json, sys
d = json.load(open("a.json"))
d["experiments"][0]["cases"][0]["median_ns"] += 1
json.dump(d, open("a-edited.json", "w"))'
            refused 'a\.json and a-edited\.json are both run .* but differ' compare --group-by host a.json a-edited.json b.json
            ;;
    esac
}

# One run given twice to compare --group-by is one run: never its own older run.
c_group_by_twice() {
    host_doc a h001
    host_doc b h002
    osc compare --group-by host a.json a.json b.json
    expect_rc 0
    head -n 1 "$io/out" | grep -q '^2 groups by host' || problem "first line: $(first_line "$io/out")"
    grep -q 'older runs not used' "$io/out" && problem "the run is counted as its own older run: $(grep 'older runs' "$io/out" | printable)"
    note "exit $rc: $(first_line "$io/out")"
}

# A Windows agent's ring renamed to Linux's id, beside a Linux run: named, and its row has no
# ratio or verdict (it would set a Critical Section against a pthread mutex one-for-one).
c_windows_case_under_linux_id() {
    local golden=$repo/tests/golden/windows-agent-wine.json
    [[ -r "$golden" ]] || { note "not applicable: no tests/golden/windows-agent-wine.json"; return; }
    python3 -c 'import json, sys
w = json.load(open(sys.argv[1]))
l = json.loads(json.dumps(w))
w["run_id"] = "3f1c2b9e-8a4d-4c1e-9b7a-2d5e6f708194"
l["run_id"] = "3f1c2b9e-8a4d-4c1e-9b7a-2d5e6f708195"
del l["environment"]["os"]
for e in w["experiments"]:
    for c in e["cases"]: c["id"] = c["id"].replace("lockring.cs.n8.", "lockring.mutex.n8.")
for e in l["experiments"]:
    for c in e["cases"]: c["id"] = c["id"].replace("lockring.cs.", "lockring.mutex.")
json.dump(w, open("win.json", "w"))
json.dump(l, open("lin.json", "w"))' "$golden" || { problem "cannot make the documents"; return; }
    osc compare lin.json win.json
    expect_rc 0
    grep -q 'Warning: B (win\.json), a run of Windows.*holds lockring\.mutex\.n8\.k1: a pthread mutex.s id' "$io/out" ||
        problem "the renamed ring is not named"
    grep -E '^│ lockring\.mutex\.n8\.k1 ' "$io/out" | grep -qE 'slower|faster|no difference' &&
        problem "the renamed ring still has a verdict"
    note "exit $rc: $(grep -h -o 'B (win.json), a run of Windows[^:]*holds lockring.mutex.n8.k1' "$io/out" | head -n 1 | printable)"
}

run_case fs-dev-fuse-not-fuse c_fs_dev_fuse_not_fuse
run_case nproc-1-signal-thread-unprivileged c_helper_thread_limit nproc
run_case as-20mb-signal-thread c_helper_thread_limit as
run_case as-300mb-split-4096-threads c_threads_address_space
run_case report-published-without-figures c_report_published_without_figures
run_case push-nul-character-goes-on c_push_nul
run_case history-server-never-answers c_history_server_silent
run_case group-by-empty-host c_group_by_refused empty
run_case group-by-newline-in-host c_group_by_refused newline
run_case group-by-nothing-shared c_group_by_refused nothing-shared
run_case group-by-same-id-differs c_group_by_refused same-id-differs
run_case group-by-run-given-twice c_group_by_twice
run_case import-negative-time c_import_refused 'case `example\.cost100` has median_ns -89120 ns, below zero by more than its loop overhead' 'd["experiments"][0]["cases"][0]["median_ns"] = -89120.0'
run_case import-negative-raw-sample c_import_refused 'has raw_ns -5000000 ns, below zero' 'd["experiments"][0]["cases"][0]["raw_ns"][3] = -5e6'
run_case import-nul-character c_import_refused 'a NUL character \(\\u0000\) at line 1' 'd["environment"]["cpu_model"] = "CPU\x00"'
run_case compare-windows-case-under-linux-id c_windows_case_under_linux_id

# The server stopped while the measuring process waits in a FUSE file call (every call of
# open-close goes to the server): the run still ends within 10 s of the first Ctrl-C.
c_fs_stopped_server_blocked_call() {
    local srv m t0 t1 wchan=""
    spawn main "$bin" fs --calls open-close --samples 400 --no-save -q
    wait_for 20 fuse_up || problem "the FUSE server never started"
    srv=$(fuse_server_of)
    m=$(measuring_of "$opid")
    sleep 0.5
    kill -s STOP "$srv"
    # Blocked in the call: the kernel waits for the server's answer. Called by wait_for.
    # shellcheck disable=SC2317
    blocked() {
        local t
        for t in /proc/"$m"/task/*; do
            wchan=$(cat "$t/wchan" 2>/dev/null)
            [[ "$wchan" == *fuse* || "$wchan" == request_wait_answer ]] && return 0
        done
        return 1
    }
    wait_for 5 blocked || problem "the measuring process was never seen waiting in a FUSE call"
    t0=$(now_us)
    kill -s INT "$opid"
    collect main
    t1=$(now_us)
    expect_rc 130
    (((t1 - t0) < 10000000)) || problem "ended $(((t1 - t0) / 1000)) ms after the first signal, not within 10 s"
    expect_no_fuse_leftovers "$opid"
    note "waiting in ${wchan:-?}; exit $rc after $(((t1 - t0) / 1000)) ms"
}
run_case fs-stopped-server-blocked-call c_fs_stopped_server_blocked_call

((n_cases)) || die "no case matches '$pattern'"
echo "fault matrix: $n_cases cases, $n_passed passed, $n_failed failed"
((n_failed == 0)) || exit 1
