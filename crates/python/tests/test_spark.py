"""simcrawl.spark in Spark local mode: the verdicts of ``crawl dedup``.

Needs pyspark and a Java runtime (scripts/test-python.sh installs pyspark;
scripts/install-deps.sh the JRE); without pyspark the module is skipped.
One SparkSession (``local[2]``) serves every test of the module."""

from __future__ import annotations

import json
import os
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark")

import simcrawl  # noqa: E402
from pyspark import StorageLevel  # noqa: E402
from simcrawl.spark import Options, dedup, session, shuffle_partitions, summary  # noqa: E402
from simcrawl.spark.__main__ import main as cli_main  # noqa: E402
from simcrawl.spark._graph import union_find  # noqa: E402

Verdicts = dict[str, tuple[Any, ...]]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    s = session("local[2]", app="simcrawl-tests")
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


WORDS = (
    "river valley drought summer heat record farmers water reservoir rain storm forecast harvest rice wheat "
    "market price export ship port train bridge tunnel city council budget school teacher student library "
    "museum painting music concert theatre film actor director novel poem author history war peace treaty "
    "king queen castle village mountain lake forest bird fish tiger panda bamboo tea silk paper printing"
).split()


def sentence(rng: random.Random, n: int = 14) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "."


def corpus(seed: int = 7, n: int = 240) -> list[dict[str, Any]]:
    """Originals, exact and edited copies (also under another title and a
    tracking-parameter URL), chains of edits, same-title different pages,
    Chinese copies, rows without text or URL."""
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = []
    originals: list[dict[str, Any]] = []
    for i in range(n):
        kind = rng.random()
        if originals and kind < 0.15:
            o = rng.choice(originals)
            docs.append({"url": f"http://mirror{i % 5}.example/{i}", "title": o["title"], "text": o["text"]})
        elif originals and kind < 0.3:
            o = rng.choice(originals)
            words = o["text"].split()
            for _ in range(rng.randint(1, 6)):
                words[rng.randrange(len(words))] = rng.choice(WORDS)
            docs.append(
                {"url": f"http://edit.example/{i}", "title": rng.choice(["", o["title"]]), "text": " ".join(words)}
            )
        elif originals and kind < 0.36:
            o = rng.choice(originals)
            docs.append({"url": o["url"] + "?utm_source=x", "title": "moved", "text": sentence(rng, 30)})
        elif kind < 0.42:
            docs.append({"url": f"http://site.example/index{i}", "title": "Index", "text": sentence(rng, 40)})
        elif kind < 0.45:
            docs.append(
                {
                    "url": f"http://cn.example/{i}",
                    "title": "长江流域遭遇罕见高温干旱",
                    "text": "长江流域遭遇罕见高温干旱，" * rng.randint(1, 3) + sentence(rng, 8),
                }
            )
        elif kind < 0.47:
            docs.append({"url": f"http://bad.example/{i}", "title": "no text"})
        elif kind < 0.48:
            docs.append({"url": "", "title": "no url", "text": sentence(rng)})
        else:
            d = {
                "url": f"http://news{i % 7}.example/a/{i}",
                "title": f"story {i}",
                "text": " ".join(sentence(rng) for _ in range(6)),
            }
            originals.append(d)
            docs.append(d)
    return docs


def sequential(docs: list[dict[str, Any]]) -> Verdicts:
    """The verdicts of one in-memory Deduper fed in order: what `crawl
    dedup` gives (tests/test_front_ends.py checks the two agree)."""
    d = simcrawl.Deduper()
    out: Verdicts = {}
    for i, doc in enumerate(docs):
        if not doc.get("url") or doc.get("text") is None:
            out[str(i)] = ("error",)
            continue
        v = d.check(doc["url"], doc.get("title") or "", doc["text"])
        out[str(i)] = (
            v.kept,
            v.tier,
            v.duplicate_of,
            None if v.similarity is None else round(v.similarity, 3),
            v.distance,
        )
    return out


def run(spark: Any, docs: list[dict[str, Any]], id: str | None = "i", **opts: Any) -> list[dict[str, Any]]:
    rows = [{"i": i, "url": d.get("url"), "title": d.get("title"), "text": d.get("text")} for i, d in enumerate(docs)]
    df = spark.createDataFrame(rows, "i long, url string, title string, text string")
    if opts.pop("shuffle", False):
        df = df.repartition(5)
    out = dedup(df, id=id, options=Options(**opts))
    return [r.asDict() for r in out.orderBy("order").collect()]


def as_verdicts(rows: list[dict[str, Any]]) -> Verdicts:
    out: Verdicts = {}
    for r in rows:
        if r["error"] is not None:
            out[str(r["i"])] = ("error",)
        else:
            out[str(r["i"])] = (r["kept"], r["tier"], r["duplicate_of"], r["similarity"], r["distance"])
    return out


def assert_lossless(rows: list[dict[str, Any]]) -> None:
    """Every row dropped by the title or content tier names a kept row, by
    order and URL; a URL-tier duplicate names the first row of its URL."""
    by_order = {r["order"]: r for r in rows}
    for r in rows:
        if r["kept"] is False:
            partner = by_order[r["duplicate_of_order"]]
            assert partner["url"] == r["duplicate_of"], r
            assert partner["order"] < r["order"], r
            if r["tier"] != "url":
                assert partner["kept"] is True, (r, partner)


def test_verdicts_equal_crawl_dedups(spark: Any) -> None:
    docs = corpus()
    rows = run(spark, docs)
    got = as_verdicts(rows)
    want = sequential(docs)
    assert got == want
    dropped = [v for v in got.values() if v[0] is False]
    tiers = {v[1] for v in dropped}
    assert {"url", "title", "content"} <= tiers, tiers
    assert_lossless(rows)


def test_partitioning_does_not_change_verdicts(spark: Any) -> None:
    docs = corpus(seed=11, n=200)
    a = as_verdicts(run(spark, docs, partitions=1, batch=7))
    # driver_edges=0: the components from Spark's rounds, not the driver's.
    b = as_verdicts(run(spark, docs, partitions=9, batch=512, shuffle=True, driver_edges=0))
    assert a == b
    assert a == sequential(docs)


def template_corpus(n: int) -> list[dict[str, Any]]:
    """A template shared by every page of a site: one title, one long
    boilerplate, a line of its own per page; every tenth page copied."""
    rng = random.Random(3)
    boiler = " ".join(sentence(rng) for _ in range(3))
    docs: list[dict[str, Any]] = []
    for i in range(n):
        own = " ".join(sentence(rng, 20) for _ in range(4))
        docs.append({"url": f"http://tpl.example/p{i}", "title": "Namespace Members", "text": boiler + " " + own})
        if i % 10 == 0:
            docs.append({"url": f"http://copy.example/p{i}", "title": "Namespace Members", "text": boiler + " " + own})
    return docs


def test_oversized_group_streams_and_spills(spark: Any, tmp_path: Path) -> None:
    """A title shared by every page makes one component of them all; with
    the thresholds forced low, its block keys are linked as stars and it is
    judged against an on-disk index, with the same verdicts."""
    docs = template_corpus(1100)
    spill = tmp_path / "spill"
    rows = run(spark, docs, oversized=3, spill_rows=100, spill_dir=str(spill), batch=64, driver_edges=0)
    got = as_verdicts(rows)
    assert got == sequential(docs)
    assert max(r["component"] for r in rows) == 0  # one component, rooted at the first row
    assert sum(1 for r in rows if r["kept"] is False) >= 110
    assert_lossless(rows)
    # The on-disk indexes are removed once their component is judged.
    assert not spill.exists() or not any(spill.iterdir())


def test_shuffle_partitions_grow_with_the_input() -> None:
    # Never fewer than the session's; one per `per` rows beyond that.
    assert shuffle_partitions(100_000, 8, 25_000) == 8
    assert shuffle_partitions(300_000, 8, 25_000) == 12
    assert shuffle_partitions(1_000_000, 8, 25_000) == 40
    assert shuffle_partitions(1_000_001, 8, 25_000) == 41
    assert shuffle_partitions(1_000_000, 200, 25_000) == 200


def test_more_shuffle_partitions_and_memory_storage_keep_verdicts(spark: Any) -> None:
    """The automatic shuffle partitions (here one per 10 rows: 30 for 300
    rows) are set on the session; with them, and with the intermediates
    persisted in memory instead of on disk, the verdicts are unchanged."""
    docs = corpus(seed=17, n=300)
    before = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        rows = run(spark, docs, rows_per_partition=10, storage=StorageLevel.MEMORY_AND_DISK)
        assert spark.conf.get("spark.sql.shuffle.partitions") == str(max(int(before), 30))
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    assert as_verdicts(rows) == sequential(docs)
    assert_lossless(rows)


def test_union_find_names_each_component_by_its_smallest_vertex() -> None:
    roots = union_find([(5, 9), (9, 2), (7, 8), (3, 3), (8, 11), (2, 4)])
    assert roots == {5: 2, 9: 2, 2: 2, 4: 2, 7: 7, 8: 7, 11: 7, 3: 3}


def test_summary_and_no_id(spark: Any) -> None:
    docs = corpus(seed=5, n=120)
    df = spark.createDataFrame(
        [{"url": d.get("url"), "title": d.get("title"), "text": d.get("text")} for d in docs],
        "url string, title string, text string",
    ).coalesce(1)
    out = dedup(df)
    s = summary(out)
    want = sequential(docs)
    assert s["documents"] == len(docs)
    assert s["kept"] == sum(1 for v in want.values() if v[0] is True)
    assert s["bad_rows"] == sum(1 for v in want.values() if v[0] == "error")


def crawl_bin() -> Path | None:
    value = os.environ.get("SIMCRAWL_CRAWL_BIN")
    return Path(value) if value and Path(value).is_file() else None


def load_lines(out: Path) -> Verdicts:
    v: Verdicts = {}
    for line in (out / "kept.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        v[r["url"]] = ("kept",)
    for line in (out / "duplicates.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        v[r["url"]] = (r["tier"], r["duplicate_of"], r.get("similarity"), r.get("distance"))
    return v


EVAL_SOURCES_CI = ("python-doc", "debian-handbook", "debian-reference")
"""The labelled set's sources the test runs by default (1,070 of 2,692
pages, 370 near and ambiguous pairs): the test costs a third. The whole
set: ``SIMCRAWL_SPARK_EVAL=all`` (crates/python/README.md, "Spark")."""


def eval_subset(eval_dir: Path, out: Path) -> Path:
    """The labelled set's docs.jsonl, or (by default) only the pages of
    :data:`EVAL_SOURCES_CI`, in their order."""
    docs = eval_dir / "docs.jsonl"
    if os.environ.get("SIMCRAWL_SPARK_EVAL") == "all":
        return docs
    source = {}
    for line in (eval_dir / "meta.jsonl").read_text(encoding="utf-8").splitlines():
        m = json.loads(line)
        source[m["url"]] = m["source"]
    keep = [
        line
        for line in docs.read_text(encoding="utf-8").splitlines()
        if source.get(json.loads(line)["url"]) in EVAL_SOURCES_CI
    ]
    out.write_text("\n".join(keep) + "\n", encoding="utf-8")
    return out


def labels_of(eval_dir: Path) -> Path:
    """The set's truth: zh-TW/zh-CN pairs also scored through OpenCC tw2sp
    (pairs_tw2sp.jsonl, written by scripts/test.sh) where it exists, as the
    crate's own quality gate scores it."""
    tw2sp = eval_dir / "pairs_tw2sp.jsonl"
    return tw2sp if tw2sp.is_file() else eval_dir / "pairs.jsonl"


def test_cli_on_the_eval_set_equals_crawl_dedup(spark: Any, tmp_path: Path) -> None:
    """The labelled set (SIMCRAWL_EVAL_SET, built by scripts/test.sh; by
    default three of its four sources, see :func:`eval_subset`): the
    command's kept.jsonl and duplicates.jsonl are crawl dedup's, and crawl
    eval scores them 0 unique pages lost, recall >= 0.95. The command runs
    in this process, on the module's session (a JVM start less)."""
    eval_dir = os.environ.get("SIMCRAWL_EVAL_SET")
    binary = crawl_bin()
    if not eval_dir or not (Path(eval_dir) / "docs.jsonl").is_file() or binary is None:
        pytest.skip("needs SIMCRAWL_EVAL_SET and SIMCRAWL_CRAWL_BIN (scripts/test.sh sets both)")
    docs = eval_subset(Path(eval_dir), tmp_path / "docs.jsonl")
    ours, theirs = tmp_path / "spark", tmp_path / "crawl"
    assert cli_main(["--input", str(docs), "--out", str(ours), "--single", "--master", "local[2]"]) == 0
    subprocess.run([str(binary), "dedup", "--input", str(docs), "--out", str(theirs)], check=True, capture_output=True)
    a, b = load_lines(ours), load_lines(theirs)
    assert len(a) == len(b) > 1000
    differ = [u for u in a if a[u] != b.get(u)]
    assert not differ, differ[:5]
    dropped = [v for v in a.values() if v[0] != "kept"]
    assert {"title", "content"} <= {v[0] for v in dropped}, dropped[:5]
    summary_line = json.loads((ours / "summary.json").read_text(encoding="utf-8"))
    assert summary_line["documents"] == len(a)
    score = subprocess.run(
        [
            str(binary),
            "eval",
            "--crawled",
            str(ours),
            "--pages",
            str(Path(eval_dir) / "meta.jsonl"),
            "--labels",
            str(labels_of(Path(eval_dir))),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    table = [line for line in (score.stdout + score.stderr).splitlines() if line.startswith("|")]
    header = [c.strip() for c in table[0].strip("|").split("|")]
    total = next(dict(zip(header, (c.strip() for c in row.strip("|").split("|")))) for row in table if "| all |" in row)
    assert int(total["reached"]) == len(a), total
    assert int(total["unique lost"]) == 0, total
    assert float(total["component recall"]) >= 0.95, total
