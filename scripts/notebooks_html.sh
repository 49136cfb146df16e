#!/usr/bin/env bash
# Executed HTML of every course notebook, for reading without installing anything:
#   bash scripts/notebooks_html.sh [OUT]      (default out/notebooks_html; open OUT/index.html)
# Set-up included (scripts/setup.sh); widgets' renderer comes from the npm registry when npm exists.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
OUT=${1:-out/notebooks_html}
MPLBACKEND=Agg .venv/bin/python -m collsim.widgets.notebooks_html "$OUT"
