#!/usr/bin/env bash
# The history stores at fleet scale, against the goals of docs/history.md:
#   1. `oscost history push` of 1 000 result documents into PostgreSQL (goal: 10 s or less, and
#      2 times or less PostgreSQL's own COPY of the same rows into the same tables), and the
#      same push again (goal: 0.5 s or less), the stored counts checked after each;
#   2. `oscost history list` over 10 000 runs, in PostgreSQL and in SQLite (goal: 1 s or less);
#   3. `oscost compare --group-by host` from each store of 10 000 runs of 100 hosts, no files
#      given (goal: 1 s or less and 300 MB or less), beside the least it can cost: the newest
#      run of each host chosen in SQL and those 100 documents fetched, decompressed and parsed (Python's
#      sqlite3, lz4 and json; psql for PostgreSQL), in the same sitting, the ratio printed.
# The documents are copies of one real result document (a quick run of the default suite, made
# here unless TEMPLATE=FILE names one), each with its own run_id, start time and one of 100 host
# names. The 9 000 runs that part 2 adds have their raw samples left out, but for the newest
# 1 000 (ten per host, so each host's newest has them for part 3) (`raw_ns` empty), which
# keeps the two stores somewhat smaller (`history list` reads no document); even so they take
# about 3 GB (PostgreSQL) and 4 GB (SQLite) of /tmp while it runs. PostgreSQL is a throw-away cluster (initdb in a temporary directory, its socket there,
# fsync as the server defaults), stopped and removed at the end, on failure too.
# Run it alone on the machine, from the repository root:
#   flock /tmp/oscost-bench.lock scripts/history-scale.sh
# REPEAT=N runs each `history list` N times (default 5) and prints the median and the range;
# ROUNDS=N rounds of part 1 (default 5); ONLY_PUSH=1 stops after part 1; ONLY_LIST=1 skips
# part 1 and fills both stores with 10 000 runs without raw samples.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
    echo "error: $*" >&2
    exit 2
}

repeat="${REPEAT:-5}"
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "REPEAT must be a positive number, got '$repeat'"
bin="${OSCOST_BIN:-}"
if [[ -z "$bin" ]]; then
    cargo build --release --locked -q
    bin=$PWD/target/release/oscost
fi
# Debian keeps initdb off PATH, under each version's directory: the newest (the glob's last).
initdbs=(/usr/lib/postgresql/*/bin/initdb)
pgbin=$(dirname "$(command -v initdb 2>/dev/null || echo "${initdbs[-1]}")")
[[ -x "$pgbin/initdb" && -x "$pgbin/pg_ctl" ]] || die "PostgreSQL's initdb and pg_ctl are not installed (apt-get install postgresql)"

tmp=$(mktemp -d /tmp/oscost-scale.XXXXXX)
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

template="${TEMPLATE:-}"
if [[ -z "$template" ]]; then
    template=$tmp/template.json
    echo "== a quick run of the default suite, the template document"
    "$bin" --quick --quiet --no-save --json "$template" >/dev/null
fi
[[ -f "$template" ]] || die "TEMPLATE $template: no such file"

echo "== the throw-away PostgreSQL cluster"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${runas[@]}" "$pgbin/initdb" -D "$tmp/data" -U oscost --auth=trust -E UTF8 >/dev/null
"${runas[@]}" "$pgbin/pg_ctl" -D "$tmp/data" -l "$tmp/log" -w -s \
    -o "-c listen_addresses='' -c unix_socket_directories='$tmp' -p $port" start
started=1
url="postgres://oscost@/postgres?host=$tmp&port=$port"

# Writes documents FROM..TO-1 of the series into DIR (emptied first); without raw samples when
# a fourth argument is given.
make_docs() {
    python3 - "$template" "$1" "$2" "$3" "${4:-}" <<'EOF'
import json, os, sys, uuid
template, first, last, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
doc = json.load(open(template))
if sys.argv[5]:
    for e in doc["experiments"]:
        for c in e["cases"]:
            c["raw_ns"] = []
for f in os.listdir(out):
    os.unlink(os.path.join(out, f))
for n in range(first, last):
    doc["run_id"] = str(uuid.uuid5(uuid.NAMESPACE_OID, f"oscost-scale/{n}"))
    doc["started_at"] = "2026-%02d-%02dT%02d:%02d:00Z" % (1 + n // 40000 % 12, 1 + n // 1440 % 28, n // 60 % 24, n % 60)
    doc["environment"]["hostname"] = "host-%03d" % (n % 100)
    with open(os.path.join(out, "%05d.json" % n), "w") as f:
        json.dump(doc, f)
EOF
}

mkdir -p "$tmp/docs"
make_docs 0 1000 "$tmp/docs" "${ONLY_LIST:+no-raw}"
size=$(du -k "$tmp/docs/00000.json" | cut -f1)
figures=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(len(e["cases"])+len(e["derived"]) for e in d["experiments"]))' "$template")
echo "template: $figures figures, ${size} KiB a document"

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$2"; }

sqlite=$tmp/history.sqlite3
psql=$(command -v psql || echo "$pgbin/psql")
if [[ -n "${ONLY_LIST:-}" ]]; then
    "$bin" history push --to "$url" "$tmp"/docs/*.json | tail -1
    "$bin" history push --to "$sqlite" "$tmp"/docs/*.json | tail -1
else
echo "== 1. push 1000 documents into PostgreSQL, beside PostgreSQL's own COPY of the same rows"
# The reference: a second database with the same tables (made by oscost), filled by psql's
# \copy, in binary, of exactly the rows the push stored (taken from the first push's tables),
# in one transaction, files read by psql as the push reads its own. Rounds interleave: push,
# re-push, counts checked, then the reference; the tables emptied before each.
tables="runs documents run_hosts experiments cases"
"$psql" -q -d "$url" -c "CREATE DATABASE reference"
ref_url="postgres://oscost@/reference?host=$tmp&port=$port"
"$bin" history list --history "$url" >/dev/null
"$bin" history list --history "$ref_url" >/dev/null
empty() { "$psql" -q -d "$1" -c "TRUNCATE ${tables// /, }"; }
count() { "$psql" -At -d "$1" -c "SELECT (SELECT count(*) FROM runs) || ' runs, ' || (SELECT count(*) FROM documents) || ' documents, ' || (SELECT count(*) FROM cases) || ' case rows'"; }
want="1000 runs, 1000 documents, $((1000 * figures)) case rows"
pushes=() repushes=() copies=() cpus=()
rounds="${ROUNDS:-5}"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number, got '$rounds'"
for round in $(seq "$rounds"); do
    empty "$url"
    "$psql" -q -d "$url" -c "CHECKPOINT"
    t0=$(now)
    last=$(/usr/bin/time -f '%U %S' -o "$tmp/cpu" "$bin" history push --to "$url" "$tmp"/docs/*.json | tail -1)
    t1=$(now)
    pushes+=("$(elapsed "$t0" "$t1")")
    cpus+=("$(awk '{ printf "%.2f", $1 + $2 }' "$tmp/cpu")")
    got=$(count "$url")
    [[ "$got" == "$want" ]] || die "after the push: $got, not $want ($last)"
    t0=$(now)
    again=$("$bin" history push --to "$url" "$tmp"/docs/*.json | tail -1)
    t1=$(now)
    repushes+=("$(elapsed "$t0" "$t1")")
    [[ "$again" == "pushed 0, already there 1000 "* ]] || die "the re-push said: $again"
    got=$(count "$url")
    [[ "$got" == "$want" ]] || die "after the re-push: $got, not $want"
    if ((round == 1)); then
        for t in $tables; do
            "$psql" -q -d "$url" -c "\\copy $t TO '$tmp/$t.copy' (FORMAT binary)"
        done
        echo "rows as stored: $(du -ch "$tmp"/*.copy | tail -1 | cut -f1) in COPY's binary form"
    fi
    empty "$ref_url"
    "$psql" -q -d "$ref_url" -c "CHECKPOINT"
    script=$(for t in $tables; do echo "\\copy $t FROM '$tmp/$t.copy' (FORMAT binary)"; done)
    t0=$(now)
    "$psql" -q -1 -v ON_ERROR_STOP=1 -d "$ref_url" <<<"$script"
    t1=$(now)
    copies+=("$(elapsed "$t0" "$t1")")
    got=$(count "$ref_url")
    [[ "$got" == "$want" ]] || die "after the reference COPY: $got, not $want"
    echo "round $round: push ${pushes[-1]} s (oscost's CPU ${cpus[-1]} s), re-push ${repushes[-1]} s, COPY ${copies[-1]} s ($got each)"
done
python3 - "${pushes[*]}" "${repushes[*]}" "${copies[*]}" "${cpus[*]}" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import statistics, sys
push, again, copy, cpu = (list(map(float, a.split())) for a in sys.argv[1:5])
m = statistics.median
print(f"push of 1000: median {m(push):.2f} s (range {min(push):.2f} .. {max(push):.2f}; goal <= 10 s); "
      f"oscost's own CPU: median {m(cpu):.2f} s")
print(f"PostgreSQL's COPY of the same rows: median {m(copy):.2f} s (range {min(copy):.2f} .. {max(copy):.2f})")
print(f"push / COPY: median of the rounds' ratios {m([p / c for p, c in zip(push, copy)]):.2f} (goal <= 2)")
print(f"re-push of the same 1000: median {m(again):.2f} s (range {min(again):.2f} .. {max(again):.2f}; goal <= 0.5 s)")
print(f"over {len(push)} rounds; load average at the end {sys.argv[5]}")
PY
[[ -n "${ONLY_PUSH:-}" ]] && exit 0
t0=$(now)
"$bin" history push --to "$sqlite" "$tmp"/docs/*.json | tail -1
t1=$(now)
echo "the same 1000 into SQLite: $(elapsed "$t0" "$t1") s"
fi

echo "== 2. up to 10 000 runs in each store"
for batch in 1 2 3 4 5 6 7 8 9; do
    make_docs $((batch * 1000)) $(((batch + 1) * 1000)) "$tmp/docs" "$( ((batch == 9)) || echo no-raw)"
    "$bin" history push --to "$url" "$tmp"/docs/*.json | tail -1
    "$bin" history push --to "$sqlite" "$tmp"/docs/*.json | tail -1
done
echo "disk: $(du -sh "$tmp/data" | cut -f1) PostgreSQL, $(du -sh "$sqlite" | cut -f1) SQLite"
rm -rf "$tmp/docs"

# Runs `history list` REPEAT times on the store; prints the median and the range, in s.
time_list() {
    local times=() t0 t1 runs
    for _ in $(seq "$repeat"); do
        t0=$(now)
        runs=$("$bin" history list --all-runs --history "$1" | wc -l)
        t1=$(now)
        times+=("$(elapsed "$t0" "$t1")")
    done
    python3 - "$2" "$runs" "${times[@]}" <<'EOF'
import statistics, sys
name, lines, times = sys.argv[1], int(sys.argv[2]), sorted(map(float, sys.argv[3:]))
print(f"history list, {name}: {lines - 2} runs listed, median {statistics.median(times):.2f} s "
      f"(range {times[0]:.2f} .. {times[-1]:.2f} s over {len(times)} runs; goal <= 1 s)")
EOF
}
time_list "$url" PostgreSQL
time_list "$sqlite" SQLite

echo "== 3. compare --group-by host from each store, no files given"
# Runs the group-by REPEAT times; prints the median wall time and peak RSS beside the
# reference's median wall time, and their ratio.
time_group_by() {
    local walls=() refs=() rss=0 t0 t1
    for _ in $(seq "$repeat"); do
        /usr/bin/time -f '%e %M' -o "$tmp/t" "$bin" compare --group-by host --history "$1" \
            --quiet --json "$tmp/fleet.json" >/dev/null
        read -r wall kib <"$tmp/t"
        walls+=("$wall")
        ((kib > rss)) && rss=$kib
        t0=$(now)
        "${@:3}" >/dev/null
        t1=$(now)
        refs+=("$(elapsed "$t0" "$t1")")
    done
    python3 - "$2" "$rss" "$tmp/fleet.json" "${walls[@]}" -- "${refs[@]}" <<'PY'
import json, statistics, sys
name, rss, fleet = sys.argv[1], int(sys.argv[2]), json.load(open(sys.argv[3]))
cut = sys.argv.index("--")
walls, refs = list(map(float, sys.argv[4:cut])), list(map(float, sys.argv[cut + 1:]))
w, r = statistics.median(walls), statistics.median(refs)
older = sum(g["older_runs"] for g in fleet["groups"])
print(f"group-by host, {name}: {len(fleet['groups'])} hosts ({older} older runs counted), "
      f"median {w:.2f} s (range {min(walls):.2f} .. {max(walls):.2f}), peak {rss / 1024:.0f} MB "
      f"(goals <= 1 s, <= 300 MB); newest per host in SQL + fetch + parse: median {r:.2f} s; "
      f"ratio {w / r:.2f}")
PY
}
# The newest run of each host, chosen in SQL, and its document (LZ4 with its size first, as
# Python's lz4.block reads it) fetched, decompressed and parsed.
lz4py=$(for p in python3 /usr/bin/python3; do "$p" -c 'import lz4.block' 2>/dev/null && echo "$p" && break; done)
[[ -n "$lz4py" ]] || die "the reference needs Python's lz4 (apt-get install python3-lz4)"
newest_sql="SELECT body FROM documents WHERE run_id IN (SELECT (SELECT r.run_id FROM runs r \
JOIN run_hosts x ON x.run_id = r.run_id WHERE x.hostname = h.hostname \
ORDER BY r.started_at DESC LIMIT 1) FROM (SELECT DISTINCT hostname FROM run_hosts) h)"
time_group_by "$url" PostgreSQL "$lz4py" -c '
import json, lz4.block, subprocess, sys
out = subprocess.run([sys.argv[1], "-At", "-d", sys.argv[2], "-c", sys.argv[3]],
                     check=True, capture_output=True, text=True).stdout
docs = [json.loads(lz4.block.decompress(bytes.fromhex(l[2:]))) for l in out.splitlines() if l]
assert len(docs) == 100, len(docs)' "$psql" "$url" "$newest_sql"
time_group_by "$sqlite" SQLite "$lz4py" -c '
import json, lz4.block, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
docs = [json.loads(lz4.block.decompress(d)) for (d,) in db.execute(sys.argv[2])]
assert len(docs) == 100, len(docs)' "$sqlite" "$newest_sql"
