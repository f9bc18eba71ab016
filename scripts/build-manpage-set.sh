#!/usr/bin/env bash
# Builds the man-page set of the multi-genre gate (issue 35, "a gate per
# genre"; docs/eval-manpages.md): Debian's man pages rendered to HTML, one
# host per language and renderer, labelled with the exact resemblance of every
# pair of pages.
#   scripts/build-manpage-set.sh [OUTDIR]     (default target/manpage-set)
# writes OUTDIR/site/HOST/..., seeds.txt, pages.jsonl, pairs.jsonl,
# pairs_tw2sp.jsonl, docs.jsonl and summary.json (the format of
# scripts/build-multilang-set.sh),
# so that scripts/genre-gate.sh OUTDIR RUN_DIR scores a build on it.
#
# Sources: manpages and manpages-dev (English), manpages-zh (zh_CN and zh_TW),
# manpages-de, manpages-fr, manpages-ja. Sampling (scripts/manpage_set.py,
# seeded): English pages with a kept translation plus 150 others, rendered by
# mandoc -T html (man.en.test); 150 of those names also rendered by man2html
# (man2html.en.test); the zh pages with an English original plus 215 others,
# the same names in zh_CN and zh_TW (man.zh-cn.test, man.zh-tw.test); every
# de, fr, ja page with an English original (man.LANG.test). Symlinks and .so
# stubs are left out. Each host has /index.html (a seed) linking
# /manN/index.html, which links the section's pages, /manN/NAME.N.html.
#
# Labelling: scripts/html_gate.py's truth (its extractor of the whole visible
# text, character 5-grams after NFKC, OpenCC t2s, lower case, letters and
# digits only; scripts/eval_set.py all_resemblances: every pair computed),
# near >= 0.8, ambiguous >= 0.5, listed >= 0.3. Also pairs_tw2sp.jsonl, the
# same but a zh-tw/zh-cn pair scores the larger of that and its resemblance
# with the zh-tw text through OpenCC tw2sp first (Taiwan vocabulary), for
# `genre-gate.sh OUTDIR RUN_DIR BIN --labels OUTDIR/pairs_tw2sp.jsonl`.
#
# Needs a Debian machine with apt (root or sudo): mandoc and man2html-base are
# installed, the man-page packages go through `apt-get download` into
# $EVAL_CACHE/manpage-root; numpy, scipy and opencc into the venv $EVAL_VENV.
# Environment: EVAL_CACHE, EVAL_VENV, EVAL_SKIP_APT=1, EVAL_JOBS,
# MANPAGE_SEED (default 42), MANPAGE_SOURCES (gate, the default, or heldout).
set -euo pipefail

if [ $# -gt 1 ]; then
    echo "usage: $0 [OUTDIR]" >&2
    exit 2
fi
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "${1:-$HERE/../target/manpage-set}"
OUT=$(cd "${1:-$HERE/../target/manpage-set}" && pwd)
CACHE=${EVAL_CACHE:-$HOME/.cache/simcrawl-eval}
VENV=${EVAL_VENV:-$HOME/.cache/simcrawl-eval-venv}
MAN_PKGS="manpages manpages-dev manpages-zh manpages-de manpages-fr manpages-ja"
ROOT_NAME=manpage-root
# MANPAGE_SOURCES=heldout: a second set in other languages and scripts
# (manpage_set.py choose_heldout), never used to tune a rule; not in CI.
SOURCES=${MANPAGE_SOURCES:-gate}
if [ "$SOURCES" = heldout ]; then
    MAN_PKGS="manpages manpages-dev manpages-ru manpages-uk manpages-pl manpages-es"
    ROOT_NAME=manpage-heldout-root
fi
export LC_ALL=C.UTF-8 PYTHONHASHSEED=0 DEBIAN_FRONTEND=noninteractive

# shellcheck source=scripts/lib/debian-docs.sh
. "$HERE/lib/debian-docs.sh"
install_tools python3 python3-venv mandoc man2html-base

ROOT=$CACHE/$ROOT_NAME
# shellcheck disable=SC2086
unpack_packages "$ROOT" $MAN_PKGS
python_venv "$VENV"
VERSIONS=$(versions_json)
for tool in mandoc man2html-base; do
    VERSIONS="${VERSIONS%\}}, \"$tool\": \"$(dpkg-query -W -f '${Version}' "$tool")\"}"
done

PYTHONPATH=$HERE "$VENV/bin/python" "$HERE/manpage_set.py" --out "$OUT" --root "$ROOT" \
    --seed "${MANPAGE_SEED:-42}" --sources "$SOURCES" --versions "$VERSIONS" --jobs "${EVAL_JOBS:-2}"
echo "wrote $OUT/site, seeds.txt, pages.jsonl, pairs.jsonl, docs.jsonl, summary.json (and pairs_tw2sp.jsonl but for the held-out set)" >&2
