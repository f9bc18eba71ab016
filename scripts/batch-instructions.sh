#!/usr/bin/env bash
# Instructions and simulated cache misses of `crawl dedup` over a sample of
# a corpus, for one or more binaries (issue 37, docs/BENCHMARKS.md
# "Instructions, not seconds"). Counts from valgrind's cachegrind are the
# same run after run, so a change of 2-3% shows, where wall and CPU times on
# a shared 2-core machine move by 10% between two runs of one binary.
#   scripts/batch-instructions.sh BIN [BIN...]
# Environment: CORPUS (default target/eval-set/docs.jsonl), EVERY (default
# 9: every 9th line, 300 of the labelled set's 2,692), and ANNOTATE=1 to
# print each binary's 25 costliest functions too. One rayon thread, so
# that no instruction is a thread spinning for work; LL is set to the 512
# KB of one core's L2, so "L2 misses" are reads that leave the core.
# cost ~ Ir + 10 x D1 misses + 40 x L2 misses, a rough cycle estimate.
# Needs valgrind (apt-get install valgrind). Not part of CI.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BIN [BIN...]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind not found (apt-get install valgrind)" >&2; exit 2; }
CORPUS=${CORPUS:-target/eval-set/docs.jsonl}
EVERY=${EVERY:-9}
[ -f "$CORPUS" ] || { echo "$CORPUS: no such corpus (scripts/build-eval-set.sh target/eval-set builds the default)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
awk -v n="$EVERY" 'NR % n == 1' "$CORPUS" > "$work/sample.jsonl"
echo "sample: $(wc -l < "$work/sample.jsonl") lines of $CORPUS (every $EVERY)"
k=0
for bin in "$@"; do
  k=$((k + 1))
  RAYON_NUM_THREADS=1 valgrind --tool=cachegrind --cache-sim=yes --LL=524288,8,64 \
    --cachegrind-out-file="$work/cg$k.out" "$bin" dedup --input "$work/sample.jsonl" \
    --out "$work/out$k" >"$work/log$k" 2>&1 || { cat "$work/log$k" >&2; exit 1; }
  python3 - "$bin" "$work/log$k" <<'PY'
import re, sys
t = open(sys.argv[2]).read()
g = lambda k: int(re.search(k + r":\s+([\d,]+)", t).group(1).replace(",", ""))
ir, d1, ll = g(r"I\s+refs"), g("D1  misses"), g("LL misses")
print(f"{sys.argv[1]}: Ir {ir / 1e6:.1f}M  D1 misses {d1 / 1e6:.2f}M  L2 misses {ll / 1e6:.3f}M  "
      f"cost ~ {(ir + 10 * d1 + 40 * ll) / 1e6:.0f}M")
PY
  if [ "${ANNOTATE:-0}" = 1 ]; then
    cg_annotate "$work/cg$k.out" 2>/dev/null | awk '/file:function/{f=1; next} f && NF' | head -26 \
      | awk '{print "    " $1, $NF}' || true
  fi
  if [ "$k" -gt 1 ]; then
    for f in kept duplicates; do
      cmp -s "$work/out1/$f.jsonl" "$work/out$k/$f.jsonl" || echo "    $f.jsonl differs from $1's"
    done
  fi
done
