#!/usr/bin/env bash
# Runs every check and test of the workspace: formatting, clippy (warnings
# are errors), unit, integration, doc and end-to-end tests (the e2e tests
# start the real `crawl` binary against HTTP servers on 127.0.0.1).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
