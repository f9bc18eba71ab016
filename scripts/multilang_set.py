#!/usr/bin/env python3
"""Build simcrawl's multilingual near-duplicate set (issue 42) in the HTML
gate's format: real translated documentation, one small site per language
and variant, copies of a third of the pages on other hosts, and the exact
resemblance of every pair of pages' visible text.

Called by scripts/build-multilang-set.sh, which fetches the Debian packages
and the Python packages (numpy, scipy, opencc) first.  See
docs/eval-multilang.md.

Outputs (in --out), the format of scripts/build-html-gate.sh plus docs.jsonl:
  site/HOST/PATH  the pages, one folder per virtual host
  seeds.txt       http://HOST/index.html for every host (the index links to
                  every page of its host)
  pages.jsonl     {"url", "source", "lang", "title", "shingles", "kind",
                  "origin"} per page; source is LANG or LANG-noascii
  pairs.jsonl     {"a", "b", "jaccard", "label"} for every pair >= 0.3
  docs.jsonl      {"url", "title", "html"} per page: the input of
                  `crawl dedup --input` (a seeded shuffle)
  summary.json    counts per source, near pairs per source, versions

Truth: scripts/eval_set.py's definition (character 5-grams of the whole
visible text, NFKC, OpenCC t2s, lower case, letters and digits only), with
its extractor and shingles, as scripts/html_gate.py computes it.

Deterministic: sorted inputs, seeded random.Random per language and variant.
"""

import argparse
import html
import json
import os
import random
import re
import shutil
import sys
import unicodedata
import xml.etree.ElementTree as ET
import zipfile


import eval_set as es

es.TEMPLATES["none"] = lambda tag, attrs: False

# language -> ([(kind of package, its folder for the language)], the letters
# of its script: None for a Latin-script language, which has no no-ASCII
# variant)
LANGS = {
    "ru": ([("gnome", "ru")], "\u0400-\u04ff"),
    "el": ([("gnome", "el")], "\u0370-\u03ff\u1f00-\u1fff"),
    "ko": ([("gnome", "ko")], "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"),
    "es": ([("gnome", "es")], None),
    "cs": ([("gnome", "cs")], None),
    "lv": ([("gnome", "lv")], None),
    "ar": ([("handbook", "ar-MA")], "\u0600-\u06ff\u0750-\u077f"),
    "ja": ([("handbook", "ja-JP")], "\u3040-\u30ff\u4e00-\u9fff"),
    "vi": ([("handbook", "vi-VN")], None),
    "th": ([("firefox", "th")], "\u0e00-\u0e7f"),
    "he": ([("firefox", "he")], "\u0590-\u05ff"),
    "my": ([("firefox", "my")], "\u1000-\u109f"),
    "hi": ([("lohelp", "hi"), ("firefox", "hi-IN")], "\u0900-\u097f"),
    "km": ([("lohelp", "km")], "\u1780-\u17ff\u19e0-\u19ff"),
}

PER_SOURCE = 30  # distinct originals per language and variant, at most
MIN_PER_SOURCE = 24  # and at least
COPIES = 10  # of them copied onto the mirror host
MIN_CHARS = 400  # article text of an original (characters of its paragraphs)
MIN_COPY_SHINGLES = 1000  # distinct 5-grams of an original that gets copied
SPLIT_CHARS = 2600  # a longer document is cut into pages of about 1,800
PIECE_CHARS = 1800


def ws(s):
    return re.sub(r"\s+", " ", s).strip()


# --------------------------------------------------------------------------
# Sources: (doc id, title, [paragraphs]) per document, in a fixed order


MAL = "{http://projectmallard.org/1.0/}"


def mallard(path):
    root = ET.parse(path).getroot()
    title = None
    paras = []

    def walk(el):
        nonlocal title
        for ch in el:
            tag = ch.tag
            if not isinstance(tag, str) or tag == MAL + "info" or not tag.startswith(MAL):
                continue
            name = tag[len(MAL):]
            if name in ("p", "title", "screen", "code", "subtitle"):
                text = ws("".join(ch.itertext()))
                if name == "title" and title is None:
                    title = text
                elif text:
                    paras.append(text)
            else:
                walk(ch)

    walk(root)
    return title or "", paras


def load_gnome(root, folder):
    top = os.path.join(root, "usr/share/help", folder, "gnome-help")
    en = set()
    c_top = os.path.join(root, "usr/share/help/C/gnome-help")
    for name in sorted(os.listdir(c_top)):
        if name.endswith(".page"):
            en.update(mallard(os.path.join(c_top, name))[1])
    docs = []
    for name in sorted(os.listdir(top)):
        if name.endswith(".page"):
            title, paras = mallard(os.path.join(top, name))
            docs.append((name[:-5], title, [p for p in paras if p not in en]))
    return docs


def html_blocks(path):
    title, blocks, _ = es.extract_html(path, "none")
    return title, [b for b, _ in blocks]


def load_handbook(root, folder):
    top = os.path.join(root, "usr/share/doc/debian-handbook/html")
    docs = []
    for name in sorted(os.listdir(os.path.join(top, folder))):
        if not name.endswith(".html") or name == "index.html":
            continue
        en = set(html_blocks(os.path.join(top, "en-US", name))[1]) if os.path.exists(
            os.path.join(top, "en-US", name)) else set()
        title, blocks = html_blocks(os.path.join(top, folder, name))
        docs.append((name[:-5], title, [b for b in blocks if b not in en]))
    return docs


def load_lohelp(root, folder):
    top = os.path.join(root, "usr/share/libreoffice/help", folder, "text")
    docs = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".html"):
                path = os.path.join(dirpath, name)
                title, blocks = html_blocks(path)
                rel = os.path.relpath(path, top)[:-5].replace("/", "-")
                docs.append((rel, title, blocks))
    return sorted(docs)


PLACEABLE = re.compile(r"\{[^{}]*\}")
TAG = re.compile(r"<[^>]+>")


def fluent_messages(src):
    """The text of each message (value and attributes) of a Fluent file;
    messages with selectors are left out, brand terms become their name."""
    msgs, cur, bad = [], [], False

    def done():
        if cur and not bad:
            text = ws(" ".join(cur))
            if text:
                msgs.append(text)

    for line in src.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line[0] not in " \t":
            done()
            cur, bad = [], False
            if "=" in line:
                cur.append(line.split("=", 1)[1])
            continue
        s = line.strip()
        if s.startswith("."):
            cur.append(s.split("=", 1)[1] if "=" in s else "")
        elif s.startswith(("[", "*[", "}")) or "->" in s:
            bad = True
        else:
            cur.append(s)
    done()
    out = []
    for m in msgs:
        m = re.sub(r"\{\s*-brand-[a-z-]*name\s*\}", "Firefox", m)
        m = re.sub(r"\{\s*-vendor-short-name\s*\}", "Mozilla", m)
        if "{" in PLACEABLE.sub("", m) or "->" in m:
            continue
        m = ws(html.unescape(TAG.sub("", PLACEABLE.sub("", m))).replace('"', " ").replace("\\", " "))
        if len(m) > 1:
            out.append(m)
    return out


def load_firefox(root, folder):
    ext = os.path.join(root, "usr/lib/firefox-esr/browser/extensions")
    xpi = [n for n in sorted(os.listdir(ext)) if n.startswith(f"langpack-{folder}@")][0]
    docs = []
    with zipfile.ZipFile(os.path.join(ext, xpi)) as z:
        for name in sorted(z.namelist()):
            if not name.endswith(".ftl"):
                continue
            msgs = fluent_messages(z.read(name).decode("utf-8"))
            if msgs:
                # the page's title: the file's first message
                docs.append((name[:-4].replace("/", "-"), msgs[0], msgs[1:]))
    return docs


LOADERS = {"gnome": load_gnome, "handbook": load_handbook, "firefox": load_firefox, "lohelp": load_lohelp}


def script_share(s, rx):
    letters = [c for c in s if c.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for c in letters if rx.match(c)) / len(letters)


def pages_of(lang):
    """Candidate pages: (doc id, piece, title, paragraphs) with at least
    MIN_CHARS of translated text, a long document cut at paragraphs; and
    (doc id, title) of every translated document."""
    packages, letters = LANGS[lang]
    rx = re.compile(f"[{letters}]") if letters else None
    out, titles = [], []
    docs = [d for kind, folder in packages for d in LOADERS[kind](ROOT, folder)]
    for doc, title, paras in docs:
        if rx is not None:
            paras = [p for p in paras if script_share(p, rx) >= 0.5]
            if script_share(title, rx) < 0.5:
                continue
        titles.append((doc, title))
        paras = [p for p in paras if len(p) > 1]
        total = sum(len(p) for p in paras)
        if total < MIN_CHARS or not title:
            continue
        if total <= SPLIT_CHARS:
            out.append((doc, 0, title, paras))
            continue
        piece, n, k = [], 0, 0
        for p in paras:
            piece.append(p)
            n += len(p)
            if n >= PIECE_CHARS:
                out.append((doc, k, title, piece))
                piece, n, k = [], 0, k + 1
        if n >= MIN_CHARS:
            out.append((doc, k, title, piece))
    return out, titles


# --------------------------------------------------------------------------
# No-ASCII text


def no_ascii(s):
    """s without any character that is (or NFKC-folds to) an ASCII letter or digit."""
    keep = []
    for c in s:
        if c.isascii():
            if c.isalnum():
                continue
        elif any(ch.isascii() and ch.isalnum() for ch in unicodedata.normalize("NFKC", c)):
            continue
        keep.append(c)
    return ws(re.sub(r"([^\w\s])(?:\s*\1)+", r"\1", "".join(keep)))


def has_letters(s, n=2):
    return sum(1 for c in s if c.isalpha()) >= n


# --------------------------------------------------------------------------
# Pages


E = html.escape


def render(lang, site, nav, footer, title, h1, paras, extra=""):
    """A page of a host: header (site name), nav, article, footer."""
    nav_html = "".join(f'<li><a href="{E(u)}">{E(t)}</a></li>' for u, t in nav)
    foot_html = " · ".join(f'<a href="{E(u)}">{E(t)}</a>' for u, t in footer)
    body = "".join(f"<p>{E(p)}</p>\n" for p in paras)
    dir_ = ' dir="rtl"' if lang in ("ar", "he") else ""
    return (f'<!DOCTYPE html>\n<html lang="{lang}"{dir_}>\n<head>\n<meta charset="utf-8">\n'
            f"<title>{E(title)}</title>\n</head>\n<body>\n"
            f'<header><a href="/index.html">{E(site)}</a></header>\n'
            f"<nav><ul>{nav_html}</ul></nav>\n"
            f"<main><article>\n<h1>{E(h1)}</h1>\n{body}{extra}</article></main>\n"
            f"<footer>{foot_html}</footer>\n</body>\n</html>\n")


NORM = None


def shingle_count(paras):
    """Distinct 5-grams of the normalized text, as the truth counts them."""
    global NORM
    if NORM is None:
        NORM = es.Normalizer()
    n = NORM("\n".join(paras))
    return len({n[i : i + 5] for i in range(max(1, len(n) - 4))})


def fixer(variant):
    return no_ascii if variant else (lambda s: s)


def originals(lang, variant, cands):
    """The first PER_SOURCE candidates with enough text (after the removal
    of ASCII letters and digits for the no-ASCII variant)."""
    source = lang if variant == "" else f"{lang}-noascii"
    fix = fixer(variant)
    origs = []
    for doc, k, title, paras in cands:
        t = fix(title)
        ps = [q for q in (fix(p) for p in paras) if has_letters(q, 1)]
        if not has_letters(t) or sum(len(p) for p in ps) < MIN_CHARS:
            continue
        origs.append({"doc": doc, "k": k, "title": t, "paras": ps})
        if len(origs) == PER_SOURCE:
            break
    if len(origs) < MIN_PER_SOURCE:
        raise SystemExit(f"{source}: only {len(origs)} pages of >= {MIN_CHARS} characters")
    return origs


def build_source(lang, variant, origs, rng, names):
    """Pages of one source (LANG or LANG-noascii): originals on
    LANG[-noascii].docs.test, copies on LANG[-noascii].mirror.test."""
    source = lang if variant == "" else f"{lang}-noascii"
    fix = fixer(variant)
    site_name, mirror_name = (fix(n) for n in names)
    host, mhost = f"{source}.docs.test", f"{source}.mirror.test"
    for o in origs:
        slug = re.sub(r"[^A-Za-z0-9_-]+", "-", o["doc"]).strip("-")[:60] + (f"-{o['k'] + 1}" if o["k"] else "")
        o["path"] = f"doc/{slug}.html"
    # copies are made of pages with enough distinct shingles (a help page
    # that repeats a few words has few) so that a copy resembles its original
    # more than the two templates differ
    size = [shingle_count(o["paras"]) for o in origs]
    long_ = [i for i in range(len(origs)) if size[i] >= MIN_COPY_SHINGLES]
    if len(long_) < COPIES:  # the richest pages then
        long_ = sorted(sorted(range(len(origs)), key=lambda i: -size[i])[:COPIES])
    copied = sorted(rng.sample(long_, COPIES))
    # templates: the site's name (header and footer), a nav of two of its pages
    nav_ids = rng.sample([i for i in range(len(origs)) if i not in copied], 2)
    nav = [(f"/{origs[i]['path']}", origs[i]["title"]) for i in nav_ids]
    footer = [("/index.html", site_name)]
    files = []  # (host, path, source, kind, origin url, title, html)
    for o in origs:
        files.append((host, o["path"], source, "original", None, o["title"],
                      render(lang, site_name, nav, footer, o["title"], o["title"], o["paras"])))
    copies = []
    for n, i in enumerate(copied):
        o = origs[i]
        ops = rng.choice([("retitle",), ("cut",), ("syndicate",), ("retitle", "cut"), ("retitle", "syndicate"),
                          ("cut", "syndicate")])
        paras = list(o["paras"])
        if "cut" in ops:
            if len(paras) >= 3 and len(paras[-1]) <= 0.08 * sum(len(p) for p in paras):
                paras = paras[:-1]
            else:
                ops = tuple(x for x in ops if x != "cut") or ("syndicate",)
        title = o["title"]
        if "retitle" in ops:
            title = f"{o['title']} — {mirror_name}"
        extra = ""
        ourl = f"http://{host}/{o['path']}"
        if "syndicate" in ops:
            extra = f'<p class="via">↗ <a href="{E(ourl)}">{E(site_name)}</a></p>\n'
        copies.append((f"m/{n + 1:02d}-{o['path'][4:]}", title, o, paras, extra, ops, ourl))
    mnav = [(f"/{c[0]}", c[1]) for c in copies[:2]]
    mfooter = [("/index.html", mirror_name)]
    for path, title, o, paras, extra, ops, ourl in copies:
        files.append((mhost, path, source, "copy:" + "+".join(ops), ourl, title,
                      render(lang, mirror_name, mnav, mfooter, title, o["title"], paras, extra)))
    # an index page per host, linking to all of its pages
    for h, name, nv, ft in ((host, site_name, nav, footer), (mhost, mirror_name, mnav, mfooter)):
        links = [(f"/{p}", t) for hh, p, _, _, _, t, _ in files if hh == h]
        body = "<ul>\n" + "".join(f'<li><a href="{E(u)}">{E(t)}</a></li>\n' for u, t in links) + "</ul>\n"
        page = render(lang, name, nv, ft, name, name, [], body)
        files.append((h, "index.html", source, "index", None, name, page))
    return files


def main():
    global ROOT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--root", required=True, help="the unpacked Debian packages")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--versions", default="{}")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    ROOT = args.root
    es.JOBS = max(1, args.jobs)

    files = []
    for lang in sorted(LANGS):
        cands, all_titles = pages_of(lang)
        rng = random.Random(f"{args.seed}/{lang}")
        rng.shuffle(all_titles)
        # one page per document first (first pieces), then further pieces
        order = sorted(range(len(cands)), key=lambda i: (cands[i][1], rng.random()))
        cands = [cands[i] for i in order]
        # disjoint halves: even positions for LANG, odd for LANG-noascii (a
        # Latin-script language has no such variant: its words are ASCII)
        variants = (("", cands[0::2]), ("x", cands[1::2])) if LANGS[lang][1] else (("", cands),)
        chosen = [(v, originals(lang, v, half)) for v, half in variants]
        # the sites' names: titles of documents that are no page of the set
        used = {o["doc"] for _, origs in chosen for o in origs}
        titles = {o["title"] for _, origs in chosen for o in origs}
        spare, seen = [], set()
        for doc, title in all_titles:
            plain = no_ascii(title) if len(chosen) > 1 else title
            if doc not in used and title not in seen and has_letters(plain, 3) \
                    and plain not in titles and title not in titles and len(title) <= 40:
                seen.add(title)
                spare.append(title)
        if len(spare) < 2 * len(chosen):
            raise SystemExit(f"{lang}: not enough spare titles for the sites' names")
        for n, (v, origs) in enumerate(chosen):
            files += build_source(lang, v, origs, random.Random(f"{args.seed}/{lang}/{v}"),
                                  spare[2 * n : 2 * n + 2])
        print(f"{lang}: {len(cands)} candidate pages", file=sys.stderr)

    site = os.path.join(args.out, "site")
    shutil.rmtree(site, ignore_errors=True)
    paths = []
    for host, path, *_rest, page in files:
        dst = os.path.join(site, host, path)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "w", encoding="utf-8") as f:
            f.write(page)
        paths.append(dst)

    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(es.JOBS) as ex:
        extracted = list(ex.map(_visible, paths, chunksize=16))
    urls = [f"http://{h}/{p}" for h, p, *_ in files]
    norm = es.Normalizer()
    norms = [norm(t) for _, t in extracted]
    inter, union, sizes, n_shingles, listed = es.all_resemblances(norms)
    labels = {"near": 0, "ambiguous": 0, "distinct": 0}
    near_by_source, cross = {}, 0
    with open(os.path.join(args.out, "pairs.jsonl"), "w", encoding="utf-8") as f:
        for i, j in listed:
            it, un = int(inter[i, j]), int(union[i, j])
            lab = es.label_of(it, un)
            labels[lab] += 1
            if lab == "near":
                if files[i][2] == files[j][2]:
                    near_by_source[files[i][2]] = near_by_source.get(files[i][2], 0) + 1
                else:
                    cross += 1
            f.write(json.dumps({"a": urls[i], "b": urls[j], "jaccard": (it * 10**6 // un) / 10**6,
                                "label": lab}) + "\n")
    # the resemblance of each copy to its original
    index = {u: n for n, u in enumerate(urls)}
    copy_j = {}
    for n, (_, _, source, kind, origin, _, _) in enumerate(files):
        if origin:
            o = index[origin]
            copy_j.setdefault(source, []).append(int(inter[n, o]) / int(union[n, o]))
    with open(os.path.join(args.out, "pages.jsonl"), "w", encoding="utf-8") as f:
        for (_, _, source, kind, origin, _, _), url, (title, _), k in zip(files, urls, extracted, sizes.tolist()):
            lang = source.split("-")[0]
            f.write(json.dumps({"url": url, "source": source, "lang": lang, "title": title, "shingles": k,
                                "kind": kind.split(":")[0], "origin": origin}, ensure_ascii=False) + "\n")
    docs = [{"url": u, "title": t, "html": page} for u, (_, _, _, _, _, t, page) in zip(urls, files)]
    random.Random(f"{args.seed}/docs").shuffle(docs)
    with open(os.path.join(args.out, "docs.jsonl"), "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    seeds = [f"http://{h}/index.html" for h, p, *_ in files if p == "index.html"]
    with open(os.path.join(args.out, "seeds.txt"), "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in seeds))
    by_source = {}
    for _, _, source, kind, _, _, _ in files:
        row = by_source.setdefault(source, {"pages": 0, "originals": 0, "copies": 0, "index": 0})
        row["pages"] += 1
        row[{"original": "originals", "index": "index"}.get(kind, "copies")] += 1
    for source, row in by_source.items():
        row["near_pairs"] = near_by_source.get(source, 0)
        js = copy_j.get(source, [])
        row["copies_near"] = sum(1 for j in js if j >= 0.8)
        row["copy_jaccard_min"] = round(min(js), 3) if js else None
    summary = {
        "pages": len(files),
        "sources": dict(sorted(by_source.items())),
        "seeds": len(seeds),
        "distinct_shingles": n_shingles,
        "pairs_by_label": labels,
        "near_pairs_across_sources": cross,
        "seed": args.seed,
        "versions": json.loads(args.versions),
    }
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, ensure_ascii=False, indent=2)
        f.write("\n")
    print(f"{'source':<12} {'pages':>5} {'copies':>6} {'near pairs':>10} {'copies >= 0.8':>13} {'min J':>6}")
    for source, row in sorted(by_source.items()):
        print(f"{source:<12} {row['pages']:>5} {row['copies']:>6} {row['near_pairs']:>10} "
              f"{row['copies_near']:>13} {row['copy_jaccard_min']:>6}")
    print(f"pages {len(files)}, pairs {labels}, near pairs across sources {cross}")


def _visible(path):
    title, blocks, _ = es.extract_html(path, "none")
    return title, "\n".join(b for b, _ in blocks)[: es.MAX_CHARS]


ROOT = "/"

if __name__ == "__main__":
    main()
