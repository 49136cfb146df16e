#!/usr/bin/env bash
# Create .venv in the repository root and install collsim into it (idempotent):
#   bash scripts/setup.sh            # notebooks + runners + dev extras (what the tests need)
# torch is pinned to 2.13.0 (the CPU wheel); a bare `torch` would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.collsim-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q "torch==2.13.0"
  .venv/bin/python -m pip install -q -e ".[notebooks,runners,dev]"
  touch "$stamp"
fi
