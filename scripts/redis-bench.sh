#!/usr/bin/env bash
# `crawl bench` in the single-machine redb mode and with 1, 2 and 3 workers
# sharing one Redis, with the tiers in Redis (modes 1 2 3) and replicated in
# the workers (modes r1 r2 r3; docs/BENCHMARKS.md, "Many workers"): each
# setting RUNS times (alternating), then the median pages/s of each.
#
#   bash scripts/redis-bench.sh [PAGES] [RUNS]      # defaults: 5000 pages, 3 runs
#
# Builds the release binary, starts a throwaway Redis server
# (scripts/redis-test-server.sh; stopped on exit), prints every run's
# report and a summary table with the load average at the start and end.
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${1:-5000}
RUNS=${2:-3}
cargo build --release --locked -p simcrawl --bin crawl >&2
BIN=${CARGO_TARGET_DIR:-target}/release/crawl
eval "$(bash scripts/redis-test-server.sh start)"
trap 'bash scripts/redis-test-server.sh stop "$SIMCRAWL_REDIS_DIR"' EXIT
declare -A RATES
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq "$RUNS"); do
  for mode in redb 1 2 3 r1 r2 r3; do
    if [ "$mode" = redb ]; then
      out=$("$BIN" bench --pages "$PAGES" 2>/dev/null)
    elif [ "${mode#r}" != "$mode" ]; then
      out=$("$BIN" bench --pages "$PAGES" --redis "$SIMCRAWL_REDIS_URL" --workers "${mode#r}" --tiers replicated 2>/dev/null)
    else
      out=$("$BIN" bench --pages "$PAGES" --redis "$SIMCRAWL_REDIS_URL" --workers "$mode" 2>/dev/null)
    fi
    echo "== run $run, mode $mode"
    echo "$out"
    rate=$(echo "$out" | awk '/^pages\/s/ {print $2}')
    RATES[$mode]="${RATES[$mode]:-} $rate"
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| mode | pages/s per run | median |"
echo "|---|---|---|"
for mode in redb 1 2 3 r1 r2 r3; do
  median=$(echo "${RATES[$mode]}" | tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  label=$mode
  case $mode in
    redb) ;;
    r*) label="replicated tiers, ${mode#r} worker(s)" ;;
    *) label="tiers in Redis, $mode worker(s)" ;;
  esac
  echo "| $label |${RATES[$mode]} | $median |"
done
