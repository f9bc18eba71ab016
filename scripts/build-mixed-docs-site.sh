#!/usr/bin/env bash
# A documentation site that mixes Chinese help pages and large English
# pages (issue 37, target 2: "a site that mixes Chinese help pages and
# large English pages costs nearly twice that. Measure on such a mix"):
# Python's library reference (its Debian package's HTML, 530 pages, 126 KB
# of HTML each on average) under /python/ and LibreOffice's zh-CN help
# (2,561 pages) under /zh-CN/, copied into one folder to serve.
#   scripts/build-mixed-docs-site.sh OUTDIR
#   scripts/spider-compare.sh OUTDIR 5
# Uses the packages scripts/build-html-gate.sh unpacks (run it first, or
# this script runs it into target/html-gate).
set -euo pipefail
if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${EVAL_CACHE:-$HOME/.cache/simcrawl-eval}/html-root/usr/share
PY=$(ls -d "$ROOT"/doc/python3.*/html 2>/dev/null | head -1 || true)
ZH=$ROOT/libreoffice/help/zh-CN
if [ -z "$PY" ] || [ ! -d "$ZH" ]; then
    bash "$HERE/build-html-gate.sh" "$HERE/../target/html-gate"
    PY=$(ls -d "$ROOT"/doc/python3.*/html | head -1)
fi
rm -rf "$1"
mkdir -p "$1"
# Dangling links of the package (its jquery.js points into another
# package) are left out; -L copies what the others point to.
cp -rL "$PY" "$1/python" 2>/dev/null || true
cp -rL "$ZH" "$1/zh-CN"
EN=$(find "$1/python" -name '*.html' 2>/dev/null | wc -l)
ZN=$(find "$1/zh-CN" -name '*.html' | wc -l)
if [ "$EN" -lt 500 ]; then
    echo "$1/python: $EN pages copied from $PY, expected about 530 (see the cp above without 2>/dev/null)" >&2
    exit 1
fi
echo "$1: $EN English pages, $ZN Chinese pages" >&2
