#!/usr/bin/env bash
# Scores one labelled set of the multi-genre gate (docs/EVAL.md, "Genres")
# on both paths users run:
#   scripts/genre-gate.sh SET_DIR OUT_DIR [CRAWL_BIN] [--labels FILE] [--set KEY=VALUE ...]
# 1. crawl: the set's sites served over loopback and crawled with the
#    defaults (scripts/html-gate.sh), scored by `crawl eval --crawled`;
# 2. batch: `crawl dedup` over the set's docs.jsonl (`html` lines), its
#    outputs scored the same way.
# SET_DIR is made by scripts/build-html-gate.sh, build-news-set.sh or
# build-multilang-set.sh. --labels picks the truth (default SET_DIR/pairs_tw2sp.jsonl
# where the set has one, SET_DIR/combined_pairs.jsonl where the set has
# that (the news set: story pages by their article text, listings by the
# page), else SET_DIR/pairs.jsonl).
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 SET_DIR OUT_DIR [CRAWL_BIN] [--labels FILE] [--set KEY=VALUE ...]" >&2
    exit 2
fi
SET=$(cd "$1" && pwd)
mkdir -p "$2"
OUT=$(cd "$2" && pwd)
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$HERE/../target/release/crawl
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
    BIN=$1
    shift
fi
LABELS=$SET/pairs.jsonl
# zh-TW/zh-CN pairs also scored through OpenCC tw2sp (scripts/tw2sp_labels.py).
[ -f "$SET/pairs_tw2sp.jsonl" ] && LABELS=$SET/pairs_tw2sp.jsonl
# The news set: story truth between story pages, page truth with listings.
[ -f "$SET/combined_pairs.jsonl" ] && LABELS=$SET/combined_pairs.jsonl
if [ "${1:-}" = "--labels" ]; then
    LABELS=$2
    shift 2
fi
[ -x "$BIN" ] || { echo "no crawl binary at $BIN (cargo build --release -p simcrawl)" >&2; exit 2; }

echo "## crawl over loopback: $(basename "$SET")"
bash "$HERE/html-gate.sh" "$SET" "$OUT/crawl-run" "$BIN" "$@" >/dev/null
"$BIN" eval --crawled "$OUT/crawl-run/crawl" --pages "$SET/pages.jsonl" --labels "$LABELS"
if [ -f "$SET/docs.jsonl" ]; then
    echo
    echo "## crawl dedup over html lines: $(basename "$SET")"
    rm -rf "$OUT/batch"
    "$BIN" dedup --input "$SET/docs.jsonl" --out "$OUT/batch" "$@" 2>"$OUT/batch.log" >/dev/null
    "$BIN" eval --crawled "$OUT/batch" --pages "$SET/pages.jsonl" --labels "$LABELS"
fi
