#!/usr/bin/env bash
# A throwaway Redis server for the tests of the dedup crate's Redis store.
#
#   eval "$(bash scripts/redis-test-server.sh start)"   # exports SIMCRAWL_REDIS_URL ...
#   bash scripts/redis-test-server.sh stop "$SIMCRAWL_REDIS_DIR"
#
# `start` installs Debian's redis-server when it is missing (apt-get), then
# starts it daemonized on a free 127.0.0.1 port, in a new temporary
# directory, without persistence (no RDB snapshots, no AOF), and prints
# the shell lines that export:
#   SIMCRAWL_REDIS_URL     redis://127.0.0.1:PORT/0, what the tests connect to
#   SIMCRAWL_REDIS_DIR     its directory (pid file, log), what `stop` takes
#   SIMCRAWL_REDIS_SERVER  the redis-server binary, for tests that start
#                          servers of their own (stopping one mid-run)
# `stop DIR` shuts that server down and removes DIR.
#
#   eval "$(bash scripts/redis-test-server.sh start-cluster)"  # exports SIMCRAWL_REDIS_CLUSTER_URLS ...
#   bash scripts/redis-test-server.sh stop "$SIMCRAWL_REDIS_CLUSTER_DIR"
#
# `start-cluster` starts a 3-master Redis Cluster (no replicas) on free
# 127.0.0.1 ports, each node in a subdirectory of one new temporary
# directory, waits until every node reports cluster_state:ok, and prints
# the lines that export:
#   SIMCRAWL_REDIS_CLUSTER_URLS  the nodes' URLs, comma separated
#   SIMCRAWL_REDIS_CLUSTER_DIR   the directory, what `stop` takes
# `stop DIR` stops every node under DIR too.
set -euo pipefail

install_if_missing() {
  if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    echo "redis-test-server: installing redis-server (apt-get)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq redis-server >&2
  fi
}

port_is_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

start() {
  install_if_missing
  local dir port tries=0
  dir=$(mktemp -d "${TMPDIR:-/tmp}/simcrawl-redis.XXXXXX")
  while :; do
    tries=$((tries + 1))
    port=$((20000 + RANDOM % 40000))
    if port_is_free "$port" &&
      redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
        --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >&2; then
      for _ in $(seq 50); do
        if redis-cli -p "$port" ping >/dev/null 2>&1; then
          echo "export SIMCRAWL_REDIS_URL=redis://127.0.0.1:$port/0"
          echo "export SIMCRAWL_REDIS_DIR=$dir"
          echo "export SIMCRAWL_REDIS_SERVER=$(command -v redis-server)"
          return 0
        fi
        sleep 0.1
      done
    fi
    if [ "$tries" -ge 20 ]; then
      echo "redis-test-server: could not start redis-server (log: $dir/redis.log)" >&2
      exit 1
    fi
  done
}

# Starts one cluster node on a free port in directory $1; prints the port.
start_node() {
  local dir=$1 port tries=0
  mkdir -p "$dir"
  while :; do
    tries=$((tries + 1))
    port=$((20000 + RANDOM % 40000))
    if port_is_free "$port" &&
      redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
        --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
        --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >&2; then
      for _ in $(seq 50); do
        if redis-cli -p "$port" ping >/dev/null 2>&1; then
          echo "$port"
          return 0
        fi
        sleep 0.1
      done
    fi
    if [ "$tries" -ge 20 ]; then
      echo "redis-test-server: could not start a cluster node (log: $dir/redis.log)" >&2
      exit 1
    fi
  done
}

start_cluster() {
  install_if_missing
  local dir ports=() urls=() n
  dir=$(mktemp -d "${TMPDIR:-/tmp}/simcrawl-redis-cluster.XXXXXX")
  for n in 1 2 3; do
    ports+=("$(start_node "$dir/node$n")")
  done
  local nodes=()
  for p in "${ports[@]}"; do
    nodes+=("127.0.0.1:$p")
    urls+=("redis://127.0.0.1:$p/0")
  done
  if ! redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1; then
    echo "redis-test-server: redis-cli --cluster create failed (log: $dir/create.log)" >&2
    stop "$dir"
    exit 1
  fi
  for p in "${ports[@]}"; do
    for _ in $(seq 300); do
      if redis-cli -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; then
        break
      fi
      sleep 0.1
    done
    if ! redis-cli -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; then
      echo "redis-test-server: the cluster did not come up (node 127.0.0.1:$p)" >&2
      stop "$dir"
      exit 1
    fi
  done
  local joined
  joined=$(IFS=,; echo "${urls[*]}")
  echo "export SIMCRAWL_REDIS_CLUSTER_URLS=$joined"
  echo "export SIMCRAWL_REDIS_CLUSTER_DIR=$dir"
}

# Stops the server whose pid file is $1 and waits for it to exit.
stop_pid() {
  local pid
  pid=$(cat "$1")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
}

stop() {
  local dir=${1:?usage: $0 stop DIR}
  local f
  for f in "$dir/redis.pid" "$dir"/node*/redis.pid; do
    if [ -f "$f" ]; then
      stop_pid "$f"
    fi
  done
  case "$dir" in
    */simcrawl-redis.* | */simcrawl-redis-cluster.*) rm -rf "$dir" ;;
  esac
}

case "${1:-start}" in
  start) start ;;
  start-cluster) start_cluster ;;
  stop) stop "${2:-}" ;;
  *)
    echo "usage: $0 start | start-cluster | stop DIR" >&2
    exit 2
    ;;
esac
