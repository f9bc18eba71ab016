#!/usr/bin/env bash
# Issue 37's measurements that a 2-core machine can make, one after another
# in one session, so that the summary of docs/BENCHMARKS.md can quote
# numbers taken together (the machine's speed moves more from day to day
# than most changes do):
#   1. target 1, its 2-core part: `crawl bench` (20,000 pages) with the
#      writer thread's CPU and share of wall, with and without `--warc`,
#      alternating, ROUNDS times (scripts/thread-cpu.py);
#   2. target 2: CPU per site page against spider-rs on the zh/en
#      documentation mix (scripts/build-mixed-docs-site.sh), alternating,
#      ROUNDS rounds (scripts/spider_compare.py);
#   3. target 3 and the Python row: `crawl dedup` against rensa and Python
#      simhash + jieba on the labelled texts, alternating, ROUNDS rounds
#      (scripts/batch-vs-python.sh, which scores the verdicts too).
# Target 1 itself (16 cores) is scripts/scaling.sh on a 16-core machine;
# target 4's figures (Redis bytes per document, the 10M-page crawl's RSS)
# take their own long runs (docs/BENCHMARKS.md gives the commands).
#
#   bash scripts/issue37-targets.sh [ROUNDS] [OLD_BIN]   (default 5 rounds; about 15 minutes)
#
# With OLD_BIN (an earlier build of `crawl`, copied out of target/), each
# measurement alternates it with this build, so one run gives a change's
# before and after: `crawl bench` without `--warc`, spider-rs's rounds,
# and the batch rounds with rensa (scripts/batch_alternate.py; the
# verdicts are then not scored nor Python run).
#
# CRAWL_BIN names the build measured as "this build" (the profile-guided
# one: CRAWL_BIN=target/pgo/release/crawl after scripts/build-pgo.sh);
# without it the release build is made and measured.
#
# Needs the release build, target/eval-set (scripts/build-eval-set.sh) and
# spider's build (scripts/spider-compare.sh builds it once); builds the
# mixed site if it is missing. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
OLD=${2:-}
BIN=${CRAWL_BIN:-target/release/crawl}
[ -z "$OLD" ] || [ -x "$OLD" ] || { echo "$OLD: not an executable crawl build" >&2; exit 2; }
SPIDER=target/spider-compare/release/spider-compare
[ -f target/eval-set/docs.jsonl ] || { echo "target/eval-set/docs.jsonl: missing (bash scripts/build-eval-set.sh target/eval-set)" >&2; exit 2; }
if [ ! -x "$SPIDER" ]; then
  CARGO_TARGET_DIR=target/spider-compare cargo build --release -q \
    --manifest-path bench/spider-compare/Cargo.toml
fi
[ -d target/mixed-docs ] || bash scripts/build-mixed-docs-site.sh target/mixed-docs
[ -n "${CRAWL_BIN:-}" ] || cargo build --release -q -p simcrawl
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ), $(git rev-parse --short HEAD)"
echo
echo "## 1. crawl bench on $(nproc) cores: pages/s, CPU per page, writer thread"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for r in $(seq "$ROUNDS"); do
  for warc in "" "--warc"; do
    rm -rf "$work/bench"
    line=$(python3 scripts/thread-cpu.py "$BIN" bench --pages 20000 --batch 0 --index 0 --dir "$work/bench" $warc 2>&1 |
      grep -E '^(pages/s|cpu per page)|crawl-writer' | tr -s ' ' | tr '\n' ' ')
    echo "round $r ${warc:-(no WARC)}: $line"
  done
  if [ -n "$OLD" ]; then
    rm -rf "$work/bench"
    line=$(python3 scripts/thread-cpu.py "$OLD" bench --pages 20000 --batch 0 --index 0 --dir "$work/bench" 2>&1 |
      grep -E '^(pages/s|cpu per page)|crawl-writer' | tr -s ' ' | tr '\n' ' ')
    echo "round $r OLD (no WARC): $line"
  fi
done
echo
echo "## 2. CPU per site page against spider-rs, zh/en documentation mix"
old_crawl=()
[ -z "$OLD" ] || old_crawl=(--crawl "old=$OLD")
python3 scripts/spider_compare.py --crawl "crawl=$BIN" "${old_crawl[@]}" --spider "spider=$SPIDER" \
  --site target/mixed-docs --rounds "$ROUNDS" | grep -v '^{'
echo
if [ -n "$OLD" ]; then
  echo "## 3. batch: crawl dedup (this build, OLD) against rensa (labelled texts)"
  [ -x target/py-baseline-venv/bin/python ] || python3 -m venv target/py-baseline-venv
  target/py-baseline-venv/bin/python -c 'import rensa' 2>/dev/null ||
    target/py-baseline-venv/bin/pip install -q rensa==0.5.0
  python3 scripts/batch_alternate.py "$ROUNDS" target/eval-set/docs.jsonl "$BIN" "$OLD"
else
  echo "## 3. batch: crawl dedup, rensa, Python (labelled texts)"
  CRAWL_BIN=$BIN bash scripts/batch-vs-python.sh target/eval-set/docs.jsonl "$ROUNDS"
fi
