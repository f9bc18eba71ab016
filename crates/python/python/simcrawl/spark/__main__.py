"""``python -m simcrawl.spark --input PATH --out DIR``: ``crawl dedup`` on Spark.

Also the script ``spark-submit`` runs (``python -m simcrawl.spark
--script`` prints its path). Reads JSON lines (``{"url", "title"?,
"text"}``, as ``crawl dedup --input``) or Parquet; writes under DIR:

- ``kept/``, ``duplicates/``, ``errors/``: JSON lines, one part file per
  task, with the fields of ``crawl dedup``'s lines (``order`` for its
  ``line``);
- ``summary.json``: the counts;
- with ``--single``: ``kept.jsonl``, ``duplicates.jsonl``, ``errors.jsonl``
  as ``crawl dedup`` writes them (in input order, with ``line``), gathered
  on the driver: for corpora that fit one machine's disk, and for
  ``crawl eval --crawled DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from simcrawl.spark import Options, dedup, session, summary, write_summary

_JSONL = T.StructType(
    [
        T.StructField("url", T.StringType(), True),
        T.StructField("title", T.StringType(), True),
        T.StructField("text", T.StringType(), True),
    ]
)

_KEPT = ["url", "title", "simhash", "basis", "chars", "features"]
_DUP = ["url", "tier", "duplicate_of", "distance", "similarity", "basis", "chars", "features"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m simcrawl.spark",
        description="crawl dedup's verdicts over a corpus on Spark (local or a cluster under spark-submit).",
    )
    p.add_argument("--input", help="JSON lines ({url, title?, text}) or Parquet: a file or a directory")
    p.add_argument("--out", help="output directory (created; must not exist unless --overwrite)")
    p.add_argument("--format", choices=["auto", "jsonl", "parquet"], default="auto", help="input format")
    p.add_argument("--text", default="text", help="text column (Parquet)")
    p.add_argument("--title", default="title", help="title column; absent: no titles")
    p.add_argument("--url", default="url", help="URL column")
    p.add_argument("--id", default=None, help="order the verdicts by this column instead of the input order")
    p.add_argument("--config", default=None, help="crawl.toml-shaped settings file (readable on the executors)")
    p.add_argument("--master", default=None, help="Spark master when not run by spark-submit (default local[*])")
    p.add_argument("--partitions", type=int, default=None, help="partitions of the judging stage")
    p.add_argument(
        "--shuffle-partitions",
        type=int,
        default=None,
        help=f"spark.sql.shuffle.partitions (default: the session's, at least 1 per {Options.rows_per_partition} rows)",
    )
    p.add_argument("--oversized", type=int, default=Options.oversized, help="block-key group linked as a star")
    p.add_argument("--spill-rows", type=int, default=Options.spill_rows, help="component judged on disk above")
    p.add_argument("--single", action="store_true", help="also write kept.jsonl etc. as crawl dedup does")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    p.add_argument("--script", action="store_true", help="print the path of this script (for spark-submit)")
    args = p.parse_args(argv)
    if not args.script and (not args.input or not args.out):
        p.error("--input and --out are required")
    return args


def read(spark: Any, args: argparse.Namespace) -> DataFrame:
    fmt = args.format
    if fmt == "auto":
        name = args.input.rstrip("/")
        fmt = "parquet" if name.endswith(".parquet") or _has_parquet(name) else "jsonl"
    if fmt == "parquet":
        df: DataFrame = spark.read.parquet(args.input)
        return df
    df = spark.read.schema(_JSONL).json(args.input)
    return df


def _has_parquet(path: str) -> bool:
    return os.path.isdir(path) and any(n.endswith(".parquet") for n in os.listdir(path))


def write_single(out: DataFrame, path: str) -> None:
    """kept.jsonl, duplicates.jsonl, errors.jsonl in input order, as
    ``crawl dedup`` writes them (``line``: the row's place in the order,
    1-based)."""
    cols = sorted({*_KEPT, *_DUP, "kept", "error", "order"})
    rows = out.select(*cols).orderBy("order").toLocalIterator()
    with (
        open(os.path.join(path, "kept.jsonl"), "w", encoding="utf-8") as k,
        open(os.path.join(path, "duplicates.jsonl"), "w", encoding="utf-8") as d,
        open(os.path.join(path, "errors.jsonl"), "w", encoding="utf-8") as e,
    ):
        for line, r in enumerate(rows, start=1):
            if r["error"] is not None:
                e.write(json.dumps({"line": line, "error": r["error"]}, ensure_ascii=False) + "\n")
            elif r["kept"]:
                rec = {c: r[c] for c in _KEPT}
                rec["line"] = line
                k.write(json.dumps(rec, ensure_ascii=False) + "\n")
            else:
                rec = {c: r[c] for c in _DUP if r[c] is not None or c in ("distance", "similarity")}
                if r["tier"] == "url":
                    rec = {c: rec[c] for c in ("url", "tier", "duplicate_of")}
                rec["line"] = line
                d.write(json.dumps(rec, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.script:
        print(os.path.abspath(__file__))
        return 0
    if os.path.exists(args.out):
        if not args.overwrite:
            print(f"{args.out} exists (--overwrite replaces it)", file=sys.stderr)
            return 2
        shutil.rmtree(args.out)
    started = time.monotonic()
    spark = session(args.master or (None if "SPARK_ENV_LOADED" in os.environ else "local[*]"))
    df = read(spark, args)
    title = args.title if args.title in df.columns else None
    opts = Options(
        partitions=args.partitions,
        oversized=args.oversized,
        spill_rows=args.spill_rows,
        shuffle_partitions=args.shuffle_partitions,
    )
    out = dedup(df, text=args.text, title=title, url=args.url, id=args.id, config=args.config, options=opts)
    tidy = F.coalesce(F.col("title_tidy"), F.lit(""))
    good = out.where(F.col("error").isNull())
    good.where("kept").select("url", tidy.alias("title"), "simhash", "order", "basis", "chars", "features").write.json(
        os.path.join(args.out, "kept")
    )
    good.where("not kept").select(
        "url", "tier", "duplicate_of", "duplicate_of_order", "distance", "similarity", "order", "basis", "chars"
    ).write.json(os.path.join(args.out, "duplicates"))
    out.where(F.col("error").isNotNull()).select("order", "error").write.json(os.path.join(args.out, "errors"))
    if args.single:
        write_single(out.withColumn("title", tidy), args.out)
    s = summary(out, started)
    write_summary(s, os.path.join(args.out, "summary.json"))
    print(json.dumps(s), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
