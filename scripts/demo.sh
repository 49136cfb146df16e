#!/usr/bin/env bash
# The main job, set-up included:  bash scripts/demo.sh
# Creates .venv (if missing), installs collsim, and prints the predicted AllReduce
# times of every algorithm on a preset cluster next to the bundled 2 x H200 NCCL
# measurements; writes the figure to out/demo.png.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv; fi
if [ ! -f .venv/.collsim-core ] || [ pyproject.toml -nt .venv/.collsim-core ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e .
  touch .venv/.collsim-core
fi
mkdir -p out
MPLBACKEND=Agg .venv/bin/collsim demo --out out/demo.png "$@"
