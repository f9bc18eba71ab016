#!/usr/bin/env bash
# The batch path's verdicts in several input orders (issue 35): `crawl dedup`
# over a labelled set's `html` lines shuffled with seeds 1..N (the same
# files for every binary), each scored by `crawl eval --crawled`. Order
# decides which page of a pair is dropped, so one order can hide or show a
# false drop; the sum over orders compares two builds on the same footing.
#
# usage: scripts/shuffled-gate.sh SET_DIR ORDERS NAME=BIN [NAME=BIN ...]
#   e.g. scripts/shuffled-gate.sh target/apiref-set 5 before=/tmp/old/crawl after=target/release/crawl
# Labels: SET_DIR/pairs_tw2sp.jsonl or SET_DIR/combined_pairs.jsonl (the
# news set) when present, else SET_DIR/pairs.jsonl
# (LABELS=FILE overrides). Prints one line per order and build (dropped,
# unique lost, recall >= 300 chars, false drops), then the sums.
set -euo pipefail
if [ $# -lt 3 ]; then
    echo "usage: $0 SET_DIR ORDERS NAME=BIN [NAME=BIN ...]" >&2
    exit 2
fi
SET=$(cd "$1" && pwd)
ORDERS=$2
shift 2
[ -f "$SET/docs.jsonl" ] || { echo "no docs.jsonl (html lines) in $SET" >&2; exit 2; }
if [ -z "${LABELS:-}" ]; then
    LABELS=$SET/pairs.jsonl
    [ -f "$SET/pairs_tw2sp.jsonl" ] && LABELS=$SET/pairs_tw2sp.jsonl
    [ -f "$SET/combined_pairs.jsonl" ] && LABELS=$SET/combined_pairs.jsonl
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for seed in $(seq 1 "$ORDERS"); do
    python3 -c "
import random, sys
lines = open(sys.argv[1], encoding='utf-8').readlines()
random.Random(int(sys.argv[2])).shuffle(lines)
open(sys.argv[3], 'w', encoding='utf-8').writelines(lines)" "$SET/docs.jsonl" "$seed" "$WORK/in.jsonl"
    for nb in "$@"; do
        name=${nb%%=*}
        bin=${nb#*=}
        [ -x "$bin" ] || { echo "no crawl binary at $bin" >&2; exit 2; }
        rm -rf "$WORK/out"
        "$bin" dedup --input "$WORK/in.jsonl" --out "$WORK/out" >/dev/null 2>"$WORK/log" || { cat "$WORK/log" >&2; exit 1; }
        row=$("$bin" eval --crawled "$WORK/out" --pages "$SET/pages.jsonl" --labels "$LABELS" | grep '^| all' \
            | awk -F'|' '{gsub(/ /, ""); print $5, $6, $8, $10}')
        echo "order $seed $name $row"
    done
done | tee "$WORK/rows"
echo "sums over $ORDERS orders (dropped / unique lost / false drops; recall min-max):"
awk '{d[$3]+=$4; l[$3]+=$5; f[$3]+=$7; if (!($3 in lo) || $6 < lo[$3]) lo[$3]=$6; if ($6 > hi[$3]) hi[$3]=$6}
     END {for (n in d) printf "%s %d / %d / %d; %s-%s\n", n, d[n], l[n], f[n], lo[n], hi[n]}' "$WORK/rows"
