#!/usr/bin/env bash
# Crawl and batch throughput by core count (issue 37, target 1): each
# binary's `crawl bench` pinned with taskset to the first 2, 4, 8, 16 cores,
# binaries alternating at each count, with per-thread CPU from /proc (the
# writer thread's share says what more cores can give, by Amdahl); then the
# batch alone at each count.
#
#   bash scripts/scaling.sh target/release/crawl [OTHER_BUILD...]
#
# Environment: CORES (default "2 4 8 16", counts above the machine's are
# skipped), PAGES (crawl pages, 50000), BATCH (batch documents, 50000),
# ROUNDS (1), CONCURRENCY (64, the bench's default), BENCH_ARGS (more
# `crawl bench` arguments for the crawl lines, e.g. "--warc" for an archiving
# crawl, whose writer does more per page). Meant for a machine of 16 or more
# cores; on 2 cores it runs the 2-core line only.
set -euo pipefail
[ $# -ge 1 ] || { sed -n 2,16p "$0"; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
cores_have=$(nproc --all)
pages=${PAGES:-50000}
batch=${BATCH:-50000}
rounds=${ROUNDS:-1}
conc=${CONCURRENCY:-64}
read -r -a extra <<< "${BENCH_ARGS:-}"
for bin in "$@"; do
  [ -x "$bin" ] || { echo "scaling.sh: $bin is not an executable crawl binary" >&2; exit 2; }
done
echo "machine: $(nproc --all) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
for cores in ${CORES:-2 4 8 16}; do
  if [ "$cores" -gt "$cores_have" ]; then
    echo "== $cores cores: skipped (the machine has $cores_have)"
    continue
  fi
  set_=0-$((cores - 1))
  for r in $(seq 1 "$rounds"); do
    for bin in "$@"; do
      echo "== crawl, $cores cores, $bin, round $r"
      THREAD_CPU_TOP=6 taskset -c "$set_" python3 "$here/thread-cpu.py" \
        "$bin" bench --pages "$pages" --batch 0 --index 0 --concurrency "$conc" "${extra[@]}"
    done
  done
  if [ "$batch" -gt 0 ]; then
    for bin in "$@"; do
      echo "== batch, $cores cores, $bin"
      taskset -c "$set_" "$bin" bench --pages 1 --batch "$batch" --index 0 2>/dev/null | grep -E '^batch (docs/s|cpu per doc)'
    done
  fi
done
