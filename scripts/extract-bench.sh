#!/usr/bin/env bash
# Scores `clean`'s main-content extraction on the public article-extraction benchmark
# (181 news pages with ground truth) and prints the benchmark's own table, our row
# (`simcrawl`) next to the published ones, plus our throughput in MB/s of HTML.
#
#   bash scripts/extract-bench.sh [BENCH_DIR] [PASSES]
#
# BENCH_DIR defaults to ../shared/data/article-extraction-benchmark (relative to the
# repository root). It is copied to a scratch folder first: shared data stays read-only.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="${1:-$root/../shared/data/article-extraction-benchmark}"
passes="${2:-3}"
[ -d "$src" ] || { echo "benchmark folder not found: $src" >&2; exit 1; }
work="${AEB_WORK:-$(mktemp -d /tmp/aeb.XXXXXX)}"
mkdir -p "$work"
cp -r "$src"/. "$work"/
chmod -R u+w "$work"
cd "$root"
cargo build --release -q -p simcrawl-clean --example extract_bench
bin="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/examples/extract_bench"
"$bin" "$work" "$passes"
(cd "$work" && python3 evaluate.py --n-bootstrap 200)
echo "scratch copy: $work"
