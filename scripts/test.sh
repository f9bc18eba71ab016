#!/usr/bin/env bash
# Runs every check and test of the workspace: formatting, clippy (warnings
# are errors), unit, integration, doc and end-to-end tests (the e2e tests
# start the real `crawl` binary against HTTP servers on 127.0.0.1), then the
# Python package's tests (scripts/test-python.sh: its wheel built and
# installed into a venv, pytest, real Scrapy crawls of a local site).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The report's browser test must run, not skip, where chromium is installed.
if command -v chromium >/dev/null; then export SIMCRAWL_REQUIRE_BROWSER=1; fi
cargo fmt --all -- --check
# Every relative link in the docs resolves; the settings reference is current.
bash scripts/docs-check.sh
# The rooms stay small (issue 39): no import cycle in any crate, no source
# file over 1,000 lines, at most three functions over 120 lines, each
# saying why it reads better whole.
for crate in dedup clean fetch crawl python; do
  python3 scripts/module-cycles.py "crates/$crate/src"
done
python3 scripts/room-sizes.py --check
# The dedup crate builds without warnings in every feature combination (issue 41).
bash scripts/feature-check.sh
# The labelled set of real pages behind the verdict-quality gate
# (crates/crawl/tests/eval_set.rs, docs/EVAL.md); built once per version of
# its builder, into target/eval-set unless SIMCRAWL_EVAL_SET names a folder.
EVAL_DIR=${SIMCRAWL_EVAL_SET:-target/eval-set}
stamp=$(cat scripts/build-eval-set.sh scripts/eval_set.py scripts/lib/debian-docs.sh | sha256sum | cut -c1-16)
if [ "$(cat "$EVAL_DIR/.stamp" 2>/dev/null)" != "$stamp" ]; then
  bash scripts/build-eval-set.sh "$EVAL_DIR"
  echo "$stamp" >"$EVAL_DIR/.stamp"
fi
SIMCRAWL_EVAL_SET=$(cd "$EVAL_DIR" && pwd)
export SIMCRAWL_EVAL_SET
# The HTML gate's CI subset (crates/crawl/tests/html_gate.rs, docs/EVAL.md):
# real documentation sites the e2e test serves over loopback and crawls.
GATE_DIR=${SIMCRAWL_HTML_GATE:-target/html-gate}
stamp=$(cat scripts/build-html-gate.sh scripts/html_gate.py scripts/eval_set.py scripts/lib/debian-docs.sh | sha256sum | cut -c1-16)
if [ "$(cat "$GATE_DIR/.stamp" 2>/dev/null)" != "$stamp" ]; then
  bash scripts/build-html-gate.sh "$GATE_DIR" ci
  echo "$stamp" >"$GATE_DIR/.stamp"
fi
SIMCRAWL_HTML_GATE=$(cd "$GATE_DIR" && pwd)
export SIMCRAWL_HTML_GATE
# The multi-genre gate's sets (crates/crawl/tests/genre_gate.rs, docs/EVAL.md
# "Genres"): API references, man pages, syndicated news, a multilingual
# manual, mailing-list archives; each built once per version of its builder into
# target/genre/NAME unless SIMCRAWL_GENRE_SETS names the folder of them.
GENRE_DIR=${SIMCRAWL_GENRE_SETS:-target/genre}
for set in apiref:build-apiref-set.sh:apiref_set.py manpages:build-manpage-set.sh:manpage_set.py \
           news:build-news-set.sh:news_set.py multilang:build-multilang-set.sh:multilang_set.py \
           mail:build-mailarchive-set.sh:mailarchive_set.py; do
  IFS=: read -r name builder helper <<<"$set"
  stamp=$(cat "scripts/$builder" "scripts/$helper" scripts/eval_set.py scripts/tw2sp_labels.py \
    scripts/lib/debian-docs.sh | sha256sum | cut -c1-16)
  if [ "$(cat "$GENRE_DIR/$name/.stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "${GENRE_DIR:?}/$name"
    bash "scripts/$builder" "$GENRE_DIR/$name"
    echo "$stamp" >"$GENRE_DIR/$name/.stamp"
  fi
done
SIMCRAWL_GENRE_SETS=$(cd "$GENRE_DIR" && pwd)
export SIMCRAWL_GENRE_SETS
# Both sets' second truth, which their gates score: zh-TW/zh-CN pairs also
# through OpenCC tw2sp (scripts/tw2sp_labels.py, issue 35), remade when the
# script or the set changes.
. scripts/lib/debian-docs.sh
TRUTH_VENV=${EVAL_VENV:-$HOME/.cache/simcrawl-eval-venv}
python_venv "$TRUTH_VENV"
for dir in "$SIMCRAWL_EVAL_SET" "$SIMCRAWL_HTML_GATE"; do
  stamp=$(cat scripts/tw2sp_labels.py scripts/eval_set.py scripts/html_gate.py "$dir/.stamp" | sha256sum | cut -c1-16)
  if [ "$(cat "$dir/.tw2sp-stamp" 2>/dev/null)" != "$stamp" ]; then
    "$TRUTH_VENV/bin/python" scripts/tw2sp_labels.py "$dir"
    echo "$stamp" >"$dir/.tw2sp-stamp"
  fi
done
# A throwaway Redis server (installed with apt-get when missing) for the
# dedup crate's Redis store tests and the crawler's shared mode
# (crates/crawl/tests/e2e/redis.rs: several `crawl --redis` workers),
# stopped when this script exits; the tests read SIMCRAWL_REDIS_URL (without
# it they print SKIPPED and pass) and SIMCRAWL_REDIS_SERVER.
eval "$(bash scripts/redis-test-server.sh start)"
trap 'bash scripts/redis-test-server.sh stop "$SIMCRAWL_REDIS_DIR"' EXIT
# And a 3-master Redis Cluster (SIMCRAWL_REDIS_CLUSTER_URLS) for the
# store's cluster tests, stopped on exit too.
cluster_env=$(bash scripts/redis-test-server.sh start-cluster)
eval "$cluster_env"
trap 'bash scripts/redis-test-server.sh stop "$SIMCRAWL_REDIS_DIR"; bash scripts/redis-test-server.sh stop "$SIMCRAWL_REDIS_CLUSTER_DIR"' EXIT
# warcio (PyPI, in a venv under target/) checks the WARC files the e2e
# tests write (crates/crawl/tests/e2e/warc.rs: `warcio check`, `warcio
# index`, revisit and concurrent-record links; scripts/warc-check.sh).
WARC_VENV=$(bash scripts/warc-venv.sh)
SIMCRAWL_WARC_CHECK=$(pwd)/scripts/warc-check.sh
export SIMCRAWL_WARC_CHECK
# cdxj-indexer (same venv) is the reference for the crawl's CDXJ indexes
# (crates/crawl/tests/e2e/warc.rs compares them line for line).
SIMCRAWL_CDXJ_INDEXER=$WARC_VENV/bin/cdxj-indexer
export SIMCRAWL_CDXJ_INDEXER
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings
# The library crates' API docs (what embedders read) build without a
# warning: no broken or private intra-doc link.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -p simcrawl-dedup -p simcrawl-clean -p simcrawl-fetch
# The crawl crate enables the dedup crate's optional Redis store, so this
# also runs the store's own tests (tests/redis.rs: processes, failures,
# the cluster) against the servers started above.
# Property tests and fuzz harnesses draw from one fixed seed here, so that a
# run is reproducible and a verdict on a commit does not depend on luck; the
# saved failures (proptest-regressions/) run first either way. Exploring new
# inputs is the job of `bash scripts/fuzz.sh` (random seeds, many cases) or
# of a run with PROPTEST_RNG_SEED set to another number.
export PROPTEST_RNG_SEED=${PROPTEST_RNG_SEED:-20261127}
cargo test --workspace --locked
# The optional sled store of the dedup crate, against the same tests.
cargo test -p simcrawl-dedup --features sled --locked
# The `simcrawl` Python wheel (crates/python) and its Scrapy integration.
# Its front-end test runs the `crawl` binary `cargo test --workspace` has
# just built, instead of building it again with another feature set (48 s).
SIMCRAWL_CRAWL_BIN=${SIMCRAWL_CRAWL_BIN:-$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/debug/crawl}
export SIMCRAWL_CRAWL_BIN
bash scripts/test-python.sh
