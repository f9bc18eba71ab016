#!/usr/bin/env python3
"""Build simcrawl's HTML-path quality gate: real documentation sites as files
to serve over loopback, and the truth to score a crawl of them against.

Called by scripts/build-html-gate.sh, which fetches the Debian packages and
the Python packages (numpy, scipy, opencc) first.  See docs/EVAL.md, "The
HTML gate".

Outputs (in --out):
  site/HOST/PATH  the pages, one folder per virtual host (only .html files)
  seeds.txt       the entry pages, as http://HOST/PATH (the crawl's test adds
                  the port of its server and resolves every HOST to 127.0.0.1)
  pages.jsonl     {"url", "source", "lang", "shingles"} per page
  pairs.jsonl     {"a", "b", "jaccard", "label"} for every pair >= 0.3
  summary.json    counts per source, labels, versions

Truth: the exact Jaccard resemblance of the sets of character 5-grams of the
page's whole visible text (template, navigation and link text included: what
a reader sees), normalized as the labelled text set is (NFKC, OpenCC t2s,
lower case, letters and digits only): the same definition as
scripts/eval_set.py, whose extractor and shingles this reuses.  Every pair is
computed, none sampled.

Sources (each a kind of page that main-content extraction gets wrong):
  python-doc       Sphinx: genindex-*, contents.html, toctree pages (links)
  debian-handbook  en-US, zh-CN, zh-TW: translations with English left in
  debian-reference en, zh-cn, zh-tw
  libreoffice-help en-US, zh-CN, zh-TW: a help system whose module and
                   section pages are mostly navigation, translations with
                   untranslated strings
  maint-guide      zh-cn, zh-tw: a translated manual (DocBook)

--subset ci keeps a part of the LibreOffice help (the Calc and Math modules
and the shared pages of the help itself) so that CI crawls it in a few
minutes; --subset full keeps everything.
"""

import argparse
import json
import os
import shutil
import sys


import eval_set as es

# LibreOffice help folders (under LANG/text/) kept by the CI subset.
CI_HELP_DIRS = ("scalc/", "smath/", "shared/05/", "shared/need_help", "shared/main")


def visible(path):
    """The page's title and whole visible text (nothing marked template)."""
    title, blocks, _ = es.extract_html(path, "none")
    text = "\n".join(b for b, _ in blocks)[: es.MAX_CHARS]
    return title, text


es.TEMPLATES["none"] = lambda tag, attrs: False


def html_files(top):
    out = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".html"):
                out.append(os.path.relpath(os.path.join(dirpath, name), top))
    return sorted(out)


def sources(root, pydoc_dir, subset):
    """(source, lang, host, url path, file) for every page, in a fixed order."""
    pages = []
    short = os.path.basename(os.path.dirname(pydoc_dir.rstrip("/"))).replace("python", "")
    top = os.path.join(root, pydoc_dir.lstrip("/"))
    for rel in html_files(top):
        pages.append(("python-doc", "en", "docs.python.test", f"{short}/{rel}", os.path.join(top, rel)))
    hb = os.path.join(root, "usr/share/doc/debian-handbook/html")
    for lang in ("en-US", "zh-CN", "zh-TW"):
        for rel in html_files(os.path.join(hb, lang)):
            pages.append(("debian-handbook", lang.lower(), f"handbook.{lang.lower()}.test", rel,
                          os.path.join(hb, lang, rel)))
    ref = os.path.join(root, "usr/share/debian-reference")
    for rel in html_files(ref):
        lang = rel.rsplit(".", 2)[-2] if rel.count(".") >= 2 else "en"
        pages.append(("debian-reference", lang, "reference.test", rel, os.path.join(ref, rel)))
    help_top = os.path.join(root, "usr/share/libreoffice/help")
    for lang in ("en-US", "zh-CN", "zh-TW"):
        for rel in html_files(os.path.join(help_top, lang)):
            if subset == "ci" and not (rel.startswith("text/") and rel[5:].startswith(CI_HELP_DIRS)):
                continue
            pages.append(("libreoffice-help", lang.lower(), "help.libreoffice.test", f"{lang}/{rel}",
                          os.path.join(help_top, lang, rel)))
    for lang in ("zh-cn", "zh-tw"):
        top = os.path.join(root, f"usr/share/doc/maint-guide-{lang}/html")
        for rel in html_files(top):
            pages.append(("maint-guide", lang, "maint-guide.test", rel, os.path.join(top, rel)))
    return pages


def seeds_of(pages):
    """Entry pages: each book's index, each help module's start page."""
    want = []
    for source, lang, host, path, _ in pages:
        name = os.path.basename(path)
        if source == "libreoffice-help":
            entry = name in ("main0000.html", "new_help.html") or path.endswith("shared/05/00000110.html")
        elif source == "debian-reference":
            entry = name.startswith("index.")
        else:
            entry = name.startswith("index.") and path.count("/") <= 1
        if entry:
            want.append(f"http://{host}/{path}")
    return want


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--root", required=True, help="the unpacked Debian packages")
    ap.add_argument("--pydoc-dir", required=True, help="e.g. /usr/share/doc/python3.11/html")
    ap.add_argument("--subset", choices=("ci", "full"), default="ci")
    ap.add_argument("--versions", default="{}")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    es.JOBS = max(1, args.jobs)

    pages = sources(args.root, args.pydoc_dir, args.subset)
    site = os.path.join(args.out, "site")
    shutil.rmtree(site, ignore_errors=True)
    for _, _, host, path, src in pages:
        dst = os.path.join(site, host, path)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(src, dst)

    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(es.JOBS) as ex:
        extracted = list(ex.map(visible, [p[4] for p in pages], chunksize=16))
    urls = [f"http://{host}/{path}" for _, _, host, path, _ in pages]
    norm = es.Normalizer()
    norms = [norm(t) for _, t in extracted]
    inter, union, sizes, n_shingles, listed = es.all_resemblances(norms)
    labels = {"near": 0, "ambiguous": 0, "distinct": 0}
    near_edges = []
    with open(os.path.join(args.out, "pairs.jsonl"), "w", encoding="utf-8") as f:
        for i, j in listed:
            it, un = int(inter[i, j]), int(union[i, j])
            lab = es.label_of(it, un)
            labels[lab] += 1
            if lab == "near":
                near_edges.append((i, j))
            f.write(json.dumps({"a": urls[i], "b": urls[j], "jaccard": (it * 10**6 // un) / 10**6,
                                "label": lab}) + "\n")
    with open(os.path.join(args.out, "pages.jsonl"), "w", encoding="utf-8") as f:
        for (source, lang, _, _, _), url, (title, _), k in zip(pages, urls, extracted, sizes.tolist()):
            f.write(json.dumps({"url": url, "source": source, "lang": lang, "title": title, "shingles": k},
                               ensure_ascii=False) + "\n")
    seeds = seeds_of(pages)
    with open(os.path.join(args.out, "seeds.txt"), "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in seeds))
    by_source = {}
    for source, lang, _, _, _ in pages:
        key = f"{source}/{lang}"
        by_source[key] = by_source.get(key, 0) + 1
    comps = es.components(len(pages), near_edges)
    summary = {
        "subset": args.subset,
        "pages": len(pages),
        "pages_by_source": dict(sorted(by_source.items())),
        "seeds": len(seeds),
        "distinct_shingles": n_shingles,
        "pairs_by_label": labels,
        "near_components": len(comps),
        "docs_in_components": sum(comps),
        "versions": json.loads(args.versions),
    }
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, ensure_ascii=False, indent=2)
        f.write("\n")
    json.dump(summary, sys.stdout, ensure_ascii=False, indent=2)
    print()


if __name__ == "__main__":
    main()
