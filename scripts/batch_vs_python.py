#!/usr/bin/env python3
"""The Python baseline of issue 28's batch target: what a Python user writes
to near-deduplicate a corpus with the usual packages, jieba TF-IDF weights
(`jieba.analyse.extract_tags`, every word, with weights) into a 64-bit
`simhash.Simhash`, looked up in and added to a `simhash.SimhashIndex`
(k = 3, the same Hamming bound and 4 blocks as `crawl dedup`).

    batch_vs_python.py CORPUS.jsonl

reads {"url", "title"?, "text"} lines and prints one JSON line:
{"docs": N, "kept": K, "wall_s": W}, wall time from before `import jieba`
(its dictionary load is start-up, as ours is) to the last document.
"""

import json
import sys
import time

t0 = time.monotonic()
import jieba  # noqa: E402
import jieba.analyse  # noqa: E402
from simhash import Simhash, SimhashIndex  # noqa: E402
import logging  # noqa: E402

jieba.setLogLevel(logging.WARNING)
jieba.initialize()
index = SimhashIndex([], k=3)
docs = kept = 0
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        d = json.loads(line)
        text = d.get("text") or ""
        features = jieba.analyse.extract_tags(text, topK=None, withWeight=True)
        h = Simhash(features)
        docs += 1
        if not index.get_near_dups(h):
            index.add(d["url"], h)
            kept += 1
print(json.dumps({"docs": docs, "kept": kept, "wall_s": time.monotonic() - t0}))
