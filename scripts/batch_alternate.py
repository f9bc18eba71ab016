#!/usr/bin/env python3
"""rensa and one or more builds of `crawl dedup`, alternating over one corpus
(issue 37, target 3): each round runs rensa (scripts/batch_vs_rensa.py in
target/py-baseline-venv) and then every build once; prints each one's
median wall time (start-up included) and CPU, and rensa's speed over it.

    python3 scripts/batch_alternate.py ROUNDS CORPUS.jsonl BIN [BIN ...]

Needs rensa: python3 -m venv target/py-baseline-venv &&
target/py-baseline-venv/bin/pip install rensa==0.5.0. The verdicts are
not scored here: scripts/batch-vs-python.sh scores one build's.
"""

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, corpus, bins = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    python = os.path.join(HERE, "..", "target", "py-baseline-venv", "bin", "python")
    if not os.path.exists(python):
        sys.exit(f"{python}: missing (see this script's help for the venv with rensa)")
    work = tempfile.mkdtemp()
    out = os.path.join(work, "out")
    cmds = {"rensa": [python, os.path.join(HERE, "batch_vs_rensa.py"), corpus, out]}
    for b in bins:
        cmds[b] = [b, "dedup", "--input", corpus, "--out", out]
    times = {k: ([], []) for k in cmds}
    try:
        for _ in range(rounds):
            for name, cmd in cmds.items():
                shutil.rmtree(out, ignore_errors=True)
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                started = time.monotonic()
                subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                wall = time.monotonic() - started
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                times[name][0].append(wall)
                times[name][1].append(cpu)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rensa = statistics.median(times["rensa"][0])
    for name, (walls, cpus) in times.items():
        wall = statistics.median(walls)
        print(f"{name}: wall {wall:.3f} s ({min(walls):.3f}-{max(walls):.3f}), "
              f"CPU {statistics.median(cpus):.3f} s, rensa's speed over it {rensa / wall:.3f}x")


if __name__ == "__main__":
    main()
