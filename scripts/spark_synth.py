#!/usr/bin/env python3
"""A synthetic corpus for simcrawl.spark's scaling runs (scripts/spark-scale.sh).

    spark_synth.py N OUT.jsonl [SEED]

N {"url", "title", "text"} lines: about 80% original texts of 120 to 200
words drawn uniformly from a vocabulary of 20,000 made-up words of
random letters (words of a few syllables share too many 5-grams: their
sketches collide in the bands and link everything; a
Zipf-weighted draw makes every SimHash alike: the common words outweigh the
rest, so random texts land within 3 bits of each other and the whole corpus
becomes one component), 10% exact
copies under another URL, 8% copies with a few words edited, 2% pages of one
site sharing the title "Index" (one large title group). Deterministic for a
seed.
"""

import json
import random
import sys

n = int(sys.argv[1])
out = sys.argv[2]
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
letters = "abcdefghijklmnopqrstuvwxyz"
vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(4, 10))) for _ in range(20000)]
originals: list[tuple[str, str]] = []
with open(out, "w", encoding="utf-8") as f:
    for i in range(n):
        r = rng.random()
        if originals and r < 0.10:
            title, text = rng.choice(originals)
            doc = {"url": f"http://mirror{i % 97}.example/{i}", "title": title, "text": text}
        elif originals and r < 0.18:
            title, text = rng.choice(originals)
            words = text.split()
            for _ in range(rng.randint(1, 5)):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            doc = {"url": f"http://edit{i % 89}.example/{i}", "title": title, "text": " ".join(words)}
        else:
            text = " ".join(rng.choices(vocab, k=rng.randint(120, 200)))
            if r < 0.20:
                title = "Index"
                url = f"http://portal.example/index/{i}"
            else:
                title = " ".join(rng.choices(vocab, k=5))
                url = f"http://site{i % 1009}.example/a/{i}"
            originals.append((title, text))
            if len(originals) > 50000:
                originals.pop(rng.randrange(len(originals)))
            doc = {"url": url, "title": title, "text": text}
        f.write(json.dumps(doc) + "\n")
