#!/usr/bin/env bash
# The documentation's own checks (run by scripts/test.sh): every relative
# link and #heading anchor in README.md, crates/*/README.md and docs/
# resolves (scripts/check-links.py), and docs/guide/settings.md is what
# scripts/settings-reference.py writes from config/crawl.toml, every setting
# there with a doc comment. Needs python3 only.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 scripts/check-links.py
python3 scripts/settings-reference.py --check
