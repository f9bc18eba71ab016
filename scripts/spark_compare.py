#!/usr/bin/env python3
"""simcrawl.spark's output against crawl dedup's, row by row (scripts/spark-scale.sh).

    spark_compare.py SPARK_OUT CRAWL_OUT

SPARK_OUT: `python -m simcrawl.spark --out` (kept/ and duplicates/ part
files); CRAWL_OUT: `crawl dedup --out` (kept.jsonl, duplicates.jsonl). Rows
are matched by URL (unique in spark_synth.py's corpora); a row is identical
when it is kept in both, or dropped in both by the same tier, naming the
same URL, at the same distance and similarity. Exits 1 on any difference.
"""

import glob
import json
import sys

Verdict = tuple[object, ...]


def verdict(r: dict[str, object]) -> Verdict:
    return (r["tier"], r["duplicate_of"], r.get("distance"), r.get("similarity"))


def spark(out: str) -> dict[str, Verdict]:
    v: dict[str, Verdict] = {}
    for f in glob.glob(out + "/kept/*.json"):
        for line in open(f, encoding="utf-8"):
            v[json.loads(line)["url"]] = ("kept",)
    for f in glob.glob(out + "/duplicates/*.json"):
        for line in open(f, encoding="utf-8"):
            r = json.loads(line)
            v[r["url"]] = verdict(r)
    return v


def dedup(out: str) -> dict[str, Verdict]:
    v: dict[str, Verdict] = {}
    for line in open(out + "/kept.jsonl", encoding="utf-8"):
        v[json.loads(line)["url"]] = ("kept",)
    for line in open(out + "/duplicates.jsonl", encoding="utf-8"):
        r = json.loads(line)
        v[r["url"]] = verdict(r)
    return v


a, b = spark(sys.argv[1]), dedup(sys.argv[2])
differ = [k for k in b.keys() | a.keys() if a.get(k) != b.get(k)]
print(f"{len(a)} simcrawl.spark rows, {len(b)} crawl dedup rows, {len(b) - len(differ)} identical, {len(differ)} differ {sorted(differ)[:5]}")
sys.exit(1 if differ else 0)
