#!/usr/bin/env bash
# simcrawl.spark against text-dedup's Spark MinHash, side by side: the same
# machine, the same Spark (pyspark 3.5.9, local[2], driver 4 GiB), the same
# data, in one run (docs/BENCHMARKS.md "simcrawl on Spark"). Not part of CI.
#
#   scripts/spark-vs-textdedup.sh [CORPUS.jsonl ...]
#
# Default corpora: the labelled set ($EVAL_SET/docs.jsonl, default
# target/eval-set, built by scripts/test.sh) and a generated one
# (scripts/spark_synth.py $SYNTH, default 100000 documents). Each corpus is
# run REPS times (default 2), the two jobs alternating; every wall time is
# printed, the tables quote medians. Wall time: the whole spark-submit
# (JVM start included) of each job, from its JSON lines or Parquet input to
# its outputs on disk.
#
# text-dedup: version 0.4.0 from PyPI (0.4.1, the newest, no longer has
# the Spark module), its `text_dedup/minhash_spark.py` run by spark-submit
# with its defaults (threshold 0.7, 5-grams of words, 250 permutations, its
# optimal bands) on a Parquet copy of the corpus (`id`, `url`, `title`,
# `text`; --column text --index id). Changes, all printed below:
# - GraphFrames' jar cannot be fetched offline: scripts/textdedup_shim
#   provides `graphframes.GraphFrame.connectedComponents` from
#   simcrawl.spark's own components (both jobs pay the same for that step);
# - its partition counts are for a cluster (8192 shuffle partitions, 100
#   for its RDDs, 4096 for the graph, at least 256 output files): set to 8, as simcrawl.spark
#   sets for local mode; on 2 cores thousands of tiny tasks would only
#   measure Spark's task overhead.
# Its kept set is written as crawl dedup's verdict files
# (scripts/textdedup_verdicts.py) and both are scored by `crawl eval
# --crawled` on the labelled set (unique pages lost, component recall).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TARGET=${CARGO_TARGET_DIR:-target}
mkdir -p "$TARGET"
TARGET=$(cd "$TARGET" && pwd)
VENV=$TARGET/spark-venv
REPS=${REPS:-2}
EVAL_SET=${EVAL_SET:-target/eval-set}
SYNTH=${SYNTH:-100000}
MEM=${DRIVER_MEMORY:-4g}
work=$TARGET/spark-vs-textdedup
mkdir -p "$work"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
if [ -z "${SKIP_BUILD:-}" ]; then
  "$VENV/bin/pip" install -q --disable-pip-version-check "maturin>=1.9,<2" "pyspark==3.5.9" numpy scipy xxhash
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps "text-dedup==0.4.0"
  "$VENV/bin/maturin" build -q --locked --release -m crates/python/Cargo.toml -i "$VENV/bin/python" -o "$TARGET/spark-wheels-rel"
  "$VENV/bin/pip" install -q --force-reinstall --no-deps "$(ls -t "$TARGET"/spark-wheels-rel/simcrawl-*.whl | head -1)"
  cargo build -q --locked --release -p simcrawl --bin crawl
fi
CRAWL=$TARGET/release/crawl
SUBMIT=$VENV/bin/spark-submit
export PYSPARK_PYTHON=$VENV/bin/python PYSPARK_DRIVER_PYTHON=$VENV/bin/python

# text-dedup's script, with the partition counts of local mode.
src=$("$VENV/bin/python" -c 'import importlib.util as u, os; print(os.path.dirname(u.find_spec("text_dedup").origin))')/minhash_spark.py
sed -e 's/"spark.sql.shuffle.partitions", "8192"/"spark.sql.shuffle.partitions", "8"/' \
  -e 's/"spark.default.parallelism", "100"/"spark.default.parallelism", "8"/' \
  -e 's/repartition(4096)/repartition(8)/g' -e 's/max(256, /max(8, /' "$src" >"$work/minhash_spark.py"
echo "text-dedup's minhash_spark.py as run (diff against text-dedup 0.4.0's):"
diff "$src" "$work/minhash_spark.py" || true

corpora=("$@")
if [ ${#corpora[@]} -eq 0 ]; then
  corpora=("$EVAL_SET/docs.jsonl")
  synth=$work/synth-$SYNTH.jsonl
  [ -f "$synth" ] || python3 scripts/spark_synth.py "$SYNTH" "$synth"
  corpora+=("$synth")
fi

for corpus in "${corpora[@]}"; do
  name=$(basename "$(dirname "$corpus")")-$(basename "$corpus" .jsonl)
  pq=$work/$name.parquet
  if [ ! -d "$pq" ]; then
    "$VENV/bin/python" - "$corpus" "$pq" <<'PY'
import sys
from pyspark.sql import SparkSession, functions as F
spark = SparkSession.builder.master("local[2]").getOrCreate()
df = spark.read.schema("url string, title string, text string").json(sys.argv[1]).coalesce(1)
df.withColumn("id", F.monotonically_increasing_id()).write.parquet(sys.argv[2])
PY
  fi
  n=$(wc -l <"$corpus")
  for rep in $(seq "$REPS"); do
    rm -rf "$work/$name-ours" "$work/$name-td" "$work/$name-td-assignment" "$work/ckpt"
    /usr/bin/time -f '%e %M' -o "$work/$name-ours.time" "$SUBMIT" --master 'local[2]' --driver-memory "$MEM" \
      "$("$VENV/bin/python" -m simcrawl.spark --script)" --input "$corpus" --out "$work/$name-ours" --single \
      2>"$work/$name-ours.log"
    (cd "$work" && PYTHONPATH=$ROOT/scripts/textdedup_shim /usr/bin/time -f '%e %M' -o "$work/$name-td.time" \
      "$SUBMIT" --master 'local[2]' --driver-memory "$MEM" "$work/minhash_spark.py" --input "$pq" \
      --output "$work/$name-td" --column text --index id --debug --checkpoint_dir "$work/ckpt" \
      2>"$work/$name-td.log")
    read -r ow _ <"$work/$name-ours.time"
    read -r tw _ <"$work/$name-td.time"
    echo "$name ($n docs) rep $rep: simcrawl.spark ${ow}s ($(python3 -c "print(round($n/$ow))") docs/s), text-dedup ${tw}s ($(python3 -c "print(round($n/$tw))") docs/s)"
  done
  echo "simcrawl.spark: $(grep '^{"documents"' "$work/$name-ours.log")"
  "$VENV/bin/python" scripts/textdedup_verdicts.py "$pq" "$work/$name-td" "$work/$name-td-verdicts" 2>/dev/null
  meta=$(dirname "$corpus")/meta.jsonl
  pairs=$(dirname "$corpus")/pairs.jsonl
  # zh-TW/zh-CN pairs also through tw2sp where the set has them (scripts/tw2sp_labels.py).
  [ -f "$(dirname "$corpus")/pairs_tw2sp.jsonl" ] && pairs=$(dirname "$corpus")/pairs_tw2sp.jsonl
  if [ -f "$meta" ] && [ -f "$pairs" ]; then
    for who in ours td-verdicts; do
      echo "crawl eval --crawled $name-$who:"
      "$CRAWL" eval --crawled "$work/$name-$who" --pages "$meta" --labels "$pairs" 2>&1 | grep -E '^\|' | sed -n '1p;/| all |/p'
    done
  fi
done
