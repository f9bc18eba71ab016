#!/usr/bin/env bash
# simcrawl.spark in Spark local mode over generated corpora of growing size
# (docs/SPARK.md "Scaling"): time, peak memory, and the verdict counts of
# `crawl dedup` over the same file. Not part of CI (minutes to an hour).
#
#   scripts/spark-scale.sh [SIZES...]        # default: 100000 300000 1000000
#
# Needs Java 17 and a release build: it makes target/spark-venv (pyspark,
# the release wheel) and target/release/crawl. MASTER (default local[2]) and
# DRIVER_MEMORY (default 4g: the JVM of local mode) can be set.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-target}
mkdir -p "$TARGET"
TARGET=$(cd "$TARGET" && pwd)
VENV=$TARGET/spark-venv
MASTER=${MASTER:-local[2]}
SIZES=${*:-100000 300000 1000000}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check "maturin>=1.9,<2" "pyspark==3.5.9"
"$VENV/bin/maturin" build -q --locked --release -m crates/python/Cargo.toml -i "$VENV/bin/python" -o "$TARGET/spark-wheels-rel"
"$VENV/bin/pip" install -q --force-reinstall --no-deps "$(ls -t "$TARGET"/spark-wheels-rel/simcrawl-*.whl | head -1)"
cargo build -q --locked --release -p simcrawl --bin crawl
work=$TARGET/spark-scale
mkdir -p "$work"
for n in $SIZES; do
  corpus=$work/synth-$n.jsonl
  [ -f "$corpus" ] || python3 scripts/spark_synth.py "$n" "$corpus"
  rm -rf "$work/out-$n" "$work/crawl-$n"
  /usr/bin/time -f '%e %M' -o "$work/time-$n" \
    env PYSPARK_SUBMIT_ARGS="--driver-memory ${DRIVER_MEMORY:-4g} pyspark-shell" \
    "$VENV/bin/python" -m simcrawl.spark --input "$corpus" --out "$work/out-$n" --master "$MASTER" 2>"$work/log-$n"
  /usr/bin/time -f '%e %M' -o "$work/ctime-$n" "$TARGET/release/crawl" dedup --input "$corpus" --out "$work/crawl-$n" 2>"$work/clog-$n"
  read -r wall rss <"$work/time-$n"
  read -r cwall crss <"$work/ctime-$n"
  echo "docs $n: spark $MASTER wall ${wall}s peak RSS $((rss / 1024)) MiB (largest process); $(tail -1 "$work/log-$n")"
  echo "docs $n: crawl dedup wall ${cwall}s peak RSS $((crss / 1024)) MiB; $(tail -1 "$work/clog-$n")"
done
