#!/usr/bin/env bash
# Installs what a fresh Debian machine of this project's kind lacks for the
# demo and the tests: a C compiler and make (C parts of aws-lc-sys and
# zstd), python3 with venv, pip and libpython (demo site server,
# labelled-set builder, the Python package's tests), chromium and a CJK
# font (the report's browser test and screenshots), redis-server (the Redis
# store's tests), nginx (the revisit tests), a Java runtime (Spark local
# mode for simcrawl.spark's tests). Without root or apt-get
# it only says what is missing; the tests that need a missing tool then say
# they skip.
set -euo pipefail

need=()
command -v python3 >/dev/null || need+=(python3)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
# crates/python (scripts/test-python.sh): pip for the venv's maturin, Scrapy
# and pytest; libpython for `cargo test --workspace`, which links the
# bindings' unit tests against it. The machine's own CPython has both;
# Debian's python3 splits them into python3-pip and python3-dev.
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
python3 -c 'import os, sysconfig as s; v = s.get_config_var; assert os.path.exists(os.path.join(v("LIBDIR") or "", v("LDLIBRARY") or ""))' \
  2>/dev/null || need+=(python3-dev)
command -v cc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
command -v chromium >/dev/null || need+=(chromium)
command -v redis-server >/dev/null || need+=(redis-server)   # the Redis store's tests
# A real web server (ETag, Last-Modified, 304s) for the revisit tests
# (crates/crawl/tests/e2e/revisit.rs).
# Also the sitemap and feed tests (crates/crawl/tests/e2e/listing.rs).
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null || need+=(nginx-light)
# The shared-mode sitemap test reads the hints it left in Redis.
command -v redis-cli >/dev/null || need+=(redis-tools)
# Another tool's WARC files for `crawl dedup --input` (crates/crawl/tests/e2e/warc.rs).
command -v wget >/dev/null || need+=(wget)
# Java for Spark local mode (simcrawl.spark's tests, scripts/test-python.sh).
command -v java >/dev/null || need+=(openjdk-17-jre-headless)
fc-list 2>/dev/null | grep -i 'wqy\|noto.*cjk' >/dev/null || need+=(fonts-wqy-zenhei)
# The 32-bit check of the dedup crate (scripts/feature-check.sh): zstd's C
# part built with -m32 needs the 32-bit C headers.
[ -e /usr/include/x86_64-linux-gnu/gnu/stubs-32.h ] || [ -e /usr/include/gnu/stubs-32.h ] ||
  need+=(gcc-multilib)
# And the Rust standard library for that target (rustup, when it is there).
if command -v rustup >/dev/null && ! rustup target list --installed 2>/dev/null | grep -qx i686-unknown-linux-gnu; then
  rustup target add i686-unknown-linux-gnu >&2 ||
    echo "install-deps: could not add the i686-unknown-linux-gnu target; the 32-bit check will be skipped" >&2
fi

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "install-deps: missing ${need[*]} (run as root on Debian to install them)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing ${need[*]}" >&2
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
