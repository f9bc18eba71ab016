#!/usr/bin/env python3
"""Script-only and Hong Kong copies of mainland pages (issue 35, fifth round):
what folding Taiwan vocabulary (`clean.convert_chinese = "t2s_tw"`) costs the
copies it was not made for. Takes 300 zh-CN base pages of the text eval set
and an OpenCC s2t and an s2hk copy of each (900 texts), labelled by the eval
set's own truth (t2s, character 5-gram Jaccard):

  scripts/trad_copies_set.py EVAL_SET OUT
  crawl eval --input OUT/docs.jsonl --labels OUT/pairs.jsonl --set clean.convert_chinese=t2s
  crawl eval --input OUT/docs.jsonl --labels OUT/pairs.jsonl     # the default, t2s_tw

Run with the eval venv's python (numpy, opencc).
"""

import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import eval_set as es  # noqa: E402
import opencc  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(src, "meta.jsonl"), encoding="utf-8") as f:
        meta = {m["url"]: m for m in map(json.loads, f)}
    with open(os.path.join(src, "docs.jsonl"), encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    base = [d for d in docs if meta[d["url"]]["lang"] == "zh-cn" and meta[d["url"]]["kind"] == "base"]
    random.Random(7).shuffle(base)
    convs = {k: opencc.OpenCC(f"{k}.json") for k in ("s2t", "s2hk")}
    out = []
    for d in base[:300]:
        out.append({"url": d["url"], "title": d.get("title"), "text": d["text"]})
        for k, c in convs.items():
            out.append({"url": d["url"].replace("http://", f"http://{k}-copy."),
                        "title": c.convert(d.get("title") or ""), "text": c.convert(d["text"])})
    norm = es.Normalizer()
    inter, union, _, _, pairs = es.all_resemblances([norm(d["text"]) for d in out])
    with open(os.path.join(out_dir, "docs.jsonl"), "w", encoding="utf-8") as f:
        for d in out:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    with open(os.path.join(out_dir, "pairs.jsonl"), "w", encoding="utf-8") as f:
        for i, j in pairs:
            it, un = int(inter[i, j]), int(union[i, j])
            f.write(json.dumps({"a": out[i]["url"], "b": out[j]["url"], "jaccard": it / un,
                                "label": es.label_of(it, un)}) + "\n")
    print(f"{out_dir}: {len(out)} texts, {len(pairs)} listed pairs")


if __name__ == "__main__":
    main()
