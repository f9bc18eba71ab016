#!/usr/bin/env python3
"""text-dedup's Spark MinHash output as `crawl dedup`'s verdict files, so
that `crawl eval --crawled DIR` scores it (scripts/spark-vs-textdedup.sh).

    textdedup_verdicts.py INPUT.parquet TEXTDEDUP_OUT OUT_DIR

INPUT.parquet: the corpus as given to text-dedup (`id`, `url`, `text`);
TEXTDEDUP_OUT: its `--output` (the kept rows) and `--debug`'s
`TEXTDEDUP_OUT-assignment/assignment.parquet` (`id`, `component`: the
component's smallest id). A row in a component it does not name is a
duplicate of the component's first row (text-dedup keeps that one; it
names no partner, its smallest id is the one it keeps). Rows text-dedup
removes before hashing (fewer than `min_length` tokens: a length filter,
not a duplicate verdict) are written as kept. Prints one JSON line:
{"docs", "kept", "duplicates", "short_rows_written_as_kept"}.
"""

import json
import os
import sys

from pyspark.sql import SparkSession

inp, td_out, out = sys.argv[1:4]
spark = SparkSession.builder.master("local[2]").appName("textdedup-verdicts").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
rows = {r["id"]: r["url"] for r in spark.read.parquet(inp).select("id", "url").collect()}
kept_ids = {r["id"] for r in spark.read.parquet(td_out).select("id").collect()}
assignment = os.path.join(td_out + "-assignment", "assignment.parquet")
comp = {}
if os.path.exists(assignment):
    comp = {r["id"]: r["component"] for r in spark.read.parquet(assignment).collect()}
os.makedirs(out, exist_ok=True)
n_kept = n_dup = short = 0
with (
    open(os.path.join(out, "kept.jsonl"), "w", encoding="utf-8") as k,
    open(os.path.join(out, "duplicates.jsonl"), "w", encoding="utf-8") as d,
):
    for i in sorted(rows):
        c = comp.get(i)
        if c is not None and c != i:
            d.write(json.dumps({"url": rows[i], "tier": "content", "duplicate_of": rows[c]}) + "\n")
            n_dup += 1
        else:
            k.write(json.dumps({"url": rows[i]}) + "\n")
            n_kept += 1
            short += i not in kept_ids
print(json.dumps({"docs": len(rows), "kept": n_kept, "duplicates": n_dup, "short_rows_written_as_kept": short}))
