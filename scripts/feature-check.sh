#!/usr/bin/env bash
# Every feature combination of simcrawl-dedup builds without a warning:
# no features, each feature alone, all features (the library), then every
# target (tests, examples, benches) with all features and with the
# defaults. Warnings are errors (RUSTFLAGS=-Dwarnings; dependencies' lints
# stay capped by cargo).
#
#   scripts/feature-check.sh            # uses CARGO_TARGET_DIR if set
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="${RUSTFLAGS:-} -Dwarnings"
pkg=simcrawl-dedup
features=$(cargo metadata --no-deps --format-version 1 |
    python3 -c "import json,sys; p=[p for p in json.load(sys.stdin)['packages'] if p['name']=='$pkg'][0]; print(' '.join(f for f in p['features'] if f != 'default'))")
run() {
    echo "+ cargo check -p $pkg $*" >&2
    cargo check -q -p "$pkg" "$@"
}
run --no-default-features
for f in $features; do
    run --no-default-features --features "$f"
done
run --all-features
run --all-targets --all-features
run --all-targets
echo "feature-check: $pkg builds without warnings with no features, each of [$features] alone, all features" >&2
