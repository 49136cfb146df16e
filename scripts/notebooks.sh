#!/usr/bin/env bash
# Open the course notebooks in JupyterLab (set-up included):  bash scripts/notebooks.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/jupyter lab notebooks/
