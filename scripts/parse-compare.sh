#!/usr/bin/env bash
# HTML parsing alone, four ways, over every .html page of a site held in
# memory (issue 37, target 2; docs/BENCHMARKS.md "Parsers side by side"):
# scraper's DOM as the crawl builds it, html5ever's tokenizer alone,
# html5gum's tokenizer and lol_html's streaming rewriter, alternating
# rounds; prints each way's median CPU per page and MB/s.
#   scripts/parse-compare.sh [SITE_DIR] [ROUNDS]
# SITE_DIR defaults to the zh/en documentation mix
# (scripts/build-mixed-docs-site.sh). Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
SITE=${1:-target/mixed-docs}
ROUNDS=${2:-5}
[ -d "$SITE" ] || bash scripts/build-mixed-docs-site.sh "$SITE"
CARGO_TARGET_DIR=target/parse-compare cargo build --release -q \
  --manifest-path bench/parse-compare/Cargo.toml
target/parse-compare/release/parse-compare "$SITE" "$ROUNDS"
