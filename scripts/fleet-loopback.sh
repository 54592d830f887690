#!/usr/bin/env bash
# The fleet for real on one machine: sshd on loopback addresses 127.0.0.2.. (one sshd per
# "host", a key made for the test), the Ansible playbook in ansible/ played twice against
# them with a quick experiment, every result pushed into one store, then checked: one run per
# host, nothing twice, `history list` showing them, `compare --group-by host` one column per
# host. A second scenario kills one host's sshd mid-play and checks the others' runs are kept.
#
#   scripts/fleet-loopback.sh                   # store: a throw-away PostgreSQL cluster
#   scripts/fleet-loopback.sh --store sqlite    # store: a SQLite file
#   options: --hosts N (default 3), --args 'EXPERIMENT OPTIONS' (default 'syscall --quick'),
#            --no-kill (skip the second scenario), --no-build (use target/release/oscost as
#            it is), --parallel (the hosts do not take turns), --timing (the first play's
#            controller CPU time and wall time against the slowest host's run)
#
# Needs root (it installs ansible-core, openssh-server and postgresql when missing, and logs
# in as root over the loopback sshds, by key only). Everything it starts (sshd, the cluster)
# is stopped and everything it makes removed when it ends, failure included. Last line:
#   fleet: hosts H, runs R, duplicates D
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

store=postgres
hosts=3
args="syscall --quick"
kill_scenario=1
inside_pg=0
no_build=0
parallel=0
timing=0
while (($#)); do
  case "$1" in
    --store) store=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --args) args=$2; shift 2 ;;
    --no-kill) kill_scenario=0; shift ;;
    --no-build) no_build=1; shift ;;
    --parallel) parallel=1; shift ;;
    --timing) timing=1; shift ;;
    --inside-pg) inside_pg=1; shift ;;
    *) echo "fleet-loopback: unknown option $1 (see the top of $0)" >&2; exit 2 ;;
  esac
done
case "$store" in postgres|sqlite) ;; *)
  echo "fleet-loopback: --store $store: give postgres or sqlite" >&2; exit 2 ;;
esac
if ! [[ $hosts =~ ^[0-9]+$ ]] || ((hosts < 2 || hosts > 200)); then
  echo "fleet-loopback: --hosts $hosts: give 2..200" >&2; exit 2
fi
if ((EUID != 0)); then
  echo "fleet-loopback: run as root (it starts sshds that take root logins by key)" >&2
  exit 2
fi

if ((!inside_pg)); then
  need=()
  command -v ansible-playbook >/dev/null 2>&1 || need+=(ansible-core)
  [[ -x /usr/sbin/sshd ]] || need+=(openssh-server)
  if [[ $store == postgres ]] && ! command -v pg_virtualenv >/dev/null 2>&1; then
    need+=(postgresql)
  fi
  if ((${#need[@]})); then
    echo "== installing ${need[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
  if [[ $store == postgres ]]; then
    # pg_virtualenv makes a throw-away cluster, runs us inside it with PG* set, and drops
    # the cluster when we end, however we end.
    again=()
    ((kill_scenario)) || again+=(--no-kill)
    ((no_build)) && again+=(--no-build)
    ((parallel)) && again+=(--parallel)
    ((timing)) && again+=(--timing)
    exec pg_virtualenv "$0" --store postgres --hosts "$hosts" --args "$args" \
      ${again[@]+"${again[@]}"} --inside-pg
  fi
fi

oscost=$repo/target/release/oscost
tmp=$(mktemp -d /tmp/oscost-fleet.XXXXXX)
chmod 700 "$tmp"
sshd_pids=()
made_run_sshd=0

# Kills a process and its descendants, by id, deepest first.
kill_tree() {
  local pid=$1 child
  for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do kill_tree "$child"; done
  kill "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  for pid in "${sshd_pids[@]}"; do kill_tree "$pid"; done
  for pid in "${sshd_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if ((made_run_sshd)); then rmdir /run/sshd 2>/dev/null || true; fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

fail() {
  echo "fleet-loopback: FAILED: $*" >&2
  exit 1
}

# --- the hosts: one sshd per loopback address, a port free on all of them
mkdir -p "$tmp/ssh" "$tmp/cp" "$tmp/results" "$tmp/ansible"
ssh-keygen -q -t ed25519 -N '' -f "$tmp/ssh/id" -C oscost-fleet-test
ssh-keygen -q -t ed25519 -N '' -f "$tmp/ssh/host_key" -C oscost-fleet-host
cp "$tmp/ssh/id.pub" "$tmp/ssh/authorized_keys"
if [[ ! -d /run/sshd ]]; then mkdir -p /run/sshd && made_run_sshd=1; fi
port=
for p in $(seq 2222 2322); do
  if ! ss -Hltn "sport = :$p" | grep -q .; then port=$p; break; fi
done
[[ -n $port ]] || fail "no free port in 2222..2322 for the loopback sshds"

addr() { echo "127.0.0.$(($1 + 1))"; }
for i in $(seq 1 "$hosts"); do
  cat >"$tmp/ssh/sshd.$i.conf" <<EOF
ListenAddress $(addr "$i"):$port
HostKey $tmp/ssh/host_key
PidFile $tmp/ssh/sshd.$i.pid
AuthorizedKeysFile $tmp/ssh/authorized_keys
PermitRootLogin prohibit-password
AllowUsers root
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 200
Subsystem sftp internal-sftp
EOF
  /usr/sbin/sshd -D -f "$tmp/ssh/sshd.$i.conf" -E "$tmp/ssh/sshd.$i.log" &
  sshd_pids+=($!)
done
ssh_opts=(-i "$tmp/ssh/id" -p "$port" -o BatchMode=yes -o StrictHostKeyChecking=no
  -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5)
for i in $(seq 1 "$hosts"); do
  for _ in $(seq 50); do
    ssh "${ssh_opts[@]}" "root@$(addr "$i")" true 2>/dev/null && continue 2
    sleep 0.1
  done
  fail "sshd on $(addr "$i"):$port does not answer (its log: $(tail -2 "$tmp/ssh/sshd.$i.log"))"
done
echo "== $hosts loopback hosts: sshd on 127.0.0.2..$(addr "$hosts"), port $port"

# They share this machine's hardware: oscost_hardware makes them take turns.
{
  echo "[oscost]"
  for i in $(seq 1 "$hosts"); do
    echo "loop$i ansible_host=$(addr "$i") oscost_remote_dir=$tmp/hosts/loop$i"
  done
  echo "[oscost:vars]"
  echo "ansible_port=$port"
  echo "ansible_user=root"
  echo "ansible_ssh_private_key_file=$tmp/ssh/id"
  echo "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'"
  echo "ansible_python_interpreter=/usr/bin/python3"
  ((parallel)) || echo "oscost_hardware=this-machine"
} >"$tmp/inventory.ini"

export ANSIBLE_HOME=$tmp/ansible ANSIBLE_LOCAL_TEMP=$tmp/ansible/tmp
export ANSIBLE_REMOTE_TEMP=$tmp/ansible/remote ANSIBLE_SSH_CONTROL_PATH_DIR=$tmp/cp
export ANSIBLE_HOST_KEY_CHECKING=False ANSIBLE_RETRY_FILES_ENABLED=False ANSIBLE_NOCOLOR=1
export ANSIBLE_FORKS=$((hosts > 5 ? hosts : 5)) PYTHONUNBUFFERED=1

echo "== the playbook, syntax-checked"
ansible-playbook -i "$tmp/inventory.ini" --syntax-check ansible/fleet.yml >/dev/null

# --- the store
if [[ $store == postgres ]]; then
  # The connection string carries the throw-away cluster's password: it goes through a file
  # and the environment, never the command line or the output.
  url="postgres://$PGUSER:$PGPASSWORD@$PGHOST:$PGPORT/$PGDATABASE"
  psql -qc "CREATE DATABASE oscost_kill" >/dev/null
  url_kill="postgres://$PGUSER:$PGPASSWORD@$PGHOST:$PGPORT/oscost_kill"
  push_with_import=false
  "$oscost" history push --help >/dev/null 2>&1 ||
    fail "this build has no \`history push\` (the PostgreSQL store); try --store sqlite"
else
  url=$tmp/store.sqlite3
  url_kill=$tmp/store-kill.sqlite3
  # A build without `history push` imports into a SQLite store instead: the same effect.
  if "$oscost" history push --help >/dev/null 2>&1; then push_with_import=false; else push_with_import=true; fi
fi

# Reads a store through `oscost`: the store's URL in OSCOST_HISTORY for PostgreSQL, --history
# for a SQLite file.
store_cmd() {
  local s=$1; shift
  if [[ $store == postgres ]]; then OSCOST_HISTORY=$s "$oscost" "$@"; else "$oscost" --history "$s" "$@"; fi
}

# Plays the fleet with campaign $1 into store $2; the play's exit status is returned. The
# first play builds oscost on the controller (cargo build --release), the others reuse it.
built=false
((no_build)) && built=true
play() {
  local campaign=$1 s=$2 build=true
  [[ $built == true ]] && build=false
  built=true
  python3 - "$tmp/vars.$campaign.json" "$campaign" "$s" "$args" "$tmp/results/$campaign" \
    "$push_with_import" "$build" <<'EOF'
import json, os, sys
path, campaign, store, args, results, imp, build = sys.argv[1:]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
with os.fdopen(fd, "w") as f:
    json.dump({"oscost_campaign": campaign, "oscost_store": store, "oscost_args": args,
               "oscost_results_dir": results, "oscost_push_with_import": imp == "true",
               "oscost_build": build == "true"}, f)
EOF
  if ((timing)) && [[ ! -e $tmp/time.$campaign ]]; then
    # The controller's own CPU time: ansible-playbook and its ssh clients. oscost runs under
    # the hosts' sshds, not under it, so none of the measuring is counted.
    /usr/bin/time -f '%U %S %e' -o "$tmp/time.$campaign" \
      ansible-playbook -i "$tmp/inventory.ini" ansible/fleet.yml -e "@$tmp/vars.$campaign.json"
  else
    ansible-playbook -i "$tmp/inventory.ini" ansible/fleet.yml -e "@$tmp/vars.$campaign.json"
  fi
}

# Hosts, runs and duplicates in store $1: from `compare --group-by host --json`, whose groups
# are the hosts and whose older_runs count a host's runs beyond one.
census() {
  store_cmd "$1" compare --group-by host --json - --quiet | python3 -c '
import json, sys
f = json.load(sys.stdin)
older = sum(g["older_runs"] for g in f["groups"])
print(len(f["groups"]), len(f["groups"]) + older, older)'
}

# --- scenario 1: two plays, the second adds nothing
for n in 1 2; do
  echo "== play $n of 2 (campaign c1, $args)"
  play c1 "$url" >"$tmp/play$n.log" 2>&1 || { cat "$tmp/play$n.log"; fail "play $n failed"; }
  grep -E '^(PLAY RECAP|loop[0-9]+ +:|localhost +:)' "$tmp/play$n.log" | sed 's/^/   /'
done
if ((timing)); then
  read -r user sys wall <"$tmp/time.c1"
  python3 - "$user" "$sys" "$wall" "$hosts" "$tmp"/results/c1/*.json <<'EOF'
import json, sys
user, system, wall, hosts = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
runs = [json.load(open(f))["environment"]["load"]["wall_s"] for f in sys.argv[5:]]
cpu = user + system
print(f"timing: hosts {hosts}, controller CPU {cpu:.1f} s ({cpu / hosts:.2f} s per host), "
      f"play wall {wall:.1f} s, slowest host's run {max(runs):.1f} s "
      f"(median {sorted(runs)[len(runs) // 2]:.1f} s), play/slowest {wall / max(runs):.1f}x")
EOF
fi
if ((!parallel)); then
  # Sharing hardware, they must have taken turns: each run starts after the one before ended
  # (start times are to the second, so a run may start in the second the previous one ended).
  python3 - "$tmp"/results/c1/*.json <<'EOF' || fail "the hosts sharing hardware did not take turns"
import datetime, json, sys
runs = []
for f in sys.argv[1:]:
    d = json.load(open(f))
    start = datetime.datetime.fromisoformat(d["started_at"].replace("Z", "+00:00")).timestamp()
    runs.append((start, d["environment"]["load"]["wall_s"], d["environment"]["fleet"]["host_name"]))
runs.sort()
for (s0, w0, h0), (s1, _, h1) in zip(runs, runs[1:]):
    if s1 < s0 + w0 - 1.0:
        sys.exit(f"{h1} started {s1 - s0:.0f} s after {h0}, whose run took {w0:.1f} s")
print("   the hosts took turns: " + ", ".join(h for _, _, h in runs))
EOF
fi
grep -q 'loop1.*changed=0' "$tmp/play2.log" ||
  fail "the second play changed something on loop1 (it should find its result and stop)"

read -r h r d < <(census "$url")
list=$(store_cmd "$url" history list)
echo "$list" | tail -1 | sed 's/^/   history list: /'
echo "$list" | grep -q "^$r runs\? in" || echo "$list" | tail -1 | grep -q "$r run" ||
  fail "history list does not count $r runs"
if [[ $store == postgres ]]; then
  for i in $(seq 1 "$hosts"); do
    echo "$list" | grep -qw "loop$i" || fail "history list does not show host loop$i"
  done
fi
table=$(store_cmd "$url" compare --group-by host)
header=$(echo "$table" | grep -m1 '│ figure')
cols=$(echo "$header" | grep -o 'loop[0-9]*' | wc -l)
echo "   compare --group-by host: $cols host columns ($(echo "$header" | grep -o 'loop[0-9]*' | tr '\n' ' '))"
((cols == hosts)) || fail "compare --group-by host shows $cols host columns, not $hosts"
((h == hosts && r == hosts && d == 0)) ||
  fail "the store holds $h hosts, $r runs, $d duplicates after two plays (expected $hosts, $hosts, 0)"

# --- scenario 2: one host's sshd killed mid-play
if ((kill_scenario)); then
  last=loop$hosts
  echo "== play with $last's sshd killed once the first host's run has begun (campaign c2)"
  built=true
  play c2 "$url_kill" >"$tmp/play-kill.log" 2>&1 &
  play_pid=$!
  for _ in $(seq 600); do
    grep -q 'round 1 of' "$tmp/play-kill.log" && break
    kill -0 "$play_pid" 2>/dev/null || break
    sleep 0.2
  done
  grep -q 'round 1 of' "$tmp/play-kill.log" || { cat "$tmp/play-kill.log"; fail "the play never reached its first run"; }
  kill_tree "${sshd_pids[$((hosts - 1))]}"
  rc=0
  wait "$play_pid" || rc=$?
  grep -E '^(loop[0-9]+ +:|localhost +:)' "$tmp/play-kill.log" | sed 's/^/   /'
  ((rc != 0)) || fail "the play with an unreachable host exited 0 (it should say it failed)"
  grep -q "no result from $last" "$tmp/play-kill.log" || fail "the play did not name $last as lost"
  read -r kh kr kd < <(census "$url_kill")
  ((kh == hosts - 1 && kr == hosts - 1 && kd == 0)) ||
    fail "after losing $last the store holds $kh hosts, $kr runs, $kd duplicates (expected $((hosts - 1)), $((hosts - 1)), 0)"
  echo "   $last lost (play exit $rc), the other $kh hosts' runs kept: $kr runs, $kd duplicates"
fi

echo "fleet: hosts $h, runs $r, duplicates $d"
