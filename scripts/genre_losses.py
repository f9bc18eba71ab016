#!/usr/bin/env python3
"""What a genre-gate run got wrong, page by page (issue 35): reads the outputs
of scripts/genre-gate.sh SET OUT and lists, for the crawl (OUT/crawl-run/crawl)
and `crawl dedup` (OUT/batch):
  - false drops: drops whose named partner has exact resemblance < 0.65
  - lost pages: dropped pages that no kept page resembles at >= 0.5
  - missed near-duplicate components (>= 0.8): components that kept more than
    one page, with the kept pages' titles and the best truth between them
each with tier, basis, estimated similarity, truth, same host or not, titles.
  scripts/genre_losses.py SET OUT [--labels FILE] [--max-components N]
"""

import argparse
import json
import os
import re
from collections import defaultdict

PORT = re.compile(r"^(https?://[^/:]+):\d+")


def strip(u):
    return PORT.sub(r"\1", u)


def host(u):
    return u.split("/")[2]


def read(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("set")
    ap.add_argument("out")
    ap.add_argument("--labels")
    ap.add_argument("--max-components", type=int, default=30)
    args = ap.parse_args()
    pages = {p["url"]: p for p in read(os.path.join(args.set, "pages.jsonl"))}
    truth = {}
    near = defaultdict(set)
    for q in read(args.labels or os.path.join(args.set, "pairs.jsonl")):
        truth[frozenset((q["a"], q["b"]))] = q["jaccard"]
        if q["jaccard"] >= 0.8:
            near[q["a"]].add(q["b"])
            near[q["b"]].add(q["a"])
    comps, seen = [], set()
    for u in sorted(near):
        if u in seen:
            continue
        stack, comp = [u], []
        seen.add(u)
        while stack:
            x = stack.pop()
            comp.append(x)
            for y in near[x]:
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        comps.append(sorted(comp))

    def j(a, b):
        return truth.get(frozenset((a, b)))

    def fmt_j(v):
        return "<0.3" if v is None else f"{v:.3f}"

    def title(u):
        return pages.get(u, {}).get("title", "?")

    for name, d in (("crawl", os.path.join(args.out, "crawl-run/crawl")), ("crawl dedup", os.path.join(args.out, "batch"))):
        if not os.path.exists(os.path.join(d, "duplicates.jsonl")):
            continue
        dups = read(os.path.join(d, "duplicates.jsonl"))
        for r in dups:
            r["url"], r["duplicate_of"] = strip(r["url"]), strip(r["duplicate_of"])
        dropped = {r["url"] for r in dups}
        kept = {strip(k["url"]) for k in read(os.path.join(d, "kept.jsonl"))} - dropped
        print(f"## {name}: {len(dropped)} dropped, {len(kept & set(pages))} labelled pages kept\n")
        print("false drops (truth of the named partner < 0.65):")
        n = 0
        for r in dups:
            t = j(r["url"], r["duplicate_of"])
            if t is None or t < 0.65:
                n += 1
                same = "same host" if host(r["url"]) == host(r["duplicate_of"]) else "other host"
                print(f"- {r['url']} -> {r['duplicate_of']}: tier {r.get('tier')}, basis {r.get('basis', '-')}, "
                      f"estimated {r.get('similarity')}, truth {fmt_j(t)}, {same}; titles "
                      f"{title(r['url'])!r} / {title(r['duplicate_of'])!r}")
        print(f"({n})\n\nlost pages (no kept page >= 0.5):")
        n = 0
        by_url = {r["url"]: r for r in dups}
        for u in sorted(dropped & set(pages)):
            best = max((j(u, k) or 0 for k in kept), default=0)
            if best < 0.5:
                n += 1
                r = by_url[u]
                print(f"- {u} -> {r['duplicate_of']}: tier {r.get('tier')}, basis {r.get('basis', '-')}, "
                      f"estimated {r.get('similarity')}, truth with partner {fmt_j(j(u, r['duplicate_of']))}, "
                      f"best kept {best:.3f}; titles {title(u)!r} / {title(r['duplicate_of'])!r}")
        print(f"({n})\n\nnear-duplicate components that kept more than one page:")
        missed = []
        for comp in comps:
            k = [u for u in comp if u in kept]
            if len(k) > 1:
                missed.append((len(k) - 1, comp, k))
        missed.sort(key=lambda m: (-m[0], m[1][0]))
        by_source = defaultdict(lambda: [0, 0])
        for extra, comp, k in missed:
            s = pages[comp[0]]["source"]
            by_source[s][0] += 1
            by_source[s][1] += extra
        print("  per source (components, pages kept beyond one): "
              + ", ".join(f"{s} {a}/{b}" for s, (a, b) in sorted(by_source.items())))
        for extra, comp, k in missed[: args.max_components]:
            hosts = sorted({host(u) for u in comp})
            best = max((j(a, b) or 0) for a in k for b in k if a < b)
            titles = sorted({title(u) for u in k})
            print(f"- size {len(comp)}, kept {len(k)}, hosts {', '.join(hosts)}; best truth between kept "
                  f"{best:.3f}; kept titles {titles[:4]}{' …' if len(titles) > 4 else ''}; e.g. {k[0]} , {k[1]}")
        if len(missed) > args.max_components:
            print(f"- … {len(missed) - args.max_components} more")
        print()


if __name__ == "__main__":
    main()
