#!/usr/bin/env python3
"""The size of the rooms (issue 39): source files over 1,000 lines and
functions over 120 lines in the workspace's crates (src/ only: tests and
benches are not rooms people live in).

    python3 scripts/room-sizes.py            # list them
    python3 scripts/room-sizes.py --check    # exit 1 past the bar

The bar: no file in src/ over MAX_FILE lines; at most MAX_LONG functions over
MAX_FN lines, and each of those has a comment line containing "reads better
whole" within the three lines above its `fn` (why it stays one piece).

A function's length counts from its `fn` line to its closing brace, found by
matching braces outside strings, chars and comments (good enough for this
codebase's rustfmt'd code; a raw string with braces is handled).
"""
import os
import re
import sys

MAX_FILE = 1000
MAX_FN = 120
MAX_LONG = 3
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")


def strip(line, state):
    """`line` with strings, chars and comments blanked; `state` carries a
    block comment or raw string across lines."""
    out = []
    i = 0
    n = len(line)
    while i < n:
        if state.get("block"):
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), state
            state["block"] = False
            i = end + 2
            continue
        if state.get("raw") is not None:
            close = '"' + "#" * state["raw"]
            end = line.find(close, i)
            if end < 0:
                return "".join(out), state
            state["raw"] = None
            i = end + len(close)
            continue
        if state.get("str"):
            if line[i] == "\\":
                i += 2
                continue
            if line[i] == '"':
                state["str"] = False
            i += 1
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            state["block"] = True
            i += 2
            continue
        m = re.match(r'r(#*)"', line[i:])
        if m and (i == 0 or not (line[i - 1].isalnum() or line[i - 1] == "_")):
            state["raw"] = len(m.group(1))
            i += len(m.group(0))
            continue
        if c == '"':
            state["str"] = True
            i += 1
            continue
        if c == "'":
            m = re.match(r"'(\\.|[^\\'])'", line[i:]) or re.match(r"'\\u\{[0-9a-fA-F]+\}'", line[i:])
            if m:
                i += len(m.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out), state


def functions(path):
    """(name, first line, length) of every fn with a body in `path`."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    state = {}
    code = []
    for line in lines:
        s, state = strip(line, state)
        code.append(s)
    found = []
    for i, line in enumerate(code):
        m = FN.match(line)
        if not m:
            continue
        depth = 0
        opened = False
        for j in range(i, len(code)):
            for ch in code[j]:
                if ch == "{":
                    depth += 1
                    opened = True
                elif ch == "}":
                    depth -= 1
                elif ch == ";" and not opened and depth == 0:
                    break
            else:
                if opened and depth == 0:
                    found.append((m.group(6), i + 1, j - i + 1, lines))
                    break
                continue
            break
    return found


def main():
    check = "--check" in sys.argv
    big_files = []
    long_fns = []
    for crate in sorted(os.listdir(os.path.join(ROOT, "crates"))):
        src = os.path.join(ROOT, "crates", crate, "src")
        for dirpath, _, files in os.walk(src):
            for name in sorted(files):
                if not name.endswith(".rs"):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, ROOT)
                with open(path, encoding="utf-8") as f:
                    n = sum(1 for _ in f)
                if n > MAX_FILE:
                    big_files.append((n, rel))
                for fn, first, length, lines in functions(path):
                    if length > MAX_FN:
                        above = "\n".join(lines[max(0, first - 4) : first - 1])
                        long_fns.append((length, rel, first, fn, "reads better whole" in above))
    big_files.sort(reverse=True)
    long_fns.sort(reverse=True)
    print(f"files over {MAX_FILE} lines: {len(big_files)}")
    for n, rel in big_files:
        print(f"  {n:5} {rel}")
    print(f"functions over {MAX_FN} lines: {len(long_fns)} (at most {MAX_LONG}, each saying why)")
    for length, rel, first, fn, why in long_fns:
        print(f"  {length:5} {rel}:{first} {fn}{'' if why else '  (no reason given)'}")
    if check:
        bad = big_files or len(long_fns) > MAX_LONG or any(not w for *_, w in long_fns)
        if bad:
            print("room sizes: over the bar (docs/guide/development.md)", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
