"""Candidate graph and connected components with DataFrames only.

Vertices are row orders (``long``). The candidate graph links every pair of
rows the tiers could compare: rows that share a band key, a title digest or
a URL digest (each such group is linked as a star to its first row, never
pair by pair), and rows within the SimHash distance of each other in one
block-index table (compared pair by pair in a small block group; a group of
more than ``oversized`` rows is linked as a star too: a superset of the
edges, which can only make a component larger, never change a verdict).

Components: a graph of up to ``driver_edges`` edges is collected and
resolved by union-find on the driver (one job); a larger one goes through
the alternating large-star / small-star rounds (Kiveris et al., "Connected
Components in MapReduce and Beyond", SoCC 2014: O(log n) rounds of joins
and aggregations, no GraphFrames) until it is that small.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

Col = Any


def star_edges(members: DataFrame, key: str) -> DataFrame:
    """``(a, b)`` edges linking each group of ``key`` to its first row.

    ``members`` has columns ``key`` and ``order``; a group of one row gives
    no edge."""
    roots = members.groupBy(key).agg(F.min("order").alias("root"), F.count("*").alias("n")).where("n > 1")
    return (
        members.join(roots.select(key, "root"), key)
        .where(F.col("order") != F.col("root"))
        .select(F.col("root").alias("a"), F.col("order").alias("b"))
    )


def near_edges(blocks: DataFrame, max_distance: int, oversized: int) -> DataFrame:
    """Edges between rows of one block-index table key within
    ``max_distance`` bits of each other; a key shared by more than
    ``oversized`` rows links them all to its first row instead.

    ``blocks`` has columns ``block``, ``order`` and ``fp`` (the low 64
    bits of the SimHash)."""
    sizes = blocks.groupBy("block").agg(F.count("*").alias("n"), F.min("order").alias("root")).where("n > 1")
    sized = blocks.join(sizes, "block")
    big = (
        sized.where(F.col("n") > oversized)
        .where(F.col("order") != F.col("root"))
        .select(F.col("root").alias("a"), F.col("order").alias("b"))
    )
    small = sized.where(F.col("n") <= oversized).select("block", "order", "fp")
    left = small.alias("l")
    right = small.alias("r")
    pairs = (
        left.join(right, F.col("l.block") == F.col("r.block"))
        .where(F.col("l.order") < F.col("r.order"))
        .where(F.expr("bit_count(l.fp ^ r.fp)") <= max_distance)
        .select(F.col("l.order").alias("a"), F.col("r.order").alias("b"))
    )
    return big.unionByName(pairs)


def _oriented(edges: DataFrame) -> DataFrame:
    """Each edge once, as ``a < b``."""
    return (
        edges.select(F.least("a", "b").alias("a"), F.greatest("a", "b").alias("b"))
        .where(F.col("a") != F.col("b"))
        .distinct()
    )


def _checksum(edges: DataFrame) -> tuple[int, int]:
    row = edges.agg(F.count("*").alias("n"), F.sum(F.xxhash64("a", "b")).alias("h")).collect()[0]
    return int(row["n"]), int(row["h"] or 0)


def union_find(pairs: Iterable[tuple[int, int]]) -> dict[int, int]:
    """Every vertex of ``pairs`` to the smallest vertex of its component
    (union by smaller root, path halving)."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while True:
            p = parent[x]
            if p == x:
                return x
            g = parent[p]
            parent[x] = g
            x = g

    for a, b in pairs:
        parent.setdefault(a, a)
        parent.setdefault(b, b)
        ra, rb = find(a), find(b)
        if ra < rb:
            parent[rb] = ra
        elif rb < ra:
            parent[ra] = rb
    return {v: find(v) for v in parent}


_COMPONENTS = "order long, component long, size long"


def _on_driver(spark: SparkSession, edges: DataFrame) -> DataFrame:
    """Components of ``edges`` by union-find on the driver. The edges are
    streamed a partition at a time (``toLocalIterator``), never collected
    whole: the driver holds the union-find's map and the rows it sends
    back, about 2 vertices per edge."""
    roots = union_find((int(r[0]), int(r[1])) for r in edges.toLocalIterator())
    sizes = Counter(roots.values())
    rows = [(v, r, sizes[r]) for v, r in roots.items()]
    del roots, sizes
    return spark.createDataFrame(rows, _COMPONENTS)


def components(
    edges: DataFrame,
    driver_edges: int = 1_000_000,
    max_rounds: int = 100,
    storage: StorageLevel = StorageLevel.DISK_ONLY,
) -> DataFrame:
    """``(order, component, size)`` for every vertex of ``edges`` (columns
    ``a``, ``b``): the component is its smallest vertex, ``size`` its
    number of vertices.

    A graph of at most ``driver_edges`` edges (once each) is collected and
    resolved on the driver by union-find: one job, where Spark's rounds
    would be two jobs each. A larger one goes through large-star /
    small-star rounds until it is that small (or converges). Each round is
    a large-star step (every vertex's larger neighbours are linked to the
    smallest vertex of its neighbourhood) and a small-star step (every
    vertex's smaller neighbours, and itself, are linked to the smallest of
    them). Both keep connectivity; at the fixed point every component is a
    star around its smallest vertex. ``storage``: how the edges are
    persisted while they are counted and read."""
    spark = edges.sparkSession
    e = _oriented(edges).persist(storage)
    n = e.count()
    if n <= driver_edges:
        found = _on_driver(spark, e)
        e.unpersist()
        return found
    first = e
    e = e.localCheckpoint()
    first.unpersist()
    last = _checksum(e)
    for _ in range(max_rounds):
        both = e.select(F.col("a").alias("u"), F.col("b").alias("v")).unionByName(
            e.select(F.col("b").alias("u"), F.col("a").alias("v"))
        )
        low = both.groupBy("u").agg(F.min("v").alias("m"))
        large = (
            both.join(low, "u")
            .where(F.col("v") > F.col("u"))
            .select(F.col("v").alias("a"), F.least("u", "m").alias("b"))
        )
        large = _oriented(large)
        low2 = large.groupBy("b").agg(F.min("a").alias("m"))
        small = large.join(low2, "b").select(
            F.explode(
                F.array(
                    F.struct(F.col("a").alias("a"), F.col("m").alias("b")),
                    F.struct(F.col("b").alias("a"), F.col("m").alias("b")),
                )
            ).alias("e")
        )
        e = _oriented(small.select("e.a", "e.b")).localCheckpoint()
        now = _checksum(e)
        if now[0] <= driver_edges:
            return _on_driver(spark, e)
        if now == last:
            break
        last = now
    else:
        raise RuntimeError(f"connected components did not converge in {max_rounds} rounds")
    # At the fixed point every edge is (smallest vertex, member).
    roots = e.select(F.col("a").alias("order"), F.col("a").alias("component"))
    members = e.select(F.col("b").alias("order"), F.col("a").alias("component"))
    found = roots.unionByName(members).distinct()
    sizes = found.groupBy("component").agg(F.count("*").alias("size"))
    return found.join(sizes, "component").select("order", "component", "size")
