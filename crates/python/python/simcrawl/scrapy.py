"""Scrapy integration: simcrawl's three tiers inside a Scrapy project.

Scrapy dedups requests by their fingerprint only: it fetches
``/a?utm_source=x`` after ``/a``, and keeps every copy, mirror and
re-templated page. Two components fix that; they share one
:class:`simcrawl.Deduper` per crawler:

``SimcrawlDupeFilter`` (``DUPEFILTER_CLASS``)
    The URL tier: a GET request whose canonical URL was seen is never
    scheduled (tracking parameters, fragment, scheme and host case, default
    port, query order, percent-escapes). Requests a URL does not identify
    (other methods, a body, schemes other than http and https such as ftp,
    data and file) are deduplicated exactly by Scrapy's request fingerprint
    (``REQUEST_FINGERPRINTER_CLASS``), kept in the same store. A custom
    fingerprinter is honoured for GETs too: a GET is filtered when its
    canonical URL or its fingerprint was seen. Persistent with ``JOBDIR``
    or ``SIMCRAWL_PATH``; logged as ``RFPDupeFilter`` logs (DEBUG, the
    referer, ``DUPEFILTER_DEBUG``). A redirect to the URL its request
    already recorded (``/a?utm_source=x`` to ``/a``) is let through.

``SimcrawlMiddleware`` (``DOWNLOADER_MIDDLEWARES``, order 540)
    The title and content tiers: a downloaded HTML page whose title or text
    copies a kept page is dropped with ``IgnoreRequest`` before the spider
    parses it; the reason names the tier and the kept URL, and Scrapy's
    stats count ``simcrawl/dropped/title`` and ``simcrawl/dropped/content``.

Settings (all optional):

``SIMCRAWL_PATH``
    Directory of the persistent store. Default: ``<JOBDIR>/simcrawl`` when
    ``JOBDIR`` is set (a paused crawl resumes with its verdicts), else the
    store lives in memory for one run.
``SIMCRAWL_CONFIG``
    A dict shaped like crawl.toml (``{"dedup": {...}, "clean": {...}}``) or
    the path of such a TOML file. Default: simcrawl's defaults.
``SIMCRAWL_ENABLED``
    ``False`` turns the middleware off (``NotConfigured``). Default ``True``.
``SIMCRAWL_DROP``
    ``False`` keeps duplicates and only annotates them (``response.meta
    ["simcrawl"]`` holds the :class:`simcrawl.Verdict`), for measuring
    before dropping. Default ``True``.
``SIMCRAWL_CONTENT_TYPES``
    Media types the middleware checks; other responses pass untouched.
    Default ``["text/html", "application/xhtml+xml"]``.
``SIMCRAWL_THREADS``
    Run the checks in a thread pool (``True``, the default) or on the
    thread of Scrapy's event loop (``False``). The pool is Twisted's with a
    reactor, asyncio's default executor in Scrapy's reactorless mode
    (``TWISTED_REACTOR_ENABLED=False``). The Rust code releases the GIL, so
    in threads the cleaning and hashing of one page overlaps Scrapy's own
    work on others.
``SIMCRAWL_INLINE_BYTES``
    With threads, a response whose body is at most this many bytes is
    still checked on the event loop's thread: the hop to a thread and back
    costs about what checking a small page does (about half of the
    middleware's CPU per page on pages of a few KB), while a large page
    checked inline would hold up the loop. Default ``16384``; ``0`` sends
    every check to the pool.
``SIMCRAWL_DEBUG``
    Log every page the middleware drops at INFO instead of DEBUG, and
    every request the dupefilter filters (at DEBUG, as ``DUPEFILTER_DEBUG``
    does).

A page whose verdict is "duplicate of itself" (the same canonical URL
fetched again, e.g. a start URL of a resumed crawl) is kept. Start requests
and retries bypass the dupefilter (``dont_filter``); the middleware still
records their URLs, so a later link to a start URL is not fetched again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
import threading
import weakref
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.dupefilters import BaseDupeFilter
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse, Request, Response
from scrapy.utils.request import RequestFingerprinter, referer_str

from simcrawl import Deduper, SimcrawlError, Verdict, canonical_url

if TYPE_CHECKING:
    # typing.Self requires Python 3.11
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector
    from typing_extensions import Self

__all__ = [
    "SimcrawlDupeFilter",
    "SimcrawlMiddleware",
    "deduper_for",
    "store_path",
]

logger = logging.getLogger(__name__)

DEFAULT_CONTENT_TYPES = ["text/html", "application/xhtml+xml"]
# Responses up to this many bytes are checked on the event loop's thread
# even with threads on (``SIMCRAWL_INLINE_BYTES``).
DEFAULT_INLINE_BYTES = 16384


def store_path(settings: BaseSettings) -> str | None:
    """Where the crawler's store lives: ``SIMCRAWL_PATH``, else
    ``<JOBDIR>/simcrawl``, else None (in memory)."""
    path: Any = settings.get("SIMCRAWL_PATH")
    if path:
        return str(os.fspath(path))
    jobdir: Any = settings.get("JOBDIR")
    if jobdir:
        return os.path.join(str(os.fspath(jobdir)), "simcrawl")
    return None


class _Shared:
    """The Deduper of one crawler and who uses it. The dupefilter releases
    it when the scheduler closes it, the middleware when the spider closes;
    the last one out closes it (flushed, file released, so the next crawler
    of the process can open the same store), and spider_closed closes it in
    any case. A signal receiver must be kept alive by someone (Scrapy's
    signals hold weak references): the registry below keeps this object
    until it is closed."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.path = store_path(settings)
        self.deduper = Deduper(self.path, settings.get("SIMCRAWL_CONFIG"))
        self.stats = crawler.stats
        self.crawler = weakref.ref(crawler)
        self.users = 0
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    def release(self) -> None:
        with _REGISTRY_LOCK:
            self.users -= 1
            last = self.users <= 0
        if last:
            self.close()

    def spider_closed(self, spider: Any = None, reason: str = "") -> None:
        self.close()

    def close(self) -> None:
        with _REGISTRY_LOCK:
            crawler = self.crawler()
            if crawler is not None and _REGISTRY.get(crawler) is self:
                del _REGISTRY[crawler]
            if self.deduper.closed:
                return
            if self.stats is not None:
                self.stats.set_value("simcrawl/documents", self.deduper.stats()["documents"])
            self.deduper.close()


_REGISTRY: weakref.WeakKeyDictionary[Crawler, _Shared] = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.RLock()


def _acquire(crawler: Crawler) -> _Shared:
    with _REGISTRY_LOCK:
        shared = _REGISTRY.get(crawler)
        if shared is None:
            shared = _Shared(crawler)
            _REGISTRY[crawler] = shared
        shared.users += 1
        return shared


def deduper_for(crawler: Crawler) -> Deduper:
    """The :class:`simcrawl.Deduper` of a crawler, opened on first use from
    its settings and shared by the dupefilter and the middleware (a store
    directory can be open only once at a time). It is closed when the
    spider closes."""
    return _acquire(crawler).deduper


def _getint(settings: BaseSettings, name: str, default: int) -> int:
    """A whole, non-negative number setting; any other value fails naming
    the setting."""
    try:
        value = int(settings.getint(name, default))
    except ValueError as e:
        raise ValueError(f"simcrawl: {name}={settings.get(name)!r} is not a whole number: {e}") from e
    if value < 0:
        raise ValueError(f"simcrawl: {name}={value} must not be negative")
    return value


def _getbool(settings: BaseSettings, name: str, default: bool) -> bool:
    """A boolean setting; a value that is not one fails naming the setting
    (Scrapy's own message does not)."""
    try:
        return bool(settings.getbool(name, default))
    except ValueError as e:
        raise ValueError(f"simcrawl: {name}={settings.get(name)!r} is not a boolean: {e}") from e


# How the middleware runs a check: on the event loop's thread, in Twisted's
# thread pool, or in asyncio's default executor.
_INLINE = "inline"
_TWISTED = "twisted thread pool"
_ASYNCIO = "asyncio executor"


def _check_runner(settings: BaseSettings) -> str:
    """Where the middleware runs its checks, decided once at start-up from
    ``SIMCRAWL_THREADS`` and Scrapy's mode; a combination that cannot work
    fails here, naming the settings, rather than failing every page."""
    if not _getbool(settings, "SIMCRAWL_THREADS", True):
        return _INLINE
    if not _getbool(settings, "TWISTED_REACTOR_ENABLED", True):
        # Reactorless (Scrapy >= 2.15): importing twisted.internet.reactor
        # is forbidden there, and deferToThread would import it.
        return _ASYNCIO
    if "twisted.internet.reactor" not in sys.modules:
        raise RuntimeError(
            "simcrawl: SIMCRAWL_THREADS=True runs checks in the Twisted reactor's thread pool, but "
            "TWISTED_REACTOR_ENABLED is True and no reactor is installed (this crawler was not started by "
            "a Scrapy crawler process); start it with one, set TWISTED_REACTOR_ENABLED=False for the "
            "reactorless mode, or set SIMCRAWL_THREADS=False to check on the event loop's thread"
        )
    return _TWISTED


def _is_url_tier_request(request: Request) -> bool:
    """The URL tier keys pages by URL alone: only bodiless http(s) GETs
    qualify."""
    return request.method == "GET" and not request.body and urlsplit(request.url).scheme.lower() in ("http", "https")


class SimcrawlDupeFilter(BaseDupeFilter):
    """``DUPEFILTER_CLASS = "simcrawl.scrapy.SimcrawlDupeFilter"``: the URL
    tier with simcrawl's canonical URLs, and Scrapy's request fingerprint
    for the requests a URL does not identify, persistent with ``JOBDIR`` or
    ``SIMCRAWL_PATH``."""

    def __init__(
        self,
        deduper: Deduper,
        stats: StatsCollector | None = None,
        debug: bool = False,
        fingerprinter: Any = None,
    ) -> None:
        self.deduper = deduper
        self.stats = stats
        self.debug = debug
        self.logdupes = True
        self.fingerprinter: Any = fingerprinter if fingerprinter is not None else RequestFingerprinter()
        # A fingerprinter of the user's own merges requests by its own rule:
        # GETs are checked by it too (Scrapy's default adds nothing to the
        # canonical URL, so it is only asked for what the URL tier skips).
        self.custom_fingerprints = type(self.fingerprinter) is not RequestFingerprinter
        # Set by from_crawler: the crawler's shared Deduper, released by
        # close() and taken again by open().
        self._crawler: weakref.ref[Crawler] | None = None
        self._shared: _Shared | None = None
        # The request and verdict behind the last True of request_seen, for
        # log(), which the scheduler calls right after it.
        self._last: tuple[Request, Verdict] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        shared = _acquire(crawler)
        try:
            df = cls(
                shared.deduper,
                stats=crawler.stats,
                debug=_getbool(settings, "DUPEFILTER_DEBUG", False) or _getbool(settings, "SIMCRAWL_DEBUG", False),
                fingerprinter=getattr(crawler, "request_fingerprinter", None),
            )
        except BaseException:
            shared.release()
            raise
        df._crawler = weakref.ref(crawler)
        df._shared = shared
        return df

    def open(self) -> None:
        # Opened again after close() (a scheduler reopened): the crawler's
        # store again.
        if self._shared is None and self._crawler is not None:
            crawler = self._crawler()
            if crawler is not None:
                self._shared = _acquire(crawler)
                self.deduper = self._shared.deduper

    def close(self, reason: str = "") -> None:
        """Releases the crawler's store: the last user closes it, so a
        crawler started next in this process can open the same JOBDIR."""
        shared, self._shared = self._shared, None
        if shared is not None:
            shared.release()

    def _fingerprint(self, request: Request) -> bytes:
        fp: bytes = self.fingerprinter.fingerprint(request)
        return fp

    def _verdict(self, request: Request) -> Verdict:
        if _is_url_tier_request(request):
            try:
                by_url = self.deduper.check_url(request.url)
            except SimcrawlError:
                if self.deduper.closed:
                    raise
                # A URL the tier cannot parse: judged by its fingerprint.
            else:
                if not self.custom_fingerprints:
                    return by_url
                by_key = self.deduper.check_key(self._fingerprint(request), request.url)
                return by_url if by_url.duplicate or by_key.kept else by_key
        return self.deduper.check_key(self._fingerprint(request), request.url)

    def request_seen(self, request: Request) -> bool:
        verdict = self._verdict(request)
        if verdict.kept:
            return False
        # A redirect whose target has the canonical URL of a URL it came
        # through (/a?utm_source=x to /a): that request recorded it, and
        # this is its page, which nothing has downloaded yet.
        redirected: Any = request.meta.get("redirect_urls") or ()
        if any(_same_url(request.url, str(u)) for u in redirected):
            return False
        self._last = (request, verdict)
        return True

    def log(self, request: Request, spider: Any = None) -> None:
        """As ``RFPDupeFilter.log``: at DEBUG, every filtered request with
        its referer under ``DUPEFILTER_DEBUG``, else only the first; and the
        ``dupefilter/filtered`` stat (plus ``simcrawl/dropped/url``)."""
        last, self._last = self._last, None
        verdict = last[1] if last is not None and last[0] is request else None
        if self.debug:
            msg = "Filtered duplicate request: %(request)s (referer: %(referer)s)"
            args: dict[str, Any] = {"request": request, "referer": referer_str(request)}
            if verdict is not None and verdict.duplicate_of not in (None, request.url):
                msg += " - duplicate of %(first)s"
                args["first"] = verdict.duplicate_of
            logger.debug(msg, args, extra={"spider": spider})
        elif self.logdupes:
            msg = (
                "Filtered duplicate request: %(request)s"
                " - no more duplicates will be shown"
                " (see DUPEFILTER_DEBUG to show all duplicates)"
            )
            logger.debug(msg, {"request": request}, extra={"spider": spider})
            self.logdupes = False
        stats = self.stats
        if stats is None:
            stats = getattr(getattr(spider, "crawler", None), "stats", None)
        if stats is not None:
            stats.inc_value("dupefilter/filtered")
            if verdict is not None:
                stats.inc_value("simcrawl/dropped/url")


def _reason(verdict: Verdict) -> str:
    """The IgnoreRequest message: tier, kept URL and the evidence."""
    parts = []
    if verdict.similarity is not None:
        parts.append(f"similarity {verdict.similarity:.2f}")
    if verdict.distance is not None:
        parts.append(f"distance {verdict.distance}")
    detail = f" ({', '.join(parts)})" if parts else ""
    return f"simcrawl: {verdict.tier} duplicate of {verdict.duplicate_of}{detail}"


def _same_url(a: str, b: str | None) -> bool:
    if b is None:
        return False
    if a == b:
        return True
    try:
        return canonical_url(a) == canonical_url(b)
    except SimcrawlError:
        return False


class SimcrawlMiddleware:
    """Downloader middleware: drops HTML pages whose title or content
    duplicates a kept page (``IgnoreRequest`` naming the tier and the kept
    URL), counting ``simcrawl/kept`` and ``simcrawl/dropped/<tier>`` in
    Scrapy's stats; the verdict is in ``response.meta["simcrawl"]``.

    Order 540: below HttpCompressionMiddleware (590) and RedirectMiddleware
    (600), so it sees decompressed final pages, and below RetryMiddleware
    (550), so a 5xx being retried is not checked. A request with
    ``meta["simcrawl_skip"] = True`` is not checked.
    """

    def __init__(
        self,
        deduper: Deduper,
        stats: StatsCollector | None = None,
        *,
        drop: bool = True,
        debug: bool = False,
        content_types: list[str] | None = None,
        threads: bool = True,
        runner: str | None = None,
        inline_bytes: int = DEFAULT_INLINE_BYTES,
    ) -> None:
        self.deduper = deduper
        self.stats = stats
        self.drop = drop
        self.debug = debug
        self.content_types = [t.lower() for t in (content_types or DEFAULT_CONTENT_TYPES)]
        self.threads = threads
        # from_crawler decides it from the settings; built by hand, the
        # Twisted pool (the only one before Scrapy's reactorless mode).
        self.runner = runner if runner is not None else (_TWISTED if threads else _INLINE)
        self.inline_bytes = inline_bytes

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SimcrawlMiddleware:
        settings = crawler.settings
        if not _getbool(settings, "SIMCRAWL_ENABLED", True):
            raise NotConfigured("SIMCRAWL_ENABLED is off")
        runner = _check_runner(settings)
        return cls(
            deduper_for(crawler),  # released when the spider closes
            stats=crawler.stats,
            drop=_getbool(settings, "SIMCRAWL_DROP", True),
            debug=_getbool(settings, "SIMCRAWL_DEBUG", False),
            content_types=settings.getlist("SIMCRAWL_CONTENT_TYPES") or None,
            threads=runner != _INLINE,
            runner=runner,
            inline_bytes=_getint(settings, "SIMCRAWL_INLINE_BYTES", DEFAULT_INLINE_BYTES),
        )

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)

    def process_request(self, request: Request, spider: Any = None) -> None:
        # Start requests and retries bypass the dupefilter (dont_filter):
        # record their URLs, so that a later link to them is filtered.
        if request.dont_filter and _is_url_tier_request(request):
            try:
                self.deduper.check_url(request.url)
            except SimcrawlError:
                pass
        return None

    def _wanted(self, request: Request, response: Response) -> bool:
        if request.meta.get("simcrawl_skip") or not 200 <= response.status < 300:
            return False
        header = response.headers.get(b"Content-Type")
        if header is None:
            return isinstance(response, HtmlResponse)
        media = header.decode("latin-1").split(";", 1)[0].strip().lower()
        return media in self.content_types

    async def _check(self, response: Response) -> Verdict:
        header = response.headers.get(b"Content-Type")
        content_type = header.decode("latin-1") if header is not None else None
        check = functools.partial(self.deduper.check_html, response.url, response.body, content_type, url_tier=False)
        if self.runner == _INLINE or len(response.body) <= self.inline_bytes:
            return check()
        self._inc("simcrawl/checked_in_pool")
        if self.runner == _ASYNCIO:
            return await asyncio.get_running_loop().run_in_executor(None, check)
        from scrapy.utils.defer import maybe_deferred_to_future
        from twisted.internet.threads import deferToThread

        verdict: Verdict = await maybe_deferred_to_future(deferToThread(check))
        return verdict

    async def process_response(self, request: Request, response: Response, spider: Any = None) -> Response:
        if not self._wanted(request, response):
            return response
        try:
            verdict = await self._check(response)
        except SimcrawlError as e:
            # A store failure must not silently keep or drop pages: the
            # request fails with the Rust message.
            self._inc("simcrawl/errors")
            raise IgnoreRequest(f"simcrawl: {e}") from e
        request.meta["simcrawl"] = verdict
        self._inc("simcrawl/checked")
        if verdict.kept or _same_url(response.url, verdict.duplicate_of):
            self._inc("simcrawl/kept")
            return response
        self._inc(f"simcrawl/dropped/{verdict.tier}")
        reason = _reason(verdict)
        logger.log(logging.INFO if self.debug else logging.DEBUG, "%s: %s", response, reason)
        if not self.drop:
            return response
        raise IgnoreRequest(reason)
