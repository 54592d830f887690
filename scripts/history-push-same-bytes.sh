#!/usr/bin/env bash
# Two oscost binaries push the same result files into the same kind of store; what each stored
# must be the same, byte for byte: the check that a change to the push's data path (how rows
# are encoded, compressed and sent) changed nothing stored. No timing: run it beside
# scripts/history-scale.sh's A/B, not instead of it.
#
#   scripts/history-push-same-bytes.sh OLD_BIN NEW_BIN
#
# The files: 250 copies of two of the repository's documents (the suite's, over LZ4's 64 KiB
# table switch, and the golden oscost/2 one, under it), each with its own run_id, every other
# one with a host name, one in five pretty-printed, and the golden oscost/1 document (stored
# in today's form under its derived id). Each binary pushes them twice (the second push must
# store nothing) into its own database of a throw-away PostgreSQL cluster (initdb in a
# temporary directory, its socket there, removed at the end, failure included) and into its
# own SQLite file. Every table is then dumped, ordered, `saved_at` left out: PostgreSQL's in
# COPY's binary form (plus the cases in the order they were inserted), SQLite's as Python's
# sqlite3 reads them (values with their storage classes); each pair compared. Last line:
#   same bytes: N of N tables identical
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
    echo "error: $*" >&2
    exit 2
}

[[ $# == 2 ]] || die "usage: $0 OLD_BIN NEW_BIN"
old=$(realpath "$1") new=$(realpath "$2")
[[ -x "$old" && -x "$new" ]] || die "both binaries must exist and be executable"
# Debian keeps initdb off PATH, under each version's directory: the newest (the glob's last).
initdbs=(/usr/lib/postgresql/*/bin/initdb)
pgbin=$(dirname "$(command -v initdb 2>/dev/null || echo "${initdbs[-1]}")")
[[ -x "$pgbin/initdb" && -x "$pgbin/pg_ctl" ]] || die "PostgreSQL's initdb and pg_ctl are not installed (apt-get install postgresql)"
psql=$(command -v psql || echo "$pgbin/psql")

tmp=$(mktemp -d /tmp/oscost-same-bytes.XXXXXX)
runas=()
if [[ $(id -u) == 0 ]]; then
    # The server refuses to run as root.
    chown postgres: "$tmp"
    runas=(runuser -u postgres --)
fi
started=
cleanup() {
    if [[ -n "$started" ]]; then
        "${runas[@]}" "$pgbin/pg_ctl" -D "$tmp/data" -m fast -w -s stop || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
export XDG_DATA_HOME=$tmp/xdg
unset OSCOST_HISTORY OSCOST_HISTORY_FILE

mkdir "$tmp/docs"
python3 - "$tmp/docs" <<'EOF'
import json, os, sys, uuid
out = sys.argv[1]
big = json.load(open("crates/report/tests/fixtures/suite.json"))
small = json.load(open("tests/golden/oscost-2.json"))
for n in range(250):
    d = json.loads(json.dumps(big if n % 3 else small))
    d["run_id"] = str(uuid.uuid5(uuid.NAMESPACE_OID, f"oscost-same-bytes/{n}"))
    if n % 2:
        d["environment"]["hostname"] = "host-%03d" % (n % 7)
    with open(os.path.join(out, "%05d.json" % n), "w") as f:
        json.dump(d, f, indent=None if n % 5 else 1)
EOF
cp tests/golden/oscost-1.json "$tmp/docs/oscost-1.json"
files=$(find "$tmp/docs" -name '*.json' | wc -l)

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${runas[@]}" "$pgbin/initdb" -D "$tmp/data" -U oscost --auth=trust -E UTF8 >/dev/null
"${runas[@]}" "$pgbin/pg_ctl" -D "$tmp/data" -l "$tmp/log" -w -s \
    -o "-c listen_addresses='' -c unix_socket_directories='$tmp' -p $port" start
started=1

queries=(
    "runs:SELECT run_id, started_at, oscost_version, kernel, cpu_model, env_fingerprint, command_line, case_count, document FROM runs ORDER BY run_id"
    "documents:SELECT * FROM documents ORDER BY run_id"
    "run_hosts:SELECT * FROM run_hosts ORDER BY run_id"
    "experiments:SELECT * FROM experiments ORDER BY run_id, position"
    "cases:SELECT * FROM cases ORDER BY run_id, case_id"
)
for side in old new; do
    bin=${!side}
    "$psql" -q -h "$tmp" -p "$port" -U oscost -d postgres -c "CREATE DATABASE $side"
    for to in "postgres://oscost@/$side?host=$tmp&port=$port" "$tmp/$side.sqlite3"; do
        first=$("$bin" history push --to "$to" "$tmp"/docs/*.json | tail -1)
        [[ "$first" == "pushed $files, already there 0 "* ]] || die "$side: the push said: $first"
        again=$("$bin" history push --to "$to" "$tmp"/docs/*.json | tail -1)
        [[ "$again" == "pushed 0, already there $files "* ]] || die "$side: the push again said: $again"
    done
    for q in "${queries[@]}" "cases-as-inserted:SELECT run_id, case_id FROM cases"; do
        "$psql" -q -h "$tmp" -p "$port" -U oscost -d "$side" \
            -c "\\copy (${q#*:}) TO '$tmp/$side.${q%%:*}.copy' (FORMAT binary)"
    done
    python3 - "$tmp/$side.sqlite3" "$tmp/$side" "${queries[@]}" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for q in sys.argv[3:]:
    table, sql = q.split(":", 1)
    # repr tells the storage classes apart: 1, 1.0, '1', b'1' and None.
    with open(f"{sys.argv[2]}.{table}.sqlite", "w") as f:
        f.write(repr(db.execute(sql).fetchall()))
EOF
done

same=0 total=0
for f in "$tmp"/old.*.copy "$tmp"/old.*.sqlite; do
    name=${f#"$tmp"/old.}
    total=$((total + 1))
    if cmp -s "$f" "$tmp/new.$name"; then
        same=$((same + 1))
        echo "$name: identical ($(stat -c %s "$f") bytes)"
    else
        echo "$name: DIFFERENT"
    fi
done
echo "same bytes: $same of $total tables identical"
((same == total))
