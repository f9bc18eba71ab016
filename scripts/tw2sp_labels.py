#!/usr/bin/env python3
"""Second truth for a labelled set with zh-TW and zh-CN pages (issue 35):
writes SET/pairs_tw2sp.jsonl, SET/pairs.jsonl with every zh-tw/zh-cn pair
scored by the larger of its resemblance and the one with the zh-tw text
converted by OpenCC tw2sp (Taiwan phrases: 軟體 -> 软件, 程式 -> 程序) before
the usual normalization. pairs.jsonl's plain t2s keeps Taiwan vocabulary
apart, so a Taiwan edition of a mainland page looks distinct to it.

  scripts/tw2sp_labels.py SET

SET is a set of HTML pages (pages.jsonl with url and lang, site/HOST/PATH:
scripts/build-html-gate.sh) or of texts (docs.jsonl with url and text,
meta.jsonl with url and lang: scripts/build-eval-set.sh). The truth measure
is the builders' own (eval_set.Normalizer, character 5-gram Jaccard over
the visible text). scripts/manpage_set.py calls write_labels on the set it built.
"""

import json
import os
import re
import sys

import numpy as np
import opencc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import eval_set as es  # noqa: E402
import html_gate as hg  # noqa: E402

URL = re.compile(r"^https?://([^/:]+)(?::\d+)?/(.*)$")


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def chinese_texts(root):
    """(url, lang, text) of every zh-tw and zh-cn page of the set."""
    pages = os.path.join(root, "pages.jsonl")
    if os.path.exists(pages) and os.path.isdir(os.path.join(root, "site")):
        out = []
        for p in read_jsonl(pages):
            if p.get("lang") not in ("zh-tw", "zh-cn"):
                continue
            m = URL.match(p["url"])
            if not m:
                sys.exit(f"{pages}: not an http URL: {p['url']!r}")
            out.append((p["url"], p["lang"], hg.visible(os.path.join(root, "site", *m.groups()))[1]))
        return out
    langs = {m["url"]: m.get("lang") for m in read_jsonl(os.path.join(root, "meta.jsonl"))}
    return [
        (d["url"], langs[d["url"]], d["text"])
        for d in read_jsonl(os.path.join(root, "docs.jsonl"))
        if langs.get(d["url"]) in ("zh-tw", "zh-cn")
    ]


def write_labels(root):
    """Writes ROOT/pairs_tw2sp.jsonl and says what it holds."""
    docs = chinese_texts(root)
    tw = opencc.OpenCC("tw2sp.json")
    norm = es.Normalizer()
    norms = [norm(tw.convert(t) if lang == "zh-tw" else t) for _, lang, t in docs]
    inter, union, _, _, _ = es.all_resemblances(norms)
    is_tw = np.array([lang == "zh-tw" for _, lang, _ in docs])
    mixed = np.triu(is_tw[:, None] != is_tw[None, :], 1)
    listed = mixed & (inter * es.LISTED[1] >= es.LISTED[0] * union)
    better = {}
    for i, j in zip(*np.nonzero(listed)):
        a, b = docs[i][0], docs[j][0]
        better[frozenset((a, b))] = (a, b, int(inter[i, j]), int(union[i, j]))

    out, raised, added = [], 0, 0
    for p in read_jsonl(os.path.join(root, "pairs.jsonl")):
        hit = better.pop(frozenset((p["a"], p["b"])), None)
        if hit and hit[2] / hit[3] > p["jaccard"]:
            p["jaccard"] = (hit[2] * 10**6 // hit[3]) / 10**6
            p["label"] = es.label_of(hit[2], hit[3])
            raised += 1
        out.append(p)
    for a, b, it, un in better.values():
        out.append({"a": a, "b": b, "jaccard": (it * 10**6 // un) / 10**6, "label": es.label_of(it, un),
                    "kind": "zh-tw-vs-zh-cn"})
        added += 1
    with open(os.path.join(root, "pairs_tw2sp.jsonl"), "w", encoding="utf-8") as f:
        for p in out:
            f.write(json.dumps(p, ensure_ascii=False) + "\n")
    near = sum(1 for p in out if p["label"] == "near")
    print(f"{root}/pairs_tw2sp.jsonl: {len(out)} pairs ({near} near), {raised} zh-tw/zh-cn pairs scored higher "
          f"by tw2sp, {added} listed only by it ({len(docs)} Chinese pages)")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    write_labels(sys.argv[1])


if __name__ == "__main__":
    main()
