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
from collections.abc import Iterator
from typing import Any

Verdict = tuple[Any, ...]


def verdict(r: dict[str, Any]) -> Verdict:
    return (r["tier"], r["duplicate_of"], r.get("distance"), r.get("similarity"))


def records(paths: list[str]) -> Iterator[dict[str, Any]]:
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                yield json.loads(line)


def verdicts(kept: list[str], dropped: list[str]) -> dict[str, Verdict]:
    v: dict[str, Verdict] = {r["url"]: ("kept",) for r in records(kept)}
    v.update((r["url"], verdict(r)) for r in records(dropped))
    return v


spark_out, crawl_out = sys.argv[1], sys.argv[2]
a = verdicts(glob.glob(spark_out + "/kept/*.json"), glob.glob(spark_out + "/duplicates/*.json"))
b = verdicts([crawl_out + "/kept.jsonl"], [crawl_out + "/duplicates.jsonl"])
differ = [k for k in b.keys() | a.keys() if a.get(k) != b.get(k)]
same = len(b.keys() | a.keys()) - len(differ)
print(
    f"{len(a)} simcrawl.spark rows, {len(b)} crawl dedup rows: {same} identical, {len(differ)} differ {sorted(differ)[:5]}"
)
sys.exit(1 if differ else 0)
