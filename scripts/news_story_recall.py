#!/usr/bin/env python3
"""News recall split by what joins a component (issue 35): the gate's recall
over components with a page of >= 300 characters (scripts/build-news-set.sh
labels), recomputed three ways from `crawl dedup` outputs:
  - with the labels as they are (equals `crawl eval`'s figure);
  - keeping only near-duplicate edges between pages of one story (an
    original and its copies): what syndication asks of us;
  - keeping only edges between pages of different stories (listing pages,
    distinct stories whose template is most of what they show): pages the
    issue itself says must not be dropped for each other.
  scripts/news_story_recall.py SET OUT   # OUT: a `crawl dedup` output folder
"""
import json, sys, collections, re
S = sys.argv[1]; out = sys.argv[2]
pages = {json.loads(l)["url"]: json.loads(l) for l in open(f"{S}/pages.jsonl")}
strip = lambda u: re.sub(r"^(https?://[^/:]+):\d+", r"\1", u)
kept = {strip(json.loads(l)["url"]) for l in open(f"{out}/kept.jsonl")}
dropped = {strip(json.loads(l)["url"]) for l in open(f"{out}/duplicates.jsonl")}
def comps(edge_ok):
    par = {}
    def f(x):
        while par.get(x, x) != x: x = par[x]
        return x
    for l in open(f"{S}/combined_pairs.jsonl"):
        e = json.loads(l)
        if e["jaccard"] >= 0.8 and edge_ok(e):
            a, b = f(e["a"]), f(e["b"])
            if a != b: par[a] = b
    c = collections.defaultdict(list)
    for u in pages: c[f(u)].append(u)
    return [v for v in c.values() if len(v) > 1]
def score(cs):
    should = did = 0
    for c in cs:
        if max(pages[u]["page_chars"] for u in c) < 300: continue
        should += len(c) - 1
        did += min(sum(u in dropped for u in c), len(c) - 1)
    return did, should
same_story = lambda e: pages[e["a"]]["story"] is not None and pages[e["a"]]["story"] == pages[e["b"]]["story"]
for name, ok in [("labels as they are", lambda e: True), ("edges within one story only", same_story), ("edges not within one story", lambda e: not same_story(e))]:
    d, s = score(comps(ok)); print(f"{name}: {d}/{s} = {d/max(s,1):.3f}")
