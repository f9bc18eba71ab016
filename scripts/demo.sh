#!/usr/bin/env bash
# Crawls the bundled demo site (demo/site, served on 127.0.0.1 by Python's
# http.server for the length of the run) and shows the verdicts; then runs
# the batch tool over demo/docs.jsonl, and ends by saying where the outputs
# are and how to crawl a site of your own.
#
# CRAWL=path/to/crawl uses that binary instead of building one (the
# end-to-end test runs the demo so); DEMO_OUT changes the output folder.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v python3 >/dev/null || { echo "python3 is required to serve the demo site"; exit 1; }
if [ -z "${CRAWL:-}" ]; then
  command -v cargo >/dev/null || { echo "cargo is required (https://rustup.rs)"; exit 1; }
  cargo build --release -p simcrawl
  CRAWL=target/release/crawl
fi
OUT=${DEMO_OUT:-out/demo}
mkdir -p "$OUT"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$PORT" --bind 127.0.0.1 --directory demo/site >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/')" 2>/dev/null && break
  sleep 0.1
done

echo "http://127.0.0.1:$PORT/" >"$OUT/seeds.txt"
echo "== crawling the demo site at http://127.0.0.1:$PORT/"
# The demo site is our own server on this machine: no per-host delay (the
# settings one would use for a site of one's own; the default 250 ms is for
# other people's servers).
"$CRAWL" --seeds "$OUT/seeds.txt" --config config/crawl.toml --out "$OUT" --data-dir "$OUT/data" --fresh \
  --set fetch.per_host_delay_ms=0 --set fetch.per_host_concurrency=16

python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
def rows(name):
    with open(f"{out}/{name}") as f:
        return [json.loads(l) for l in f if l.strip()]
print("\n== kept (kept.jsonl)")
for r in rows("kept.jsonl"):
    print(f"  {r['simhash']}  {r['url']:<48} {r['title']}")
print("\n== dropped (duplicates.jsonl)")
for r in rows("duplicates.jsonl"):
    print(f"  {r['tier']:<8} d={r.get('distance','-')!s:<3} s={r.get('similarity','-')!s:<5} {r['url']:<48} duplicate of {r['duplicate_of']}")
print("\n== errors (errors.jsonl)")
for r in rows("errors.jsonl"):
    print(f"  {r['kind']:<18} {r['url']}")
PY

echo
echo "== batch: crawl dedup --input demo/docs.jsonl"
"$CRAWL" dedup --input demo/docs.jsonl --out "$OUT/batch" --config config/crawl.toml
echo "kept:";       cat "$OUT/batch/kept.jsonl"
echo "duplicates:"; cat "$OUT/batch/duplicates.jsonl"
echo "bad lines:";  cat "$OUT/batch/errors.jsonl"

echo
echo "== report of the crawl (duplicate clusters, hosts, URL patterns, errors)"
"$CRAWL" report "$OUT"

cat <<EOF

== done
outputs of the crawl:  $OUT/ (kept.jsonl, duplicates.jsonl, errors.jsonl, stats.json, report.html)
outputs of the batch:  $OUT/batch/
the binary to run:     $CRAWL  (--help lists its commands; \`cargo install --path crates/crawl\` puts it on your PATH as \`crawl\`)
explain one verdict:   $CRAWL check URL --config config/crawl.toml --out $OUT --data-dir $OUT/data

crawl your own site:
  echo https://your.site/ > seeds.txt
  $CRAWL --seeds seeds.txt --out out/mysite --data-dir data/mysite
  (a server of your own: add --set fetch.per_host_delay_ms=0 --set fetch.per_host_concurrency=16;
   README.md, "Crawl your own site in five minutes", says more)
EOF
