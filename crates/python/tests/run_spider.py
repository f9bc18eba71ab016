"""Crawls a site with a real Scrapy spider and writes what happened as JSON.

    python run_spider.py START_URL OUT.json '{"SETTING": value, ...}' ['{"option": value}']

Run in its own process (a Twisted reactor or an asyncio loop starts once per
process), with the crawler process `scrapy crawl` would pick:
``AsyncCrawlerProcess`` for the asyncio reactor (Scrapy's default) and for
the reactorless mode (``TWISTED_REACTOR_ENABLED=False``), ``CrawlerProcess``
for another reactor or a Scrapy without ``AsyncCrawlerProcess``. It exits
with 1 when the crawl failed to start (the spider never opened), as `scrapy
crawl` of recent Scrapy does.

The spider follows every link on the start URL's host and yields one item
per parsed page; the errback records why a request was dropped. Options:
``requests``, a list of ``{"url", "method", "body"}`` the spider also yields
(through the dupefilter) from its first page, in order. OUT.json holds
``items`` (url, title, method), ``dropped`` (url, reason), ``stats``
(Scrapy's stats), ``seconds`` (the crawl's wall time), ``cpu_seconds`` (the
process's CPU time, start-up included) and ``bootstrap_failed``.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response
from scrapy.settings import Settings
from twisted.python.failure import Failure

ASYNCIO_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(
        self,
        start_url: str,
        items: list[dict[str, Any]],
        dropped: list[dict[str, str]],
        requests: list[dict[str, str]] | None = None,
        **kw: Any,
    ):
        super().__init__(**kw)
        self.start_urls = [start_url]
        self.host = urlsplit(start_url).netloc
        self.items = items
        self.dropped = dropped
        self.extra = requests or []

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        title = response.css("title::text").get(default="") if hasattr(response, "css") else ""
        item = {"url": response.url, "title": title, "method": response.request.method if response.request else ""}
        self.items.append(item)
        yield item
        if self.extra:
            extra, self.extra = self.extra, []
            for r in extra:
                yield scrapy.Request(
                    r["url"],
                    method=r.get("method", "GET"),
                    body=r.get("body", ""),
                    callback=self.parse,
                    errback=self.failed,
                )
        if not hasattr(response, "css"):
            return
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            if urlsplit(url).netloc == self.host:
                yield scrapy.Request(url, callback=self.parse, errback=self.failed)

    def failed(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        self.dropped.append({"url": request.url if request is not None else "", "reason": str(failure.value)})


def crawler_process(settings: dict[str, Any]) -> Any:
    """The crawler process `scrapy crawl` would use for these settings."""
    try:
        from scrapy.crawler import AsyncCrawlerProcess
    except ImportError:  # Scrapy < 2.13
        return CrawlerProcess(settings)
    s = Settings(settings)
    reactorless = not s.getbool("TWISTED_REACTOR_ENABLED", True)
    if reactorless or (s.get("TWISTED_REACTOR") == ASYNCIO_REACTOR and not s.getbool("FORCE_CRAWLER_PROCESS")):
        return AsyncCrawlerProcess(settings)
    return CrawlerProcess(settings)


def main() -> None:
    start_url, out, settings_json = sys.argv[1], sys.argv[2], sys.argv[3]
    options: dict[str, Any] = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    settings: dict[str, Any] = {
        "LOG_LEVEL": "WARNING",
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "COOKIES_ENABLED": False,
    }
    settings.update(json.loads(settings_json))
    items: list[dict[str, Any]] = []
    dropped: list[dict[str, str]] = []
    process = crawler_process(settings)
    crawler = process.create_crawler(SiteSpider)
    opened: list[bool] = []

    def spider_opened(spider: Any) -> None:
        opened.append(True)

    crawler.signals.connect(spider_opened, signal=signals.spider_opened)
    process.crawl(crawler, start_url=start_url, items=items, dropped=dropped, requests=options.get("requests"))
    started = time.perf_counter()
    process.start()
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    stats = {
        k: v
        for k, v in (crawler.stats.get_stats() if crawler.stats else {}).items()
        if isinstance(v, (int, float, str))
    }
    failed = bool(process.bootstrap_failed) or not opened
    with open(out, "w", encoding="utf-8") as f:
        json.dump(
            {
                "items": items,
                "dropped": dropped,
                "stats": stats,
                "seconds": seconds,
                "cpu_seconds": usage.ru_utime + usage.ru_stime,
                "bootstrap_failed": failed,
            },
            f,
            ensure_ascii=False,
        )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
