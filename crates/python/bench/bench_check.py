"""Deduper.check (and check_html) calls per second from Python, on the
benchmark site's articles (about 2 KB of Chinese text each, every tenth a
copy), in memory and on disk, with 1 and 2 threads sharing one Deduper.

    python bench_check.py [--docs 5000] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from typing import Callable

import simcrawl
from bench_site import page, vocabulary

Doc = tuple[str, str, str, bytes]
"""url, cleaned title, cleaned text, html"""


def docs(n: int) -> list[Doc]:
    words = vocabulary()
    out = []
    d = simcrawl.Deduper()
    for i in range(n):
        html = page(i, n, words).encode("utf-8")
        url = f"http://bench.example/p/{i}"
        p = d.clean(url, html)
        out.append((url, p.title, p.text, html))
    return out


def timed(n_calls: int, threads: int, call: Callable[[int], object]) -> tuple[float, float]:
    """(calls per wall second, calls per CPU second of the process)."""

    def work(start: int) -> None:
        for i in range(start, n_calls, threads):
            call(i)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    t0, c0 = time.perf_counter(), time.process_time()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return n_calls / (time.perf_counter() - t0), n_calls / (time.process_time() - c0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    corpus = docs(args.docs)
    mb = sum(len(t.encode()) for _, _, t, _ in corpus) / len(corpus) / 1024
    print(f"{len(corpus)} documents, {mb:.1f} KiB of text each on average")
    for store in ["memory", "redb"]:
        for method in ["check", "check_html"]:
            for threads in [1, 2]:
                rates, cpu_rates = [], []
                for _ in range(args.runs):
                    with tempfile.TemporaryDirectory() as tmp:
                        path: str | None = tmp if store == "redb" else None
                        d = simcrawl.Deduper(path)
                        if method == "check":

                            def call(i: int, d: simcrawl.Deduper = d) -> object:
                                url, title, text, _ = corpus[i]
                                return d.check(url, title, text)
                        else:

                            def call(i: int, d: simcrawl.Deduper = d) -> object:
                                return d.check_html(corpus[i][0], corpus[i][3])

                        rate, cpu_rate = timed(len(corpus), threads, call)
                        d.close()
                        rates.append(rate)
                        cpu_rates.append(cpu_rate)
                print(
                    f"{store:<7} {method:<11} {threads} thread(s): median {statistics.median(rates):6.0f} calls/s, "
                    f"{statistics.median(cpu_rates):6.0f} per CPU second"
                    f"  (runs: {', '.join(f'{r:.0f}' for r in rates)})",
                    flush=True,
                )


if __name__ == "__main__":
    main()
