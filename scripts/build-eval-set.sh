#!/usr/bin/env bash
# Builds the labelled near-duplicate evaluation set (docs/eval-set.md):
#   scripts/build-eval-set.sh OUTDIR
# writes OUTDIR/docs.jsonl, pairs.jsonl, meta.jsonl and summary.json.
#
# Installs what it needs on a Debian machine: groff and python3-venv with
# apt-get; the documentation packages are fetched with `apt-get download` and
# unpacked into a cache (so the pages are exactly those of the packages,
# whatever else the machine has installed or excluded from /usr/share);
# numpy, scipy and opencc go into a venv.
#
# Environment:
#   EVAL_CACHE     cache of unpacked packages (default ~/.cache/simcrawl-eval)
#   EVAL_VENV      the venv (default ~/.cache/simcrawl-eval-venv)
#   EVAL_SKIP_APT  1: no apt-get update/install (tools already there)
#   EVAL_JOBS      worker processes (default 2)
#   EVAL_SEED      random seed (default 20240601)
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${EVAL_CACHE:-$HOME/.cache/simcrawl-eval}
VENV=${EVAL_VENV:-$HOME/.cache/simcrawl-eval-venv}
PY_REQS="numpy==2.2.6 scipy==1.15.3 opencc==1.3.1"
DOC_PKGS="debian-handbook manpages-zh debian-reference-en debian-reference-zh-cn debian-reference-zh-tw"
export LC_ALL=C.UTF-8 PYTHONHASHSEED=0 DEBIAN_FRONTEND=noninteractive

SUDO=""
if [ "$(id -u)" != 0 ]; then
    SUDO=sudo
fi

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

t_start=$(now)

# ---- Tools -------------------------------------------------------------------
if [ "${EVAL_SKIP_APT:-0}" != 1 ]; then
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends \
        groff-base gzip python3 python3-venv >/dev/null
fi

# ---- Documentation packages, unpacked ----------------------------------------
# python3-doc depends on the default Python's docs, e.g. python3.11-doc.
PYDOC_PKG=$(apt-cache depends python3-doc 2>/dev/null | awk '/Depends: python3\.[0-9]+-doc/ { print $2; exit }')
if [ -z "$PYDOC_PKG" ]; then
    echo "cannot tell which python3.X-doc python3-doc depends on (run apt-get update)" >&2
    exit 1
fi
PKGS="$DOC_PKGS $PYDOC_PKG"
want=""
for p in $PKGS; do
    v=$(apt-cache policy "$p" | awk '/Candidate:/ { print $2 }')
    if [ -z "$v" ] || [ "$v" = "(none)" ]; then
        echo "package $p is not available from apt (run apt-get update)" >&2
        exit 1
    fi
    want="$want$p=$v "
done
ROOT=$CACHE/root
if [ "$(cat "$ROOT/.packages" 2>/dev/null)" != "$want" ]; then
    echo "fetching and unpacking: $want" >&2
    debs=$(mktemp -d)
    # let apt's sandbox user write there (no warning about unsandboxed downloads)
    if [ "$(id -u)" = 0 ] && id _apt >/dev/null 2>&1; then
        chown _apt "$debs"
    fi
    # shellcheck disable=SC2086
    (cd "$debs" && apt-get download -q $PKGS) >/dev/null
    rm -rf "$ROOT"
    mkdir -p "$ROOT"
    for deb in "$debs"/*.deb; do
        dpkg-deb -x "$deb" "$ROOT"
    done
    rm -rf "$debs"
    echo "$want" >"$ROOT/.packages"
fi
PYDOC_DIR=/usr/share/doc/${PYDOC_PKG%-doc}/html   # inside ROOT

versions="{"
for pv in $want; do
    versions="$versions\"${pv%%=*}\": \"${pv#*=}\", "
done
versions="$versions\"groff-base\": \"$(dpkg-query -W -f='${Version}' groff-base 2>/dev/null || echo '?')\"}"

# ---- Python packages -----------------------------------------------------------
PY=/usr/bin/python3
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.simcrawl-reqs" 2>/dev/null)" != "$PY_REQS" ]; then
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    "$PY" -m venv "$VENV"
    # shellcheck disable=SC2086
    "$VENV/bin/pip" install -q --disable-pip-version-check $PY_REQS
    echo "$PY_REQS" >"$VENV/.simcrawl-reqs"
fi
t_installed=$(now)

# ---- Build ---------------------------------------------------------------------
"$VENV/bin/python" "$HERE/eval_set.py" --out "$OUT" --root "$ROOT" --pydoc-dir "$PYDOC_DIR" \
    --versions "$versions" --seed "${EVAL_SEED:-20240601}" --jobs "${EVAL_JOBS:-2}"
t_end=$(now)

install_s=$(secs "$t_start" "$t_installed")
build_s=$(secs "$t_installed" "$t_end")
"$VENV/bin/python" - "$OUT/summary.json" "$install_s" "$build_s" <<'EOF'
import json, sys
path, install_s, build_s = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
with open(path, encoding="utf-8") as f:
    s = json.load(f)
s["timing"]["install"] = install_s
s["timing"]["build"] = build_s
with open(path, "w", encoding="utf-8") as f:
    json.dump(s, f, ensure_ascii=False, indent=2)
    f.write("\n")
EOF
echo "install (apt + packages + venv): ${install_s}s, build: ${build_s}s"
echo "wrote $OUT/docs.jsonl $OUT/pairs.jsonl $OUT/meta.jsonl $OUT/summary.json"
