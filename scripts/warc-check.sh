#!/usr/bin/env bash
# Checks WARC files with the web-archive world's own tool, Python warcio:
# `warcio check` (every record's block and payload digests) and
# `warcio index` (it must list every record, counted independently here),
# then the links between records (scripts/warc_links.py): each revisit
# points at a response of the set with its payload digest, target URI and
# date; each request or metadata record's WARC-Concurrent-To names a record
# of the set.
#
#   bash scripts/warc-check.sh DIR_OR_FILES...
#
# warcio comes from PyPI into a venv under ${CARGO_TARGET_DIR:-target}
# (SIMCRAWL_WARC_VENV overrides it), made on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  echo "usage: $0 DIR_OR_FILES..." >&2
  exit 2
fi
VENV=$(bash scripts/warc-venv.sh)

files=()
for a in "$@"; do
  if [ -d "$a" ]; then
    while IFS= read -r f; do files+=("$f"); done < <(find "$a" -maxdepth 1 -type f \( -name '*.warc.gz' -o -name '*.warc' \) | sort)
  elif [ -f "$a" ]; then
    files+=("$a")
  else
    echo "warc-check: $a: no such file or directory" >&2
    exit 2
  fi
done
if [ ${#files[@]} -eq 0 ]; then
  echo "warc-check: no .warc or .warc.gz file in $*" >&2
  exit 1
fi

for f in "${files[@]}"; do
  if ! out=$("$VENV/bin/warcio" check -v "$f" 2>&1); then
    echo "warc-check: warcio check failed on $f:" >&2
    echo "$out" | grep -v "digest pass" | head -40 >&2
    exit 1
  fi
  if echo "$out" | grep -qi "digest fail\|error"; then
    echo "warc-check: warcio check reports a failure in $f:" >&2
    echo "$out" | grep -i "fail\|error" | head -20 >&2
    exit 1
  fi
  indexed=$("$VENV/bin/warcio" index -f warc-type "$f" | grep -c '"warc-type"' || true)
  counted=$("$VENV/bin/python" scripts/warc_links.py --count "$f")
  if [ "$indexed" != "$counted" ]; then
    echo "warc-check: warcio index lists $indexed records of $f, which holds $counted" >&2
    exit 1
  fi
done
"$VENV/bin/python" scripts/warc_links.py "${files[@]}"
