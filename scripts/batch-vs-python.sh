#!/usr/bin/env bash
# Batch dedup against the Python baseline (issue 28, docs/BENCHMARKS.md
# "Batch against Python") and rensa (issue 37): `crawl dedup`,
# scripts/batch_vs_python.py (jieba + simhash from PyPI) and
# scripts/batch_vs_rensa.py (rensa's MinHash LSH from PyPI), in a venv under
# target/, over the same corpus, alternately, ROUNDS times; prints each run
# and the medians (wall clock of the whole process, start-up included), then
# scores `crawl dedup`'s and rensa's verdicts with `crawl eval` when the
# corpus is the labelled set (its pairs.jsonl and meta.jsonl beside it).
#   scripts/batch-vs-python.sh [CORPUS.jsonl] [ROUNDS]
# CORPUS defaults to the labelled set's texts (target/eval-set/docs.jsonl,
# scripts/build-eval-set.sh). CRAWL_BIN names another build of `crawl` to
# run (the profile-guided one, scripts/build-pgo.sh); without it the
# release build is made and run. Not part of CI (a minute or more).
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS=${1:-target/eval-set/docs.jsonl}
ROUNDS=${2:-3}
[ -f "$CORPUS" ] || { echo "$CORPUS: no such corpus (scripts/build-eval-set.sh target/eval-set builds the default)" >&2; exit 2; }
VENV=target/py-baseline-venv
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q jieba==0.42.1 simhash==2.1.2
fi
"$VENV/bin/python" -c 'import rensa' 2>/dev/null || "$VENV/bin/pip" install -q rensa==0.5.0
BIN=${CRAWL_BIN:-target/release/crawl}
[ -n "${CRAWL_BIN:-}" ] || cargo build --release -q -p simcrawl
[ -x "$BIN" ] || { echo "$BIN: not an executable crawl build" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
py=() ; rs=() ; rn=()
for r in $(seq "$ROUNDS"); do
  t0=$(date +%s.%N)
  "$VENV/bin/python" scripts/batch_vs_rensa.py "$CORPUS" "$out/rensa$r" >"$out/rensa$r.json"
  t1=$(date +%s.%N)
  nw=$(python3 -c "print(round($t1 - $t0, 3))")
  echo "round $r: rensa wall_s $nw (process; $(cat "$out/rensa$r.json"))"
  rn+=("$nw")
  p=$("$VENV/bin/python" scripts/batch_vs_python.py "$CORPUS")
  t0=$(date +%s.%N)
  "$BIN" dedup --input "$CORPUS" --out "$out/o$r" 2>"$out/log$r"
  t1=$(date +%s.%N)
  rw=$(python3 -c "print(round($t1 - $t0, 3))")
  echo "round $r: python $p; crawl dedup wall_s $rw ($(tail -1 "$out/log$r"))"
  py+=("$(echo "$p" | python3 -c 'import json,sys; print(json.load(sys.stdin)["wall_s"])')")
  rs+=("$rw")
done
python3 - "${py[*]}" "${rs[*]}" "$(wc -l < "$CORPUS")" "${rn[*]}" <<'PY'
import statistics, sys
py = [float(x) for x in sys.argv[1].split()]
rs = [float(x) for x in sys.argv[2].split()]
n = int(sys.argv[3])
rn = [float(x) for x in sys.argv[4].split()]
p, r, q = statistics.median(py), statistics.median(rs), statistics.median(rn)
print(f"docs {n}: python {n / p:,.0f} docs/s (median wall {p:.2f} s), crawl dedup {n / r:,.0f} docs/s "
      f"(median wall {r:.2f} s): {p / r:.1f}x")
print(f"docs {n}: rensa {n / q:,.0f} docs/s (median wall {q:.2f} s, process): crawl dedup at {q / r:.2f}x rensa's speed")
PY
# Quality of the verdicts compared, when the corpus is the labelled set.
DIR=$(dirname "$CORPUS")
if [ -f "$DIR/pairs.jsonl" ] && [ -f "$DIR/meta.jsonl" ]; then
  # zh-TW/zh-CN pairs also through tw2sp where the set has them (scripts/tw2sp_labels.py).
  LABELS=$DIR/pairs.jsonl
  [ -f "$DIR/pairs_tw2sp.jsonl" ] && LABELS=$DIR/pairs_tw2sp.jsonl
  # Without the second truth, a zh-TW page and its mainland edition that
  # differ by Taiwan vocabulary count as distinct: "unique lost" and false
  # drops that are not (7 and 264 on the labelled set, 2026-12-04).
  [ -f "$DIR/pairs_tw2sp.jsonl" ] || echo "note: no $DIR/pairs_tw2sp.jsonl; scripts/tw2sp_labels.py $DIR writes it (numpy and opencc: the venv scripts/build-html-gate.sh makes)" >&2
  for tool in "crawl dedup:$out/o1" "rensa:$out/rensa1"; do
    echo "$tool" | cut -d: -f1
    "$BIN" eval --crawled "${tool#*:}" --pages "$DIR/meta.jsonl" --labels "$LABELS" \
      | grep -E '^\| (source|all) '
  done
fi
