#!/usr/bin/env bash
# Builds `crawl` with profile-guided optimization (PGO): an instrumented
# build is run on a training workload, and the release build is compiled
# again with the branch and call counts it recorded (issue 37,
# docs/BENCHMARKS.md "Profile-guided build"). Outputs are the same as the
# plain release build's, byte for byte; only the code layout, inlining and
# branch order change.
#   scripts/build-pgo.sh [SET_DIR...]
# Writes target/pgo/release/crawl (target/release is left alone).
#
# The training workload, all on this machine:
# 1. `crawl bench --quick --warc`: a generated site crawled over loopback
#    (fetch, clean, sign, the writer, the redb store, WARC), then batch
#    deduplication and the index on generated documents;
# 2. for each SET_DIR (a set made by scripts/build-{news,apiref,
#    mailarchive,multilang,html-gate}-set.sh: site/, seeds.txt, docs.jsonl),
#    its site crawled over loopback (scripts/html-gate.sh) and its
#    docs.jsonl deduplicated with `crawl dedup`: real pages in many
#    languages and templates. Without arguments, target/news, target/apiref,
#    target/mail and target/multilang, those that exist.
# The labelled set of docs/EVAL.md (target/eval-set) and the mixed zh/en
# documentation site (target/mixed-docs), which issue 37's targets 2 and 3
# are measured on, are never trained on.
#
# Needs llvm-profdata of LLVM 19 or later (the raw profile format of
# rustc's LLVM): rustup's llvm-tools when installed, else the newest
# /usr/bin/llvm-profdata-NN; on Debian, `apt-get install llvm-19` is run
# when none is found. Takes two release builds (some 8 minutes on 2
# cores) and about 3 minutes of training. Not part of CI.
#
# Environment: PGO_DIR (profiles, default target/pgo-data; the merged one
# is named by its digest, crawl-MD5.profdata); PGO_TRAIN, a
# command run last in the training with CRAWL_BIN set to the instrumented
# binary, for paths the workload above never takes (a Redis deployment:
# PGO_TRAIN='"$CRAWL_BIN" --seeds seeds.txt --config redis.toml'), which are
# otherwise compiled as cold. CARGO_TARGET_DIR is not read (the two builds
# use target/pgo-gen and target/pgo).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
cd "$ROOT"
DATA=${PGO_DIR:-$ROOT/target/pgo-data}
# Absolute: the instrumented runs write their profiles there from other
# working directories.
mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)

sets=("$@")
if [ ${#sets[@]} -eq 0 ]; then
    for s in news apiref mail multilang; do
        [ -d "target/$s" ] && sets+=("target/$s")
    done
fi
for s in ${sets[@]+"${sets[@]}"}; do
    [ -f "$s/docs.jsonl" ] || { echo "$s: not a set (no docs.jsonl; see scripts/build-news-set.sh)" >&2; exit 2; }
done
if [ ${#sets[@]} -eq 0 ]; then
    echo "note: no set to train on (scripts/build-news-set.sh target/news makes one);" \
        "training on crawl bench's generated pages only" >&2
fi

# llvm-profdata: rustup's own, else Debian's newest of LLVM 19 or later.
llvm_major=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
profdata=""
sysroot_tool=$(ls "$(rustc --print sysroot)"/lib/rustlib/*/bin/llvm-profdata 2>/dev/null | head -1 || true)
if [ -n "$sysroot_tool" ]; then
    profdata=$sysroot_tool
else
    for v in $(seq "${llvm_major:-19}" -1 19); do
        if command -v "llvm-profdata-$v" >/dev/null; then
            profdata=$(command -v "llvm-profdata-$v")
            break
        fi
    done
fi
if [ -z "$profdata" ] && command -v apt-get >/dev/null; then
    echo "== installing llvm-19 (llvm-profdata) with apt-get" >&2
    # shellcheck source=scripts/lib/debian-docs.sh
    . "$HERE/lib/debian-docs.sh"
    DEBIAN_FRONTEND=noninteractive install_tools llvm-19
    profdata=$(command -v llvm-profdata-19 || true)
fi
if [ -z "$profdata" ]; then
    echo "no llvm-profdata of LLVM 19 or later found (rustc uses LLVM $llvm_major):" \
        "rustup component add llvm-tools, or install llvm-19" >&2
    exit 1
fi

flags=${RUSTFLAGS:-}
rm -rf "$DATA/raw"
mkdir -p "$DATA/raw"
echo "== 1/4 instrumented build (target/pgo-gen)" >&2
CARGO_TARGET_DIR=target/pgo-gen RUSTFLAGS="$flags -Cprofile-generate=$DATA/raw" \
    cargo build --release -p simcrawl
gen=target/pgo-gen/release/crawl

echo "== 2/4 training" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$gen" bench --quick --warc --dir "$work/bench" >/dev/null 2>"$work/bench.log" ||
    { cat "$work/bench.log" >&2; exit 1; }
i=0
for s in ${sets[@]+"${sets[@]}"}; do
    i=$((i + 1))
    echo "   $s" >&2
    "$gen" dedup --input "$s/docs.jsonl" --out "$work/batch-$i" >/dev/null 2>"$work/batch-$i.log" ||
        { cat "$work/batch-$i.log" >&2; exit 1; }
    if [ -d "$s/site" ] && [ -f "$s/seeds.txt" ] && [ -f "$s/pages.jsonl" ]; then
        bash "$HERE/html-gate.sh" "$s" "$work/crawl-$i" "$gen" >/dev/null 2>&1 ||
            { echo "the crawl of $s failed (scripts/html-gate.sh)" >&2; exit 1; }
    fi
done

if [ -n "${PGO_TRAIN:-}" ]; then
    echo "   PGO_TRAIN: $PGO_TRAIN" >&2
    CRAWL_BIN=$ROOT/$gen bash -c "$PGO_TRAIN" || { echo "PGO_TRAIN failed" >&2; exit 1; }
fi

echo "== 3/4 merging the profile ($profdata)" >&2
"$profdata" merge -o "$DATA/crawl.profdata" "$DATA/raw" || {
    echo "$profdata could not read the raw profile of rustc's LLVM $llvm_major" >&2
    exit 1
}

# Named by its digest: cargo rebuilds what RUSTFLAGS name, not what a
# file they name holds, so a new profile under the old name would leave
# every crate but the changed ones built with the old one.
digest=$(md5sum "$DATA/crawl.profdata" | cut -c1-12)
profile=$DATA/crawl-$digest.profdata
find "$DATA" -maxdepth 1 -name 'crawl-*.profdata' ! -name "crawl-$digest.profdata" -delete
mv "$DATA/crawl.profdata" "$profile"

echo "== 4/4 optimized build (target/pgo)" >&2
CARGO_TARGET_DIR=target/pgo RUSTFLAGS="$flags -Cprofile-use=$profile" \
    cargo build --release -p simcrawl
echo "built target/pgo/release/crawl (profile: $profile)" >&2
