#!/usr/bin/env bash
# Builds the multilingual near-duplicate set (issue 42, docs/eval-multilang.md):
# real translated documentation in 14 languages as small sites to serve over
# loopback, with copies on other hosts, a variant of every language without
# ASCII letters or digits, and the exact resemblance of every pair of pages.
#   scripts/build-multilang-set.sh OUTDIR
# writes OUTDIR/site/HOST/..., seeds.txt, pages.jsonl, pairs.jsonl,
# docs.jsonl and summary.json: the format of scripts/build-html-gate.sh, so
# that scripts/html-gate.sh OUTDIR RUN_DIR crawls and scores it, plus the
# pages as `crawl dedup --input` lines.
#
# Needs a Debian machine with the archive reachable through apt (root, or
# sudo), like scripts/build-html-gate.sh: the packages are fetched with
# `apt-get download` and unpacked into $EVAL_CACHE/multilang-root; numpy,
# scipy and opencc go into the venv $EVAL_VENV. Environment: EVAL_CACHE,
# EVAL_VENV, EVAL_SKIP_APT=1, EVAL_JOBS, MULTILANG_SEED (default 42).
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${EVAL_CACHE:-$HOME/.cache/simcrawl-eval}
VENV=${EVAL_VENV:-$HOME/.cache/simcrawl-eval-venv}
DOC_PKGS="gnome-user-docs debian-handbook libreoffice-help-hi libreoffice-help-km
          firefox-esr-l10n-th firefox-esr-l10n-he firefox-esr-l10n-my firefox-esr-l10n-hi-in"
export LC_ALL=C.UTF-8 PYTHONHASHSEED=0 DEBIAN_FRONTEND=noninteractive

# shellcheck source=scripts/lib/debian-docs.sh
. "$HERE/lib/debian-docs.sh"
install_tools python3 python3-venv

ROOT=$CACHE/multilang-root
# shellcheck disable=SC2086
unpack_packages "$ROOT" $DOC_PKGS
python_venv "$VENV"

PYTHONPATH=$HERE "$VENV/bin/python" "$HERE/multilang_set.py" --out "$OUT" --root "$ROOT" \
    --seed "${MULTILANG_SEED:-42}" --versions "$(versions_json)" --jobs "${EVAL_JOBS:-2}"
echo "wrote $OUT/site, seeds.txt, pages.jsonl, pairs.jsonl, docs.jsonl, summary.json" >&2
