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
DOC_PKGS="debian-handbook manpages-zh debian-reference-en debian-reference-zh-cn debian-reference-zh-tw"
export LC_ALL=C.UTF-8 PYTHONHASHSEED=0 DEBIAN_FRONTEND=noninteractive


now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

t_start=$(now)

# ---- Tools -------------------------------------------------------------------
# shellcheck source=scripts/lib/debian-docs.sh
. "$HERE/lib/debian-docs.sh"
install_tools groff-base gzip python3 python3-venv

# ---- Documentation packages, unpacked; the venv ------------------------------
# python3-doc depends on the default Python's docs, e.g. python3.11-doc.
PYDOC_PKG=$(pydoc_package)
ROOT=$CACHE/root
# shellcheck disable=SC2086
unpack_packages "$ROOT" $DOC_PKGS "$PYDOC_PKG"
PYDOC_DIR=/usr/share/doc/${PYDOC_PKG%-doc}/html   # inside ROOT
versions=$(versions_json)
versions="${versions%\}}, \"groff-base\": \"$(dpkg-query -W -f='${Version}' groff-base 2>/dev/null || echo '?')\"}"
python_venv "$VENV"
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
# The second truth for the zh-TW texts (scripts/tw2sp_labels.py says why):
# scripts/batch-vs-python.sh scores with it where it exists.
"$VENV/bin/python" "$HERE/tw2sp_labels.py" "$OUT"
echo "wrote $OUT/docs.jsonl $OUT/pairs.jsonl $OUT/pairs_tw2sp.jsonl $OUT/meta.jsonl $OUT/summary.json"
