#!/usr/bin/env bash
# Builds the API-reference set of the multi-genre gate (issue 35, "a gate per
# genre"; docs/eval-apiref.md): real generated API documentation from Debian
# packages, served over loopback one host per source, labelled with the exact
# resemblance of every pair of pages.
#   scripts/build-apiref-set.sh [OUTDIR]      (default target/apiref-set)
# writes OUTDIR/site/HOST/..., seeds.txt, pages.jsonl, pairs.jsonl,
# docs.jsonl and summary.json: the format of scripts/build-multilang-set.sh,
# so that scripts/genre-gate.sh OUTDIR RUN_DIR scores a build on it.
#
# Sources, five generators: Doxygen (libsdl2-doc, every page; libstdc++-12-doc,
# every index and letter list plus a seeded sample of 300 class, file and
# source-listing pages), javadoc (libcommons-lang3-java-doc: packages lang3,
# lang3.builder, lang3.function with class-use and src-html; junit4-doc: all
# but a seeded sample of 60 src-html pages), rustdoc (rust-doc: the same
# modules under core/alloc and under std, which re-exports them), gtk-doc
# (libglib2.0-doc: glib, gobject, gio) and Sphinx (python-werkzeug-doc).
# Pages keep their packaged paths, so links between kept pages work; an added
# gate-index.html per host links every kept page and is a seed with the
# source's own entry page. Sibling pages sharing a title (letter lists, member
# lists, class-use pages, source listings) are kept on purpose: the hard case.
#
# Labelling: scripts/html_gate.py's truth (its extractor of the whole visible
# text, character 5-grams after NFKC, OpenCC t2s, lower case, letters and
# digits only; scripts/eval_set.py all_resemblances: every pair computed),
# near >= 0.8, ambiguous >= 0.5, listed >= 0.3.
#
# Needs a Debian machine with apt (root or sudo), like build-html-gate.sh: the
# packages go through `apt-get download` into $EVAL_CACHE/apiref-root; numpy,
# scipy and opencc into the venv $EVAL_VENV. Environment: EVAL_CACHE,
# EVAL_VENV, EVAL_SKIP_APT=1, EVAL_JOBS, APIREF_SEED (default 42),
# APIREF_SOURCES (gate, the default, or heldout).
set -euo pipefail

if [ $# -gt 1 ]; then
    echo "usage: $0 [OUTDIR]" >&2
    exit 2
fi
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "${1:-$HERE/../target/apiref-set}"
OUT=$(cd "${1:-$HERE/../target/apiref-set}" && pwd)
CACHE=${EVAL_CACHE:-$HOME/.cache/simcrawl-eval}
VENV=${EVAL_VENV:-$HOME/.cache/simcrawl-eval-venv}
DOC_PKGS="libsdl2-doc libstdc++-12-doc libcommons-lang3-java-doc junit4-doc rust-doc
          libglib2.0-doc python-werkzeug-doc"
ROOT_NAME=apiref-root
# APIREF_SOURCES=heldout: a second set from other packages (apiref_set.py
# HELDOUT_SOURCES), never used to tune a rule; not part of CI.
SOURCES=${APIREF_SOURCES:-gate}
if [ "$SOURCES" = heldout ]; then
    DOC_PKGS="ant-doc crystal-doc cppreference-doc-en-html libeigen3-doc libxerces-c-doc
              libgtk-3-doc python-jinja2-doc"
    ROOT_NAME=apiref-heldout-root
fi
export LC_ALL=C.UTF-8 PYTHONHASHSEED=0 DEBIAN_FRONTEND=noninteractive

# shellcheck source=scripts/lib/debian-docs.sh
. "$HERE/lib/debian-docs.sh"
install_tools python3 python3-venv

ROOT=$CACHE/$ROOT_NAME
# shellcheck disable=SC2086
unpack_packages "$ROOT" $DOC_PKGS
python_venv "$VENV"

PYTHONPATH=$HERE "$VENV/bin/python" "$HERE/apiref_set.py" --out "$OUT" --root "$ROOT" \
    --seed "${APIREF_SEED:-42}" --sources "$SOURCES" --versions "$(versions_json)" --jobs "${EVAL_JOBS:-2}"
echo "wrote $OUT/site, seeds.txt, pages.jsonl, pairs.jsonl, docs.jsonl, summary.json" >&2
