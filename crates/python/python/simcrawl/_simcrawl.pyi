"""Type stubs of the Rust extension module (see simcrawl/__init__.py)."""

import os
from collections.abc import Mapping
from types import TracebackType
from typing import Any

__version__: str

Fingerprint = str | int
"""A SimHash: 16 hex digits (32 at 128 bits, as returned) or an int."""

class SimcrawlError(Exception):
    """An error of the Rust core: invalid settings or URL, a store that is
    locked by another process, built with other settings, or corrupt. The
    message is the Rust error's."""

class Verdict:
    """The decision about a page or a URL."""

    @property
    def url(self) -> str:
        """The URL that was checked."""
    @property
    def kept(self) -> bool:
        """Kept (new): indexed, so later copies match it."""
    @property
    def duplicate(self) -> bool:
        """Not kept: a copy of an earlier page (or a URL seen before)."""
    @property
    def tier(self) -> str | None:
        """ "url", "title" or "content" for a duplicate; None when kept."""
    @property
    def duplicate_of(self) -> str | None:
        """URL of the kept page (or first URL) this one duplicates."""
    @property
    def distance(self) -> int | None:
        """SimHash distance to the kept page (title and content tiers)."""
    @property
    def similarity(self) -> float | None:
        """Estimated resemblance to the kept page, 0 to 1 (1.0: same text)."""
    @property
    def fingerprint(self) -> str | None:
        """The page's own SimHash, 16 hex digits, 32 at `dedup.bits = 128` (None: no text features)."""
    @property
    def canonical(self) -> str | None:
        """The canonical URL (check_url verdicts only)."""

class Page:
    """A cleaned page: title and main text as written, and as the tiers compare them."""

    @property
    def title(self) -> str:
        """The title as the page shows it (whitespace collapsed)."""
    @property
    def raw_title(self) -> str:
        """The same as `title` (its name from when `title` was normalized)."""
    @property
    def title_normalized(self) -> str:
        """The title as the title tier compares it (width, case, traditional to simplified)."""
    @property
    def text(self) -> str:
        """The main text as the page wrote it, one block per line."""
    @property
    def text_normalized(self) -> str:
        """The main text as the content tier signs it (normalized like the title)."""
    @property
    def canonical(self) -> str | None:
        """<link rel=canonical>, resolved."""
    @property
    def links(self) -> list[str]:
        """Every http(s) link of the page, resolved."""
    @property
    def encoding(self) -> str:
        """The encoding the bytes were decoded with, e.g. "UTF-8", "GBK"."""
    @property
    def noindex(self) -> bool:
        """<meta name=robots> says noindex."""
    @property
    def nofollow(self) -> bool:
        """<meta name=robots> says nofollow."""

class Deduper:
    """Three-tier deduplication: URL, title and near-duplicate content.

    ``path``: a directory for the persistent store (``index.redb``, created
    if missing; the crawl binary's name), or None to keep everything in
    memory. ``config``: None (defaults), a dict shaped like crawl.toml
    (``{"dedup": {...}, "clean": {...}}``) or the path of such a TOML file;
    unknown keys are errors. A store records the settings it was built with
    and refuses to open with others. Safe to share between threads.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        config: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    ) -> None: ...
    @property
    def path(self) -> str | None:
        """The store directory, None in memory."""
    @property
    def closed(self) -> bool:
        """Whether close() was called."""
    def check_url(self, url: str) -> Verdict:
        """URL tier: record the canonical URL, say whether it was seen.
        Raises SimcrawlError unless the URL is absolute http(s)."""
    def canonical_url(self, url: str) -> str:
        """The canonical form of a URL as this Deduper's URL tier keys it
        (its ``[dedup.url] tracking_params`` removed). Raises SimcrawlError
        unless the URL is absolute http(s)."""
    def check_key(self, key: bytes, url: str) -> Verdict:
        """URL tier for what a URL does not identify (a POST, a body, another
        scheme): record an opaque key, e.g. Scrapy's request fingerprint
        (1 to 1024 bytes), with the URL it came from; say whether it was seen
        (tier "url", duplicate_of the first URL). Persistent like URLs."""
    def check(self, url: str, title: str, text: str, *, url_tier: bool = True, normalize: bool = True) -> Verdict:
        """Check a page from its parts (URL unless url_tier=False, then
        title, then content); a kept page is indexed. The title and text
        are normalized as ``crawl dedup`` normalizes its input lines (width,
        case, traditional to simplified, tags), unless normalize=False."""
    def check_html(
        self,
        url: str,
        html: bytes,
        content_type: str | None = None,
        *,
        url_tier: bool = True,
    ) -> Verdict:
        """Clean an HTML page (decode, main content, normalize) and check it
        as ``crawl dedup`` checks an ``html`` line: on its main text when that
        is what the page says, else on everything it shows outside declared
        template; each host's template is learnt from the pages given.
        ``content_type``: the Content-Type header, for the charset."""
    def clean(self, url: str, html: bytes, content_type: str | None = None) -> Page:
        """Clean an HTML page without checking it."""
    def fingerprint(self, text: str) -> str | None:
        """SimHash of a text under this Deduper's settings (16 hex digits, 32 at 128 bits),
        None when the text has no features."""
    @staticmethod
    def distance(a: Fingerprint, b: Fingerprint) -> int:
        """Hamming distance between two fingerprints."""
    def near(self, fingerprint: Fingerprint) -> list[tuple[int, str]]:
        """Stored pages within max_distance, nearest first: (distance, url)."""
    def stats(self) -> dict[str, int]:
        """documents (in the store) and this object's verdict counts:
        checked, kept, duplicate_url, duplicate_title, duplicate_content,
        urls_new."""
    def flush(self) -> None:
        """Make every verdict so far durable."""
    def close(self) -> None:
        """Flush and release the store file; later calls raise."""
    def __enter__(self) -> Deduper: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool: ...

def distance(a: Fingerprint, b: Fingerprint) -> int:
    """Hamming distance between two fingerprints."""

def canonical_url(url: str) -> str:
    """The canonical form of a URL, as the URL tier keys it under the
    default settings (Deduper.canonical_url applies a Deduper's own)."""

SignedTuple = tuple[bytes | None, str | None, str | None, int | None, list[int], list[int], int, int, str | None]
"""A signed row: (signature, title as written, simhash, low 64 bits of the
SimHash, block-index keys, band/title/URL keys, features, chars, error)."""

JudgedTuple = tuple[bool, str | None, str | None, int | None, int | None, float | None]
"""A judged row: (kept, tier, duplicate_of, duplicate_of_order, distance,
similarity)."""

class Signer:
    """Signs rows as ``crawl dedup`` signs its input lines (simcrawl.spark)."""

    def __init__(self, config: Mapping[str, Any] | str | os.PathLike[str] | None = None) -> None: ...
    @property
    def max_distance(self) -> int:
        """The SimHash distance at or under which two rows are near (k)."""
    def sign(self, rows: list[tuple[str, str | None, str | None]]) -> list[SignedTuple]:
        """One tuple per (url, title, text) row; a row crawl dedup would
        skip has only its error."""

class Judge:
    """Runs the tiers over signed rows, in the order given (simcrawl.spark)."""

    def __init__(
        self,
        config: Mapping[str, Any] | str | os.PathLike[str] | None = None,
        path: str | os.PathLike[str] | None = None,
    ) -> None: ...
    def check(self, rows: list[tuple[bytes, int]]) -> list[JudgedTuple]:
        """(signature, order) rows judged in order against those before."""
    def kept(self) -> int:
        """Documents kept so far."""
