#!/usr/bin/env bash
# Replays archived pages in pywb, the Webrecorder project's wayback machine,
# and loads them in a real Chromium: the proof that an archive written by
# `crawl --warc` is usable as an archive, not only valid.
#
#   bash scripts/warc-replay.sh WARC_DIR URL...
#
# Indexes the WARC files of WARC_DIR into a pywb collection (`wb-manager
# init` and `add`), starts `wayback` on a free 127.0.0.1 port, and for each
# URL (and for every revisit record's URL of the archive, which pywb must
# resolve to its original's payload) loads the replay page
# http://127.0.0.1:PORT/demo/<url> in headless Chromium; each must show the
# <title> its archived response has. Exit status: 0 when every page
# replays. Slow the first time (pywb from PyPI into the WARC venv,
# scripts/warc-venv.sh --pywb), so it is a documented check, not part of
# CI (docs/WARC.md).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ] || [ ! -d "$1" ]; then
  echo "usage: $0 WARC_DIR URL..." >&2
  exit 2
fi
WARCS=$(cd "$1" && pwd)
shift
BROWSER=${SIMCRAWL_CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
if [ -z "$BROWSER" ]; then
  echo "warc-replay: no chromium on PATH (scripts/install-deps.sh installs Debian's)" >&2
  exit 2
fi
VENV=$(bash scripts/warc-venv.sh --pywb)
WORK=$(mktemp -d)
trap 'kill $WAYBACK 2>/dev/null || true; rm -rf "$WORK"' EXIT
WAYBACK=

cd "$WORK"
"$VENV/bin/wb-manager" init demo >/dev/null
find "$WARCS" -maxdepth 1 -name '*.warc.gz' -o -maxdepth 1 -name '*.warc' | sort | while read -r f; do
  "$VENV/bin/wb-manager" add demo "$f" >/dev/null
done
PORT=$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$VENV/bin/wayback" --bind 127.0.0.1 -p "$PORT" >"$WORK/wayback.log" 2>&1 &
WAYBACK=$!
for _ in $(seq 100); do
  "$VENV/bin/python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/demo/')" 2>/dev/null && break
  sleep 0.2
done

# The pages to load: those asked for, and every revisit of the archive;
# each with the title its (original) response holds.
"$VENV/bin/python" - "$WARCS" "$@" >"$WORK/pages.tsv" <<'PY'
import glob, re, sys
from warcio.archiveiterator import ArchiveIterator
warcs, asked = sys.argv[1], sys.argv[2:]
titles, revisits = {}, []
for path in sorted(glob.glob(warcs + "/*.warc*")):
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f):
            uri = rec.rec_headers.get_header("WARC-Target-URI")
            if rec.rec_type == "response":
                body = rec.content_stream().read()
                m = re.search(rb"<title>(.*?)</title>", body, re.S | re.I)
                if m and uri not in titles:
                    titles[uri] = m.group(1).decode("utf-8", "replace").strip()
            elif rec.rec_type == "revisit":
                revisits.append((uri, rec.rec_headers.get_header("WARC-Refers-To-Target-URI")))
for url in asked:
    if url not in titles:
        sys.exit(f"warc-replay: {url} has no HTML response with a <title> in the archive")
    print(f"{url}\t{titles[url]}\tpage")
for url, orig in revisits:
    if orig in titles:
        print(f"{url}\t{titles[orig]}\trevisit of {orig}")
PY

fail=0
while IFS=$'\t' read -r url title what; do
  dom=$("$BROWSER" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --virtual-time-budget=8000 --dump-dom "http://127.0.0.1:$PORT/demo/$url" 2>/dev/null || true)
  # pywb's frame page loads the archived page in an iframe: ask its
  # unframed replay (mp_) for the page itself.
  page=$("$BROWSER" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --virtual-time-budget=8000 --dump-dom "http://127.0.0.1:$PORT/demo/mp_/$url" 2>/dev/null || true)
  if [[ "$page" == *"$title"* ]] && [[ -n "$dom" ]]; then
    echo "replayed: $url ($what): \"$title\""
  else
    echo "NOT replayed: $url ($what): \"$title\" not in what Chromium shows" >&2
    fail=1
  fi
done <"$WORK/pages.tsv"
if [ "$fail" -ne 0 ]; then
  tail -20 "$WORK/wayback.log" >&2
  exit 1
fi
echo "warc-replay: every page replays in pywb ($("$VENV/bin/python" -c 'import pywb; print(pywb.__version__)')) in $("$BROWSER" --version 2>/dev/null)"
