"""Crawls a site with a real Scrapy spider and writes what happened as JSON.

    python run_spider.py START_URL OUT.json '{"SETTING": value, ...}'

Run in its own process (a Twisted reactor starts once per process). The
spider follows every link on the start URL's host and yields one item per
parsed page; the errback records why a request was dropped. OUT.json holds
``items`` (url, title), ``dropped`` (url, reason), ``stats`` (Scrapy's
stats), ``seconds`` (the crawl's wall time) and ``cpu_seconds`` (the
process's CPU time, start-up included).
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
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response
from twisted.python.failure import Failure


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, start_url: str, items: list[dict[str, Any]], dropped: list[dict[str, str]], **kw: Any):
        super().__init__(**kw)
        self.start_urls = [start_url]
        self.host = urlsplit(start_url).netloc
        self.items = items
        self.dropped = dropped

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        title = response.css("title::text").get(default="")
        self.items.append({"url": response.url, "title": title})
        yield {"url": response.url, "title": title}
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            if urlsplit(url).netloc == self.host:
                yield scrapy.Request(url, callback=self.parse, errback=self.failed)

    def failed(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        self.dropped.append({"url": request.url if request is not None else "", "reason": str(failure.value)})


def main() -> None:
    start_url, out, settings_json = sys.argv[1], sys.argv[2], sys.argv[3]
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
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, start_url=start_url, items=items, dropped=dropped)
    started = time.perf_counter()
    process.start()
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    stats = {k: v for k, v in crawler.stats.get_stats().items() if isinstance(v, (int, float, str))}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(
            {
                "items": items,
                "dropped": dropped,
                "stats": stats,
                "seconds": seconds,
                "cpu_seconds": usage.ru_utime + usage.ru_stime,
            },
            f,
            ensure_ascii=False,
        )


if __name__ == "__main__":
    main()
