#!/usr/bin/env bash
# Builds the syndicated-news set (issue 35; docs/eval-news.md): real news
# pages of the article-extraction benchmark, their stories republished
# inside other sites' real templates (same title, retitled, last paragraph
# cut, a syndication line), distinct stories sharing one template, teaser
# and index pages, on hosts to serve over loopback, in the HTML gate's
# format (scripts/build-html-gate.sh).
#   scripts/build-news-set.sh OUTDIR [BENCH_DIR]
# BENCH_DIR defaults to shared/data/article-extraction-benchmark beside the
# checkout (or /work/shared/...). Writes OUTDIR/site/HOST/..., seeds.txt,
# pages.jsonl, pairs.jsonl (whole-page truth), story_pairs.jsonl (article
# truth: the label for news), combined_pairs.jsonl (story truth between
# story pages, whole-page truth with listings: what scripts/genre-gate.sh
# scores by), docs.jsonl and summary.json.
#
# Fetches debian-handbook (translated sections as extra stories in ten
# languages) with apt like scripts/build-html-gate.sh, and uses the venv of
# scripts/build-eval-set.sh (numpy, scipy, opencc). Environment: EVAL_CACHE,
# EVAL_VENV, EVAL_SKIP_APT, EVAL_JOBS, NEWS_SEED.
#
# Then, with a release build:
#   scripts/html-gate.sh OUTDIR CRAWL_OUT            (scores by pairs.jsonl)
#   crawl eval --crawled CRAWL_OUT/crawl --pages OUTDIR/pages.jsonl \
#       --labels OUTDIR/story_pairs.jsonl            (scores by story truth)
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 OUTDIR [BENCH_DIR]" >&2
    exit 2
fi
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
BENCH=${2:-}
if [ -z "$BENCH" ]; then
    for d in "$HERE/../../shared/data/article-extraction-benchmark" "$HERE/../shared/data/article-extraction-benchmark" \
        /work/shared/data/article-extraction-benchmark; do
        if [ -f "$d/ground-truth.json" ]; then
            BENCH=$d
            break
        fi
    done
fi
[ -n "$BENCH" ] && [ -f "$BENCH/ground-truth.json" ] || {
    echo "no article-extraction benchmark found (give BENCH_DIR)" >&2
    exit 2
}
CACHE=${EVAL_CACHE:-$HOME/.cache/simcrawl-eval}
VENV=${EVAL_VENV:-$HOME/.cache/simcrawl-eval-venv}
export LC_ALL=C.UTF-8 PYTHONHASHSEED=0 DEBIAN_FRONTEND=noninteractive

# shellcheck source=scripts/lib/debian-docs.sh
. "$HERE/lib/debian-docs.sh"
install_tools gzip python3 python3-venv

# debian-handbook: translated real text for more languages (its own root, so
# that the other sets' caches are not unpacked again)
ROOT=$CACHE/news-root
unpack_packages "$ROOT" debian-handbook
python_venv "$VENV"

PYTHONPATH=$HERE "$VENV/bin/python" "$HERE/news_set.py" --out "$OUT" --bench "$BENCH" \
    --handbook "$ROOT/usr/share/doc/debian-handbook/html" \
    --seed "${NEWS_SEED:-35}" --jobs "${EVAL_JOBS:-2}"
echo "wrote $OUT/site, seeds.txt, pages.jsonl, pairs.jsonl, story_pairs.jsonl, combined_pairs.jsonl, docs.jsonl, summary.json" >&2
