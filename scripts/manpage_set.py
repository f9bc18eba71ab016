#!/usr/bin/env python3
"""Build simcrawl's man-page set (issue 35, "a gate per genre") in the HTML
gate's format: Debian's man pages rendered to HTML, one host per language
and renderer, and the exact resemblance of every pair of pages.

Called by scripts/build-manpage-set.sh, which fetches the Debian packages
(manpages, manpages-dev, manpages-zh, manpages-de, manpages-fr, manpages-ja)
and the Python packages (numpy, scipy, opencc) first, and installs mandoc
and man2html.  See docs/eval-manpages.md.

Hosts (source: renderer, pages):
  en-mandoc    man.en.test         mandoc -T html: every English page that has
                                   a kept translation, plus a seeded sample of
                                   the others
  en-man2html  man2html.en.test    man2html -r: a seeded sample of the English
                                   names above (the same page, another site)
  zh-cn, zh-tw man.zh-cn.test, man.zh-tw.test  mandoc: the same names in both
                                   (every zh page with an English original plus
                                   a seeded sample): translations kept in
                                   simplified and traditional script
  de, fr, ja   man.LANG.test       mandoc: every translated page whose English
                                   original is in manpages(-dev)
Each host has /index.html linking its sections and /manN/index.html linking
the section's pages (the seeds are the /index.html pages); pages are
/manN/NAME.N.html, mandoc's cross references point there.

Outputs: those of scripts/apiref_set.py (write_set): site/, seeds.txt,
pages.jsonl (plus "name", "renderer"), pairs.jsonl, docs.jsonl, summary.json.
Truth: scripts/html_gate.py's.  pairs_tw2sp.jsonl (scripts/tw2sp_labels.py) is a second truth for
`genre-gate.sh --labels`: a zh-tw/zh-cn pair also compared with the zh-tw
text through OpenCC tw2sp first (the larger resemblance counts).  Symlinked pages and `.so` stubs are left
out (exact copies of another page), as scripts/eval_set.py does.
"""

import argparse
import gzip
import os
import random
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import apiref_set as ar
import tw2sp_labels

LANGS = {"": "en", "zh_CN": "zh-cn", "zh_TW": "zh-tw", "de": "de", "fr": "fr", "ja": "ja"}
EN_OTHERS = 150  # English pages without a kept translation
ZH_OTHERS = 215  # zh pages without an English original
MAN2HTML = 150  # English names also rendered by man2html
MAN2HTML_TIME = re.compile(r"\nTime: [^\n]*\n")


def pages_of(root, folder):
    """{NAME.SEC: file} of a language's real pages (no symlink, no .so)."""
    top = os.path.join(root, "usr/share/man", folder)
    out = {}
    for sec in sorted(os.listdir(top)):
        sd = os.path.join(top, sec)
        if not sec.startswith("man") or not os.path.isdir(sd):
            continue
        for name in sorted(os.listdir(sd)):
            p = os.path.join(sd, name)
            if os.path.islink(p) or not os.path.isfile(p) or not name.endswith(".gz"):
                continue
            with gzip.open(p, "rb") as f:
                if f.read(200).lstrip().startswith(b".so "):
                    continue
            out[name[:-3]] = p
    return out


def render(renderer, path):
    with gzip.open(path, "rb") as f:
        src = f.read()
    if renderer == "mandoc":
        cmd = ["mandoc", "-T", "html", "-K", "utf-8", "-O", "man=../man%S/%N.%S.html"]
    else:
        cmd = ["man2html", "-r"]
    r = subprocess.run(cmd, input=src, capture_output=True, check=False)
    out = r.stdout.decode("utf-8", errors="replace")
    if renderer == "man2html":
        # drop the CGI header and the rendering time; say the charset
        out = out.split("\n\n", 1)[1] if out.startswith("Content-type:") else out
        out = MAN2HTML_TIME.sub("\n", out)
        out = re.sub(r"<HEAD>", '<HEAD><META charset="utf-8">', out, count=1, flags=re.I)
    if not out.strip():
        raise RuntimeError(f"{renderer} gave nothing for {path}: {r.stderr[:300]!r}")
    return out


def english(en, translated, key):
    """The English pages of a set: every `translated` name and EN_OTHERS
    others (seeded by `key`) by mandoc, MAN2HTML of them by man2html too."""
    rng = random.Random(f"{key}/en")
    en_names = sorted(translated | set(rng.sample(sorted(set(en) - translated), EN_OTHERS)))
    m2h = sorted(random.Random(f"{key}/man2html").sample(en_names, MAN2HTML))
    out = [("en-mandoc", "en", "man.en.test", "mandoc", n, en[n]) for n in en_names]
    out += [("en-man2html", "en", "man2html.en.test", "man2html", n, en[n]) for n in m2h]
    return out


def choose(root, seed):
    """(source, lang, host, renderer, name, file) of every page to render."""
    names = {lang: pages_of(root, folder) for folder, lang in LANGS.items()}
    en = names["en"]
    rng = random.Random(f"{seed}/zh")
    zh_both = sorted(set(names["zh-cn"]) & set(names["zh-tw"]))
    zh_en = [n for n in zh_both if n in en]
    zh = sorted(zh_en + rng.sample([n for n in zh_both if n not in en], ZH_OTHERS))
    translated = set(zh_en)
    for lang in ("de", "fr", "ja"):
        translated |= set(names[lang]) & set(en)
    out = english(en, translated, f"{seed}")
    for lang in ("zh-cn", "zh-tw"):
        out += [(lang, lang, f"man.{lang}.test", "mandoc", n, names[lang][n]) for n in zh]
    for lang in ("de", "fr", "ja"):
        out += [(lang, lang, f"man.{lang}.test", "mandoc", n, names[lang][n])
                for n in sorted(set(names[lang]) & set(en))]
    return out


# A second set (`--sources heldout`, MANPAGE_SOURCES=heldout
# scripts/build-manpage-set.sh), never used to tune a rule: English and
# translations in Cyrillic (Russian, Ukrainian) and Latin script (Polish,
# Spanish), each translation capped, English pages also rendered
# by man2html.
HELDOUT_LANGS = {"": "en", "ru": "ru", "uk": "uk", "pl": "pl", "es": "es"}
HELDOUT_PER_LANG = 160


def choose_heldout(root, seed):
    """(source, lang, host, renderer, name, file) of the held-out set."""
    names = {lang: pages_of(root, folder) for folder, lang in HELDOUT_LANGS.items()}
    en = names["en"]
    picked = {}
    for lang in ("ru", "uk", "pl", "es"):
        both = sorted(set(names[lang]) & set(en))
        rng = random.Random(f"{seed}/heldout/{lang}")
        picked[lang] = sorted(rng.sample(both, min(HELDOUT_PER_LANG, len(both))))
    out = english(en, set().union(*picked.values()), f"{seed}/heldout")
    for lang, ns in picked.items():
        out += [(lang, lang, f"man.{lang}.test", "mandoc", n, names[lang][n]) for n in ns]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--root", required=True, help="the unpacked Debian packages")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--versions", default="{}")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--sources", choices=["gate", "heldout"], default="gate")
    args = ap.parse_args()

    chosen = (choose_heldout if args.sources == "heldout" else choose)(args.root, args.seed)
    with ThreadPoolExecutor(max(1, args.jobs)) as ex:
        rendered = list(ex.map(lambda c: render(c[3], c[5]), chosen))
    pages = []
    for (source, lang, host, renderer, name, _), page in zip(chosen, rendered):
        stem, sec = name.rsplit(".", 1)
        pages.append({"host": host, "path": f"man{sec[0]}/{name}.html", "source": source, "lang": lang,
                      "html": page, "name": name, "renderer": renderer})
    # indexes: /manN/index.html per section, /index.html per host
    indexes, seeds = [], []
    for source, lang, host, renderer, *_ in dict.fromkeys(c[:4] for c in chosen):
        secs = {}
        for p in pages:
            if p["host"] == host:
                secs.setdefault(p["path"].split("/")[0], []).append(p)
        for sec, ps in sorted(secs.items()):
            links = [(os.path.basename(p["path"]), "{}({})".format(*p["name"].rsplit(".", 1))) for p in ps]
            indexes.append({"host": host, "path": f"{sec}/index.html", "source": source, "lang": lang,
                            "html": ar.index_page(f"{host}: {sec}", links), "name": None, "renderer": "index"})
        top = [(f"{sec}/index.html", f"{sec} ({len(ps)})") for sec, ps in sorted(secs.items())]
        indexes.append({"host": host, "path": "index.html", "source": source, "lang": lang,
                        "html": ar.index_page(f"{host} ({renderer})", top), "name": None, "renderer": "index"})
        seeds.append(f"http://{host}/index.html")
    for source in dict.fromkeys(c[0] for c in chosen):
        print(f"{source}: {sum(1 for p in pages if p['source'] == source)} pages", file=sys.stderr)
    pages += indexes
    ar.write_set(args.out, pages, seeds, args.versions, args.seed, args.jobs)
    if args.sources == "gate":  # the held-out set has no Chinese
        tw2sp_labels.write_labels(args.out)


if __name__ == "__main__":
    main()
