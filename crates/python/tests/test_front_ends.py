"""The two front ends agree: ``simcrawl.Deduper()`` with no arguments and
``crawl dedup`` with no flags keep the same pages of the same corpus, and
name the same kept page for every copy.

The corpus is real text: the article-extraction benchmark (181 news and
blog pages; for each, the human-checked article body and the text five
extractors made of the page, which are near-duplicates of one another),
or, where that data set is absent, the HTML manuals under /usr/share/doc.
Some documents get the copies real corpora have: the same text in
full-width characters (as Chinese sites serve it), upper case, and with
markup and blank lines left in.

The binary is ``$SIMCRAWL_CRAWL_BIN`` (scripts/test-python.sh builds it
and sets it); without it the test is skipped.
"""

from __future__ import annotations

import gzip
import html
import json
import os
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from simcrawl import Deduper

BENCHMARK = Path(os.environ.get("SIMCRAWL_BENCHMARK_DIR", "/work/shared/data/article-extraction-benchmark"))
USR_SHARE_DOC = Path("/usr/share/doc")


def crawl_bin() -> Path:
    value = os.environ.get("SIMCRAWL_CRAWL_BIN")
    if not value:
        pytest.skip("SIMCRAWL_CRAWL_BIN is not set (scripts/test-python.sh builds the crawl binary and sets it)")
    path = Path(value)
    if not path.is_file():
        pytest.skip(f"SIMCRAWL_CRAWL_BIN={value} does not exist (build it: cargo build -p simcrawl)")
    return path


def fullwidth(s: str) -> str:
    """ASCII as full-width forms, spaces as ideographic spaces."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" if c == " " else c for c in s)


def benchmark_docs(root: Path) -> list[dict[str, str]]:
    """Per page: its article body (ground truth) and each extractor's text."""
    truth: dict[str, Any] = json.loads((root / "ground-truth.json").read_text(encoding="utf-8"))
    outputs = {
        p.stem: json.loads(p.read_text(encoding="utf-8"))["output"] for p in sorted((root / "output").glob("*.json"))
    }
    docs = []
    for pid in sorted(truth):
        page = gzip.decompress((root / "html" / f"{pid}.html.gz").read_bytes()).decode("utf-8", "replace")
        m = re.search(r"<title[^>]*>(.*?)</title>", page, re.S | re.I)
        title = html.unescape(m.group(1)).strip() if m else ""
        url = truth[pid]["url"]
        docs.append({"url": url, "title": title, "text": truth[pid]["articleBody"]})
        for name, out in outputs.items():
            text = out.get(pid, {}).get("articleBody")
            if text:
                docs.append({"url": f"{url}{'&' if '?' in url else '?'}extractor={name}", "title": title, "text": text})
    return docs


class _Text(HTMLParser):
    """The title and visible text of a page, block by block."""

    BLOCKS = {"p", "div", "li", "tr", "h1", "h2", "h3", "h4", "pre", "dt", "dd", "br", "table", "section"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title: list[str] = []
        self.text: list[str] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack.append(tag)
        if tag in self.BLOCKS:
            self.text.append("\n")

    def handle_endtag(self, tag: str) -> None:
        while self.stack and self.stack.pop() != tag:
            pass

    def handle_data(self, data: str) -> None:
        if "script" in self.stack or "style" in self.stack:
            return
        (self.title if "title" in self.stack else self.text).append(data)


def usr_share_doc_docs(root: Path) -> list[dict[str, str]]:
    docs = []
    for path in sorted(p for p in root.rglob("*.html") if p.is_file())[:400]:
        parser = _Text()
        parser.feed(path.read_text(encoding="utf-8", errors="replace"))
        text = re.sub(r"\n\s*\n+", "\n", "".join(parser.text)).strip()
        if text:
            rel = path.relative_to(root).as_posix()
            docs.append({"url": f"https://doc.example/{rel}", "title": "".join(parser.title).strip(), "text": text})
    return docs


def with_copies(docs: list[dict[str, str]]) -> list[dict[str, str]]:
    out = []
    for i, d in enumerate(docs):
        out.append(d)
        if i % 6:
            continue
        host = d["url"].split("/")[2]
        at = d["url"].replace(host, "fw." + host, 1)
        out.append({"url": at, "title": fullwidth(d["title"]), "text": fullwidth(d["text"])})
        at = d["url"].replace(host, "up." + host, 1)
        out.append({"url": at, "title": d["title"].upper(), "text": d["text"].upper()})
        at = d["url"].replace(host, "markup." + host, 1)
        text = "<p>" + d["text"].replace("\n", "</p>\n\n  <p>") + "</p>"
        out.append({"url": at, "title": f"  {d['title']}\n", "text": text})
        at = d["url"].replace(host, "repost." + host, 1)
        out.append({"url": at, "title": "Repost", "text": fullwidth(d["text"])})
    return out


def corpus(name: str) -> list[dict[str, str]]:
    if name == "article-benchmark":
        if not (BENCHMARK / "ground-truth.json").is_file():
            pytest.skip(f"no article-extraction benchmark at {BENCHMARK} (set SIMCRAWL_BENCHMARK_DIR)")
        return with_copies(benchmark_docs(BENCHMARK))
    docs = usr_share_doc_docs(USR_SHARE_DOC)
    if len(docs) < 20:
        pytest.skip(f"fewer than 20 HTML pages under {USR_SHARE_DOC}")
    return with_copies(docs)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def crawl_dedup(docs: Path, out: Path, timeout: int) -> Path:
    """``crawl dedup`` of ``docs`` into ``out``, which it returns; the run
    must succeed."""
    proc = subprocess.run(
        [str(crawl_bin()), "dedup", "--input", str(docs), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


@pytest.mark.parametrize("name", ["article-benchmark", "usr-share-doc"])
def test_deduper_defaults_keep_what_crawl_dedup_keeps(name: str, tmp_path: Path) -> None:
    docs = corpus(name)
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")

    out = crawl_dedup(path, tmp_path / "out", timeout=900)
    assert read_jsonl(out / "errors.jsonl") == []
    # Line number -> (kept, tier, duplicate_of, fingerprint).
    binary_verdicts: dict[int, tuple[bool, str | None, str | None, str | None]] = {}
    for k in read_jsonl(out / "kept.jsonl"):
        binary_verdicts[k["line"]] = (True, None, None, k.get("simhash"))
    for dup in read_jsonl(out / "duplicates.jsonl"):
        binary_verdicts[dup["line"]] = (False, dup["tier"], dup["duplicate_of"], None)

    d = Deduper()
    python_verdicts = {}
    for line, doc in enumerate(docs, start=1):
        v = d.check(doc["url"], doc["title"], doc["text"])
        python_verdicts[line] = (v.kept, v.tier, v.duplicate_of, v.fingerprint if v.kept else None)

    kept_binary = {line for line, v in binary_verdicts.items() if v[0]}
    kept_python = {line for line, v in python_verdicts.items() if v[0]}
    # Copies of the same text (full-width, case, markup) must be found by both.
    assert len(kept_binary) < len(docs) * 0.8, (len(kept_binary), len(docs))
    only_python = sorted(docs[i - 1]["url"] for i in kept_python - kept_binary)
    only_binary = sorted(docs[i - 1]["url"] for i in kept_binary - kept_python)
    assert (len(kept_python), only_python[:5], only_binary[:5]) == (len(kept_binary), [], [])
    differ = [(docs[i - 1]["url"], python_verdicts[i], binary_verdicts[i]) for i in python_verdicts]
    differ = [x for x in differ if x[1] != x[2]]
    assert differ == []


def genre_set(name: str) -> Path:
    value = os.environ.get("SIMCRAWL_GENRE_SETS")
    if not value:
        assert not os.environ.get("CI"), "CI must run this: scripts/test.sh sets SIMCRAWL_GENRE_SETS"
        pytest.skip("SIMCRAWL_GENRE_SETS is not set (scripts/test.sh builds the genre sets and sets it)")
    path = Path(value) / name
    assert (path / "docs.jsonl").is_file(), f"{path}: no docs.jsonl"
    return path


@pytest.mark.parametrize("name", ["news", "manpages"])
def test_check_html_judges_pages_as_crawl_dedup_does(name: str, tmp_path: Path) -> None:
    """Real pages of the genre gate (syndicated news in eight languages
    inside other sites' templates; man pages of several renderers and
    languages), in order, through ``check_html`` and through ``crawl dedup``
    over the same ``html`` lines: every page gets the same verdict and every
    copy the same partner. ``check_html`` judged every page on its main text
    alone before; on these sets that lost 3 and 22 unique pages
    (``scripts/python_gate.py --main-text``, docs/EVAL.md)."""
    docs_path = genre_set(name) / "docs.jsonl"
    out = crawl_dedup(docs_path, tmp_path / "out", timeout=1800)
    binary_drops = {(d["url"], d["tier"], d["duplicate_of"]) for d in read_jsonl(out / "duplicates.jsonl")}
    assert len(binary_drops) >= 100, len(binary_drops)

    d = Deduper()
    python_drops = set()
    for doc in read_jsonl(docs_path):
        v = d.check_html(doc["url"], doc["html"].encode("utf-8"), "text/html; charset=utf-8")
        if v.duplicate:
            python_drops.add((v.url, v.tier, v.duplicate_of))
    assert sorted(python_drops - binary_drops)[:5] == []
    assert sorted(binary_drops - python_drops)[:5] == []
