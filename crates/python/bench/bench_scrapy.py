"""Scrapy with simcrawl's dupefilter and middleware vs plain Scrapy, on the
same generated local site, alternating runs; prints pages/s per run and
the medians.

    python bench_scrapy.py [--pages 2000] [--runs 5] [--concurrency 16]

pages/s = responses downloaded / Scrapy's elapsed_time_seconds, and CPU
ms/page = the crawler process's CPU time / responses downloaded (less
sensitive to other load on the machine), so the two are compared per page
fetched (simcrawl fetches no URL twice and does
not follow the links of dropped copies, so it may fetch fewer pages).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RUN_SPIDER = HERE.parent / "tests" / "run_spider.py"

VARIANTS: dict[str, dict[str, Any]] = {
    "plain": {},
    "simcrawl": {
        "DUPEFILTER_CLASS": "simcrawl.scrapy.SimcrawlDupeFilter",
        "DOWNLOADER_MIDDLEWARES": {"simcrawl.scrapy.SimcrawlMiddleware": 540},
    },
    # Every page checked, none dropped: the spider parses as many pages as
    # plain Scrapy does, so this is the cost of the checks alone.
    "simcrawl-nodrop": {
        "DUPEFILTER_CLASS": "simcrawl.scrapy.SimcrawlDupeFilter",
        "DOWNLOADER_MIDDLEWARES": {"simcrawl.scrapy.SimcrawlMiddleware": 540},
        "SIMCRAWL_DROP": False,
    },
    # The URL tier alone (no content checks): what the dupefilter costs.
    "simcrawl-dupefilter": {
        "DUPEFILTER_CLASS": "simcrawl.scrapy.SimcrawlDupeFilter",
    },
    # Every check in the thread pool, small pages too (the default before
    # SIMCRAWL_INLINE_BYTES).
    "simcrawl-pool": {
        "DUPEFILTER_CLASS": "simcrawl.scrapy.SimcrawlDupeFilter",
        "DOWNLOADER_MIDDLEWARES": {"simcrawl.scrapy.SimcrawlMiddleware": 540},
        "SIMCRAWL_INLINE_BYTES": 0,
    },
    "simcrawl-nothreads": {
        "DUPEFILTER_CLASS": "simcrawl.scrapy.SimcrawlDupeFilter",
        "DOWNLOADER_MIDDLEWARES": {"simcrawl.scrapy.SimcrawlMiddleware": 540},
        "SIMCRAWL_THREADS": False,
    },
}


def crawl(url: str, settings: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        subprocess.run(
            [sys.executable, str(RUN_SPIDER), url, str(out), json.dumps(settings)],
            check=True,
            timeout=1800,
        )
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    stats = result["stats"]
    fetched = stats.get("downloader/response_count", 0)
    elapsed = stats.get("elapsed_time_seconds") or result["seconds"]
    return {
        "fetched": fetched,
        "parsed": len(result["items"]),
        "dropped": {k.rsplit("/", 1)[1]: v for k, v in stats.items() if k.startswith("simcrawl/dropped/")},
        "seconds": elapsed,
        "pages_per_s": fetched / elapsed,
        "cpu_ms_per_page": 1000 * result["cpu_seconds"] / max(fetched, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--variants", default="plain,simcrawl")
    args = ap.parse_args()
    names = args.variants.split(",")
    server = subprocess.Popen(
        [sys.executable, str(HERE / "bench_site.py"), str(args.pages)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}/p/0"
        base = {
            "LOG_LEVEL": "ERROR",
            "CONCURRENT_REQUESTS": args.concurrency,
            "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
        }
        rates: dict[str, list[float]] = {n: [] for n in names}
        cpu: dict[str, list[float]] = {n: [] for n in names}
        for run in range(args.runs):
            # Alternate which goes first, so drift in the machine's load
            # falls on both.
            order = names if run % 2 == 0 else list(reversed(names))
            for name in order:
                r = crawl(url, {**base, **VARIANTS[name]})
                rates[name].append(r["pages_per_s"])
                cpu[name].append(r["cpu_ms_per_page"])
                print(
                    f"run {run + 1} {name:<20} fetched {r['fetched']:>6} parsed {r['parsed']:>6} "
                    f"dropped {r['dropped']} {r['seconds']:7.2f} s {r['pages_per_s']:8.1f} pages/s "
                    f"{r['cpu_ms_per_page']:6.2f} CPU ms/page",
                    flush=True,
                )
        print()
        plain = statistics.median(rates[names[0]])
        plain_cpu = statistics.median(cpu[names[0]])
        for name in names:
            med = statistics.median(rates[name])
            med_cpu = statistics.median(cpu[name])
            print(
                f"median {name:<20} {med:8.1f} pages/s ({med / plain - 1:+.1%} vs {names[0]}), "
                f"{med_cpu:.2f} CPU ms/page ({med_cpu / plain_cpu - 1:+.1%})"
            )
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
