#!/usr/bin/env python3
"""Writes docs/guide/settings.md, the settings reference, from config/crawl.toml.

config/crawl.toml is the commented default settings file (`crawl config
--default` prints it): the comment block directly above a setting is its
documentation. A setting written commented out (`# proxy = "..."`) is one
that is unset by default; the comment lines above it document it. Settings
on consecutive lines share the comment above the first of them only if that
comment names them (`per_host_concurrency` / `concurrency`, `bands` /
`band_rows`, ...); otherwise each needs a comment of its own. The command-line
flag that overrides a setting is read from crates/crawl/src/main.rs (its
doc comment ends with `[section.key]`).

    python3 scripts/settings-reference.py           # (re)write docs/guide/settings.md
    python3 scripts/settings-reference.py --check   # exit 1 if it is stale, or if a
                                                     # setting has no doc comment line
    python3 scripts/settings-reference.py --stdout  # print instead of writing
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "config" / "crawl.toml"
MAIN_RS = ROOT / "crates" / "crawl" / "src" / "main.rs"
OUTPUT = ROOT / "docs" / "guide" / "settings.md"

HEADER = re.compile(r"^\[([A-Za-z0-9_.]+)\]\s*(?:#.*)?$")
KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.+?)\s*$")
COMMENTED_KEY = re.compile(r"^#\s?([a-z_][a-z0-9_]*)\s*=\s*((?:\"|\[|\{|-?\d|true\b|false\b).*?)\s*$")
FLAG = re.compile(
    r"\[([a-z_]+(?:\.[a-z_]+)+)\]\.?\s*\n(?:\s*///[^\n]*\n)*\s*#\[arg\(long[^\n]*\)\]\s*\n\s*([a-z_]+):"
)


class Setting:
    def __init__(self, section, name, value, line, doc, commented, shared_with=None):
        self.section = section
        self.name = name
        self.value = value
        self.line = line
        self.doc = doc
        self.commented = commented
        self.shared_with = shared_with

    @property
    def key(self):
        return f"{self.section}.{self.name}" if self.section else self.name


class Section:
    def __init__(self, name, line, intro):
        self.name = name
        self.line = line
        self.intro = intro
        self.settings = []
        self.notes = []  # comment lines that document no setting (examples)


def comment_text(line):
    """The text of a comment line, without `#` and one following space."""
    s = line.lstrip()[1:]
    return s[1:] if s.startswith(" ") else s


def parse(text):
    """(file intro lines, sections) of config/crawl.toml."""
    lines = text.splitlines()
    intro, sections = [], []
    section = None
    pending = []  # (line number, text) of the comment block being read
    prev_key = None  # the setting on the line just above, if any
    group_owner = None  # the documented setting that heads the run of settings
    started = False

    def flush_commented(block, upto_key=True):
        """Hands each commented-out setting in `block` the lines above it;
        returns the lines after the last one."""
        rest = []
        for no, t in block:
            m = COMMENTED_KEY.match("#" + (" " + t if t else ""))
            if m and section is not None:
                section.settings.append(
                    Setting(section.name, m.group(1), m.group(2), no, [x for _, x in rest], True)
                )
                rest = []
            else:
                rest.append((no, t))
        return rest

    for no, raw in enumerate(lines, 1):
        line = raw.rstrip()
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append((no, comment_text(stripped)))
            prev_key = None
            continue
        if not stripped:
            if not started and pending:
                intro = [t for _, t in pending]
                started = True
            elif pending:
                rest = flush_commented(pending)
                if section is not None and rest:
                    section.notes.append([t for _, t in rest])
            pending = []
            prev_key = None
            continue
        started = True
        h = HEADER.match(stripped)
        if h:
            # A comment block directly above a header introduces the section.
            section = Section(h.group(1), no, [t for _, t in pending])
            sections.append(section)
            pending = []
            prev_key = None
            continue
        k = KEY.match(stripped)
        if k and section is not None:
            rest = flush_commented(pending)
            doc = [t for _, t in rest]
            shared = None
            owner = group_owner if prev_key is not None else None
            if not doc and owner is not None:
                if re.search(rf"(?<![A-Za-z0-9_]){re.escape(k.group(1))}(?![A-Za-z0-9_])", " ".join(owner.doc)):
                    shared = owner
            s = Setting(section.name, k.group(1), k.group(2), no, doc, False, shared)
            section.settings.append(s)
            pending = []
            prev_key = s
            if doc:
                group_owner = s
            continue
        pending = []
        prev_key = None
    if pending and section is not None:
        rest = flush_commented(pending)
        if rest:
            section.notes.append([t for _, t in rest])
    return intro, sections


def flags():
    """setting key -> the `crawl` flag that overrides it."""
    try:
        src = MAIN_RS.read_text(encoding="utf-8")
    except OSError:
        return {}
    out = {}
    for m in FLAG.finditer(src):
        out.setdefault(m.group(1), "--" + m.group(2).replace("_", "-"))
    return out


def escape(text):
    """`<` outside code spans as `&lt;`, so that `<meta ...>` stays text."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;")
    return "`".join(parts)


def paragraphs(doc):
    """Markdown for comment lines: prose lines joined; runs of indented lines
    (aligned option lists) kept as they are, in a text block."""
    out, prose, block = [], [], []

    def end_prose():
        if prose:
            out.append(" ".join(prose))
            prose.clear()

    def end_block():
        if block:
            out.append("```text\n" + "\n".join(block) + "\n```")
            block.clear()

    for t in doc:
        if not t.strip():
            end_prose()
            end_block()
        elif t.startswith((" ", "\t")):
            end_prose()
            block.append(t)
        else:
            end_block()
            prose.append(escape(t.strip()))
    end_prose()
    end_block()
    return out


def render(intro, sections):
    fl = flags()
    out = [
        "# Settings reference",
        "",
        "<!-- Generated by scripts/settings-reference.py from config/crawl.toml:",
        "     edit the comments there and run the script; do not edit this file. -->",
        "",
        "[Guide](index.md) · Every setting of `crawl` lives in one TOML file. This page is written from",
        "that file's comments ([`config/crawl.toml`](../../config/crawl.toml), which is",
        "also what `crawl config --default` prints), so it says what the file says.",
        "",
        "How to give a setting (precedence, lowest first):",
        "",
        "1. the default shown here;",
        "2. a settings file: `crawl --config my.toml ...` (any subset of the keys);",
        "3. `--set KEY=VALUE` in dotted form, repeatable, on every command",
        "   (`--set fetch.per_host_delay_ms=0`; the last one of a key wins);",
        "4. a dedicated flag (`--out`, `--data-dir`, `--max-pages`, ...), named below",
        "   for the settings that have one.",
        "",
        "`crawl config [--config FILE] [--set ...]` prints the effective settings,",
        "each with where its value came from; its output reads back as a settings",
        "file. A wrong key or value is an error that names the key, what it takes",
        "and its default.",
        "",
    ]
    if intro:
        out += ["From the top of the file:", ""]
        out += ["> " + p for p in paragraphs(intro)]
        out.append("")
    out += ["Sections:", ""]
    for s in sections:
        out.append(f"- [`[{s.name}]`](#{s.name.replace('.', '')})" + (f": {len(s.settings)} settings" if s.settings else ""))
    out.append("")
    for s in sections:
        out += [f"## [{s.name}]", ""]
        for p in paragraphs(s.intro):
            out += [p, ""]
        for st in s.settings:
            out += [f"### `{st.key}`", ""]
            if st.commented:
                line = f"Unset by default. Example: `{st.name} = {st.value}`."
            else:
                line = f"Default: `{st.name} = {st.value}`."
            if st.key in fl:
                line += f" Flag: `{fl[st.key]}`."
            out += [line, ""]
            if st.shared_with is not None:
                out += [f"See [`{st.shared_with.key}`](#{st.shared_with.key.replace('.', '')}).", ""]
            for p in paragraphs(st.doc):
                out += [p, ""]
        for note in s.notes:
            example = [t for t in note if t.strip()]
            out += ["```toml", *[t for t in example], "```", ""]
    return "\n".join(out).rstrip() + "\n"


def undocumented(sections):
    for s in sections:
        for st in s.settings:
            if not any(t.strip() for t in st.doc) and st.shared_with is None:
                yield st


def main(argv):
    text = CONFIG.read_text(encoding="utf-8")
    intro, sections = parse(text)
    md = render(intro, sections)
    if "--stdout" in argv:
        sys.stdout.write(md)
        return 0
    if "--check" in argv:
        bad = 0
        for st in undocumented(sections):
            print(f"config/crawl.toml:{st.line}: setting {st.key} has no doc comment line above it")
            bad = 1
        try:
            current = OUTPUT.read_text(encoding="utf-8")
        except OSError:
            current = None
        if current != md:
            print(
                f"{OUTPUT.relative_to(ROOT)} is stale: run python3 scripts/settings-reference.py"
                " and commit the result"
            )
            bad = 1
        return bad
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(md, encoding="utf-8")
    missing = list(undocumented(sections))
    for st in missing:
        print(f"config/crawl.toml:{st.line}: setting {st.key} has no doc comment line above it", file=sys.stderr)
    print(f"wrote {OUTPUT.relative_to(ROOT)}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
