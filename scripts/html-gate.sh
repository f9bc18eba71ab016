#!/usr/bin/env bash
# Crawls the HTML gate's sites over loopback with the crawler's defaults and
# scores the crawl's own verdicts against the labelled truth (docs/EVAL.md,
# "The HTML gate"):
#   scripts/html-gate.sh GATE_DIR OUT_DIR [CRAWL_BIN] [--set KEY=VALUE ...]
# GATE_DIR is made by scripts/build-html-gate.sh. The sites are served by
# scripts/serve_site.py on a free 127.0.0.1 port; every host of GATE_DIR/site
# resolves to it through `fetch.resolve`. Settings: the defaults, but for the
# politeness towards our own server (no per-host delay, 8 requests at once
# per host), as README.md advises for a site of one's own. Prints the
# per-source table of `crawl eval --crawled`; exits non-zero when the crawl
# or the scoring fails.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 GATE_DIR OUT_DIR [CRAWL_BIN] [--set KEY=VALUE ...]" >&2
    exit 2
fi
GATE=$(cd "$1" && pwd)
mkdir -p "$2"
OUT=$(cd "$2" && pwd)
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${CRAWL_BIN:-$HERE/../target/release/crawl}
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
    BIN=$1
    shift
fi
[ -x "$BIN" ] || { echo "no crawl binary at $BIN (cargo build --release -p simcrawl)" >&2; exit 2; }

rm -rf "$OUT/crawl" "$OUT/data" "$OUT/port"
python3 "$HERE/serve_site.py" "$GATE/site" "$OUT/port" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    [ -s "$OUT/port" ] && break
    sleep 0.1
done
port=$(cat "$OUT/port")

{
    echo "[fetch]"
    echo "per_host_delay_ms = 0"
    echo "per_host_concurrency = 8"
    echo "[fetch.resolve]"
    for host in "$GATE"/site/*/; do
        echo "\"$(basename "$host")\" = [\"127.0.0.1\"]"
    done
} >"$OUT/crawl.toml"
sed "s#^http://\([^/]*\)/#http://\1:$port/#" "$GATE/seeds.txt" >"$OUT/seeds.txt"

start=$(date +%s.%N)
"$BIN" --seeds "$OUT/seeds.txt" --config "$OUT/crawl.toml" --out "$OUT/crawl" \
    --data-dir "$OUT/data" "$@" 2>"$OUT/crawl.log"
end=$(date +%s.%N)
echo "crawled in $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s" >&2
# The truth: pairs_tw2sp.jsonl where the set has one (zh-TW/zh-CN pairs also
# scored through OpenCC tw2sp, scripts/tw2sp_labels.py), else pairs.jsonl.
LABELS=$GATE/pairs.jsonl
[ -f "$GATE/pairs_tw2sp.jsonl" ] && LABELS=$GATE/pairs_tw2sp.jsonl
"$BIN" eval --crawled "$OUT/crawl" --pages "$GATE/pages.jsonl" --labels "$LABELS"
