#!/usr/bin/env python3
"""Print import cycles between the modules of one Rust crate.

Usage:
    python3 scripts/module-cycles.py CRATE_SRC_DIR [--depth N] [--with-ancestors]

    python3 scripts/module-cycles.py crates/dedup/src
    python3 scripts/module-cycles.py crates/crawl/src --depth 1

Every .rs file under CRATE_SRC_DIR is a module (`lib.rs`/`main.rs` the
crate root, `a/mod.rs` and `a.rs` module `a`, `a/b.rs` module `a::b`), and
so is every inline `mod name {` in a file. A module references another when
its code names a path into it: `use crate::...` and `use super::...` trees
(braces expanded), and `crate::a::b`, `super::x`, `self::x` paths anywhere
in the code. A path's module is its longest prefix that is a module
(`crate::store::memory::MemoryStore` -> `store::memory`). The script builds
that graph, finds its strongly connected components and prints, for each,
one cycle with the file:line of every edge. It exits 1 when there is a
cycle, 0 when there is none ("no import cycles").

--depth N cuts module paths to N segments (1: the crate's top-level
modules), to check layering between subsystems.

Edges between a module and its ancestors are left out unless
--with-ancestors is given: a parent naming its children (`mod`, `pub use
child::X`) while they use its items (`super::DocId`) is how a Rust facade
works, not a cycle.

Limits (it reads text, it does not compile):
- re-exports are not followed: `crate::Deduper` is the crate root, not the
  module that defines `Deduper`, and `crate::store::DocId` is `store` even
  when `DocId` is defined in `store::memory`;
- paths without `crate::`/`super::`/`self::` (a child module's name, or an
  item brought in by a `use` and named later) count only through that `use`;
- paths made by macros, `include!`, `#[path]` attributes and `cfg`s are read
  as plain text (all cfgs count; `#[path]` files are not found);
- comments are skipped (`//` and `/* */`, so doc links do not count), string
  literals are not;
- inline modules are found by rustfmt's layout: `mod name {` closed by a
  `}` at the same indentation.
"""

import argparse
import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
INLINE_PATH = re.compile(r"(?<![A-Za-z0-9_:])((?:crate|super|self)(?:::(?:super|" + IDENT + "))*)(?=::|\W)")
USE_START = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+")
INLINE_MOD = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*\{\s*$")


def module_of_file(src, path):
    rel = os.path.relpath(path, src)[: -len(".rs")].split(os.sep)
    if rel[-1] in ("lib", "main") and len(rel) == 1:
        return ()
    if rel[-1] == "mod":
        rel = rel[:-1]
    return tuple(rel)


def strip_comments(text):
    """Blank out comments, keeping line numbers."""
    out = []
    i = 0
    n = len(text)
    in_str = False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_str = False
            i += 1
        elif c == '"':
            in_str = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth = 0
            while i < n:
                if text.startswith("/*", i):
                    depth += 1
                    i += 2
                elif text.startswith("*/", i):
                    depth -= 1
                    i += 2
                    if depth == 0:
                        break
                else:
                    if text[i] == "\n":
                        out.append("\n")
                    i += 1
        elif c == "'" and i + 2 < n and (text[i + 2] == "'" or (text[i + 1] == "\\")):
            # a char literal such as '"' (not a lifetime)
            j = text.find("'", i + 2 if text[i + 1] == "\\" else i + 1)
            j = i + 2 if j < 0 else j
            out.append(text[i : j + 1].replace('"', " "))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand_use_tree(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(r"\s+", "", tree)
    tree = re.sub(r"\bas" + IDENT, "", tree)

    def parse(s, i):
        # returns (list of paths, next index)
        prefix = ""
        while i < len(s) and s[i] not in "{},":
            prefix += s[i]
            i += 1
        if i < len(s) and s[i] == "{":
            i += 1
            paths = []
            while i < len(s) and s[i] != "}":
                sub, i = parse(s, i)
                paths += [prefix + p for p in sub]
                if i < len(s) and s[i] == ",":
                    i += 1
            return paths or [prefix.rstrip(":")], i + 1
        return [prefix], i

    paths, _ = parse(tree, 0)
    return [p.rstrip(":") for p in paths if p]


def resolve(path, current):
    """Absolute module path segments named by `path` (crate::/super::/self::)."""
    segs = path.split("::")
    if segs[0] == "crate":
        base, rest = (), segs[1:]
    elif segs[0] in ("super", "self"):
        base = current
        rest = segs
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    else:
        return None
    return base + tuple(s for s in rest if s != "*")


def longest_module(segs, modules):
    for k in range(len(segs), -1, -1):
        if segs[:k] in modules:
            return segs[:k]
    return ()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("--depth", type=int, default=0)
    ap.add_argument("--with-ancestors", action="store_true")
    args = ap.parse_args()

    files = {}
    for root, _, names in os.walk(args.src):
        for name in sorted(names):
            if name.endswith(".rs"):
                path = os.path.join(root, name)
                files[path] = module_of_file(args.src, path)

    # First pass: every module, inline ones included.
    modules = set(files.values())
    parsed = {}
    for path, module in files.items():
        with open(path, encoding="utf-8") as f:
            lines = strip_comments(f.read()).split("\n")
        per_line = []
        stack = []  # (indent, name)
        for line in lines:
            m = INLINE_MOD.match(line)
            indent = len(line) - len(line.lstrip())
            while stack and line.strip() == "}" and indent == stack[-1][0]:
                stack.pop()
                line = ""
                break
            current = module + tuple(name for _, name in stack)
            per_line.append((current, line))
            if m:
                stack.append((len(m.group(1)), m.group(2)))
                modules.add(module + tuple(name for _, name in stack))
        parsed[path] = per_line

    def cut(m):
        return m[: args.depth] if args.depth else m

    edges = {}  # (from, to) -> first evidence "file:line"
    for path, per_line in parsed.items():
        i = 0
        while i < len(per_line):
            current, line = per_line[i]
            lineno = i + 1
            refs = []
            if USE_START.match(line):
                stmt = line
                while ";" not in stmt and i + 1 < len(per_line):
                    i += 1
                    stmt += per_line[i][1]
                tree = USE_START.sub("", stmt.split(";")[0], count=1)
                refs = [p for p in expand_use_tree(tree) if re.match(r"(crate|super|self)\b", p)]
                rest = stmt.split(";", 1)[1] if ";" in stmt else ""
                refs += [m.group(1) for m in INLINE_PATH.finditer(rest)]
            else:
                refs = [m.group(1) for m in INLINE_PATH.finditer(line)]
            for ref in refs:
                segs = resolve(ref, current)
                if segs is None:
                    continue
                target = cut(longest_module(segs, modules))
                source = cut(current)
                if source == target:
                    continue
                related = source[: len(target)] == target or target[: len(source)] == source
                if related and not args.with_ancestors:
                    continue
                key = (source, target)
                if key not in edges:
                    edges[key] = f"{os.path.relpath(path)}:{lineno}"
            i += 1

    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())

    # Tarjan's strongly connected components.
    index, low, on_stack, stack, sccs = {}, {}, set(), [], []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)

    def name(m):
        return "crate::" + "::".join(m) if m else "crate"

    if not sccs:
        print(f"{args.src}: no import cycles ({len(modules)} modules, {len(edges)} edges)")
        return 0
    for comp in sorted(sccs):
        members = set(comp)
        # One cycle through the component's first module (BFS back to it).
        start = comp[0]
        prev = {start: None}
        queue = [start]
        found = None
        while queue and found is None:
            v = queue.pop(0)
            for w in sorted(graph[v]):
                if w not in members:
                    continue
                if w == start:
                    found = v
                    break
                if w not in prev:
                    prev[w] = v
                    queue.append(w)
        path = [start]
        v = found
        while v is not None and v != start:
            path.insert(1, v)
            v = prev[v]
        path.append(start)
        print(f"cycle among {len(comp)} modules: {', '.join(name(m) for m in comp)}")
        for a, b in zip(path, path[1:]):
            print(f"  {name(a)} -> {name(b)}  ({edges[(a, b)]})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
