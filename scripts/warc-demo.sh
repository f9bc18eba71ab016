#!/usr/bin/env bash
# The WARC demo: crawls the bundled demo site with `--warc`, plus a
# byte-identical reprint of its article (so the archive holds a revisit
# record next to the near-duplicates' metadata records), checks the files
# with warcio (scripts/warc-check.sh), judges them again with
# `crawl dedup --input` and compares the kept sets, and with --replay loads
# two pages and the reprint through pywb in Chromium
# (scripts/warc-replay.sh; slow: it installs pywb the first time).
#
#   bash scripts/warc-demo.sh            # crawl, check, dedup the archive
#   bash scripts/warc-demo.sh --replay   # and replay in pywb
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -p simcrawl
CRAWL=target/release/crawl
OUT=out/warc-demo
rm -rf "$OUT"
mkdir -p "$OUT"

# The demo site, and a reprint of its article under another URL.
SITE=$OUT/site
cp -r demo/site "$SITE"
mkdir -p "$SITE/reprint"
cp demo/site/article.html "$SITE/reprint/article.html"
python3 - "$SITE/index.html" <<'PY'
import sys
p = sys.argv[1]
s = open(p, encoding="utf-8").read()
s = s.replace("</ul>", '<li><a href="/reprint/article.html">reprint</a></li></ul>', 1)
open(p, "w", encoding="utf-8").write(s)
PY

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$PORT" --bind 127.0.0.1 --directory "$SITE" >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/')" 2>/dev/null && break
  sleep 0.1
done
BASE=http://127.0.0.1:$PORT
echo "$BASE/" >"$OUT/seeds.txt"

echo "== crawl --warc of the demo site at $BASE/"
"$CRAWL" --seeds "$OUT/seeds.txt" --config config/crawl.toml --out "$OUT/crawl" \
  --data-dir "$OUT/data" --warc "$OUT/warc" --fresh

echo
echo "== the archive: records per type, revisits and verdicts"
python3 - "$OUT/warc" <<'PY'
import collections, glob, gzip, sys
counts = collections.Counter()
for path in sorted(glob.glob(sys.argv[1] + "/*.warc.gz")):
    data = gzip.open(path).read()
    for rec in data.split(b"WARC/1.1\r\n")[1:]:
        head = rec.split(b"\r\n\r\n", 1)[0].decode("utf-8", "replace")
        h = dict(l.split(": ", 1) for l in head.split("\r\n") if ": " in l)
        counts[h["WARC-Type"]] += 1
        if h["WARC-Type"] == "revisit":
            print(f"  revisit   {h['WARC-Target-URI']}  ->  {h['WARC-Refers-To-Target-URI']}")
        if h["WARC-Type"] == "metadata":
            body = rec.split(b"\r\n\r\n", 1)[1].decode("utf-8", "replace")
            fields = dict(l.split(": ", 1) for l in body.split("\r\n") if ": " in l)
            print(f"  metadata  {h['WARC-Target-URI']}  {fields.get('simcrawl-tier')} duplicate of {fields.get('simcrawl-duplicate-of')}")
print("  records:", dict(sorted(counts.items())))
PY

echo
echo "== warcio check and index"
bash scripts/warc-check.sh "$OUT/warc"

echo
echo "== crawl dedup --input the archive: the same pages kept as by the crawl"
"$CRAWL" dedup --input "$OUT/warc" --out "$OUT/dedup" --config config/crawl.toml
python3 - "$OUT/crawl/kept.jsonl" "$OUT/dedup/kept.jsonl" <<'PY'
import json, sys
def kept(p, key):
    return {json.loads(l).get(key) or json.loads(l)["url"] for l in open(p, encoding="utf-8") if l.strip()}
crawl = kept(sys.argv[1], "final_url")
dedup = kept(sys.argv[2], "url")
print(f"  crawl kept {len(crawl)}, dedup of its archive kept {len(dedup)}")
if crawl != dedup:
    print("  only the crawl:", sorted(crawl - dedup))
    print("  only dedup:", sorted(dedup - crawl))
    sys.exit(1)
print("  the same set")
PY

if [ "${1:-}" = "--replay" ]; then
  echo
  echo "== replay in pywb (Chromium)"
  bash scripts/warc-replay.sh "$OUT/warc" "$BASE/article.html" "$BASE/other.html"
fi
