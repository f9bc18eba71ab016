#!/usr/bin/env bash
# Runs every check and test of the workspace: formatting, clippy (warnings
# are errors), unit, integration, doc and end-to-end tests (the e2e tests
# start the real `crawl` binary against HTTP servers on 127.0.0.1).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings
cargo test --workspace --locked
# The optional sled store of the dedup crate, against the same tests.
cargo test -p simcrawl-dedup --features sled --locked
