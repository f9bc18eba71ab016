#!/usr/bin/env python3
"""Checks that every relative link in the project's Markdown resolves.

Reads README.md, crates/*/README.md and docs/**/*.md. For each inline link
or image (`[text](target)`, `![alt](target)`) and each reference definition
(`[name]: target`) outside code blocks and code spans, a relative target
must name a file or directory that exists, and a `#fragment` into a
Markdown file (or into the same file) must name one of its headings, as
GitHub spells heading anchors. Links with a scheme (https:, mailto:) are
not fetched.

Prints `FILE:LINE: broken link TARGET (why)` for each broken link and
exits 1 if there is any; exits 0 silently otherwise (`-v` lists what was
checked).

    python3 scripts/check-links.py [-v] [FILE.md ...]
"""

import re
import sys
import unicodedata
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent

INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
FENCE = re.compile(r"^\s{0,3}(```+|~~~+)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def default_files():
    files = [ROOT / "README.md"]
    files += sorted(ROOT.glob("crates/*/README.md"))
    files += sorted((ROOT / "docs").rglob("*.md"))
    return [f for f in files if f.is_file()]


def strip_code_spans(line):
    """Blanks out `code spans` so that links inside them are not read."""
    out, i = [], 0
    while i < len(line):
        if line[i] == "`":
            n = len(line) - len(line[i:].lstrip("`"))
            ticks = line[i : i + n]
            end = line.find(ticks, i + n)
            if end == -1:
                out.append(line[i:])
                break
            out.append(" " * (end + n - i))
            i = end + n
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def slug(text):
    """GitHub's anchor for a heading: lower case, markup and punctuation
    removed (letters, digits, `-`, `_` and spaces kept), spaces to `-`."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").lower()
    kept = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-_ " or cat[0] in "LN" or cat == "Mn" or cat == "Mc":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


_anchors = {}


def prose_lines(path):
    """(line number, line) of every line of `path` outside fenced code."""
    in_fence = None
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = FENCE.match(line)
        if m:
            mark = m.group(1)[0] * 3
            if in_fence is None:
                in_fence = mark
            elif mark == in_fence:
                in_fence = None
            continue
        if not in_fence:
            yield no, line


def anchors(path):
    """The anchors a Markdown file offers: its headings' slugs (repeats
    numbered -1, -2, ... as GitHub does) and explicit <a name/id>."""
    if path in _anchors:
        return _anchors[path]
    found, seen = set(), {}
    for _, line in prose_lines(path):
        h = HEADING.match(line)
        if h:
            base = slug(h.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        for a in HTML_ANCHOR.findall(line):
            found.add(a)
    _anchors[path] = found
    return found


def links(path):
    """(line number, target) of every link outside code."""
    for no, line in prose_lines(path):
        text = strip_code_spans(line)
        for m in INLINE.finditer(text):
            yield no, m.group(1)
        m = REFDEF.match(text)
        if m:
            yield no, m.group(1)


def check_target(src, target):
    """None if `target` (as written in `src`) resolves, else why not."""
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1]
    if SCHEME.match(target) or target.startswith("//"):
        return None
    path_part, _, fragment = target.partition("#")
    path_part = unquote(path_part)
    if path_part:
        dest = (src.parent / path_part).resolve()
        if not dest.exists():
            return "no such file"
        try:
            dest.relative_to(ROOT)
        except ValueError:
            return "outside the repository"
    else:
        dest = src
    if fragment and dest.is_file() and dest.suffix.lower() == ".md":
        if unquote(fragment).lower() not in anchors(dest):
            return f"no heading #{fragment} in {dest.relative_to(ROOT)}"
    return None


def main(argv):
    verbose = "-v" in argv
    args = [a for a in argv if a != "-v"]
    files = [Path(a).resolve() for a in args] if args else default_files()
    broken = checked = 0
    for f in files:
        rel = f.relative_to(ROOT)
        for no, target in links(f):
            checked += 1
            why = check_target(f, target)
            if why:
                broken += 1
                print(f"{rel}:{no}: broken link {target} ({why})")
            elif verbose:
                print(f"{rel}:{no}: ok {target}")
    if verbose or broken:
        print(f"{checked} links in {len(files)} files, {broken} broken", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
