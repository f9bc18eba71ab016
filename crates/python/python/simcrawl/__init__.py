"""simcrawl: three-tier page deduplication for crawlers, Chinese first-class.

- URL tier: the canonical URL (scheme and host case, default port, fragment,
  sorted query, tracking parameters such as ``utm_*`` removed).
- Title tier: the same normalized title nominates a candidate.
- Content tier: an exact text digest, a 64-bit SimHash of TF-IDF weighted
  jieba words and an LSH band index over a MinHash sketch nominate
  candidates.

No candidate is trusted unverified: a page is a duplicate only when the
estimated resemblance of its text to a kept page reaches the configured
threshold, so distinct pages sharing a title and a template are all kept.

The work is done in Rust (the ``simcrawl._simcrawl`` extension); every call
releases the GIL, and one :class:`Deduper` can be shared by threads.
``simcrawl.scrapy`` plugs it into Scrapy.
"""

from simcrawl._simcrawl import (
    Deduper,
    Page,
    SimcrawlError,
    Verdict,
    __version__,
    canonical_url,
    distance,
)

__all__ = [
    "Deduper",
    "Page",
    "SimcrawlError",
    "Verdict",
    "__version__",
    "canonical_url",
    "distance",
]
