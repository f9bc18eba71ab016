#!/usr/bin/env python3
"""Build simcrawl's API-reference set (issue 35, "a gate per genre") in the
HTML gate's format: real generated API documentation from Debian packages,
one host per source, and the exact resemblance of every pair of pages.

Called by scripts/build-apiref-set.sh, which fetches the Debian packages and
the Python packages (numpy, scipy, opencc) first.  See docs/eval-apiref.md.

Outputs (in --out), the format of scripts/build-multilang-set.sh:
  site/HOST/PATH  the sampled pages under their packaged paths (so the
                  links between sampled pages work), plus one added
                  gate-index.html per host linking to every sampled page
  seeds.txt       http://HOST/gate-index.html and the source's own entry page
  pages.jsonl     {"url", "source", "lang", "title", "shingles", "generator"}
  pairs.jsonl     {"a", "b", "jaccard", "label"} for every pair >= 0.3
  docs.jsonl      {"url", "title", "html"} per page (`crawl dedup --input`),
                  a seeded shuffle
  summary.json    counts per source, labels, components, versions

Truth: scripts/html_gate.py's (the whole visible text, template and
navigation included, character 5-grams after NFKC, OpenCC t2s, lower case,
letters and digits only), with its extractor (`html_gate.visible`) and
`eval_set.all_resemblances`; every pair computed.

Sources (generator: package, what is kept):
  doxygen   sdl2.doxygen.test       libsdl2-doc: every page (file pages, their
                                    _source listings, struct pages, the
                                    globals_*/functions_* letter lists)
  doxygen   libstdcxx.doxygen.test  libstdc++-12-doc user/: every index and
                                    letter list (functions_*, namespacemembers_*)
                                    and a seeded sample of class/file pages
                                    and source listings
  javadoc   commons-lang3.javadoc.test  libcommons-lang3-java-doc: the
                                    overview pages and the packages lang3,
                                    lang3.builder, lang3.function (class,
                                    class-use, package pages, src-html)
  javadoc   junit4.javadoc.test     junit4-doc api/: everything but a seeded
                                    part of src-html
  rustdoc   rust.rustdoc.test       rust-doc: the same modules from core/alloc
                                    and from std, which re-exports them
                                    (option, result, cell, cmp, iter, fmt,
                                    vec, string, hash_map; redirect pages left out)
  gtk-doc   glib.gtkdoc.test        libglib2.0-doc: glib, gobject, gio
  sphinx    werkzeug.sphinx.test    python-werkzeug-doc: every page

Deterministic: sorted inputs and random.Random seeded per source.
"""

import argparse
import json
import os
import random
import re
import shutil
import sys

import eval_set as es
import html_gate as hg

DOC = "usr/share/doc"
# keep-always patterns (lists and indexes: the pages that share a title),
# and the cap on the rest (a seeded sample)
SOURCES = [
    # (source, generator, host, top dir in the root, entry page, select, keep, cap of the rest)
    ("sdl2", "doxygen", "sdl2.doxygen.test", f"{DOC}/libsdl2-doc/html", "index.html",
     None, None, None),
    ("libstdc++", "doxygen", "libstdcxx.doxygen.test", f"{DOC}/gcc-12-base/libstdc++/user", "index.html",
     r"^(?!dir_)", r"^(?!a\d)", 300),
    ("commons-lang3", "javadoc", "commons-lang3.javadoc.test", f"{DOC}/libcommons-lang3-java/api", "index.html",
     r"^[^/]*$|^(src-html/)?org/apache/commons/lang3/((builder|function)/)?(class-use/)?[^/]*$", None, None),
    ("junit4", "javadoc", "junit4.javadoc.test", f"{DOC}/junit4/api", "index.html",
     None, r"^(?!src-html/)", 60),
    ("rust", "rustdoc", "rust.rustdoc.test", f"{DOC}/rust-doc/html", "std/index.html",
     r"^(core|std|alloc)/index\.html$|^(core|std)/(option|result|cell|cmp|iter|fmt)/[^/]*$"
     r"|^(alloc|std)/(vec|string)/[^/]*$|^std/collections/hash_map/[^/]*$", None, None),
    ("glib", "gtk-doc", "glib.gtkdoc.test", "usr/share/gtk-doc/html", "glib/index.html",
     r"^(glib|gobject|gio)/", None, None),
    ("werkzeug", "sphinx", "werkzeug.sphinx.test", f"{DOC}/python-werkzeug-doc/html", "index.html",
     None, None, None),
]
# A second list, never used to tune a rule (`--sources heldout`,
# APIREF_SOURCES=heldout scripts/build-apiref-set.sh): other packages, and
# two generators the gate's list has not (Crystal's doc generator, and
# cppreference's MediaWiki export), to see whether the rules fitted on the
# list above hold on sites they were not fitted to (docs/eval-apiref.md).
HELDOUT_SOURCES = [
    ("ant", "javadoc", "ant.javadoc.test", f"{DOC}/ant/api", "index.html",
     r"^[^/]*$|^org/apache/tools/ant/types/", r"^[^/]*$", 220),
    ("crystal", "crystal-docs", "crystal.crystaldoc.test", f"{DOC}/crystal/api-docs", "index.html",
     None, r"^[^/]*$", 260),
    ("cppreference", "mediawiki", "cppreference.mediawiki.test", "usr/share/cppreference/doc/html/en/cpp",
     "container.html", r"^container(\.html$|/[^=%]*$)", None, None),
    ("eigen", "doxygen", "eigen.doxygen.test", f"{DOC}/libeigen3-dev/html", "index.html",
     r"^(?!navtree)", r"^(index|modules|annotated|classes|files|functions|namespaces)\.html$", 300),
    ("xerces", "doxygen", "xerces.doxygen.test", f"{DOC}/libxerces-c-doc/html", "index.html",
     None, r"^[^/]*$", 220),
    ("gtk3", "gtk-doc", "gtk3.gtkdoc.test", "usr/share/gtk-doc/html/gtk3", "index.html",
     None, None, None),
    ("jinja2", "sphinx", "jinja2.sphinx.test", f"{DOC}/python-jinja2-doc/html", "index.html",
     None, None, None),
]
REDIRECT = re.compile(rb'<meta http-equiv="refresh"', re.I)


def sample(root, seed, sources=SOURCES):
    """(source, generator, host, path, file) per kept page, and the seeds."""
    pages, seeds = [], []
    for source, gen, host, top, entry, select, keep, cap in sources:
        top = os.path.join(root, top)
        rels = [r for r in hg.html_files(top) if select is None or re.search(select, r)]
        rels = [r for r in rels if not REDIRECT.search(open(os.path.join(top, r), "rb").read(4096))]
        if cap is not None:
            kept = [r for r in rels if re.search(keep, r)]
            rest = [r for r in rels if not re.search(keep, r)]
            rest = sorted(random.Random(f"{seed}/{source}").sample(rest, min(cap, len(rest))))
            rels = sorted(kept + rest)
        if entry not in rels:
            raise SystemExit(f"{source}: entry page {entry} not kept")
        for r in rels:
            pages.append((source, gen, host, r, os.path.join(top, r)))
        seeds += [f"http://{host}/gate-index.html", f"http://{host}/{entry}"]
        print(f"{source}: {len(rels)} pages", file=sys.stderr)
    return pages, seeds


def index_page(title, links):
    """An added page linking to every page of a host (or a section)."""
    import html as h

    items = "".join(f'<li><a href="{h.escape(u)}">{h.escape(t)}</a></li>\n' for u, t in links)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{h.escape(title)}</title>\n'
            f"</head>\n<body>\n<h1>{h.escape(title)}</h1>\n<ul>\n{items}</ul>\n</body>\n</html>\n")


def write_set(out, pages, seeds, versions, seed, jobs, extra_summary=None):
    """Writes site/, seeds.txt, pages.jsonl, pairs.jsonl, docs.jsonl and
    summary.json. pages: dicts with host, path, source, lang, html (the page's
    bytes or str) and optional extra fields for pages.jsonl."""
    site = os.path.join(out, "site")
    shutil.rmtree(site, ignore_errors=True)
    files = []
    for p in pages:
        dst = os.path.join(site, p["host"], p["path"])
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        data = p["html"] if isinstance(p["html"], bytes) else p["html"].encode("utf-8")
        with open(dst, "wb") as f:
            f.write(data)
        files.append(dst)

    from concurrent.futures import ProcessPoolExecutor

    es.JOBS = max(1, jobs)
    with ProcessPoolExecutor(es.JOBS) as ex:
        extracted = list(ex.map(hg.visible, files, chunksize=16))
    urls = [f"http://{p['host']}/{p['path']}" for p in pages]
    norm = es.Normalizer()
    norms = [norm(t) for _, t in extracted]
    inter, union, sizes, n_shingles, listed = es.all_resemblances(norms)
    labels = {"near": 0, "ambiguous": 0, "distinct": 0}
    near_edges, near_by_source, cross = [], {}, 0
    with open(os.path.join(out, "pairs.jsonl"), "w", encoding="utf-8") as f:
        for i, j in listed:
            it, un = int(inter[i, j]), int(union[i, j])
            lab = es.label_of(it, un)
            labels[lab] += 1
            if lab == "near":
                near_edges.append((i, j))
                if pages[i]["source"] == pages[j]["source"]:
                    near_by_source[pages[i]["source"]] = near_by_source.get(pages[i]["source"], 0) + 1
                else:
                    cross += 1
            f.write(json.dumps({"a": urls[i], "b": urls[j], "jaccard": (it * 10**6 // un) / 10**6,
                                "label": lab}) + "\n")
    base = {"host", "path", "source", "lang", "html"}
    with open(os.path.join(out, "pages.jsonl"), "w", encoding="utf-8") as f:
        for p, url, (title, _), k in zip(pages, urls, extracted, sizes.tolist()):
            row = {"url": url, "source": p["source"], "lang": p["lang"], "title": title, "shingles": k}
            row.update({key: v for key, v in p.items() if key not in base})
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    docs = []
    for p, url, (title, _) in zip(pages, urls, extracted):
        h = p["html"] if isinstance(p["html"], str) else p["html"].decode("utf-8", errors="replace")
        docs.append({"url": url, "title": title, "html": h})
    random.Random(f"{seed}/docs").shuffle(docs)
    with open(os.path.join(out, "docs.jsonl"), "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    with open(os.path.join(out, "seeds.txt"), "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in seeds))
    by_source = {}
    for p in pages:
        row = by_source.setdefault(p["source"], {"pages": 0})
        row["pages"] += 1
    for s, row in by_source.items():
        row["near_pairs"] = near_by_source.get(s, 0)
    comps = es.components(len(pages), near_edges)
    # same-title groups: the known hard case (sibling pages sharing a title)
    titles = {}
    for p, (title, _) in zip(pages, extracted):
        titles.setdefault((p["host"], title), 0)
        titles[(p["host"], title)] += 1
    summary = {
        "pages": len(pages),
        "sources": dict(sorted(by_source.items())),
        "seeds": len(seeds),
        "distinct_shingles": n_shingles,
        "pairs_by_label": labels,
        "near_pairs_across_sources": cross,
        "near_components": len(comps),
        "docs_in_components": sum(comps),
        "largest_components": comps[:10],
        "pages_sharing_a_title_on_their_host": sum(n for n in titles.values() if n > 1),
        "seed": seed,
        "versions": json.loads(versions),
    }
    summary.update(extra_summary or {})
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, ensure_ascii=False, indent=2)
        f.write("\n")
    json.dump(summary, sys.stdout, ensure_ascii=False, indent=2)
    print()
    return urls, extracted, inter, union


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--root", required=True, help="the unpacked Debian packages")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--versions", default="{}")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--sources", choices=["gate", "heldout"], default="gate")
    args = ap.parse_args()

    sources = HELDOUT_SOURCES if args.sources == "heldout" else SOURCES
    kept, seeds = sample(args.root, args.seed, sources)
    pages = []
    for source, gen, host, path, src in kept:
        with open(src, "rb") as f:
            pages.append({"host": host, "path": path, "source": source, "lang": "en", "html": f.read(),
                          "generator": gen})
    for source, gen, host, *_ in sources:
        links = [(p["path"], p["path"]) for p in pages if p["host"] == host]
        pages.append({"host": host, "path": "gate-index.html", "source": source, "lang": "en",
                      "html": index_page(f"{source} ({gen}): sampled pages", links), "generator": "index"})
    write_set(args.out, pages, seeds, args.versions, args.seed, args.jobs)


if __name__ == "__main__":
    main()
