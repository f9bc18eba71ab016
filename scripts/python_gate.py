#!/usr/bin/env python3
"""The Python path of the multi-genre gate (issue 35; docs/EVAL.md,
"Genres"): every page of a labelled set's docs.jsonl (`html` lines, in
order) through the wheel's `Deduper.check_html`, as a Scrapy pipeline would
call it, with the verdicts written as `crawl dedup` writes them
(OUT/kept.jsonl, OUT/duplicates.jsonl), so that `crawl eval --crawled` scores
them like the crawl's and the batch tool's:

  python scripts/python_gate.py SET OUT [--main-text]
  target/release/crawl eval --crawled OUT --pages SET/pages.jsonl --labels LABELS

--main-text judges every page on its main text alone, as `check_html` did
before it took the page's identity (2026-11-28): `clean()` then `check()`
on the normalized title and main text, for comparison.

Needs the `simcrawl` wheel installed in the Python that runs it
(scripts/test-python.sh builds one into target/py-venv).
"""

import json
import os
import sys

from simcrawl import Deduper


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--main-text"]
    main_text = "--main-text" in sys.argv[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    set_dir, out = args
    os.makedirs(out, exist_ok=True)
    d = Deduper()
    with (
        open(os.path.join(set_dir, "docs.jsonl"), encoding="utf-8") as docs,
        open(os.path.join(out, "kept.jsonl"), "w", encoding="utf-8") as kept,
        open(os.path.join(out, "duplicates.jsonl"), "w", encoding="utf-8") as dups,
    ):
        for line in docs:
            doc = json.loads(line)
            html = doc["html"].encode("utf-8")
            if main_text:
                page = d.clean(doc["url"], html, "text/html; charset=utf-8")
                v = d.check(doc["url"], page.title_normalized, page.text_normalized, normalize=False)
            else:
                v = d.check_html(doc["url"], html, "text/html; charset=utf-8")
            if v.kept:
                kept.write(json.dumps({"url": v.url}) + "\n")
            else:
                dups.write(
                    json.dumps(
                        {
                            "url": v.url,
                            "tier": v.tier,
                            "duplicate_of": v.duplicate_of,
                            "similarity": v.similarity,
                        }
                    )
                    + "\n"
                )


if __name__ == "__main__":
    main()
