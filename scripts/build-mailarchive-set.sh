#!/usr/bin/env bash
# Builds the mailing-list archive set of the multi-genre gate (issue 35, "a
# gate per genre": forums, Q&A or mailing-list archives, where messages
# quote each other; docs/eval-mailarchive.md): real mail (the test corpora
# of notmuch's Debian source package: threads of the Linux kernel's lists
# and of the notmuch list) rendered by MHonArc into one archive per list and
# a mirror of all of them, labelled with the exact resemblance of every pair.
#   scripts/build-mailarchive-set.sh [OUTDIR]   (default target/mailarchive-set)
# writes OUTDIR/site/HOST/..., seeds.txt, pages.jsonl, pairs.jsonl,
# message_pairs.jsonl, combined_pairs.jsonl, docs.jsonl and summary.json, so
# that scripts/genre-gate.sh OUTDIR RUN_DIR scores a build on it (by
# combined_pairs.jsonl).
#
# Needs a Debian machine with apt (root or sudo): mhonarc is installed; the
# notmuch source tarball is fetched from the Debian archive's pool (the
# version of the machine's suite, checked against its .dsc) into
# $EVAL_CACHE; numpy, scipy and opencc go into the venv $EVAL_VENV.
# Environment: EVAL_CACHE, EVAL_VENV, EVAL_SKIP_APT=1, EVAL_JOBS.
set -euo pipefail

if [ $# -gt 1 ]; then
    echo "usage: $0 [OUTDIR]" >&2
    exit 2
fi
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "${1:-$HERE/../target/mailarchive-set}"
OUT=$(cd "${1:-$HERE/../target/mailarchive-set}" && pwd)
CACHE=${EVAL_CACHE:-$HOME/.cache/simcrawl-eval}
VENV=${EVAL_VENV:-$HOME/.cache/simcrawl-eval-venv}
export LC_ALL=C.UTF-8 PYTHONHASHSEED=0 DEBIAN_FRONTEND=noninteractive

# shellcheck source=scripts/lib/debian-docs.sh
. "$HERE/lib/debian-docs.sh"
install_tools python3 python3-venv mhonarc public-inbox libplack-perl git curl xz-utils
python_venv "$VENV"

# notmuch 0.37 is bookworm's; its test corpora have not changed in years.
NOTMUCH=notmuch_0.37
SUM=5192017ca026fd7e5e431acf3c328dbc
POOL=${DEBIAN_POOL:-http://deb.debian.org/debian/pool/main/n/notmuch}
mkdir -p "$CACHE"
TARBALL=$CACHE/$NOTMUCH.orig.tar.xz
if [ ! -f "$TARBALL" ] || [ "$(md5sum < "$TARBALL" | cut -d' ' -f1)" != "$SUM" ]; then
    curl -fsS -o "$TARBALL.part" "$POOL/$NOTMUCH.orig.tar.xz"
    got=$(md5sum < "$TARBALL.part" | cut -d' ' -f1)
    [ "$got" = "$SUM" ] || { echo "$TARBALL: md5 $got, want $SUM (notmuch_0.37-1.dsc)" >&2; exit 1; }
    mv "$TARBALL.part" "$TARBALL"
fi
SRC=$CACHE/notmuch-0.37
[ -d "$SRC/test/corpora" ] || tar -xJf "$TARBALL" -C "$CACHE"

VERSIONS="{\"notmuch\": \"0.37\", \"mhonarc\": \"$(dpkg-query -W -f '${Version}' mhonarc)\", \"public-inbox\": \"$(dpkg-query -W -f '${Version}' public-inbox)\"}"
PYTHONPATH=$HERE "$VENV/bin/python" "$HERE/mailarchive_set.py" --out "$OUT" \
    --corpora "$SRC/test/corpora" --versions "$VERSIONS" --jobs "${EVAL_JOBS:-2}"
echo "wrote $OUT/site, seeds.txt, pages.jsonl, pairs.jsonl, message_pairs.jsonl, combined_pairs.jsonl, docs.jsonl, summary.json" >&2
