#!/usr/bin/env python3
"""Copy recall of the syndicated-news set (issue 35; docs/eval-news.md), per
language and per variant, on both paths of scripts/genre-gate.sh:

  scripts/news_copy_recall.py SET OUT [--list]

A story is its original page and its copies inside other sites' templates
(pages.jsonl `story`). Copy recall is, over all stories, the pages dropped
among a story's pages divided by the pages beyond one: a story kept once is
fully found. Component recall over whole-page labels chains stories together
through index and teaser pages (a 60-page component of 14 stories), so it
says little about copies; this is the measure the issue names.

Also counted: **wrong drops**, a story page dropped for a page that is not
a page of its story (another story, a teaser or an index page), and story
pages with no page of their story kept (**stories lost**).
"""

import argparse
import json
import os
from collections import defaultdict

from genre_losses import read, strip


def lang_of(page):
    return page["source"].split("-", 1)[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("set")
    ap.add_argument("out")
    ap.add_argument("--list", action="store_true", help="list the copies kept beyond one per story")
    args = ap.parse_args()
    pages = {p["url"]: p for p in read(os.path.join(args.set, "pages.jsonl"))}
    stories = defaultdict(list)
    for u, p in pages.items():
        if p.get("story") and p["kind"] in ("original", "copy"):
            stories[p["story"]].append(u)
    for name, d in (("crawl", os.path.join(args.out, "crawl-run/crawl")), ("crawl dedup", os.path.join(args.out, "batch"))):
        if not os.path.exists(os.path.join(d, "duplicates.jsonl")):
            continue
        dups = {strip(r["url"]): r for r in read(os.path.join(d, "duplicates.jsonl"))}
        kept_lines = {strip(k["url"]): k for k in read(os.path.join(d, "kept.jsonl"))}
        kept = set(kept_lines) - set(dups)
        rows = defaultdict(lambda: [0, 0, 0, 0, 0])  # stories, beyond one, dropped, wrong, lost
        by_variant = defaultdict(lambda: [0, 0])  # copies, dropped
        missed = []
        for sid, urls in sorted(stories.items()):
            lang = lang_of(pages[urls[0]])
            r = rows[lang]
            r[0] += 1
            r[1] += len(urls) - 1
            n_kept = sum(1 for u in urls if u in kept)
            r[2] += len(urls) - max(n_kept, 1)
            if n_kept == 0:
                r[4] += 1
            for u in urls:
                if u in dups and pages.get(strip(dups[u]["duplicate_of"]), {}).get("story") != sid:
                    r[3] += 1
                if pages[u]["kind"] == "copy":
                    v = pages[u].get("variant") or "-"
                    by_variant[v][0] += 1
                    by_variant[v][1] += u in dups
            if n_kept > 1:
                for u in urls:
                    if u in kept:
                        k = kept_lines[u]
                        missed.append((sid[:10], u, k.get("basis"), k.get("chars"), pages[u]["article_chars"], pages[u]["page_chars"]))
        print(f"## {name}: copy recall by language\n")
        print("| language | stories | pages beyond one | dropped | copy recall | wrong drops | stories lost |")
        print("|---|---|---|---|---|---|---|")
        tot = [0, 0, 0, 0, 0]
        for lang in sorted(rows):
            r = rows[lang]
            tot = [a + b for a, b in zip(tot, r)]
            print(f"| {lang} | {r[0]} | {r[1]} | {r[2]} | {r[2] / max(r[1], 1):.3f} | {r[3]} | {r[4]} |")
        print(f"| all | {tot[0]} | {tot[1]} | {tot[2]} | {tot[2] / max(tot[1], 1):.3f} | {tot[3]} | {tot[4]} |\n")
        print("| copy variant | copies | dropped |")
        print("|---|---|---|")
        for v in sorted(by_variant):
            c, dr = by_variant[v]
            print(f"| {v} | {c} | {dr} |")
        print()
        if name == "crawl dedup":
            before_template(args.set, stories, dups)
        if args.list:
            print("kept beyond one (story, url, basis, chars, article chars, page chars):")
            for m in missed:
                print("- " + " ".join(str(x) for x in m))
            print()


def before_template(set_dir, stories, dups, min_pages=5):
    """`crawl dedup` judges the lines in input order: a story page that
    comes after another page of its story is a copy to drop, and it comes
    before its host's template could be learnt when it is among the first
    `min_pages` pages of its host (the learner's `template.min_pages`).
    Prints the share dropped on either side (issue 35: copies on sites
    whose first pages arrive before any template could be learnt)."""
    with open(os.path.join(set_dir, "docs.jsonl"), encoding="utf-8") as f:
        order = [json.loads(line)["url"] for line in f]
    index = {u: i for i, u in enumerate(order)}
    seen = defaultdict(int)
    place = {}
    for u in order:
        host = u.split("/")[2]
        place[u] = seen[host]
        seen[host] += 1
    counts = defaultdict(lambda: [0, 0])  # copies, dropped
    for urls in stories.values():
        for u in sorted(urls, key=lambda u: index.get(u, len(order)))[1:]:
            if u not in place:
                continue
            c = counts[place[u] < min_pages]
            c[0] += 1
            c[1] += u in dups
    print("| later pages of a story, by their place on their host (input order) | copies | dropped | recall |")
    print("|---|---|---|---|")
    for early, label in ((True, f"among its host's first {min_pages} (no template yet)"), (False, "later")):
        c, d = counts[early]
        print(f"| {label} | {c} | {d} | {d / max(c, 1):.3f} |")
    print()


if __name__ == "__main__":
    main()
