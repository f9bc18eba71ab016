#!/usr/bin/env python3
"""Build simcrawl's labelled near-duplicate evaluation set.

Called by scripts/build-eval-set.sh, which installs the Debian packages and
the Python packages (numpy, scipy, opencc) first.  See docs/eval-set.md.

Outputs (in --out):
  docs.jsonl     {"url", "title", "text"} per line: the input of `crawl dedup`
  pairs.jsonl    {"a", "b", "jaccard", "label", "kind"} for every pair whose
                 exact resemblance is >= 0.3
  meta.jsonl     {"url", "source", "lang", "page", "origin", "kind", ...}
  summary.json   counts, versions, timings

Truth: the exact Jaccard resemblance of the sets of character 5-grams of
norm(text), where norm = NFKC, then OpenCC t2s, then lower(), then keep only
characters with str.isalnum().  A normalized text shorter than 5 characters
is one shingle (the whole string).  Every pair is computed, none sampled.

Deterministic: sorted inputs, one seeded random.Random, no set iteration
order; two runs over the same package versions give identical docs.jsonl,
pairs.jsonl and meta.jsonl (summary.json differs only in "timing").
"""

import argparse
import gzip
import html.parser
import json
import os
import random
import re
import subprocess
import sys
import time
import unicodedata
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import opencc
import scipy.sparse as sp

MAX_CHARS = 200_000
NEAR, AMBIGUOUS, LISTED = (4, 5), (1, 2), (3, 10)  # 0.8, 0.5, 0.3 as fractions

# --------------------------------------------------------------------------
# HTML -> visible text blocks


BLOCK_TAGS = {
    "address", "article", "aside", "blockquote", "body", "br", "caption",
    "center", "dd", "details", "dialog", "div", "dl", "dt", "fieldset",
    "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5",
    "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section",
    "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
}
VOID_TAGS = {
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link",
    "meta", "param", "source", "track", "wbr",
}
SKIP_TAGS = {"script", "style", "head", "noscript", "template", "svg"}


class TextExtractor(html.parser.HTMLParser):
    """Visible text of a page, as blocks (one line each).

    Text inside script/style/head/noscript/template/svg is skipped; the
    <title> is kept apart.  Each block is marked as template (inside an
    element that `is_template(tag, attrs)` accepts) or main content.
    Whitespace is collapsed inside blocks; inside <pre> line breaks start
    new blocks.
    """

    def __init__(self, is_template):
        super().__init__(convert_charrefs=True)
        self.is_template = is_template
        self.stack = []  # (tag, skip, template)
        self.blocks = []  # (text, is_template)
        self.cur = []
        self.cur_tpl = False
        self.title = []
        self.in_title = False
        self.pre = 0
        self.chars = 0

    def _flags(self):
        if self.stack:
            return self.stack[-1][1], self.stack[-1][2]
        return False, False

    def _flush(self):
        if self.cur:
            text = "".join(self.cur)
            text = re.sub(r"\s+", " ", text).strip()
            if text:
                self.blocks.append((text, self.cur_tpl))
                self.chars += len(text) + 1
        self.cur = []

    def handle_starttag(self, tag, attrs):
        tag = tag.lower()
        skip, tpl = self._flags()
        if tag == "title" and not any(t == "svg" for t, _, _ in self.stack):
            self.in_title = True
        if tag in BLOCK_TAGS:
            self._flush()
        if tag in VOID_TAGS:
            return
        attrs = dict(attrs)
        self.stack.append((tag, skip or tag in SKIP_TAGS, tpl or self.is_template(tag, attrs)))
        if tag == "pre":
            self.pre += 1

    def handle_startendtag(self, tag, attrs):
        tag = tag.lower()
        if tag in BLOCK_TAGS:
            self._flush()

    def handle_endtag(self, tag):
        tag = tag.lower()
        if tag == "title":
            self.in_title = False
        if tag in VOID_TAGS:
            if tag in BLOCK_TAGS:
                self._flush()
            return
        names = [t for t, _, _ in self.stack]
        if tag not in names:
            return
        if tag in BLOCK_TAGS:
            self._flush()
        while self.stack:
            t, _, _ = self.stack.pop()
            if t == "pre":
                self.pre -= 1
            if t == tag:
                break

    def handle_data(self, data):
        if self.chars > MAX_CHARS:
            return  # the text is capped at MAX_CHARS anyway
        if self.in_title:
            self.title.append(data)
            return
        skip, tpl = self._flags()
        if skip:
            return
        if tpl != self.cur_tpl and self.cur:
            self._flush()
        self.cur_tpl = tpl
        if self.pre:
            lines = data.split("\n")
            for i, line in enumerate(lines):
                if i:
                    self._flush()
                    self.cur_tpl = tpl
                self.cur.append(line)
        else:
            self.cur.append(data)

    def close(self):
        super().close()
        self._flush()


def extract_html(path, is_template):
    with open(path, encoding="utf-8", errors="replace") as f:
        src = f.read()
    p = TextExtractor(TEMPLATES[is_template])
    p.feed(src)
    p.close()
    title = re.sub(r"\s+", " ", "".join(p.title)).strip()
    home = re.search(r'<link[^>]*rel="home"[^>]*title="([^"]*)"', src)
    return title, p.blocks, (html.unescape(home.group(1)) if home else None)


def classes(attrs):
    return set((attrs.get("class") or "").split())


def handbook_template(tag, attrs):
    return attrs.get("id") in ("banner", "title") or "docnav" in classes(attrs)


def reference_template(tag, attrs):
    return bool(classes(attrs) & {"navheader", "navfooter"})


def sphinx_template(tag, attrs):
    c = classes(attrs)
    return bool(c & {"related", "sphinxsidebar", "footer", "mobile-nav", "menu-wrapper"}) or attrs.get(
        "id"
    ) == "sidebarbutton"


TEMPLATES = {"handbook": handbook_template, "reference": reference_template, "sphinx": sphinx_template}
JOBS = 2


def extract_all(tasks):
    """extract_html over (path, template name) tasks, in order, JOBS processes."""
    if JOBS <= 1:
        return [extract_html(p, t) for p, t in tasks]
    with ProcessPoolExecutor(JOBS) as ex:
        return list(ex.map(extract_html, [p for p, _ in tasks], [t for _, t in tasks], chunksize=4))


# --------------------------------------------------------------------------
# Sources


def doc(url, title, blocks, source, lang, page, site_title=None):
    return {
        "url": url,
        "title": title,
        "blocks": blocks,
        "source": source,
        "lang": lang,
        "page": page,
        "origin": None,
        "kind": "base",
        "site_title": site_title,
        "notice": False,
        "generic_title": False,
    }


def load_handbook(root, langs):
    base = os.path.join(root, "usr/share/doc/debian-handbook/html")
    items = []
    for lang in langs:
        d = os.path.join(base, lang)
        for name in sorted(os.listdir(d)):
            if name.endswith(".html"):
                items.append((lang, name, os.path.join(d, name)))
    res = extract_all([(p, "handbook") for _, _, p in items])
    return [
        doc(f"http://handbook.{lang.lower()}.test/{name}", title, blocks, "debian-handbook", lang.lower(),
            name[:-5], home)
        for (lang, name, _), (title, blocks, home) in zip(items, res)
    ]


def load_reference(root, langs):
    d = os.path.join(root, "usr/share/debian-reference")
    items = []
    for lang in langs:
        suffix = f".{lang}.html"
        for name in sorted(os.listdir(d)):
            if name.endswith(suffix):
                items.append((lang, name[: -len(suffix)], os.path.join(d, name)))
    res = extract_all([(p, "reference") for _, _, p in items])
    return [
        doc(f"http://reference.{lang}.test/{page}.html", title, blocks, "debian-reference", lang, page, home)
        for (lang, page, _), (title, blocks, home) in zip(items, res)
    ]


def load_pydoc(pydoc_dir):
    version = os.path.basename(os.path.dirname(pydoc_dir.rstrip("/")))  # python3.11
    short = version.replace("python", "")
    out = []
    files = []
    for dirpath, dirnames, filenames in os.walk(pydoc_dir):
        dirnames.sort()
        for name in filenames:
            if name.endswith(".html"):
                files.append(os.path.relpath(os.path.join(dirpath, name), pydoc_dir))
    files.sort()
    res = extract_all([(os.path.join(pydoc_dir, rel), "sphinx") for rel in files])
    for rel, (title, blocks, _) in zip(files, res):
        site = title.rsplit(" — ", 1)[-1] if " — " in title else None
        out.append(doc(f"http://docs.python.test/{short}/{rel}", title, blocks, "python-doc", "en", rel[:-5], site))
    return out


GROFF = ["groff", "-k", "-Kutf-8", "-mandoc", "-Tutf8", "-P-c", "-P-b", "-P-o", "-P-u", "-rHY=0"]
OVERSTRIKE = re.compile(r".\x08")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def render_man(path):
    with gzip.open(path, "rb") as f:
        src = f.read()
    r = subprocess.run(GROFF, input=src, capture_output=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"groff failed on {path}: {r.stderr[:300]!r}")
    text = ANSI.sub("", OVERSTRIKE.sub("", r.stdout.decode("utf-8", errors="replace")))
    return text


def man_blocks(text):
    """Paragraphs (blank-line separated), lines stripped; the page header
    (first line) and footer (last line) are the man template."""
    # lines stripped, runs of spaces (groff's justification) collapsed
    lines = [re.sub(r" {2,}", " ", ln.strip()) for ln in text.split("\n")]
    paras, cur = [], []
    for ln in lines:
        if ln:
            cur.append(ln)
        elif cur:
            paras.append("\n".join(cur))
            cur = []
    if cur:
        paras.append("\n".join(cur))
    blocks = []
    for i, p in enumerate(paras):
        if i == 0 and "\n" not in p:
            blocks.append((p, True))
        elif i == len(paras) - 1 and "\n" not in p:
            blocks.append((p, True))
        else:
            blocks.append((p, False))
    return blocks


def load_man(root, langs):
    items = []
    for lang in langs:
        d = os.path.join(root, "usr/share/man", lang)
        for sec in sorted(os.listdir(d)):
            sd = os.path.join(d, sec)
            if not os.path.isdir(sd):
                continue
            for name in sorted(os.listdir(sd)):
                p = os.path.join(sd, name)
                if os.path.islink(p) or not os.path.isfile(p):
                    continue  # symlinked aliases would only be exact copies
                with gzip.open(p, "rb") as f:
                    head = f.read(200).lstrip()
                if head.startswith(b".so "):
                    continue
                items.append((lang, sec, name, p))
    with ThreadPoolExecutor(max(1, JOBS)) as ex:
        texts = list(ex.map(lambda it: render_man(it[3]), items))
    out = []
    for (lang, sec, name, _), text in zip(items, texts):
        stem = name[:-3] if name.endswith(".gz") else name
        mname, msec = stem.rsplit(".", 1)
        l = lang.lower().replace("_", "-")
        out.append(doc(f"http://manpages.{l}.test/{sec}/{stem}.html", f"{mname}({msec})", man_blocks(text),
                       "manpages-zh", l, f"{sec}/{stem}"))
    return out


# --------------------------------------------------------------------------
# Normalization and shingles (the truth)


class Normalizer:
    def __init__(self):
        self.t2s = opencc.OpenCC("t2s.json")
        # OpenCC only maps CJK text: pure ASCII passes through unchanged
        # (checked here so a dictionary change cannot silently break it).
        probe = "".join(chr(c) for c in range(32, 127)) + "\n"
        assert self.t2s.convert(probe) == probe

    def __call__(self, text):
        s = unicodedata.normalize("NFKC", text)
        if not s.isascii():
            s = self.t2s.convert(s)
        s = s.lower()
        return "".join(filter(str.isalnum, s))


SENTINEL = np.uint64(0x1FFFFF)  # above every code point (<= 0x10FFFF): pads short texts


def shingle_keys(norm):
    """Exact 5-gram keys: two uint64 words holding five 21-bit code points."""
    cps = np.frombuffer(norm.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    if len(cps) < 5:
        c = np.full(5, SENTINEL, dtype=np.uint64)
        c[: len(cps)] = cps
        c = c[None, :]
        cols = [c[:, i] for i in range(5)]
    else:
        n = len(cps) - 4
        cols = [cps[i : i + n] for i in range(5)]
    hi = (cols[0] << np.uint64(42)) | (cols[1] << np.uint64(21)) | cols[2]
    lo = (cols[3] << np.uint64(21)) | cols[4]
    return hi, lo


def mix64(x):
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def dedup_sorted(h, hi, lo):
    """Sort by hash, check that equal hashes mean equal keys, drop repeats."""
    order = np.argsort(h, kind="stable")
    h, hi, lo = h[order], hi[order], lo[order]
    same = h[1:] == h[:-1]
    if np.any(same & ((hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1]))):
        raise RuntimeError("64-bit shingle hash collision: change the mixer constants")
    keep = np.concatenate(([True], ~same))
    return h[keep], hi[keep], lo[keep]


def shingle_matrix(norms):
    """Binary doc x shingle CSR matrix with exact shingle identity."""
    with np.errstate(over="ignore"):
        hs, his, los, counts = [], [], [], []
        for norm in norms:
            hi, lo = shingle_keys(norm)
            h = mix64(hi ^ mix64(lo + np.uint64(0x9E3779B97F4A7C15)))
            h, hi, lo = dedup_sorted(h, hi, lo)
            hs.append(h)
            his.append(hi)
            los.append(lo)
            counts.append(len(h))
    H = np.concatenate(hs)
    HI = np.concatenate(his)
    LO = np.concatenate(los)
    del hs, his, los
    order = np.argsort(H, kind="stable")
    Hs = H[order]
    same = Hs[1:] == Hs[:-1]
    if np.any(same & ((HI[order][1:] != HI[order][:-1]) | (LO[order][1:] != LO[order][:-1]))):
        raise RuntimeError("64-bit shingle hash collision: change the mixer constants")
    ids_sorted = np.concatenate(([0], np.cumsum(~same))).astype(np.int64)
    ids = np.empty_like(ids_sorted)
    ids[order] = ids_sorted
    n_shingles = int(ids_sorted[-1]) + 1 if len(ids_sorted) else 0
    if n_shingles >= 2**31:
        raise RuntimeError("too many distinct shingles for int32 column indices")
    indptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    data = np.ones(len(ids), dtype=np.int32)
    m = sp.csr_matrix((data, ids.astype(np.int32), indptr), shape=(len(norms), n_shingles))
    m.sort_indices()
    return m, np.asarray(counts, dtype=np.int64), n_shingles


# --------------------------------------------------------------------------
# Hard negatives and planted positives

NOTICE = "本页面的翻译尚未完成，欢迎您帮助我们完善。部分段落可能仍是英文原文或机器翻译，请以英文原版为准；发现错误请到项目的问题跟踪系统报告。"
NOTICE_TITLE = "中文文档（翻译进行中）"

MIRRORS = {
    # host: (header blocks, footer blocks), one template per mirror site
    "kaiyuan-jingxiang.test": (
        ["开源镜像站", "首页 | 软件源 | 文档中心 | 使用帮助 | 关于我们", "当前位置：首页 » 文档中心 » 在线手册"],
        ["本站文档镜像自上游项目，版权归原作者所有，仅供学习交流。", "如发现内容过时，请联系镜像站管理员。",
         "© 2024 开源镜像站 · 京ICP备00000000号-1 · 联系我们 · 网站地图"],
    ),
    "wendang.linux-cn.test": (
        ["Linux 中文文档站", "命令手册 | 系统管理 | 软件包 | 社区问答 | 登录 / 注册", "搜索文档", "热门：ls grep find apt systemctl"],
        ["相关文章", "上一篇 下一篇", "分享到：微博 微信 QQ空间", "本文由社区志愿者整理，转载请注明出处。",
         "Copyright © 2023-2024 Linux 中文文档站 保留所有权利"],
    ),
    "docs-archive.test": (
        ["Docs Archive", "Home | Browse | Recent | Random page | About", "You are here: Home › Documentation › Mirror"],
        ["This page is an archived copy of upstream documentation, kept for offline reading.",
         "Archived by Docs Archive. Report a broken page.", "© 2024 Docs Archive · Privacy · Terms · Contact"],
    ),
    "devnotes.example-mirror.test": (
        ["DevNotes", "Menu: Tutorials · Reference · Cheat sheets · Blog", "Skip to content", "Table of contents"],
        ["Was this page helpful? Yes No", "Last synced from upstream documentation.",
         "DevNotes is not affiliated with the original authors. All trademarks belong to their owners.",
         "© 2022–2024 DevNotes"],
    ),
}
PLAIN_MIRRORS = ["mirror-east.test", "mirror-west.test", "ftp-mirror.test", "docs-cache.test",
                 "tw-mirror.test", "cn-mirror.test"]

PLANT_COUNTS = [
    ("exact", 35),
    ("retemplated", 50),
    ("fullwidth", 35),
    ("para-removed", 45),
    ("para-added", 45),
    ("mirror-edit", 50),
    ("s2t", 25),
    ("s2twp", 25),
    ("t2s", 20),
]


ASCII_ALNUM = re.compile(r"[A-Za-z0-9]")


def alnum_len(s):
    return sum(1 for c in s if c.isalnum())


def fullwidth(s):
    return "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalnum() else c for c in s)


def main_blocks(d):
    return [b for b, t in d["blocks"] if not t]


def cap_blocks(blocks, limit=MAX_CHARS):
    out, n = [], 0
    for b, t in blocks:
        if n + len(b) + 1 > limit:
            rest = limit - n - 1
            if rest > 0:
                out.append((b[:rest], t))
            break
        out.append((b, t))
        n += len(b) + 1
    return out


def text_of(d):
    text = "\n".join(b for b, _ in d["blocks"])
    return text[:MAX_CHARS]


def apply_hard_negatives(docs, rng):
    # Generic site titles: many real sites title every page alike.
    share = {"python-doc": 0.4, "debian-handbook": 0.25, "debian-reference": 0.25}
    for src, frac in share.items():
        pool = [d for d in docs if d["source"] == src and d["site_title"] and d["title"] != d["site_title"]]
        for d in rng.sample(pool, round(len(pool) * frac)):
            d["title"] = d["site_title"]
            d["generic_title"] = True
    # One notice box and one title on a group of short Chinese pages.
    pool = [d for d in docs if d["lang"] in ("zh-cn", "zh-tw")
            and d["source"] in ("manpages-zh", "debian-handbook")
            and 100 <= alnum_len(text_of(d)) <= 2500]
    for d in rng.sample(pool, min(60, len(pool))):
        blocks = d["blocks"]
        # after the page header (template) if there is one
        at = 1 if blocks and blocks[0][1] else 0
        d["blocks"] = blocks[:at] + [(NOTICE, False)] + blocks[at:]
        d["title"] = NOTICE_TITLE
        d["notice"] = True


WORD = re.compile(r"[A-Za-z]{4,}|[\u4e00-\u9fff]{2}")


def edit_words(blocks, rng, k):
    """Change k words (Latin words or 2-character CJK runs) of the main text
    into other words of the same page."""
    spots = []
    for bi, (b, t) in enumerate(blocks):
        if not t:
            spots.extend((bi, m.start(), m.end()) for m in WORD.finditer(b))
    if len(spots) < 2:
        return blocks
    words = sorted({blocks[bi][0][s:e] for bi, s, e in spots})
    chosen = sorted(rng.sample(spots, min(k, len(spots))), reverse=True)
    blocks = list(blocks)
    for bi, s, e in chosen:
        b, t = blocks[bi]
        old = b[s:e]
        cands = [w for w in words if w != old and len(w) == len(old)] or [w for w in words if w != old]
        if cands:
            blocks[bi] = (b[:s] + rng.choice(cands) + b[e:], t)
    return blocks


def plant(docs, rng, convs):
    base = sorted(docs, key=lambda d: d["url"])
    by_src_lang = {}
    for d in base:
        by_src_lang.setdefault((d["source"], d["lang"]), []).append(d)
    used_urls = {d["url"] for d in docs}
    out = []

    def path_of(d):
        return d["url"].split("://", 1)[1].split("/", 1)[1]

    def new_url(d, hosts):
        src = d["url"].split("://", 1)[1].split("/", 1)[0]  # handbook.zh-cn.test
        prefix = src[: -len(".test")]
        hosts = list(hosts)
        rng.shuffle(hosts)
        for h in hosts:
            u = f"http://{h}/{prefix}/{path_of(d)}"
            if u not in used_urls:
                used_urls.add(u)
                return u, h
        raise RuntimeError("no free mirror url")

    def copy(d, kind, blocks, title, hosts=PLAIN_MIRRORS):
        url, host = new_url(d, hosts)
        c = dict(d)
        c.update(url=url, blocks=cap_blocks(blocks), title=title, origin=d["url"], kind=kind)
        out.append(c)
        return host

    def eligible(kind):
        if kind in ("s2t", "s2twp"):
            return [d for d in base if d["lang"] == "zh-cn"]
        if kind == "t2s":
            return [d for d in base if d["lang"] == "zh-tw"]
        if kind == "fullwidth":
            return [d for d in base if len(ASCII_ALNUM.findall(text_of(d))) >= 100]
        if kind == "para-removed":
            return [d for d in base if sum(1 for b in main_blocks(d) if alnum_len(b) >= 20) >= 4]
        if kind == "para-added":
            return [d for d in base if len(main_blocks(d)) >= 2 and len(by_src_lang[(d["source"], d["lang"])]) > 1]
        return list(base)

    for kind, count in PLANT_COUNTS:
        pool = eligible(kind)
        for d in rng.sample(pool, min(count, len(pool))):
            blocks = d["blocks"]
            if kind == "exact":
                copy(d, kind, blocks, d["title"])
            elif kind == "retemplated":
                hosts = sorted(MIRRORS)
                url, host = new_url(d, hosts)
                head, foot = MIRRORS[host]
                nb = [(b, True) for b in head] + [(b, False) for b in main_blocks(d)] + [(b, True) for b in foot]
                title = d["title"] + " - " + head[0]
                c = dict(d)
                c.update(url=url, blocks=cap_blocks(nb), title=title, origin=d["url"], kind=kind)
                out.append(c)
            elif kind == "fullwidth":
                copy(d, kind, [(fullwidth(b), t) for b, t in blocks], fullwidth(d["title"]))
            elif kind == "para-removed":
                idx = [i for i, (b, t) in enumerate(blocks) if not t and alnum_len(b) >= 20]
                drop = rng.choice(idx)
                copy(d, kind, blocks[:drop] + blocks[drop + 1 :], d["title"])
            elif kind == "para-added":
                donors = [x for x in by_src_lang[(d["source"], d["lang"])] if x["url"] != d["url"]]
                donor = rng.choice(donors)
                paras = [b for b in main_blocks(donor) if alnum_len(b) >= 20] or main_blocks(donor)
                para = rng.choice(paras) if paras else donor["title"]
                idx = [i for i, (b, t) in enumerate(blocks) if not t]
                at = rng.choice(idx + [idx[-1] + 1])
                copy(d, kind, blocks[:at] + [(para, False)] + blocks[at:], d["title"])
            elif kind == "mirror-edit":
                nb = edit_words(blocks, rng, rng.randint(3, 6))
                y, m, dd = rng.randint(2019, 2024), rng.randint(1, 12), rng.randint(1, 28)
                if d["lang"].startswith("zh"):
                    line = f"最后更新：{y}年{m}月{dd}日"
                else:
                    line = f"Last updated: {y}-{m:02d}-{dd:02d}"
                at = 1 if nb and nb[0][1] else 0
                if rng.random() < 0.5:
                    nb = nb[:at] + [(line, False)] + nb[at:]
                else:
                    nb = nb + [(line, False)]
                copy(d, kind, nb, d["title"])
            elif kind in ("s2t", "s2twp", "t2s"):
                cv = convs[kind]
                c = [(cv.convert(b), t) for b, t in blocks]
                copy(d, kind, c, cv.convert(d["title"]))
            else:
                raise AssertionError(kind)
    return out


# --------------------------------------------------------------------------
# Pair kinds, components


LANG_ORDER = {"zh-tw": 0, "zh-cn": 1, "en": 2, "en-us": 3}


def pair_kind(a, b):
    if a["origin"] == b["url"]:
        return a["kind"]
    if b["origin"] == a["url"]:
        return b["kind"]
    if a["origin"] and a["origin"] == b["origin"]:
        return "copy-siblings"
    if (a["source"], a["page"]) == (b["source"], b["page"]):
        if a["origin"] or b["origin"]:
            return "copy-vs-variant"
        la, lb = sorted([a["lang"], b["lang"]], key=lambda x: LANG_ORDER.get(x, 9))
        return f"{la}-vs-{lb}"
    if a["notice"] and b["notice"]:
        return "same-notice"
    if a["title"] == b["title"]:
        return "same-title"
    return "organic"


def components(n, edges):
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in edges:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    sizes = {}
    for i in range(n):
        r = find(i)
        sizes[r] = sizes.get(r, 0) + 1
    return sorted((s for s in sizes.values() if s > 1), reverse=True)


def all_resemblances(norms):
    """Exact shingle-set intersection and union sizes of every pair of the
    normalized texts (dense matrices), the texts' shingle counts, the
    number of distinct shingles, and the pairs (i, j), i < j, whose
    resemblance is listed (>= LISTED), in row order."""
    a, sizes, n_shingles = shingle_matrix(norms)
    inter = (a @ a.T).toarray().astype(np.int64)
    union = sizes[:, None] + sizes[None, :] - inter
    ii, jj = np.nonzero(np.triu(inter * LISTED[1] >= LISTED[0] * union, 1))
    return inter, union, sizes, n_shingles, list(zip(ii.tolist(), jj.tolist()))


def label_of(inter, union):
    if inter * NEAR[1] >= NEAR[0] * union:
        return "near"
    if inter * AMBIGUOUS[1] >= AMBIGUOUS[0] * union:
        return "ambiguous"
    return "distinct"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--root", default="/", help="where the Debian packages' files are (/ or an unpacked tree)")
    ap.add_argument("--pydoc-dir", required=True, help="e.g. /usr/share/doc/python3.11/html")
    ap.add_argument("--versions", default="{}", help="JSON object: package -> version, for the summary")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    global JOBS
    JOBS = max(1, args.jobs)

    timing = {}
    t_all = time.time()
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)

    def step(name, t0):
        timing[name] = round(time.time() - t0, 2)
        print(f"  {name}: {timing[name]:.1f}s", file=sys.stderr, flush=True)

    t0 = time.time()
    docs = []
    docs += load_handbook(args.root, ["en-US", "zh-CN", "zh-TW"])
    docs += load_reference(args.root, ["en", "zh-cn", "zh-tw"])
    docs += load_pydoc(os.path.join(args.root, args.pydoc_dir.lstrip("/")))
    step("extract_html", t0)
    t0 = time.time()
    docs += load_man(args.root, ["zh_CN", "zh_TW"])
    step("render_man", t0)

    t0 = time.time()
    for d in docs:
        d["blocks"] = cap_blocks(d["blocks"])
    docs = [d for d in docs if d["blocks"]]
    apply_hard_negatives(docs, rng)
    convs = {k: opencc.OpenCC(f"{k}.json") for k in ("s2t", "s2twp", "t2s")}
    docs += plant(docs, rng, convs)
    rng.shuffle(docs)
    urls = [d["url"] for d in docs]
    assert len(set(urls)) == len(urls), "duplicate url"
    texts = [text_of(d) for d in docs]
    step("plant", t0)

    t0 = time.time()
    norm = Normalizer()
    norms = [norm(t) for t in texts]
    step("normalize", t0)

    t0 = time.time()
    A, sizes, n_shingles = shingle_matrix(norms)
    step("shingles", t0)

    t0 = time.time()
    inter = (A @ A.T).toarray().astype(np.int64)
    step("all_pairs", t0)

    t0 = time.time()
    n = len(docs)
    union = sizes[:, None] + sizes[None, :] - inter
    listed = np.triu(inter * LISTED[1] >= LISTED[0] * union, 1)
    ii, jj = np.nonzero(listed)
    pairs = []
    near_edges = []
    for i, j in zip(ii.tolist(), jj.tolist()):
        it, un = int(inter[i, j]), int(union[i, j])
        lab = label_of(it, un)
        pairs.append({
            "a": urls[i], "b": urls[j],
            "jaccard": (it * 10**6 // un) / 10**6,
            "label": lab, "kind": pair_kind(docs[i], docs[j]),
        })
        if lab == "near":
            near_edges.append((i, j))
    comps = components(n, near_edges)

    # Same-title pairs over ALL pairs (most are below 0.3 and not listed).
    by_title = {}
    for i, d in enumerate(docs):
        by_title.setdefault(d["title"], []).append(i)
    # Only pairs that nothing but the title relates (no copy, no variant).
    st = {"pairs": 0, "near": 0, "ambiguous": 0, "distinct": 0, "below_0.3": 0}
    for idx in by_title.values():
        for x in range(len(idx)):
            for y in range(x + 1, len(idx)):
                i, j = idx[x], idx[y]
                if pair_kind(docs[i], docs[j]) != "same-title":
                    continue
                it, un = int(inter[i, j]), int(union[i, j])
                st["pairs"] += 1
                if it * LISTED[1] < LISTED[0] * un:
                    st["below_0.3"] += 1
                else:
                    st[label_of(it, un)] += 1
    step("label", t0)

    t0 = time.time()
    with open(os.path.join(args.out, "docs.jsonl"), "w", encoding="utf-8") as f:
        for d, t in zip(docs, texts):
            f.write(json.dumps({"url": d["url"], "title": d["title"], "text": t}, ensure_ascii=False) + "\n")
    with open(os.path.join(args.out, "pairs.jsonl"), "w", encoding="utf-8") as f:
        for p in pairs:
            f.write(json.dumps(p, ensure_ascii=False) + "\n")
    with open(os.path.join(args.out, "meta.jsonl"), "w", encoding="utf-8") as f:
        for d, k in zip(docs, sizes.tolist()):
            f.write(json.dumps({
                "url": d["url"], "source": d["source"], "lang": d["lang"], "page": d["page"],
                "origin": d["origin"], "kind": d["kind"], "notice": d["notice"],
                "generic_title": d["generic_title"], "shingles": k,
            }, ensure_ascii=False) + "\n")
    step("write", t0)

    def count(keyf, items):
        c = {}
        for x in items:
            k = keyf(x)
            c[k] = c.get(k, 0) + 1
        return dict(sorted(c.items()))

    base_docs = [d for d in docs if d["kind"] == "base"]
    kinds = {}
    for p in pairs:
        kinds.setdefault(p["kind"], {"near": 0, "ambiguous": 0, "distinct": 0})[p["label"]] += 1
    summary = {
        "docs": n,
        "docs_by_source": count(lambda d: d["source"], base_docs) | {"planted": n - len(base_docs)},
        "docs_by_source_lang": count(lambda d: f'{d["source"]}/{d["lang"]}', base_docs),
        "planted_by_kind": count(lambda d: d["kind"], [d for d in docs if d["kind"] != "base"]),
        "notice_group": sum(d["notice"] for d in docs if d["kind"] == "base"),
        "generic_titles": sum(d["generic_title"] for d in docs if d["kind"] == "base"),
        "text_chars": sum(len(t) for t in texts),
        "normalized_chars": sum(len(x) for x in norms),
        "distinct_shingles": n_shingles,
        "pairs_listed": len(pairs),
        "pairs_by_label": count(lambda p: p["label"], pairs),
        "pairs_by_kind": dict(sorted(kinds.items())),
        "same_title_all_pairs": st,
        "near_components": {
            "count": len(comps),
            "docs_in_components": sum(comps),
            "largest": comps[0] if comps else 0,
            "size_distribution": {str(k): v for k, v in sorted(count(lambda s: s, comps).items())},
        },
        "seed": args.seed,
        "versions": json.loads(args.versions) | {"python": sys.version.split()[0], "numpy": np.__version__,
                                                  "scipy": __import__("scipy").__version__,
                                                  "opencc": getattr(opencc, "__version__", "?")},
    }
    timing["python_total"] = round(time.time() - t_all, 2)
    summary["timing"] = timing
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, ensure_ascii=False, indent=2)
        f.write("\n")
    print_summary(summary)


def print_summary(s):
    print(f"docs: {s['docs']}")
    for k, v in s["docs_by_source"].items():
        print(f"  {k:20s} {v}")
    for k, v in s["docs_by_source_lang"].items():
        print(f"    {k:28s} {v}")
    print("planted by kind: " + ", ".join(f"{k}={v}" for k, v in s["planted_by_kind"].items()))
    print(f"notice group: {s['notice_group']}, generic titles: {s['generic_titles']}")
    print(f"distinct shingles: {s['distinct_shingles']}, normalized chars: {s['normalized_chars']}")
    print(f"pairs with J >= 0.3: {s['pairs_listed']}  " + ", ".join(f"{k}={v}" for k, v in s["pairs_by_label"].items()))
    print(f"  {'kind':18s} {'near':>6s} {'ambig':>6s} {'dist':>6s}")
    for k, v in s["pairs_by_kind"].items():
        print(f"  {k:18s} {v['near']:6d} {v['ambiguous']:6d} {v['distinct']:6d}")
    st = s["same_title_all_pairs"]
    print(f"same-title pairs (all): {st['pairs']}: near={st['near']} ambiguous={st['ambiguous']} "
          f"distinct(0.3-0.5)={st['distinct']} below 0.3={st['below_0.3']}")
    c = s["near_components"]
    print(f"near components: {c['count']} (docs in them {c['docs_in_components']}, largest {c['largest']}), "
          "sizes: " + ", ".join(f"{k}:{v}" for k, v in c["size_distribution"].items()))
    print("timing (s): " + ", ".join(f"{k}={v}" for k, v in s["timing"].items()))


if __name__ == "__main__":
    main()
