#!/usr/bin/env bash
# simcrawl.spark in Spark local mode over generated corpora of growing size
# (docs/SPARK.md "Scaling"): time, peak memory, and the verdict counts of
# `crawl dedup` over the same file, and the two compared row by row
# (scripts/spark_compare.py). Not part of CI (minutes to an hour).
#
#   scripts/spark-scale.sh [SIZES...]        # default: 100000 300000 1000000
#
# Needs Java 17 and a release build: it makes target/spark-venv (pyspark,
# the release wheel) and target/release/crawl. MASTER (default local[2]) and
# DRIVER_MEMORY (default 4g: the JVM of local mode) can be set. Peak memory:
# /usr/bin/time's maximum RSS is the Python driver's alone, so the JVM's
# peak (VmHWM of the java process) and the peak sum of RSS over the whole
# process tree (driver, JVM, Python workers) are sampled every second.
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
# Prints "JVM_PEAK_KB TREE_PEAK_KB" of the tree under PID until it exits.
sample() {
  local root=$1 jvm=0 tree=0
  while kill -0 "$root" 2>/dev/null; do
    local pids=$root frontier=$root sum=0 p kids
    while [ -n "$frontier" ]; do
      kids=$(for p in $frontier; do pgrep -P "$p" || true; done | tr '\n' ' ')
      pids="$pids $kids"
      frontier=$kids
    done
    for p in $pids; do
      local rss hwm comm
      rss=$(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || true)
      sum=$((sum + ${rss:-0}))
      comm=$(cat "/proc/$p/comm" 2>/dev/null || true)
      if [ "$comm" = java ]; then
        hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$p/status" 2>/dev/null || true)
        [ "${hwm:-0}" -gt "$jvm" ] && jvm=$hwm
      fi
    done
    [ "$sum" -gt "$tree" ] && tree=$sum
    sleep 1
  done
  echo "$jvm $tree"
}
work=$TARGET/spark-scale
mkdir -p "$work"
for n in $SIZES; do
  corpus=$work/synth-$n.jsonl
  [ -f "$corpus" ] || python3 scripts/spark_synth.py "$n" "$corpus"
  rm -rf "$work/out-$n" "$work/crawl-$n"
  /usr/bin/time -f '%e %M' -o "$work/time-$n" \
    env PYSPARK_SUBMIT_ARGS="--driver-memory ${DRIVER_MEMORY:-4g} pyspark-shell" \
    "$VENV/bin/python" -m simcrawl.spark --input "$corpus" --out "$work/out-$n" --master "$MASTER" 2>"$work/log-$n" &
  job=$!
  sample "$job" >"$work/mem-$n" &
  sampler=$!
  wait "$job"
  wait "$sampler"
  read -r jvm tree <"$work/mem-$n"
  /usr/bin/time -f '%e %M' -o "$work/ctime-$n" "$TARGET/release/crawl" dedup --input "$corpus" --out "$work/crawl-$n" 2>"$work/clog-$n"
  read -r wall rss <"$work/time-$n"
  read -r cwall crss <"$work/ctime-$n"
  echo "docs $n: spark $MASTER wall ${wall}s JVM peak RSS $((jvm / 1024)) MiB, all processes $((tree / 1024)) MiB at most; $(tail -1 "$work/log-$n")"
  echo "docs $n: crawl dedup wall ${cwall}s peak RSS $((crss / 1024)) MiB; $(tail -1 "$work/clog-$n")"
  echo "docs $n: verdicts: $(python3 scripts/spark_compare.py "$work/out-$n" "$work/crawl-$n" || true)"
done
