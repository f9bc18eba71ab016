"""Fixtures: a local web site with URL variants, copies and same-title
pages, served on 127.0.0.1 by Python's http.server in a thread."""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DEMO_SITE = REPO / "demo" / "site"


@dataclass
class Site:
    """A served site: its base URL, its files, and every path requested."""

    url: str
    root: Path
    requests: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Path (query included) -> where it redirects (301).
    redirects: dict[str, str] = field(default_factory=dict)

    def mark(self) -> int:
        """A position in the request log, for fetch_counts(since=...)."""
        with self.lock:
            return len(self.requests)

    def fetch_counts(self, since: int = 0) -> Counter[str]:
        """How often each path (query included) was requested; a POST is
        counted as ``POST <path> <body>``."""
        with self.lock:
            return Counter(self.requests[since:])


class _Handler(http.server.SimpleHTTPRequestHandler):
    site: Site

    def do_GET(self) -> None:
        with self.site.lock:
            self.site.requests.append(self.path)
        location = self.site.redirects.get(self.path)
        if location is not None:
            self.send_response(301)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()

    def do_POST(self) -> None:
        """Answers a form post with a page naming what was posted."""
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8", "replace")
        with self.site.lock:
            self.site.requests.append(f"POST {self.path} {body}")
        page = f"<html><head><title>Posted {body}</title></head><body><p>Received form {body}.</p></body></html>"
        data = page.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
        pass


def build_site(root: Path) -> None:
    """demo/site (the crawl binary's demo: an article, its traditional-script
    copy, a mirror under another template, three different pages titled
    "Index") plus pages that exercise each tier from Scrapy."""
    shutil.copytree(DEMO_SITE, root)
    article = (root / "article.html").read_text(encoding="utf-8")
    # A byte-for-byte copy at another URL: same title, same text.
    (root / "copy").mkdir()
    (root / "copy" / "article.html").write_text(article, encoding="utf-8")
    # The same text under an unrelated title: only the content tier sees it.
    repost = article.replace(
        "<title>长江流域遭遇罕见高温干旱 多地启动抗旱应急响应</title>",
        "<title>转载文章第一百二十三号</title>",
    )
    assert repost != article
    (root / "repost.html").write_text(repost, encoding="utf-8")
    # URL variants that only simcrawl's canonical URLs merge (Scrapy's
    # fingerprint keeps tracking parameters and percent-escapes apart).
    index = (root / "index.html").read_text(encoding="utf-8")
    extra = (
        '<li><a href="/copy/article.html">exact copy</a></li>'
        '<li><a href="/repost.html">repost under another title</a></li>'
        '<li><a href="/other.html?spm=a2c4g.11186623&amp;utm_campaign=x">tracking variant</a></li>'
        '<li><a href="/%6Fther.html">percent-escaped variant</a></li>'
        '<li><a href="/library.html?utm_source=feed#top">tracking and fragment</a></li>'
        "</ul>"
    )
    (root / "index.html").write_text(index.replace("</ul>", extra, 1), encoding="utf-8")
    # Not linked from the index (the tests above see none of it): the start
    # page of the tests of redirects, forms and other schemes. The link to
    # moved.html carries a tracking parameter, and the server redirects it
    # to the clean URL (SITE_REDIRECTS).
    (root / "extras.html").write_text(
        "<html><head><title>Extras</title></head><body>"
        '<p>Pages for the tests of redirects and forms.</p><a href="/moved.html?utm_source=mail">moved</a>'
        "</body></html>",
        encoding="utf-8",
    )
    (root / "moved.html").write_text(
        "<html><head><title>城市公交线路调整</title></head><body><article>"
        "<p>自下月一日起，本市将调整十二条公交线路的走向和站点设置，新开通两条连接高铁站和新城区的快速公交线路。</p>"
        "<p>调整后的线路在早晚高峰时段加密班次，平均发车间隔缩短到六分钟，市民可以通过公交查询软件了解实时到站信息。</p>"
        "</article></body></html>",
        encoding="utf-8",
    )


SITE_REDIRECTS = {"/moved.html?utm_source=mail": "/moved.html"}


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("site") / "www"
    build_site(root)
    site = Site(url="", root=root, redirects=dict(SITE_REDIRECTS))
    handler = type("Handler", (_Handler,), {"site": site})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    site.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
