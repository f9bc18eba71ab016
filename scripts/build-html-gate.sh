#!/usr/bin/env bash
# Builds the HTML-path quality gate (docs/EVAL.md, "The HTML gate"): real
# documentation sites as files to serve over loopback, and the exact
# resemblance of every pair of their pages' visible text to score a crawl of
# them against.
#   scripts/build-html-gate.sh OUTDIR [ci|full]
# writes OUTDIR/site/HOST/..., seeds.txt, pages.jsonl, pairs.jsonl and
# summary.json. `ci` (the default) keeps part of the LibreOffice help so that
# the gate's test crawls it in a few minutes; `full` keeps all of it.
#
# Installs what it needs on a Debian machine like scripts/build-eval-set.sh
# (same cache of unpacked packages and same venv, environment EVAL_CACHE,
# EVAL_VENV, EVAL_SKIP_APT, EVAL_JOBS).
#
# Then, with a release build: `crawl eval --crawled OUT --labels
# OUTDIR/pairs.jsonl --pages OUTDIR/pages.jsonl` scores a crawl's outputs;
# crates/crawl/tests/html_gate.rs serves the site, crawls it and scores it.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 OUTDIR [ci|full]" >&2
    exit 2
fi
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
SUBSET=${2:-ci}
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${EVAL_CACHE:-$HOME/.cache/simcrawl-eval}
VENV=${EVAL_VENV:-$HOME/.cache/simcrawl-eval-venv}
DOC_PKGS="debian-handbook debian-reference-en debian-reference-zh-cn debian-reference-zh-tw
          libreoffice-help-en-us libreoffice-help-zh-cn libreoffice-help-zh-tw
          maint-guide-zh-cn maint-guide-zh-tw"
export LC_ALL=C.UTF-8 PYTHONHASHSEED=0 DEBIAN_FRONTEND=noninteractive

# shellcheck source=scripts/lib/debian-docs.sh
. "$HERE/lib/debian-docs.sh"
install_tools gzip python3 python3-venv

PYDOC_PKG=$(pydoc_package)
ROOT=$CACHE/html-root
# shellcheck disable=SC2086
unpack_packages "$ROOT" $DOC_PKGS "$PYDOC_PKG"
python_venv "$VENV"

PYTHONPATH=$HERE "$VENV/bin/python" "$HERE/html_gate.py" --out "$OUT" --root "$ROOT" \
    --pydoc-dir "/usr/share/doc/${PYDOC_PKG%-doc}/html" --subset "$SUBSET" \
    --versions "$(versions_json)" --jobs "${EVAL_JOBS:-2}"
# The second truth for the zh-TW editions (Taiwan vocabulary converted by
# OpenCC tw2sp): scripts/genre-gate.sh scores with it where it exists, and
# without it the zh-TW copies the crawl finds read as false drops.
"$VENV/bin/python" "$HERE/tw2sp_labels.py" "$OUT"
echo "wrote $OUT/site, seeds.txt, pages.jsonl, pairs.jsonl, pairs_tw2sp.jsonl, summary.json" >&2
