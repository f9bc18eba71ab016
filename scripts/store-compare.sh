#!/usr/bin/env bash
# The crawl writer's store traffic on one redb file, on several (one per
# table group, as a writer split across threads would keep them; the five
# also written by one thread; one file whose transactions two threads
# share, `redb-threads`; the revisit records through an op log to a side
# file and thread, `redb-oplog`) and on
# fjall (an LSM tree): bench/store-compare replays per page the reads and
# writes the local writer makes (issue 37, target 1; docs/BENCHMARKS.md
# "One store or several"). Prints the writing thread's CPU per page by
# window of pages as the store grows.
#   scripts/store-compare.sh [PAGES] [WINDOW]
# PAGES defaults to 300000 (about 3 minutes on 2 cores); 1000000 for the
# long figures (about 10 minutes). Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${1:-300000}
WINDOW=${2:-100000}
CARGO_TARGET_DIR=target/store-compare cargo build --release -q \
  --manifest-path bench/store-compare/Cargo.toml
BIN=target/store-compare/release/store-compare
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() { # NAME PARTS CACHE_MB STORE
  rm -rf "$dir/s"
  CACHE_MB=$3 PARTS=$2 "$BIN" "$4" "$dir/s" "$PAGES" "$WINDOW" | tail -n +2 | sed "s/^[a-z]*/$1/"
}
echo "store,pages_done,writer_us_per_page,process_us_per_page,wall_us_per_page"
run "redb-one-file" ubts 64 redb
for p in u b01 b23 t s; do run "redb-$p" "$p" 16 redb; done
run "redb-split-one-thread" ubts 16 redb-split
run "redb-threads-one-file" ubts 64 redb-threads
run "redb-oplog-revisits" ubts 64 redb-oplog
run "fjall" ubts 64 fjall
