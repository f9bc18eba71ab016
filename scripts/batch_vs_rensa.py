#!/usr/bin/env python3
"""rensa (Rust MinHash LSH behind Python, PyPI `rensa`) over the same corpus
as `crawl dedup`, as its README has a user write it (issue 37, target 3):
whitespace tokens, an `RMinHash` of 128 permutations per text, an
`RMinHashLSH` (threshold 0.8, 16 bands) queried and filled in corpus order;
a text is a copy of the first candidate whose estimated Jaccard reaches
the threshold.

    batch_vs_rensa.py CORPUS.jsonl OUT_DIR

reads {"url", "text"} lines, writes OUT_DIR/kept.jsonl ({"url"}) and
OUT_DIR/duplicates.jsonl ({"url", "duplicate_of"}) so that `crawl eval
--crawled OUT_DIR` scores it like the crawl, and prints one JSON line:
{"docs": N, "kept": K, "wall_s": W}, wall time from before `import rensa`
to the last document (the process's own start-up is measured by the
caller's clock).
"""

import json
import os
import sys
import time

t0 = time.monotonic()
from rensa import RMinHash, RMinHashLSH  # noqa: E402

THRESHOLD = 0.8
PERM = 128
BANDS = 16

lsh = RMinHashLSH(threshold=THRESHOLD, num_perm=PERM, num_bands=BANDS)
hashes = []
urls = []
out = sys.argv[2]
os.makedirs(out, exist_ok=True)
docs = kept = 0
with open(sys.argv[1], encoding="utf-8") as f, open(
    os.path.join(out, "kept.jsonl"), "w", encoding="utf-8"
) as k, open(os.path.join(out, "duplicates.jsonl"), "w", encoding="utf-8") as d:
    for line in f:
        doc = json.loads(line)
        m = RMinHash(num_perm=PERM, seed=42)
        m.update((doc.get("text") or "").split())
        docs += 1
        of = None
        for c in lsh.query(m):
            if hashes[c].jaccard(m) >= THRESHOLD:
                of = urls[c]
                break
        if of is None:
            lsh.insert(len(hashes), m)
            hashes.append(m)
            urls.append(doc["url"])
            kept += 1
            k.write(json.dumps({"url": doc["url"]}) + "\n")
        else:
            d.write(json.dumps({"url": doc["url"], "duplicate_of": of, "tier": "content"}) + "\n")
print(json.dumps({"docs": docs, "kept": kept, "wall_s": time.monotonic() - t0}))
