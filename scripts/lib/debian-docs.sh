# Shared by scripts/build-eval-set.sh and scripts/build-html-gate.sh (sourced,
# not run): Debian documentation packages unpacked into a cache, and the
# venv with numpy, scipy and opencc that computes the truth.

PY_REQS="numpy==2.2.6 scipy==1.15.3 opencc==1.3.1"

# install_tools PKG...: the tools a builder runs, from apt (as root, or
# through sudo), unless EVAL_SKIP_APT=1 says they are already there.
install_tools() {
    if [ "${EVAL_SKIP_APT:-0}" = 1 ]; then
        return 0
    fi
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
        sudo=sudo
    fi
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# The python3.X-doc package python3-doc depends on (e.g. python3.11-doc).
pydoc_package() {
    local p
    p=$(apt-cache depends python3-doc 2>/dev/null | awk '/Depends: python3\.[0-9]+-doc/ { print $2; exit }')
    if [ -z "$p" ]; then
        echo "cannot tell which python3.X-doc python3-doc depends on (run apt-get update)" >&2
        return 1
    fi
    echo "$p"
}

# unpack_packages ROOT PKG...: the packages' candidate versions, fetched
# with `apt-get download` and unpacked into ROOT (so the pages are exactly
# the packages' files, whatever the machine has installed), unless ROOT
# already holds those versions. Sets WANT to "pkg=version ...".
unpack_packages() {
    local root=$1 p v debs
    shift
    WANT=""
    for p in "$@"; do
        v=$(apt-cache policy "$p" | awk '/Candidate:/ { print $2 }')
        if [ -z "$v" ] || [ "$v" = "(none)" ]; then
            echo "package $p is not available from apt (run apt-get update)" >&2
            return 1
        fi
        WANT="$WANT$p=$v "
    done
    if [ "$(cat "$root/.packages" 2>/dev/null)" = "$WANT" ]; then
        return 0
    fi
    echo "fetching and unpacking: $WANT" >&2
    debs=$(mktemp -d)
    # let apt's sandbox user write there (no warning about unsandboxed downloads)
    if [ "$(id -u)" = 0 ] && id _apt >/dev/null 2>&1; then
        chown _apt "$debs"
    fi
    (cd "$debs" && apt-get download -q "$@") >/dev/null
    rm -rf "$root"
    mkdir -p "$root"
    for deb in "$debs"/*.deb; do
        dpkg-deb -x "$deb" "$root"
    done
    rm -rf "$debs"
    echo "$WANT" >"$root/.packages"
}

# versions_json: WANT as a JSON object (package -> version).
versions_json() {
    local pv out="{"
    for pv in $WANT; do
        out="$out\"${pv%%=*}\": \"${pv#*=}\", "
    done
    echo "${out%, }}"
}

# python_venv VENV: a venv with PY_REQS, made once per version of them.
python_venv() {
    local venv=$1
    if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.simcrawl-reqs" 2>/dev/null)" != "$PY_REQS" ]; then
        rm -rf "$venv"
        mkdir -p "$(dirname "$venv")"
        /usr/bin/python3 -m venv "$venv"
        # shellcheck disable=SC2086
        "$venv/bin/pip" install -q --disable-pip-version-check $PY_REQS
        echo "$PY_REQS" >"$venv/.simcrawl-reqs"
    fi
}
