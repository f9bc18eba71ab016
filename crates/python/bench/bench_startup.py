"""What a fresh Python process pays before its first verdict: the import,
the first `Deduper()` and the first `check` (a Chinese text, so jieba's
cut and the IDF table are used), in CPU milliseconds, each in a process
of its own; then one more check, for scale. A Scrapy crawl pays this once,
so on short crawls it is part of the middleware's overhead per page.

    python bench_startup.py [--runs 5]

Run it with two interpreters (two virtual environments holding two
wheels) to compare builds; it prints the medians of the runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

ONE_PROCESS = r"""
import json, time
t0 = time.process_time()
import simcrawl
t1 = time.process_time()
d = simcrawl.Deduper()
t2 = time.process_time()
text = "长江流域今年夏季降雨偏多，防汛形势严峻，各地加强了巡查。" * 20
d.check("http://a.test/1", "标题", text)
t3 = time.process_time()
d.check("http://a.test/2", "标题二", text.replace("巡查", "巡查和值守"))
t4 = time.process_time()
ms = lambda a, b: round(1000 * (b - a), 2)
print(json.dumps({"import": ms(t0, t1), "deduper": ms(t1, t2), "first_check": ms(t2, t3), "next_check": ms(t3, t4)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    runs = []
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, "-c", ONE_PROCESS], check=True, capture_output=True, text=True)
        runs.append(json.loads(out.stdout))
    for key in ("import", "deduper", "first_check", "next_check"):
        values = [r[key] for r in runs]
        each = ", ".join(f"{v:.2f}" for v in values)
        print(f"{key:12} median {statistics.median(values):8.2f} CPU ms  (runs: {each})")
    total = statistics.median(r["import"] + r["deduper"] + r["first_check"] for r in runs)
    print(f"{'start-up':12} median {total:8.2f} CPU ms  (import + Deduper() + first check)")


if __name__ == "__main__":
    main()
