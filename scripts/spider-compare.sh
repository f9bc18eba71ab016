#!/usr/bin/env bash
# Side by side with spider-rs (issue 28, docs/BENCHMARKS.md "Against
# spider-rs"): builds `crawl` and bench/spider-compare (spider from
# crates.io) in release, serves a documentation site with nginx over
# loopback and crawls it with each, alternately, printing medians.
#   scripts/spider-compare.sh [SITE_DIR] [ROUNDS] [-- spider_compare.py options]
# SITE_DIR defaults to LibreOffice's help (en-US, zh-CN, zh-TW: 7,683 pages
# and 367 directory listings) as scripts/build-html-gate.sh unpacks it.
# CRAWL_BIN names another build of `crawl` to run (the profile-guided one,
# scripts/build-pgo.sh); without it the release build is made and run.
# Not part of CI: it builds spider's dependency tree (a few minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
SITE=${1:-$HOME/.cache/simcrawl-eval/html-root/usr/share/libreoffice/help}
ROUNDS=${2:-5}
shift $(( $# > 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
if [ ! -d "$SITE" ]; then
  echo "$SITE: no such site; run scripts/build-html-gate.sh target/html-gate first (it unpacks the docs), or name a folder" >&2
  exit 2
fi
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || bash scripts/install-deps.sh
BIN=${CRAWL_BIN:-target/release/crawl}
[ -n "${CRAWL_BIN:-}" ] || cargo build --release -q -p simcrawl
[ -x "$BIN" ] || { echo "$BIN: not an executable crawl build" >&2; exit 2; }
# spider as its users get it (default features) and its fastest build (no
# default features, mimalloc), each in its own target directory.
CARGO_TARGET_DIR=target/spider-compare cargo build --release -q \
  --manifest-path bench/spider-compare/Cargo.toml
CARGO_TARGET_DIR=target/spider-compare-fast cargo build --release -q \
  --manifest-path bench/spider-compare/Cargo.toml --no-default-features --features mimalloc
python3 scripts/spider_compare.py --crawl "crawl=$BIN" \
  --spider spider=target/spider-compare/release/spider-compare \
  --spider spider-fast=target/spider-compare-fast/release/spider-compare \
  --site "$SITE" --rounds "$ROUNDS" "$@"
