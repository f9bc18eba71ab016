"""Writes a JSON-lines corpus ({"url", "title", "text" | "html"}) as a WARC
file of HTML response records (warcio's writer, one gzip member each), and
the same documents as `html` JSON lines, to measure `crawl dedup` on WARC
input against the same pages as JSON lines (docs/BENCHMARKS.md, "WARC").

    python scripts/jsonl-to-warc.py CORPUS.jsonl OUT.warc.gz OUT-html.jsonl [LIMIT]

A text document becomes a minimal page: its title in <title> and <h1>, its
text in a <p>.
"""

import html
import json
import sys
from io import BytesIO

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter


def page(doc: dict) -> str:
    if doc.get("html"):
        return doc["html"]
    t = html.escape(doc.get("title") or "")
    return (
        f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{t}</title></head>"
        f"<body><article><h1>{t}</h1><p>{html.escape(doc.get('text') or '')}</p></article></body></html>"
    )


def main() -> None:
    src, warc_out, lines_out = sys.argv[1:4]
    limit = int(sys.argv[4]) if len(sys.argv) > 4 else None
    with open(src, encoding="utf-8") as f, open(warc_out, "wb") as w, open(lines_out, "w", encoding="utf-8") as out:
        writer = WARCWriter(w, gzip=True)
        for n, line in enumerate(f):
            if limit is not None and n >= limit:
                break
            doc = json.loads(line)
            body = page(doc).encode("utf-8")
            head = StatusAndHeaders(
                "200 OK",
                [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))],
                protocol="HTTP/1.1",
            )
            rec = writer.create_warc_record(doc["url"], "response", payload=BytesIO(body), http_headers=head)
            writer.write_record(rec)
            out.write(json.dumps({"url": doc["url"], "html": body.decode("utf-8")}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
