#!/usr/bin/env python3
"""How many output lines of `crawl dedup` carry the right `lang` (issue 27):
joins a labelled set's meta.jsonl (its `lang`, the language of the page's
source) with the kept and duplicate lines of an output folder.
  scripts/lang_score.py target/eval-set/meta.jsonl OUT
A label's region is dropped (en-us -> en) and both Chinese scripts are zh,
as the crawl answers. URL-tier drops carry no `lang` and are skipped."""

import json
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    labels = {}
    for line in open(sys.argv[1], encoding="utf-8"):
        d = json.loads(line)
        labels[d["url"]] = (d.get("lang") or "").split("-")[0] or None
    right = wrong = uncalled = 0
    for name in ("kept.jsonl", "duplicates.jsonl"):
        for line in open(f"{sys.argv[2]}/{name}", encoding="utf-8"):
            d = json.loads(line)
            if d["url"] not in labels or d.get("tier") == "url":
                continue
            got, truth = d.get("lang"), labels[d["url"]]
            if got is None:
                uncalled += 1
            elif got == truth:
                right += 1
            else:
                wrong += 1
    print(f"right {right}  wrong {wrong}  uncalled {uncalled}")


if __name__ == "__main__":
    main()
