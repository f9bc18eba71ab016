"""The links between the records of a WARC set, checked (scripts/warc-check.sh).

    python warc_links.py FILES...      check revisits and WARC-Concurrent-To
    python warc_links.py --count FILE  print how many records FILE holds

--count reads the file without warcio (gzip members inflated by Python's
gzip module, records walked by their Content-Length), so that comparing it
with `warcio index` checks warcio's reading against an independent one.
"""

import gzip
import sys

from warcio.archiveiterator import ArchiveIterator


def count_records(path: str) -> int:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    n, at = 0, 0
    while at < len(data):
        # Blank lines between records.
        while data.startswith(b"\r\n", at):
            at += 2
        if at >= len(data):
            break
        if not data.startswith(b"WARC/", at):
            raise SystemExit(f"{path}: no record starts at byte {at} of the inflated stream")
        end = data.find(b"\r\n\r\n", at)
        if end < 0:
            raise SystemExit(f"{path}: the record at byte {at} has no end of headers")
        length = None
        for line in data[at:end].split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v.strip())
        if length is None:
            raise SystemExit(f"{path}: the record at byte {at} has no Content-Length")
        at = end + 4 + length
        if at > len(data):
            raise SystemExit(f"{path}: the record {n + 1} is cut short")
        n += 1
    return n


def check_links(paths: list[str]) -> int:
    records = {}
    responses = {}
    order = []
    for path in paths:
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f):
                h = rec.rec_headers
                rid = h.get_header("WARC-Record-ID")
                kind = h.get_header("WARC-Type")
                info = {
                    "file": path,
                    "type": kind,
                    "uri": h.get_header("WARC-Target-URI"),
                    "date": h.get_header("WARC-Date"),
                    "digest": h.get_header("WARC-Payload-Digest"),
                    "refers_to": h.get_header("WARC-Refers-To"),
                    "refers_uri": h.get_header("WARC-Refers-To-Target-URI"),
                    "refers_date": h.get_header("WARC-Refers-To-Date"),
                    "concurrent": h.get_header("WARC-Concurrent-To"),
                }
                records[rid] = info
                order.append(rid)
                if kind == "response":
                    responses[(info["uri"], info["date"])] = rid
    bad = []
    kinds: dict[str, int] = {}
    for rid in order:
        r = records[rid]
        kinds[r["type"]] = kinds.get(r["type"], 0) + 1
        if r["type"] == "revisit":
            orig_id = r["refers_to"] or responses.get((r["refers_uri"], r["refers_date"]))
            orig = records.get(orig_id or "")
            if orig is None or orig["type"] != "response":
                bad.append(f"{r['file']}: revisit {rid} of {r['uri']} refers to no response of the set")
            elif (orig["uri"], orig["date"], orig["digest"]) != (r["refers_uri"], r["refers_date"], r["digest"]):
                bad.append(
                    f"{r['file']}: revisit {rid} of {r['uri']} names {r['refers_uri']} at {r['refers_date']} "
                    f"({r['digest']}), its original is {orig['uri']} at {orig['date']} ({orig['digest']})"
                )
        if r["type"] in ("request", "metadata") and r["concurrent"] and r["concurrent"] not in records:
            bad.append(f"{r['file']}: {r['type']} {rid} is concurrent to {r['concurrent']}, not in the set")
    for b in bad:
        print(b, file=sys.stderr)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    print(f"warc-check: {len(paths)} file(s), {len(order)} records ({summary}); digests pass; "
          f"{'links pass' if not bad else str(len(bad)) + ' broken links'}")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--count":
        print(count_records(sys.argv[2]))
    else:
        sys.exit(check_links(sys.argv[1:]))
