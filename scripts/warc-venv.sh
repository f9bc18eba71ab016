#!/usr/bin/env bash
# The Python venv of the WARC tools (warcio and cdxj-indexer, pinned), made
# on first use; prints its path. cdxj-indexer (webrecorder's, what pywb's
# tooling indexes with) is the reference the e2e tests compare the crawl's
# CDXJ indexes with (`$VENV/bin/cdxj-indexer`). `--pywb` also installs pywb (for scripts/warc-replay.sh:
# slower, not needed by the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-target}
mkdir -p "$TARGET"
VENV=${SIMCRAWL_WARC_VENV:-$(cd "$TARGET" && pwd)/warc-venv}
PY=${PYTHON:-python3}
if ! "$VENV/bin/python" -c 'import warcio' 2>/dev/null; then
  rm -rf "$VENV"
  "$PY" -m venv "$VENV" >&2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "warcio==1.8.1" >&2
fi
if ! "$VENV/bin/python" -c 'import cdxj_indexer' 2>/dev/null; then
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "warcio==1.8.1" "cdxj-indexer==1.5.0" >&2
fi
if [ "${1:-}" = "--pywb" ] && ! "$VENV/bin/python" -c 'import pywb' 2>/dev/null; then
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "pywb==2.10.0" >&2
fi
echo "$VENV"
