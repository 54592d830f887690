#!/usr/bin/env python3
"""How many lines a command leaves on a terminal: the command runs on a pseudo-terminal of
COLUMNS x ROWS (80 x 24 by default), its output (standard output and standard error, with the
progress bar's carriage returns and erasures) is replayed through a terminal emulator (pyte),
and the rows it holds at the end, scrollback included, are counted: what a user scrolls through,
not the bytes written.

A measurement, not a test. Needs pyte (pip install pyte).

Usage: scripts/screen-lines.py [--columns N] [--rows N] [--show] -- COMMAND [ARGS...]
"""
import argparse
import os
import pty
import select
import struct
import sys

try:
    import fcntl
    import termios

    import pyte
except ImportError as e:  # pragma: no cover - said in one line
    sys.exit(f"screen-lines: {e.name} is missing (pip install pyte)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--columns", type=int, default=80)
    p.add_argument("--rows", type=int, default=24)
    p.add_argument("--show", action="store_true", help="print the rows counted")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        p.error("give the command after --")

    screen = pyte.HistoryScreen(a.columns, a.rows, history=100000)
    stream = pyte.ByteStream(screen)
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["COLUMNS"] = str(a.columns)
        os.environ["LINES"] = str(a.rows)
        os.execvp(cmd[0], cmd)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", a.rows, a.columns, 0, 0))
    while True:
        r, _, _ = select.select([fd], [], [], 1.0)
        if not r:
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        stream.feed(data)
    _, status = os.waitpid(pid, 0)

    rows = ["".join(c.data for c in line.values()).rstrip() if isinstance(line, dict)
            else "".join(line[x].data for x in range(a.columns)).rstrip()
            for line in screen.history.top]
    rows += [line.rstrip() for line in screen.display]
    # The screen's unused rows below the last output are not output.
    while rows and not rows[-1]:
        rows.pop()
    if a.show:
        for r in rows:
            print(r)
    code = os.waitstatus_to_exitcode(status)
    print(f"{len(rows)} lines at {a.columns} columns (exit status {code})")


if __name__ == "__main__":
    main()
