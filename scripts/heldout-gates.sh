#!/usr/bin/env bash
# The held-out sets of the multi-genre gate (issue 35; docs/EVAL.md "Issue
# 35, tenth round"): sets built from other packages or another seed than
# the gate's, never used to tune a rule, so that a change is checked on
# sites it was not fitted to. Builds them once into DIR (default
# target/heldout) and scores BIN on each with scripts/genre-gate.sh:
#   scripts/heldout-gates.sh [BIN] [DIR]
# - apiref:   APIREF_SOURCES=heldout scripts/build-apiref-set.sh (ant,
#             Crystal, cppreference, Eigen, Xerces, GTK 3, Jinja2)
# - manpages: MANPAGE_SOURCES=heldout scripts/build-manpage-set.sh (English
#             by mandoc and man2html; Russian, Ukrainian, Polish, Spanish)
# - news:     NEWS_SEED=7 scripts/build-news-set.sh (other templates and
#             variants for each story), with its copy recall
# - news11:   NEWS_SEED=11, likewise. It found two extraction faults of the
#             twelfth round (docs/EVAL.md), so it is no longer unseen
# - news13:   NEWS_SEED=13, first run in the thirteenth round (no rule fitted
#             to it)
# - news19:   NEWS_SEED=19, first run at the end of the fourteenth round (no
#             rule fitted to it). Seed 17 found that round's rule, and its
#             builder exits 1 (one cut copy at 0.787 by its story, under
#             the 0.8 it checks), so it is not here
# - news23:   NEWS_SEED=23, first run in the fifteenth round (no rule
#             fitted to it; seed 29, also run then, exits 1 as 17 does). A
#             next round should pick a seed never run (31, 37, ...)
# - multilang7: MULTILANG_SEED=7 scripts/build-multilang-set.sh (another
#             draw of pages and copies in the 14 languages; first run in the
#             fourteenth round: 0 lost, recall 1.000 on both paths)
# Prints each set's `| all` rows (crawl, then `crawl dedup`: dropped, lost,
# recall >= 300 chars, false drops) and the false drops. Not part of CI
# (about two minutes once the sets are built).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/crawl}
DIR=${2:-target/heldout}
[ -x "$BIN" ] || cargo build --release -q -p simcrawl
mkdir -p "$DIR"
build() {  # build NAME COMMAND...: once per version of the builders
    local name=$1 stamp
    shift
    stamp=$(cat scripts/build-apiref-set.sh scripts/apiref_set.py scripts/build-manpage-set.sh \
        scripts/manpage_set.py scripts/build-news-set.sh scripts/news_set.py scripts/eval_set.py \
        scripts/build-multilang-set.sh scripts/multilang_set.py \
        | sha256sum | cut -c1-16)
    if [ "$(cat "$DIR/$name/.stamp" 2>/dev/null)" != "$stamp" ]; then
        rm -rf "${DIR:?}/$name"
        "$@" "$DIR/$name" >"$DIR/$name.build.log" 2>&1 || { cat "$DIR/$name.build.log" >&2; exit 1; }
        echo "$stamp" >"$DIR/$name/.stamp"
    fi
}
build apiref env APIREF_SOURCES=heldout bash scripts/build-apiref-set.sh
build manpages env MANPAGE_SOURCES=heldout bash scripts/build-manpage-set.sh
build news env NEWS_SEED=7 bash scripts/build-news-set.sh
build news11 env NEWS_SEED=11 bash scripts/build-news-set.sh
build news13 env NEWS_SEED=13 bash scripts/build-news-set.sh
build news19 env NEWS_SEED=19 bash scripts/build-news-set.sh
build news23 env NEWS_SEED=23 bash scripts/build-news-set.sh
build multilang7 env MULTILANG_SEED=7 bash scripts/build-multilang-set.sh
for name in apiref manpages news news11 news13 news19 news23 multilang7; do
    out=$(mktemp -d)
    bash scripts/genre-gate.sh "$DIR/$name" "$out" "$BIN" >"$out/gate.txt" 2>&1
    echo "== held-out $name"
    grep -E '^\| all|false drop:|lost:' "$out/gate.txt" || true
    if [ "${name#news}" != "$name" ]; then
        python3 scripts/news_copy_recall.py "$DIR/$name" "$out" | grep -E '^## |^\| all'
    fi
    rm -rf "$out"
done
