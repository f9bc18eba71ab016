"""A stand-in for GraphFrames, for scripts/spark-vs-textdedup.sh only.

text-dedup's Spark MinHash (``text_dedup/minhash_spark.py``, text-dedup
0.4.0) imports ``graphframes.GraphFrame`` for one call:
``GraphFrame(vertices, edges).connectedComponents()``. The GraphFrames jar
comes from the spark-packages repository, which this offline machine cannot
reach (the one jar on PyPI, ``graphframes-jars``, is built for Spark 2.4 and
Scala 2.11). This class gives the same result, ``(id, component)`` with the
component named by its smallest vertex, from simcrawl.spark's own
components (union-find on the driver for a small graph, else large-star /
small-star rounds, GraphFrames' default algorithm): both jobs pay the same
for this step.
"""

from typing import Any

from simcrawl.spark import _graph


class GraphFrame:
    def __init__(self, vertices: Any, edges: Any) -> None:
        self.vertices = vertices
        self.edges = edges

    def connectedComponents(self) -> Any:  # noqa: N802 (GraphFrames' name)
        e = self.edges.selectExpr("src as a", "dst as b")
        return _graph.components(e).selectExpr("order as id", "component")
