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
# Random seeds: the test command fixes one (scripts/test.sh), this run explores.
unset PROPTEST_RNG_SEED
cargo test --release -p simcrawl-clean --test fuzz
cargo test --release -p simcrawl-dedup --test fuzz
cargo test --release -p simcrawl-dedup --test canonical_props
cargo test --release -p simcrawl-fetch robots_fuzz
cargo test --release -p simcrawl --test fuzz_batch
# The normalizers' own properties (idempotence, stability after two runs),
# 512 cases a run: repeated here with fresh seeds.
for _ in $(seq 1 $(( (SIMCRAWL_FUZZ_CASES + 511) / 512 < 50 ? (SIMCRAWL_FUZZ_CASES + 511) / 512 : 50 ))); do
    cargo test --release -q -p simcrawl-clean --lib normalize::proptests
done
