#!/usr/bin/env python3
"""Build simcrawl's syndicated-news set (issue 35) in the HTML gate's format.

Called by scripts/build-news-set.sh, which makes the venv (numpy, scipy,
opencc) first.  See docs/eval-news.md.

Sources: the article-extraction benchmark (181 real news and blog pages with
their real site templates, and the human-checked article text of each:
news-LL); with --handbook, sections of the Debian Administrator's Handbook
in ten translations as extra stories (real translated text, not news:
book-LL), served as the handbook's own pages on handbook-LL.test.

Pages (all served as files under site/HOST/PATH):
  originals   every usable benchmark page, its own real HTML (scripts,
              external links and canonical hints removed), on a host named
              after its real domain (www.sfgate.com -> sfgate-com.test)
  copies      a story placed inside ANOTHER page's real template: that page's
              article region replaced by the story's paragraphs (its header,
              navigation, teasers, related links, comments and footer kept),
              on a syndicating host (news-a.test ...) whose pages all use one
              template.  Variants: same title, retitled, last paragraph cut,
              a syndication line added ("This story first appeared on ...")
  listings    each host's index page (headlines linking all its pages) and,
              on syndicating hosts, teaser pages (headline + first paragraph
              of several of its stories), in the host's template
Distinct stories sharing one template are every two pages of one
syndicating host that carry different stories: they must be kept.

Outputs (in --out):
  site/HOST/PATH     the pages
  seeds.txt          each host's index page, as http://HOST/index.html
  pages.jsonl        {"url", "source", "lang", "title", "shingles", "story",
                      "kind", "host_template", "variant"} per page
  pairs.jsonl        {"a", "b", "jaccard", "label"} for every pair >= 0.3 by
                     the WHOLE visible text (the HTML gate's truth)
  story_pairs.jsonl  {"a", "b", "jaccard", "label"} for every pair >= 0.3 by
                     the ARTICLE text as placed (the story truth, the label
                     that matters for news)
  combined_pairs.jsonl  story_pairs.jsonl's label for two story pages,
                     pairs.jsonl's for a pair with an index or teaser page:
                     what scripts/genre-gate.sh scores the set by
  docs.jsonl         {"url", "title", "html"} per page: `crawl dedup --input`
  summary.json       counts per source, labels, checks

Truth: exact Jaccard of character 5-gram sets of the text normalized as
scripts/eval_set.py does (NFKC, OpenCC t2s, lower, letters and digits only),
through its own functions.

Deterministic: sorted inputs, one seeded random.Random, no set iteration
order.
"""

import argparse
import gzip
import html
import html.parser
import json
import os
import random
import re
import shutil
import sys
import time
import urllib.parse
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import eval_set as es

es.TEMPLATES["none"] = lambda tag, attrs: False

# --------------------------------------------------------------------------
# Languages

SCRIPTS = (
    ("ko", re.compile(r"[\uac00-\ud7af]")),
    ("ja", re.compile(r"[\u3040-\u30ff]")),
    ("ru", re.compile(r"[\u0400-\u04ff]")),
    ("zh", re.compile(r"[\u4e00-\u9fff]")),
)
STOPWORDS = {
    "en": "the and of to is in that for with was on are it as have this be by from",
    "pt": "de que não uma para com os das dos em no na se mais por como ao foi são",
    "it": "il che di della non una per con gli del sono le nel alla questo anche è",
    "id": "yang dan di ini itu dengan untuk tidak dari dalam akan pada juga kita ada",
    "es": "el que los las del una por con para como pero más este está son",
    "de": "der die und das ist nicht mit den ein eine auch sich auf für von",
    "fr": "le les des une est que pas pour dans qui sur avec sont mais",
}
STOP = {lang: set(words.split()) for lang, words in STOPWORDS.items()}
WORDS = re.compile(r"[^\W\d_]+")


def detect_lang(text):
    """The story's language: by script, else by the commonest stop words."""
    for lang, pat in SCRIPTS:
        if len(pat.findall(text)) > 0.2 * max(1, len(re.findall(r"\w", text))):
            return lang
    words = [w.lower() for w in WORDS.findall(text)]
    score = {lang: sum(w in s for w in words) for lang, s in STOP.items()}
    return max(sorted(score), key=lambda k: score[k])


SYNDICATION = {
    "en": "This story first appeared on {site}. Republished with permission.",
    "pt": "Esta matéria foi publicada originalmente em {site}. Reproduzida com autorização.",
    "ru": "Этот материал впервые опубликован на сайте {site}. Перепечатано с разрешения.",
    "ko": "이 기사는 {site}에 처음 게재되었습니다. 허가를 받아 재게재합니다.",
    "ja": "この記事は{site}に最初に掲載されました。許可を得て転載しています。",
    "it": "Questo articolo è apparso originariamente su {site}. Ripubblicato con autorizzazione.",
    "id": "Artikel ini pertama kali terbit di {site}. Dimuat ulang dengan izin.",
    "de": "Dieser Beitrag erschien zuerst auf {site}. Nachdruck mit Genehmigung.",
    "es": "Este artículo se publicó originalmente en {site}. Reproducido con permiso.",
    "fr": "Cet article a d'abord été publié sur {site}. Reproduit avec autorisation.",
    "zh": "本文最初发表于{site}，经授权转载。",
}
LISTING = {  # index / teaser page headings per language of the host template
    "en": ("Latest stories", "More from this section"),
    "pt": ("Últimas notícias", "Mais desta seção"),
    "ru": ("Последние материалы", "Ещё из раздела"),
    "ko": ("최신 기사", "이 섹션의 다른 기사"),
    "ja": ("最新記事", "このセクションの他の記事"),
    "it": ("Ultime notizie", "Altro da questa sezione"),
    "id": ("Berita terbaru", "Lainnya dari rubrik ini"),
}

# --------------------------------------------------------------------------
# HTML: cleaning, the article region


SCRIPT_RE = re.compile(r"<script\b[^>]*>.*?</script\s*>", re.I | re.S)
DROP_TAG_RE = re.compile(
    r"<(?:base|link|meta)\b[^>]*?(?:\brel\s*=\s*[\"']?(?:canonical|alternate|amphtml|shortlink|next|prev)\b"
    r"|http-equiv\s*=\s*[\"']?refresh|property\s*=\s*[\"']?og:url)[^>]*>|<base\b[^>]*>",
    re.I,
)
TAG_RE = re.compile(r"<[a-zA-Z][^<>]*>")
URL_ATTR_RE = re.compile(r"""(\s(?:href|src|srcset|action|data-src|data-href|poster|cite)\s*=\s*)("[^"]*"|'[^']*'|[^\s>]+)""", re.I)


def neutral(src):
    """The page without scripts, redirects, canonical hints and external
    links: every URL attribute points to "#" (nothing leaves the gate)."""
    src = SCRIPT_RE.sub("", src)
    src = DROP_TAG_RE.sub("", src)
    return TAG_RE.sub(lambda m: URL_ATTR_RE.sub(lambda a: a.group(1) + '"#"', m.group(0)), src)


TEMPLATE_LEFT = 0.2  # most of a template page's own story that may stay
CONTAINERS = {"div", "article", "section", "main", "td", "span", "font", "center", "blockquote"}


class Elements(html.parser.HTMLParser):
    """Elements with source offsets, and the text under each."""

    def __init__(self, src, gt_norm):
        super().__init__(convert_charrefs=True)
        self.lines = [0]
        for m in re.finditer("\n", src):
            self.lines.append(m.end())
        self.gt = gt_norm
        self.el = []  # [tag, start, inner_start, inner_end, depth, matched, explicit]
        self.stack = []
        self.matched = 0
        self.h1 = None

    def off(self):
        line, col = self.getpos()
        return self.lines[line - 1] + col

    def handle_starttag(self, tag, attrs):
        if tag in es.VOID_TAGS:
            return
        start = self.off()
        raw = self.get_starttag_text() or ""
        self.el.append([tag, start, start + len(raw), None, len(self.stack), 0, False])
        self.stack.append(len(self.el) - 1)

    def handle_endtag(self, tag):
        names = [self.el[i][0] for i in self.stack]
        if tag not in names:
            return
        at = self.off()
        while self.stack:
            i = self.stack.pop()
            self.el[i][3] = at
            if self.el[i][0] == tag:
                self.el[i][6] = True
                if tag == "h1" and self.h1 is None:
                    self.h1 = i
                break

    def handle_data(self, data):
        if any(self.el[i][0] in ("script", "style", "title", "head") for i in self.stack[-3:]):
            return
        n = es_norm_plain(data)
        if len(n) >= 15 and n in self.gt:
            self.matched += len(n)
            for i in self.stack:
                self.el[i][5] += len(n)


def es_norm_plain(s):
    """Cheap normalization for matching text nodes to the ground truth."""
    return "".join(filter(str.isalnum, s.lower()))


def article_region(src, gt_text):
    """(inner start, inner end, h1 element or None, coverage) of the deepest
    container holding >= 90% of the page's ground-truth text, or None."""
    gt_norm = es_norm_plain(gt_text)
    p = Elements(src, gt_norm)
    try:
        p.feed(src)
        p.close()
    except Exception:  # noqa: BLE001 -- a page the parser cannot read is no template
        return None
    if not gt_norm or p.matched < 0.6 * len(gt_norm):
        return None
    best = None
    for e in p.el:
        tag, _, inner_start, inner_end, depth, matched, explicit = e
        if tag in CONTAINERS and explicit and matched >= 0.9 * p.matched:
            if best is None or depth > best[4]:
                best = e
    if best is None:
        return None
    h1 = None
    if p.h1 is not None:
        e = p.el[p.h1]
        if e[3] <= best[2] or e[1] >= best[3]:  # outside the region
            h1 = (e[2], e[3])
    return best[2], best[3], h1, p.matched / len(gt_norm)


def title_of(src):
    for pat in (r'<meta[^>]*property\s*=\s*["\']og:title["\'][^>]*content\s*=\s*"([^"]*)"',
                r'<meta[^>]*content\s*=\s*"([^"]*)"[^>]*property\s*=\s*["\']og:title["\']',
                r"<title[^>]*>(.*?)</title>"):
        m = re.search(pat, src, re.I | re.S)
        if m:
            t = re.sub(r"\s+", " ", html.unescape(m.group(1))).strip()
            t = re.split(r"\s+[|\u2013\u2014]\s+|\s+-\s+(?=[^-]*$)", t)[0].strip()
            if t:
                return t
    return ""


def set_title(src, title):
    t = html.escape(title, quote=False)
    if re.search(r"<title[^>]*>.*?</title>", src, re.I | re.S):
        return re.sub(r"(<title[^>]*>).*?(</title>)", lambda m: m.group(1) + t + m.group(2), src, count=1,
                      flags=re.I | re.S)
    return re.sub(r"(<head[^>]*>)", lambda m: m.group(1) + f"<title>{t}</title>", src, count=1, flags=re.I)


def paragraphs_html(paras):
    return "\n" + "\n".join(f"<p>{html.escape(p, quote=False)}</p>" for p in paras) + "\n"


# --------------------------------------------------------------------------
# Loading


def load_one(args):
    bench, sid, gt = args
    with gzip.open(os.path.join(bench, "html", sid + ".html.gz"), "rt", encoding="utf-8", errors="replace") as f:
        raw = f.read()
    src = neutral(raw)
    paras = [re.sub(r"\s+", " ", p).strip() for p in gt["articleBody"].split("\n")]
    paras = [p for p in paras if p]
    region = article_region(src, gt["articleBody"])
    if region is not None:
        # A template only if its own story is gone with the region (not
        # repeated in a summary, a second copy, long captions).
        a, b = region[0], region[1]
        ex = es.TextExtractor(es.TEMPLATES["none"])
        ex.feed(src[:a] + src[b:])
        ex.close()
        rest = set(_grams(es_norm_plain("".join(t for t, _ in ex.blocks))))
        own = set(_grams(es_norm_plain(gt["articleBody"])))
        if len(rest & own) > TEMPLATE_LEFT * len(own):
            region = None
    return {
        "id": sid,
        "url": gt["url"],
        "src": src,
        "paras": paras,
        "text": "\n".join(paras),
        "title": title_of(raw),
        "lang": detect_lang(gt["articleBody"]),
        "region": region,
    }


HB_LANGS = ("de-DE", "es-ES", "fr-FR", "it-IT", "ja-JP", "ko-KR", "pt-BR", "ru-RU", "id-ID", "zh-CN")


def load_handbook_one(args):
    lang, name, path = args
    with open(path, encoding="utf-8", errors="replace") as f:
        raw = f.read()
    title, blocks, _ = es.extract_html(path, "handbook")
    paras = [b for b, tpl in blocks if not tpl]
    short = lang.split("-")[0].lower()
    return {
        "id": f"hb-{short}-{name[:-5]}",
        "url": f"http://handbook-{short}.test/{name}",
        "src": neutral(raw),
        "paras": paras,
        "text": "\n".join(paras),
        "title": re.sub(r"\s+", " ", title).strip(),
        "lang": short,
        "region": None,
        "book": True,
    }


def load_handbook(hb_dir, rng, per_lang, jobs):
    """Translated real text as extra stories: per language, `per_lang`
    sections of the Debian Administrator's Handbook (a different section in
    each language), served as their own real HTML on handbook-LL.test."""
    if not hb_dir:
        return []
    tasks = []
    for lang in HB_LANGS:
        d = os.path.join(hb_dir, lang)
        if os.path.isdir(d):
            for name in sorted(os.listdir(d)):
                if name.endswith(".html") and name.startswith("sect"):
                    tasks.append((lang, name, os.path.join(d, name)))
    with ProcessPoolExecutor(jobs) as ex:
        loaded = list(ex.map(load_handbook_one, tasks, chunksize=8))
    by_lang = {}
    for t, st in zip(tasks, loaded):
        by_lang.setdefault(t[0], []).append(st)
    used, out = set(), []
    for lang in HB_LANGS:
        cands = by_lang.get(lang, [])
        rng.shuffle(cands)
        got = 0
        for st in cands:
            name = st["id"].split("-", 2)[2]
            n = len(es_norm_plain(st["text"]))
            if name in used or not 1500 <= n <= 8000 or len(st["paras"]) < 4 or not st["title"]:
                continue
            used.add(name)
            out.append(st)
            got += 1
            if got == per_lang:
                break
    return out


def domain_host(url):
    h = (urllib.parse.urlparse(url).hostname or "unknown").lower()
    if h.startswith("www."):
        h = h[4:]
    return re.sub(r"[^a-z0-9]+", "-", h).strip("-") + ".test"


def visible(path):
    title, blocks, _ = es.extract_html(path, "none")
    return title, "\n".join(b for b, _ in blocks)[: es.MAX_CHARS]


# --------------------------------------------------------------------------
# Building


def retitle(story, rng):
    """A new headline: the start of the story's first paragraph."""
    first = story["paras"][0]
    if story["lang"] in ("ja", "zh"):
        t = first[: rng.randint(18, 28)]
    else:
        words = first.split()
        t = " ".join(words[: rng.randint(7, 11)])
    return t.rstrip(",;:.-—").strip()


def teaser(story):
    """The start of the story's first paragraph, as listings show it."""
    first = story["paras"][0]
    if story["lang"] in ("ja", "zh", "ko"):
        cut = first[:70] if story["lang"] != "ko" else " ".join(first.split()[:12])
    else:
        cut = " ".join(first.split()[:25])
    return cut + ("…" if len(cut) < len(first) else "")


def norm_len(norm, text):
    return len(norm(text))


class Site:
    def __init__(self, out):
        self.out = out
        self.pages = []  # dicts: url, host, path, html, title, source, lang, story, article, kind, ...

    def add(self, **kw):
        self.pages.append(kw)
        return kw


def template_page(tpl, title, body_html, site_name):
    """tpl's page with its article region replaced by body_html and its
    headline (outside the region) by title."""
    src = tpl["src"]
    a, b, h1, _ = tpl["region"]
    t = html.escape(title, quote=False)
    pieces = []
    if h1 is not None and h1[1] <= a:
        pieces = [src[: h1[0]], t, src[h1[1] : a], body_html, src[b:]]
    elif h1 is not None and h1[0] >= b:
        pieces = [src[:a], body_html, src[b : h1[0]], t, src[h1[1] :]]
    else:
        pieces = [src[:a], f"\n<h1>{t}</h1>", body_html, src[b:]]
    return set_title("".join(pieces), f"{title} | {site_name}")


def link_list(items, with_teaser):
    out = ["\n<ul class=\"story-list\">"]
    for href, title, teaser in items:
        li = f'<li><a href="{href}">{html.escape(title, quote=False)}</a>'
        if with_teaser and teaser:
            li += f"<p>{html.escape(teaser, quote=False)}</p>"
        out.append(li + "</li>")
    out.append("</ul>\n")
    return "\n".join(out)


VARIANTS = ["same-title", "retitled", "cut-last", "syndication-line", "retitled+cut-last",
            "retitled+syndication-line"]


STORY_KINDS = ("original", "copy")


def write_combined(out, kinds, story_file="story_pairs.jsonl", story_kinds=STORY_KINDS):
    """combined_pairs.jsonl, the label the gate scores the set by: two story
    pages (an original or a copy) are compared by their article text as
    placed (story_pairs.jsonl: a copy inside another site's template is the
    same story, two stories in one template are not), a pair with an index
    or a teaser page by the whole visible text (pairs.jsonl: a listing has no
    article). Pairs neither file lists are below 0.3 by their own measure.
    The mail set (scripts/mailarchive_set.py) passes its message pages'
    kind and labels file: the same rule."""
    def story(u):
        return kinds.get(u) in story_kinds

    with open(os.path.join(out, "combined_pairs.jsonl"), "w", encoding="utf-8") as f:
        for name, want in ((story_file, True), ("pairs.jsonl", False)):
            with open(os.path.join(out, name), encoding="utf-8") as src:
                for line in src:
                    d = json.loads(line)
                    if (story(d["a"]) and story(d["b"])) == want:
                        f.write(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--bench", required=True, help="the article-extraction benchmark folder")
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--synd-hosts", type=int, default=26)
    ap.add_argument("--handbook", default="", help="debian-handbook's html folder: translated stories")
    ap.add_argument("--handbook-per-lang", type=int, default=3)
    args = ap.parse_args()
    es.JOBS = max(1, args.jobs)
    t0 = time.time()
    rng = random.Random(args.seed)
    norm = es.Normalizer()

    with open(os.path.join(args.bench, "ground-truth.json"), encoding="utf-8") as f:
        gt = json.load(f)
    ids = sorted(gt)
    with ProcessPoolExecutor(es.JOBS) as ex:
        loaded = list(ex.map(load_one, [(args.bench, i, gt[i]) for i in ids], chunksize=4))

    # Usable stories: enough text to be a story; distinct from one another.
    stories = [s for s in loaded if norm_len(norm, s["text"]) >= 250 and s["title"]]
    dropped_short = len(loaded) - len(stories)
    stories += load_handbook(args.handbook, rng, args.handbook_per_lang, es.JOBS)
    inter, union, *_ = es.all_resemblances([norm(s["text"]) for s in stories])
    keep = []
    for i in range(len(stories)):
        if all(inter[i, j] * 2 < union[i, j] for j in keep):
            keep.append(i)
    dropped_similar = len(stories) - len(keep)
    stories = [stories[i] for i in keep]
    by_id = {s["id"]: s for s in stories}
    for s in stories:
        s.setdefault("book", False)
        s["host"] = domain_host(s["url"]) if not s["book"] else urllib.parse.urlparse(s["url"]).hostname
        s["site_name"] = s["host"][: -len(".test")].replace("-", ".")

    # Templates: pages whose article region was found and whose own story is
    # gone once the region is replaced (checked below on the output).
    templates = [s for s in stories if s["region"] is not None]
    langs = sorted({s["lang"] for s in stories})
    print(f"stories {len(stories)} (dropped {dropped_short} short, {dropped_similar} similar), "
          f"templates {len(templates)}, languages {langs}", file=sys.stderr)

    site = Site(args.out)

    # Originals on their domains' hosts.
    for s in stories:
        path = f"/story/{s['id'][:12]}.html" if not s["book"] else urllib.parse.urlparse(s["url"]).path
        site.add(host=s["host"], path=path, html=s["src"], title=s["title"], lang=s["lang"], story=s["id"],
                 article=s["text"], kind="original", host_template=s["id"], variant="original")

    # Syndicating hosts: one template each, from distinct domains; every
    # language with a template gets at least one host in it, the rest English.
    tpl_by_lang = {}
    for t in templates:
        tpl_by_lang.setdefault(t["lang"], []).append(t)
    for v in tpl_by_lang.values():
        rng.shuffle(v)
    chosen, used_domains = [], set()
    for lang in sorted(tpl_by_lang):
        if lang == "en":
            continue
        for t in tpl_by_lang[lang][:2]:
            if t["host"] not in used_domains:
                chosen.append(t)
                used_domains.add(t["host"])
    for t in tpl_by_lang.get("en", []):
        if len(chosen) >= args.synd_hosts:
            break
        if t["host"] not in used_domains:
            chosen.append(t)
            used_domains.add(t["host"])
    letters = "abcdefghijklmnopqrstuvwxyz"
    hosts = []
    for k, t in enumerate(chosen):
        name = f"news-{letters[k % 26]}{'' if k < 26 else k // 26}.test"
        # Sizes vary: a few large hosts (a template to learn), many small
        # ones whose first pages come before any template could be learnt.
        weight = [6.0, 3.0, 1.0, 0.4][k % 4]
        hosts.append({"name": name, "tpl": t, "lang": t["lang"], "weight": weight, "stories": []})

    # Copies: every non-English story 3 times, English ones 1 or 2 times,
    # each on a host whose template is another site's (same language first).
    variant_no = 0
    copies = []
    for s in stories:
        n = 2 if s["book"] else 3 if s["lang"] != "en" else rng.choice((1, 1, 2))
        # Another site's template; where a language has one site only, its
        # other page's template (the same site's pages on a mirror host).
        cands = [h for h in hosts if h["tpl"]["host"] != s["host"]]
        if not any(h["lang"] == s["lang"] for h in cands):
            cands += [h for h in hosts if h["tpl"]["host"] == s["host"] and h["tpl"]["id"] != s["id"]]
        same = [h for h in cands if h["lang"] == s["lang"]]
        eng = [h for h in cands if h["lang"] == "en"]
        picked = []
        for _ in range(n):
            pool = [h for h in (same if same and not picked else eng) if h not in picked] or \
                   [h for h in cands if h not in picked]
            w = [h["weight"] for h in pool]
            h = rng.choices(pool, weights=w)[0]
            picked.append(h)
        for h in picked:
            variant = VARIANTS[variant_no % len(VARIANTS)]
            variant_no += 1
            # Cut only where the last paragraph is a small part of the story.
            if "cut-last" in variant:
                last = norm_len(norm, s["paras"][-1])
                if len(s["paras"]) < 3 or last > 0.1 * norm_len(norm, s["text"]):
                    variant = variant.replace("cut-last", "syndication-line")
            copies.append((s, h, variant))
            h["stories"].append((s, variant))

    for h in hosts:
        t = h["tpl"]
        for n, (s, variant) in enumerate(h["stories"]):
            paras = list(s["paras"])
            if "cut-last" in variant:
                paras = paras[:-1]
            if "syndication-line" in variant:
                line = SYNDICATION.get(s["lang"], SYNDICATION["en"]).format(site=s["site_name"])
                paras.append(line)
            title = retitle(s, rng) if "retitled" in variant else s["title"]
            page_html = template_page(t, title, paragraphs_html(paras), h["name"])
            path = f"/{['news', 'world', 'story', 'article'][n % 4]}/{s['id'][:10]}-{n}.html"
            site.add(host=h["name"], path=path, html=page_html, title=title, lang=s["lang"], story=s["id"],
                     article="\n".join(paras), kind="copy", host_template=t["id"], variant=variant)

    # Teaser pages on syndicating hosts (headline + first paragraph of up to
    # five stories), then index pages for every host.
    for h in hosts:
        own = [p for p in site.pages if p["host"] == h["name"] and p["kind"] == "copy"]
        if len(own) < 6:  # listings of a subset: not the index again
            continue
        heading = LISTING.get(h["lang"], LISTING["en"])[1]
        for k in range(0, len(own), 5):
            chunk = own[k : k + 5]
            items = [(p["path"], p["title"], teaser(by_id[p["story"]])) for p in chunk]
            body = link_list(items, True)
            page_html = template_page(h["tpl"], f"{heading} ({k // 5 + 1})", body, h["name"])
            article = "\n".join(f"{p['title']}\n{teaser(by_id[p['story']])}" for p in chunk)
            site.add(host=h["name"], path=f"/latest/{k // 5 + 1}.html", html=page_html,
                     title=f"{heading} ({k // 5 + 1})", lang=h["lang"], story=None, article=article,
                     kind="teasers", host_template=h["tpl"]["id"], variant="listing")
    host_names = sorted({p["host"] for p in site.pages})
    tpl_of_host = {h["name"]: h["tpl"] for h in hosts}
    for s in stories:
        if s["region"] is not None:
            tpl_of_host.setdefault(s["host"], s)
    for name in host_names:
        own = [p for p in site.pages if p["host"] == name]
        lang = own[0]["lang"]
        tpl = tpl_of_host.get(name)
        if tpl is not None:
            lang = tpl["lang"]
        heading = LISTING.get(lang, LISTING["en"])[0]
        items = [(p["path"], p["title"], None) for p in own]
        body = link_list(items, False)
        if tpl is not None:
            page_html = template_page(tpl, heading, body, name)
        else:
            page_html = (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{heading} | {name}"
                         f"</title></head><body><h1>{heading}</h1>{body}</body></html>")
        site.add(host=name, path="/index.html", html=page_html, title=heading, lang=lang, story=None,
                 article="\n".join(p["title"] for p in own), kind="index",
                 host_template=tpl["id"] if tpl else None, variant="listing")

    pages = sorted(site.pages, key=lambda p: (p["host"], p["path"]))
    book_ids = {s["id"] for s in stories if s["book"]}
    for p in pages:
        p["url"] = f"http://{p['host']}{p['path']}"
        book = p["story"] in book_ids or p["host"].startswith("handbook-")
        p["source"] = f"{'book' if book else 'news'}-{p['lang']}"
    # Write the site.
    sdir = os.path.join(args.out, "site")
    shutil.rmtree(sdir, ignore_errors=True)
    files = []
    for p in pages:
        dst = os.path.join(sdir, p["host"], p["path"].lstrip("/"))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "w", encoding="utf-8") as f:
            f.write(p["html"])
        files.append(dst)

    with ProcessPoolExecutor(es.JOBS) as ex:
        extracted = list(ex.map(visible, files, chunksize=8))
    urls = [p["url"] for p in pages]

    def all_pairs(texts, path):
        inter, union, sizes, _, listed = es.all_resemblances([norm(t) for t in texts])
        labels = {"near": 0, "ambiguous": 0, "distinct": 0}
        with open(path, "w", encoding="utf-8") as f:
            for i, j in listed:
                it, un = int(inter[i, j]), int(union[i, j])
                lab = es.label_of(it, un)
                labels[lab] += 1
                f.write(json.dumps({"a": urls[i], "b": urls[j], "jaccard": (it * 10**6 // un) / 10**6,
                                    "label": lab}) + "\n")
        return inter, union, sizes, labels

    w_inter, w_union, w_sizes, w_labels = all_pairs([t for _, t in extracted], os.path.join(args.out, "pairs.jsonl"))
    s_inter, s_union, _, s_labels = all_pairs([p["article"] for p in pages],
                                              os.path.join(args.out, "story_pairs.jsonl"))
    write_combined(args.out, {p["url"]: p["kind"] for p in pages})

    # Checks: copies of one story >= 0.8 by story text, different stories
    # < 0.5; the template's own story is gone from its copies.
    n = len(pages)
    story = [p["story"] for p in pages]
    same_story_min, diff_story_max = 1.0, 0.0
    same_tpl_whole = []
    problems = []
    for i in range(n):
        for j in range(i + 1, n):
            jac = s_inter[i, j] / s_union[i, j]
            if story[i] is not None and story[i] == story[j]:
                same_story_min = min(same_story_min, jac)
                if jac < 0.8:
                    problems.append(f"copies below 0.8: {urls[i]} {urls[j]} {jac:.3f}")
            elif story[i] is not None and story[j] is not None:
                diff_story_max = max(diff_story_max, jac)
                if jac >= 0.5:
                    problems.append(f"distinct stories at {jac:.3f}: {urls[i]} {urls[j]}")
                if pages[i]["host_template"] == pages[j]["host_template"]:
                    same_tpl_whole.append(w_inter[i, j] / w_union[i, j])
    for i, p in enumerate(pages):
        if p["kind"] != "copy":
            continue
        host_story = by_id[p["host_template"]]["text"]
        # grams of the template page's own story still on the copy, beyond
        # those the placed story has too
        placed = set(_grams(norm(p["article"] + p["title"])))
        hs = set(_grams(norm(host_story))) - placed
        vis = set(_grams(norm(extracted[i][1])))
        left = len(hs & vis) / max(1, len(hs))
        p["template_story_left"] = round(left, 3)
        if left > TEMPLATE_LEFT + 0.05:
            problems.append(f"template story still in {p['url']}: {left:.2f}")

    with open(os.path.join(args.out, "pages.jsonl"), "w", encoding="utf-8") as f:
        for p, (title, text), k in zip(pages, extracted, w_sizes.tolist()):
            f.write(json.dumps({"url": p["url"], "source": p["source"], "lang": p["lang"], "title": title,
                                "shingles": k, "story": p["story"], "kind": p["kind"],
                                "host_template": p["host_template"], "variant": p["variant"],
                                "article_chars": len(norm(p["article"])), "page_chars": len(norm(text))},
                               ensure_ascii=False) + "\n")
    with open(os.path.join(args.out, "docs.jsonl"), "w", encoding="utf-8") as f:
        for p, (title, _) in zip(pages, extracted):
            f.write(json.dumps({"url": p["url"], "title": title, "html": p["html"]}, ensure_ascii=False) + "\n")
    seeds = [f"http://{h}/index.html" for h in host_names]
    with open(os.path.join(args.out, "seeds.txt"), "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in seeds))

    per_source = {}
    for i, p in enumerate(pages):
        r = per_source.setdefault(p["source"], {"pages": 0, "stories": set(), "copies": 0, "listings": 0,
                                                "near_story_pairs": 0, "near_whole_pairs": 0})
        r["pages"] += 1
        if p["story"]:
            r["stories"].add(p["story"])
        r["copies"] += p["kind"] == "copy"
        r["listings"] += p["kind"] in ("index", "teasers")
    for i in range(n):
        for j in range(i + 1, n):
            if pages[i]["source"] != pages[j]["source"]:
                continue
            r = per_source[pages[i]["source"]]
            r["near_story_pairs"] += bool(s_inter[i, j] * 5 >= 4 * s_union[i, j])
            r["near_whole_pairs"] += bool(w_inter[i, j] * 5 >= 4 * w_union[i, j])
    for r in per_source.values():
        r["stories"] = len(r["stories"])
    copies_pages = [p for p in pages if p["kind"] == "copy"]
    chrome = sorted(1 - len(norm(p["article"])) / max(1, len(norm(extracted[i][1])))
                    for i, p in enumerate(pages) if p["kind"] == "copy")
    variants = {}
    for p in copies_pages:
        variants[p["variant"]] = variants.get(p["variant"], 0) + 1
    host_sizes = sorted((sum(1 for p in pages if p["host"] == h["name"] and p["kind"] == "copy") for h in hosts),
                        reverse=True)
    summary = {
        "pages": n,
        "hosts": len(host_names),
        "syndicating_hosts": len(hosts),
        "syndicating_host_sizes": host_sizes,
        "stories": len(stories),
        "stories_dropped_short": dropped_short,
        "stories_dropped_similar": dropped_similar,
        "templates_usable": len(templates),
        "languages": langs,
        "by_source": dict(sorted(per_source.items())),
        "kinds": {k: sum(1 for p in pages if p["kind"] == k) for k in ("original", "copy", "teasers", "index")},
        "copy_variants": dict(sorted(variants.items())),
        "seeds": len(seeds),
        "whole_pairs_by_label": w_labels,
        "story_pairs_by_label": s_labels,
        "same_story_min_story_jaccard": round(same_story_min, 4),
        "different_story_max_story_jaccard": round(diff_story_max, 4),
        "different_stories_same_template": len(same_tpl_whole),
        "different_stories_same_template_whole_near": sum(1 for x in same_tpl_whole if x >= 0.8),
        "different_stories_same_template_whole_median": round(float(np.median(same_tpl_whole)), 3)
        if same_tpl_whole else None,
        "template_story_left_max": max((p.get("template_story_left", 0) for p in pages), default=None),
        "template_story_left_median": float(np.median([p["template_story_left"] for p in copies_pages]))
        if copies_pages else None,
        "copy_chrome_share_median": round(chrome[len(chrome) // 2], 3) if chrome else None,
        "problems": problems[:20],
        "seed": args.seed,
        "seconds": round(time.time() - t0, 1),
    }
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, ensure_ascii=False, indent=2)
        f.write("\n")
    json.dump(summary, sys.stdout, ensure_ascii=False, indent=2)
    print()
    if problems:
        print(f"{len(problems)} problems (see summary.json)", file=sys.stderr)
        sys.exit(1)


def _grams(s):
    return [s[i : i + 5] for i in range(max(1, len(s) - 4))]


if __name__ == "__main__":
    main()
