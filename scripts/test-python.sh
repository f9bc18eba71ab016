#!/usr/bin/env bash
# Builds the `simcrawl` Python wheel (crates/python) the way a user would,
# installs it into a virtualenv, and runs its tests: unit tests of the
# bindings and end-to-end Scrapy crawls of a site served on 127.0.0.1.
#
# The venv lives in $CARGO_TARGET_DIR (or target/)/py-venv and is reused;
# maturin, Scrapy and pytest come from PyPI.
#
# SIMCRAWL_PY_PROFILE picks the cargo profile of the wheel: `dev` (the
# default here) reuses the debug build of the workspace that scripts/test.sh
# has just made, so the wheel costs about a minute instead of a full
# release build of every dependency (several minutes on 2 cores); the test
# site is small, so the unoptimized wheel runs the suite in seconds. Users
# and the benchmark build with `release`.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-target}
# Absolute: the lint step runs from crates/python.
mkdir -p "$TARGET"
TARGET=$(cd "$TARGET" && pwd)
VENV=${SIMCRAWL_PY_VENV:-$TARGET/py-venv}
PROFILE=${SIMCRAWL_PY_PROFILE:-dev}
WHEELS=$TARGET/py-wheels-$PROFILE
PY=${PYTHON:-python3}

if ! "$VENV/bin/python" -c 'import sys; assert sys.version_info >= (3, 9)' 2>/dev/null; then
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
fi
# pyspark (pinned: the version simcrawl.spark is tested with; it runs on the
# JRE scripts/install-deps.sh installs) for tests/test_spark.py.
"$VENV/bin/python" -m pip install -q --disable-pip-version-check \
  "maturin>=1.9,<2" "scrapy>=2.11" "pytest>=7" "mypy>=1.10" "ruff>=0.6" "pyspark==3.5.9"

# The Python sources: lint, format and strict typing (settings in
# crates/python/pyproject.toml; the extension's types are its .pyi stub).
(
  cd crates/python
  "$VENV/bin/ruff" check python tests bench
  "$VENV/bin/ruff" format --check python tests bench
  "$VENV/bin/python" -m mypy python/simcrawl
)

rm -rf "$WHEELS"
"$VENV/bin/maturin" build --locked --profile "$PROFILE" -m crates/python/Cargo.toml \
  -i "$VENV/bin/python" -o "$WHEELS"
# --force-reinstall: a rebuilt wheel keeps its version number.
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$WHEELS"/simcrawl-*.whl

# The tests and benches are typed against the installed package (its stub),
# so they are checked once it is installed.
(cd crates/python && "$VENV/bin/python" -m mypy --ignore-missing-imports tests bench)

# The `crawl` binary, for the test that runs both front ends over one corpus
# (tests/test_front_ends.py): the same profile as the wheel, so after
# scripts/test.sh (which builds it for its own tests) this costs nothing.
if [ -z "${SIMCRAWL_CRAWL_BIN:-}" ]; then
  cargo build --locked --profile "$PROFILE" --target-dir "$TARGET" -p simcrawl --bin crawl
  case $PROFILE in
    dev) PROFILE_DIR=debug ;;
    *) PROFILE_DIR=$PROFILE ;;
  esac
  export SIMCRAWL_CRAWL_BIN=$TARGET/$PROFILE_DIR/crawl
fi

# From the tests' directory, so `import simcrawl` finds the installed wheel,
# not the sources in crates/python/python.
cd crates/python/tests
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
