#!/usr/bin/env bash
# The Ansible role's slot computation (ansible/roles/oscost/tasks/slots.yml) at fleet scale:
# the controller's CPU time per host for 100, 400 and 1000 hosts of a local-connection
# inventory (each host is this machine; nothing is copied or run on it), beside the same play
# with a task that does nothing but run on each host (`ansible.builtin.meta: noop` would not
# fork; a `set_fact` of a constant does), which is the least any per-host task costs. The
# ratio of the two per host should stay flat as the hosts grow: the slots are worked out once
# per play, not by each host over every other host.
# Run it alone: flock /work/bench.lock scripts/fleet-slots-scale.sh [HOSTS...]
# FORKS=N sets Ansible's forks (default 50, as docs/fleet.md recommends).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v ansible-playbook >/dev/null || { echo "fleet-slots-scale: ansible-playbook missing (apt-get install ansible-core)" >&2; exit 2; }
sizes=("$@")
((${#sizes[@]})) || sizes=(100 400 1000)
forks=${FORKS:-50}
tmp=$(mktemp -d /tmp/oscost-slots.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
role=$PWD/ansible/roles/oscost/tasks/slots.yml

cat >"$tmp/slots.yml" <<YML
- hosts: oscost
  gather_facts: false
  tasks:
    - ansible.builtin.include_tasks: $role
YML
cat >"$tmp/floor.yml" <<'YML'
- hosts: oscost
  gather_facts: false
  tasks:
    - ansible.builtin.set_fact:
        oscost_floor: 0
YML

# CPU seconds (user + system, the controller and every worker it forked) of one play.
cpu() {
    /usr/bin/time -f '%U %S' -o "$tmp/t" env ANSIBLE_FORKS="$forks" ANSIBLE_NOCOLOR=1 \
        ansible-playbook -i "$tmp/inv.ini" "$1" >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; exit 1; }
    awk '{printf "%.2f", $1 + $2}' "$tmp/t"
}

printf '%6s %14s %14s %12s %12s %8s\n' hosts "slots cpu s" "floor cpu s" "slots/host" "floor/host" ratio
for n in "${sizes[@]}"; do
    python3 - "$n" "$tmp/inv.ini" <<'PY'
import sys
n, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as f:
    f.write("[oscost]\n")
    for i in range(n):
        # Four hardware groups and a tenth of the hosts with none.
        hw = "" if i % 10 == 9 else f" oscost_hardware=box{i % 4}"
        f.write(f"h{i:04} ansible_connection=local ansible_python_interpreter=/usr/bin/python3{hw}\n")
PY
    s=$(cpu "$tmp/slots.yml")
    f=$(cpu "$tmp/floor.yml")
    python3 -c "import sys; n,s,f=int(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]); print('%6d %14.2f %14.2f %12.4f %12.4f %8.2f' % (n,s,f,s/n,f/n,s/f))" "$n" "$s" "$f"
done
