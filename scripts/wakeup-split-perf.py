#!/usr/bin/env python3
"""An independent split of timer wake-up lateness, for any program that sleeps on hrtimers.

Runs COMMAND under `perf record` on one CPU (CLOCK_MONOTONIC timestamps) with the timer,
scheduler, syscall-exit and interrupt tracepoints, then splits each wake-up of the threads
named THREAD (their `comm`) that slept in clock_nanosleep:

  slack      deadline (the timer's soft expiry) to its programmed expiry, capped at the run
  interrupt  that expiry to the interrupt's run of the timer (hrtimer_expire_entry's now)
  to_switch  the interrupt to the switch into the thread (sched_switch)
  to_return  the switch to the thread's return from clock_nanosleep (sys_exit)

the same parts as `oscost wakeup`'s traced pass, but from perf's own recording and this
file's own reading of it, so it can be held against oscost's split and run on cyclictest.
It prints each part's median and p99 and the kernel's lateness (deadline to the return to
user space), what was running on the CPU when the timer fired (for all wake-ups and for the
slowest 1 %), and the worst wake-ups with what ran in between.  With --json FILE it also
writes the medians.

Needs root (or perf_event_paranoid <= -1) and tracefs.  The recording is a measurement: run
it when nothing else is being timed.

Usage: wakeup-split-perf.py --cpu N --thread NAME [--worst K] [--json F] -- COMMAND...
  e.g. wakeup-split-perf.py --cpu 0 --thread cyclictest -- cyclictest -q -m -a 0 -i 1000 \
         -l 10000 --policy=other
       wakeup-split-perf.py --cpu 0 --thread oscost-wakeup -- target/release/oscost --cpus 0 \
         --quiet --no-save wakeup --wakeups 10000 --policies other --no-kernel-view
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict

EVENTS = [
    "timer:hrtimer_start",
    "timer:hrtimer_expire_entry",
    "sched:sched_switch",
    "sched:sched_wakeup",
    "raw_syscalls:sys_exit",
    "irq:irq_handler_entry",
    "irq:irq_handler_exit",
    "irq:softirq_entry",
    "irq:softirq_exit",
]


def clock_nanosleep_number():
    """This machine's clock_nanosleep number, as its C headers define it (230 on x86_64)."""
    try:
        p = subprocess.run(["cc", "-E", "-P", "-x", "c", "-"], capture_output=True, text=True,
                           input="#include <sys/syscall.h>\nSYS_clock_nanosleep\n")
    except FileNotFoundError:
        die("needs a C compiler (cc) to read clock_nanosleep's number from <sys/syscall.h>")
    last = p.stdout.split()[-1:] if p.returncode == 0 else []
    if not last or not last[0].isdigit():
        die(f"cannot read SYS_clock_nanosleep from <sys/syscall.h>: {p.stderr.strip()[-200:]}")
    return int(last[0])


LINE = re.compile(r"^\s*(?P<comm>.*?)\s+(?P<tid>-?\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<t>\d+\.\d+):\s+"
                  r"(?P<ev>[\w:]+):\s*(?P<rest>.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")


def die(msg):
    print(f"wakeup-split-perf: {msg}", file=sys.stderr)
    sys.exit(2)


def record(cpu, cmd, out):
    args = ["perf", "record", "-q", "-C", str(cpu), "-k", "CLOCK_MONOTONIC", "-m", "4M",
            "-o", out]
    for e in EVENTS:
        args += ["-e", e]
        if e == "raw_syscalls:sys_exit":
            args += ["--filter", f"id == {clock_nanosleep_number()}"]
    r = subprocess.run(args + ["--"] + cmd)
    if r.returncode != 0:
        die(f"perf record or the command failed (exit {r.returncode})")


def read(path):
    p = subprocess.run(["perf", "script", "-i", path, "--ns", "-F", "comm,tid,cpu,time,event,trace"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        die(f"perf script failed: {p.stderr.strip()[-200:]}")
    evs = []
    for line in p.stdout.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        t = m["t"].split(".")
        ns = int(t[0]) * 1_000_000_000 + int(t[1].ljust(9, "0")[:9])
        evs.append((ns, m["comm"], int(m["tid"]), m["ev"].rstrip(":"), m["rest"]))
    evs.sort(key=lambda e: e[0])
    return evs


def fields(rest):
    return dict(FIELD.findall(rest))


def pct(v, p):
    if not v:
        return float("nan")
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


def analyse(evs, thread):
    """Each wake-up of the threads named `thread`: its parts (ns) and what ran meanwhile."""
    timers = {}          # hrtimer -> (tid, soft, hard)
    pending = {}         # tid -> dict of the wake-up in progress
    current = "idle"     # the task running on the CPU
    wakes = []
    # The kernel's names of the tasks, from the switches (perf's own may be its `perf-exec`).
    names = {}
    for ns, comm, tid, ev, rest in evs:
        if ev == "sched:sched_switch":
            f = fields(rest)
            names[int(f.get("prev_pid", -1))] = f.get("prev_comm")
            names[int(f.get("next_pid", -1))] = f.get("next_comm")
    for i, (ns, comm, tid, ev, rest) in enumerate(evs):
        if ev == "timer:hrtimer_start":
            f = fields(rest)
            # Absolute sleeps only (mode 0, HRTIMER_MODE_ABS): cyclictest's main thread
            # sleeps relative on the same CPU.
            if (names.get(tid) == thread and f.get("function") == "hrtimer_wakeup"
                    and f.get("mode") in ("0x0", "ABS")):
                timers[f["hrtimer"]] = (tid, int(f["softexpires"]), int(f["expires"]))
        elif ev == "timer:hrtimer_expire_entry":
            f = fields(rest)
            t = timers.pop(f.get("hrtimer"), None)
            if t:
                owner, soft, hard = t
                pending[owner] = {"soft": soft, "hard": hard, "now": int(f["now"]),
                                  "running": current, "i": i}
        elif ev == "sched:sched_switch":
            f = fields(rest)
            nxt = int(f.get("next_pid", -1))
            current = "idle" if nxt == 0 else re.sub(r"[-:]?\d+$", "", f.get("next_comm", "?"))
            w = pending.get(nxt)
            if w and "switch" not in w:
                w["switch"] = ns
        elif ev == "raw_syscalls:sys_exit":
            w = pending.get(tid)
            if w and "switch" in w:
                del pending[tid]
                w["exit"] = ns
                w["j"] = i
                wakes.append(w)
    return wakes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu", type=int, required=True)
    ap.add_argument("--thread", required=True, help="the sleeping threads' comm")
    ap.add_argument("--worst", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--keep", help="keep perf's recording in this file")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        die("no command: put it after --")
    with tempfile.TemporaryDirectory() as d:
        data = a.keep or os.path.join(d, "perf.data")
        record(a.cpu, cmd, data)
        evs = read(data)
    wakes = analyse(evs, a.thread)
    if not wakes:
        die(f"no wake-up of a thread named {a.thread!r} on CPU {a.cpu} was recorded")
    parts = defaultdict(list)
    for w in wakes:
        # The timer's programmed expiry, or its earlier run by another timer's interrupt.
        expiry = min(w["hard"], w["now"])
        w["parts"] = {
            "slack": expiry - w["soft"],
            "interrupt": w["now"] - expiry,
            "to_switch": w["switch"] - w["now"],
            "to_return": w["exit"] - w["switch"],
        }
        w["kernel"] = w["exit"] - w["soft"]
        for k, v in w["parts"].items():
            parts[k].append(v)
        parts["kernel"].append(w["kernel"])
    print(f"{len(wakes)} wake-ups of {a.thread!r} on CPU {a.cpu} split ({len(evs)} events)")
    print(f"{'part':<10} {'median µs':>10} {'p99 µs':>9}")
    for k in ["slack", "interrupt", "to_switch", "to_return", "kernel"]:
        print(f"{k:<10} {pct(parts[k], 50) / 1e3:10.2f} {pct(parts[k], 99) / 1e3:9.2f}")
    cut = pct(parts["kernel"], 99)
    tail = [w for w in wakes if w["kernel"] >= cut]
    for name, ws in [("all", wakes), ("slowest 1 %", tail)]:
        c = Counter(w["running"] for w in ws)
        top = ", ".join(f"{k} {v / len(ws):.0%}" for k, v in c.most_common(5))
        print(f"running when the timer fired ({name}, {len(ws)}): {top}")
    for w in sorted(wakes, key=lambda w: -w["kernel"])[: a.worst]:
        ran = []
        for ns, comm, tid, ev, rest in evs[w["i"] + 1:w["j"]]:
            if ev in ("sched:sched_switch", "irq:irq_handler_entry", "irq:softirq_entry"):
                f = fields(rest)
                what = f.get("next_comm") or f.get("name") or f.get("vec", "")
                ran.append(f"+{(ns - w['now']) / 1e3:.1f} {ev.split(':')[1]} {what}")
        p = ", ".join(f"{k} {v / 1e3:.1f}" for k, v in w["parts"].items())
        print(f"worst {w['kernel'] / 1e3:.1f} µs ({p}); running at the interrupt: "
              f"{w['running']}; then: {'; '.join(ran[:8]) or 'nothing'}")
    if a.json:
        out = {k: {"median_ns": pct(v, 50), "p99_ns": pct(v, 99)} for k, v in parts.items()}
        out["wakeups"] = len(wakes)
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
