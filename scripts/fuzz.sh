#!/usr/bin/env bash
# Long fuzz run of every harness (stable Rust, release build): charset
# decoding and HTML cleaning, URL canonicalization (fixed points, and one
# canonical form exactly per meaning) and signing, robots.txt
# handling, the JSONL batch reader. CI runs the same harnesses with 256
# cases each (the batch reader: 4 files). A failure prints the minimal
# input that breaks the property.
#   bash scripts/fuzz.sh [CASES]      # default 100000 cases per harness
set -euo pipefail
cd "$(dirname "$0")/.."
export SIMCRAWL_FUZZ_CASES=${1:-100000}
cargo test --release -p simcrawl-clean --test fuzz
cargo test --release -p simcrawl-dedup --test fuzz
cargo test --release -p simcrawl-dedup --test canonical_props
cargo test --release -p simcrawl-fetch robots_fuzz
cargo test --release -p simcrawl --test fuzz_batch
