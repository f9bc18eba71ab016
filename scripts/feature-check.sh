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
# A 32-bit target: the crate is embedded by others, and a constant that
# fits a 64-bit usize only (issue 36: `.min(1 << 36)` in the band store)
# must fail here, not on a user's machine. Needs the target's standard
# library and the 32-bit C headers (scripts/install-deps.sh installs both).
# A build, not a check: the overflow lint runs with code generation only
# (`cargo check` passed the line the issue named; the build refused it).
if rustup target list --installed 2>/dev/null | grep -qx i686-unknown-linux-gnu &&
    { [ -e /usr/include/x86_64-linux-gnu/gnu/stubs-32.h ] || [ -e /usr/include/gnu/stubs-32.h ]; }; then
    echo "+ cargo build -p $pkg --lib --all-features --target i686-unknown-linux-gnu" >&2
    cargo build -q -p "$pkg" --lib --all-features --target i686-unknown-linux-gnu
else
    echo "feature-check: SKIPPED the 32-bit check (no i686-unknown-linux-gnu target or 32-bit C headers; scripts/install-deps.sh installs them)" >&2
fi
echo "feature-check: $pkg builds without warnings with no features, each of [$features] alone, all features, and for i686" >&2
