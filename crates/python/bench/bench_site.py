"""The benchmark site: the same generated pages as `crawl bench` (crates/
crawl/src/bench.rs): articles of jieba dictionary words, every tenth page a
copy of the previous article under another title, links carrying
`?utm_source=bench#top`.

    python bench_site.py PAGES     # serves them on 127.0.0.1, prints the port

Served from memory by a keep-alive HTTP/1.1 server, in its own process so
the crawler's CPU is its own.
"""

from __future__ import annotations

import gzip
import http.server
import sys
from pathlib import Path
from typing import Callable

IDF = Path(__file__).resolve().parents[2] / "dedup" / "data" / "jieba_idf.txt.gz"
MASK = (1 << 64) - 1


def vocabulary() -> list[str]:
    """jieba's dictionary words of two characters or more, sorted."""
    words = set()
    with gzip.open(IDF, "rt", encoding="utf-8") as f:
        for line in f:
            word = line.split(" ", 1)[0]
            if len(word) >= 2:
                words.add(word)
    return sorted(words)


def rng(seed: int) -> Callable[[], int]:
    """xorshift64, seeded as bench.rs seeds it."""
    x = ((seed * 0x9E3779B97F4A7C15) & MASK) | 1

    def next_() -> int:
        nonlocal x
        x ^= (x << 13) & MASK
        x ^= x >> 7
        x ^= (x << 17) & MASK
        return x

    return next_


def page(i: int, n: int, words: list[str]) -> str:
    article = i - 1 if i % 10 == 9 else i
    nxt = rng(article + 1)
    text = []
    for s in range(12):
        for _ in range(14):
            text.append(words[nxt() % len(words)])
        text.append("。\n" if s % 3 == 2 else "，")
    lr = rng(i + 7_777)
    links = []
    for t in [2 * i + 1, 2 * i + 2, lr() % n, lr() % n, (i + 1) % n]:
        if t < n:
            links.append(f'<li><a href="/p/{t}?utm_source=bench#top">第{t}篇</a></li>')
    return (
        f'<!doctype html><html lang="zh"><head><meta charset="utf-8"><title>第{i}篇 新闻</title></head>'
        f'<body><nav><ul><li><a href="/p/0">首页</a></li>{"".join(links)}</ul></nav>'
        f"<article><h1>第{i}篇</h1><p>{''.join(text)}</p></article><footer>版权所有</footer></body></html>"
    )


def serve(pages: int) -> None:
    words = vocabulary()
    site: dict[str, bytes] = {f"/p/{i}": page(i, pages, words).encode("utf-8") for i in range(pages)}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = site.get(self.path.split("?", 1)[0].split("#", 1)[0])
            status = 200 if body is not None else 404
            body = body if body is not None else b"not found"
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    serve(int(sys.argv[1]))
