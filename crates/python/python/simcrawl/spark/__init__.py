"""simcrawl on Spark: ``crawl dedup``'s verdicts over a DataFrame.

>>> from simcrawl.spark import dedup
>>> out = dedup(df, text="text", title="title", url="url")   # doctest: +SKIP
>>> out.where("not kept").select("url", "tier", "duplicate_of").show()  # doctest: +SKIP

How (docs: crates/python/README.md, "Spark"):

1. Sign: every row is signed in ``mapPartitions`` by the Rust core
   (normalization, SimHash, sketch, band keys, title and URL digests),
   exactly as ``crawl dedup`` signs a ``{"url", "title", "text"}`` line.
2. Candidates: rows sharing a band key, a title digest or a URL digest, and
   rows within the SimHash distance in one block-index table, are linked;
   a large group is linked as a star, never pair by pair.
3. Components: connected components of that graph (large-star/small-star,
   DataFrames only).
4. Judge: rows are repartitioned by component and sorted by (component,
   order), and each partition is streamed through the Rust tiers, one
   component after another, each in input order. Every lookup the tiers
   make for a row reaches only rows of its own component, so each verdict
   is the one ``crawl dedup`` gives over the whole input in that order.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from simcrawl.spark import _graph, _tasks

__all__ = ["VERDICT_COLUMNS", "Options", "dedup", "shuffle_partitions", "summary"]

VERDICT_COLUMNS = (
    "order",
    "kept",
    "tier",
    "duplicate_of",
    "duplicate_of_order",
    "distance",
    "similarity",
    "simhash",
    "basis",
    "features",
    "chars",
    "component",
    "error",
)
"""The columns :func:`dedup` adds (``title_tidy`` too, when a title column
is given)."""

_SIGNED = T.StructType(
    [
        T.StructField("order", T.LongType(), False),
        T.StructField("url", T.StringType(), True),
        T.StructField("title_tidy", T.StringType(), True),
        T.StructField("sig", T.BinaryType(), True),
        T.StructField("simhash", T.StringType(), True),
        T.StructField("fp", T.LongType(), True),
        T.StructField("blocks", T.ArrayType(T.LongType(), False), False),
        T.StructField("keys", T.ArrayType(T.LongType(), False), False),
        T.StructField("features", T.LongType(), False),
        T.StructField("chars", T.LongType(), False),
        T.StructField("error", T.StringType(), True),
    ]
)

_JUDGED = T.StructType(
    [
        T.StructField("order", T.LongType(), False),
        T.StructField("kept", T.BooleanType(), False),
        T.StructField("tier", T.StringType(), True),
        T.StructField("duplicate_of", T.StringType(), True),
        T.StructField("duplicate_of_order", T.LongType(), True),
        T.StructField("distance", T.IntegerType(), True),
        T.StructField("similarity", T.DoubleType(), True),
    ]
)


@dataclass
class Options:
    """Tuning of :func:`dedup`; none of it changes a verdict."""

    partitions: int | None = None
    """Partitions of the judging stage (default: ``spark.sql.shuffle.partitions``)."""
    oversized: int = 1000
    """A block-index key shared by more rows than this links them as a
    star instead of comparing every pair of them."""
    spill_rows: int = 2_000_000
    """A component of more rows than this is judged against an on-disk index."""
    spill_dir: str | None = None
    """Where on-disk indexes go (default: the executor's temporary directory)."""
    reset_rows: int = 200_000
    """An in-memory judge holding this many documents is renewed at the next component."""
    batch: int = 512
    """Rows per call into the Rust core."""
    driver_edges: int = 1_000_000
    """A candidate graph of at most this many edges is resolved into
    components on the driver (union-find) instead of in Spark rounds; a
    larger one is resolved in rounds until it is this small."""
    shuffle_partitions: int | None = None
    """``spark.sql.shuffle.partitions`` for the job's group-bys and joins
    (set on the session, which keeps it: the result is lazy). Default: the
    session's, raised to one per ``rows_per_partition`` input rows."""
    rows_per_partition: int = 25_000
    """Input rows per shuffle partition when ``shuffle_partitions`` is
    automatic: each row gives about 16 key rows to the candidate graph, so a
    partition's aggregation holds about 400k of them whatever the input."""
    storage: StorageLevel = field(default_factory=lambda: StorageLevel.DISK_ONLY)
    """How the input, its signatures, the components and the result are
    persisted. On disk by default: cached blocks held in memory take
    execution memory from the graph's aggregations (storage below half of
    Spark's unified memory is never evicted for them)."""


def shuffle_partitions(rows: int, configured: int, per: int) -> int:
    """The job's shuffle partitions for ``rows`` input rows: the session's
    ``configured`` count, raised to one partition per ``per`` rows, so that
    a partition of the graph's aggregations holds a bounded number of rows
    as the input grows (adaptive execution merges the ones that are small)."""
    return max(configured, math.ceil(rows / max(per, 1)))


def _order_column(df: DataFrame, id: str | None) -> DataFrame:
    """``df`` with ``order``: the input order, or the order of ``id``."""
    if id is None:
        return df.withColumn("order", F.monotonically_increasing_id())
    kind = df.schema[id].dataType
    if isinstance(kind, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
        return df.withColumn("order", F.col(id).cast("long"))
    # Any other sortable id: its rank.
    spark = df.sparkSession
    ranked = df.select(id).orderBy(id).rdd.zipWithIndex().map(lambda r: (r[0][0], r[1]))
    schema = T.StructType([T.StructField(id, kind, True), T.StructField("order", T.LongType(), False)])
    return df.join(spark.createDataFrame(ranked, schema), id)


def dedup(
    df: DataFrame,
    text: str = "text",
    title: str | None = "title",
    url: str = "url",
    id: str | None = None,
    config: Any = None,
    options: Options | None = None,
) -> DataFrame:
    """``df`` with ``crawl dedup``'s verdict of every row, in the order of
    the input (``id=None``) or of the column ``id`` (unique values).

    Columns added (:data:`VERDICT_COLUMNS`): ``kept`` (null for a row
    ``crawl dedup`` would skip: an empty URL, no text; ``error`` says why),
    ``tier`` (``url``, ``title``, ``content``), ``duplicate_of`` (the URL of
    the kept row, or of the first row with the same canonical URL for the
    URL tier), ``duplicate_of_order`` (that row's ``order``), ``distance``,
    ``similarity`` (rounded to 3 decimals, as ``crawl dedup`` writes it),
    ``simhash``, ``basis`` (``text``), ``features``, ``chars``,
    ``component`` (rows that could meet) and ``order``; ``title_tidy``: the
    title as ``crawl dedup`` writes it. ``config``: None, a dict shaped
    like crawl.toml or the path of a TOML file (readable on the
    executors). The result is persisted (``Options.storage``, on disk by
    default); :func:`summary` counts it. Sets the session's
    ``spark.sql.shuffle.partitions`` (``Options.shuffle_partitions``)."""
    opts = options or Options()
    taken = [c for c in (*VERDICT_COLUMNS, "title_tidy") if c in df.columns]
    if taken:
        raise ValueError(f"the input already has columns {taken}; rename them first")
    for c in (text, url, title, id):
        if c is not None and c not in df.columns:
            raise ValueError(f"no column {c!r} in the input (columns: {df.columns})")
    spark = df.sparkSession
    signer = _tasks.signer(config)  # checks the config on the driver
    base = _order_column(df, id).persist(opts.storage)
    # One pass: fills the persisted input and sizes the shuffles.
    parts = opts.shuffle_partitions or shuffle_partitions(
        base.count(), int(spark.conf.get("spark.sql.shuffle.partitions") or 200), opts.rows_per_partition
    )
    spark.conf.set("spark.sql.shuffle.partitions", str(parts))
    title_col = F.col(title).cast("string") if title else F.lit(None).cast("string")
    rows = base.select("order", F.col(url).cast("string"), title_col, F.col(text).cast("string"))
    signed_rdd = rows.rdd.mapPartitions(_tasks.sign_partition(config, opts.batch))
    signed = spark.createDataFrame(signed_rdd, _SIGNED).persist(opts.storage)
    good = signed.where(F.col("error").isNull())

    keys = good.select("order", F.explode("keys").alias("key"))
    blocks = good.where(F.col("fp").isNotNull()).select("order", "fp", F.explode("blocks").alias("block"))
    edges = _graph.star_edges(keys, "key").unionByName(_graph.near_edges(blocks, signer.max_distance, opts.oversized))
    comps = _graph.components(edges, opts.driver_edges, storage=opts.storage).persist(opts.storage)

    to_judge = (
        good.join(comps, "order")
        .select("component", "order", "size", "sig")
        .repartition(opts.partitions or parts, "component")
        .sortWithinPartitions("component", "order")
    )
    judged_rdd = to_judge.rdd.mapPartitions(
        _tasks.judge_partition(config, opts.batch, opts.spill_rows, opts.reset_rows, opts.spill_dir)
    )
    judged = spark.createDataFrame(judged_rdd, _JUDGED)

    verdicts = (
        signed.join(judged, "order", "left")
        .join(comps.select("order", "component"), "order", "left")
        .select(
            "order",
            # A row alone in its component meets nothing: kept.
            F.when(F.col("error").isNull(), F.coalesce(F.col("kept"), F.lit(True))).alias("kept"),
            "tier",
            "duplicate_of",
            "duplicate_of_order",
            "distance",
            "similarity",
            "simhash",
            F.when(F.col("error").isNull(), F.lit("text")).alias("basis"),
            F.when(F.col("error").isNull(), F.col("features")).alias("features"),
            F.when(F.col("error").isNull(), F.col("chars")).alias("chars"),
            F.when(F.col("error").isNull(), F.coalesce(F.col("component"), F.col("order"))).alias("component"),
            "error",
            "title_tidy",
        )
    )
    return base.join(verdicts, "order").persist(opts.storage)


def summary(out: DataFrame, started: float | None = None) -> dict[str, Any]:
    """Counts of a :func:`dedup` result, as ``crawl dedup`` prints them:
    documents, kept, dropped per tier, bad rows; and its components."""
    row = out.agg(
        F.count("*").alias("documents"),
        F.sum(F.when(F.col("kept"), 1).otherwise(0)).alias("kept"),
        F.sum(F.when(F.col("tier") == "url", 1).otherwise(0)).alias("url"),
        F.sum(F.when(F.col("tier") == "title", 1).otherwise(0)).alias("title"),
        F.sum(F.when(F.col("tier") == "content", 1).otherwise(0)).alias("content"),
        F.sum(F.when(F.col("error").isNotNull(), 1).otherwise(0)).alias("errors"),
        F.countDistinct("component").alias("components"),
    ).collect()[0]
    largest = out.where(F.col("component").isNotNull()).groupBy("component").count().agg(F.max("count")).collect()[0]
    s: dict[str, Any] = {
        "documents": int(row["documents"]),
        "kept": int(row["kept"] or 0),
        "dropped": {"url": int(row["url"] or 0), "title": int(row["title"] or 0), "content": int(row["content"] or 0)},
        "bad_rows": int(row["errors"] or 0),
        "components": int(row["components"]),
        "largest_component": int(largest[0] or 0),
    }
    if started is not None:
        s["seconds"] = round(time.monotonic() - started, 3)
        s["docs_per_s"] = round(s["documents"] / max(s["seconds"], 1e-9), 1)
    return s


def write_summary(s: dict[str, Any], path: str) -> None:
    """Writes a summary as JSON (one object, a newline)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(s) + "\n")


def session(master: str | None = None, app: str = "simcrawl-dedup") -> SparkSession:
    """The active session, or a new one (on ``master``, default local).
    Local workers run this interpreter unless ``PYSPARK_PYTHON`` says
    otherwise (it has simcrawl installed)."""
    if master is None or master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app)
    if master:
        builder = builder.master(master)
    if master is None or master.startswith("local"):
        # Few cores: Spark's 200 shuffle partitions would be 200 tiny
        # tasks per stage.
        builder = builder.config("spark.sql.shuffle.partitions", "8")
    return builder.getOrCreate()
