"""End to end: a real Scrapy spider (in a subprocess, as `scrapy crawl`
would run it) crawls the local site with simcrawl's dupefilter and
middleware, and once without them as the control."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from conftest import Site

RUN_SPIDER = Path(__file__).with_name("run_spider.py")

SIMCRAWL = {
    "DUPEFILTER_CLASS": "simcrawl.scrapy.SimcrawlDupeFilter",
    "DOWNLOADER_MIDDLEWARES": {"simcrawl.scrapy.SimcrawlMiddleware": 540},
}
# One request at a time, breadth first in link order: which copy of a page
# is met first (and kept) is then fixed, so the test can name it.
ORDERED = {
    "CONCURRENT_REQUESTS": 1,
    "DEPTH_PRIORITY": 1,
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    "ROBOTSTXT_OBEY": True,
}


def reactorless_supported() -> bool:
    """Scrapy >= 2.15 runs without a Twisted reactor."""
    try:
        import scrapy.utils.reactorless  # noqa: F401
    except ImportError:
        return False
    return True


# The Scrapy modes the integration supports: the asyncio reactor (Scrapy's
# default) and the reactorless mode (TWISTED_REACTOR_ENABLED=False).
MODES = {
    "asyncio-reactor": {},
    "reactorless": {"TWISTED_REACTOR_ENABLED": False},
}


def mode(name: str) -> dict[str, Any]:
    if name == "reactorless" and not reactorless_supported():
        pytest.skip("this Scrapy has no reactorless mode (TWISTED_REACTOR_ENABLED=False needs Scrapy >= 2.15)")
    return MODES[name]


def run(
    site: Site,
    tmp_path: Path,
    settings: dict[str, Any],
    *,
    start: str = "/",
    options: dict[str, Any] | None = None,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / f"result-{len(list(tmp_path.glob('result-*')))}.json"
    argv = [sys.executable, str(RUN_SPIDER), site.url + start, str(out), json.dumps(settings)]
    if options:
        argv.append(json.dumps(options))
    return subprocess.run(argv, capture_output=True, text=True, timeout=600), out


def crawl(
    site: Site,
    tmp_path: Path,
    settings: dict[str, Any],
    *,
    start: str = "/",
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    mark = site.mark()
    proc, out = run(site, tmp_path, settings, start=start, options=options)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    # Every error is a test failure (the default LOG_LEVEL is WARNING).
    assert "log_count/ERROR" not in result["stats"], proc.stderr[-4000:]
    result["fetched"] = site.fetch_counts(since=mark)
    result["stderr"] = proc.stderr
    return result


def paths(urls: list[str], site: Site) -> list[str]:
    return sorted(u[len(site.url) :] for u in urls)


@pytest.mark.parametrize("mode_name", list(MODES))
def test_simcrawl_drops_copies_and_url_variants_and_keeps_same_title_pages(
    site: Site, tmp_path: Path, mode_name: str
) -> None:
    r = crawl(site, tmp_path, {**ORDERED, **SIMCRAWL, **mode(mode_name), "SIMCRAWL_PATH": str(tmp_path / "store")})
    base = site.url
    kept = paths([i["url"] for i in r["items"]], site)
    assert kept == sorted(["/", "/article.html", "/other.html", "/library.html", "/bus.html", "/clinic.html"]), r[
        "items"
    ]
    # The three different pages titled "Index" (one template) are all kept.
    assert sorted(i["title"] for i in r["items"]).count("Index") == 3

    reasons = {d["url"][len(base) :]: d["reason"] for d in r["dropped"]}
    # Scrapy's own robots.txt middleware drops through the same errback.
    assert reasons.pop("/private/draft.html") == "Forbidden by robots.txt"
    assert reasons == {
        "/article-trad.html": f"simcrawl: title duplicate of {base}/article.html (similarity 1.00, distance 0)",
        "/mirror/drought.html": reasons.get("/mirror/drought.html"),
        "/copy/article.html": f"simcrawl: title duplicate of {base}/article.html (similarity 1.00, distance 0)",
        "/repost.html": f"simcrawl: content duplicate of {base}/article.html (similarity 1.00, distance 0)",
    }, r["dropped"]
    assert reasons["/mirror/drought.html"].startswith(f"simcrawl: title duplicate of {base}/article.html")

    # Every page was fetched once: the tracking, fragment and
    # percent-escape variants never reached the server.
    fetched = r["fetched"]
    assert all(n == 1 for n in fetched.values()), fetched
    assert not [p for p in fetched if "utm_" in p or "spm=" in p or "%6F" in p], fetched
    assert fetched["/other.html"] == 1 and fetched["/article.html"] == 1

    stats = r["stats"]
    assert stats["simcrawl/dropped/title"] == 3
    assert stats["simcrawl/dropped/content"] == 1
    assert stats["simcrawl/dropped/url"] >= 4
    assert stats["simcrawl/kept"] == len(r["items"])
    assert stats["simcrawl/documents"] == len(r["items"])
    assert stats["simcrawl/checked"] == len(r["items"]) + len(reasons)


def test_plain_scrapy_refetches_variants_and_keeps_copies(site: Site, tmp_path: Path) -> None:
    """The control: what the site does to Scrapy without simcrawl (so the
    test above can only pass because of simcrawl)."""
    r = crawl(site, tmp_path, ORDERED)
    fetched = r["fetched"]
    assert fetched["/other.html?spm=a2c4g.11186623&utm_campaign=x"] == 1
    assert fetched["/library.html?utm_source=feed"] == 1
    kept = paths([i["url"] for i in r["items"]], site)
    assert {"/copy/article.html", "/repost.html", "/article-trad.html", "/mirror/drought.html"} <= set(kept)
    assert [d["url"] for d in r["dropped"]] == [site.url + "/private/draft.html"]
    assert not any(k.startswith("simcrawl/") for k in r["stats"])


@pytest.mark.parametrize("mode_name", list(MODES))
def test_store_persists_between_crawls(site: Site, tmp_path: Path, mode_name: str) -> None:
    settings = {**ORDERED, **SIMCRAWL, **mode(mode_name), "JOBDIR": str(tmp_path / "job")}
    first = crawl(site, tmp_path, settings)
    assert (tmp_path / "job" / "simcrawl" / "index.redb").is_file()
    assert len(first["items"]) == 6
    # The same crawl again on the same JOBDIR: the start page is fetched
    # (start requests are never filtered) and kept as itself, and every URL
    # it links to is known already.
    second = crawl(site, tmp_path, settings)
    assert paths([i["url"] for i in second["items"]], site) == ["/"]
    assert set(second["fetched"]) <= {"/", "/robots.txt"}, second["fetched"]
    assert second["stats"]["simcrawl/dropped/url"] >= 10


# Where the checks run: every one in the pool, small pages on the event
# loop and the rest in the pool (the default), every one on the loop.
RUNNERS: dict[str, dict[str, Any]] = {
    "pool": {"SIMCRAWL_THREADS": True, "SIMCRAWL_INLINE_BYTES": 0},
    "small pages inline": {"SIMCRAWL_THREADS": True, "SIMCRAWL_INLINE_BYTES": 1500},
    "inline": {"SIMCRAWL_THREADS": False},
}


@pytest.mark.parametrize("mode_name", list(MODES))
@pytest.mark.parametrize("runner", list(RUNNERS))
def test_drop_off_annotates_without_dropping(site: Site, tmp_path: Path, runner: str, mode_name: str) -> None:
    r = crawl(
        site,
        tmp_path,
        {**ORDERED, **SIMCRAWL, **mode(mode_name), "SIMCRAWL_DROP": False, **RUNNERS[runner]},
    )
    assert [d["url"] for d in r["dropped"]] == [site.url + "/private/draft.html"]
    kept = paths([i["url"] for i in r["items"]], site)
    assert {"/copy/article.html", "/repost.html", "/article-trad.html"} <= set(kept)
    assert r["stats"]["simcrawl/dropped/title"] == 3 and r["stats"]["simcrawl/dropped/content"] == 1
    # Which checks went to the pool: all, those of pages over 1,500
    # bytes (the site has both), none.
    in_pool = r["stats"].get("simcrawl/checked_in_pool", 0)
    checked = r["stats"]["simcrawl/checked"]
    if runner == "pool":
        assert in_pool == checked
    elif runner == "inline":
        assert in_pool == 0
    else:
        assert 0 < in_pool < checked, (in_pool, checked)


@pytest.mark.parametrize("mode_name", list(MODES))
def test_paused_crawl_resumes_from_jobdir(site: Site, tmp_path: Path, mode_name: str) -> None:
    """A crawl stopped early (as by Ctrl-C) resumes from its JOBDIR: the
    pending requests and simcrawl's verdicts both survive, so the two runs
    together keep exactly what one uninterrupted crawl keeps."""
    settings = {**ORDERED, **SIMCRAWL, **mode(mode_name), "JOBDIR": str(tmp_path / "job")}
    first = crawl(site, tmp_path, {**settings, "CLOSESPIDER_PAGECOUNT": 3})
    assert first["stats"]["finish_reason"] == "closespider_pagecount"
    assert 1 <= len(first["items"]) < 6, first["items"]
    second = crawl(site, tmp_path, settings)
    assert second["stats"]["finish_reason"] == "finished"
    parsed = paths([i["url"] for i in first["items"] + second["items"]], site)
    # The start URL is fetched again on resume (start requests are never
    # filtered) and kept as itself; every other page is parsed once.
    assert parsed.count("/") == 2
    assert sorted(set(parsed)) == sorted(
        ["/", "/article.html", "/other.html", "/library.html", "/bus.html", "/clinic.html"]
    )
    assert len(parsed) == 7, parsed
    fetched = first["fetched"] + second["fetched"]
    assert {p: n for p, n in fetched.items() if n > 1 and p not in ("/", "/robots.txt")} == {}, fetched
    dropped = second["stats"].get("simcrawl/dropped/title", 0) + first["stats"].get("simcrawl/dropped/title", 0)
    assert dropped == 3


@pytest.mark.parametrize("mode_name", list(MODES))
def test_a_setting_that_cannot_work_fails_at_start_up(site: Site, tmp_path: Path, mode_name: str) -> None:
    """Loud, before any page is fetched, naming the setting: never a crawl
    that "finishes" with nothing."""
    mark = site.mark()
    proc, out = run(site, tmp_path, {**ORDERED, **SIMCRAWL, **mode(mode_name), "SIMCRAWL_THREADS": "sometimes"})
    assert proc.returncode == 1, proc.stderr[-4000:]
    assert "simcrawl: SIMCRAWL_THREADS='sometimes' is not a boolean" in proc.stderr, proc.stderr[-4000:]
    assert json.loads(out.read_text(encoding="utf-8"))["items"] == []
    assert not site.fetch_counts(since=mark)


def test_redirect_to_the_canonical_url_is_followed(site: Site, tmp_path: Path) -> None:
    """``/moved.html?utm_source=mail`` redirects to ``/moved.html``: the
    redirect's target has the canonical URL its source recorded, and is
    still the one page to download."""
    r = crawl(site, tmp_path, {**ORDERED, **SIMCRAWL}, start="/extras.html")
    assert paths([i["url"] for i in r["items"]], site) == ["/extras.html", "/moved.html"], r["dropped"]
    assert r["fetched"]["/moved.html?utm_source=mail"] == 1
    assert r["fetched"]["/moved.html"] == 1
    assert r["stats"].get("dupefilter/filtered", 0) == 0


def test_post_requests_are_remembered_across_a_resumed_crawl(site: Site, tmp_path: Path) -> None:
    """Requests the URL tier cannot judge (here POSTs) are deduplicated by
    Scrapy's request fingerprint, kept in the same store: a resumed crawl
    does not post again."""
    form = site.url + "/form"
    posts = [
        {"url": form, "method": "POST", "body": "q=1"},
        {"url": form, "method": "POST", "body": "q=1"},
        {"url": form, "method": "POST", "body": "q=2"},
    ]
    settings = {**ORDERED, **SIMCRAWL, "JOBDIR": str(tmp_path / "job")}
    first = crawl(site, tmp_path, settings, start="/extras.html", options={"requests": posts})
    posted = {k: n for k, n in first["fetched"].items() if k.startswith("POST ")}
    assert posted == {"POST /form q=1": 1, "POST /form q=2": 1}
    assert first["stats"]["dupefilter/filtered"] == 1
    second = crawl(site, tmp_path, settings, start="/extras.html", options={"requests": posts})
    assert not [k for k in second["fetched"] if k.startswith("POST ")], second["fetched"]
    assert second["stats"]["dupefilter/filtered"] >= 3


def test_other_schemes_are_deduplicated_by_request_fingerprint(site: Site, tmp_path: Path) -> None:
    """file: and data: URLs are outside the URL tier (not http(s)): the
    dupefilter falls back to Scrapy's request fingerprint, so each is
    downloaded once, in this crawl and in a resumed one."""
    page = tmp_path / "local.html"
    page.write_text(
        "<html><head><title>本地文件</title></head><body><p>这是一份保存在本机磁盘上的说明文件，"
        "记录了测试用的网页如何通过文件协议读取，以及读取之后如何判断是否重复。</p></body></html>",
        encoding="utf-8",
    )
    data = "<html><head><title>Inline</title></head><body><p>A page carried inside its own URL.</p></body></html>"
    file_url, data_url = page.as_uri(), "data:text/html;charset=utf-8," + quote(data)
    extra = [{"url": file_url}, {"url": data_url}, {"url": file_url}, {"url": data_url}]
    settings = {**ORDERED, **SIMCRAWL, "JOBDIR": str(tmp_path / "job")}
    first = crawl(site, tmp_path, settings, start="/extras.html", options={"requests": extra})
    parsed = [i["url"] for i in first["items"]]
    assert (parsed.count(file_url), parsed.count(data_url)) == (1, 1), parsed
    assert first["stats"]["dupefilter/filtered"] == 2
    second = crawl(site, tmp_path, settings, start="/extras.html", options={"requests": extra})
    assert [i["url"] for i in second["items"]] == [site.url + "/extras.html"]


@pytest.mark.parametrize("debug", [True, False])
def test_filtered_requests_are_logged_as_scrapy_logs_them(site: Site, tmp_path: Path, debug: bool) -> None:
    """As RFPDupeFilter: at DEBUG, with the referer, every request under
    DUPEFILTER_DEBUG, else the first and "no more duplicates will be shown"."""
    settings = {**ORDERED, **SIMCRAWL, "LOG_LEVEL": "DEBUG", "DUPEFILTER_DEBUG": debug}
    r = crawl(site, tmp_path, settings)
    lines = [line for line in r["stderr"].splitlines() if "Filtered duplicate request" in line]
    assert all("[simcrawl.scrapy] DEBUG: Filtered duplicate request: <GET " in line for line in lines), lines
    if debug:
        assert len(lines) == r["stats"]["dupefilter/filtered"]
        variant = f"<GET {site.url}/other.html?spm=a2c4g.11186623&utm_campaign=x>"
        assert [line for line in lines if variant in line and f"(referer: {site.url}/)" in line], lines
    else:
        assert len(lines) == 1 and lines[0].endswith(
            " - no more duplicates will be shown (see DUPEFILTER_DEBUG to show all duplicates)"
        ), lines
        assert r["stats"]["dupefilter/filtered"] > 1
