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

stop() {
  local dir=${1:?usage: $0 stop DIR}
  if [ -f "$dir/redis.pid" ]; then
    local pid
    pid=$(cat "$dir/redis.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  case "$dir" in
    */simcrawl-redis.*) rm -rf "$dir" ;;
  esac
}

case "${1:-start}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  *)
    echo "usage: $0 start | stop DIR" >&2
    exit 2
    ;;
esac
