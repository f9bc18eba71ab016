#!/usr/bin/env python3
"""CPU per thread of a command, from /proc (issue 37: the writer thread's
share of wall time says what more cores can give, by Amdahl).

  python3 scripts/thread-cpu.py target/release/crawl bench --pages 20000 --batch 0 --index 0

Runs the command, samples /proc/PID/task/*/stat every 50 ms, and prints the
command's pages/s, CPU-per-page and wall lines, then the six busiest thread
names with their CPU seconds and share of wall time (tokio workers share one
name and are summed; threads of child processes, such as the bench's site
server, are listed as `child:NAME`; THREAD_CPU_TOP=N lists N). Linux only.
"""

import collections
import os
import subprocess
import sys
import time


def children(pid):
    """The direct children of `pid` (the bench's site server is one)."""
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return kids


def snapshot(pid, hz, prefix=""):
    out = {}
    for kid in children(pid):
        out.update(snapshot(kid, hz, prefix="child:"))
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[(tid, prefix + comm)] = (int(fields[11]) + int(fields[12])) / hz
        except OSError:
            pass
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    hz = os.sysconf("SC_CLK_TCK")
    p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    last = {}
    t0 = time.time()
    while p.poll() is None:
        last.update(snapshot(p.pid, hz))
        time.sleep(0.05)
    wall = time.time() - t0
    out = p.stdout.read()
    for line in out.splitlines():
        if any(k in line for k in ("pages/s", "cpu per page", "wall")):
            print(line)
    by = collections.Counter()
    count = collections.Counter()
    busiest = collections.Counter()
    for (_, comm), cpu in last.items():
        by[comm] += cpu
        count[comm] += 1
        busiest[comm] = max(busiest[comm], cpu)
    for comm, cpu in by.most_common(int(os.environ.get("THREAD_CPU_TOP", "6"))):
        line = f"  thread {comm:16s} {cpu:6.2f} s CPU, {100 * cpu / wall:5.1f}% of wall"
        if count[comm] > 1:
            line += f" ({count[comm]} threads, busiest {100 * busiest[comm] / wall:.1f}%)"
        print(line)
    sys.exit(p.returncode)


if __name__ == "__main__":
    main()
